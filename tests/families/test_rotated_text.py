"""The rotated_text family: a small turned or mirrored document, read as it lies after a crop."""

from __future__ import annotations

import numpy as np

from m3gym.scoring.checkpoints import measure_evidence
from m3gym.spec import Evidence
from m3gym.tasks import render as R
from tests.family_helpers import all_tasks, ncc, region, replay

MIN_VIEW = Evidence.min_view_height


def test_rotated_text_is_turned_illegible_in_the_view_and_legible_in_the_crop():
    from m3gym.tasks.families._text_common import apply_transform

    seen = set()
    for t in all_tasks("rotated_text"):
        img = t.images[0]
        (ev,) = t.evidence
        transform = t.metadata["transform"]
        seen.add(transform)
        # read as it lies: the evidence keeps no orientation, so v_true accepts the turned crop
        assert ev.angle == 0 and not ev.mirrored
        # clean shows the region as it appears in image 0 (noise is the only difference)
        assert ncc(R.to_gray(region(img, ev.box)), ev.clean) > 0.9
        # ... and that is the upright field turned by the transform
        x0, y0, x1, y1 = t.metadata["upright_box"]
        assert ev.clean.shape[:2] == apply_transform(np.zeros((y1 - y0, x1 - x0)),
                                                     transform).shape
        h, w = img.shape[:2]
        assert ev.glyph_height * R.view_scale(h, w) < 0.6 * MIN_VIEW  # the view merges it
        assert [c.name for c in t.reference_calls] == ["crop"]
        state, trace = replay(t)
        out = state[trace.calls[0].output_index]
        assert measure_evidence(out, ev).passed
        assert not measure_evidence(state[0], ev).passed
    assert seen == {"rot90", "rot180", "rot270", "flip_h", "flip_v"}

