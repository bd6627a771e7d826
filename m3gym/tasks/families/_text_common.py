"""Task-building code shared by the text families and the classic glyph families.

Used by ``tiny_text``, ``rotated_text``, ``faint_text``, ``tiny_faint_text`` and (orientation
and shading helpers) the classic ``glyph_rotate`` and ``glyph_faint``.

Every text task asks for a code (see :func:`m3gym.tasks.render.random_code`) and offers six
choices built by :func:`view_lookalike_codes`: codes whose renders *at the agent's view
resolution* are near-identical, with the answer a uniformly random member of the set, so neither
the layout of the choices nor the reset view singles it out.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import cv2
import numpy as np

from m3gym.spec import AnswerSpec, Checkpoint, Evidence, RefCall, Task
from m3gym.tasks import render as R
from m3gym.tasks.registry import FamilyConfig

MIN_VIEW_HEIGHT: float = Evidence.min_view_height
MIN_CONTRAST: float = Evidence.min_contrast


def answer_spec(code: str) -> AnswerSpec:
    """Return the exact-match answer for a code with its separator-free/spaced variants."""
    return AnswerSpec(value=code, variants=R.code_variants(code))


def l1_task(
    family: FamilyConfig, domain: str, image: np.ndarray, question: str, code: str,
    choices: tuple[str, ...], call: RefCall, evidence: Evidence,
    checkpoints: tuple[Checkpoint, ...], metadata: dict[str, Any],
) -> Task:
    """Assemble a level-1 task (the task id is set by :func:`~m3gym.tasks.registry.make_task`)."""
    image = R.freeze(image)
    h, w = image.shape[:2]
    meta = {
        "level": 1, "family": family.name, "domain": domain,
        "evidence_area_fraction": evidence.area / float(h * w), "view_size": R.VIEW_SIZE,
        "image_size": [w, h], **metadata,
    }
    return Task(
        task_id=f"{family.name}/0", family=family.name, level=1, domain=domain, images=(image,),
        question=question, answer=answer_spec(code), reference=((call,),), evidence=(evidence,),
        checkpoints=checkpoints, choices=choices, capabilities=("visual_grounding",),
        metadata=meta,
    )


BOLD_FACES: tuple[str, ...] = tuple(f for f in R.FONT_FACES if f.endswith("-bold"))
"""The bold TrueType faces (titles, prices, brands)."""


def fake_brand(rng: np.random.Generator) -> str:
    """Return a fictional brand: the first word of a faker company in a random locale."""
    company = R.fake_company(rng, R.pick(rng, R.FAKER_LOCALES), ascii_only=True)
    word = company.replace(",", " ").replace("-", " ").split()[0]
    return word.upper() if rng.random() < 0.4 else word


FIELD_NAMES: tuple[str, ...] = ("REF", "LOT", "SN", "SKU", "PN", "BATCH")
"""Field names printed before the codes of a sticker or label (the question names one)."""


def crop_for(
    box: R.Box, margin: int, width: int, height: int, glyph: float,
) -> tuple[list[int], float]:
    """Return a 0–1000 ``bbox_2d`` covering ``box`` (plus ``margin``) and a legible zoom.

    The margin shrinks until some zoom in 1..5 shows ``glyph`` at >= 1.5x the legible height.
    """
    while True:
        grown = R.grow_box(box, margin, width, height)
        bbox = R.box_to_bbox1000(grown, width, height)
        x0, y0, x1, y1 = R.bbox1000_to_box(bbox, width, height)
        zoom = R.crop_zoom_for((x1 - x0, y1 - y0), glyph, MIN_VIEW_HEIGHT)
        if zoom is not None or margin == 0:
            if zoom is None:  # pragma: no cover - stickers are far smaller than 768/1.5 glyphs
                raise RuntimeError("sticker too large for a legible crop")
            return bbox, zoom
        margin //= 2



TRANSFORMS: tuple[str, ...] = ("rot90", "rot180", "rot270", "flip_h", "flip_v")
"""How ``rotated_text`` distorts the scene: rotations counter-clockwise, or mirror flips."""
EVIDENCE_ORIENTATION: dict[str, tuple[float, bool]] = {
    # transform -> (Evidence.angle, Evidence.mirrored): mirror first, then rotate CCW
    "rot90": (90.0, False), "rot180": (180.0, False), "rot270": (-90.0, False),
    "flip_h": (0.0, True), "flip_v": (180.0, True),
}


def upright_call(transform: str) -> RefCall:
    """Return the one call that makes an image distorted by ``transform`` upright again."""
    if transform.startswith("rot"):
        angle = {"rot90": -90, "rot180": 180, "rot270": 90}[transform]
        return RefCall("c1", "rotate", {"image_index": 0, "angle": angle, "expand": True})
    direction = {"flip_h": "horizontal", "flip_v": "vertical"}[transform]
    return RefCall("c1", "flip", {"image_index": 0, "direction": direction})


def apply_transform(img: np.ndarray, transform: str) -> np.ndarray:
    """Return ``img`` rotated counter-clockwise (``rotN``) or mirrored (``flip_h``/``flip_v``)."""
    ops = {
        "rot90": lambda a: cv2.rotate(a, cv2.ROTATE_90_COUNTERCLOCKWISE),
        "rot180": lambda a: cv2.rotate(a, cv2.ROTATE_180),
        "rot270": lambda a: cv2.rotate(a, cv2.ROTATE_90_CLOCKWISE),
        "flip_h": lambda a: cv2.flip(a, 1),
        "flip_v": lambda a: cv2.flip(a, 0),
    }
    return ops[transform](img)


def transform_box(box: R.Box, transform: str, width: int, height: int) -> R.Box:
    """Return where ``box`` of a ``width`` x ``height`` image lands after ``transform``."""
    x0, y0, x1, y1 = box
    if transform == "rot90":
        return (y0, width - x1, y1, width - x0)
    if transform == "rot180":
        return (width - x1, height - y1, width - x0, height - y0)
    if transform == "rot270":
        return (height - y1, x0, height - y0, x1)
    if transform == "flip_h":
        return (width - x1, y0, width - x0, y1)
    if transform == "flip_v":
        return (x0, height - y1, x1, height - y0)
    raise ValueError(f"unknown transform {transform!r}")


def shading_field(rng: np.random.Generator, height: int, width: int,
                   depth: float) -> np.ndarray:
    """Return an ``uint8`` lighting offset of ``depth`` levels peak to peak (0..depth).

    Soft bands of light and shade (a curled page under a lamp): a sinusoid with a period of
    0.25-0.4 page sides in a random direction plus a weaker linear ramp in another. Computed on
    an 1/8-size grid and resized (linear), so it is smooth at every glyph scale.
    """
    gh, gw = max(2, height // 8), max(2, width // 8)
    ys = np.linspace(-0.5, 0.5, gh, dtype=np.float32)[:, None]
    xs = np.linspace(-0.5, 0.5, gw, dtype=np.float32)[None, :]
    ramp_dir, band_dir, phase = rng.uniform(0.0, 2.0 * np.pi, size=3)
    period = float(rng.uniform(0.25, 0.4))
    ramp = np.cos(ramp_dir) * xs + np.sin(ramp_dir) * ys
    across = np.cos(band_dir) * xs + np.sin(band_dir) * ys
    field = 0.4 * ramp + np.sin(across * np.float32(2.0 * np.pi / period) + np.float32(phase))
    lo, hi = float(field.min()), float(field.max())
    field = cv2.convertScaleAbs(field, alpha=depth / max(hi - lo, 1e-6),
                                beta=-lo * depth / max(hi - lo, 1e-6))
    return cv2.resize(field, (width, height), interpolation=cv2.INTER_LINEAR)


# --------------------------------------------------------------------------------------------
# choices that look alike at view resolution

Face = str
"""A text face: a TrueType face name (:data:`R.FONT_FACES`; the Hershey faces are retired)."""

GROUP_POOL: int = 6
"""Look-alike groups :func:`lookalike_groups` offers per size (the most alike, best first)."""


def text_patch(text: str, glyph_height: float, face: Face, thickness: int = 1) -> R.TextPatch:
    """Render ``text`` in TrueType face ``face``, ``glyph_height`` tall.

    ``thickness`` only reaches :func:`R.render_text` for a face that is not a name (which raises:
    the Hershey stroke faces are retired); TrueType faces take their weight from the face.
    """
    if isinstance(face, str):
        return R.truetype_text(text, glyph_height, face)
    return R.render_text(text, glyph_height, face, thickness)


def bold_face(face: str) -> str:
    """Return the bold variant of TrueType face ``face`` (itself when bold or without one)."""
    bold = face if face.endswith("-bold") else f"{face}-bold"
    return bold if bold in R.FONT_FACES else face


def view_render(text: str, glyph_height: float, face: Face, scale: float, width: int,
                phase: float = 0.0, thickness: int = 1) -> np.ndarray:
    """Return ``text``'s coverage (0..1) left-aligned on a canvas ``width`` px wide, downscaled.

    The canvas is ``2 * glyph_height`` tall and the ink sits ``phase`` source pixels right of
    its left edge, then the canvas is shrunk by ``scale`` with ``INTER_AREA`` (what the view
    does). Strings of different advance widths shift what follows them, which shows here.
    """
    alpha = text_patch(text, glyph_height, face, thickness).alpha.astype(np.float32) / 255.0
    h = int(glyph_height * 2) + 4
    canvas = np.zeros((h, width), np.float32)
    ah, aw = alpha.shape
    ah, aw = min(ah, h - 2), min(aw, width - 4)
    canvas[2:2 + ah, 2:2 + aw] = alpha[:ah, :aw]
    if phase:
        canvas = cv2.warpAffine(canvas, np.float32([[1, 0, phase], [0, 1, phase]]), (width, h))
    size = (max(1, round(width * scale)), max(1, round(h * scale)))
    return cv2.resize(canvas, size, interpolation=cv2.INTER_AREA)


@lru_cache(maxsize=256)
def char_view_distances(alphabet: str, face: Face, glyph_height: float, scale: float,
                        thickness: int = 1) -> np.ndarray:
    """Return the ``(n, n)`` RMS distance of the characters of ``alphabet`` seen at ``scale``.

    Each character is rendered between two capital "H" (so a narrower or wider glyph moves what
    follows it), downscaled like the view at sub-pixel phases 0 and half a view pixel, and
    compared: the mean root-mean-square coverage difference (0..1). The diagonal is the phase
    jitter of a glyph against itself.
    """
    width = int(glyph_height * 4) + 12
    phases = (0.0, 0.5 / max(scale, 1e-3))
    views = {p: np.stack([view_render(f"H{c}H", glyph_height, face, scale, width, p, thickness)
                          for c in alphabet]) for p in phases}
    ref = views[0.0]
    total = np.zeros((len(alphabet), len(alphabet)))
    for p in phases:
        diff = views[p][:, None] - ref[None, :]
        total += np.sqrt((diff ** 2).mean(axis=(2, 3)))
    total /= len(phases)
    return (total + total.T) / 2.0


@lru_cache(maxsize=256)
def lookalike_groups(alphabet: str, size: int, face: Face, glyph_height: float, scale: float,
                     thickness: int = 1) -> tuple[str, ...]:
    """Return the :data:`GROUP_POOL` groups of ``size`` characters most alike at ``scale``.

    A group's spread is the largest view distance (:func:`char_view_distances`) between two of
    its members; the groups are sorted by spread (ties by the characters).
    """
    if not 1 <= size <= len(alphabet):
        raise ValueError(f"cannot take groups of {size} from {len(alphabet)} characters")
    d = char_view_distances(alphabet, face, glyph_height, scale, thickness)
    combos = _combinations(len(alphabet), size)
    spread = np.zeros(len(combos))
    for a, b in itertools.combinations(range(size), 2):  # the largest pairwise distance
        np.maximum(spread, d[combos[:, a], combos[:, b]], out=spread)
    # Only groups near the GROUP_POOL smallest spreads can make the pool once the spreads are
    # rounded to 9 decimals (rounding moves a value by at most 5e-10 and keeps the order), so
    # only those are rounded and sorted: the result is that of sorting every group.
    limit = np.partition(spread, min(GROUP_POOL, len(spread)) - 1)[min(GROUP_POOL,
                                                                        len(spread)) - 1]
    near = np.flatnonzero(spread <= limit + 1e-8)
    scored = sorted((round(float(spread[k]), 9), "".join(alphabet[i] for i in combos[k]))
                    for k in near)
    return tuple(g for _, g in scored[:GROUP_POOL])


@lru_cache(maxsize=64)
def _combinations(n: int, size: int) -> np.ndarray:
    """Return every ``size``-combination of ``range(n)``, in :func:`itertools.combinations` order.

    A read-only ``(count, size)`` array.
    """
    combos = np.array(list(itertools.combinations(range(n), size)), np.intp).reshape(-1, size)
    combos.flags.writeable = False
    return combos


def group_sizes(count: int) -> tuple[int, ...]:
    """Return the sizes of the look-alike groups whose product set has ``count`` codes.

    Factors of at most 4 where possible (6 -> (3, 2), 4 -> (2, 2), 8 -> (4, 2)); a prime above 4
    is one group of that size.
    """
    if count < 2:
        raise ValueError("need at least 2 choices")
    sizes: list[int] = []
    rest = count
    for f in (4, 3, 2):
        while rest % f == 0 and rest > 1:
            sizes.append(f)
            rest //= f
    if rest > 1:
        sizes.append(rest)
    return tuple(sorted(sizes, reverse=True))


def lookalike_product(
    rng: np.random.Generator, base: str, alphabets: Mapping[int, str], face: Face,
    glyph_height: float, scale: float, count: int = 6, thickness: int = 1,
) -> tuple[str, ...] | None:
    """Return ``count`` variants of ``base`` that look alike at view resolution (product order).

    At ``len(group_sizes(count))`` random positions among ``alphabets`` (position -> the
    characters that may stand there), ``base`` gets a group of characters that are near-identical
    once drawn in ``face`` at ``glyph_height`` and shrunk by ``scale`` (:func:`lookalike_groups`,
    one of the most alike groups drawn at random). The variants are the product set of the
    groups, so every one differs from every other only in look-alike characters, and no statistic
    of the set singles out any member. ``None`` when ``base`` has too few editable positions.
    Glyph height and scale are rounded (0.25 px, 0.01) for the cached distance tables.
    """
    sizes = group_sizes(count)
    positions = list(alphabets)  # the caller's order: the draws depend on it
    if len(positions) < len(sizes):
        return None
    glyph_q, scale_q = round(glyph_height * 4) / 4, round(scale, 2)
    picked = [positions[int(i)] for i in rng.permutation(len(positions))[:len(sizes)]]
    groups = []
    for pos, k in zip(picked, sizes):
        pool = lookalike_groups(alphabets[pos], k, face, glyph_q, scale_q, thickness)
        groups.append(pool[int(rng.integers(len(pool)))])
    variants = []
    for combo in itertools.product(*groups):
        chars = list(base)
        for pos, ch in zip(picked, combo):
            chars[pos] = ch
        variants.append("".join(chars))
    return tuple(variants)


def view_lookalike_codes(
    rng: np.random.Generator, face: Face, glyph_height: float, scale: float, count: int = 6,
    exclude: Sequence[str] = (), pattern: str | None = None, thickness: int = 1,
) -> tuple[str, tuple[str, ...]]:
    """Return ``(answer, choices)``: ``count`` codes that look alike at view resolution.

    A base code (:func:`m3gym.tasks.render.random_code`) is varied by :func:`lookalike_product`
    at its letter and digit positions (letters among letters, digits among digits); the answer
    is a uniformly random member drawn *after* the set, so no statistic of the options singles
    it out.
    """
    banned = set(exclude)
    for _ in range(50):
        base = R.random_code(rng, pattern)
        alphabets = {i: R.CODE_LETTERS for i, c in enumerate(base) if c in R.CODE_LETTERS}
        alphabets.update({i: R.CODE_DIGITS for i, c in enumerate(base) if c in R.CODE_DIGITS})
        codes = lookalike_product(rng, base, alphabets, face, glyph_height, scale, count,
                                  thickness)
        if codes is not None and banned.isdisjoint(codes):
            choices = R.shuffled(rng, codes)
            return choices[int(rng.integers(len(choices)))], choices
    raise ValueError("could not build look-alike choices outside the excluded codes")


HIDDEN_INK_DEPTH: int = 2
"""Gray levels each dot of :func:`hidden_ink` lies below its paper."""


def hidden_ink_offsets(k: int) -> tuple[tuple[int, int], ...]:
    """Return the ``(row, col)`` dots, inside each ``k x k`` block, that :func:`hidden_ink` darkens.

    ``floor(k^2 / 4)`` dots of depth :data:`HIDDEN_INK_DEPTH` spread over the block: their mass
    (at most ``k^2 / 2`` levels x pixels) moves the block's mean by at most half a level, which
    the view's block mean (``INTER_AREA`` at factor ``k``, rounded half up) rounds away.
    """
    if k < 2:
        raise ValueError("hidden ink needs a view block factor of at least 2")
    n = k * k // 4
    cells = [int(round(i * k * k / n)) for i in range(n)]
    return tuple((c // k, c % k) for c in cells)


def hidden_ink(img: np.ndarray, mask: np.ndarray, x: int, y: int, k: int) -> np.ndarray:
    """Darken ``img`` (in place) under ``mask`` at ``(x, y)`` with dots the view rounds away.

    The dots (:func:`hidden_ink_offsets`) tile the image's own ``k x k`` block grid (the grid of
    :func:`m3gym.view.area_downscale`, from the image origin), so on flat paper every block of
    the view keeps its paper level exactly: the ink is not in the view at all. A contrast
    stretch of the full-resolution image (before the downscale) turns each dot into a large
    step that survives the block mean. Returns the boolean map of the darkened pixels (the
    mask's frame).
    """
    h, w = mask.shape[:2]
    ys, xs = np.mgrid[y:y + h, x:x + w]
    dots = np.zeros((h, w), bool)
    for r, c in hidden_ink_offsets(k):
        dots |= (ys % k == r) & (xs % k == c)
    dots &= mask.astype(bool)
    region = img[y:y + h, x:x + w]
    region[dots] -= np.uint8(HIDDEN_INK_DEPTH)
    return dots


SURFACE_GAIN: float = 0.7
"""Gain on the table of an overexposed scene (``faint_text``, ``glyph_faint``) before its range
is compressed to at most 3 levels: the table (at most 178) lands below the paper's top level,
so the paper is the lightest level and a contrast stretch always has a range to stretch."""
