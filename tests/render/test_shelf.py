"""The supermarket shelf of price_sum: shelf geometry, packages, shelf-edge tags, the camera."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from m3gym.tasks import render as R
from m3gym.tasks.registry import get_family, make_task
from m3gym.tasks.render import lookup_scenes as LS
from m3gym.tasks.render import shelf as SH


def test_shelf_rows_are_evenly_spaced_above_the_plinth() -> None:
    # gap = (1000 - 100) / 2 = 450; rail i ends at (i + 1) * 450, 40 px tall
    rows = SH.shelf_rows(1000, 2, 40, 100)
    assert rows == [SH.ShelfRow(top=20, base=414, rail=(410, 450)),
                    SH.ShelfRow(top=470, base=864, rail=(860, 900))]


@pytest.mark.parametrize("args", [(100, 3, 40, 0), (1000, 0, 40, 0), (1000, 2, 3, 0)])
def test_shelf_rows_refuse_what_does_not_fit(args: tuple[int, int, int, int]) -> None:
    with pytest.raises(ValueError):
        SH.shelf_rows(*args)


def _spec(ink_dot: R.Color | None = (206, 40, 40)) -> SH.TagSpec:
    bars = np.full((8, 20, 3), 250, np.uint8)
    bars[:, 4:6] = 20
    return SH.TagSpec("Dekker Oat Milk", "$3.49", 10.0, "sans-bold", (246, 246, 240),
                      (34, 46, 96), ink_dot, bars)


def test_tag_layout_stripe_dot_price_barcode() -> None:
    tag = SH.tag_patch(_spec(), (24, 24, 28))
    rgb = tag.rgb
    # glyph 10: pad max(9, 8) = 9, stripe max(3, 3) = 3, dot max(12, 13) = 13,
    # price from x = 9 + 13 + 8 + 9 // 2 = 34
    assert (rgb[1:3, 1:-1] == (34, 46, 96)).all()
    assert tag.price_box[0] >= 34 and abs(tag.glyph - 10.0) <= 1.0
    x0, y0, x1, y1 = tag.price_box
    assert tag.price_mask.shape == (y1 - y0, x1 - x0) and tag.price_mask.any()
    cy = (y0 + y1) // 2
    assert tuple(rgb[cy, 9 + 13 // 2]) == (206, 40, 40)  # the dot's centre
    assert rgb.shape[1] >= x1 + 9 + 20 + 9  # the barcode right of the price, inside the pad


def test_tag_printed_in_paper_colour_shows_no_print() -> None:
    spec = _spec(None)
    tag = SH.tag_patch(spec, spec.paper)
    inside = tag.rgb[4:-1, 1:-1]
    assert (inside == spec.paper).all()  # name, price and barcode vanish; only stripe and rim


def test_faint_and_strong_tags_share_their_layout() -> None:
    spec = _spec()
    faint = SH.tag_patch(spec, R.faded_color(spec.paper, 10.0))
    strong = SH.tag_patch(spec, R.ink_for(spec.paper))
    assert faint.rgb.shape == strong.rgb.shape and faint.price_box == strong.price_box
    assert (faint.price_mask == strong.price_mask).all()


def test_paste_tag_copies_the_tag_unresampled() -> None:
    img = np.full((200, 300, 3), 120, np.uint8)
    tag = SH.tag_patch(_spec(), (24, 24, 28)).rgb
    box = SH.paste_tag(img, np.random.default_rng(0), tag, (150.4, 100.0))
    th, tw = tag.shape[:2]
    assert box == (round(150.4 - tw / 2), round(100 - th / 2), round(150.4 - tw / 2) + tw,
                   round(100 - th / 2) + th)
    assert (img[box[1]:box[3], box[0]:box[2]] == tag).all()
    edge = SH.paste_tag(img, np.random.default_rng(0), tag, (0.0, 0.0))
    assert edge[:2] == (0, 0)  # clipped into the image


def test_camera_tilt_without_strength_only_removes_the_margin() -> None:
    hom = SH.camera_tilt(np.random.default_rng(0), 400, 300, 20, 0.0)
    corners = np.array([[[0, 0]], [[440, 0]], [[440, 340]], [[0, 340]]], np.float32)
    got = cv2.perspectiveTransform(corners, hom)[:, 0]
    assert np.allclose(got, [[-20, -20], [420, -20], [420, 320], [-20, 320]], atol=1e-3)
    assert SH.warp_point(np.eye(3), (10, 20, 30, 60)) == (20.0, 40.0)
    with pytest.raises(ValueError):
        SH.camera_tilt(np.random.default_rng(0), 400, 300, 20, 1.5)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.0, 1.0))
def test_camera_tilt_always_covers_the_photo(seed: int, strength: float) -> None:
    hom = SH.camera_tilt(np.random.default_rng(seed), 400, 300, 20, strength)
    corners = np.array([[[0, 0]], [[440, 0]], [[440, 340]], [[0, 340]]], np.float32)
    (ax, ay), (bx, by), (cx, cy), (dx, dy) = cv2.perspectiveTransform(corners, hom)[:, 0]
    assert max(ax, dx) < 0 and min(bx, cx) > 400 and max(ay, by) < 0 and min(cy, dy) > 300


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_package_colours_keep_clear_of_every_dot_colour(seed: int) -> None:
    c = np.asarray(SH.package_color(np.random.default_rng(seed), 40, 235), np.float32)
    dots = np.asarray([R.NAMED_COLORS[d] for d in SH.DOT_COLORS], np.float32)
    for seen in (c, 0.75 * c, 0.65 * c + 0.35 * 255.0):
        assert np.linalg.norm(dots - seen, axis=1).min() >= SH.DOT_CLEARANCE


def test_product_names_carry_no_digits() -> None:
    rng = np.random.default_rng(1)
    names = [SH.product_name(rng) for _ in range(40)]
    assert not any(ch.isdigit() for n in names for ch in n)
    assert all(len(n.split()) >= 2 for n in names)


def test_packages_refuse_unknown_kinds_and_low_shelves() -> None:
    with pytest.raises(ValueError, match="unknown package kind"):
        SH.package_look(np.random.default_rng(0), "crate", 300, "Dekker Oat Milk")
    with pytest.raises(ValueError, match="too low"):
        SH.package_look(np.random.default_rng(0), "box", 40, "Dekker Oat Milk")


@pytest.mark.parametrize("kind", SH.PACKAGE_KINDS)
def test_every_package_kind_draws_inside_its_box(kind: str) -> None:
    img = np.full((400, 400, 3), 200, np.uint8)
    look = SH.package_look(np.random.default_rng(3), kind, 300, "Dekker Oat Milk")
    box = SH.draw_package(img, look, 100, 380, True)
    changed = np.argwhere((img != 200).any(axis=2))
    assert changed.size and box[3] == 380
    x0, y0, x1, y1 = R.grow_box(box, 2, 400, 400)  # anti-aliased outlines spill a pixel
    assert y0 <= changed[:, 0].min() and changed[:, 0].max() < y1
    assert x0 <= changed[:, 1].min() and changed[:, 1].max() < x1


def test_price_sum_knobs_at_both_ends() -> None:
    cls = get_family("price_sum")
    assert cls.difficulty_knobs(0.0) == {
        "glyph_range": (12.0, 14.0), "faint_prob": 0.0, "contrast_range": (80.0, 100.0),
        "tags": (4, 5), "talkers": (0, 1), "camera_range": (0.0, 0.15)}
    assert cls.difficulty_knobs(1.0) == {
        "glyph_range": (7.5, 9.0), "faint_prob": 0.8, "contrast_range": (40.0, 50.0),
        "tags": (9, 10), "talkers": (3, 4), "camera_range": (0.4, 0.6)}


@pytest.mark.parametrize("field,value", [("tags", (3, 5)), ("tags", (5, 13)),
                                         ("talkers", (0, 7)), ("camera_range", (0.5, 0.2))])
def test_price_sum_validate_refuses(field: str, value: tuple[float, float]) -> None:
    with pytest.raises(ValueError, match=field):
        get_family("price_sum")(**{field: value}).validate()


@pytest.mark.parametrize("seed", [0, 1])
def test_price_sum_targets_are_dotted_tags_in_opposite_halves(seed: int) -> None:
    task = make_task("price_sum", seed)
    img = np.asarray(task.images[0])
    h, w = img.shape[:2]
    names = [c for c in R.NAMED_COLORS if f"the {c} dot" in task.question]
    assert len(names) == 2 and task.metadata["scene"] == "supermarket_shelf"
    centres = sorted((e.box[0] + e.box[2]) / 2 for e in task.evidence)
    assert centres[0] < w / 2 < centres[1]
    cents = [round(float(p) * 100) for p in task.metadata["prices"]]
    assert task.answer.value == f"{sum(cents) // 100}.{sum(cents) % 100:02d}"
    assert [e.text for e in task.evidence] == [f"${p}" for p in task.metadata["prices"]]
    for ev in task.evidence:  # the named dot sits just left of its price
        x0, y0, x1, y1 = (int(v) for v in ev.box)
        g = ev.glyph_height
        left = img[y0:y1, max(0, x0 - int(3 * g)):x0].reshape(-1, 3).astype(np.float32)
        dist = {c: float(np.linalg.norm(left - R.NAMED_COLORS[c], axis=1).min())
                for c in names}
        assert min(dist.values()) < 40
    assert len(task.reference_calls) == (4 if task.metadata["faint"] else 2)


def test_fallback_print_colours_are_clear_of_every_dot() -> None:
    assert all(SH.dot_clearance(c) >= SH.DOT_CLEARANCE for c in SH.FALLBACK_PRINT)
    # seed 5816 (found by hypothesis) exhausts 30 random draws on a 40-235 range
    assert SH.dot_clearance(SH.package_color(np.random.default_rng(5816), 40, 235)) >= 80.0


# fast paths: each equals the straightforward original computation exactly


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.floats(0.0, 1.0, width=32), min_size=1,
                                             max_size=6))
def test_scale_tables_equal_scaling_in_float32(seed, factors) -> None:
    img = np.random.default_rng(seed).integers(0, 256, (len(factors), 37, 3), dtype=np.uint8)
    f = np.asarray(factors, np.float32)
    tables = SH.scale_table(f)
    fast = np.stack([cv2.LUT(row, table) for row, table in zip(img, tables)])
    assert np.array_equal(fast, (img * f[:, None, None] + 0.5).astype(np.uint8))


def contact_shadow_reference(img: np.ndarray, front: R.Box) -> None:
    """The original: scale the region in float32 and round."""
    x0, y0, x1, y1 = front
    h, w = img.shape[:2]
    off = max(4, (x1 - x0) // 10)
    sx0, sy0, sx1, sy1 = max(0, x0 + off), max(0, y0 + off // 2), min(w, x1 + off), min(h, y1)
    if sx1 > sx0 and sy1 > sy0:
        region = img[sy0:sy1, sx0:sx1].astype(np.float32) * 0.82
        img[sy0:sy1, sx0:sx1] = (region + 0.5).astype(np.uint8)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.tuples(*[st.integers(-60, 260)] * 4))
def test_contact_shadow_equals_scaling_in_float32(seed, front) -> None:
    img = np.random.default_rng(seed).integers(0, 256, (200, 240, 3), dtype=np.uint8)
    fast, slow = img.copy(), img.copy()
    SH._contact_shadow(fast, front)
    contact_shadow_reference(slow, front)
    assert np.array_equal(fast, slow)


def back_panel_reference(img: np.ndarray, rng: np.random.Generator,
                         rows: list[SH.ShelfRow]) -> None:
    """The original back panel: the shadow under every rail a float32 ramp over the band."""
    h, w = img.shape[:2]
    metal = R.jitter_color(rng, (214, 214, 210), 14)
    LS.fill_gradient(img, (0, 0, w, h), LS.shade(metal, 1.04), LS.shade(metal, 0.9))
    step = int(rng.integers(26, 40))
    for dy, dx, dark in ((0, 0, 0.88), (0, 1, 0.88), (1, 0, 0.88), (1, 1, 0.88), (-1, 0, 0.95),
                         (2, 0, 0.95), (0, -1, 0.95), (0, 2, 0.95), (2, 1, 0.95), (1, 2, 0.95)):
        holes = img[step // 2 + dy::step, step // 2 + dx::step]
        holes[:] = (holes * np.float32(dark) + 0.5).astype(np.uint8)
    for r in rows:
        top = r.rail[1]
        depth = max(24, (r.rail[1] - r.top) // 6)
        ramp = np.linspace(0.55, 1.0, depth, dtype=np.float32)[:, None, None]
        band = img[top:min(h, top + depth)]
        band[:] = (band * ramp[:len(band)] + 0.5).astype(np.uint8)
    last = rows[-1].rail[1]
    plinth = R.jitter_color(rng, (52, 52, 56), 10)
    LS.fill_gradient(img, (0, last, w, h), LS.shade(plinth, 0.8), LS.shade(plinth, 1.2))
    post = max(14, w // 70)
    for x0 in (0, w - post):
        LS.fill_gradient(img, (x0, 0, x0 + post, h), (150, 152, 156), (110, 112, 116))
        LS.stroke_rect(img, (x0, 0, x0 + post, h), (80, 80, 84), 1)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3), st.integers(100, 900),
       st.integers(12, 40), st.integers(0, 60))
def test_back_panel_equals_the_float32_original(seed, count, height, rail, kick) -> None:
    assume(height / count >= 3 * rail)
    rows = SH.shelf_rows(height + kick, count, rail, kick)  # the last shadow may pass the edge
    fast, slow = np.zeros((height, 160, 3), np.uint8), np.zeros((height, 160, 3), np.uint8)
    a, b = np.random.default_rng(seed), np.random.default_rng(seed)
    SH.draw_back_panel(fast, a, rows)
    back_panel_reference(slow, b, rows)
    assert np.array_equal(fast, slow)
    assert a.random() == b.random()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31), st.integers(8, 900), st.integers(8, 900), st.floats(0.0, 1.0),
       st.booleans(), st.sampled_from(("noise", "blocks", "flat")))
def test_warp_photo_equals_the_three_channel_warp(seed: int, w: int, h: int, strength: float,
                                                  nearest: bool, texture: str) -> None:
    """The four-channel warp of :func:`SH.warp_photo` gives the plain three-channel bytes."""
    rng = np.random.default_rng(seed)
    margin = int(0.03 * max(w, h)) + int(rng.integers(0, 3))
    shape = (h + 2 * margin, w + 2 * margin, 3)
    canvas = rng.integers(0, 256, shape, dtype=np.uint8)
    if texture == "blocks":
        canvas = np.ascontiguousarray(canvas[::7, ::5].repeat(7, 0).repeat(5, 1)[:shape[0],
                                                                                :shape[1]])
    elif texture == "flat":
        canvas[:] = rng.integers(0, 256, 3, dtype=np.uint8)
        canvas[::3] = 255
    hom = SH.camera_tilt(rng, w, h, margin, strength)
    if rng.random() < 0.3:  # sheared and tilted further: samples reach the replicated border
        hom = hom @ np.array([[1.0, rng.uniform(-0.2, 0.2), 0.0],
                              [rng.uniform(-0.2, 0.2), 1.0, 0.0],
                              [rng.uniform(-1e-4, 1e-4), rng.uniform(-1e-4, 1e-4), 1.0]])
    got = SH.warp_photo(canvas, hom, (w, h), nearest)
    assert got.shape == (h, w, 3) and got.flags.c_contiguous
    plain = cv2.warpPerspective(canvas, hom, (w, h), borderMode=cv2.BORDER_REPLICATE,
                                flags=cv2.INTER_NEAREST if nearest else cv2.INTER_LINEAR)
    np.testing.assert_array_equal(got, plain)



def tag_patch_reference(spec: SH.TagSpec, ink: R.Color) -> SH.TagPatch:
    """The original tag_patch (layout and drawing in one function), kept verbatim."""
    g = spec.glyph
    price = R.truetype_text(spec.price, g, spec.price_face)
    name = LS.text_patch(spec.name, max(3.5, 0.45 * g), "condensed")
    pad = max(9, int(round(0.8 * g)))  # paper round the print: a flood fill goes round it
    stripe = max(3, int(round(0.3 * g)))
    dot = max(12, int(round(1.3 * g))) if spec.dot is not None else 0
    bars_h, bars_w = spec.bars.shape[:2]
    px = pad + (dot + 8 + pad // 2 if dot else 0)  # paper between the dot and the price
    row = stripe + pad // 2 + name.size[1] + max(3, pad // 2)
    tw = max(name.size[0] + 2 * pad, px + price.size[0] + pad + bars_w + pad)
    th = row + price.size[1] + pad
    rgb = np.empty((th, tw, 3), np.uint8)
    rgb[:] = spec.paper
    rgb[:stripe] = spec.stripe
    R.paste_text(rgb, name, pad, stripe + pad // 2, ink)
    placed = R.paste_text(rgb, price, px, row, ink)
    bx, by = tw - pad - bars_w, row + price.size[1] - bars_h
    faded = np.where(spec.bars < 128, np.asarray(ink, np.uint8), np.asarray(spec.paper, np.uint8))
    rgb[by:by + bars_h, bx:bx + bars_w] = faded
    if spec.dot is not None:
        cy = (placed.box[1] + placed.box[3]) // 2
        cv2.circle(rgb, (pad + dot // 2, cy), dot // 2, spec.dot, -1, cv2.LINE_AA)
    cv2.rectangle(rgb, (0, 0), (tw - 1, th - 1), LS.shade(spec.paper, 0.78), 1)
    return SH.TagPatch(rgb, placed.box, placed.mask, float(price.glyph_height))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31), st.floats(7.0, 19.0), st.booleans())
def test_tag_layout_and_patch_equal_the_original(seed: int, glyph: float, dotted: bool) -> None:
    """:func:`SH.tag_layout` (price_sum's rail height) and :func:`SH.tag_patch` match the original."""
    rng = np.random.default_rng(seed)
    spec = SH.tag_spec(rng, SH.product_name(rng), f"${int(rng.integers(0, 50))}.99", glyph,
                       R.pick_font(rng, ("sans-bold", "condensed-bold", "mono-bold", "serif")),
                       (206, 40, 40) if dotted else None)
    ink = (24, 24, 28) if rng.random() < 0.5 else R.faded_color(spec.paper, 45.0)
    want, got = tag_patch_reference(spec, ink), SH.tag_patch(spec, ink)
    np.testing.assert_array_equal(got.rgb, want.rgb)
    np.testing.assert_array_equal(got.price_mask, want.price_mask)
    assert (got.price_box, got.glyph) == (want.price_box, want.glyph)
    assert SH.tag_layout(spec).size == want.rgb.shape[:2]
