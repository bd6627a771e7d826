"""Answer matching: normalized exact match, accepted variants and single-quantity matching.

An answer is correct when, after :func:`normalize_answer`, it equals one accepted spelling of the
spec. Failing that, when every accepted spelling is a single *quantity* — a number (``"12"``,
``"-3.5"``), a clock time (``"7:46"``) or a pair (``"6x13"``) — the prediction may wrap its
quantity in text (``"Total: $12"``, ``"It is 7:46 pm"``, ``"a 6 by 13 grid"``): it is correct when
it holds exactly one quantity, of the spec's kind, equal to an accepted one (numbers within the
spec's ``tolerance``, inclusive; ``0`` for an exact spec). Several quantities are a hedge and
never correct (``"12 or 13"``, ``"12 13 14 15"``, ``"7:46 or 7:47"``).

Numbers are compared exactly in decimal (no float rounding), so the tolerance boundary is sharp:
with ``tolerance=0.005`` around ``39.84``, ``39.845`` is accepted and ``39.8451`` is not.
"""

from __future__ import annotations

import math
import re
import unicodedata
from decimal import Decimal
from functools import lru_cache
from typing import Literal

from m3gym.spec import AnswerSpec

_NUMBER = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?$")
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)
_LEFT_EDGE = re.compile(r"^(?:[\s,;:!?\"'`()\[\]{}<>]|\.(?!\d))+")
_RIGHT_EDGE = re.compile(r"[\s.,;:!?\"'`()\[\]{}<>]+$")
_LEAD_IN = re.compile(r"^(the\s+)?(final\s+)?answer\s*(is|:)\s*")
_CURRENCY = re.compile(r"[$€£¥]")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_OTHER_PUNCT = re.compile(r"[^\w\s\-.:/]")
_MINUS = re.compile("[\u2212\u2012\u2013\u2014\ufe63\uff0d]")
_TIMES_SIGN = re.compile(r"(?<=\d)\s*[×✕]\s*(?=\d)")
_QUANTITY = re.compile(
    r"(?P<pair>\d+\s*(?:x|by)\s*\d+(?![\d.:]))"
    r"|(?P<time>\d{1,2}:\d{2}(?![\d:]))"
    r"|(?P<number>[-+]?(?:\d+(?:\.\d*)?|\.\d+))"
)
_PAIR_PARTS = re.compile(r"(\d+)\s*(?:x|by)\s*(\d+)")

QuantityKind = Literal["number", "time", "pair"]
MAX_EXPONENT = 30
"""Numbers up to ``1e30`` (and down to ``1e-30``) are written out; larger ones stay as typed."""


@lru_cache(maxsize=8192)
def normalize_answer(text: str) -> str:
    """Return ``text`` normalized for exact match.

    Unicode NFKC, lower case, an ``<answer>`` wrapper and a leading "the answer is" removed,
    currency symbols and thousands separators dropped from numbers, typographic minus signs and
    dashes written ``-``, a multiplication sign between digits written ``x``, punctuation other
    than the characters inside codes (``-``, ``.``, ``:``, ``/``) removed, whitespace collapsed,
    and numbers written canonically in plain decimal (``"12.50"`` → ``"12.5"``, ``"007"`` →
    ``"7"``, ``"1e-7"`` → ``"0.0000001"``).
    """
    text = unicodedata.normalize("NFKC", str(text))
    tag = _ANSWER_TAG.search(text)
    if tag:
        text = tag.group(1)
    text = text.strip().lower()
    text = _LEAD_IN.sub("", text)
    text = _MINUS.sub("-", text)
    text = _TIMES_SIGN.sub("x", text)
    text = _CURRENCY.sub("", text)
    text = _THOUSANDS.sub("", text)
    text = _OTHER_PUNCT.sub(" ", text)
    text = _RIGHT_EDGE.sub("", _LEFT_EDGE.sub("", " ".join(text.split())))
    return " ".join(_canonical_number(tok) for tok in text.split(" "))


def _canonical_number(token: str) -> str:
    if not _NUMBER.match(token):
        return token
    value = Decimal(token)  # the pattern admits only finite decimals
    if abs(value.adjusted()) > MAX_EXPONENT:
        return token
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


def quantities(text: str) -> list[tuple[QuantityKind, str]]:
    """Return the quantities of ``text`` (after normalization) in order, as ``(kind, canonical)``.

    Kinds: ``"pair"`` (``"6x13"``, ``"6 by 13"`` → ``"6x13"``), ``"time"`` (``"07:46"`` →
    ``"7:46"``) and ``"number"`` (``"-12.50"`` → ``"-12.5"``). A pair or time is one quantity,
    not two numbers.
    """
    out: list[tuple[QuantityKind, str]] = []
    for m in _QUANTITY.finditer(normalize_answer(text)):
        if m.group("pair"):
            a, b = _PAIR_PARTS.fullmatch(m.group("pair")).groups()  # type: ignore[union-attr]
            out.append(("pair", f"{int(a)}x{int(b)}"))
        elif m.group("time"):
            hour, minute = m.group("time").split(":")
            out.append(("time", f"{int(hour)}:{minute}"))
        else:
            out.append(("number", _canonical_number(m.group("number"))))
    return out


def single_quantity(text: str) -> tuple[QuantityKind, str] | None:
    """Return the one quantity of ``text``, or ``None`` when it has none or several."""
    found = quantities(text)
    return found[0] if len(found) == 1 else None


def parse_number(text: str) -> float | None:
    """Return the single number in ``text`` (after normalization), or ``None``.

    ``None`` as well when ``text`` holds several quantities (a hedge) or its quantity is a time
    or a pair.
    """
    found = single_quantity(text)
    if found is None or found[0] != "number":
        return None
    value = float(found[1])
    return value if math.isfinite(value) else None


def _within(value: str, target: str, tolerance: float) -> bool:
    """Return whether two canonical decimal numbers differ by at most ``tolerance`` (exactly)."""
    return abs(Decimal(value) - Decimal(target)) <= Decimal(repr(float(tolerance)))


def quantity_targets(spec: AnswerSpec) -> list[tuple[QuantityKind, str]]:
    """Return the accepted spellings of ``spec`` that are a single quantity and nothing else."""
    out = []
    for accepted in spec.accepted:
        norm = normalize_answer(str(accepted))
        if _QUANTITY.fullmatch(norm):
            out.extend(quantities(norm))
    return out


def answer_is_correct(prediction: str | None, spec: AnswerSpec) -> bool:
    """Return whether ``prediction`` matches the answer ``spec`` (see the module docstring)."""
    if prediction is None:
        return False
    pred = normalize_answer(str(prediction))
    if not pred:
        return False
    if any(pred == normalize_answer(str(a)) for a in spec.accepted):
        return True
    got = single_quantity(str(prediction))
    if got is None:
        return False
    tolerance = spec.tolerance if spec.match == "numeric" else 0.0
    for kind, target in quantity_targets(spec):
        if got[0] != kind:
            continue
        same = _within(got[1], target, tolerance) if kind == "number" else got[1] == target
        if same:
            return True
    return False
