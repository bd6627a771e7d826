"""Fictional names built from syllables, with split-disjoint initials and near-duplicate variants.

Every generated word starts with a letter reserved for its split (train or test), so the names of
the two splits can never coincide. Near-duplicate variants never touch the first letter, so they
stay inside their split.
"""

from __future__ import annotations

import numpy as np

SPLIT_INITIALS: dict[str, str] = {"train": "BDKMRTVZ", "test": "CFGHLNPS"}
"""Initial letters of every generated word, per split (disjoint)."""

CONSONANTS = "bdfgklmnprstvz"
VOWELS = "aeiou"
CODAS = ("", "", "", "n", "r", "l", "s", "th", "x")


def check_split(split: str) -> str:
    """Return ``split`` if it is a known split, else raise ``ValueError``."""
    if split not in SPLIT_INITIALS:
        raise ValueError(f"unknown split {split!r}; use one of {sorted(SPLIT_INITIALS)}")
    return split


def pick(rng: np.random.Generator, options: tuple[str, ...] | list[str] | str) -> str:
    """Return one element of ``options`` drawn with ``rng``."""
    return options[int(rng.integers(len(options)))]


def make_word(rng: np.random.Generator, split: str, syllables: tuple[int, int] = (2, 3)) -> str:
    """Return a capitalized pronounceable word whose initial belongs to ``split``."""
    n = int(rng.integers(syllables[0], syllables[1] + 1))
    parts = [pick(rng, SPLIT_INITIALS[split]).lower() + pick(rng, VOWELS)]
    for i in range(1, n):
        coda = pick(rng, CODAS) if i == n - 1 else ""
        parts.append(pick(rng, CONSONANTS) + pick(rng, VOWELS) + coda)
    return "".join(parts).capitalize()


def letter_variant(rng: np.random.Generator, word: str) -> str:
    """Return ``word`` with one letter (never the first) replaced by a letter of the same class."""
    positions = list(range(1, len(word)))
    pos = positions[int(rng.integers(len(positions)))]
    old = word[pos].lower()
    pool = VOWELS if old in VOWELS else CONSONANTS
    choices = [c for c in pool if c != old]
    new = choices[int(rng.integers(len(choices)))]
    return word[:pos] + new + word[pos + 1:]


def slugify(text: str) -> str:
    """Return a lowercase ascii slug with hyphens (``"Karo Vin-3"`` → ``"karo-vin-3"``)."""
    out = []
    for ch in text.lower():
        out.append(ch if ch.isascii() and ch.isalnum() else "-")
    slug = "".join(out)
    while "--" in slug:
        slug = slug.replace("--", "-")
    return slug.strip("-")


def initials(name: str, count: int = 2) -> str:
    """Return up to ``count`` uppercase initials of the words of ``name``."""
    letters = [w[0].upper() for w in name.split() if w[:1].isalpha()]
    return "".join(letters[:count]) or name[:1].upper()
