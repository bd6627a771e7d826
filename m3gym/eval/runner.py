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
"""

from __future__ import annotations

import contextlib
import importlib
import json
import multiprocessing
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cv2
import gymnasium as gym
import numpy as np

from m3gym.eval.episode import (
    EpisodeRecorder,
    record_episode,
)
from m3gym.eval.episode import is_infrastructure_error as is_infrastructure_error  # re-export
from m3gym.eval.episode import json_safe as _json_safe

if TYPE_CHECKING:
    from m3gym.eval.frozen import FrozenCheck

METRIC_KEYS: tuple[str, ...] = (
    "acc", "S", "V", "V_tool", "V_true", "OT", "multi_modal", "multi_hop", "multi_threaded", "m3",
    "recall", "precision", "arg_similarity", "arg_similarity_strong", "step_coherence",
    "order_consistency", "merge_purity", "safety", "safety_violations", "failure_mode", "calls",
    "failed_calls", "rounds",
)
"""Metric keys of the env's final ``info["metrics"]`` copied into every episode record."""

RERUN_STATUSES: frozenset[str] = frozenset({"infra_error", "agent_error", "env_error"})
"""Episode statuses that are not scored and are run again on ``--resume``."""

DEFAULT_EPISODES: int = 30
"""Episodes per env of the default ``m3gym eval`` (all three levels, test split)."""

class EvalAbort(RuntimeError):
    """The run was stopped early (e.g. the model endpoint is unreachable); finished work is kept."""


@dataclass(frozen=True)
class EvalConfig:
    """Everything that defines an evaluation run.

    Attributes:
        envs: env ids (level ids such as ``M3Bench-L2`` or family ids).
        agent: an agent name known to :func:`m3gym.agents.make_agent`, or ``module:attr`` of a
            factory called as ``factory(seed=..., **agent_args)``.
        episodes: episodes per env.
        split: ``test`` / ``val`` (frozen task lists) or ``train`` (random training seeds).
        seed: run seed (episode reset seeds and ``train`` draws derive from it).
        reward: reward preset name or YAML path passed to the env.
        workers: processes; each builds its own env (results are identical for any count).
        agent_args / env_args: keyword arguments for the agent factory / ``gym.make``.
        max_consecutive_infra: abort after this many infrastructure errors in a row.
        thumb_size: longest side of the stored JPEG thumbnails; ``max_thumbs`` caps them.
        samples: rollouts per task (``--samples k``: pass@k, per-task success variance).
        manifest: a manifest file to take the frozen split's tasks and hashes from (default:
            the one inside the package).
        allow_changed_tasks: run even when frozen tasks differ from the manifest (recorded).
        judge_endpoint / judge_model: an OpenAI-compatible endpoint (and model; ``None``: the
            first it lists) that scores records' judge checkpoints after each episode
            (:func:`judge_block`); ``None`` (the default) leaves them "not judged".
    """

    envs: tuple[str, ...]
    agent: str
    episodes: int = DEFAULT_EPISODES
    split: str = "test"
    seed: int = 0
    reward: str = "m3"
    workers: int = 1
    agent_args: Mapping[str, Any] = field(default_factory=dict)
    env_args: Mapping[str, Any] = field(default_factory=dict)
    max_consecutive_infra: int = 3
    thumb_size: int = 256
    max_thumbs: int = 24
    samples: int = 1
    manifest: str | None = None
    allow_changed_tasks: bool = False
    judge_endpoint: str | None = None
    judge_model: str | None = None

    def identity(self) -> dict[str, Any]:
        """Return the settings that must not change when a run is resumed."""
        return {"agent": self.agent, "agent_args": dict(self.agent_args), "split": self.split,
                "seed": self.seed, "reward": self.reward, "env_args": dict(self.env_args),
                **({"samples": self.samples} if self.samples != 1 else {}),
                **({"manifest": self.manifest} if self.manifest else {}),
                **({"judge": {"endpoint": self.judge_endpoint, "model": self.judge_model}}
                   if self.judge_endpoint else {})}

    def manifest_data(self) -> dict[str, Any] | None:
        """Return the manifest of the run's frozen split (``None``: none, or not a frozen split)."""
        from m3gym.eval.splits import FROZEN_SPLITS, load_manifest

        if self.manifest or self.split in FROZEN_SPLITS:
            return load_manifest(self.split, self.manifest)
        return None

    def to_dict(self) -> dict[str, Any]:
        """Return the config as a JSON-serializable dict."""
        out = asdict(self)
        out["envs"] = list(self.envs)
        out["agent_args"] = dict(self.agent_args)
        out["env_args"] = dict(self.env_args)
        return out


@dataclass(frozen=True)
class EpisodeSpec:
    """One planned episode: which env, which task, which reset seed."""

    index: int
    episode_id: str
    env_id: str
    level: int | None
    family: str
    task_seed: int
    seed: int


@dataclass
class EpisodeOutcome:
    """What one episode produced: its JSONL record, its trace and its thumbnails (JPEG bytes)."""

    record: dict[str, Any]
    trace: dict[str, Any]
    thumbs: dict[int, bytes] = field(default_factory=dict)


@dataclass
class EvalResult:
    """The outcome of :func:`run_eval`: the run folder, all latest records and the summary.

    ``removed`` lists the unreadable lines ``--resume`` took out of ``episodes.jsonl`` and
    ``backup`` is the copy of the file as it was (``None`` when nothing was removed).
    """

    out: Path
    records: list[dict[str, Any]]
    summary: dict[str, Any]
    ran: int
    skipped: int
    removed: list[UnreadableLine] = field(default_factory=list)
    backup: Path | None = None


# --------------------------------------------------------------------------- parsing helpers
def parse_key_values(items: Iterable[str]) -> dict[str, Any]:
    """Return ``{"k": value}`` from ``k=value`` strings; values are JSON when they parse."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected key=value, got {item!r}")
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


def env_scope(env_id: str) -> tuple[int | None, list[str]]:
    """Return the level (or ``None``) and the task families an env id draws from."""
    from m3gym import registration
    from m3gym.env import level_families

    resolved = registration.resolve_env_id(env_id)
    if resolved not in gym.registry:
        known = ", ".join(registration.env_ids())
        raise ValueError(f"unknown env {env_id!r}; known: {known}")
    kwargs = dict(gym.registry[resolved].kwargs or {})
    family = kwargs.get("family")
    families, _ = level_families(kwargs.get("level"), family, kwargs.get("family_weights"),
                                 kwargs.get("suite", "m3bench"))
    if family is not None:
        from m3gym.tasks.registry import get_family

        return int(get_family(family).level), families
    return kwargs.get("level"), families


def default_agent_name() -> str:
    """Return ``heuristic`` when that agent exists, else ``random``."""
    from m3gym.agents import base

    names = getattr(base, "AGENTS", ())
    return "heuristic" if "heuristic" in names else "random"


def agent_factory(name: str) -> Callable[..., Any]:
    """Return a callable ``(seed=..., **kw) -> agent`` for a registered name or ``module:attr``."""
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"cannot load agent {name!r}: {exc}") from None
    from m3gym.agents import make_agent

    def build(seed: int = 0, **kwargs: Any) -> Any:
        return make_agent(name, seed=seed, **kwargs)

    return build


def _agent_parameters(name: str) -> tuple[dict[str, Any], bool] | None:
    """Return ``({argument: annotation}, takes **kwargs)`` of an agent, or ``None`` if unknown."""
    import typing

    if ":" in name:
        try:
            target: Any = agent_factory(name)
        except ValueError:
            return None
        return _parameters(target)
    from m3gym.agents.base import agent_class

    try:
        target = agent_class(name)
    except ValueError:
        return None
    if name == "openai":  # takes its settings as **kwargs of OpenAIAgentConfig
        from dataclasses import fields as dc_fields

        from m3gym.agents.openai_agent import OpenAIAgentConfig

        hints = typing.get_type_hints(OpenAIAgentConfig)
        return {f.name: hints.get(f.name) for f in dc_fields(OpenAIAgentConfig)}, False
    return _parameters(target)


def _parameters(target: Any) -> tuple[dict[str, Any], bool] | None:
    """Return ``({argument: annotation}, takes **kwargs)`` of a class or function."""
    import inspect
    import typing

    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    try:
        hints = typing.get_type_hints(target.__init__ if inspect.isclass(target) else target)
    except Exception:  # noqa: BLE001 - unresolvable annotations: check names only
        hints = {}
    params = {p.name: hints.get(p.name) for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    var_kw = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    return params, var_kw


def _check_annotated(src: Any, value: Any, annotation: Any, key: str) -> None:
    """Raise when ``value`` plainly does not fit ``annotation`` (simple types only)."""
    import types
    import typing

    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(annotation)
        if value is None and type(None) in options:
            return
        simple = [a for a in options if a is not type(None)]
        if len(simple) == 1:
            _check_annotated(src, value, simple[0], key)
        return
    if origin is typing.Literal:
        allowed = typing.get_args(annotation)
        if value not in allowed:
            raise src.error(f"expected one of {', '.join(map(repr, allowed))}, got "
                            f"{value!r}", key)
        return
    if annotation is float:
        src.number(value, key)
    elif annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise src.error(f"expected an integer, got {value!r}", key)
    elif annotation is bool:
        src.boolean(value, key)
    elif annotation is str and isinstance(value, (list, dict)):
        raise src.error(f"expected a string, got {value!r}", key)


def check_agent_args(name: str, agent_args: Mapping[str, Any]) -> None:
    """Raise :class:`~m3gym.config_errors.ConfigError` for an argument the agent cannot take.

    The agent's constructor (or factory, or for ``openai`` its :class:`OpenAIAgentConfig`)
    names the arguments it takes and their types: an unknown key (unless the factory takes
    ``**kwargs``), ``seed`` (set by the run) or a value of a plainly wrong type (a string for a
    number, say) is refused with the key named. Unknown agent names are left to
    :func:`build_agent`.
    """
    from m3gym.config_errors import ConfigSource

    src = ConfigSource(f"agent_args of agent {name!r}")
    if "seed" in agent_args:
        raise src.error("set by the run (--seed), not an agent argument", "seed")
    found = _agent_parameters(name)
    if found is None:
        return
    params, var_kw = found
    if not var_kw:
        src.known_keys(agent_args, [k for k in params if k != "seed"])
    for key, value in agent_args.items():
        if params.get(key) is not None:
            _check_annotated(src, value, params[key], key)


def check_env_args(env_id: str, env_args: Mapping[str, Any]) -> None:
    """Raise :class:`~m3gym.config_errors.ConfigError` for an argument the env cannot take.

    The env class's constructor names the arguments and their types: an unknown key,
    ``reward`` (set by the run's ``--reward``) or a value of a plainly wrong type is refused
    with the key named, before anything is written. Values are checked further when the env is
    built.
    """
    from m3gym import registration
    from m3gym.config_errors import ConfigSource

    src = ConfigSource(f"env_args of env {env_id!r}")
    if "reward" in env_args:
        raise src.error("set by the run (--reward), not an env argument", "reward")
    resolved = registration.resolve_env_id(env_id)
    if resolved not in gym.registry:
        return  # env_scope names unknown envs
    from gymnasium.envs.registration import load_env_creator

    entry = gym.registry[resolved].entry_point
    try:
        target = load_env_creator(entry) if isinstance(entry, str) else entry
    except (ImportError, AttributeError):
        return
    found = _parameters(target)
    if found is None:
        return
    params, var_kw = found
    if not var_kw:
        src.known_keys(env_args, [k for k in params if k not in ("self", "reward")])
    for key, value in env_args.items():
        if params.get(key) is not None:
            _check_annotated(src, value, params[key], key)


def check_code_isolation(env_args: Mapping[str, Any]) -> str | None:
    """Return the isolation a code-mode run will use (``None`` for atomic runs).

    Raises :class:`~m3gym.sandbox.IsolationUnavailable` before anything is written when code
    mode would run without bubblewrap and without the explicit ``isolation="none"`` opt-out.
    """
    if env_args.get("interface", "atomic") == "atomic":
        return None
    from m3gym.sandbox.launcher import resolve_isolation, split_sandbox_options

    _, isolation, _ = split_sandbox_options(env_args.get("sandbox"))
    return resolve_isolation(isolation)


def build_agent(name: str, seed: int, agent_args: Mapping[str, Any]) -> Any:
    """Return a fresh agent (unknown names and bad arguments raise ``ValueError``).

    Arguments are checked first (:func:`check_agent_args`).
    """
    check_agent_args(name, agent_args)
    try:
        return agent_factory(name)(seed=seed, **dict(agent_args))
    except TypeError as exc:
        raise ValueError(f"bad arguments for agent {name!r}: {exc}") from None


# --------------------------------------------------------------------------- planning
def episode_seed(run_seed: int, task_seed: int) -> int:
    """Return the reset seed of an episode: a function of the run seed and task seed only."""
    return int(np.random.SeedSequence([int(run_seed), int(task_seed)]).generate_state(1)[0])


def _train_draws(env_id: str, families: Sequence[str], n: int, seed: int) -> list[tuple[str, int]]:
    from m3gym.env import TRAIN_SEED_RANGE

    key = [int(b) for b in env_id.encode("utf-8")]
    rng = np.random.default_rng(np.random.SeedSequence(entropy=int(seed), spawn_key=key))
    out: list[tuple[str, int]] = []
    seen: set[tuple[str, int]] = set()
    while len(out) < n:
        pair = (families[int(rng.integers(len(families)))], int(rng.integers(*TRAIN_SEED_RANGE)))
        if pair not in seen:
            seen.add(pair)
            out.append(pair)
    return out


def env_tasks(env_id: str, split: str, n: int, seed: int,
              manifest: dict[str, Any] | None = None) -> list[tuple[str, int]]:
    """Return the first ``n`` ``(family, task_seed)`` pairs an env is evaluated on.

    Frozen splits take their tasks from ``manifest`` (default: the package's).
    """
    from m3gym.eval.splits import FROZEN_SPLITS, level_seed_base, split_entries
    from m3gym.tasks.registry import get_family

    level, families = env_scope(env_id)
    if split == "train":
        return _train_draws(env_id, families, n, seed)
    if split not in FROZEN_SPLITS:
        raise ValueError(f"unknown split {split!r}; use train, {', '.join(FROZEN_SPLITS)}")
    if any(get_family(f).suite != "m3bench" for f in families):
        # the classic-RL suite is not in the hash manifest: its held-out tasks follow the rule
        # of the frozen splits (round-robin over families, seeds from the split's base, >= 1e9)
        base = level_seed_base(split, level or 1)
        return [(families[i % len(families)], base + i) for i in range(n)]
    per_level = [[(e.family, e.task_seed) for e in split_entries(split, lv, manifest)
                  if e.family in families] for lv in ([level] if level else [1, 2, 3])]
    width = max((len(p) for p in per_level), default=0)
    pool = [p[i] for i in range(width) for p in per_level if i < len(p)]  # interleave levels
    if n > len(pool):
        raise ValueError(f"split {split!r} has {len(pool)} tasks for {env_id}; "
                         f"--episodes {n} is more")
    return pool[:n]


def plan_episodes(cfg: EvalConfig) -> list[EpisodeSpec]:
    """Return every episode of a run, in a fixed order (envs in the given order)."""
    if cfg.episodes < 1 or cfg.samples < 1:
        raise ValueError("--episodes and --samples must be >= 1")
    from m3gym.eval.passk import sample_seed

    specs: list[EpisodeSpec] = []
    manifest = cfg.manifest_data() if cfg.manifest else None
    for env_id in cfg.envs:
        level, _ = env_scope(env_id)
        for family, task_seed in env_tasks(env_id, cfg.split, cfg.episodes, cfg.seed, manifest):
            for j in range(cfg.samples):  # sample 0 keeps the single-sample id and seed
                specs.append(EpisodeSpec(
                    index=len(specs), episode_id=f"{env_id}.{family}.{task_seed}"
                    + (f".s{j}" if j else ""), env_id=env_id, level=level, family=family,
                    task_seed=task_seed, seed=sample_seed(episode_seed(cfg.seed, task_seed), j)))
    ids = [s.episode_id for s in specs]
    if len(set(ids)) != len(ids):
        raise ValueError("the same env is listed twice")
    return specs


# --------------------------------------------------------------------------- one episode
_ENV_CACHE: dict[str, gym.Env] = {}


def _env_for(cfg: EvalConfig, env_id: str) -> gym.Env:
    key = json.dumps([env_id, cfg.reward, dict(cfg.env_args)], sort_keys=True, default=str)
    if key not in _ENV_CACHE:
        from m3gym import registration

        _ENV_CACHE[key] = gym.make(registration.resolve_env_id(env_id), reward=cfg.reward,
                                   disable_env_checker=True,
                                   **dict(cfg.env_args))
    return _ENV_CACHE[key]


def thumbnail_jpeg(array: np.ndarray, size: int, quality: int = 80) -> bytes:
    """Return a JPEG (longest side ≤ ``size``) of an RGB or grayscale ``uint8`` image."""
    h, w = array.shape[:2]
    scale = min(1.0, size / max(h, w))
    if scale < 1.0:
        array = cv2.resize(array, (max(1, round(w * scale)), max(1, round(h * scale))),
                           interpolation=cv2.INTER_AREA)
    if array.ndim == 3:
        array = cv2.cvtColor(array, cv2.COLOR_RGB2BGR)
    ok, buf = cv2.imencode(".jpg", array, [cv2.IMWRITE_JPEG_QUALITY, quality])
    return buf.tobytes() if ok else b""


def _image_records(state: Any, episode_id: str, max_thumbs: int) -> list[dict[str, Any]]:
    out = []
    for entry in state:
        p = entry.provenance
        out.append({
            "index": entry.index, "shape": list(entry.array.shape), "label": entry.label,
            "parent": p.parent, "op": p.op, "args": _json_safe(p.args), "root": p.root,
            "call_id": p.call_id, "photometric": list(p.photometric),
            "affine": np.asarray(p.affine).round(6).tolist(),
            "thumb": f"thumbs/{episode_id}/{entry.index}.jpg" if entry.index < max_thumbs else None,
        })
    return out


def run_episode_outcome(spec: EpisodeSpec, cfg: EvalConfig) -> EpisodeOutcome:
    """Run one planned episode and return its record, trace and thumbnails (never raises)."""
    started = time.perf_counter()
    env = _env_for(cfg, spec.env_id)
    rec = record_episode(env, lambda: build_agent(cfg.agent, spec.seed, cfg.agent_args),
                      seed=spec.seed,
                      options={"family": spec.family, "task_seed": spec.task_seed})
    rec.started = started
    outcome = assemble_outcome(spec, cfg, rec)
    judged = judge_block(env, rec, cfg)
    if judged is not None:  # a records task with judge checkpoints: its own metric, never S/V
        outcome.trace["judge"] = judged
        outcome.record["judge"] = {k: v for k, v in judged.items() if k != "verdicts"}
    return outcome


_JUDGES: dict[tuple[str, str | None], Any] = {}


def judge_block(env: gym.Env, rec: EpisodeRecorder, cfg: EvalConfig) -> dict[str, Any] | None:
    """Return the ``judge`` entry of a finished episode (``None``: no judge checkpoints).

    ``checkpoints`` counts the task's judge checkpoints (``metadata["judge_checkpoints"]`` of a
    records task). Without ``cfg.judge_endpoint`` they are all ``not_judged`` and ``judge`` is
    ``None``; with it they are scored by :func:`m3gym.records.judge.score_env_judges`:
    ``judge`` = passed / judged, ``errors`` the checkpoints whose request failed (counted as not
    passed) and ``verdicts`` each checkpoint's replies (the trace keeps them, the record not).
    An episode that did not end ``ok`` is not judged; a judge that cannot be reached at all
    leaves the checkpoints not judged, with ``error`` set.
    """
    task = rec.task
    cps = list((getattr(task, "metadata", None) or {}).get("judge_checkpoints") or ())
    if task is None or not cps:
        return None
    out: dict[str, Any] = {"judge": None, "checkpoints": len(cps), "judged": 0, "passed": 0,
                           "errors": 0, "not_judged": len(cps)}
    if cfg.judge_endpoint is None or rec.status != "ok":
        return out
    from m3gym.records.judge import openai_judge, score_env_judges

    key = (cfg.judge_endpoint, cfg.judge_model)
    try:
        if key not in _JUDGES:
            _JUDGES[key] = openai_judge(cfg.judge_endpoint, cfg.judge_model)
        report = score_env_judges(env, _JUDGES[key])
    except Exception as exc:  # the judge never fails the episode: its checkpoints stay unjudged
        out["error"] = f"{type(exc).__name__}: {exc}"
        return out
    verdicts = report.as_dict()["checkpoints"]
    out.update(judge=None if report.judge is None else round(report.judge, 6),
               judged=len(report.verdicts), passed=sum(v.passed for v in report.verdicts),
               errors=sum(v.error is not None for v in report.verdicts),
               not_judged=len(cps) - len(report.verdicts), verdicts=verdicts)
    return out


def assemble_outcome(spec: EpisodeSpec, cfg: EvalConfig, rec: EpisodeRecorder) -> EpisodeOutcome:
    """Return the run-folder outcome (record, trace, thumbnails) of a recorded episode."""
    task, base, steps, final, status = rec.task, rec.base, rec.steps, rec.final, rec.status
    error, prompt = rec.error, rec.prompt
    raw_metrics = dict(final.get("metrics") or {})
    metrics = {k: _json_safe(raw_metrics.get(k)) for k in METRIC_KEYS}
    metrics.update({k: _json_safe(v) for k, v in raw_metrics.items() if k not in metrics})
    calls = sum(len(s["calls"]) for s in steps)
    ok = status == "ok"
    record = {
        "episode_id": spec.episode_id, "index": spec.index, "env": spec.env_id,
        "level": task.level if task is not None else spec.level, "family": spec.family,
        "domain": task.domain if task is not None else None,
        "task_id": f"{spec.family}/{spec.task_seed}", "task_seed": spec.task_seed,
        "task_hash": task.content_hash() if task is not None else None,
        "seed": spec.seed, "agent": cfg.agent, "split": cfg.split, "status": status,
        "error": error, "answer": final.get("answer") if ok else None,
        "answer_correct": bool(final.get("answer_correct")) if ok else None,
        "terminated": rec.terminated, "truncated": rec.truncated,
        "reward": round(rec.reward_total, 6),
        "steps": len(steps), "calls": calls if metrics["calls"] is None else metrics["calls"],
        "failure_mode": metrics.get("failure_mode") if ok else None,
        "metrics": metrics if ok else {}, "wall_s": round(rec.wall_s, 3),
    }
    if final.get("code_isolation") is not None:  # code mode: how agent code was isolated
        record["code_isolation"] = final["code_isolation"]
        record["untrusted_reward_terms"] = list(final.get("untrusted_reward_terms") or [])
    images = _image_records(base.state, spec.episode_id, cfg.max_thumbs) if task else []
    thumbs = {}
    if task is not None:
        for entry in base.state:
            if entry.index < cfg.max_thumbs:
                thumbs[entry.index] = thumbnail_jpeg(entry.array, cfg.thumb_size)
    trace = {
        "episode_id": spec.episode_id, "env": spec.env_id, "family": spec.family,
        "level": record["level"], "task_id": record["task_id"], "task_seed": spec.task_seed,
        "seed": spec.seed, "agent": cfg.agent, "status": status, "error": error,
        "question": task.question if task is not None else None,
        "prompt": prompt,
        "task": _json_safe(task.spec_dict()) if task is not None else None,
        "task_hash": record["task_hash"],
        "answer": record["answer"], "answer_correct": record["answer_correct"],
        "reward": record["reward"], "metrics": metrics,
        "audit": _json_safe(final.get("audit") or {}),
        "steps": steps, "images": images,
        "recreate": {
            "env": spec.env_id, "env_args": _json_safe(dict(cfg.env_args)),
            "reward": cfg.reward, "reset_seed": spec.seed,
            "options": {"family": spec.family, "task_seed": spec.task_seed},
            "ops": [{"step": s["step"], "name": c.get("name"), "arguments": c.get("arguments")}
                    for s in steps for c in s["calls"]],
        },
    }
    return EpisodeOutcome(record, trace, thumbs)


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


def with_split_env_args(cfg: EvalConfig) -> EvalConfig:
    """Return ``cfg`` with its split's scene settings in ``env_args`` (``test-photo``: photos).

    A split built with a config (:data:`~m3gym.eval.splits.SPLIT_CONFIGS`) is evaluated with it,
    whether or not ``--env-arg`` repeats it; a contradicting ``scenes``/``backgrounds`` raises
    ``ValueError``.
    """
    from m3gym.eval.splits import split_config

    wanted = split_config(cfg.split)
    if not wanted:
        return cfg
    given = dict(cfg.env_args)
    clash = [k for k in ("scenes", "backgrounds") if k in given and given[k] != wanted.get(k)]
    if clash:
        raise ValueError(f"split {cfg.split!r} is built with {wanted}: drop --env-arg "
                         f"{', '.join(clash)} (it would evaluate other tasks than the frozen ones)")
    return replace(cfg, env_args={**given, **wanted})


def run_versions(agent: Any, manifest: dict[str, Any] | None) -> dict[str, Any]:
    """Return what a run ran on: libraries, the manifest's version and digest, the agent's model.

    The agent's model and endpoint are read from its ``config`` (``model``, ``base_url``) where it
    has one; an agent that reads text with OCR records the backend it reads with.
    """
    from m3gym.eval.splits import manifest_digest
    from m3gym.fingerprint import library_versions

    out: dict[str, Any] = dict(library_versions())
    out["manifest"] = manifest.get("version") if manifest else None
    out["manifest_digest"] = manifest_digest(manifest)[:16] if manifest else None
    agent_cfg = getattr(agent, "config", None)
    for key in ("model", "base_url"):
        value = getattr(agent_cfg, key, None) or getattr(agent, key, None)
        if isinstance(value, str) and value:
            out[f"agent_{key}"] = value
    if type(agent).__module__.startswith("m3gym.agents.heuristic"):
        from m3gym.agents.ocr import ocr_backend

        out["agent_ocr"] = ocr_backend()
    return out


def task_version_keys() -> tuple[str, ...]:
    """Return the keys of ``config.json["versions"]`` that can change the tasks a run scored.

    m3gym's version, the manifest's version and digest, and every pixel library
    (:func:`m3gym.fingerprint.pixel_library_versions`).
    """
    from m3gym.fingerprint import pixel_library_versions

    return ("m3gym", "manifest", "manifest_digest", *pixel_library_versions())


# --------------------------------------------------------------------------- run folder
RECORD_KEYS: tuple[str, ...] = ("episode_id", "status")
"""Keys every line of ``episodes.jsonl`` must have (string values) to count as an episode record."""

EXCERPT_CHARS: int = 60
"""Characters of an unreadable line kept in :attr:`UnreadableLine.excerpt`."""


@dataclass(frozen=True)
class UnreadableLine:
    """A line of a run's ``episodes.jsonl`` that is not an episode record, so counts nowhere.

    A crash mid-write leaves such a line (cut JSON); so does any other damage to the file.
    ``m3gym report`` names each one; ``m3gym eval --resume`` names them and removes them
    (:func:`drop_unreadable_lines`, keeping a backup), and their episodes run again.

    Attributes:
        path: the file.
        line: 1-based line number.
        excerpt: the line's first :data:`EXCERPT_CHARS` characters (undecodable bytes replaced).
        reason: why it is not a record: the JSON error, or what the parsed value is or lacks.
    """

    path: Path
    line: int
    excerpt: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}; the line starts {self.excerpt!r}"


def _line_problem(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    """Return ``(record, "")`` for a valid record line, else ``(None, reason)``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte {exc.start})"
    try:
        rec = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"could not parse JSON: {exc.msg} (column {exc.colno})"
    except (ValueError, RecursionError) as exc:  # e.g. an integer of over 4300 digits
        return None, f"could not parse JSON: {exc}"
    if not isinstance(rec, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(rec), "a number")
        return None, f"not an episode record: {kind} in JSON, not an object"
    for key in RECORD_KEYS:
        if key not in rec:
            return None, f"not an episode record: no {key!r}"
        if not isinstance(rec[key], str):
            return None, f"not an episode record: {key!r} is not a string"
    index = rec.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int):
        return None, "not an episode record: 'index' is not an integer"
    from m3gym.eval.run_folder import RECORD_SCHEMA, schema_problem

    found = schema_problem(rec, RECORD_SCHEMA)
    if found is not None:
        return None, f"not an episode record: key {found[0]!r}: {found[1]}"
    return rec, ""


def _scan_lines(data: bytes) -> Iterator[tuple[int, bytes, dict[str, Any] | None, str]]:
    """Yield ``(line number, raw bytes, record or None, reason)`` for each non-blank line."""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if raw.strip():
            rec, reason = _line_problem(raw)
            yield number, raw, rec, reason


def _unreadable(path: Path, number: int, raw: bytes, reason: str) -> UnreadableLine:
    excerpt = raw.decode("utf-8", errors="replace").strip()[:EXCERPT_CHARS]
    return UnreadableLine(path, number, excerpt, reason)


def read_records_checked(path: Path) -> tuple[list[dict[str, Any]], list[UnreadableLine]]:
    """Return the latest record of each episode (ordered by index) and the unreadable lines.

    A line is unreadable when it is not UTF-8 JSON, not an object, or lacks a string
    ``episode_id`` / ``status`` (:data:`RECORD_KEYS`), has a non-integer ``index`` or a value
    of another type than :data:`~m3gym.eval.run_folder.RECORD_SCHEMA` says. Blank lines
    carry nothing and are skipped. A missing file has no records; a path that is not a regular
    file (a directory, a broken link, a FIFO) or cannot be read raises
    :class:`~m3gym.eval.run_folder.RunFolderError` naming it.
    """
    from m3gym.eval.run_folder import check_file, read_bytes

    path = Path(path)
    latest: dict[str, dict[str, Any]] = {}
    bad: list[UnreadableLine] = []
    if not check_file(path):
        return [], bad
    for number, raw, rec, reason in _scan_lines(read_bytes(path)):
        if rec is None:
            bad.append(_unreadable(path, number, raw, reason))
        else:
            latest[rec["episode_id"]] = rec
    records = sorted(latest.values(), key=lambda r: (r.get("index", 0), r["episode_id"]))
    return records, bad


def unreadable_message(lines: Sequence[UnreadableLine]) -> str:
    """Return one line counting unreadable lines and naming each (``file:line``)."""
    if not lines:
        return ""
    files = sorted({str(u.path) for u in lines})
    n = len(lines)
    where = ", ".join(f"{u.path}:{u.line}" for u in lines)
    return f"{n} unreadable line{'s' if n != 1 else ''} in {', '.join(files)}: {where}"


def read_records(path: Path) -> list[dict[str, Any]]:
    """Return the latest record of each episode in ``episodes.jsonl`` (ordered by index).

    Unreadable lines are left out with a ``UserWarning`` naming each; use
    :func:`read_records_checked` to get them as data.
    """
    records, bad = read_records_checked(path)
    if bad:
        warnings.warn(f"{unreadable_message(bad)} (left out of the records)", UserWarning,
                      stacklevel=2)
    return records


def _backup_path(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate = path.with_name(f"{path.name}.bak-{stamp}")
    n = 2
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.bak-{stamp}-{n}")
        n += 1
    return candidate


def drop_unreadable_lines(path: Path) -> tuple[list[UnreadableLine], Path | None]:
    """Remove the unreadable lines (and blank lines) of ``path``; return them and the backup.

    Nothing is written when every line is a record (the backup is then ``None``). Otherwise the
    original bytes are first copied to ``<name>.bak-<YYYYmmdd-HHMMSS>`` (a ``-2``, ``-3`` ...
    suffix where that exists: an earlier backup is never overwritten), then the record lines,
    byte for byte and in order, replace the file atomically (temporary file + ``os.replace``).
    A path that is not a regular file raises :class:`~m3gym.eval.run_folder.RunFolderError`.
    """
    from m3gym.eval.run_folder import check_file, read_bytes

    path = Path(path)
    if not check_file(path):
        return [], None
    original = read_bytes(path)
    bad: list[UnreadableLine] = []
    kept: list[bytes] = []
    for number, raw, rec, reason in _scan_lines(original):
        if rec is None:
            bad.append(_unreadable(path, number, raw, reason))
        else:
            kept.append(raw)
    if not bad:
        return [], None
    backup = _backup_path(path)
    with backup.open("xb") as f:  # exclusive: never replaces an existing file
        f.write(original)
        f.flush()
        os.fsync(f.fileno())
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with tmp.open("wb") as f:
        f.write(b"".join(raw + b"\n" for raw in kept))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return bad, backup


def write_outcome(out: Path, outcome: EpisodeOutcome, jsonl: Any) -> None:
    """Write an episode's thumbnails and trace into ``out``, then its line to ``jsonl``."""
    ep = outcome.record["episode_id"]
    if outcome.thumbs:
        thumb_dir = out / "thumbs" / ep
        thumb_dir.mkdir(parents=True, exist_ok=True)
        for idx, data in outcome.thumbs.items():
            (thumb_dir / f"{idx}.jpg").write_bytes(data)
    (out / "traces" / f"{ep}.json").write_text(json.dumps(outcome.trace, default=str))
    jsonl.write(json.dumps(outcome.record, default=str) + "\n")
    jsonl.flush()


@dataclass
class _Prepared:
    """What :func:`_prepare_folder` found: the records, and the unreadable lines it removed."""

    records: list[dict[str, Any]]
    removed: list[UnreadableLine] = field(default_factory=list)
    backup: Path | None = None


def read_run_config(path: Path) -> dict[str, Any]:
    """Return a run's ``config.json``, checked against its schema.

    Raises ``FileNotFoundError`` for a missing file and
    :class:`~m3gym.eval.run_folder.RunFolderError` (a ``ConfigError``) naming the file and the
    problem for one that is not a regular file, cannot be read, is not UTF-8 JSON, not an object
    or has a value of the wrong type (the key and the type expected:
    :data:`~m3gym.eval.run_folder.RUN_CONFIG_SCHEMA`).
    """
    from m3gym.config_errors import parse_json_text
    from m3gym.eval.run_folder import check_run_config, read_text

    return check_run_config(parse_json_text(read_text(Path(path)), path), path)


def _records_fingerprint(env_args: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``{"records": {"source", "sha256"}}`` for a records env's run, else ``{}``."""
    if env_args.get("records") is None:
        return {}
    from m3gym.records.load import records_fingerprint

    return {"records": records_fingerprint(env_args["records"])}


def _prepare_folder(out: Path, cfg: EvalConfig, resume: bool) -> _Prepared:
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a folder")
    nonempty = out.is_dir() and any(out.iterdir())
    if nonempty and not resume:
        raise FileExistsError(f"run folder {out} already exists and is not empty; "
                              "pass --resume to continue it or choose another --out")
    prepared = _Prepared([])
    if nonempty:
        from m3gym.eval.run_folder import check_file, check_layout

        check_layout(out)
        cfg_path = out / "config.json"
        if not check_file(cfg_path):
            raise FileExistsError(f"{out} is not an m3gym run folder (no config.json)")
        old = read_run_config(cfg_path)
        new = cfg.identity()
        diff = [k for k in new if json.dumps(old.get(k), sort_keys=True)
                != json.dumps(new[k], sort_keys=True)]
        if diff:
            k = diff[0]
            raise ValueError(f"cannot resume {out}: {k} was {old.get(k)!r}, now {new[k]!r}")
        then = (old.get("records") or {}).get("sha256")
        now = (_records_fingerprint(cfg.env_args).get("records") or {}).get("sha256")
        if then is not None and then != now:
            raise ValueError(f"cannot resume {out}: the records file changed since the run "
                             f"(sha256 {then[:16]} then, {str(now)[:16]} now)")
        prepared.removed, prepared.backup = drop_unreadable_lines(out / "episodes.jsonl")
        prepared.records = read_records_checked(out / "episodes.jsonl")[0]
    (out / "traces").mkdir(parents=True, exist_ok=True)
    (out / "thumbs").mkdir(parents=True, exist_ok=True)
    return prepared


def check_episode_files(out: Path, episode_ids: Iterable[str]) -> None:
    """Raise :class:`~m3gym.eval.run_folder.RunFolderError` where episode files can't be written.

    That is ``traces/<episode>.json`` not a file, ``thumbs/<episode>`` not a folder (or holding
    something that is not a file): a resumed run then stops before it starts, not midway.
    """
    from m3gym.eval.run_folder import check_file, check_folder

    why = " (move it away: the episode runs again and writes it)"
    for ep in episode_ids:
        check_file(out / "traces" / f"{ep}.json", why=why)
        thumbs = out / "thumbs" / ep
        if check_folder(thumbs, why=why):
            for entry in sorted(thumbs.iterdir()):
                check_file(entry, why=why)


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


def terminate_last_line(path: Path) -> None:
    """End the file's last line if it lacks a newline, so the next record starts on its own line.

    (A line cut by a crash is removed first, on ``--resume``, by :func:`drop_unreadable_lines`.)
    A path that is not a regular file raises :class:`~m3gym.eval.run_folder.RunFolderError`.
    """
    from m3gym.eval.run_folder import RunFolderError, check_file

    if not check_file(path):
        return
    try:
        if path.stat().st_size:
            with path.open("rb") as f:
                f.seek(-1, 2)
                last = f.read(1)
            if last != b"\n":
                with path.open("a") as f:
                    f.write("\n")
    except OSError as exc:
        raise RunFolderError(path, f"cannot be read or appended to ({exc.strerror or exc})"
                             ) from None


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

    On ``resume``, lines of ``episodes.jsonl`` that are not episode records (a line cut by a
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
    finished = {r["episode_id"] for r in read_records_checked(out / "episodes.jsonl")[0]
                if r.get("status") not in RERUN_STATUSES} if resume else set()
    manifest = cfg.manifest_data()
    frozen = check_planned_tasks([s for s in specs if s.episode_id not in finished], cfg,
                                 manifest)
    prepared = _prepare_folder(out, cfg, resume)
    if prepared.removed and prepared.backup is not None:
        if on_unreadable is not None:
            on_unreadable(prepared.removed, prepared.backup)
        else:
            warnings.warn(f"removed {unreadable_message(prepared.removed)}; the original is "
                          f"kept as {prepared.backup}", UserWarning, stacklevel=2)
    done = {r["episode_id"] for r in prepared.records if r.get("status") not in RERUN_STATUSES}
    todo = [s for s in specs if s.episode_id not in done]
    check_episode_files(out, [s.episode_id for s in todo])
    (out / "config.json").write_text(json.dumps(
        {**cfg.to_dict(), "episode_ids": [s.episode_id for s in specs],
         "versions": run_versions(agent, manifest),
         "frozen_tasks": frozen.to_dict() if frozen is not None else None,
         **_records_fingerprint(cfg.env_args)},
        indent=2, default=str) + "\n")
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
                on_episode(outcome.record)
            consecutive = consecutive + 1 if outcome.record["status"] == "infra_error" else 0
            if consecutive >= cfg.max_consecutive_infra:
                raise EvalAbort(f"{consecutive} infrastructure errors in a row (last: "
                                f"{outcome.record['error']}); finished episodes are kept in "
                                f"{out}, rerun with --resume to continue")
    planned = {s.episode_id for s in specs}
    records = [r for r in read_records(out / "episodes.jsonl") if r["episode_id"] in planned]
    summary = summarize(records)
    if cfg.samples > 1:
        from m3gym.eval.passk import passk_summary

        summary["samples"] = passk_summary(records, cfg.samples)
    if tuple(metrics) != ("m3gym",):
        from m3gym.eval.peer_summary import run_peer_blocks

        summary["metrics"] = list(metrics)
        summary.update(run_peer_blocks(out, records, metrics))
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return EvalResult(out, records, summary, ran=len(todo), skipped=len(specs) - len(todo),
                      removed=prepared.removed, backup=prepared.backup)
