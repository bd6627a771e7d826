"""The rotated_text family: a label turned by a quarter turn or mirrored, read after the inverse."""

from __future__ import annotations

import numpy as np

from m3gym.spec import Evidence
from m3gym.tasks import render as R
from tests.family_helpers import all_tasks, apply_reference, ncc, region

MIN_VIEW = Evidence.min_view_height













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
