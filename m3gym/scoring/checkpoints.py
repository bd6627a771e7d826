"""Exact S/V checkpoint verification from the trace and the image state.

Every checkpoint kind of :mod:`m3gym.spec` is decided from logged facts, never judged:

* geometry comes from each image's provenance affine (root pixels → image pixels), so the
  evidence box of the task can be located in any artifact;
* ``v_true`` is measured on the artifact's pixels *at the agent's view resolution*
  (scale ``s = min(1, view_size / max(h, w))``): (a) geometry — the mapped evidence box lies fully
  inside the artifact, the glyph height seen (``glyph_height`` × affine scale along the evidence's
  vertical × ``s``) reaches ``min_view_height``, and the evidence is upright (|angle| ≤
  :data:`UPRIGHT_TOLERANCE_DEG`) and not mirrored (determinant > 0); (b) visibility — the
  absolute gray-level difference between the ink (``mask``) and a dilated ring around it reaches
  ``min_contrast`` (inversion and thresholding keep it); (c) fidelity — the absolute normalized
  correlation between the artifact region warped back into the evidence's ``clean`` frame (after
  downsampling to the view scale, so detail lost at view resolution stays lost) and ``clean``
  reaches ``min_fidelity`` (catches blur and noise; correlation alone is blind to faintness, hence
  (b)). The comparison frame is ``clean`` upsampled by ``k = clip(seen scale, 1, 6)``, so a blur
  of a zoomed artifact is judged at the size the agent sees it. Evidence without ``clean``/``mask``
  is judged on geometry only. Any artifact may pass (Image 0 included).

**Exclusivity is per axis group** (the project's reading of Agentic-MME, where one step is judged
on both the strategy and the evidence axis). Checkpoints fall into three groups:

1. **S** (``crop_covers``, ``rotate_upright``, ``contrast_op``, ``global_op``, ``search_hit``,
   ``fetch``) ↔ calls: one call satisfies at most one S checkpoint;
2. **V_tool** (``v_tool``) ↔ calls: one call satisfies at most one ``v_tool`` checkpoint, in a
   matching of its own;
3. **V_true** (``v_true``) ↔ *artifacts*: a ``v_true`` passes when any artifact (an input image
   included, if the evidence is legible there) shows the evidence — no exclusivity at all, so two
   pieces of evidence visible in one crop both pass. The result names the first artifact that
   passed and the call that produced it (``None`` for an input image).

So one good crop may pass ``crop_covers`` (S), a ``v_tool`` (V) and a ``v_true`` (V) at once, yet
two S checkpoints (or two ``v_tool`` checkpoints) need two calls. Within groups 1 and 2 the
checkpoints and the successful calls form a bipartite graph (edge = "this call passes this
checkpoint on its own") and a *maximum matching* decides what passed, so the count does not
depend on checkpoint order. Each matching is kept incrementally (one augmenting-path search per
new call and group, Kuhn's algorithm), which keeps it maximum, never un-passes a passed checkpoint
(progress is monotone) and costs per step only what the new calls add. Among maximum matchings,
earlier calls keep the checkpoints they took first.

``search_hit`` passes only when the expected url ranks within the first ``max_rank`` results
(param, default :data:`DEFAULT_MAX_RANK`): a query for a near-duplicate entity often lists the
target further down, which must not count as finding it. ``v_tool`` passes when one of its
``tools`` was applied to an image containing the whole evidence and, when the call produced an
image, that image still contains it (a tool "applied to the evidence" keeps it in view).

Axis scores: ``S`` = passed S checkpoints / S checkpoints, ``V`` likewise, ``V_tool`` and
``V_true`` = share of ``v_tool`` / ``v_true`` checkpoints passed. A score over **zero**
checkpoints is reported as 1.0 (nothing was required); the counts are reported beside it so
aggregators can skip such tasks.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from m3gym.pixels import to_gray
from m3gym.spec import Checkpoint, Evidence, Task
from m3gym.state import ImageEntry, ImageState, apply_affine, homogeneous
from m3gym.tools.catalogue import TOOL_ALIASES
from m3gym.trace import CallRecord, Trace
from m3gym.urls import normalize_url
from m3gym.view import VIEW_SIZE, view_scale

UPRIGHT_TOLERANCE_DEG: float = 10.0
"""Largest rotation (degrees) at which evidence still counts as upright."""

GLOBAL_COVERAGE: float = 0.95
"""Share of the root image an input must show for an op on it to count as global."""

CONTAINMENT_TOLERANCE_PX: float = 1.0
"""Slack, in root pixels, allowed when testing that the evidence box lies inside an image."""

MAX_UPSAMPLE: int = 6
"""Largest upsampling of the ``clean`` frame used for the visibility/fidelity comparison."""

MAX_FRAME_GLYPH: float = 32.0
"""Largest glyph height, in comparison-frame pixels (larger evidence is compared downsampled)."""

DEFAULT_VIEW_SIZE: int = VIEW_SIZE
"""The longest side, in pixels, at which the agent sees an image."""

DEFAULT_MAX_RANK: int = 3
"""Default of ``search_hit``'s ``max_rank``: the expected url must be among this many results."""

MAGNIFY_MAX_SHARE: float = 0.5
"""A crop magnifies the evidence when it keeps at most this share of its root image's area, or
twice the evidence's share of it when that is larger."""

CONTRAST_GAIN: float = 1.25
"""A contrast op on an image where the evidence is below legible scale counts only when it raises
the evidence's native ink contrast by at least this factor (and by :data:`MIN_CONTRAST_STEP`)."""

MIN_CONTRAST_STEP: float = 4.0
"""Smallest absolute rise of the native ink contrast, in 8-bit levels, that counts as a raise."""

NATIVE_VIEW: int = 1 << 30
"""A view size no image reaches: measurements at full resolution."""

MATCHED_GROUPS: tuple[str, ...] = ("S", "v_tool")
"""Checkpoint groups decided by a call ↔ checkpoint matching (one call, one checkpoint each)."""

SEARCH_ALIASES: Mapping[str, str] = TOOL_ALIASES
"""Alias → canonical name of the retrieval tools (derived from the tool catalogue)."""

SEARCH_TOOLS = ("web_search", "image_search")


# ---------------------------------------------------------------------------------------------
# geometry helpers


def box_corners(box: tuple[float, float, float, float]) -> np.ndarray:
    """Return the 4 corners ``(x, y)`` of an axis-aligned box, clockwise from top-left."""
    x0, y0, x1, y1 = box
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], dtype=np.float64)


def evidence_orientation(ev: Evidence) -> np.ndarray:
    """Return the 2x2 linear map from the evidence's upright frame to its image's pixel axes.

    The image y axis points down, so a counter-clockwise rotation by ``a`` is
    ``[[cos a, sin a], [-sin a, cos a]]`` (the convention of ``cv2.getRotationMatrix2D``).
    """
    a = math.radians(ev.angle)
    rot = np.array([[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]])
    if ev.mirrored:
        rot = rot @ np.diag([-1.0, 1.0])
    return rot


def orientation_of(linear: np.ndarray) -> tuple[float, float]:
    """Return ``(determinant, angle_deg)`` of a 2x2 map; the angle is counter-clockwise on screen.

    The angle is that of the closest similarity transform, in ``(-180, 180]``.
    """
    a, b, c, d = linear.ravel().tolist()
    return a * d - b * c, math.degrees(math.atan2(b - c, a + d))


def spectral_norm_2x2(linear: np.ndarray) -> float:
    """Return the largest singular value of a 2x2 matrix (closed form, no LAPACK call)."""
    a, b, c, d = linear.ravel().tolist()
    sq = a * a + b * b + c * c + d * d
    det = a * d - b * c
    return math.sqrt(0.5 * (sq + math.sqrt(max(0.0, sq * sq - 4.0 * det * det))))


def contains_box(entry: ImageEntry, ev: Evidence) -> bool:
    """Return whether ``entry`` derives from the evidence's image and shows its whole box."""
    if entry.provenance.root != ev.image:
        return False
    affine = entry.provenance.affine
    x_lo, y_lo, x_hi, y_hi = mapped_extent(affine, ev.box)
    tol = CONTAINMENT_TOLERANCE_PX * max(1.0, spectral_norm_2x2(affine[:, :2]))
    return (x_lo >= -tol and x_hi <= entry.width + tol
            and y_lo >= -tol and y_hi <= entry.height + tol)


def mapped_extent(affine: np.ndarray, box: tuple[float, float, float, float]
                  ) -> tuple[float, float, float, float]:
    """Return the axis-aligned extent ``(x_lo, y_lo, x_hi, y_hi)`` of ``box`` mapped by ``affine``.

    Plain float arithmetic on the four corners (this runs on every new image of every step).
    """
    (a, b, tx), (c, d, ty) = affine.tolist()
    x0, y0, x1, y1 = box
    xs = [a * x + b * y + tx for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))]
    ys = [c * x + d * y + ty for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))]
    return min(xs), min(ys), max(xs), max(ys)


def root_coverage(entry: ImageEntry, root_shape: tuple[int, ...]) -> float:
    """Return the share of the root image's area that ``entry`` shows (0..1)."""
    h, w = root_shape[:2]
    mapped = apply_affine(entry.provenance.affine, box_corners((0.0, 0.0, float(w), float(h))))
    frame = box_corners((0.0, 0.0, float(entry.width), float(entry.height)))
    mapped_area = abs(float(cv2.contourArea(mapped.astype(np.float32))))
    if mapped_area <= 0.0:
        return 0.0
    if float(cv2.contourArea(frame.astype(np.float32))) <= 0.0:
        return 0.0
    poly = mapped.astype(np.float32)
    if cv2.contourArea(poly, oriented=True) < 0:  # intersectConvexConvex wants one winding
        poly = poly[::-1].copy()
    inter, _ = cv2.intersectConvexConvex(poly, frame.astype(np.float32))
    return min(1.0, max(0.0, float(inter) / mapped_area))


def normalized_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Return the zero-mean normalized correlation of two equal-shape arrays (0 if one is flat)."""
    x = a.astype(np.float64).ravel()
    y = b.astype(np.float64).ravel()
    x -= x.mean()
    y -= y.mean()
    # elementwise sums, not BLAS dot products: no thread pool, identical result on every machine
    denom = math.sqrt(float((x * x).sum()) * float((y * y).sum()))
    return float((x * y).sum()) / denom if denom > 1e-9 else 0.0


def detail_of(gray: np.ndarray, sigma: float) -> np.ndarray:
    """Return the band-passed detail of ``gray``: itself minus its Gaussian blur at ``sigma``."""
    g = gray.astype(np.float32)
    return g - cv2.GaussianBlur(g, (0, 0), sigma)


# ---------------------------------------------------------------------------------------------
# v_true measurement


@dataclass(frozen=True)
class EvidenceView:
    """How one artifact shows one evidence, measured at view resolution.

    ``stage`` is how far the checks got: 0 wrong root or not inside, 1 inside but not upright or
    mirrored, 2 upright but too small, 3 large enough but too faint, 4 visible but unfaithful,
    5 passed.
    """

    image_index: int
    evidence_id: str
    passed: bool
    stage: int
    reason: str
    inside: bool = False
    determinant: float | None = None
    angle_deg: float | None = None
    view_glyph_height: float | None = None
    contrast: float | None = None
    fidelity: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict."""
        return {k: getattr(self, k) for k in (
            "image_index", "evidence_id", "passed", "stage", "reason", "inside", "determinant",
            "angle_deg", "view_glyph_height", "contrast", "fidelity")}


def comparison_frame_size(ev: Evidence, seen: float) -> tuple[int, int]:
    """Return ``(width, height)`` of the frame ``clean`` is compared in.

    ``clean`` is upsampled by the scale the agent sees the evidence at (``seen``, rounded, in
    ``1..MAX_UPSAMPLE``) so detail is judged at the size it is seen, but never beyond
    :data:`MAX_FRAME_GLYPH` pixels per glyph (large evidence is compared downsampled: cheap, and
    a glyph that large keeps its structure).
    """
    assert ev.clean is not None
    ch, cw = ev.clean.shape[:2]
    scale = float(min(MAX_UPSAMPLE, max(1, round(seen))))
    if ev.glyph_height > 0:
        scale = min(scale, MAX_FRAME_GLYPH / ev.glyph_height)
    return max(1, round(cw * scale)), max(1, round(ch * scale))


def warp_to_frame(
    entry: ImageEntry, ev: Evidence, view_size: int, frame: tuple[int, int]
) -> np.ndarray:
    """Return the artifact's evidence region, as seen at view size, in the ``clean`` frame.

    ``frame`` is the ``(width, height)`` the ``clean`` box is resampled to. ``clean`` pixel
    ``(u, v)`` covers root coordinates ``[x0 + u, x0 + u + 1)`` (likewise in y): provenance
    affines map continuous coordinates, pixel ``i`` spanning ``[i, i + 1)``.
    """
    assert ev.clean is not None
    ch, cw = ev.clean.shape[:2]
    fw, fh = frame
    affine = entry.provenance.affine
    corners = apply_affine(affine, box_corners(ev.box))
    x0 = max(0, int(math.floor(corners[:, 0].min())) - 2)
    y0 = max(0, int(math.floor(corners[:, 1].min())) - 2)
    x1 = min(entry.width, int(math.ceil(corners[:, 0].max())) + 3)
    y1 = min(entry.height, int(math.ceil(corners[:, 1].max())) + 3)
    gray = to_gray(entry.array[y0:y1, x0:x1])
    # Shrink to the view scale; when the frame is coarser still, shrink straight to the frame's
    # resolution (one area-averaging resize: the view's loss of detail is included, and the
    # warp below then samples without aliasing).
    frame_per_artifact = (fw / cw) / math.sqrt(abs(float(np.linalg.det(affine[:, :2]))))
    s = min(view_scale(entry.height, entry.width, view_size), frame_per_artifact)
    fx = fy = 1.0
    if s < 1.0:
        vw = max(1, round(gray.shape[1] * s))
        vh = max(1, round(gray.shape[0] * s))
        fx, fy = vw / gray.shape[1], vh / gray.shape[0]
        gray = cv2.resize(gray, (vw, vh), interpolation=cv2.INTER_AREA)
    # frame index U -> root coordinate bx0 + (U + 0.5) * cw / fw -> artifact coordinate (affine)
    # -> region coordinate (- x0) -> view coordinate (* f) -> view index (- 0.5); cv2 samples
    # at indices (pixel centres at i, not i + 0.5).
    bx0, by0 = ev.box[0], ev.box[1]
    qx, qy = cw / fw, ch / fh
    up = np.array([[qx, 0.0, 0.5 * qx + bx0], [0.0, qy, 0.5 * qy + by0], [0.0, 0.0, 1.0]])
    art = homogeneous(affine)
    shift = np.array([[1.0, 0.0, -x0], [0.0, 1.0, -y0], [0.0, 0.0, 1.0]])
    view = np.array([[fx, 0.0, -0.5], [0.0, fy, -0.5], [0.0, 0.0, 1.0]])
    full = (view @ shift @ art @ up)[:2]
    return cv2.warpAffine(np.ascontiguousarray(gray), full, (fw, fh),
                          flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_REPLICATE)


def clean_in_frame(ev: Evidence, frame: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Return ``clean`` (gray) and ``mask`` (bool) resampled to ``frame`` ``(width, height)``."""
    assert ev.clean is not None and ev.mask is not None
    clean = to_gray(ev.clean)
    mask = ev.mask.astype(np.uint8) * 255
    if frame == (clean.shape[1], clean.shape[0]):
        return clean, mask > 0
    shrink = frame[0] < clean.shape[1]
    interp = cv2.INTER_AREA if shrink else cv2.INTER_LINEAR
    clean = cv2.resize(clean, frame, interpolation=interp)
    if not shrink:
        return clean, cv2.resize(mask, frame, interpolation=cv2.INTER_NEAREST) > 0
    cover = cv2.resize(mask, frame, interpolation=cv2.INTER_AREA)
    # a pixel is ink when at least half of it was; thin strokes keep their densest pixels
    return clean, cover >= min(128, max(1, int(cover.max()) // 2))


def cached_clean_in_frame(
    ev: Evidence, frame: tuple[int, int],
    frame_cache: dict[tuple[str, tuple[int, int]], tuple[np.ndarray, np.ndarray]] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Return :func:`clean_in_frame`, kept in ``frame_cache`` per (evidence id, frame size)."""
    key = (ev.id, frame)
    if frame_cache is not None and key in frame_cache:
        return frame_cache[key]
    out = clean_in_frame(ev, frame)
    if frame_cache is not None:
        frame_cache[key] = out
    return out


def measure_evidence(
    entry: ImageEntry, ev: Evidence, view_size: int = DEFAULT_VIEW_SIZE,
    frame_cache: dict[tuple[str, tuple[int, int]], tuple[np.ndarray, np.ndarray]] | None = None,
) -> EvidenceView:
    """Return whether (and how well) image ``entry`` really shows evidence ``ev`` (``v_true``).

    ``frame_cache`` (optional, owned by the caller) keeps ``clean``/``mask`` resampled per
    ``(evidence id, frame size)`` so repeated measurements of one evidence skip that work.
    """
    idx, eid = entry.index, ev.id
    if entry.provenance.root != ev.image:
        return EvidenceView(idx, eid, False, 0,
                            f"image {idx} derives from image {entry.provenance.root}, "
                            f"not from image {ev.image} holding the evidence")
    if not contains_box(entry, ev):
        return EvidenceView(idx, eid, False, 0,
                            f"image {idx} does not contain the whole evidence region")
    linear = entry.provenance.affine[:, :2] @ evidence_orientation(ev)
    det, angle = orientation_of(linear)
    if det <= 0.0 or abs(angle) > UPRIGHT_TOLERANCE_DEG:
        what = "mirrored" if det <= 0.0 else f"rotated {angle:.1f}°"
        return EvidenceView(idx, eid, False, 1, f"evidence is {what} in image {idx}", True,
                            det, angle)
    s = view_scale(entry.height, entry.width, view_size)
    seen = math.hypot(float(linear[0, 1]), float(linear[1, 1])) * s
    glyph = ev.glyph_height * seen
    if glyph < ev.min_view_height:
        return EvidenceView(idx, eid, False, 2,
                            f"glyphs are {glyph:.1f} px at view resolution "
                            f"(< {ev.min_view_height:g})", True, det, angle, glyph)
    if ev.clean is None or ev.mask is None:
        return EvidenceView(idx, eid, True, 5, "geometry passes (no clean render to compare)",
                            True, det, angle, glyph)
    frame = comparison_frame_size(ev, seen)
    patch = warp_to_frame(entry, ev, view_size, frame)
    clean, ink = cached_clean_in_frame(ev, frame, frame_cache)
    q = frame[0] / ev.clean.shape[1]  # frame pixels per source pixel
    support, contrast = ink_support_contrast(patch, ink, ev.glyph_height * q)
    if contrast < ev.min_contrast:
        return EvidenceView(idx, eid, False, 3,
                            f"ink contrast {contrast:.1f} levels (< {ev.min_contrast:g})",
                            True, det, angle, glyph, contrast)
    sigma = max(1.0, q * max(1.0, ev.glyph_height / 8.0))  # never finer than a source pixel
    fidelity = abs(normalized_correlation(detail_of(patch, sigma)[support],
                                          detail_of(clean, sigma)[support]))
    if fidelity < ev.min_fidelity:
        return EvidenceView(idx, eid, False, 4,
                            f"fidelity {fidelity:.3f} (< {ev.min_fidelity:g})",
                            True, det, angle, glyph, contrast, fidelity)
    return EvidenceView(idx, eid, True, 5, "evidence legible", True, det, angle, glyph,
                        contrast, fidelity)


def ink_support_contrast(patch: np.ndarray, ink: np.ndarray,
                         glyph_px: float) -> tuple[np.ndarray, float]:
    """Return (support mask, |mean ink − mean surround|) of ``patch`` in the ``clean`` frame.

    The surround is a ring around the ink, dilated by a quarter of the glyph height
    (``glyph_px``, in frame pixels).
    """
    radius = max(1, round(glyph_px / 4))
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))
    support = cv2.dilate(ink.astype(np.uint8), kernel).astype(bool)
    ring = support & ~ink
    contrast = (abs(float(patch[ink].mean()) - float(patch[ring].mean()))
                if ink.any() and ring.any() else 0.0)
    return support, contrast


def largest_crop_share(evidence_share: float) -> float:
    """Return the largest share of its root a crop may show and still magnify the evidence.

    :data:`MAGNIFY_MAX_SHARE`, or twice the evidence's share of the root when that is larger.
    Used by the ``crop_covers`` checkpoint and by alignment's crop content similarity.
    """
    return max(MAGNIFY_MAX_SHARE, 2.0 * evidence_share)


def seen_glyph_height(entry: ImageEntry, ev: Evidence, view_size: int) -> float:
    """Return the evidence's glyph height, in view pixels, as ``entry`` shows it (any rotation)."""
    linear = entry.provenance.affine[:, :2] @ evidence_orientation(ev)
    s = view_scale(entry.height, entry.width, view_size)
    return ev.glyph_height * math.hypot(float(linear[0, 1]), float(linear[1, 1])) * s


def native_contrast(
    entry: ImageEntry, ev: Evidence,
    frame_cache: dict[tuple[str, tuple[int, int]], tuple[np.ndarray, np.ndarray]] | None = None,
) -> float | None:
    """Return the evidence's ink contrast in ``entry`` at full resolution (no view downscale).

    ``None`` when the evidence has no clean render or ``entry`` does not show all of it.
    """
    if ev.clean is None or ev.mask is None or entry.provenance.root != ev.image:
        return None
    if not contains_box(entry, ev):
        return None
    frame = (ev.clean.shape[1], ev.clean.shape[0])
    _, ink = cached_clean_in_frame(ev, frame, frame_cache)
    patch = warp_to_frame(entry, ev, NATIVE_VIEW, frame)
    return ink_support_contrast(patch, ink, ev.glyph_height)[1]


# ---------------------------------------------------------------------------------------------
# report


@dataclass(frozen=True)
class CheckpointResult:
    """The outcome of one checkpoint.

    ``call_id`` is the call assigned to it (for ``v_true`` the call that produced the image, or
    ``None`` for an input image); ``image_index`` is the artifact that satisfied a ``v_true``.
    """

    checkpoint_id: str
    axis: str
    kind: str
    passed: bool
    call_id: str | None
    image_index: int | None
    reason: str
    measurements: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict."""
        return {"checkpoint_id": self.checkpoint_id, "axis": self.axis, "kind": self.kind,
                "passed": self.passed, "call_id": self.call_id, "image_index": self.image_index,
                "reason": self.reason, "measurements": dict(self.measurements)}


def _share(results: Iterable[CheckpointResult]) -> tuple[float, int]:
    items = list(results)
    if not items:
        return 1.0, 0
    return sum(r.passed for r in items) / len(items), len(items)


@dataclass(frozen=True)
class CheckpointReport:
    """Per-checkpoint outcomes and the axis scores (1.0 for an axis without checkpoints)."""

    results: tuple[CheckpointResult, ...]
    S: float
    V: float
    V_tool: float
    V_true: float
    counts: dict[str, int]

    @classmethod
    def from_results(cls, results: Iterable[CheckpointResult]) -> CheckpointReport:
        """Build a report and its axis scores from per-checkpoint results."""
        res = tuple(results)
        s, ns = _share(r for r in res if r.axis == "S")
        v, nv = _share(r for r in res if r.axis == "V")
        vt, nvt = _share(r for r in res if r.kind == "v_tool")
        vtr, nvtr = _share(r for r in res if r.kind == "v_true")
        return cls(res, s, v, vt, vtr, {"S": ns, "V": nv, "v_tool": nvt, "v_true": nvtr})

    @property
    def passed_ids(self) -> tuple[str, ...]:
        """Ids of the passed checkpoints, in checkpoint order."""
        return tuple(r.checkpoint_id for r in self.results if r.passed)

    @property
    def progress(self) -> float:
        """Fraction of all checkpoints passed (0.0 when there are none)."""
        return len(self.passed_ids) / len(self.results) if self.results else 0.0

    def result(self, checkpoint_id: str) -> CheckpointResult:
        """Return the result of checkpoint ``checkpoint_id``."""
        for r in self.results:
            if r.checkpoint_id == checkpoint_id:
                return r
        raise KeyError(checkpoint_id)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict."""
        return {"S": self.S, "V": self.V, "V_tool": self.V_tool, "V_true": self.V_true,
                "counts": dict(self.counts), "results": [r.to_dict() for r in self.results]}


# ---------------------------------------------------------------------------------------------
# incremental tracker


def result_urls(payload: Mapping[str, Any]) -> list[str]:
    """Return the normalized urls listed in a retrieval call's ``results`` payload."""
    results = payload.get("results") if isinstance(payload, Mapping) else None
    if not isinstance(results, list):
        return []
    urls = []
    for item in results:
        if isinstance(item, Mapping) and "url" in item:
            urls.append(normalize_url(item["url"]))
        elif isinstance(item, str):
            urls.append(normalize_url(item))
    return urls


def checkpoint_group(checkpoint: Checkpoint) -> str:
    """Return the exclusivity group of a checkpoint: ``"S"``, ``"v_tool"`` or ``"v_true"``."""
    if checkpoint.kind in ("v_tool", "v_true"):
        return checkpoint.kind
    return "S"


def search_max_rank(params: Mapping[str, Any]) -> int:
    """Return a ``search_hit``'s ``max_rank`` (default :data:`DEFAULT_MAX_RANK`, at least 1)."""
    value = params.get("max_rank", DEFAULT_MAX_RANK)
    if isinstance(value, bool) or not isinstance(value, int):
        return DEFAULT_MAX_RANK
    return max(1, value)


@dataclass
class _Candidate:
    key: str
    call_id: str | None
    image_index: int | None
    edges: list[int]
    detail: dict[int, dict[str, Any]]
    group: str = "S"


class CheckpointTracker:
    """Incremental checkpoint verifier: feed it new calls each step, read progress any time.

    Per step the cost is proportional to the new calls (and the new images they made): each new
    call is tested against every checkpoint once, each new image is measured once per ``v_true``
    evidence, and each group's maximum matching is extended by one augmenting-path search per new
    call (``v_true`` needs no matching: any artifact may pass it).
    """

    def __init__(self, task: Task, view_size: int = DEFAULT_VIEW_SIZE,
                 input_views: MutableMapping[tuple[Any, ...], Any] | None = None) -> None:
        self.task = task
        self.view_size = view_size
        self.input_views = input_views
        self.checkpoints: tuple[Checkpoint, ...] = tuple(task.checkpoints)
        self.groups: tuple[str, ...] = tuple(checkpoint_group(cp) for cp in self.checkpoints)
        self._evidence = {ev.id: ev for ev in task.evidence}
        self._candidates: list[_Candidate] = []
        self._match_cp: list[int | None] = [None] * len(self.checkpoints)
        self._match_cand: list[int | None] = []
        self._views: dict[tuple[int, str], EvidenceView] = {}
        self._frames: dict[tuple[str, tuple[int, int]], tuple[np.ndarray, np.ndarray]] = {}
        self._best_view: dict[int, EvidenceView] = {}
        self._seen_calls: set[str] = set()
        self._next_image = 0

    # -- feeding -------------------------------------------------------------------------------

    def observe(self, state: ImageState, calls: Iterable[CallRecord] = ()) -> list[str]:
        """Register new images without a call (inputs) and new calls; return newly passed ids.

        Calls already seen (by ``call_id``) are skipped, so the whole trace may be passed again.
        """
        before = {i for i, m in enumerate(self._match_cp) if m is not None}
        # Input images (and any image not made by a call) pass nothing: a visual checkpoint
        # needs a produced image where the evidence is measured legible.
        self._next_image = len(state)
        for call in calls:
            if call.call_id in self._seen_calls:
                continue
            self._seen_calls.add(call.call_id)
            if call.ok:
                self._add_candidate(call.call_id, call.call_id, call.output_index, state, call)
        return [self.checkpoints[i].id for i, m in enumerate(self._match_cp)
                if m is not None and i not in before]

    def _add_candidate(self, key: str, call_id: str | None, image_index: int | None,
                       state: ImageState, call: CallRecord | None) -> None:
        edges: list[int] = []
        detail: dict[int, dict[str, Any]] = {}
        for i, cp in enumerate(self.checkpoints):
            if cp.kind == "v_true":
                ok, info = self._v_true_edge(i, cp, image_index, state)
            elif call is None:
                continue
            else:
                ok, info = self._call_edge(cp, call, state)
            if ok:
                edges.append(i)
                detail[i] = info
        self._add_edges(key, call_id, image_index, edges, detail)

    def _add_edges(self, key: str, call_id: str | None, image_index: int | None,
                   edges: list[int], detail: dict[int, dict[str, Any]]) -> None:
        """Split one call's (or input image's) passing checkpoints by group and register them."""
        for group in ("S", "v_tool", "v_true"):
            mine = [i for i in edges if self.groups[i] == group]
            if mine:
                self._register(_Candidate(key, call_id, image_index, mine,
                                          {i: detail.get(i, {}) for i in mine}, group))

    def _register(self, candidate: _Candidate) -> None:
        """Add a candidate; extend its group's maximum matching, or take free ``v_true``s."""
        self._candidates.append(candidate)
        self._match_cand.append(None)
        cand = len(self._candidates) - 1
        if candidate.group not in MATCHED_GROUPS:  # v_true: no exclusivity, first artifact kept
            for cp in candidate.edges:
                if self._match_cp[cp] is None:
                    self._match_cp[cp] = cand
            return
        if candidate.edges:
            self._augment(cand, set())

    def _augment(self, cand: int, visited: set[int]) -> bool:
        # edges of a candidate stay in its group, so the search never leaves the group
        for cp in self._candidates[cand].edges:
            if cp in visited:
                continue
            visited.add(cp)
            holder = self._match_cp[cp]
            if holder is None or self._augment(holder, visited):
                self._match_cp[cp] = cand
                self._match_cand[cand] = cp
                return True
        return False

    # -- edge tests ----------------------------------------------------------------------------

    def _view(self, image_index: int, ev: Evidence, state: ImageState) -> EvidenceView:
        key = (image_index, ev.id)
        view = self._views.get(key)
        if view is None:
            view = self._measure(state[image_index], ev)
            self._views[key] = view
        return view

    def _v_true_edge(self, i: int, cp: Checkpoint, image_index: int | None,
                     state: ImageState) -> tuple[bool, dict[str, Any]]:
        ev = self._evidence.get(str(cp.params.get("evidence")))
        if ev is None or image_index is None or image_index >= len(state):
            return False, {}
        view = self._view(image_index, ev, state)
        best = self._best_view.get(i)
        if best is None or (view.stage, view.fidelity or 0.0) > (best.stage, best.fidelity or 0.0):
            self._best_view[i] = view
        return view.passed, view.to_dict()

    def _measure(self, entry: ImageEntry, ev: Evidence) -> EvidenceView:
        """Measure ``ev`` in the produced image ``entry`` (``v_true``)."""
        return measure_evidence(entry, ev, self.view_size, self._frames)

    def _native_contrast(self, entry: ImageEntry, ev: Evidence) -> float | None:
        """Return :func:`native_contrast`; input images go through the shared ``input_views``.

        An input image's measurement depends only on the task, so a caller that resets the same
        tasks again (a task pool) passes one ``input_views`` mapping to every tracker. Entries
        hold a weak reference to the task: a hit counts only for the very same task object
        (an ``id`` reused after garbage collection never matches), and the cache keeps no
        images alive.
        """
        if self.input_views is None or entry.provenance.call_id is not None:
            return native_contrast(entry, ev, self._frames)
        key = (self.task.task_id, id(self.task), entry.index, ev.id, "native_contrast")
        hit = self.input_views.get(key)
        if hit is not None and hit[0]() is self.task:
            return hit[1]
        value = native_contrast(entry, ev, self._frames)
        self.input_views[key] = (weakref.ref(self.task), value)
        return value

    def _input_entry(self, call: CallRecord, state: ImageState) -> ImageEntry | None:
        idx = call.input_index
        if idx is None:
            idx = call.arguments.get("image_index") if isinstance(call.arguments, dict) else None
        if not isinstance(idx, int) or not 0 <= idx < len(state):
            return None
        return state[idx]

    def _output_entry(self, call: CallRecord, state: ImageState) -> ImageEntry | None:
        idx = call.output_index
        if idx is None or not 0 <= idx < len(state):
            return None
        return state[idx]

    def _magnifies(self, out: ImageEntry, ev: Evidence) -> tuple[bool, float, float]:
        """Return (magnifies, share of the root shown, largest share allowed) for a crop."""
        h, w = self.task.images[ev.image].shape[:2]
        share = root_coverage(out, (h, w))
        limit = largest_crop_share(ev.area / float(h * w))
        return share <= limit + 1e-9, share, limit

    def _contrast_effect(self, src: ImageEntry, out: ImageEntry,
                         ev: Evidence) -> tuple[bool, dict[str, Any]]:
        """Return whether a contrast op on ``src`` did its job for ``ev`` (and the measures).

        It counts when ``src`` holds the evidence at a legible scale (glyphs at least
        ``min_view_height`` at view size), or when the op itself raised the evidence's native ink
        contrast by :data:`CONTRAST_GAIN` × and :data:`MIN_CONTRAST_STEP` levels.
        """
        glyph = seen_glyph_height(src, ev, self.view_size)
        info: dict[str, Any] = {"input_index": src.index, "output_index": out.index,
                                "view_glyph_height": glyph}
        if glyph >= ev.min_view_height:
            return True, info
        before = self._native_contrast(src, ev)
        after = self._native_contrast(out, ev)
        info.update(contrast_before=before, contrast_after=after)
        if before is None or after is None:
            return False, info
        return after >= max(before * CONTRAST_GAIN, before + MIN_CONTRAST_STEP), info

    def _call_edge(self, cp: Checkpoint, call: CallRecord,
                   state: ImageState) -> tuple[bool, dict[str, Any]]:
        p = cp.params
        kind = cp.kind
        ev = self._evidence.get(str(p.get("evidence"))) if "evidence" in p else None
        if kind == "crop_covers":
            out = self._output_entry(call, state)
            ok = (call.name == "crop" and ev is not None and out is not None
                  and contains_box(out, ev))
            info: dict[str, Any] = {"output_index": call.output_index}
            if ok and ev is not None and out is not None:
                ok, share, limit = self._magnifies(out, ev)
                info.update(root_share=share, max_share=limit)
            return ok, info
        if kind == "rotate_upright":
            out = self._output_entry(call, state)
            if call.name not in ("rotate", "flip") or ev is None or out is None:
                return False, {}
            if not contains_box(out, ev):
                return False, {}
            det, angle = orientation_of(out.provenance.affine[:, :2] @ evidence_orientation(ev))
            ok = det > 0.0 and abs(angle) <= UPRIGHT_TOLERANCE_DEG
            return ok, {"output_index": call.output_index, "determinant": det,
                        "angle_deg": angle}
        if kind == "contrast_op":
            src = self._input_entry(call, state)
            out = self._output_entry(call, state)
            if (call.name not in tuple(p.get("tools", ())) or ev is None or src is None
                    or out is None or not contains_box(src, ev)):
                return False, {}
            return self._contrast_effect(src, out, ev)
        if kind == "v_tool":
            # the right tool, applied to the evidence, made an image where it is legible
            src = self._input_entry(call, state)
            if (call.name not in tuple(p.get("tools", ())) or ev is None or src is None
                    or call.output_index is None or call.output_index >= len(state)
                    or not contains_box(src, ev)):
                return False, {}
            view = self._view(call.output_index, ev, state)
            return view.passed, {"input_index": src.index, "output_index": call.output_index,
                                 "legible": view.passed, "reason": view.reason}
        if kind == "global_op":
            src = self._input_entry(call, state)
            if call.name not in tuple(p.get("tools", ())) or src is None:
                return False, {}
            root = src.provenance.root
            if root >= len(self.task.images):
                return False, {}
            cover = root_coverage(src, self.task.images[root].shape)
            return cover >= GLOBAL_COVERAGE, {"input_index": src.index, "coverage": cover}
        if kind == "search_hit":
            name = SEARCH_ALIASES.get(call.name, call.name)
            if name != p.get("tool"):
                return False, {}
            urls = result_urls(call.payload)
            want = normalize_url(p.get("url", ""))
            rank = urls.index(want) + 1 if want in urls else None
            max_rank = search_max_rank(p)
            ok = rank is not None and rank <= max_rank
            return ok, {"url": p.get("url"), "rank": rank, "max_rank": max_rank}
        if kind == "fetch":
            if call.name != "fetch_webpage":
                return False, {}
            got = call.payload.get("url") if isinstance(call.payload, Mapping) else None
            if got is None and isinstance(call.arguments, dict):
                got = call.arguments.get("url")
            ok = got is not None and normalize_url(got) == normalize_url(p.get("url", ""))
            return ok, {"url": got}
        return False, {}

    # -- reading -------------------------------------------------------------------------------

    @property
    def num_passed(self) -> int:
        """Number of checkpoints passed so far."""
        return sum(m is not None for m in self._match_cp)

    @property
    def progress(self) -> float:
        """Fraction of all checkpoints passed so far (0.0 when the task has none): Φ for shaping."""
        return self.num_passed / len(self.checkpoints) if self.checkpoints else 0.0

    def report(self) -> CheckpointReport:
        """Return the report of everything observed so far."""
        results = []
        for i, cp in enumerate(self.checkpoints):
            holder = self._match_cp[i]
            if holder is not None:
                cand = self._candidates[holder]
                image = cand.image_index if cp.kind == "v_true" else None
                results.append(CheckpointResult(cp.id, cp.axis, cp.kind, True, cand.call_id,
                                                image, f"satisfied by {cand.key}",
                                                dict(cand.detail[i])))
                continue
            others = [c.key for c in self._candidates if i in c.edges]
            if others:
                what = self.groups[i]
                reason = (f"its only satisfying calls ({', '.join(others)}) were each assigned "
                          f"to another {what} checkpoint (one call satisfies at most one {what} "
                          "checkpoint)")
            elif cp.kind == "v_true" and i in self._best_view:
                reason = f"no artifact shows the evidence; best: {self._best_view[i].reason}"
            else:
                reason = "no call satisfied it"
            best = self._best_view.get(i)
            results.append(CheckpointResult(cp.id, cp.axis, cp.kind, False, None, None, reason,
                                            best.to_dict() if best is not None else {}))
        return CheckpointReport.from_results(results)


def evaluate_checkpoints(
    task: Task, trace: Trace, state: ImageState, view_size: int = DEFAULT_VIEW_SIZE
) -> CheckpointReport:
    """Return the S/V checkpoint report of a finished (or running) episode."""
    tracker = CheckpointTracker(task, view_size)
    tracker.observe(state, trace.calls)
    return tracker.report()
