"""Faker content: seeded from the passed rng only, same strings in any process, renderable."""

import datetime as dt
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from m3gym.tasks import render as R
from m3gym.tasks.render import content as C

ROOT = Path(__file__).resolve().parents[2]

HELPERS = ("fake_person", "fake_company", "fake_address", "fake_product")


def sample(seed: int) -> list[str]:
    """Every helper in every locale from one generator (the order of draws is fixed)."""
    rng = np.random.default_rng(seed)
    out = []
    for loc in R.FAKER_LOCALES:
        out += [getattr(R, h)(rng, loc) for h in HELPERS]
        out += [R.fake_date(rng, locale=loc), R.fake_id(rng, locale=loc)]
        out.append(R.fake(rng, loc).name())
    return out


def test_locales_are_the_latin_ones():
    assert R.FAKER_LOCALES == ("en_US", "en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL")
    with pytest.raises(ValueError, match="unknown faker locale 'ja_JP'"):
        R.fake_person(np.random.default_rng(0), "ja_JP")
    with pytest.raises(ValueError, match="unknown faker locale"):
        R.fake(np.random.default_rng(0), "ru_RU")


def test_deterministic_in_process_and_seed_dependent():
    a, b = sample(3), sample(3)
    assert a == b
    assert sum(x != y for x, y in zip(a, sample(4))) > len(a) // 2


def test_same_strings_in_another_process():
    code = ("import json; from tests.render.test_content import sample; "
            "print(json.dumps(sample(11)))")
    other = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                           capture_output=True, text=True,
                           env={"PYTHONHASHSEED": "123", "PATH": ""}).stdout
    assert json.loads(other) == sample(11)


def test_one_draw_per_call_and_global_random_untouched():
    state = random.getstate()
    rng, ref = np.random.default_rng(5), np.random.default_rng(5)
    for h in HELPERS:
        getattr(R, h)(rng)
        ref.integers(2**63 - 1)
        assert rng.bit_generator.state == ref.bit_generator.state
    R.fake(rng)
    ref.integers(2**63 - 1)
    assert rng.bit_generator.state == ref.bit_generator.state
    assert random.getstate() == state


def test_fake_instance_is_seeded_from_rng():
    f1 = R.fake(np.random.default_rng(9), "de_DE")
    f2 = R.fake(np.random.default_rng(9), "de_DE")
    assert [f1.company() for _ in range(3)] == [f2.company() for _ in range(3)]
    assert f1 is not f2


def test_strings_are_one_line_renderable_and_ascii_foldable():
    for seed in range(25):
        for s in sample(seed):
            assert s and "\n" not in s and s == " ".join(s.split())
            for face in R.FONT_FACES:
                assert R.font_covers(s, face), (s, face)
            folded = R.ascii_fold(s)
            assert folded.isascii() and len(folded) >= len(s) // 2


def test_ascii_fold_by_hand():
    assert R.ascii_fold("Müller Straße, Øre Œuvre Ñandú") == "Muller Strasse, Ore OEuvre Nandu"
    assert R.ascii_fold("Farmaceútica") == "Farmaceutica"
    assert R.fake_person(np.random.default_rng(2), "fr_FR", ascii_only=True).isascii()


def test_date_and_id_formats():
    for seed in range(30):
        d = R.fake_date(np.random.default_rng(seed))
        day = dt.date.fromisoformat(d)
        assert C.DATE_RANGE[0] <= day <= C.DATE_RANGE[1]
        assert re.fullmatch(r"\d\d\.\d\d\.\d{4}", R.fake_date(np.random.default_rng(seed),
                                                             "%d.%m.%Y"))
        code = R.fake_id(np.random.default_rng(seed), "??-####")
        assert re.fullmatch(rf"[{C.ID_LETTERS}]{{2}}-\d{{4}}", code)


def test_result_does_not_depend_on_earlier_calls():
    fresh = [getattr(R, h)(np.random.default_rng(21), loc) for loc in R.FAKER_LOCALES
             for h in HELPERS]
    sample(1)  # exercises every cached per-locale instance
    again = [getattr(R, h)(np.random.default_rng(21), loc) for loc in R.FAKER_LOCALES
             for h in HELPERS]
    assert fresh == again
