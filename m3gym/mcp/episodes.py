"""The MCP server's episode table: every episode's state, keyed by ``episode_id``, on the server.

MCP requests are stateless (protocol 2026): nothing lives in the session object. An episode is
started by :meth:`EpisodeTable.start`, stepped by :meth:`EpisodeTable.call` (one or several
parallel tool calls), ended by :meth:`EpisodeTable.answer`, and read back by
:meth:`EpisodeTable.report`. Every step goes through the one episode loop's
:class:`~m3gym.eval.episode.EpisodeRecorder`, and a finished episode is assembled into the same
record and trace as ``m3gym eval`` writes (:func:`~m3gym.eval.runner.assemble_outcome`), so a
recorded MCP run (:class:`RunFolder`) sits beside any other in ``m3gym report``.

This module does not import the ``mcp`` SDK: the table is plain Python (and testable without it).
Bad input raises :class:`EpisodeError` with a precise message, which the server turns into an
MCP tool error (``isError``); nothing here lets input crash the server.

Trust rules (docs/mcp.md): a client chooses only among what the operator allowed (the env ids
and reward choices of :class:`EpisodeTable`), never a path; an episode belongs to the ``owner``
key it was started with, and any other owner is answered exactly as for an unknown episode
(unless the operator shares episodes); no error text quotes a file's content.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import json
import logging
import secrets
import sys
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import gymnasium as gym
import numpy as np

from m3gym.codec import png_bytes
from m3gym.eval.episode import EpisodeRecorder
from m3gym.eval.runner import (
    EpisodeOutcome,
    EpisodeSpec,
    EvalConfig,
    assemble_outcome,
    drop_unreadable_lines,
    env_scope,
    env_tasks,
    episode_seed,
    read_records_checked,
    read_run_config,
    terminate_last_line,
    unreadable_message,
    write_outcome,
)
from m3gym.mcp import DEFAULT_RESPONSE_BYTES, IMAGE_FORMATS

logger = logging.getLogger(__name__)

MAX_SEED = 2**31 - 1
"""Largest reset seed ``start_episode`` accepts."""

MAX_INDEX = 100_000
"""Largest split ``index`` ``start_episode`` accepts (frozen splits are far smaller)."""

MAX_CALLS = 64
"""Most calls one ``parallel_calls`` step may carry (the env allows fewer; checked first)."""

EPISODE_ID_BYTES = 16
"""Random bytes in an ``episode_id`` (128 bits): unguessable, so where the transport gives no
session identity the id itself is the capability to act on the episode."""

TRIM_INTERVAL_S = 2.0
"""Least seconds between two returns of freed heap memory to the OS (:func:`release_memory`)."""


class EpisodeError(ValueError):
    """A call the table refuses (unknown or finished episode, bad arguments, limits)."""


@dataclass(frozen=True)
class McpLimits:
    """Bounds of one MCP server.

    Attributes:
        max_episodes: episodes in progress at once (finished ones no longer count).
        idle_s: an episode untouched this long is evicted (its env is freed).
        max_images: images one episode may hold (the env's image-state bound).
        max_episode_bytes: bytes of image data one episode may hold.
        max_response_bytes: bytes of one reply as sent (its JSON: text, structured content and
            base64 images). Images are re-encoded (lossy, then downscaled, the scale stated in
            the text) to fit, and left out with a note only when even a small one cannot.
        image_format: ``auto`` (PNG when it fits, else JPEG), ``png``, ``jpeg`` or ``webp``.
        image_quality: the first JPEG/WebP quality tried (1-100); lower ones follow if needed.
        finished_kept: finished or evicted episodes remembered for reports and precise errors.
        finished_bytes: bytes (as JSON) of the traces of those remembered episodes.
        max_pooled_envs: idle envs kept for reuse, over all env ids together (they keep no
            episode's images).
        max_busy: env resets and steps that run at once (others wait their turn): bounds the
            transient memory of many sessions rendering at the same moment.
    """

    max_episodes: int = 32
    idle_s: float = 900.0
    max_images: int = 48
    max_episode_bytes: int = 192 * 1024 * 1024
    max_response_bytes: int = DEFAULT_RESPONSE_BYTES
    image_format: str = "auto"
    image_quality: int = 85
    finished_kept: int = 256
    finished_bytes: int = 32 * 1024 * 1024
    max_pooled_envs: int = 4
    max_busy: int = 4

    def validate(self) -> None:
        """Raise ``ValueError`` for a bound that cannot work."""
        for name in ("max_episodes", "max_images", "max_episode_bytes", "finished_kept",
                     "finished_bytes", "max_busy"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.max_pooled_envs < 0:
            raise ValueError("max_pooled_envs must be >= 0")
        if self.max_response_bytes < MIN_RESPONSE_BYTES:
            raise ValueError(f"max_response_bytes must be >= {MIN_RESPONSE_BYTES} (room for the "
                             f"text of a reply), got {self.max_response_bytes}")
        if self.image_format not in IMAGE_FORMATS:
            raise ValueError(f"image_format must be one of {list(IMAGE_FORMATS)}, got "
                             f"{self.image_format!r}")
        if not 1 <= self.image_quality <= 100:
            raise ValueError(f"image_quality must be in [1, 100], got {self.image_quality}")
        if not self.idle_s > 0:
            raise ValueError("idle_s must be > 0")


MIN_RESPONSE_BYTES = 64 * 1024
"""Smallest ``max_response_bytes``: a reply's text (a fetched page, a verdict) must fit."""


@dataclass
class EncodedImage:
    """An image ready for an MCP image content block, with how it was sent.

    Attributes:
        index: the image's index in the episode.
        data: the encoded bytes.
        mime_type: ``image/png``, ``image/jpeg`` or ``image/webp``.
        width: pixel width as sent.
        height: pixel height as sent.
        quality: the JPEG/WebP quality (``None`` for lossless PNG).
        view_width: width of the env's view the image was encoded from.
        full_width: width of the full-resolution image in the env (0 when unknown).
        full_height: height of the full-resolution image (0 when unknown).
    """

    index: int
    data: bytes
    mime_type: str
    width: int = 0
    height: int = 0
    quality: int | None = None
    view_width: int = 0
    full_width: int = 0
    full_height: int = 0

    @property
    def downscaled(self) -> bool:
        """Whether the image was sent smaller than the env's view."""
        return self.width < self.view_width

    def info(self) -> dict[str, Any]:
        """Return how the image was sent (for structured content)."""
        return {"index": self.index, "mime_type": self.mime_type, "width": self.width,
                "height": self.height, "quality": self.quality,
                "full_width": self.full_width, "full_height": self.full_height,
                "full_px_per_px": round(self.full_width / self.width, 4)
                if self.full_width and self.width else None}

    def note(self) -> str:
        """Return the sentence the reply text carries when the image is not the lossless view."""
        how = ("PNG" if self.quality is None else
               f"{self.mime_type.split('/')[1].upper()} quality {self.quality}")
        size = f"{self.width}x{self.height} {how}"
        if self.full_width:
            ratio = self.full_width / self.width
            return (f"Image {self.index} is sent as {size} to fit the reply limit: 1 px here = "
                    f"{ratio:.3g} px of its {self.full_width}x{self.full_height} "
                    "full-resolution image (multiply pixel positions by that).")
        return f"Image {self.index} is sent as {size} to fit the reply limit."


@dataclass
class StepReply:
    """What a tool call returns: text, new images, whether it failed, and (when done) metrics."""

    text: str
    images: list[EncodedImage] = field(default_factory=list)
    is_error: bool = False
    done: bool = False
    data: dict[str, Any] = field(default_factory=dict)


_LOSSY_STEPS = (0, 15, 30, 45)
"""Quality steps below ``image_quality`` tried before downscaling (floored at 20)."""

_DOWNSCALE = 0.75
"""Side factor of each downscaling step when no quality fits."""


def _imencode(img: np.ndarray, fmt: str, quality: int | None) -> bytes | None:
    if fmt == "png":
        return png_bytes(img)
    bgr = cv2.cvtColor(img, cv2.COLOR_RGB2BGR) if img.ndim == 3 else img
    if fmt == "webp":
        ok, buf = cv2.imencode(".webp", bgr, [cv2.IMWRITE_WEBP_QUALITY, int(quality or 85)])
    else:
        ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality or 85)])
    return buf.tobytes() if ok else None


def encode_image(array: np.ndarray, budget: int, fmt: str = "auto", quality: int = 85,
                 index: int = 0, full_size: tuple[int, int] = (0, 0)) -> EncodedImage | None:
    """Return an RGB/gray ``uint8`` image encoded within ``budget`` bytes, or None.

    ``auto``: PNG when it fits, else JPEG from ``quality`` down (steps of 15, floor 20), then
    the same at 3/4 of the size, again and again (down to 16 px on the short side). ``png``
    only downscales; ``jpeg`` / ``webp`` never send PNG. ``full_size`` (width, height) is the
    full-resolution image's size, for the note on how it was sent.
    """
    img = array
    view_w = int(array.shape[1])

    def done(data: bytes, mime: str, q: int | None, im: np.ndarray) -> EncodedImage:
        return EncodedImage(int(index), data, mime, int(im.shape[1]), int(im.shape[0]), q,
                            view_w, int(full_size[0]), int(full_size[1]))

    lossy = "webp" if fmt == "webp" else "jpeg"
    qualities = sorted({max(20, quality - step) for step in _LOSSY_STEPS}, reverse=True)
    while min(img.shape[:2]) >= 16:
        if fmt in ("auto", "png"):
            data = _imencode(img, "png", None)
            if data is not None and len(data) <= budget:
                return done(data, "image/png", None, img)
        if fmt != "png":
            for q in qualities:
                data = _imencode(img, lossy, q)
                if data is not None and len(data) <= budget:
                    return done(data, f"image/{lossy}", q, img)
        size = (max(1, int(img.shape[1] * _DOWNSCALE)), max(1, int(img.shape[0] * _DOWNSCALE)))
        img = cv2.resize(img, size, interpolation=cv2.INTER_AREA)
    return None


def encode_images(indices: tuple[int, ...], images: tuple[np.ndarray, ...], budget: int,
                  fmt: str = "auto", quality: int = 85,
                  full_sizes: tuple[tuple[int, int], ...] | None = None,
                  ) -> tuple[list[EncodedImage], list[int]]:
    """Encode images within a shared byte ``budget``; return them and the indices left out."""
    out: list[EncodedImage] = []
    left: list[int] = []
    for n, (index, array) in enumerate(zip(indices, images)):
        share = budget // max(1, len(images) - n)
        full = full_sizes[n] if full_sizes else (0, 0)
        enc = encode_image(array, share, fmt, quality, int(index), full)
        if enc is None:
            left.append(int(index))
            continue
        budget -= len(enc.data)
        out.append(enc)
    return out, left


def _json_len(value: Any) -> int:
    return len(json.dumps(value, default=str))


REPLY_OVERHEAD = 4096
"""Bytes a reply keeps free for the JSON-RPC envelope and the content blocks' own keys."""

NOTE_BYTES = 400
"""Bytes a reply keeps free per image for the sentence on how it was sent."""


def image_budget(limits: McpLimits, text: str, data: Mapping[str, Any], n_images: int) -> int:
    """Return the raw (pre-base64) image bytes a reply may carry besides ``text`` and ``data``.

    The text is sent once as a text block and ``data`` once as structured content; images go
    as base64 (4 bytes per 3).
    """
    room = (limits.max_response_bytes - REPLY_OVERHEAD - _json_len(text) - _json_len(data)
            - n_images * (NOTE_BYTES + _json_len({"index": 0, "mime_type": "image/jpeg",
                                                   "width": 0, "height": 0, "quality": 0,
                                                   "full_width": 0, "full_height": 0,
                                                   "full_px_per_px": 0.0})))
    return max(0, room) * 3 // 4


def fit_images(limits: McpLimits, text: str, data: dict[str, Any],
               indices: tuple[int, ...], arrays: tuple[np.ndarray, ...],
               full_sizes: tuple[tuple[int, int], ...]) -> tuple[str, list[EncodedImage]]:
    """Encode a reply's images within :attr:`McpLimits.max_response_bytes`.

    Returns the text with a sentence for each image not sent as the lossless view (its size,
    format and scale to the full-resolution image) and for each left out; ``data`` gains
    ``images_sent`` (how each image went) and ``images_left_out``.
    """
    budget = image_budget(limits, text, data, len(arrays))
    images, left = encode_images(indices, arrays, budget, limits.image_format,
                                 limits.image_quality, full_sizes)
    notes = [i.note() for i in images if i.downscaled or i.quality is not None]
    if notes:
        notes.append("Tools work on the full-resolution image and bbox_2d uses a 0-1000 scale of "
                     "it, so coordinates do not depend on how an image is sent.")
    if left:
        notes.append(f"Images {left} do not fit in one reply ({limits.max_response_bytes} "
                     "bytes) even downscaled: they exist in the episode; crop them smaller to "
                     "see them.")
    data["images_sent"] = [i.info() for i in images]
    data["images_left_out"] = left
    if notes:
        text = text + "\n\n" + "\n".join(notes)
    return text, images


def start_text(data: Mapping[str, Any]) -> str:
    """Return ``start_episode``'s text: the episode id, the prompt, the choices and the budgets.

    Everything in the structured content an agent needs is here too, for clients that only
    read text.
    """
    choices = data.get("choices") or []
    lines = [f"episode_id: {data['episode_id']}", "", str(data["prompt"]), ""]
    if choices:
        lines.append("Choices: " + "; ".join(str(c) for c in choices))
    lines.append(f"Budget: {data.get('max_tool_calls')} tool calls, {data.get('max_rounds')} "
                 "rounds. Call the tools with this episode_id; finish with answer.")
    return "\n".join(lines)


def _full_sizes(rec: EpisodeRecorder, indices: Any) -> tuple[tuple[int, int], ...]:
    """Return (width, height) of the full-resolution images ``indices`` of an episode."""
    state = rec.env.unwrapped.state
    return tuple((state[int(i)].width, state[int(i)].height) for i in indices)


class RunFolder:
    """A run folder an MCP server records into (the layout ``m3gym eval`` writes).

    ``config.json`` names the agent ``mcp``; an existing MCP run folder is appended to, any other
    non-empty folder is refused.
    """

    def __init__(self, path: str | Path, env_args: Mapping[str, Any] | None = None,
                 settings: Mapping[str, Any] | None = None) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise FileExistsError(f"{self.path} exists and is not a folder")
        cfg_path = self.path / "config.json"
        if self.path.is_dir() and any(self.path.iterdir()):
            old = read_run_config(cfg_path) if cfg_path.is_file() else {}
            if old.get("agent") != "mcp":
                raise FileExistsError(f"{self.path} is not empty and not an MCP run folder; "
                                      "choose another --record folder")
        (self.path / "traces").mkdir(parents=True, exist_ok=True)
        (self.path / "thumbs").mkdir(parents=True, exist_ok=True)
        jsonl = self.path / "episodes.jsonl"
        # a line cut by a crash is removed (backup kept, named in a warning), and the next
        # record starts on its own line
        self.removed, self.backup = drop_unreadable_lines(jsonl)
        if self.removed:
            warnings.warn(f"removed {unreadable_message(self.removed)}; the original is kept as "
                          f"{self.backup}", UserWarning, stacklevel=2)
        terminate_last_line(jsonl)
        self.records = read_records_checked(jsonl)[0]
        self._ids = {r["episode_id"] for r in self.records}
        self._lock = threading.Lock()
        if not cfg_path.is_file():
            from m3gym.eval.runner import _records_fingerprint, run_versions
            from m3gym.eval.splits import load_manifest

            # env_args and the records file's fingerprint: m3gym report checks the records
            extra = ({"env_args": dict(env_args), **_records_fingerprint(env_args)}
                     if env_args else {})
            cfg_path.write_text(json.dumps(
                {"agent": "mcp", "envs": [], "split": "mcp", "seed": 0, "reward": None,
                 "versions": run_versions(None, load_manifest("test")), **extra,
                 **({"mcp_server": dict(settings)} if settings is not None else {})},
                indent=2, default=str) + "\n")
        elif settings is not None:
            self._record_settings(cfg_path, settings)

    @staticmethod
    def _record_settings(cfg_path: Path, settings: Mapping[str, Any]) -> None:
        """Keep an appended run's server settings: shared episodes once shared stay recorded."""
        cfg = read_run_config(cfg_path)
        old = dict(cfg.get("mcp_server") or {})
        new = {**dict(settings),
               "shared_episodes": bool(old.get("shared_episodes")) or
               bool(settings.get("shared_episodes"))}
        if old != new:
            cfg["mcp_server"] = new
            cfg_path.write_text(json.dumps(cfg, indent=2, default=str) + "\n")

    def next_index(self) -> int:
        """Return the index the next recorded episode gets."""
        return len(self._ids)

    def unique_id(self, episode_id: str) -> str:
        """Return ``episode_id``, suffixed ``~2``, ``~3`` ... when already recorded."""
        if episode_id not in self._ids:
            return episode_id
        return next(f"{episode_id}~{n}" for n in itertools.count(2)
                    if f"{episode_id}~{n}" not in self._ids)

    def write(self, outcome: EpisodeOutcome) -> None:
        """Append one episode (record, trace, thumbnails), flushed."""
        with self._lock, (self.path / "episodes.jsonl").open("a") as jsonl:
            write_outcome(self.path, outcome, jsonl)
            self._ids.add(outcome.record["episode_id"])


@dataclass
class _Live:
    """One episode in progress."""

    episode_id: str
    spec: EpisodeSpec
    cfg: EvalConfig
    key: str
    rec: EpisodeRecorder
    last_used: float
    owner: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class _Ended:
    """A finished (or evicted) episode: what reports and precise errors need."""

    outcome: EpisodeOutcome | None
    reason: str
    owner: str | None = None
    nbytes: int = 0


SERVER_ENV_KEYS: tuple[str, ...] = ("reward", "max_images", "max_bytes", "disable_env_checker")
"""``gym.make`` arguments the server sets itself (per episode, or from its limits)."""

RECORDS_ENV_KEYS: tuple[str, ...] = ("records", "split", "max_image_pixels",
                                     "max_record_pixels")
"""Env arguments of the records env (``M3Bench-Records``) on top of every env's."""

DEFAULT_REWARD = "m3"
"""The reward a client gets without naming one, when the operator names none."""


def check_server_env_args(env_args: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` naming the key when the server's envs cannot take ``env_args``.

    The keys are checked against the env constructor (plus ``records`` / ``split`` of the
    records env), and a ``records`` source is loaded once, so a bad key or records file stops
    the server at start-up rather than failing every episode.
    """
    from m3gym.config_errors import ConfigSource
    from m3gym.eval.runner import check_env_args
    from m3gym.registration import level_env_id

    src = ConfigSource("--env-arg")
    for key in SERVER_ENV_KEYS:
        if key in env_args:
            raise src.error("set by the server (per episode, or by its --max-* flags), not an "
                            "env argument", key)
    check_env_args(level_env_id(1), {k: v for k, v in env_args.items()
                                     if k not in RECORDS_ENV_KEYS})
    if "records" in env_args:
        from m3gym.records.family import cached_records
        from m3gym.records.guard import pixel_budget

        try:
            cached_records(env_args["records"], bool(env_args.get("allow_outside", False)),
                           pixel_budget(env_args.get("max_image_pixels"),
                                        env_args.get("max_record_pixels")))
        except (OSError, ValueError, TypeError) as exc:
            raise ValueError(f"--env-arg records={env_args['records']!r}: {exc}") from None


def unversioned(env_id: str) -> str:
    """Return ``env_id`` without its ``-vN`` suffix: ``M3Bench-L2-v3`` → ``M3Bench-L2``."""
    head, sep, tail = env_id.rpartition("-v")
    return head if sep and tail.isdigit() else env_id


def default_env_ids(env_args: Mapping[str, Any] | None = None) -> list[str]:
    """Return the env ids a server offers when the operator names none (unversioned).

    Every registered m3gym id except those that need operator data: the records suite's ids
    (``M3Bench-Records``) are offered only when ``env_args`` names a ``records`` source.
    """
    from m3gym.registration import env_ids, family_env_id
    from m3gym.tasks.registry import family_names

    records = {family_env_id(f) for f in family_names(suite="records")}
    with_records = env_args is not None and env_args.get("records") is not None
    return [unversioned(e) for e in env_ids() if with_records or e not in records]


def allowed_env_ids(envs: Sequence[str] | None, env_args: Mapping[str, Any] | None = None
                    ) -> dict[str, str]:
    """Return ``{name a client may give: registered id}`` for the operator's env ids.

    Each operator id is offered by its unversioned name and by its registered (versioned) id.
    Raises ``ValueError`` naming an operator id that is not registered.
    """
    from m3gym.registration import env_ids, resolve_env_id

    known = set(env_ids())
    out: dict[str, str] = {}
    for env_id in (default_env_ids(env_args) if envs is None else envs):
        try:
            resolved = resolve_env_id(str(env_id))
        except Exception:  # gymnasium rejects a malformed id
            resolved = str(env_id)
        if resolved not in known:
            raise ValueError(f"--env {env_id!r} is not an m3gym env id; known: "
                             f"{', '.join(unversioned(e) for e in sorted(known))}")
        out[unversioned(resolved)] = resolved
        out[resolved] = resolved
    if not out:
        raise ValueError("the server offers no env id (--env)")
    return out


def reward_choices(rewards: Sequence[str] | None) -> tuple[dict[str, Any], dict[str, str], str]:
    """Return the reward choices of a server: ``({name: config}, {name: source}, default)``.

    Every preset (:data:`m3gym.reward.PRESETS`) is a choice. Each operator entry is a preset
    name, a YAML path (offered by its file stem) or ``NAME=PATH``; the first entry is the
    default (``m3`` without any). A file is loaded here, once: a client names it, never its
    path. Raises ``ValueError`` for a file that does not load or a name given twice.
    """
    from m3gym.reward import PRESETS, load_reward_config

    configs: dict[str, Any] = {name: name for name in PRESETS}
    sources: dict[str, str] = {name: name for name in PRESETS}
    default = DEFAULT_REWARD
    for n, entry in enumerate(rewards or ()):
        entry = str(entry)
        name, sep, path = entry.partition("=")
        if not sep:
            name, path = (entry, "") if entry in PRESETS else (Path(entry).stem, entry)
        if path:
            if name in sources:
                raise ValueError(f"--reward {entry}: the name {name!r} is taken (a preset or "
                                 "another file); give the file a name: --reward NAME=PATH")
            if not name or not name.replace("_", "").replace("-", "").isalnum():
                raise ValueError(f"--reward {entry}: name a file with letters, digits, _ or -")
            try:
                configs[name] = load_reward_config(path)
            except (OSError, ValueError) as exc:
                raise ValueError(f"--reward {entry}: {exc}") from None
            sources[name] = str(Path(path))
        elif name not in PRESETS:
            raise ValueError(f"--reward {entry}: not a preset ({', '.join(PRESETS)}) nor a file")
        if n == 0:
            default = name
    return configs, sources, default


def quote(value: Any, limit: int = 80) -> str:
    """Return a client's value as quoted in an error: its ``repr``, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


_LIBC: Any = None


def release_memory() -> bool:
    """Return freed heap memory to the OS (glibc ``malloc_trim``); False where unavailable.

    Images are large allocations; freed by many threads they stay in glibc's arenas (the
    server's RSS then stays at its peak). Trimming hands the free pages back.
    """
    libc = _libc()
    if not libc:
        return False
    libc.malloc_trim(0)
    return True


MMAP_THRESHOLD = 4 * 1024 * 1024
"""Allocations from this size on get their own memory map (:func:`limit_heap_retention`)."""

_M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameter number of ``M_MMAP_THRESHOLD``."""


def limit_heap_retention(threshold: int = MMAP_THRESHOLD) -> bool:
    """Give every allocation of ``threshold`` bytes or more its own map (glibc; process-wide).

    glibc raises its mmap threshold each time a large block is freed (up to 32 MiB), after which
    the images of an episode (a few MiB each) land in the heap arenas of the threads that made
    them, and freed ones stay resident. A fixed threshold returns each freed image to the OS at
    once. ``m3gym mcp`` calls it at start-up (docs/mcp.md, Memory). Returns False where it is
    unavailable.
    """
    libc = _libc()
    if not libc:
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, int(threshold)))


def _libc() -> Any:
    """Return glibc (``malloc_trim`` and ``mallopt``), or False where there is none."""
    global _LIBC
    if _LIBC is None:
        _LIBC = False
        if sys.platform.startswith("linux"):
            try:
                lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                lib.malloc_trim  # noqa: B018 - glibc only (musl has none)
                lib.mallopt  # noqa: B018
                _LIBC = lib
            except (OSError, AttributeError):
                pass
    return _LIBC


def _release_episode(env: gym.Env) -> None:
    """Drop the images of an env's last episode (the env goes to the pool; reset rebuilds them)."""
    from m3gym.state import ImageState

    inner = env.unwrapped
    if hasattr(inner, "state") and hasattr(inner, "max_images"):
        inner.state = ImageState(inner.max_images, inner.max_bytes)
        inner._views = {}
        inner.task = None
        inner._ctx = None


def _image_bytes(env: gym.Env) -> int:
    """Return the bytes of image data an env holds (its episode's image state)."""
    state = getattr(env.unwrapped, "state", None)
    return int(getattr(state, "bytes_used", 0))


class EpisodeTable:
    """The server-side table of MCP episodes (thread-safe; see the module docstring).

    Args:
        limits: the server's bounds.
        record: a run folder to record every finished (or evicted) episode into.
        clock: seconds, monotonic (injectable for tests).
        env_args: extra ``gym.make`` keyword arguments of every env (checked here:
            :func:`check_server_env_args`).
        envs: the env ids clients may start (default :func:`default_env_ids`).
        rewards: the operator's reward entries (:func:`reward_choices`; presets are always
            offered, the first entry is the default).
        shared: let any caller act on any episode (``--shared-episodes``); by default an
            episode answers only the ``owner`` it was started with.
    """

    def __init__(self, limits: McpLimits | None = None, record: str | Path | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 env_args: Mapping[str, Any] | None = None, envs: Sequence[str] | None = None,
                 rewards: Sequence[str] | None = None, shared: bool = False) -> None:
        self.limits = limits or McpLimits()
        self.limits.validate()
        self.env_args = dict(env_args or {})
        check_server_env_args(self.env_args)
        self.envs = allowed_env_ids(envs, self.env_args)
        self.rewards, self.reward_sources, self.default_reward = reward_choices(rewards)
        self.shared = bool(shared)
        self.folder = RunFolder(record, self.env_args, self.settings()) \
            if record is not None else None
        self.clock = clock
        self._live: dict[str, _Live] = {}
        self._starting = 0
        self._ended: OrderedDict[str, _Ended] = OrderedDict()
        self._ended_bytes = 0
        self._free_envs: dict[str, list[gym.Env]] = {}
        self._lock = threading.Lock()
        self._busy = threading.BoundedSemaphore(self.limits.max_busy)
        self._stop = threading.Event()
        self._last_trim = 0.0

    def settings(self) -> dict[str, Any]:
        """Return what the operator allowed (recorded in a ``--record`` run's ``config.json``)."""
        return {"envs": sorted({unversioned(e) for e in self.envs}),
                "rewards": dict(self.reward_sources), "default_reward": self.default_reward,
                "shared_episodes": self.shared}

    def env_names(self) -> list[str]:
        """Return the env ids clients may start (unversioned names)."""
        return sorted({unversioned(e) for e in self.envs})

    # ------------------------------------------------------------------ envs
    def _take_env(self, env_id: str, reward: str) -> tuple[str, gym.Env]:
        key = json.dumps([env_id, reward])
        with self._lock:
            pool = self._free_envs.get(key)
            if pool:
                env = pool.pop()
                if not pool:
                    del self._free_envs[key]
                return key, env
        env = gym.make(self.envs[env_id], reward=self.rewards[reward], disable_env_checker=True,
                       max_images=self.limits.max_images,
                       max_bytes=self.limits.max_episode_bytes, **self.env_args)
        return key, env

    def _give_env(self, key: str, env: gym.Env) -> None:
        """Keep ``env`` for reuse; beyond ``limits.max_pooled_envs`` (all ids) close the oldest."""
        _release_episode(env)
        closing: list[gym.Env] = []
        with self._lock:
            self._free_envs.setdefault(key, []).append(env)
            self._free_envs[key] = self._free_envs.pop(key)  # most recently used id last
            while sum(map(len, self._free_envs.values())) > self.limits.max_pooled_envs:
                oldest = next(iter(self._free_envs))
                closing.append(self._free_envs[oldest].pop(0))
                if not self._free_envs[oldest]:
                    del self._free_envs[oldest]
        for old in closing:
            old.close()

    def pooled_envs(self) -> int:
        """Return the number of idle envs kept for reuse."""
        with self._lock:
            return sum(map(len, self._free_envs.values()))

    def _trim(self) -> None:
        """Return freed memory to the OS, at most every :data:`TRIM_INTERVAL_S` seconds."""
        now = time.monotonic()
        if now - self._last_trim < TRIM_INTERVAL_S:
            return
        self._last_trim = now
        release_memory()

    def measure(self) -> dict[str, int]:
        """Return what the table holds now, beside its bounds (docs/mcp.md, Memory).

        ``live`` + ``starting`` never exceed ``max_episodes``; ``live_image_bytes`` is at most
        ``live × max_episode_bytes``; pooled envs hold no images; ended traces stay within
        ``finished_kept`` and ``finished_bytes``.
        """
        with self._lock:
            lives = list(self._live.values())
            pooled = [e for pool in self._free_envs.values() for e in pool]
            out = {"live": len(lives), "starting": self._starting,
                   "ended_kept": len(self._ended), "ended_bytes": self._ended_bytes,
                   "pooled_envs": len(pooled)}
        out["live_image_bytes"] = sum(_image_bytes(live.rec.env) for live in lives)
        out["pooled_image_bytes"] = sum(_image_bytes(env) for env in pooled)
        limits = self.limits
        out.update(max_episodes=limits.max_episodes, max_episode_bytes=limits.max_episode_bytes,
                   finished_kept=limits.finished_kept, finished_bytes=limits.finished_bytes,
                   max_pooled_envs=limits.max_pooled_envs)
        return out

    # ------------------------------------------------------------------ lifecycle
    def evict_idle(self) -> list[str]:
        """Evict every episode idle longer than ``limits.idle_s``; return their ids."""
        now = self.clock()
        with self._lock:
            stale = [e for e in self._live.values() if now - e.last_used > self.limits.idle_s]
        evicted = []
        for live in stale:
            if live.lock.acquire(blocking=False):
                try:
                    self._end(live, f"evicted after {self.limits.idle_s:g} s without a call",
                              status="evicted")
                    evicted.append(live.episode_id)
                finally:
                    live.lock.release()
        return evicted

    def _reserve(self) -> None:
        """Take a slot for an episode being started, or refuse: the cap counts resets too."""
        self.evict_idle()
        with self._lock:
            held = len(self._live) + self._starting
            if held >= self.limits.max_episodes:
                raise EpisodeError(
                    f"the server is full: {held} episodes in progress or starting (its maximum, "
                    f"--max-episodes {self.limits.max_episodes}); answer one, or wait for idle "
                    f"ones to be evicted (after {self.limits.idle_s:g} s)")
            self._starting += 1

    def start(self, env_id: str, seed: int | None = None, split: str | None = None,
              index: int | None = None, reward: str | None = None, owner: str | None = None,
              task_seed: int | None = None, family: str | None = None,
              ) -> tuple[str, dict[str, Any], list[EncodedImage]]:
        """Start an episode for ``owner``; return its id, the prompt data and the input images.

        Give one of (the seed rule, ``docs/environments.md#one-seed-rule``):

        * ``seed``: the reset seed, exactly ``gym.make(env_id).reset(seed=seed)`` (the env draws
          the family and the task);
        * ``task_seed`` (optionally with one of the env's ``family``): the task a dataset row
          ``{"env_id", "task_seed", "family"}`` names
          (:func:`~m3gym.integrations.session.task_ref`);
        * ``split`` + ``index``: the ``index``-th task ``m3gym eval --split SPLIT`` runs on
          ``env_id``, with its reset seed, so metrics equal that run's.

        ``env_id`` and ``reward`` must be among the operator's choices (a reward is named, never
        a path).
        """
        reward = self._reward(reward)
        spec, task_options = self._plan(env_id, seed, split, index, task_seed, family)
        self._reserve()
        episode_id = "ep-" + secrets.token_urlsafe(EPISODE_ID_BYTES)
        try:
            with self._busy:
                key, env = self._take_env(env_id, reward)
                rec = EpisodeRecorder(env)
                options = task_options if task_options is not None else (
                    None if spec.family == "" else {"family": spec.family,
                                                    "task_seed": spec.task_seed})
                try:
                    obs, info = rec.reset(seed=spec.seed, options=options)
                except Exception as exc:  # a task that cannot be built: refuse it, keep serving
                    env.close()  # the message may quote operator data: the log has it
                    logger.warning("cannot start %s: %s: %s", env_id, type(exc).__name__, exc)
                    raise EpisodeError(f"cannot start {env_id}: the task could not be built "
                                       f"({type(exc).__name__}; the server's log says more)"
                                       ) from None
                if spec.family == "":  # the env drew the task: name it as eval would
                    family, _, task_seed = rec.task.task_id.rpartition("/")
                    spec = EpisodeSpec(spec.index, f"{env_id}.{family}.{task_seed}", env_id,
                                       rec.task.level, family, int(task_seed), spec.seed)
                cfg = EvalConfig(envs=(env_id,), agent="mcp", episodes=1, split=split or "seed",
                                 seed=0, reward=self.reward_sources[reward],
                                 env_args=dict(self.env_args))
                live = _Live(episode_id, spec, cfg, key, rec, self.clock(), owner)
                data = {"episode_id": episode_id, "prompt": obs["text"],
                        "image_indices": list(obs["image_indices"]), **info}
                sizes = _full_sizes(rec, obs["image_indices"])
                with self._lock:
                    self._live[episode_id] = live
                    self._starting -= 1
        except BaseException:
            with self._lock:
                self._starting -= 1
            raise
        data.pop("tool_schemas", None)
        text, images = fit_images(self.limits, start_text(data), data,
                                  tuple(obs["image_indices"]), tuple(obs["images"]), sizes)
        data["text"] = text
        return episode_id, data, images

    def _reward(self, reward: Any) -> str:
        if reward is None:
            return self.default_reward
        if isinstance(reward, str) and reward in self.rewards:
            return reward
        # the same line for any refused value (a path that exists, one that does not, a
        # dict): nothing of the value is echoed, so nothing tells one from another
        raise EpisodeError("unknown reward: this server offers "
                           f"{', '.join(sorted(self.rewards))} (default {self.default_reward}); "
                           "name one of them")

    def _plan(self, env_id: Any, seed: Any, split: Any, index: Any, task_seed: Any = None,
              family: Any = None) -> tuple[EpisodeSpec, dict[str, Any] | None]:
        """Return the episode's spec and, for a ``task_seed``, the reset options of its row."""
        if not isinstance(env_id, str) or env_id not in self.envs:
            raise EpisodeError(f"unknown env {quote(env_id)}: this server offers "
                               f"{', '.join(self.env_names())}")
        level, families = env_scope(self.envs[env_id])
        if sum(v is not None for v in (seed, split, task_seed)) != 1:
            raise EpisodeError("give one of: seed (the reset seed), task_seed (optionally with "
                               "family), or split and index")
        if family is not None and task_seed is None:
            raise EpisodeError("family goes with task_seed")
        if task_seed is not None:
            if isinstance(task_seed, bool) or not isinstance(task_seed, int) or \
                    not 0 <= task_seed <= MAX_SEED:
                raise EpisodeError(f"task_seed must be an integer in [0, {MAX_SEED}], got "
                                   f"{quote(task_seed)}")
            if index is not None:
                raise EpisodeError("index goes with split, not with task_seed")
            if family is not None and (not isinstance(family, str) or family not in families):
                raise EpisodeError(f"unknown family {quote(family)} for {env_id}: it draws "
                                   f"{', '.join(families)}")
            from m3gym.integrations.session import task_ref

            row = {"env_id": env_id, "task_seed": task_seed}
            if family is not None:
                row["family"] = family
            ref = task_ref(row)
            return EpisodeSpec(0, "", env_id, level, "", 0, int(ref.seed or 0)), ref.options
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
                raise EpisodeError(f"seed must be an integer in [0, {MAX_SEED}], got "
                                   f"{quote(seed)}")
            if index is not None:
                raise EpisodeError("index goes with split, not with seed")
            return EpisodeSpec(0, "", env_id, level, "", 0, int(seed)), None
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= MAX_INDEX:
            raise EpisodeError(f"index must be an integer in [0, {MAX_INDEX}] with split, got "
                               f"{quote(index)}")
        if split not in ("test", "val"):
            raise EpisodeError(f"split must be 'test' or 'val', got {quote(split)}")
        try:
            family, task_seed = env_tasks(env_id, split, index + 1, 0)[index]
        except ValueError as exc:
            raise EpisodeError(str(exc)) from None
        return EpisodeSpec(index, f"{env_id}.{family}.{task_seed}", env_id, level, family,
                           task_seed, episode_seed(0, task_seed)), None

    def _mine(self, owner_of_episode: str | None, owner: str | None) -> bool:
        return self.shared or owner_of_episode == owner

    def _get(self, episode_id: Any, owner: str | None) -> _Live:
        if not isinstance(episode_id, str):
            raise EpisodeError("episode_id must be a string returned by start_episode")
        self.evict_idle()
        with self._lock:
            live = self._live.get(episode_id)
            ended = self._ended.get(episode_id)
        if live is not None and self._mine(live.owner, owner):
            return live
        if ended is not None and self._mine(ended.owner, owner):
            raise EpisodeError(f"episode {episode_id} has ended ({ended.reason}); "
                               "start a new one (episode_report still reads it)")
        # another caller's episode is answered exactly as one never started
        raise EpisodeError(f"unknown episode {quote(episode_id)}; start one with start_episode")

    def call(self, episode_id: str, calls: list[dict[str, Any]], owner: str | None = None
             ) -> StepReply:
        """Run tool calls (in parallel, as one step) on ``owner``'s episode; return the reply."""
        if not isinstance(calls, list) or not calls:
            raise EpisodeError("calls must be a non-empty list of {name, arguments} objects")
        if len(calls) > MAX_CALLS:
            raise EpisodeError(f"{len(calls)} calls in one step; at most {MAX_CALLS}")
        for c in calls:
            if not isinstance(c, Mapping) or not isinstance(c.get("name"), str) or \
                    not isinstance(c.get("arguments", {}), Mapping):
                raise EpisodeError("each call must be an object {name: str, arguments: object}, "
                                   f"got {quote(c, 200)}")
            if c["name"] == "answer":
                raise EpisodeError("answer with the answer tool, on its own")
        return self._step(episode_id, [{"name": c["name"], "arguments": dict(c.get("arguments")
                                                                             or {})}
                                       for c in calls], owner)

    def answer(self, episode_id: str, text: Any, owner: str | None = None) -> StepReply:
        """Give the final answer to ``owner``'s episode; return the verdict and every metric."""
        if not isinstance(text, str):
            raise EpisodeError("text must be a string")
        return self._step(episode_id, {"name": "answer", "arguments": {"text": text}}, owner)

    def _step(self, episode_id: str, action: Any, owner: str | None) -> StepReply:
        live = self._get(episode_id, owner)
        with live.lock:
            if episode_id not in self._live:  # ended while this call waited
                return self._step(episode_id, action, owner)
            live.last_used = self.clock()
            try:
                with self._busy:
                    obs, _r, terminated, truncated, info = live.rec.step(action)
            except Exception as exc:  # an env failure: record it, keep serving
                live.rec.fail(exc)
                self._end(live, f"env error: {live.rec.error}", status=None)
                logger.warning("episode %s: the env failed: %s: %s", episode_id,
                               type(exc).__name__, exc)
                raise EpisodeError(f"the env failed on this call ({type(exc).__name__}; the "
                                   "server's log says more); the episode has ended") from None
            # read the image sizes before the env can go back to the pool
            sizes = _full_sizes(live.rec, obs["image_indices"])
            records = info.get("calls") or []
            failed = [r for r in records if not r.get("ok")]
            reply = StepReply(str(obs["text"]), [], is_error=bool(failed) or bool(info.get(
                "parse_errors")), data={"calls_used": info.get("calls_used"),
                                        "rounds": info.get("rounds"),
                                        "new_images": list(obs["image_indices"])})
            if terminated or truncated:
                outcome = self._end(live, "answered" if terminated else "truncated (budget)",
                                    status=None)
                reply.done = True
                reply.data.update(verdict(outcome))
                if truncated:
                    reply.text += "\nThe episode ended: its budget is spent."
            reply.text += (f"\n(Used {reply.data['calls_used']} tool calls and "
                           f"{reply.data['rounds']} rounds.)")
            reply.text, reply.images = fit_images(
                self.limits, reply.text, reply.data, tuple(obs["image_indices"]),
                tuple(obs["images"]), sizes)
            return reply

    def _end(self, live: _Live, reason: str, status: str | None) -> EpisodeOutcome | None:
        """Move an episode out of the live table, record it, free its env."""
        with self._lock:
            if self._live.pop(live.episode_id, None) is None:
                return None
        rec = live.rec
        if status is not None:
            rec.status, rec.error = status, reason
        spec = live.spec
        if self.folder is not None:
            spec = EpisodeSpec(self.folder.next_index(), self.folder.unique_id(spec.episode_id),
                               spec.env_id, spec.level, spec.family, spec.task_seed, spec.seed)
        outcome = assemble_outcome(spec, live.cfg, rec)
        if self.folder is not None:
            self.folder.write(outcome)
        nbytes = _json_len(outcome.trace) + _json_len(outcome.record)
        with self._lock:  # thumbnails are in the run folder (if any): not kept in memory
            self._ended[live.episode_id] = _Ended(EpisodeOutcome(outcome.record, outcome.trace),
                                                  reason, live.owner, nbytes)
            self._ended_bytes += nbytes
            while len(self._ended) > self.limits.finished_kept or (
                    self._ended_bytes > self.limits.finished_bytes and len(self._ended) > 1):
                self._ended_bytes -= self._ended.popitem(last=False)[1].nbytes
        self._give_env(live.key, rec.env)
        self._trim()
        return outcome

    def report(self, episode_id: Any, owner: str | None = None) -> dict[str, Any]:
        """Return ``owner``'s episode's trace (in progress: the steps so far)."""
        if not isinstance(episode_id, str):
            raise EpisodeError("episode_id must be a string returned by start_episode")
        with self._lock:
            ended = self._ended.get(episode_id)
            live = self._live.get(episode_id)
        if ended is not None and ended.outcome is not None and self._mine(ended.owner, owner):
            return {**ended.outcome.trace, "ended": ended.reason}
        if live is not None and self._mine(live.owner, owner):
            with live.lock:
                return {"status": "in progress", "ended": None, "episode_id": episode_id,
                        "prompt": live.rec.prompt, "steps": list(live.rec.steps)}
        raise EpisodeError(f"unknown episode {quote(episode_id)} (never started, or forgotten: "
                           f"the server remembers the last {self.limits.finished_kept} ended "
                           "ones)")

    def close(self, reason: str = "the server stopped") -> list[str]:
        """End every episode in progress (recorded as ``interrupted``); return their ids.

        The server calls it when it stops (end of the transport, SIGINT or SIGTERM), so a
        ``--record`` run folder holds every episode started. Waits for a call in flight.
        """
        self._stop.set()
        with self._lock:
            lives = list(self._live.values())
        ended = []
        for live in lives:
            with live.lock:
                if self._end(live, reason, status="interrupted") is not None:
                    ended.append(live.episode_id)
        return ended

    def start_reaper(self, interval_s: float | None = None) -> threading.Thread:
        """Evict idle episodes every ``interval_s`` (default ``min(idle_s / 4, 60)``) in a thread.

        Without it eviction happens only when a call arrives; the thread stops on :meth:`close`.
        """
        interval = interval_s if interval_s is not None else min(self.limits.idle_s / 4, 60.0)

        def loop() -> None:
            while not self._stop.wait(interval):
                self.evict_idle()

        thread = threading.Thread(target=loop, name="m3gym-mcp-reaper", daemon=True)
        thread.start()
        return thread

    def live_count(self) -> int:
        """Return the number of episodes in progress."""
        with self._lock:
            return len(self._live)


def verdict(outcome: EpisodeOutcome | None) -> dict[str, Any]:
    """Return the verdict part of a finished episode's reply: answer, correctness, metrics."""
    if outcome is None:
        return {}
    rec = outcome.record
    return {"status": rec["status"], "answer": rec["answer"],
            "answer_correct": rec["answer_correct"], "reward": rec["reward"],
            "metrics": rec["metrics"], "failure_mode": rec["failure_mode"]}
