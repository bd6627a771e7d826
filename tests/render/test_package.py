"""The render package: every public name re-exported, one ``to_gray`` for the whole project."""

import re
from pathlib import Path

import numpy as np
import pytest

from m3gym.tasks import render as R

ROOT = Path(__file__).resolve().parents[2]

# the public names of the single-module render.py (commit cafeb78) that families, agents,
# audits and tests use as ``R.<name>``
OLD_PUBLIC = """
ALL_FACES BACKGROUND_DETAIL BACKGROUND_KINDS Box CLUTTER_KINDS CODE_DIGITS CODE_LETTERS
CODE_PATTERNS CONFUSABLE_CYCLES Color DISTRACTOR_WORDS NAMED_COLORS NOISE_TILE_SHAPE PlacedText
READABLE_FACES TextPatch VIEW_SIZE add_clutter add_distractor_labels add_sensor_noise
autocontrast_luts autocontrast_pil background bbox1000_to_box box_to_bbox1000 boxes_overlap
cap_height_at_unit_scale code_choices code_variants compress_dynamic_range confusable_edits
confusable_neighbours crop_zoom_for draw_text embed_mask faded_color fake_photo find_free_spot
freeze grow_box ink_for ink_surround_contrast jitter_color jpeg_artifacts lighting_field luminance
mild_blur near_miss_codes paste_text pick pivot_choices position_phrase rand_color random_code
random_font region_evidence render_text shuffled single_edits solid_image to_gray value_window
view_scale vignette_field window_choices
""".split()

NEW_API = """
FONT_FACES pick_font truetype_text FAKER_LOCALES fake fake_person fake_company fake_address
fake_product fake_date fake_id perspective_quad warp_patch uneven_lighting soft_shadow lens_blur
motion_blur camera_pipeline
""".split()


def test_every_old_and_new_name_is_exported():
    missing = [n for n in OLD_PUBLIC + NEW_API if not hasattr(R, n)]
    assert missing == []
    assert sorted(set(R.__all__)) == sorted(R.__all__)  # no duplicates
    assert all(hasattr(R, n) for n in R.__all__)
    assert set(OLD_PUBLIC + NEW_API) <= set(R.__all__)


def test_one_to_gray_in_the_project():
    sources = [p for p in (ROOT / "m3gym").rglob("*.py")]
    defs = [p.relative_to(ROOT).as_posix() for p in sources
            if re.search(r"^def (to_gray|_gray)\(", p.read_text(), re.M)]
    assert defs == ["m3gym/pixels.py"]
    from m3gym.agents import ocr
    from m3gym.scoring import legibility
    from m3gym.tools import visual
    assert legibility.to_gray is R.to_gray and visual.to_gray is R.to_gray
    assert ocr.to_gray is R.to_gray


def test_to_gray_values_by_hand():
    img = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 20, 30]]], np.uint8)
    # 0.299*255 = 76.2, 0.587*255 = 149.7, 0.114*255 = 29.1, 2.99+11.74+3.42 = 18.15
    assert R.to_gray(img).tolist() == [[76, 150, 29, 18]]
    rgba = np.concatenate([img, np.full((1, 4, 1), 7, np.uint8)], axis=2)
    assert R.to_gray(rgba).tolist() == [[76, 150, 29, 18]]
    gray = np.arange(6, dtype=np.uint8).reshape(2, 3)
    assert R.to_gray(gray) is gray
    assert R.to_gray(gray[..., None]).tolist() == gray.tolist()
    wide = np.random.default_rng(0).integers(0, 256, (5, 8, 3), dtype=np.uint8)
    assert np.array_equal(R.to_gray(wide[:, ::2]), R.to_gray(np.ascontiguousarray(wide[:, ::2])))
    with pytest.raises(ValueError, match="gray, RGB or RGBA"):
        R.to_gray(np.zeros((2, 2, 2), np.uint8))
