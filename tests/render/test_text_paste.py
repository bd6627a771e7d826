"""paste_text's lookup over one-colour paper gives the bytes of OpenCV's blend.

``_paste_reference`` is a verbatim copy of ``paste_text``'s compositing before the lookup
(commit b73a973). The lookup relies on ``cv2.blendLinear`` being a function of the ink colour,
coverage and pixel alone, whatever the pixel's position or the image's width (its vector and
scalar loops agree): checked here for every colour, coverage and pixel value.
"""

import cv2
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.cache import LRUCache
from m3gym.tasks.render import text as T
from m3gym.tasks.render.util import luminance, solid_image
from m3gym.typeface import TextPatch


def _paste_reference(img: np.ndarray, patch: TextPatch, x: int, y: int, color) -> None:
    """``paste_text``'s compositing as it was (b73a973)."""
    w, h = patch.size
    region = img[y:y + h, x:x + w]
    a = patch.alpha.astype(np.float32)
    a *= np.float32(1.0 / 255.0)
    solid = (solid_image(h, w, color, region.dtype) if region.ndim == 3
             else np.full((h, w), round(luminance(color)), region.dtype))
    cv2.blendLinear(solid, region, a, np.float32(1.0) - a, dst=region)


def _patch(alpha: np.ndarray) -> TextPatch:
    return TextPatch(text="x", alpha=alpha, mask=alpha >= 128, glyph_height=10.0, baseline=None)


def _blend_all(width: int, offset: int) -> np.ndarray:
    """``table[c, a, r]``: blendLinear of colour c, coverage a over pixel r, laid out ``width``
    pixels a row in a wider image (``offset`` pixels in)."""
    a, r, j = (v.ravel() for v in np.meshgrid(np.arange(256), np.arange(256), np.arange(86),
                                              indexing="ij"))
    colours = np.minimum(3 * j[:, None] + np.arange(3), 255)  # pixel j, channel k: 3j + k
    n = a.size
    rows = -(-n // width)
    src = np.zeros((rows * width, 3), np.uint8)
    reg = np.zeros((rows * width, 3), np.uint8)
    cov = np.zeros(rows * width, np.uint8)
    src[:n], reg[:n], cov[:n] = colours, r[:, None], a
    big = np.zeros((rows, width + offset + 3, 3), np.uint8)
    view = big[:, offset:offset + width]
    view[:] = reg.reshape(rows, width, 3)
    w = cov.reshape(rows, width).astype(np.float32)
    w *= np.float32(1.0 / 255.0)
    cv2.blendLinear(src.reshape(rows, width, 3), view, w, np.float32(1.0) - w, dst=view)
    out = view.reshape(-1, 3)[:n]
    table = np.zeros((256, 256, 256), np.uint8)
    table[colours, a[:, None], r[:, None]] = out
    return table


def test_opencvs_blend_is_the_same_wherever_a_pixel_lands():
    ref = _blend_all(4096, 0)
    for width, offset in ((1, 0), (7, 1), (31, 2), (64, 5), (1000, 3)):
        assert np.array_equal(_blend_all(width, offset), ref), (width, offset)
    a = np.arange(256)
    assert np.array_equal(ref[:, 0, :], np.broadcast_to(a, (256, 256)))  # no ink: unchanged


COLOR = st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(0, 255))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 300), COLOR, COLOR,
       st.sampled_from(["plain", "noisy", "one-off", "gray", "mirrored", "read-only"]))
def test_paste_text_equals_opencvs_blend(seed, h, w, ink, paper, kind):
    rng = np.random.default_rng(seed)
    alpha = rng.integers(0, 256, (h, w), dtype=np.uint8)
    alpha[rng.random((h, w)) < 0.5] = 0
    H, W = h + int(rng.integers(0, 9)), w + int(rng.integers(0, 9))
    x, y = int(rng.integers(0, W - w + 1)), int(rng.integers(0, H - h + 1))
    base = solid_image(H, W, paper)
    if kind == "noisy":
        base = rng.integers(0, 256, base.shape, dtype=np.uint8)
    elif kind == "one-off":  # one pixel under the patch differs from the paper
        base[y + int(rng.integers(0, h)), x + int(rng.integers(0, w)), int(rng.integers(0, 3))] ^= 1
    elif kind == "gray":
        base = np.ascontiguousarray(base[:, :, 0])
    color = tuple(float(v) for v in ink) if seed % 2 else ink
    patch = _patch(alpha)
    # twice: a first print of an ink on a paper is blended, later ones looked up in its table
    for _ in range(2):
        start, ref_base = base.copy(), base.copy()
        # a mirrored view is one OpenCV cannot write through: whatever the blend did, the same
        img, ref = (start[:, ::-1], ref_base[:, ::-1]) if kind == "mirrored" else (start, ref_base)
        if kind == "read-only":
            img.flags.writeable = ref.flags.writeable = False
        outcome = []
        for fn, target in ((_paste_reference, ref), (T.paste_text, img)):
            try:
                placed = fn(target, patch, x, y, color)
                outcome.append(None)
            except Exception as e:  # noqa: BLE001 - the same failure either way
                outcome.append(type(e))
        assert outcome[0] == outcome[1]
        assert np.array_equal(start, ref_base)
        if outcome[1] is None:
            assert placed.box == (x, y, x + w, y + h) and placed.mask is patch.mask


def test_a_second_print_of_an_ink_on_a_paper_is_looked_up(monkeypatch):
    """The first print of a pair is blended (no table made), the second uses the table."""
    monkeypatch.setattr(T, "_SEEN", LRUCache(4))
    monkeypatch.setattr(T, "_TABLES", LRUCache(4))
    ink, paper = (12, 34, 56), (250, 249, 247)
    key = (ink, paper)
    alpha = np.arange(64, dtype=np.uint8).reshape(4, 16) * 4
    want = solid_image(6, 20, paper)
    _paste_reference(want, _patch(alpha), 2, 1, ink)
    for k in range(3):
        img = solid_image(6, 20, paper)
        T.paste_text(img, _patch(alpha), 2, 1, ink)
        assert np.array_equal(img, want)
        assert (T._TABLES.lookup(key) is not None) == (k >= 1)


def _plain(region):
    """The colour of a region that is all one colour (what paste_text looks up), else None."""
    paper = T._first_row_colour(region)
    return paper if paper is not None and T._all_paper(region, paper) else None


def test_a_plain_region_is_recognised_and_a_big_one_left_to_the_blend():
    img = solid_image(20, 50, (240, 235, 230))
    assert _plain(img[2:10, 3:40]) == (240, 235, 230)
    img[5, 20, 1] = 0
    assert _plain(img[2:10, 3:40]) is None
    assert _plain(img[11:20, 3:40]) == (240, 235, 230)
    big = solid_image(T.PLAIN_MAX_SIZE[0] + 1, 8, (1, 2, 3))
    assert _plain(big) is None
