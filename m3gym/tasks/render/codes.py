"""Codes and answer options.

:func:`random_code` ("K7-4F2" style, without the confusable O/0, I/1, S/5, Z/2, B/8, Q, L),
look-alike choices (:func:`code_choices` on :data:`CONFUSABLE_CYCLES`) and numeric windows
(:func:`value_window`, :func:`window_choices`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from m3gym.tasks.render.util import shuffled

CODE_LETTERS: str = "ACDEFGHJKMNPRTUVWXY"
"""Letters used in codes: no O, I, L, Q, S, Z, B (confusable with 0, 1, 5, 2, 8)."""



CODE_DIGITS: str = "2345679"
"""Digits used in codes: no 0, 1 (O, I), no 8 (B)."""



CODE_PATTERNS: tuple[str, ...] = ("LD-DLD", "LL-DDDD", "LDL-DD", "DLL-DDL", "LL-DLD", "LDD-LDL")
"""Code layouts: ``L`` letter, ``D`` digit, anything else literal."""



def random_code(rng: np.random.Generator, pattern: str | None = None) -> str:
    """Return a random code such as ``"K7-4F2"`` following ``pattern`` (random if ``None``)."""
    if pattern is None:
        pattern = CODE_PATTERNS[int(rng.integers(len(CODE_PATTERNS)))]
    chars = []
    for p in pattern:
        if p == "L":
            chars.append(CODE_LETTERS[int(rng.integers(len(CODE_LETTERS)))])
        elif p == "D":
            chars.append(CODE_DIGITS[int(rng.integers(len(CODE_DIGITS)))])
        else:
            chars.append(p)
    return "".join(chars)



def _mutable_positions(code: str) -> list[int]:
    return [i for i, c in enumerate(code) if c in CODE_LETTERS or c in CODE_DIGITS]



def near_miss_codes(
    rng: np.random.Generator, code: str, count: int, exclude: Sequence[str] = (),
) -> list[str]:
    """Return ``count`` distinct codes that differ from ``code`` in 1 or 2 characters.

    Letters are replaced by letters and digits by digits, so the layout stays the same. Codes in
    ``exclude`` are never returned.
    """
    positions = _mutable_positions(code)
    banned = {code, *exclude}
    out: list[str] = []
    for _ in range(count * 50):
        if len(out) == count:
            break
        k = 1 if rng.random() < 0.6 or len(positions) < 2 else 2
        picked = rng.choice(len(positions), size=k, replace=False)
        chars = list(code)
        for j in picked:
            i = positions[int(j)]
            pool = CODE_LETTERS if chars[i] in CODE_LETTERS else CODE_DIGITS
            options = [c for c in pool if c != code[i]]
            chars[i] = options[int(rng.integers(len(options)))]
        cand = "".join(chars)
        if cand not in banned:
            banned.add(cand)
            out.append(cand)
    if len(out) < count:
        raise ValueError(f"cannot make {count} near misses of {code!r}")
    return out



def pivot_choices(
    rng: np.random.Generator, answer: Any, neighbours: Callable[[Any], Sequence[Any]],
    count: int, fmt: Callable[[Any], str] = str, exclude: Sequence[str] = (),
) -> tuple[str, ...]:
    """Return ``count`` shuffled choices whose centre is *not* the answer.

    Distractors built around the answer (near-miss codes, answer ± k) make the answer the medoid
    or median of the list, which a policy can pick without looking at the image. Instead a hidden
    *pivot* is drawn among the answer's neighbours, and the distractors are the pivot's
    neighbours: the answer is then one neighbour of the pivot like every other option, so no
    choice-only statistic singles it out. The pivot itself is never offered.
    """
    banned = {fmt(answer), *exclude}
    near = [n for n in neighbours(answer) if fmt(n) not in banned]
    if not near:
        raise ValueError(f"no neighbours of {answer!r} to build choices from")
    pivot = near[int(rng.integers(len(near)))]
    banned.add(fmt(pivot))
    options = [fmt(answer)]
    for pool in (neighbours(pivot), near):
        for i in rng.permutation(len(pool)):
            text = fmt(pool[int(i)])
            if len(options) == count:
                break
            if text not in banned:
                banned.add(text)
                options.append(text)
    if len(options) < count:
        raise ValueError(f"cannot make {count} choices around {answer!r}")
    order = rng.permutation(len(options))
    return tuple(options[int(i)] for i in order)



def value_window(rng: np.random.Generator, low: int, high: int, count: int,
                 contains: int | None = None, step: int = 1) -> list[int]:
    """Return ``count`` consecutive candidate values ``start, start + step, ...`` in the range.

    With ``contains`` the window holds that value at a uniformly random position, then is shifted
    (clipped) to fit the feasible range; without it the window is drawn uniformly among the
    windows that fit. When the range holds fewer than ``count`` values the window extends past
    ``high`` (a family whose configuration allows so few values cannot offer more choices).
    """
    if count < 1 or step < 1 or high < low:
        raise ValueError(f"need count >= 1, step >= 1 and low <= high, got {count}, {step}, "
                         f"[{low}, {high}]")
    last_start = max(low, high - (count - 1) * step)
    if contains is None:
        start = low + step * int(rng.integers((last_start - low) // step + 1))
    else:
        if not low <= contains <= high:
            raise ValueError(f"value {contains} outside the feasible range [{low}, {high}]")
        start = contains - step * int(rng.integers(count))
        start = min(max(start, low), last_start)
        start += (contains - start) % step  # stay on the value's lattice
        if start > contains:
            start -= step
    return [start + i * step for i in range(count)]



def window_choices(rng: np.random.Generator, answer: int, low: int, high: int, count: int,
                   fmt: Callable[[int], str] = str, step: int = 1) -> tuple[str, ...]:
    """Return ``count`` shuffled consecutive values in ``[low, high]`` that include ``answer``.

    The answer sits at a uniformly random position of the window (see :func:`value_window`), so
    no statistic of the options (median, centre, spread) points at it.
    """
    return shuffled(rng, [fmt(v) for v in value_window(rng, low, high, count, answer, step)])



def single_edits(code: str) -> list[str]:
    """Return every code that differs from ``code`` in exactly one letter (or one digit)."""
    out = []
    for i in _mutable_positions(code):
        pool = CODE_LETTERS if code[i] in CODE_LETTERS else CODE_DIGITS
        out += [code[:i] + c + code[i + 1:] for c in pool if c != code[i]]
    return out



CONFUSABLE_CYCLES: tuple[str, ...] = ("CGDUJ", "EFPRK", "HMN", "YTXAWV", "2734659")
"""Code characters on cycles of look-alikes at view resolution: each character's two cycle
neighbours are among its nearest glyphs when downscaled (RMS distance of the INTER_AREA-downscaled
renders in the readable faces at 4–5 px view height, measured in
``tests/test_choice_leak.py``). Every character has exactly two neighbours, so every code of a
layout has the same number of look-alike edits, which keeps the answer uniform among the options
of :func:`code_choices`. Letters and digits never mix, so the layout is kept."""



@lru_cache(maxsize=64)
def confusable_neighbours(char: str) -> tuple[str, ...]:
    """Return the two look-alike neighbours of a code character on :data:`CONFUSABLE_CYCLES`."""
    for cycle in CONFUSABLE_CYCLES:
        i = cycle.find(char)
        if i >= 0:
            return tuple(dict.fromkeys((cycle[i - 1], cycle[(i + 1) % len(cycle)])))
    return ()



def confusable_edits(code: str) -> list[str]:
    """Return every code that differs from ``code`` in one character, by a look-alike."""
    return [code[:i] + c + code[i + 1:] for i in _mutable_positions(code)
            for c in confusable_neighbours(code[i])]



def code_choices(
    rng: np.random.Generator, code: str, count: int = 6, exclude: Sequence[str] = (),
) -> tuple[str, ...]:
    """Return ``count`` shuffled codes: ``code`` and look-alike near misses not centred on it.

    A hidden pivot is a look-alike edit of the code and the options are look-alike edits of the
    pivot (see :func:`pivot_choices`): the edit graph is regular (:data:`CONFUSABLE_CYCLES`), so
    given the options the answer is a uniformly random member, and every option differs from the
    answer only in one or two characters whose downscaled glyphs look alike.
    """
    return pivot_choices(rng, code, confusable_edits, count, exclude=exclude)



def code_variants(code: str) -> tuple[str, ...]:
    """Return accepted spellings of ``code`` besides itself (without separators, spaced)."""
    bare = "".join(c for c in code if c.isalnum())
    spaced = code.replace("-", " ")
    return tuple(dict.fromkeys(v for v in (bare, spaced) if v != code))
