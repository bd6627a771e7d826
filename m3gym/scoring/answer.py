"""Answer matching: normalized exact match, accepted variants and numeric tolerance."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from m3gym.tasks.spec import AnswerSpec

_NUMBER = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?$")
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)
_PUNCT_EDGES = " \t\n\r.,;:!?\"'`()[]{}<>"
_LEAD_IN = re.compile(r"^(the\s+)?(final\s+)?answer\s*(is|:)\s*")
_CURRENCY = re.compile(r"[$€£¥]")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_OTHER_PUNCT = re.compile(r"[^\w\s\-.:/]")
_NUMBERS = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)")


@lru_cache(maxsize=8192)
def normalize_answer(text: str) -> str:
    """Return ``text`` normalized for exact match.

    Unicode NFKC, lower case, an ``<answer>`` wrapper and a leading "the answer is" removed,
    currency symbols and thousands separators dropped from numbers, punctuation other than the
    characters inside codes (``-``, ``.``, ``:``, ``/``) removed, whitespace collapsed, and numbers
    written canonically (``"12.50"`` → ``"12.5"``, ``"007"`` → ``"7"``).
    """
    text = unicodedata.normalize("NFKC", str(text))
    tag = _ANSWER_TAG.search(text)
    if tag:
        text = tag.group(1)
    text = text.strip().lower()
    text = _LEAD_IN.sub("", text)
    text = _CURRENCY.sub("", text)
    text = _THOUSANDS.sub("", text)
    text = _OTHER_PUNCT.sub(" ", text)
    text = " ".join(text.split()).strip(_PUNCT_EDGES)
    return " ".join(_canonical_number(tok) for tok in text.split(" "))


def _canonical_number(token: str) -> str:
    if not _NUMBER.match(token):
        return token
    value = float(token)
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def parse_number(text: str) -> float | None:
    """Return the single number in ``text`` (after normalization), or ``None``."""
    norm = normalize_answer(text)
    nums = _NUMBERS.findall(norm)
    if len(nums) != 1:
        return None
    try:
        return float(nums[0])
    except ValueError:
        return None


def answer_is_correct(prediction: str | None, spec: AnswerSpec) -> bool:
    """Return whether ``prediction`` matches the answer ``spec``."""
    if prediction is None:
        return False
    pred = normalize_answer(str(prediction))
    if not pred:
        return False
    if any(pred == normalize_answer(str(a)) for a in spec.accepted):
        return True
    if spec.match == "numeric":
        value = parse_number(prediction)
        if value is None:
            return False
        for accepted in spec.accepted:
            target = parse_number(accepted)
            if target is not None and abs(value - target) <= spec.tolerance + 1e-9:
                return True
    return False
