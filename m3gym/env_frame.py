"""What ``M3BenchEnv.render`` returns: a fixed-size RGB frame or a text description of the state.

(It was ``m3gym.render_frame``, a name too close to the task renderers of :mod:`m3gym.tasks.render`;
that path still imports, with a deprecation warning.)

``rgb_array`` frames have one shape for the whole episode and for every env id,
:data:`FRAME_SHAPE` (544 × 768 × 3): a 32-pixel status line (family, step and call counts, images,
answer given) over a grid of 2 × 3 tiles of 256 pixels. The first tile always shows Image 0 (the
original); the others show the latest images of the episode, oldest first, each labelled with its
index and the op that made it. Tiles are the agent's views (``env.view``) fitted into the tile, so a
frame never shows more detail than the observations do. A constant shape is what video encoders
(``gymnasium.wrappers.RecordVideo``) need; 544 and 768 are multiples of 16 (the encoders' block).

``ansi`` text lists what the agent has seen: the question, the choices, every image with its size,
view size and provenance, the last step's results and errors, the step and call counts and the
answer once given. It never includes the expected answer. See ``docs/rendering.md``.

Both read an :class:`EpisodeSnapshot` (what the env hands over on ``render``), never the env.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import cv2
import numpy as np

from m3gym.view import view_shape

if TYPE_CHECKING:
    from m3gym.spec import Task
    from m3gym.state import ImageEntry, ImageState
    from m3gym.trace import Trace

FRAME_TILE: int = 256
"""Side, in pixels, of one image tile of an ``rgb_array`` frame."""

FRAME_GRID: tuple[int, int] = (2, 3)
"""Rows and columns of image tiles in an ``rgb_array`` frame."""

FRAME_HEADER: int = 32
"""Height, in pixels, of the status line above the tiles."""

FRAME_SHAPE: tuple[int, int, int] = (FRAME_HEADER + FRAME_GRID[0] * FRAME_TILE,
                                     FRAME_GRID[1] * FRAME_TILE, 3)
"""Shape of every ``rgb_array`` frame, for every env id and every step: ``(544, 768, 3)``."""

BACKGROUND = 32
"""Grey level of empty tile space."""

MAX_RESULT_CHARS = 400
"""Longest tool-result line an ``ansi`` description shows (longer ones end with ``…``)."""

_FONT = cv2.FONT_HERSHEY_SIMPLEX


@dataclass(frozen=True)
class EpisodeSnapshot:
    """What a frame or a text description shows of an episode (read, never changed).

    The fields are the env's attributes of the same names (it builds one per ``render`` call;
    they refer to the live state, nothing is copied).
    """

    task: Task | None
    """The episode's task; ``None`` before the first reset."""
    state: ImageState
    """The indexed images of the episode."""
    trace: Trace
    """The steps taken, their results and errors, and the answer once given."""
    view: Callable[[int], np.ndarray]
    """Returns image ``i`` at view resolution (what the agent saw)."""
    view_size: int
    """Longest side of a view."""
    rounds_used: int
    """Steps taken."""
    max_rounds: int
    """Step budget."""
    calls_used: int
    """Tool calls counted against the budget."""
    max_tool_calls: int
    """Tool-call budget."""
    episode_over: bool
    """Whether the episode ended (answered, truncated) or has not started."""


def frame_indices(n_images: int, slots: int = FRAME_GRID[0] * FRAME_GRID[1]) -> list[int]:
    """Return the image indices a frame shows: Image 0, then the latest ``slots - 1`` others."""
    if n_images <= 0:
        return []
    if slots < 1:
        raise ValueError(f"slots must be >= 1, got {slots}")
    return [0, *range(max(1, n_images - (slots - 1)), n_images)]


def fit_tile(image: np.ndarray, tile: int = FRAME_TILE) -> np.ndarray:
    """Return ``image`` (RGB or grey ``uint8``) as RGB scaled to fit a ``tile × tile`` square.

    Shrinking averages pixels (``INTER_AREA``); enlarging repeats them (``INTER_NEAREST``), so a
    small view is shown blocky rather than with detail it does not have.
    """
    h, w = image.shape[:2]
    scale = tile / max(h, w, 1)
    out_w, out_h = max(1, min(tile, round(w * scale))), max(1, min(tile, round(h * scale)))
    interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_NEAREST
    out = cv2.resize(np.ascontiguousarray(image), (out_w, out_h), interpolation=interp)
    if out.ndim == 2:
        out = cv2.cvtColor(out, cv2.COLOR_GRAY2RGB)
    return out


def _put_label(frame: np.ndarray, text: str, x: int, y: int) -> None:
    """Draw ``text`` (ASCII) with a dark outline so it reads on any background."""
    cv2.putText(frame, text, (x, y), _FONT, 0.5, (0, 0, 0), 3, cv2.LINE_AA)
    cv2.putText(frame, text, (x, y), _FONT, 0.5, (255, 255, 0), 1, cv2.LINE_AA)


def compose_frame(tiles: Sequence[np.ndarray], labels: Sequence[str], status: str) -> np.ndarray:
    """Return a :data:`FRAME_SHAPE` frame: ``status`` over the tiles (at most 2 × 3), labelled.

    Raises ``ValueError`` for more tiles than the grid holds or a label count that differs.
    """
    rows, cols = FRAME_GRID
    if len(tiles) > rows * cols or len(labels) != len(tiles):
        raise ValueError(f"need at most {rows * cols} tiles and one label per tile, got "
                         f"{len(tiles)} tiles and {len(labels)} labels")
    frame = np.full(FRAME_SHAPE, BACKGROUND, dtype=np.uint8)
    frame[:FRAME_HEADER] = 0
    _put_label(frame, status.encode("ascii", "replace").decode()[:100], 8, 22)
    for slot, (image, label) in enumerate(zip(tiles, labels, strict=True)):
        thumb = fit_tile(image)
        r, c = divmod(slot, cols)
        y0, x0 = FRAME_HEADER + r * FRAME_TILE, c * FRAME_TILE
        frame[y0:y0 + thumb.shape[0], x0:x0 + thumb.shape[1]] = thumb
        _put_label(frame, label.encode("ascii", "replace").decode()[:36], x0 + 4, y0 + 18)
    return frame


def status_line(env: EpisodeSnapshot) -> str:
    """Return the frame's status line: family, step, calls, images, answer given."""
    if env.task is None:
        return "no episode (call reset)"
    answered = "answered" if env.trace.answer is not None else ("ended" if env.episode_over else "")
    return (f"{env.task.family} | step {env.rounds_used}/{env.max_rounds} | calls "
            f"{env.calls_used}/{env.max_tool_calls} | images {len(env.state)} {answered}").strip()


def image_label(entry: ImageEntry) -> str:
    """Return a tile label: the image's index and the op that made it (``"3 crop<1"``)."""
    prov = entry.provenance
    source = "" if prov.parent is None else f"<{prov.parent}"
    return f"{entry.index} {prov.op}{source}"


def episode_frame(env: EpisodeSnapshot) -> np.ndarray:
    """Return the ``rgb_array`` frame of an episode's current state (:data:`FRAME_SHAPE`)."""
    indices = frame_indices(len(env.state)) if env.task is not None else []
    tiles = [env.view(i) for i in indices]
    labels = [image_label(env.state[i]) for i in indices]
    return compose_frame(tiles, labels, status_line(env))


def _clip(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def describe_image(entry: ImageEntry, view_size: int) -> str:
    """Return one ``ansi`` line on an image: index, size, view size, provenance, label."""
    prov = entry.provenance
    vh, vw = view_shape(entry.height, entry.width, view_size)
    shown = "" if (vh, vw) == (entry.height, entry.width) else f" (shown {vw}x{vh})"
    if prov.parent is None:
        origin = prov.op + (f" {json.dumps(dict(prov.args), sort_keys=True)}" if prov.args else "")
    else:
        args = {k: v for k, v in prov.args.items() if k not in ("image_index", "label")}
        origin = f"{prov.op} of #{prov.parent} {json.dumps(args, sort_keys=True, default=str)}"
    extra = f"; root #{prov.root}"
    if prov.photometric:
        extra += f"; photometric: {', '.join(prov.photometric)}"
    if prov.call_id:
        extra += f"; call {prov.call_id}"
    label = f"; label {entry.label!r}" if entry.label else ""
    return f"  #{entry.index} {entry.width}x{entry.height}{shown} {origin}{extra}{label}"


def episode_text(env: EpisodeSnapshot) -> str:
    """Return the ``ansi`` description of an episode's current state (see the module docstring)."""
    from m3gym.trace import step_text

    task = env.task
    if task is None:
        return "m3gym: no episode (call reset)\n"
    ended = "ended" if env.episode_over else "running"
    state = "answered" if env.trace.answer is not None else ended
    lines = [f"m3gym {task.family} (level {task.level}) | "
             f"step {env.rounds_used}/{env.max_rounds} | "
             f"calls {env.calls_used}/{env.max_tool_calls} | {state}",
             "Question: " + " ".join(task.question.split())]
    if task.choices:
        lines.append("Choices: " + " | ".join(task.choices))
    lines.append(f"Images ({len(env.state)}):")
    lines += [describe_image(entry, env.view_size) for entry in env.state]
    if env.trace.steps:
        last = len(env.trace.steps) - 1
        errors = [e for s, e in env.trace.parse_errors if s == last]
        result = step_text(env.trace.steps[-1], errors, None)
        lines.append(f"Last step ({last + 1}):")
        lines += ["  " + _clip(line) for line in result.splitlines()] or ["  (no calls)"]
    if env.trace.answer is not None:
        lines.append(f"Answer: {_clip(env.trace.answer)}")
    return "\n".join(lines) + "\n"
