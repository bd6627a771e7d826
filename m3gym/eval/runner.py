"""The evaluation runner behind ``m3gym eval``: plan, run (in a process pool) and record episodes.

Run folder layout::

    config.json             the run's configuration (checked on --resume), the library versions it
                            ran on (``versions``) and the frozen-task check (``frozen_tasks``)
    episodes.jsonl          one line per finished episode attempt (with its ``task_hash``),
                            flushed per episode
    traces/<episode>.json   calls, results, per-step rewards/checkpoints, image provenance
    thumbs/<episode>/<i>.jpg  small JPEG thumbnails of every image of the episode
    summary.json            aggregated metrics (per level, per family, failure modes)

An episode is identified by ``<env>.<family>.<task_seed>``; its reset seed (env and agent) is
derived from the run seed and the task seed only, so results do not depend on the order episodes
run in or on the number of workers. An agent raising :class:`InfrastructureError` (or a
connection/timeout error) marks the episode ``"status": "infra_error"``: never scored, re-run on
``--resume``. Too many consecutive infrastructure errors abort the run (:class:`EvalAbort`). An
endpoint that refuses the model's own output (:class:`~m3gym.agents.errors.ModelOutputError`:
unparseable tool JSON, a prompt past the context) is the model's failure: the episode is scored
(``status`` ``ok``, unanswered, ``failure_mode`` ``tool_misexecution`` / ``context_overflow``,
``error`` = the server's reason) and ``--resume`` does not run it again.

Before any episode runs, every frozen task of the plan is built and its hash compared with the
manifest (:mod:`m3gym.eval.frozen`); a changed task stops the run with
:class:`~m3gym.eval.frozen.ChangedTasksError` unless ``allow_changed_tasks`` is set.

The run is built from smaller rooms, whose names this module re-exports (``from
m3gym.eval.runner import EvalConfig`` keeps working):

* :mod:`m3gym.eval.config`: :class:`EvalConfig`, :class:`EpisodeSpec`,
  :class:`EpisodeOutcome`, ``--agent-arg``/``--env-arg`` parsing;
* :mod:`m3gym.eval.agents`: building the agent, checking agent and env arguments;
* :mod:`m3gym.eval.plan`: the tasks of each env and every episode's reset seed;
* :mod:`m3gym.eval.outcome`: one episode run into its row, trace and thumbnails;
* :mod:`m3gym.eval.episodes_jsonl`: reading and repairing ``episodes.jsonl``;
* :mod:`m3gym.eval.run_folder_write`: preparing a run folder and writing into it
  (:mod:`m3gym.eval.run_folder` checks what is read back).
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from m3gym.deprecation import renamed_attribute, renamed_names
from m3gym.eval.agents import agent_factory as agent_factory
from m3gym.eval.agents import build_agent, check_code_isolation, check_env_args
from m3gym.eval.agents import check_agent_args as check_agent_args
from m3gym.eval.agents import default_agent_name as default_agent_name
from m3gym.eval.config import DEFAULT_EPISODES as DEFAULT_EPISODES
from m3gym.eval.config import METRIC_KEYS as METRIC_KEYS
from m3gym.eval.config import (
    RERUN_STATUSES,
    EpisodeOutcome,
    EpisodeSpec,
    EvalAbort,
    EvalConfig,
)
from m3gym.eval.config import parse_key_values as parse_key_values
from m3gym.eval.episode_loop import is_infrastructure_error as is_infrastructure_error
from m3gym.eval.episodes_jsonl import EXCERPT_CHARS as EXCERPT_CHARS
from m3gym.eval.episodes_jsonl import RECORD_KEYS as RECORD_KEYS
from m3gym.eval.episodes_jsonl import (
    UnreadableLine,
    read_episode_rows,
    read_episode_rows_checked,
    terminate_last_line,
    unreadable_message,
)
from m3gym.eval.episodes_jsonl import _line_problem as _line_problem
from m3gym.eval.episodes_jsonl import drop_unreadable_lines as drop_unreadable_lines
from m3gym.eval.outcome import assemble_outcome as assemble_outcome
from m3gym.eval.outcome import judge_block as judge_block
from m3gym.eval.outcome import run_episode_outcome
from m3gym.eval.outcome import thumbnail_jpeg as thumbnail_jpeg
from m3gym.eval.plan import env_scope as env_scope
from m3gym.eval.plan import env_tasks as env_tasks
from m3gym.eval.plan import episode_seed as episode_seed
from m3gym.eval.plan import plan_episodes, with_split_env_args
from m3gym.eval.run_folder_write import (
    check_episode_files,
    prepare_run_folder,
    run_versions,
    write_outcome,
    write_run_config,
)
from m3gym.eval.run_folder_write import read_run_config as read_run_config
from m3gym.eval.run_folder_write import records_entry as records_entry
from m3gym.eval.run_folder_write import task_version_keys as task_version_keys

if TYPE_CHECKING:
    from m3gym.eval.frozen import FrozenCheck


@dataclass
class EvalResult:
    """The outcome of :func:`run_eval`: the run folder, all latest episode rows and the summary.

    ``removed`` lists the unreadable lines ``--resume`` took out of ``episodes.jsonl`` and
    ``backup`` is the copy of the file as it was (``None`` when nothing was removed).
    """

    out: Path
    rows: list[dict[str, Any]]
    summary: dict[str, Any]
    ran: int
    skipped: int
    removed: list[UnreadableLine] = field(default_factory=list)
    backup: Path | None = None

    records = renamed_attribute("m3gym.eval.runner.EvalResult", "records", "rows")


def _worker(args: tuple[EpisodeSpec, EvalConfig]) -> EpisodeOutcome:
    return run_episode_outcome(*args)


# --------------------------------------------------------------------------- frozen tasks
def check_planned_tasks(specs: Sequence[EpisodeSpec], cfg: EvalConfig,
                        manifest: dict[str, Any] | None) -> FrozenCheck | None:
    """Build the planned frozen tasks and compare them with ``manifest``; return the check.

    Returns ``None`` when there is no manifest (the ``train`` split, a split without one).
    Raises :class:`~m3gym.eval.frozen.ChangedTasksError` when a task changed, unless
    ``cfg.allow_changed_tasks``. Tasks are built in ``cfg.workers`` processes.
    """
    if manifest is None:
        return None
    from m3gym.eval.frozen import ChangedTasksError, changed_tasks_message, check_frozen_tasks
    from m3gym.eval.splits import manifest_hashes

    where = cfg.manifest or f"m3gym:data/splits/{cfg.split}.json"
    pairs = [(s.family, s.task_seed) for s in specs]
    pool = _start_pool(cfg, len(set(pairs)))
    try:
        check = check_frozen_tasks(pairs, manifest_hashes(manifest), where,
                                   manifest.get("version"),
                                   map if pool is None else pool.imap,
                                   config=manifest.get("config"))
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
    check.allowed = cfg.allow_changed_tasks
    if check.changed and not cfg.allow_changed_tasks:
        raise ChangedTasksError(changed_tasks_message(check, manifest.get("built_with")))
    return check


def _start_pool(cfg: EvalConfig, n_specs: int) -> Any:
    """Return a worker pool, or ``None`` for in-process runs.

    ``fork`` is used when the process has a single thread (fast: workers inherit the imported
    modules); otherwise ``forkserver`` (or ``spawn``) with m3gym preloaded.
    """
    if cfg.workers <= 1 or n_specs <= 1:
        return None
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        ctx = multiprocessing.get_context("fork")
    elif "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["m3gym", "m3gym.eval.runner"])
    else:
        ctx = multiprocessing.get_context("spawn")
    return ctx.Pool(min(cfg.workers, n_specs))


def _outcomes(specs: Sequence[EpisodeSpec], cfg: EvalConfig,
              pool: Any) -> Iterator[EpisodeOutcome]:
    if pool is None:
        for spec in specs:
            yield run_episode_outcome(spec, cfg)
        return
    try:
        yield from pool.imap(_worker, [(s, cfg) for s in specs], chunksize=1)
    finally:
        pool.terminate()
        pool.join()


@contextlib.contextmanager
def _closing(gen: Iterator[Any]) -> Iterator[None]:
    """Close a generator on exit (terminates the worker pool it may hold)."""
    try:
        yield
    finally:
        close = getattr(gen, "close", None)
        if close is not None:
            close()


def run_eval(cfg: EvalConfig, out: str | Path, resume: bool = False,
             on_episode: Callable[[dict[str, Any]], None] | None = None,
             on_start: Callable[[Sequence[EpisodeSpec]], None] | None = None,
             backend: Any = None,
             on_unreadable: Callable[[Sequence[UnreadableLine], Path], None] | None = None,
             metrics: Sequence[str] = ("m3gym",),
             ) -> EvalResult:
    """Run (or resume) an evaluation into the folder ``out`` and return the summary.

    ``backend`` runs the episodes elsewhere (e.g. :class:`m3gym.distributed.RayBackend`: an
    object with ``start()`` and ``outcomes(specs, cfg)`` yielding outcomes in plan order); by
    default they run in this process or a pool of ``cfg.workers`` local processes. Results are
    the same either way.

    Everything is validated (envs, agent, split, reward) before anything is written. Raises
    ``ValueError``/``FileExistsError`` for bad input and :class:`EvalAbort` when the run stops
    early; finished episodes are on disk in every case.

    On ``resume``, lines of ``episodes.jsonl`` that are not episode rows (a line cut by a
    crash, say) are removed before anything runs, the original being kept as a backup
    (:func:`drop_unreadable_lines`); their episodes run again. ``on_unreadable(lines, backup)``
    is told (default: a ``UserWarning``), and :attr:`EvalResult.removed` lists them.

    ``metrics`` names the metric families of the summary: ``m3gym`` (always computed) and the
    peers' ``amme`` / ``m3bench`` blocks (:mod:`m3gym.eval.peer_summary`), listed under
    ``summary["metrics"]``.
    """
    from m3gym.eval.summary import summarize
    from m3gym.reward import load_reward_config

    out = Path(out)
    if cfg.workers < 1:
        raise ValueError("--workers must be >= 1")
    load_reward_config(cfg.reward)
    cfg = with_split_env_args(cfg)
    specs = plan_episodes(cfg)
    for env_id in cfg.envs:
        check_env_args(env_id, cfg.env_args)
    if check_code_isolation(cfg.env_args) is not None:
        from m3gym.sandbox.launcher import protect_env_process

        protect_env_process()  # this process builds every frozen task: keep workers out of it
    agent = build_agent(cfg.agent, 0, cfg.agent_args)  # fail fast on unknown names / arguments
    if backend is not None:
        backend.start()  # connect before anything is written (fail fast on a bad address)
    if resume and out.is_dir():
        from m3gym.eval.run_folder import check_layout

        check_layout(out)  # every file it reads or writes is of its kind, before anything runs
    finished = {r["episode_id"] for r in read_episode_rows_checked(out / "episodes.jsonl")[0]
                if r.get("status") not in RERUN_STATUSES} if resume else set()
    manifest = cfg.manifest_data()
    frozen = check_planned_tasks([s for s in specs if s.episode_id not in finished], cfg,
                                 manifest)
    prepared = prepare_run_folder(out, cfg, resume)
    if prepared.removed and prepared.backup is not None:
        if on_unreadable is not None:
            on_unreadable(prepared.removed, prepared.backup)
        else:
            warnings.warn(f"removed {unreadable_message(prepared.removed)}; the original is "
                          f"kept as {prepared.backup}", UserWarning, stacklevel=2)
    done = {r["episode_id"] for r in prepared.rows if r.get("status") not in RERUN_STATUSES}
    todo = [s for s in specs if s.episode_id not in done]
    check_episode_files(out, [s.episode_id for s in todo])
    write_run_config(out, cfg, [s.episode_id for s in specs], run_versions(agent, manifest),
                     frozen.to_dict() if frozen is not None else None)
    # the pool starts before on_start, which may start a display thread
    pool = _start_pool(cfg, len(todo)) if backend is None else None
    if on_start is not None:
        on_start(todo)
    consecutive = 0
    outcomes = _outcomes(todo, cfg, pool) if backend is None else backend.outcomes(todo, cfg)
    terminate_last_line(out / "episodes.jsonl")
    with (out / "episodes.jsonl").open("a") as jsonl, _closing(outcomes):
        for outcome in outcomes:
            write_outcome(out, outcome, jsonl)
            if on_episode is not None:
                on_episode(outcome.row)
            consecutive = consecutive + 1 if outcome.row["status"] == "infra_error" else 0
            if consecutive >= cfg.max_consecutive_infra:
                raise EvalAbort(f"{consecutive} infrastructure errors in a row (last: "
                                f"{outcome.row['error']}); finished episodes are kept in "
                                f"{out}, rerun with --resume to continue")
    planned = {s.episode_id for s in specs}
    rows = [r for r in read_episode_rows(out / "episodes.jsonl") if r["episode_id"] in planned]
    summary = summarize(rows)
    if cfg.samples > 1:
        from m3gym.eval.passk import passk_summary

        summary["samples"] = passk_summary(rows, cfg.samples)
    if tuple(metrics) != ("m3gym",):
        from m3gym.eval.peer_summary import run_peer_blocks

        summary["metrics"] = list(metrics)
        summary.update(run_peer_blocks(out, rows, metrics))
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return EvalResult(out, rows, summary, ran=len(todo), skipped=len(specs) - len(todo),
                      removed=prepared.removed, backup=prepared.backup)


__getattr__ = renamed_names(__name__, {
    "read_records": ("m3gym.eval.episodes_jsonl.read_episode_rows", lambda: read_episode_rows),
    "read_records_checked": ("m3gym.eval.episodes_jsonl.read_episode_rows_checked",
                             lambda: read_episode_rows_checked),
})
"""The old names ``read_records`` / ``read_records_checked`` (``records`` is the user's data)."""
