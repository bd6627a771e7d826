"""Reports of one or more run folders: ``report.md`` (tables) and ``report.html`` with its images.

The HTML holds a leaderboard (each metric's mean with its 95 % bootstrap interval over tasks),
per-level / per-family / M3-Bench tables, plots (matplotlib, inlined as base64 PNG, with 95 %
error bars) and a trajectory viewer: per episode the question, each step's calls with arguments
and results, the images produced, the checkpoints each call passed and the reward components of
each step. Several runs are shown side by side. The viewer shows at most ``max_episodes``
episodes, spread over runs and families.

:func:`write_report` puts the viewer's images in ``report_files/`` beside the page
(:mod:`m3gym.eval.report_images`): lazy-loaded JPEG thumbnails, each linking to the
full-resolution PNG re-created by replaying the episode (opened on click). The bootstrap is
seeded (:data:`BOOTSTRAP_SEED`), so the same run folders give byte-identical reports.

The page's markup lives in jinja2 templates (``templates/``, :func:`template_env`); this module
computes what they show. Plots and templates need the ``eval`` extra (matplotlib, jinja2).

What the pages show is assembled beside it, and re-exported here: the runs and their intervals
(:mod:`m3gym.eval.report_runs`), the tables as data (:mod:`m3gym.eval.report_tables`), the
warnings (:mod:`m3gym.eval.report_warnings`) and the plots (:mod:`m3gym.eval.report_plots`).
"""

from __future__ import annotations

import functools
import html
import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from m3gym.deprecation import renamed_names
from m3gym.eval.peer_summary import peer_tables
from m3gym.eval.report_images import FILES_DIR, ReportImages, ShownImage
from m3gym.eval.report_plots import error_bar as error_bar
from m3gym.eval.report_plots import level_rows as level_rows
from m3gym.eval.report_plots import plot_images
from m3gym.eval.report_runs import BOOTSTRAP_SEED as BOOTSTRAP_SEED
from m3gym.eval.report_runs import INTERVAL_LEVEL as INTERVAL_LEVEL
from m3gym.eval.report_runs import (
    LEADERBOARD_COLUMNS,
    Run,
    load_runs,
)
from m3gym.eval.report_runs import bootstrap_rng as bootstrap_rng
from m3gym.eval.report_runs import load_run as load_run
from m3gym.eval.report_tables import (
    JUDGE_NOTE,
    Table,
    failure_table,
    family_table,
    judge_table,
    leaderboard_table,
    level_table,
    runs_table,
    versions_table,
)
from m3gym.eval.report_tables import VERSION_COLUMNS as VERSION_COLUMNS
from m3gym.eval.report_warnings import changed_record_tasks as changed_record_tasks
from m3gym.eval.report_warnings import comparability_warnings as comparability_warnings
from m3gym.eval.report_warnings import isolation_warnings as isolation_warnings
from m3gym.eval.report_warnings import records_warnings as records_warnings
from m3gym.eval.report_warnings import report_warnings
from m3gym.eval.report_warnings import skipped_warnings as skipped_warnings
from m3gym.eval.report_warnings import unreadable_warnings as unreadable_warnings
from m3gym.eval.summary import (
    M3BENCH_COLUMNS,
)
from m3gym.extras import require_extra

MAX_RESULT_CHARS: int = 600
"""Longest tool result text shown per call in the viewer."""

def markdown_table(table: Table) -> str:
    """Return a table as GitHub Markdown."""
    header, rows = table
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def html_table(table: Table, css: str = "") -> str:
    """Return a table as HTML (cells escaped; numeric cells right-aligned).

    A cell ``mean [lo, hi]`` keeps its interval on one line (``<span class="ci">``), so a narrow
    column wraps between the mean and its interval only. The markup is the ``table`` macro of
    ``templates/macros.html.j2``.
    """
    header, _ = table
    macro = template_env().get_template("macros.html.j2").module.table
    return str(macro(header, table_cells(table), css))


def table_cells(table: Table) -> list[list[dict[str, Any]]]:
    """Return a table's rows as the templates' cells: ``{"num", "text", "ci"}``.

    ``num`` says the cell is numeric (right-aligned); a cell ``mean [lo, hi]`` has ``text`` the
    mean and ``ci`` the bracketed interval without its opening bracket, every other ``ci`` is
    ``None``.
    """
    return [[_cell(c) for c in row] for row in table[1]]


def _cell(cell: str) -> dict[str, Any]:
    mean, sep, bounds = cell.partition(" [")
    if sep and bounds.endswith("]") and _is_num(mean):
        return {"num": _is_num(cell), "text": mean, "ci": bounds}
    return {"num": _is_num(cell), "text": cell, "ci": None}


def _is_num(cell: str) -> bool:
    try:
        float(cell.split("/")[0].split(" [")[0])
        return True
    except ValueError:
        return cell == "-"


INTERVAL_NOTE: str = (
    "Each leaderboard cell is the mean over scored episodes with its 95 % percentile-bootstrap "
    "interval in brackets (2000 resamples of the tasks, each task with all its rollouts; "
    "seeded, so the report is reproducible).")
"""The sentence under the leaderboard that says what its brackets are."""

_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]<>|#"})


def _md_text(text: str) -> str:
    """Return ``text`` with Markdown's special characters escaped (shown as written)."""
    return text.translate(_MD_SPECIAL)


def render_markdown(runs: Sequence[Run]) -> str:
    """Return ``report.md``: runs, leaderboard, per-level, per-family and failure-mode tables."""
    peer = peer_tables(runs)  # reads traces: before the warnings, which name skipped ones
    warnings = report_warnings(runs)
    judge = judge_table(runs)
    parts = [
        "# m3gym evaluation report", "",
        *(["## Warnings", "", *(f"- **{_md_text(w)}**" for w in warnings), ""]
          if warnings else []),
        "## Runs", "", markdown_table(runs_table(runs)), "",
        "## Versions", "", markdown_table(versions_table(runs)), "",
        "## Leaderboard", "", markdown_table(leaderboard_table(runs)), "",
        INTERVAL_NOTE, "",
        "## Per level", "", markdown_table(level_table(runs, LEADERBOARD_COLUMNS)), "",
        "## M3-Bench metrics per level", "", markdown_table(level_table(runs, M3BENCH_COLUMNS)),
        "",
        "## Accuracy per family", "", markdown_table(family_table(runs, "acc")), "",
        "## Failure modes", "", markdown_table(failure_table(runs)), "",
        *(["## Judge checkpoints", "", markdown_table(judge), "", JUDGE_NOTE, ""]
          if judge is not None else []),
        *(s for title, t, note in peer
          for s in (f"## {title}", "", markdown_table(t), "", note, "")),
        "Acc = answer accuracy; S / V = strategy / visual-evidence checkpoints passed (V_true: "
        "evidence legible in an artifact, verified on pixels); OT = overthink "
        "max(0, C_agent − C_ref)/(C_ref + 1); M3 = multi-modal / multi-hop / multi-threaded "
        "tool-use score; Recall, Prec, ArgSim = M3-Bench call alignment. Infrastructure errors "
        "are not scored.", "",
    ]
    return "\n".join(parts)


# --------------------------------------------------------------------------- trajectory viewer
def select_episodes(runs: Sequence[Run], max_episodes: int) -> list[tuple[Run, dict[str, Any]]]:
    """Return up to ``max_episodes`` (run, episode row) pairs spread over runs and families.

    Each run gets an equal share, taken round-robin over its families, alternating unsolved and
    solved episodes within a family.
    """
    quota = max(1, max_episodes // max(1, len(runs)))
    chosen: list[tuple[Run, dict[str, Any]]] = []
    for run in runs:
        by_family: dict[str, list[dict[str, Any]]] = {}
        for row in run.rows:
            by_family.setdefault(str(row.get("family")), []).append(row)
        queues = [_alternate(v) for _, v in sorted(by_family.items())]
        picked: list[dict[str, Any]] = []
        while len(picked) < quota and any(queues):
            for q in queues:
                if q and len(picked) < quota:
                    picked.append(q.pop(0))
        chosen += [(run, row) for row in sorted(picked, key=lambda r: r.get("index", 0))]
    return chosen[:max_episodes]


def _alternate(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    wrong = [r for r in rows if not r.get("answer_correct")]
    right = [r for r in rows if r.get("answer_correct")]
    out = []
    for i in range(max(len(wrong), len(right))):
        out += [x[i] for x in (wrong, right) if i < len(x)]
    return out


def _args_text(args: Any) -> str:
    if isinstance(args, Mapping):
        return ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in args.items())
    return json.dumps(args, default=str)


# --------------------------------------------------------------------------- HTML templates
TEMPLATES_DIR: str = "templates"
"""Folder of :mod:`m3gym.eval` (package data) holding the jinja2 templates of ``report.html``:
``report.html.j2`` (the page), ``episode.html.j2`` (one episode of the viewer),
``macros.html.j2`` (tables, images), ``report.css`` and ``report.js``."""


@functools.cache
def template_env() -> Any:
    """Return the ``jinja2.Environment`` of the report's templates.

    Autoescaping is on; every value is escaped with :func:`html.escape` (the entities the report
    has always written), markup built by the templates passes through. Undefined names fail.
    Needs the ``eval`` extra (:class:`~m3gym.extras.MissingExtraError` otherwise).
    """
    jinja2 = require_extra("jinja2", "eval", "the HTML report")
    markup = require_extra("markupsafe", "eval", "the HTML report").Markup

    def finalize(value: Any) -> Any:
        return value if hasattr(value, "__html__") else markup(html.escape(str(value)))

    return jinja2.Environment(
        loader=jinja2.PackageLoader("m3gym.eval", TEMPLATES_DIR), autoescape=True,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True, finalize=finalize)


@dataclass
class ImageSource:
    """Where the viewer's images come from: the report's files, or inlined thumbnails.

    With ``files`` (what :func:`write_report` uses) thumbnails are files loaded lazily, each
    linking to its full-resolution image; without, thumbnails are inlined as data URLs (a page
    rendered in memory, with no folder to put files in).
    """

    files: ReportImages | None = None

    def shown(self, run: Run, trace: Mapping[str, Any],
              entry: Mapping[str, Any]) -> ShownImage | None:
        """Return the URLs of one image of an episode (``None``: it has no thumbnail)."""
        if self.files is None:
            url = run.thumb_data_url(entry.get("thumb"))
            return ShownImage(url) if url else None
        return self.files.image(run.path, run.name, trace, entry,
                                int(run.config.get("thumb_size") or 256), on_skip=run.skip)


def thumb_size_of(shape: Sequence[int], size: int) -> tuple[int, int]:
    """Return the (width, height) of the stored thumbnail of an image of ``shape`` (h, w, ...)."""
    h, w = int(shape[0]), int(shape[1])
    scale = min(1.0, size / max(h, w, 1))
    return (max(1, round(w * scale)), max(1, round(h * scale))) if scale < 1.0 else (w, h)


def _image(run: Run, trace: Mapping[str, Any], images: Mapping[int, Mapping[str, Any]],
           index: Any, caption: str, source: ImageSource) -> dict[str, Any] | None:
    """Return one viewer image for the ``image`` macro (``None``: nothing to show)."""
    entry = images.get(index) if isinstance(index, int) else None
    shown = source.shown(run, trace, entry) if entry else None
    if entry is None or shown is None:
        return None
    dims = list(entry.get("shape") or [])[:2]
    shape = "x".join(str(s) for s in dims[::-1])
    size = (thumb_size_of(dims, int(run.config.get("thumb_size") or 256))
            if len(dims) == 2 else None)
    view = (shown.view if shown.full is not None and shown.view is not None
            and shown.view != tuple(dims[::-1]) else None)
    return {"thumb": shown.thumb, "full": shown.full, "size": size, "shape": shape,
            "title": f"Image {index} ({shape}) ← {entry.get('op')}", "caption": caption,
            "view": view}


def _checkpoint_results(trace: Mapping[str, Any]
                        ) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """Return the checkpoint table's rows and, per call id, the checkpoints it passed."""
    results = ((trace.get("audit") or {}).get("checkpoints") or {}).get("results") or []
    specs = {c["id"]: c for c in ((trace.get("task") or {}).get("checkpoints") or [])}
    by_call: dict[str, list[str]] = {}
    rows = []
    for res in results:
        cid = res.get("checkpoint_id")
        if res.get("passed") and res.get("call_id"):
            by_call.setdefault(str(res["call_id"]), []).append(str(cid))
        desc = specs.get(cid, {}).get("description", "")
        by = res.get("call_id") or (f"Image {res['image_index']}"
                                    if res.get("image_index") is not None else "")
        rows.append({"passed": bool(res.get("passed")), "id": cid, "axis": res.get("axis", ""),
                     "kind": res.get("kind", ""), "by": by,
                     "detail": desc or res.get("reason", "")})
    return rows, by_call


def episode_context(run: Run, row: Mapping[str, Any], trace: Mapping[str, Any] | None,
                    number: int, source: ImageSource | None = None) -> dict[str, Any]:
    """Return what ``episode.html.j2`` shows of one episode (images from ``source``)."""
    source = source or ImageSource()
    status = row.get("status")
    correct = row.get("answer_correct")
    ep: dict[str, Any] = {
        "number": number, "open": number == 0, "status": status,
        "mark": "✓" if correct else ("✗" if status == "ok" else "⚠"),
        "task_id": row.get("task_id"), "run": run.name, "answer": repr(row.get("answer")),
        "calls": row.get("calls"), "reward": round(float(row.get("reward") or 0.0), 3),
        "failure_mode": row.get("failure_mode"), "trace": None,
    }
    if trace is None:
        return ep
    task = trace.get("task") or {}
    images = {int(im["index"]): im for im in trace.get("images", [])}
    inputs = [i for i, im in images.items() if im.get("parent") is None and
              im.get("op") == "input"]
    reference = task.get("reference") or []
    checkpoints, by_call = _checkpoint_results(trace)
    metrics = trace.get("metrics") or {}
    ep["trace"] = {
        "question": trace.get("question") or "",
        "gold": (task.get("answer") or {}).get("value"), "given": trace.get("answer"),
        "error": trace.get("error"),
        "inputs": [_image(run, trace, images, i, f"input Image {i}", source) for i in inputs],
        "reference": "\n".join(f"step {i}: " + " ‖ ".join(
            f"{c.get('name')}({_args_text(c.get('arguments'))})" for c in step)
            for i, step in enumerate(reference)) if reference else None,
        "steps": [_step_context(run, trace, step, images, by_call, source)
                  for step in trace.get("steps", [])],
        "checkpoints": checkpoints,
        "metrics": [(k, round(v, 3) if isinstance(v, float) else v)
                    for k, v in metrics.items() if v is not None and k != "failure_mode"],
    }
    return ep


def render_episode(run: Run, row: Mapping[str, Any], trace: Mapping[str, Any] | None,
                   number: int, source: ImageSource | None = None) -> str:
    """Return the viewer section of one episode (images from ``source``; default: inlined)."""
    return template_env().get_template("episode.html.j2").render(
        ep=episode_context(run, row, trace, number, source))


def _step_context(run: Run, trace: Mapping[str, Any], step: Mapping[str, Any],
                  images: Mapping[int, Mapping[str, Any]], by_call: Mapping[str, list[str]],
                  source: ImageSource) -> dict[str, Any]:
    comps = step.get("reward_components") or {}
    passed = step.get("checkpoints_passed") or []
    calls = []
    for call in step.get("calls", []):
        text = str(call.get("result_text") or call.get("error") or "")
        if len(text) > MAX_RESULT_CHARS:
            text = text[:MAX_RESULT_CHARS] + " …"
        calls.append({
            "ok": call.get("ok"), "call_id": call.get("call_id"), "name": call.get("name"),
            "args": _args_text(call.get("arguments")), "text": text,
            "badges": by_call.get(str(call.get("call_id")), []),
            "image": _image(run, trace, images, call.get("output_index"),
                            f"→ Image {call['output_index']}", source)
            if call.get("output_index") is not None else None,
        })
    return {
        "step": step.get("step"), "reward": f"{step.get('reward', 0):+.3f}",
        "components": ", ".join(f"{k} {v:+.3f}" for k, v in comps.items()
                                if isinstance(v, (int, float)) and v),
        "passed": ", ".join(passed) if passed else None, "calls": calls,
        "observation": step["observation_text"]
        if not step.get("calls") and step.get("observation_text") else None,
        "parse_errors": step.get("parse_errors", []),
        "action": str(step["action"])[:4000] if step.get("action") else None,
    }


def _section(title: str, table: Table, css: str = "",
             note: str | None = None) -> dict[str, Any]:
    """Return one titled table of the page for ``report.html.j2``."""
    return {"title": title, "header": table[0], "rows": table_cells(table), "css": css,
            "note": note}


def render_html(runs: Sequence[Run], max_episodes: int = 60,
                images: ReportImages | None = None) -> str:
    """Return the ``report.html`` text (``templates/report.html.j2``).

    With ``images`` the viewer's thumbnails and full-resolution images are written as files
    there and linked (lazy-loaded); without, thumbnails are inlined and there is no full size.
    """
    plots = plot_images(runs)
    chosen = select_episodes(runs, max_episodes)
    source = ImageSource(images)
    try:
        episodes = [episode_context(run, row, run.trace(row["episode_id"]), i, source)
                    for i, (run, row) in enumerate(chosen)]
    finally:
        if images is not None:
            images.close()
    peer = peer_tables(runs)  # reads traces: before the warnings, which name skipped ones
    warnings = report_warnings(runs) + (images.problems if images is not None else [])
    judge = judge_table(runs)
    head_tables = [
        _section("Runs", runs_table(runs)),
        _section("Versions", versions_table(runs)),
        _section("Leaderboard", leaderboard_table(runs), "leaderboard", INTERVAL_NOTE),
    ]
    tables = [
        _section("Per level", level_table(runs, LEADERBOARD_COLUMNS)),
        _section("M3-Bench metrics per level", level_table(runs, M3BENCH_COLUMNS)),
        _section("Accuracy per family", family_table(runs, "acc")),
        _section("Failure modes", failure_table(runs)),
        *([_section("Judge checkpoints", judge, note=JUDGE_NOTE)] if judge is not None else []),
        *(_section(title, t, note=note) for title, t, note in peer),
    ]
    return template_env().get_template("report.html.j2").render(
        warnings=warnings, head_tables=head_tables, plots=list(plots.items()), tables=tables,
        shown=len(chosen), total=sum(len(r.rows) for r in runs), episodes=episodes)


@dataclass
class WrittenReport:
    """What :func:`build_report` wrote: the two pages, the runs and every warning shown."""

    pages: list[Path]
    runs: list[Run]
    warnings: list[str]


def build_report(run_paths: Sequence[str | Path], out: str | Path | None = None,
                 max_episodes: int = 60, full_images: bool = True) -> WrittenReport:
    """Write the report (:func:`write_report`) and return its pages, runs and warnings.

    The warnings are :func:`report_warnings` after both pages are rendered, so they name every
    file of the runs the report skipped.
    """
    if not run_paths:
        raise ValueError("give at least one run folder")
    runs = load_runs(run_paths)
    if out is None:
        out = runs[0].path if len(runs) == 1 else runs[0].path.parent / "report"
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    md, page = out / "report.md", out / "report.html"
    files = out / FILES_DIR
    if files.is_dir():
        shutil.rmtree(files)
    # the page first: the files it skips are then named in report.md too
    page_text = render_html(runs, max_episodes, ReportImages(out, full=full_images))
    md.write_text(render_markdown(runs))
    page.write_text(page_text)
    return WrittenReport([md, page], runs, report_warnings(runs))


def write_report(run_paths: Sequence[str | Path], out: str | Path | None = None,
                 max_episodes: int = 60, full_images: bool = True) -> list[Path]:
    """Write ``report.md``, ``report.html`` and its ``report_files/``; return the two pages.

    ``out`` defaults to the run folder for one run and to ``<parent>/report`` for several.
    ``report_files/`` is rewritten from scratch (:mod:`m3gym.eval.report_images`); with
    ``full_images=False`` the episodes are not replayed and only thumbnails are linked. A file
    of a run the report cannot use (a garbage trace, say) is skipped and named in both pages'
    warnings (:func:`skipped_warnings`).
    """
    return build_report(run_paths, out, max_episodes, full_images).pages


__getattr__ = renamed_names(__name__, {
    "level_records": ("m3gym.eval.report_plots.level_rows", lambda: level_rows)})
"""The old name ``level_records`` (``records`` is the user's data)."""
