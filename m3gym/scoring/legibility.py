"""Legibility measurement: whether an image really shows a piece of evidence (``v_true``).

Measured on pixels, never judged:

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

:mod:`m3gym.scoring.checkpoint_tracker` uses these measures to decide the S/V checkpoints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from m3gym.geometry import apply_affine, box_corners, homogeneous, mapped_extent
from m3gym.pixels import to_gray
from m3gym.spec import Evidence
from m3gym.state import ImageEntry
from m3gym.view import VIEW_SIZE, view_scale

UPRIGHT_TOLERANCE_DEG: float = 10.0
"""Largest rotation (degrees) at which evidence still counts as upright."""

CONTAINMENT_TOLERANCE_PX: float = 1.0
"""Slack, in root pixels, allowed when testing that the evidence box lies inside an image."""

MAX_UPSAMPLE: int = 6
"""Largest upsampling of the ``clean`` frame used for the visibility/fidelity comparison."""

MAX_FRAME_GLYPH: float = 32.0
"""Largest glyph height, in comparison-frame pixels (larger evidence is compared downsampled)."""

DEFAULT_VIEW_SIZE: int = VIEW_SIZE
"""The longest side, in pixels, at which the agent sees an image."""

MAGNIFY_MAX_SHARE: float = 0.5
"""A crop magnifies the evidence when it keeps at most this share of its root image's area, or
twice the evidence's share of it when that is larger."""

NATIVE_VIEW: int = 1 << 30
"""A view size no image reaches: measurements at full resolution."""


# ---------------------------------------------------------------------------------------------
# geometry of the evidence in an artifact


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
