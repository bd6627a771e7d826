"""Typed argument similarity for :mod:`m3gym.scoring.alignment`.

What alignment compares two calls' arguments with:

* the task's :class:`ContentContext` (evidence boxes and texts, search targets: no pixels, no
  answer);
* crop *frames*: where an image's normalized coordinates lie in its root image, followed through
  the crop / flip chain that made it, so two crop boxes on different images of one root compare;
* the value similarities: numbers, angles, texts, queries, upright angles, crop content, and the
  typed :func:`value_similarity` that picks one by argument key.

Box area and IoU are :func:`m3gym.geometry.box_area` and :func:`m3gym.geometry.box_iou`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz, utils

from m3gym.geometry import box_area, box_iou
from m3gym.scoring.legibility import UPRIGHT_TOLERANCE_DEG, largest_crop_share
from m3gym.spec import Task
from m3gym.tools.catalogue import ENUM_KEYS, FRAME_PRESERVING_TOOLS
from m3gym.urls import normalize_url

URL_KEYS: frozenset[str] = frozenset({"url"})
"""Argument keys compared as urls (after :func:`~m3gym.urls.normalize_url`)."""

IGNORED_KEYS: frozenset[str] = frozenset({"label"})
"""Argument keys no similarity reads (free text the agent attaches)."""

BOX_KEY = "bbox_2d"
ANGLE_KEY = "angle"

_NUM_EPS = 1e-9


# ----------------------------------------------------------------------------- content context


@dataclass(frozen=True)
class EvidenceRegion:
    """One evidence box in its input image's normalized (0–1) coordinates, with its text."""

    image: int
    box: tuple[float, float, float, float]
    text: str | None = None

    @property
    def area(self) -> float:
        """Share of the input image's area the box covers."""
        return box_area(self.box)


@dataclass(frozen=True)
class SearchTarget:
    """A page the reference's search finds: ``url`` within the first ``max_rank`` results."""

    tool: str
    url: str
    max_rank: int


@dataclass(frozen=True)
class ContentContext:
    """What the content similarities need to know of the task (no pixels, no answer).

    Build it with :meth:`from_task`. Without it, crop boxes are compared by IoU only and search
    queries by token F1 with the reference query only.
    """

    evidence: tuple[EvidenceRegion, ...] = ()
    search_targets: tuple[SearchTarget, ...] = ()

    @classmethod
    def from_task(cls, task: Task) -> ContentContext:
        """Return the context of ``task``: its evidence boxes (normalized) and search targets."""
        regions = []
        for ev in task.evidence:
            if not 0 <= ev.image < len(task.images):
                continue
            h, w = task.images[ev.image].shape[:2]
            x0, y0, x1, y1 = ev.box
            regions.append(EvidenceRegion(ev.image, (x0 / w, y0 / h, x1 / w, y1 / h), ev.text))
        targets = []
        for cp in task.checkpoints:
            if cp.kind == "search_hit":
                rank = cp.params.get("max_rank", 3)
                targets.append(SearchTarget(
                    str(cp.params.get("tool")), normalize_url(str(cp.params.get("url", ""))),
                    rank if isinstance(rank, int) and not isinstance(rank, bool) else 3))
        return cls(tuple(regions), tuple(targets))


# ----------------------------------------------------------------------------- frames

# A frame maps an image's normalized coordinates to its root's: x_root = ax·x + bx (same for y).
# ``root`` identifies the root image: ("input", i) or ("url", normalized url).
Frame = tuple[tuple[str, Any], float, float, float, float]


_REAL_TYPES = (int, float)


def as_box(value: Any) -> tuple[float, float, float, float] | None:
    """Return ``value`` as a float box if it is a list/tuple of 4 finite reals, else ``None``."""
    if type(value) not in (list, tuple) or len(value) != 4:
        return None
    a, b, c, d = value
    # ``type(...) in`` (not isinstance) keeps bools out; the sum is finite iff all four are
    if (type(a) in _REAL_TYPES and type(b) in _REAL_TYPES and type(c) in _REAL_TYPES
            and type(d) in _REAL_TYPES and math.isfinite(a + b + c + d)):
        return float(a), float(b), float(c), float(d)
    return None


def child_frame(parent: Frame | None, name: str, args: Mapping[str, Any]) -> Frame | None:
    """Return the frame of the image ``name(args)`` makes from an image with frame ``parent``."""
    if parent is None:
        return None
    root, ax, bx, ay, by = parent
    if name in FRAME_PRESERVING_TOOLS:
        return parent
    if name == "crop":
        box = as_box(args.get(BOX_KEY))
        if box is None:
            return None
        x1, y1, x2, y2 = (v / 1000.0 for v in box)
        return root, ax * (x2 - x1), ax * x1 + bx, ay * (y2 - y1), ay * y1 + by
    if name == "flip":
        direction = args.get("direction", "horizontal")
        if direction in ("horizontal", "both"):
            ax, bx = -ax, ax + bx
        if direction in ("vertical", "both"):
            ay, by = -ay, ay + by
        if direction not in ("horizontal", "vertical", "both"):
            return None
        return root, ax, bx, ay, by
    if name == "rotate":
        angle = args.get("angle")
        if isinstance(angle, (int, float)) and math.isfinite(angle) and angle % 360 == 0:
            return parent
    return None


def root_frame(key: tuple[str, Any]) -> Frame:
    """Return the identity frame of root image ``key``."""
    return key, 1.0, 0.0, 1.0, 0.0


def box_in_root(frame: Frame, box: tuple[float, float, float, float]) -> tuple[float, ...]:
    """Return a 0–1000 ``box`` of an image with ``frame`` in its root's normalized coordinates."""
    _, ax, bx, ay, by = frame
    xa, xb = ax * box[0] / 1000.0 + bx, ax * box[2] / 1000.0 + bx
    ya, yb = ay * box[1] / 1000.0 + by, ay * box[3] / 1000.0 + by
    return min(xa, xb), min(ya, yb), max(xa, xb), max(ya, yb)


# ----------------------------------------------------------------------------- value similarity


def number_similarity(a: float, b: float) -> float:
    """Return ``1 − |a − b| / max(|a|, |b|, eps)`` clipped to [0, 1]."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return 0.0
    if a == b:
        return 1.0
    return max(0.0, 1.0 - abs(a - b) / max(abs(a), abs(b), _NUM_EPS))


def angle_similarity(a: float, b: float) -> float:
    """Return ``1 − circular distance / 180`` for two angles in degrees."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return 0.0
    d = abs(a - b) % 360.0
    return 1.0 - min(d, 360.0 - d) / 180.0


def text_similarity(a: str, b: str) -> float:
    """Return rapidfuzz's token-set ratio of two texts, in [0, 1]."""
    if a == b:
        return 1.0
    return fuzz.token_set_ratio(a, b, processor=utils.default_process) / 100.0


_TOKEN = re.compile(r"[0-9a-z]+")


def query_tokens(text: str) -> list[str]:
    """Return the lower-case alphanumeric tokens of a search query."""
    return _TOKEN.findall(text.casefold())


def query_similarity(a: str, b: str) -> float:
    """Return the token F1 of two queries (multiset overlap; 1 for two empty queries)."""
    ta, tb = query_tokens(a), query_tokens(b)
    if not ta and not tb:
        return 1.0
    if not ta or not tb:
        return 0.0
    counts: dict[str, int] = {}
    for t in ta:
        counts[t] = counts.get(t, 0) + 1
    common = 0
    for t in tb:
        if counts.get(t, 0) > 0:
            counts[t] -= 1
            common += 1
    return 2.0 * common / (len(ta) + len(tb))


def upright_angle_similarity(a: float, b: float) -> float:
    """Return 1 when rotations ``a`` and ``b`` (degrees) agree modulo 360 within tolerance."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return 0.0
    d = abs(a - b) % 360.0
    return 1.0 if min(d, 360.0 - d) <= UPRIGHT_TOLERANCE_DEG else 0.0




def _inside(inner: Sequence[float], outer: Sequence[float], tol: float = 1e-3) -> bool:
    return (inner[0] >= outer[0] - tol and inner[1] >= outer[1] - tol
            and inner[2] <= outer[2] + tol and inner[3] <= outer[3] + tol)


def crop_content_similarity(ref_box: Sequence[float], pred_box: Sequence[float],
                            evidence: Sequence[EvidenceRegion]) -> float:
    """Return the content similarity of two crop boxes in one root's normalized coordinates.

    1 when ``pred_box`` covers every evidence box that ``ref_box`` covers and magnifies it (keeps
    at most :func:`~m3gym.scoring.legibility.largest_crop_share` of the root);
    otherwise their IoU. ``evidence`` holds the evidence regions of that root.
    """
    iou = box_iou(ref_box, pred_box)
    covered = [e for e in evidence if _inside(e.box, ref_box)]
    if not covered or not all(_inside(e.box, pred_box) for e in covered):
        return iou
    share = sum(e.area for e in covered)
    return 1.0 if box_area(pred_box) <= largest_crop_share(share) else iou


def is_number(v: Any) -> bool:
    """Return whether ``v`` is an int or float (bools excluded)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def value_similarity(key: str, a: Any, b: Any) -> float:
    """Return the typed similarity of two values of argument ``key`` (boxes: raw IoU)."""
    if key == BOX_KEY:
        ba, bb = as_box(a), as_box(b)
        return box_iou(ba, bb) if ba is not None and bb is not None else 0.0
    if isinstance(a, bool) or isinstance(b, bool):
        return 1.0 if a is b else 0.0
    if is_number(a) and is_number(b):
        if key == ANGLE_KEY:
            return angle_similarity(float(a), float(b))
        return number_similarity(float(a), float(b))
    if isinstance(a, str) and isinstance(b, str):
        if key in ENUM_KEYS:
            return 1.0 if a.strip().casefold() == b.strip().casefold() else 0.0
        if key in URL_KEYS:
            return 1.0 if normalize_url(a) == normalize_url(b) else 0.0
        return text_similarity(a, b)
    return 1.0 if a == b else 0.0


def defaults_from_registry(registry: Any) -> dict[str, dict[str, Any]]:
    """Return ``{tool: {arg: default}}`` read from a :class:`~m3gym.tools.registry.ToolRegistry`."""
    out: dict[str, dict[str, Any]] = {}
    for spec in registry.specs():
        fields = getattr(spec.args_model, "model_fields", {})
        found = {}
        for name, info in fields.items():
            if name in IGNORED_KEYS or info.is_required():
                continue
            default = info.get_default(call_default_factory=True)
            if default is not None:
                found[name] = default
        out[spec.name] = found
    return out
