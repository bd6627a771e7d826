"""Text faces (m3gym.tasks.render.text): TrueType only, the Hershey stroke faces are retired."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from m3gym.tasks import render as R


def test_every_face_tuple_is_truetype() -> None:
    assert R.ALL_FACES == R.FONT_FACES
    assert set(R.READABLE_FACES) <= set(R.FONT_FACES)
    assert all(isinstance(f, str) for f in (*R.ALL_FACES, *R.READABLE_FACES))
    rng = np.random.default_rng(0)
    for readable in (True, False):
        for _ in range(50):
            face, italic = R.random_font(rng, readable)
            assert face in R.FONT_FACES and isinstance(italic, bool)


@pytest.mark.parametrize("face", [cv2.FONT_HERSHEY_SIMPLEX, cv2.FONT_HERSHEY_SCRIPT_SIMPLEX,
                                  "hershey"])
def test_hershey_faces_are_refused(face: object) -> None:
    with pytest.raises(ValueError, match="Hershey stroke faces are retired"):
        R.render_text("AB12", 20.0, face)  # type: ignore[arg-type]


@pytest.mark.parametrize("face", ["sans", "serif", "mono", "condensed", "stix"])
def test_render_text_is_the_truetype_patch(face: str) -> None:
    p = R.render_text("K7-4F2", 18.0, face)
    q = R.truetype_text("K7-4F2", 18.0, face)
    assert np.array_equal(p.alpha, q.alpha) and p.glyph_height == q.glyph_height
    bold = R.render_text("K7-4F2", 18.0, face, thickness=2)
    assert np.array_equal(bold.alpha, R.truetype_text("K7-4F2", 18.0, f"{face}-bold").alpha)
    again = R.render_text("K7-4F2", 18.0, f"{face}-bold", thickness=3)  # bold stays bold
    assert np.array_equal(again.alpha, bold.alpha)


def test_italic_slants_and_stays_tight() -> None:
    upright = R.render_text("HIL", 30.0, "sans")
    slanted = R.render_text("HIL", 30.0, "sans", italic=True)
    a = slanted.alpha
    assert a[0].any() and a[-1].any() and a[:, 0].any() and a[:, -1].any()
    assert a.shape[0] == upright.alpha.shape[0] and a.shape[1] > upright.alpha.shape[1]
    assert np.array_equal(slanted.mask, a >= 128)
    assert slanted.baseline == upright.baseline
    top_x = np.flatnonzero(a[1] >= 128)[0]
    bottom_x = np.flatnonzero(a[-2] >= 128)[0]
    assert top_x > bottom_x  # the top of the stems leans right
    again = R.render_text("HIL", 30.0, "sans", italic=True)
    assert np.array_equal(again.alpha, a)


def test_cap_height_and_tiny_heights() -> None:
    assert 0.6 < R.cap_height_at_unit_scale("sans") < 0.8
    assert R.render_text("7", 0.5, "mono").mask.any()  # clamped to the smallest TrueType height
