"""The image files of a report folder: thumbnails and full-resolution PNGs, linked, never inlined.

A run folder keeps only JPEG thumbnails (``thumbs/<episode>/<i>.jpg``). The full-resolution image
the agent saw is re-created at report time by replaying the episode
(:func:`~m3gym.eval.replay.replay_trace`: the task from its seed, then the recorded calls), for
the episodes the viewer shows only. Each re-created image is checked against its stored
thumbnail before it is linked, so the report never shows an image the agent did not see.

Files go to ``<report folder>/report_files/`` named by the SHA-256 of their bytes, so an image
shown in several episodes or runs (the same task's input) is written once, and the same runs
give the same files::

    report_files/thumbs/<sha>.jpg   the stored thumbnails (``<img loading="lazy">``)
    report_files/full/<sha>.png     the full-resolution images (opened on click)
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import cv2
import numpy as np

from m3gym.codec import png_bytes

FILES_DIR: str = "report_files"
"""Folder, beside ``report.html``, that holds the report's image files."""

PNG_COMPRESSION: int = 3
"""zlib level of the full-size PNGs: near level 6's size in half its time on large inputs."""

THUMB_TOLERANCE: float = 3.0
"""Largest mean absolute difference (gray levels) between a re-created image's thumbnail and the
stored one for the replay to count as the same image (JPEG encoders of other library builds
differ by about one level)."""


@dataclass(frozen=True)
class ShownImage:
    """One image of the viewer: its thumbnail URL and, when re-created, its full-size PNG URL.

    ``view`` is the ``(width, height)`` the agent's observation showed the image at (the env's
    ``view_size``; known once the episode is replayed).
    """

    thumb: str
    full: str | None = None
    view: tuple[int, int] | None = None


def thumbnails_match(stored: bytes, remade: bytes) -> bool:
    """Return whether two JPEG thumbnails show the same image (equal bytes, or within tolerance)."""
    if stored == remade:
        return True
    a = cv2.imdecode(np.frombuffer(stored, np.uint8), cv2.IMREAD_UNCHANGED)
    b = cv2.imdecode(np.frombuffer(remade, np.uint8), cv2.IMREAD_UNCHANGED)
    if a is None or b is None or a.shape != b.shape:
        return False
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean()) <= THUMB_TOLERANCE


JPEG_MAGIC: bytes = b"\xff\xd8\xff"
"""The first bytes of every JPEG file (a stored thumbnail without them is not shown)."""


def read_thumb(run_path: Path, rel: Any) -> tuple[bytes | None, str | None]:
    """Return ``(bytes, None)`` of a trace's stored thumbnail, or ``(None, reason)``.

    ``(None, None)`` when it has none or the file is missing. ``rel`` comes from a trace, which
    is not trusted: it must be a relative path under ``thumbs/`` without ``..`` (no file outside
    the run folder is ever read), name a regular file (a FIFO would block) and hold a JPEG.
    """
    if not rel:
        return None, None
    from m3gym.eval.run_folder import RunFolderError, read_bytes

    parts = PurePosixPath(str(rel)).parts
    if (not isinstance(rel, str) or "\\" in rel or "\0" in rel or not parts
            or parts[0] != "thumbs" or ".." in parts):
        return None, "a thumbnail path outside the run's thumbs/ folder; not read"
    try:
        data = read_bytes(run_path / rel)
    except FileNotFoundError:
        return None, None
    except RunFolderError as exc:
        return None, f"{exc.problem}; not shown"
    if not data.startswith(JPEG_MAGIC):
        return None, "not a JPEG file; not shown"
    return data, None


def _is_code_mode(trace: Mapping[str, Any]) -> bool:
    return any(step.get("code_cells") for step in trace.get("steps") or [])


@dataclass
class ReportImages:
    """Writes a report's image files under ``root / FILES_DIR`` and returns their URLs.

    ``full=False`` links thumbnails only (no replay). ``problems`` names, per episode, why its
    full-resolution images are not shown; ``files`` maps each written file to its size in bytes.
    """

    root: Path
    full: bool = True
    problems: list[str] = field(default_factory=list)
    files: dict[str, int] = field(default_factory=dict)
    _episode: tuple[str, str] | None = field(default=None, init=False, repr=False)
    _state: Any = field(default=None, init=False, repr=False)
    _env: Any = field(default=None, init=False, repr=False)

    def _write(self, sub: str, data: bytes, suffix: str) -> str:
        rel = f"{FILES_DIR}/{sub}/{hashlib.sha256(data).hexdigest()[:20]}{suffix}"
        if rel not in self.files:
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            self.files[rel] = len(data)
        return rel

    def image(self, run_path: Path, run_name: str, trace: Mapping[str, Any],
              entry: Mapping[str, Any], thumb_size: int,
              on_skip: Callable[[Path, str], None] | None = None) -> ShownImage | None:
        """Return the URLs of one image of ``trace`` (``None`` when its thumbnail is missing).

        A thumbnail that cannot be used (:func:`read_thumb`) is not shown: ``on_skip(path,
        reason)`` is told, by default :attr:`problems`.
        """
        rel = entry.get("thumb")
        stored, problem = read_thumb(run_path, rel)
        if problem is not None:
            if on_skip is not None:
                on_skip(run_path / str(rel), problem)
            elif f"{run_path / str(rel)}: {problem}" not in self.problems:
                self.problems.append(f"{run_path / str(rel)}: {problem}")
        if stored is None:
            return None
        thumb = self._write("thumbs", stored, ".jpg")
        if not self.full:
            return ShownImage(thumb)
        array = self._replayed(run_name, trace, int(entry["index"]))
        if array is None:
            return ShownImage(thumb)
        from m3gym.eval.outcome import thumbnail_jpeg

        if list(array.shape) != list(entry.get("shape") or []) or \
                not thumbnails_match(stored, thumbnail_jpeg(array, thumb_size)):
            self.problems.append(
                f"run {run_name}, episode {trace.get('episode_id')}: replaying it re-created a "
                f"different Image {entry['index']} (another m3gym or library version?); its "
                "full-resolution image is not shown")
            return ShownImage(thumb)
        from m3gym.view import view_shape

        vh, vw = view_shape(array.shape[0], array.shape[1], int(self._env.view_size))
        full = self._write("full", png_bytes(array, PNG_COMPRESSION), ".png")
        return ShownImage(thumb, full, (vw, vh))

    def _replayed(self, run_name: str, trace: Mapping[str, Any], index: int) -> np.ndarray | None:
        key = (run_name, str(trace.get("episode_id")))
        if self._episode != key:
            self.close()
            self._episode = key
            self._state = self._replay(run_name, trace)
        if self._state is None or not 0 <= index < len(self._state):
            return None
        return np.asarray(self._state[index].array)

    def _replay(self, run_name: str, trace: Mapping[str, Any]) -> Any:
        where = f"run {run_name}, episode {trace.get('episode_id')}"
        if _is_code_mode(trace):
            self.problems.append(f"{where}: a code-mode episode is not replayed (that would run "
                                 "the agent's code again); thumbnails only")
            return None
        if not trace.get("recreate"):
            self.problems.append(f"{where}: the trace has no 'recreate' entry; thumbnails only")
            return None
        from m3gym.eval.replay import replay_trace

        try:
            self._env = replay_trace(trace)
        except Exception as exc:  # a report shows what it can; the reason is named
            self.problems.append(f"{where}: replay failed ({type(exc).__name__}: {exc}); "
                                 "thumbnails only")
            return None
        return self._env.state

    def close(self) -> None:
        """Close the env of the last replayed episode (its images are released)."""
        if self._env is not None:
            self._env.close()
        self._env = self._state = self._episode = None
