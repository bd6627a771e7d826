"""Task-building code shared by the document families (receipts, charts, UI screenshots).

Evidence of text photographed through a homography (:func:`photo_evidence`), evidence of text on
a flat canvas (:func:`flat_evidence`), money formatting and look-alike numeric choices
(:func:`money_choices`, :func:`closed_tail_choices`), and the faded-ink contrast helper.
Randomness comes only from the ``np.random.Generator`` passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from m3gym.spec import Evidence
from m3gym.tasks import render as R
from m3gym.tasks.render import documents as D

Box = tuple[int, int, int, int]


def photo_evidence(evidence_id: str, photo: D.Photo, sheet: D.Sheet, key: str,
                   pad: float, text: str | None, angle: float = 0.0) -> Evidence:
    """Return the evidence of the texts marked ``key`` on ``sheet`` as ``photo`` shows them.

    The box covers the marked texts' sheet box grown by ``pad`` sheet pixels, mapped into the
    scene; ``clean`` is the undegraded full-contrast composite there and ``mask`` the warped
    ink. ``glyph_height`` is the smallest capital height the perspective leaves
    (:func:`documents.mapped_glyph`); ``angle`` the sheet's turn (multiples of 90 degrees).
    """
    h, w = photo.scene.shape[:2]
    box = D.mapped_box(photo.hom, sheet.mark_box(key), w, h, pad)
    x0, y0, x1, y1 = box
    glyph = D.mapped_glyph(photo.hom, sheet.marks[key])
    ev = R.region_evidence(evidence_id, photo.clean[y0:y1, x0:x1], box,
                           photo.masks[key][y0:y1, x0:x1], text=text, glyph_height=glyph,
                           clean_is_region=True)
    if angle == 0.0:
        return ev
    return Evidence(id=ev.id, image=ev.image, box=ev.box, text=ev.text,
                    glyph_height=ev.glyph_height, clean=ev.clean, mask=ev.mask, angle=angle)


def flat_evidence(evidence_id: str, clean: np.ndarray, placed: Sequence[R.PlacedText],
                  pad: int, text: str | None) -> Evidence:
    """Return the evidence of ``placed`` texts drawn flat on ``clean`` (no camera geometry).

    The box is the union of their boxes grown by ``pad`` pixels (clipped to the image); the mask
    holds their ink; ``glyph_height`` is the smallest of theirs.
    """
    h, w = clean.shape[:2]
    box = (max(0, min(p.box[0] for p in placed) - pad), max(0, min(p.box[1] for p in placed) - pad),
           min(w, max(p.box[2] for p in placed) + pad), min(h, max(p.box[3] for p in placed) + pad))
    x0, y0, x1, y1 = box
    mask = np.zeros((y1 - y0, x1 - x0), bool)
    for p in placed:
        px0, py0, px1, py1 = p.box
        mask[py0 - y0:py1 - y0, px0 - x0:px1 - x0] |= p.mask
    return R.region_evidence(evidence_id, clean[y0:y1, x0:x1], box, mask, text=text,
                             glyph_height=min(p.glyph_height for p in placed),
                             clean_is_region=True)


def money(cents: int) -> str:
    """Return ``cents`` as a plain decimal amount: ``1249`` → ``"12.49"`` (sign kept)."""
    sign = "-" if cents < 0 else ""
    c = abs(int(cents))
    return f"{sign}{c // 100}.{c % 100:02d}"


DIGIT_CYCLE: str = "0865392741"
"""Digits in a cycle of look-alikes at a few pixels (round 0-8-6-5-3-9, then 2-7-4-1): each
digit's two neighbours are the ones it is most easily misread as."""

ROUND_DIGITS: tuple[int, ...] = (0, 3, 5, 6, 8, 9)
"""Digits that are blobs of the same shape at two or three pixels: the last digits a battery or
setting value's choices vary (:func:`round_choices`)."""


def digit_lookalikes(cents: int) -> list[int]:
    """Return the amounts one digit of ``cents`` away along :data:`DIGIT_CYCLE` (no leading 0).

    Every option differs from the amount in one digit that looks alike when downscaled, so
    template matching at view size cannot tell them apart; the edit graph is (nearly) regular.
    """
    text = f"{abs(int(cents)):03d}"
    out = []
    for i, ch in enumerate(text):
        k = DIGIT_CYCLE.index(ch)
        for d in (DIGIT_CYCLE[k - 1], DIGIT_CYCLE[(k + 1) % len(DIGIT_CYCLE)]):
            cand = text[:i] + d + text[i + 1:]
            if cand[0] == "0" and len(text) > 3:
                continue
            out.append(int(cand))
    return [v for v in out if v > 0]


def money_choices(rng: np.random.Generator, cents: int, count: int = 6) -> tuple[str, ...]:
    """Return ``count`` shuffled amounts: the answer and look-alike digit edits of a pivot.

    The pivot (a hidden look-alike of the answer) is the centre of the options, so no statistic
    of the option strings singles out the answer (:func:`render.pivot_choices`).
    """
    return R.pivot_choices(rng, cents, digit_lookalikes, count, fmt=money)


CLOSED_DIGITS: tuple[int, ...] = (0, 6, 8)
"""Round digits closed on the left: the same blob at two pixels. The template-matching
view-only probe tells a tenth of 3, 5 or 9 from the others above chance at 1.7-2.2 px (their
open left side), but not 0, 6 and 8 (``m3gym audit-leaks --family chart_value``)."""


def closed_tail_value(rng: np.random.Generator, low: int, high: int) -> int:
    """Return ``100 * u + 10 * a + b``: ``u`` in ``[low, high]``, ``a`` and ``b`` closed digits.

    The last two digits are drawn from :data:`CLOSED_DIGITS`, the values
    :func:`closed_tail_choices` offers look-alike options for (a chart value in hundredths, an
    unread count).
    """
    return (100 * int(rng.integers(low, high + 1))
            + 10 * int(CLOSED_DIGITS[int(rng.integers(len(CLOSED_DIGITS)))])
            + int(CLOSED_DIGITS[int(rng.integers(len(CLOSED_DIGITS)))]))


def closed_tail_choices(rng: np.random.Generator, value: int,
                        fmt: Callable[[int], str] = str) -> tuple[str, ...]:
    """Return six values (``fmt``-formatted) differing from ``value`` in closed last digits.

    ``value`` (non-negative) must end in two :data:`CLOSED_DIGITS`. The options are every closed
    second-to-last digit times two closed last digits: ``value``'s and one other drawn
    uniformly, so each of the pair is the answer's equally often and no statistic of the set
    singles out the answer. In hundredths they lie within 0.9 units (under a pixel of bar
    height).
    """
    tens, last = value // 10 % 10, value % 10
    if value < 0 or tens not in CLOSED_DIGITS or last not in CLOSED_DIGITS:
        raise ValueError(f"{value} does not end in two of {CLOSED_DIGITS}")
    others = [d for d in CLOSED_DIGITS if d != last]
    pair = sorted((last, others[int(rng.integers(len(others)))]))
    base = value - value % 100
    return R.shuffled(rng, [fmt(base + 10 * t + u) for t in CLOSED_DIGITS for u in pair])


def round_value(rng: np.random.Generator, low: int, high: int) -> int:
    """Return a value whose tens lie in ``[low // 10, high // 10]``, ending in a round digit.

    The last digit is one of :data:`ROUND_DIGITS`: the kind of value :func:`round_choices`
    offers look-alike options for.
    """
    return 10 * int(rng.integers(low // 10, high // 10 + 1)) + int(
        ROUND_DIGITS[int(rng.integers(len(ROUND_DIGITS)))])


def round_choices(rng: np.random.Generator, value: int) -> tuple[str, ...]:
    """Return the six integers sharing ``value``'s tens with each :data:`ROUND_DIGITS` last digit.

    The options differ only in a last digit that looks alike at view size; the set is the same
    whichever of them is the answer.
    """
    if value % 10 not in ROUND_DIGITS:
        raise ValueError(f"{value} does not end in one of {ROUND_DIGITS}")
    return R.shuffled(rng, [str(value - value % 10 + d) for d in ROUND_DIGITS])


def faded_keep(paper: R.Color, ink: R.Color, contrast: float) -> float:
    """Return the share of ink contrast to keep so ink sits ``contrast`` gray levels off paper."""
    full = abs(R.luminance(paper) - R.luminance(ink))
    return float(np.clip(contrast / max(full, 1.0), 0.0, 1.0))
