"""TrueType text: shipped fonts, exact glyph height, TextPatch semantics, determinism."""

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from m3gym import typeface as F
from m3gym.tasks import render as R

ROOT = Path(__file__).resolve().parents[1]
FONT_DIR = ROOT / "m3gym" / "data" / "fonts"


def test_faces_and_shipped_files_with_licence():
    for face in ("sans", "sans-bold", "serif", "serif-bold", "mono", "mono-bold", "condensed",
                 "condensed-bold"):
        assert face in R.FONT_FACES
    licence = (FONT_DIR / "LICENSE").read_text()
    for face in R.FONT_FACES:
        path = F.font_path(face)
        assert path.is_file() and path.parent == FONT_DIR
        assert path.name in licence
    assert "Bitstream Vera" in licence and "SIL OPEN FONT LICENSE Version 1.1" in licence


@pytest.mark.parametrize("face", F.FONT_FACES)
def test_glyph_height_within_one_pixel_from_3_to_200(face):
    for target in range(3, 201):
        size = F.size_for_glyph_height(face, float(target))
        assert abs(F._h_height(face, size) - target) <= 1, (face, target)


@pytest.mark.parametrize("face", ["sans", "serif-bold", "mono", "condensed", "stix"])
@pytest.mark.parametrize("target", [3, 4, 7, 12, 25, 60, 200])
def test_glyph_height_is_the_measured_ink_height_of_h(face, target):
    patch = R.truetype_text("H", target, face)
    rows = np.flatnonzero(patch.mask.any(axis=1))
    assert patch.glyph_height == rows[-1] - rows[0] + 1
    assert abs(patch.glyph_height - target) <= 1


def test_patch_is_tight_and_pastes_exactly():
    patch = R.truetype_text("Invoice 2024 gyp", 18.0, "serif")
    a = patch.alpha
    assert a.dtype == np.uint8 and a.ndim == 2
    assert a[0].any() and a[-1].any() and a[:, 0].any() and a[:, -1].any()
    assert np.array_equal(patch.mask, a >= 128)
    img = np.full((60, a.shape[1] + 10, 3), 240, np.uint8)
    placed = R.paste_text(img, patch, 5, 7, (0, 0, 0))
    assert placed.box == (5, 7, 5 + a.shape[1], 7 + a.shape[0])
    region = img[7:7 + a.shape[0], 5:5 + a.shape[1]]
    assert (region[patch.alpha == 255] == 0).all()
    assert (region[patch.alpha == 0] == 240).all()


def test_baseline_aligns_strings():
    h = R.truetype_text("H", 20, "sans")
    hg = R.truetype_text("Hg", 20, "sans")
    assert h.baseline is not None and hg.baseline is not None
    assert h.alpha.shape[0] - 1 <= h.baseline <= h.alpha.shape[0]
    assert hg.baseline == h.baseline  # same top (the H), the g's descender below
    assert hg.alpha.shape[0] > hg.baseline
    assert R.render_text("H", 20).baseline == h.baseline  # render_text is TrueType too


def test_pick_font_and_errors():
    picks = [R.pick_font(np.random.default_rng(s)) for s in range(40)]
    assert set(picks) <= set(R.FONT_FACES) and len(set(picks)) > 3
    assert picks == [R.pick_font(np.random.default_rng(s)) for s in range(40)]
    assert R.pick_font(np.random.default_rng(1), ["mono"]) == "mono"
    with pytest.raises(ValueError, match="unknown font face 'comic'"):
        R.pick_font(np.random.default_rng(1), ["comic"])
    with pytest.raises(ValueError, match="at least one"):
        R.pick_font(np.random.default_rng(1), [])
    with pytest.raises(ValueError, match="unknown font face"):
        R.truetype_text("A", 10, "comic")
    with pytest.raises(ValueError, match="non-blank"):
        R.truetype_text("  ", 10)
    with pytest.raises(ValueError, match="glyph_height"):
        R.truetype_text("A", 1.0)
    with pytest.raises(ValueError, match="glyph_height"):
        R.truetype_text("A", float("nan"))
    with pytest.raises(ValueError, match="one line"):
        R.truetype_text("A\nB", 10)


def test_coverage_of_latin_text():
    for face in R.FONT_FACES:
        assert R.font_covers("Müller Straße, Façade Ñandú Øre Œuvre €12,50", face)
        assert not R.font_covers("東京", face)


SCRIPT = """
import hashlib
from m3gym.tasks import render as R
h = hashlib.sha256()
for i, face in enumerate(R.FONT_FACES):
    p = R.truetype_text("Qty 3 x Oat Milk 1 L  12,50 EUR", 6 + 5 * i, face)
    h.update(p.alpha.tobytes()); h.update(str(p.glyph_height).encode())
print(h.hexdigest())
"""


def test_bytes_identical_in_and_across_processes():
    local = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.strip()
    h = hashlib.sha256()
    for i, face in enumerate(R.FONT_FACES):
        p = R.truetype_text("Qty 3 x Oat Milk 1 L  12,50 EUR", 6 + 5 * i, face)
        h.update(p.alpha.tobytes())
        h.update(str(p.glyph_height).encode())
    assert h.hexdigest() == local


def test_truetype_lines_layout():
    lines = ["Oat Milk 1 L", "", "TOTAL 12,50"]
    patch, boxes = R.truetype_lines(lines, 14, "mono", line_spacing=2.0, align="right")
    assert patch.text == "Oat Milk 1 L\n\nTOTAL 12,50" and boxes[1] == (0, 0, 0, 0)
    one = [R.truetype_text(s, 14, "mono") for s in (lines[0], lines[2])]
    for box, single in zip((boxes[0], boxes[2]), one):
        x0, y0, x1, y1 = box
        assert (x1 - x0, y1 - y0) == single.size
        assert np.array_equal(patch.alpha[y0:y1, x0:x1] >= single.alpha, np.ones_like(single.mask))
    assert boxes[0][2] == boxes[2][2] == patch.alpha.shape[1]  # right-aligned
    # baselines 28 px apart (lines 0 and 2: 56): box top + the line's own baseline
    assert (boxes[2][1] + one[1].baseline) - (boxes[0][1] + one[0].baseline) == 56
    assert patch.baseline == boxes[0][1] + one[0].baseline
    assert np.array_equal(patch.mask, patch.alpha >= 128)
    with pytest.raises(ValueError, match="align"):
        R.truetype_lines(["a"], 10, align="justify")
    with pytest.raises(ValueError, match="non-blank"):
        R.truetype_lines(["", " "], 10)
    with pytest.raises(ValueError, match="narrower"):
        R.truetype_lines(["a long line"], 10, width=5)
