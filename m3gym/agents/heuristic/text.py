"""Question parsing and answer matching for the heuristic agent (pure string functions)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rapidfuzz import fuzz

from m3gym.agents.ocr import OcrWord

_CONFUSABLE = str.maketrans({"O": "0", "Q": "0", "I": "1", "L": "1", "|": "1", "S": "5",
                             "Z": "2", "B": "8"})

POSITION_WORDS: tuple[str, ...] = (
    "top-left", "top-right", "bottom-left", "bottom-right", "top", "bottom", "left", "right",
    "center",
)
"""Grid phrases questions use for where something is (see ``render.position_phrase``)."""


def question_of(prompt: str) -> str:
    """Return the question part of a reset prompt (the text before the image list/options)."""
    for marker in ("\nOptions:", "\nImages (address"):
        if marker in prompt:
            prompt = prompt.split(marker, 1)[0]
    return prompt.strip()


def norm_code(text: str) -> str:
    """Return ``text`` upper-cased, only letters/digits/``-.:``, confusable glyphs merged."""
    up = re.sub(r"[^A-Z0-9.\-:]", "", text.upper().replace("—", "-").replace("–", "-"))
    return up.translate(_CONFUSABLE)


def code_candidates(texts: Sequence[str]) -> list[str]:
    """Return every token and every pair/triple of adjacent tokens joined (OCR splits codes)."""
    out: list[str] = []
    for text in texts:
        toks = [t for t in re.split(r"\s+", text) if t]
        for n in (1, 2, 3):
            out += ["".join(toks[i:i + n]) for i in range(len(toks) - n + 1)]
    return out


def choice_scores(texts: Sequence[str], choices: Sequence[str]) -> list[float]:
    """Return, per choice, the best similarity (0-100) to any OCR candidate in ``texts``."""
    cands = [norm_code(c) for c in code_candidates(texts)]
    cands = [c for c in cands if c]
    scores: list[float] = []
    for choice in choices:
        target = norm_code(choice)
        best = 0.0
        for c in cands:
            s = fuzz.ratio(target, c)
            if s < 60 and len(c) > len(target):
                s = max(s, fuzz.partial_ratio(target, c) - 5)
            best = max(best, s)
        scores.append(best)
    return scores


def best_choice(texts: Sequence[str], choices: Sequence[str]) -> tuple[str | None, float]:
    """Return the choice most similar to something in ``texts`` and its score (None if none)."""
    if not choices:
        return None, 0.0
    scores = choice_scores(texts, choices)
    k = max(range(len(choices)), key=lambda i: (scores[i], -i))
    return choices[k], scores[k]


def value_after_label(words: Sequence[OcrWord], label: str) -> list[str]:
    """Return the text that follows ``label`` on the lines where it is read (fuzzy match)."""
    lines: dict[int, list[OcrWord]] = {}
    for w in words:
        lines.setdefault(w.line, []).append(w)
    target = re.sub(r"[^a-z0-9]", "", label.lower())
    out: list[str] = []
    for ws in lines.values():
        ws = sorted(ws, key=lambda w: w.box[0])
        for i in range(len(ws)):
            for n in (1, 2, 3):
                joined = re.sub(r"[^a-z0-9]", "", "".join(w.text for w in ws[i:i + n]).lower())
                if joined and fuzz.ratio(joined, target) >= 80:
                    rest = " ".join(w.text for w in ws[i + n:])
                    if rest:
                        out.append(rest)
    return out


def asked_label(question: str) -> str | None:
    """Return the field a question asks for ("What is the Cashier ID on ..." -> "Cashier ID")."""
    m = re.search(r"What is the (.+?)(?: on the |\?)", question)
    return m.group(1).strip() if m else None


def asked_position(question: str) -> str | None:
    """Return the grid phrase of "in the <where> part" in ``question`` (None if absent)."""
    m = re.search(r"in the ([a-z\-]+) part", question)
    if m and m.group(1) in POSITION_WORDS:
        return m.group(1)
    return None


def named_colors_in(question: str, names: Sequence[str]) -> list[str]:
    """Return the colour names from ``names`` that ``question`` mentions, in order of mention."""
    found = [(m.start(), n) for n in names for m in re.finditer(rf"\b{n}\b", question.lower())]
    return [n for _, n in sorted(found)]


def choice_in_text(text: str, choices: Sequence[str]) -> list[tuple[int, str]]:
    """Return ``(position, choice)`` for every choice that occurs verbatim in ``text``, sorted."""
    low = text.lower()
    hits: list[tuple[int, str]] = []
    for c in choices:
        m = re.search(rf"(?<![a-z0-9]){re.escape(c.lower())}(?![a-z0-9])", low)
        if m:
            hits.append((m.start(), c))
    return sorted(hits)


def parse_number(text: str) -> float | None:
    """Return the first decimal number in ``text`` (``$12.50`` -> 12.5; None if none)."""
    m = re.search(r"(\d+)[.,](\d{2})", text)
    if m:
        return float(f"{m.group(1)}.{m.group(2)}")
    m = re.search(r"\d+", text)
    return float(m.group(0)) if m else None
