"""The rotated_text family: a label turned by a quarter turn or mirrored, read after the inverse."""

from __future__ import annotations

from functools import cache

import numpy as np
from PIL import Image, ImageOps

from m3gym.spec import Evidence, Task
from m3gym.tasks import render as R
from m3gym.tasks.registry import make_task

MIN_VIEW = Evidence.min_view_height

SEEDS = range(60)


@cache
def task(family: str, seed: int) -> Task:
    return make_task(family, seed)


def all_tasks(family: str) -> list[Task]:
    return [task(family, s) for s in SEEDS]


def ncc(a: np.ndarray, b: np.ndarray) -> float:
    """Normalized correlation of two equally shaped gray arrays (-1 when shapes differ)."""
    if a.shape != b.shape:
        return -1.0
    x = a.astype(np.float64) - a.mean()
    y = b.astype(np.float64) - b.mean()
    den = np.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / den) if den else 0.0


def region(img: np.ndarray, box) -> np.ndarray:
    x0, y0, x1, y1 = (int(v) for v in box)
    return img[y0:y1, x0:x1]


def apply_reference(img: np.ndarray, call) -> np.ndarray:
    """Apply a rotate (CCW positive, expand) / flip / autocontrast reference call with numpy/PIL."""
    a = call.arguments
    if call.name == "rotate":
        assert a["expand"] is True and a["angle"] % 90 == 0
        return np.rot90(img, k=(a["angle"] // 90) % 4)
    if call.name == "flip":
        return {"horizontal": img[:, ::-1], "vertical": img[::-1]}[a["direction"]]
    if call.name == "autocontrast":
        return np.asarray(ImageOps.autocontrast(Image.fromarray(img), cutoff=a["cutoff"]))
    raise AssertionError(call.name)


def test_rotated_text_is_not_upright_before_and_is_after_reference():
    from m3gym.tasks.families._text_common import EVIDENCE_ORIENTATION

    seen = set()
    for t in all_tasks("rotated_text"):
        img = t.images[0]
        (ev,) = t.evidence
        transform = t.metadata["transform"]
        seen.add(transform)
        assert (ev.angle, ev.mirrored) == EVIDENCE_ORIENTATION[transform]
        assert ev.angle != 0 or ev.mirrored  # not upright in image 0
        # clean shows the region as it appears in image 0 (noise is the only difference)
        assert ncc(R.to_gray(region(img, ev.box)), ev.clean) > 0.9
        call = t.reference[0][0]
        fixed = apply_reference(img, call)
        uw, uh = t.metadata["upright_size"]
        assert fixed.shape[:2] == (uh, uw)
        after = R.to_gray(np.ascontiguousarray(region(fixed, t.metadata["upright_box"])))
        upright_clean = np.ascontiguousarray(apply_reference(ev.clean, call))
        assert ncc(after, upright_clean) > 0.9
        # the upright text is not its own mirror/rotation: the op really changes the reading
        if after.shape == ev.clean.shape:
            assert ncc(after, ev.clean) < 0.8
        assert ev.glyph_height * R.view_scale(uh, uw) >= 1.2 * MIN_VIEW
    assert seen == {"rot90", "rot180", "rot270", "flip_h", "flip_v"}
