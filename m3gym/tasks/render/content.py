"""Realistic but fictional text with Faker: names, companies, addresses, products, dates, IDs.

Every value comes from a Faker instance seeded from the passed ``np.random.Generator`` (one draw
per call, ``seed_instance(int(rng.integers(2**63 - 1)))``), never from Python's global
``random``, so the same generator state gives the same string in any process. Dates come from a
fixed range (never "today"). Locales are Latin-script only (:data:`FAKER_LOCALES`): the shipped
fonts cover their glyphs and :func:`ascii_fold` gives an ASCII spelling for answer matching.
"""

from __future__ import annotations

import datetime as dt
import threading
import unicodedata
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # faker is imported on first use (about 0.2 s)
    from faker import Faker

FAKER_LOCALES: tuple[str, ...] = ("en_US", "en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL")
"""Latin-script locales the helpers accept."""

DATE_RANGE: tuple[dt.date, dt.date] = (dt.date(2014, 1, 1), dt.date(2031, 12, 31))
"""Inclusive range of :func:`fake_date` (fixed, so dates never depend on the clock)."""

PRODUCT_KINDS: tuple[str, ...] = (
    "Oat Milk", "Espresso Beans", "Green Tea", "Dark Chocolate", "Olive Oil", "Basmati Rice",
    "Peanut Butter", "Sparkling Water", "Orange Juice", "Greek Yogurt", "Rye Bread", "Honey",
    "Dish Soap", "Laundry Gel", "Paper Towels", "Toothpaste", "Shampoo", "Hand Cream",
    "AA Batteries", "USB-C Cable", "LED Bulb", "Desk Lamp", "Notebook", "Gel Pens",
    "Wireless Mouse", "Phone Case", "Water Bottle", "Yoga Mat", "Running Socks", "Rain Jacket",
    "Coffee Filters", "Granola", "Tomato Sauce", "Pasta Shells", "Sea Salt", "Black Pepper",
)
"""Product nouns :func:`fake_product` combines with a fictional brand and a size."""

PRODUCT_SIZES: tuple[str, ...] = (
    "250 g", "500 g", "1 kg", "330 ml", "500 ml", "1 L", "2 L", "4 pack", "6 pack", "12 pcs",
    "XL", "M", "100 ml", "75 g", "3 x 200 g",
)
"""Sizes :func:`fake_product` appends."""

ID_PATTERNS: tuple[str, ...] = ("??-######", "INV-####-??", "#####-??", "??###-####", "ORD-######")
"""Faker ``bothify`` patterns of :func:`fake_id` (``?`` a letter, ``#`` a digit)."""

ID_LETTERS: str = "ACDEFGHJKMNPRTUVWXY"
"""Letters :func:`fake_id` uses (no confusable O, I, L, Q, S, Z, B)."""

_FOLD: dict[int, str] = {ord(k): v for k, v in {
    "ß": "ss", "Æ": "AE", "æ": "ae", "Œ": "OE", "œ": "oe", "Ø": "O", "ø": "o", "Ł": "L",
    "ł": "l", "Đ": "D", "đ": "d", "Þ": "Th", "þ": "th", "ı": "i", "’": "'", "‘": "'",
    "“": '"', "”": '"', "–": "-", "—": "-", "\u00a0": " ",
}.items()}

_LOCAL = threading.local()


def _check_locale(locale: str) -> None:
    if locale not in FAKER_LOCALES:
        raise ValueError(f"unknown faker locale {locale!r}; known: {', '.join(FAKER_LOCALES)}")


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(2**63 - 1))


def fake(rng: np.random.Generator, locale: str = "en_US") -> Faker:
    """Return a new Faker for ``locale`` seeded from ``rng`` (one draw).

    The instance has its own random state (``seed_instance``); Python's global ``random`` is
    never used or touched.
    """
    from faker import Faker

    _check_locale(locale)
    out = Faker(locale)
    out.seed_instance(_seed(rng))
    return out


def fake_shared(rng: np.random.Generator, locale: str = "en_US") -> Faker:
    """Return this thread's cached Faker for ``locale``, re-seeded from ``rng`` (one draw).

    The same values as :func:`fake` (a fresh instance seeded with the same draw) without
    building a Faker (about a millisecond each: its providers are set up anew). The instance is
    shared: use it up before the next call of this function or of the ``fake_*`` string
    helpers, which re-seed it.
    """
    from faker import Faker

    _check_locale(locale)
    cache: dict[str, Faker] = _LOCAL.__dict__.setdefault("fakers", {})
    if locale not in cache:
        cache[locale] = Faker(locale)
    inst = cache[locale]
    inst.seed_instance(_seed(rng))
    return inst


def ascii_fold(text: str) -> str:
    """Return ``text`` spelled in ASCII: accents dropped ("é" -> "e"), "ß" -> "ss", "Ø" -> "O".

    Characters with no ASCII spelling are dropped.
    """
    decomposed = unicodedata.normalize("NFKD", text.translate(_FOLD))
    return "".join(c for c in decomposed if ord(c) < 128 and not unicodedata.combining(c))


def _finish(text: str, ascii_only: bool) -> str:
    one_line = " ".join(text.split())
    return ascii_fold(one_line) if ascii_only else one_line


def fake_person(rng: np.random.Generator, locale: str = "en_US", ascii_only: bool = False) -> str:
    """Return a fictional person's "First Last" name (no titles) in ``locale``."""
    f = fake_shared(rng, locale)
    return _finish(f"{f.first_name()} {f.last_name()}", ascii_only)


def fake_company(rng: np.random.Generator, locale: str = "en_US", ascii_only: bool = False) -> str:
    """Return a fictional company name in ``locale`` (e.g. "Hermighausen AG")."""
    return _finish(fake_shared(rng, locale).company(), ascii_only)


def fake_address(rng: np.random.Generator, locale: str = "en_US", ascii_only: bool = False) -> str:
    """Return a fictional postal address in ``locale`` on one line (lines joined by ", ")."""
    lines = fake_shared(rng, locale).address().splitlines()
    return _finish(", ".join(line.strip() for line in lines if line.strip()), ascii_only)


def fake_product(rng: np.random.Generator, locale: str = "en_US", ascii_only: bool = False) -> str:
    """Return a fictional product: a brand (a surname) + a :data:`PRODUCT_KINDS` noun + a size.

    E.g. "Dekker Oat Milk 1 L". The nouns are English in every locale; the brand follows it.
    """
    f = fake_shared(rng, locale)
    brand = f.last_name().split()[-1].split("-")[0]
    kind = PRODUCT_KINDS[f.random_int(0, len(PRODUCT_KINDS) - 1)]
    size = PRODUCT_SIZES[f.random_int(0, len(PRODUCT_SIZES) - 1)]
    return _finish(f"{brand} {kind} {size}", ascii_only)


def fake_date(rng: np.random.Generator, fmt: str = "%Y-%m-%d", locale: str = "en_US") -> str:
    """Return a date in :data:`DATE_RANGE` formatted with ``fmt`` (``strftime`` codes).

    Numeric formats only are portable (month names follow the C locale of ``strftime``).
    """
    f = fake_shared(rng, locale)
    day = f.date_between_dates(DATE_RANGE[0], DATE_RANGE[1])
    return day.strftime(fmt)


def fake_id(rng: np.random.Generator, pattern: str | None = None, locale: str = "en_US") -> str:
    """Return an ID such as "KX-480213" from ``pattern`` (random :data:`ID_PATTERNS` if None).

    In ``pattern`` ``?`` is a letter from :data:`ID_LETTERS` and ``#`` a digit; anything else
    is literal.
    """
    f = fake_shared(rng, locale)
    if pattern is None:
        pattern = ID_PATTERNS[f.random_int(0, len(ID_PATTERNS) - 1)]
    return f.bothify(pattern, letters=ID_LETTERS)
