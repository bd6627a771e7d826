"""Exact S/V checkpoint verification: one import for the two modules that do it.

* :mod:`m3gym.scoring.legibility` measures, on pixels at the agent's view resolution, whether an
  artifact really shows a piece of evidence (``v_true``): containment, orientation, glyph size,
  ink contrast and fidelity to the clean render.
* :mod:`m3gym.scoring.checkpoint_tracker` decides which checkpoints the calls and artifacts of an
  episode passed (per-group maximum matchings, kept incrementally) and reports the axis scores.

Every name both modules define is importable from here, as it was before the split; new code may
import from either module directly.
"""

from __future__ import annotations

from m3gym.geometry import box_corners, mapped_extent
from m3gym.scoring.checkpoint_tracker import (
    CONTRAST_GAIN,
    DEFAULT_MAX_RANK,
    GLOBAL_COVERAGE,
    MATCHED_GROUPS,
    MIN_CONTRAST_STEP,
    SEARCH_ALIASES,
    SEARCH_TOOLS,
    CheckpointReport,
    CheckpointResult,
    CheckpointTracker,
    checkpoint_group,
    evaluate_checkpoints,
    result_urls,
    search_max_rank,
)
from m3gym.scoring.legibility import (
    CONTAINMENT_TOLERANCE_PX,
    DEFAULT_VIEW_SIZE,
    MAGNIFY_MAX_SHARE,
    MAX_FRAME_GLYPH,
    MAX_UPSAMPLE,
    NATIVE_VIEW,
    UPRIGHT_TOLERANCE_DEG,
    EvidenceView,
    cached_clean_in_frame,
    clean_in_frame,
    comparison_frame_size,
    contains_box,
    detail_of,
    evidence_orientation,
    ink_support_contrast,
    largest_crop_share,
    measure_evidence,
    native_contrast,
    normalized_correlation,
    orientation_of,
    root_coverage,
    seen_glyph_height,
    spectral_norm_2x2,
    warp_to_frame,
)

__all__ = [
    "CONTAINMENT_TOLERANCE_PX", "CONTRAST_GAIN", "DEFAULT_MAX_RANK", "DEFAULT_VIEW_SIZE",
    "GLOBAL_COVERAGE", "MAGNIFY_MAX_SHARE", "MATCHED_GROUPS", "MAX_FRAME_GLYPH", "MAX_UPSAMPLE",
    "MIN_CONTRAST_STEP", "NATIVE_VIEW", "SEARCH_ALIASES", "SEARCH_TOOLS", "UPRIGHT_TOLERANCE_DEG",
    "CheckpointReport", "CheckpointResult", "CheckpointTracker", "EvidenceView", "box_corners",
    "cached_clean_in_frame", "checkpoint_group", "clean_in_frame", "comparison_frame_size",
    "contains_box", "detail_of", "evaluate_checkpoints", "evidence_orientation",
    "ink_support_contrast", "largest_crop_share", "mapped_extent", "measure_evidence",
    "native_contrast", "normalized_correlation", "orientation_of", "result_urls",
    "root_coverage", "search_max_rank", "seen_glyph_height", "spectral_norm_2x2", "warp_to_frame",
]
