import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import m3gym
from m3gym.scoring.answer import (
    answer_is_correct,
    normalize_answer,
    parse_number,
    quantities,
    quantity_targets,
    single_quantity,
)
from m3gym.spec import AnswerSpec
from m3gym.tasks.families.clock_reading import format_time, time_variants

FAMILIES = m3gym.family_names(suite=None)

# The specs the families build (m3gym/tasks/families/*), written out by hand.
CODE = AnswerSpec("K7-4F2", variants=("K74F2", "K7 4F2"))                      # L1 text, L2 plates
CLOCK = AnswerSpec(format_time(7, 46), time_variants(7, 46))                   # clock_reading
NOON = AnswerSpec(format_time(12, 5), time_variants(12, 5))
PRICE = AnswerSpec("39.84", ("$39.84",), "numeric", 0.005)                     # price_sum
COUNT_EXACT = AnswerSpec("12")                                                 # region_count
COUNT_NUMERIC = AnswerSpec("12", match="numeric")                              # knowledge_count
GRID_PAIR = AnswerSpec("6x13", variants=("6 x 13", "6 by 13", "6×13",
                                         "6 rows and 13 columns"))              # grid_period pair
GRID_TOTAL = AnswerSpec("78", match="numeric")                                 # grid_period total
LOOKUP_NUMBER = AnswerSpec("1,250", variants=("1250",))                        # code_lookup / logo_lookup / privacy_safe_lookup
LOOKUP_NAME = AnswerSpec("Dusesath Analytics")                                 # l3 names


@pytest.mark.parametrize("raw,expected", [
    ("  K7-4F2 ", "k7-4f2"),
    ("<answer>K7-4F2</answer>", "k7-4f2"),
    ("The answer is: $1,250.00", "1250"),
    ("Final answer: 12", "12"),
    ("12.50", "12.5"),
    ("007", "7"),
    ("-0", "0"),
    ("+5", "5"),
    (".5", "0.5"),
    ("1e3", "1000"),
    ("Red!", "red"),
    ("10:45", "10:45"),
    ("1,250,000", "1250000"),
    ("1,25", "1 25"),
    ("\u22125", "-5"),          # unicode minus sign
    ("\u20135", "-5"),          # en dash
    ("6\u00d713", "6x13"),       # multiplication sign between digits
    ("6 \u00d7 13", "6x13"),
    ("€12", "12"),
    ("ＡＢ１２", "ab12"),          # full-width (NFKC)
    ("1e-7", "0.0000001"),        # plain decimal, never scientific
    ("1e30", "1" + "0" * 30),     # written out up to MAX_EXPONENT ...
    ("1e31", "1e31"),             # ... and kept as typed beyond it
    ("1e-30", "0." + "0" * 29 + "1"),
    ("1e-31", "1e-31"),
    ("2.5e1", "25"),
    ("abc", "abc"),
])
def test_normalize(raw, expected):
    assert normalize_answer(raw) == expected


@pytest.mark.parametrize("raw,expected", [
    ("Total: $12", [("number", "12")]),
    ("12 or 13", [("number", "12"), ("number", "13")]),
    ("It is 07:46 pm", [("time", "7:46")]),
    ("a 6 by 13 grid", [("pair", "6x13")]),
    ("6 X 13", [("pair", "6x13")]),
    ("12-13", [("number", "12"), ("number", "-13")]),
    ("10:45:30", [("number", "10"), ("time", "45:30")]),
    ("no digits", []),
])
def test_quantities(raw, expected):
    assert quantities(raw) == expected
    assert single_quantity(raw) == (expected[0] if len(expected) == 1 else None)


@pytest.mark.parametrize("raw,expected", [
    ("Total: $12", 12.0), ("-3.5 degrees", -3.5), ("\u22123.5", -3.5), ("12 or 13", None),
    ("12 13 14 15", None), ("7:46", None), ("6x13", None), ("none", None), ("1" * 400, None),
])
def test_parse_number(raw, expected):
    assert parse_number(raw) == expected


def test_quantity_targets_are_the_spellings_that_are_only_a_quantity():
    assert quantity_targets(GRID_PAIR) == [("pair", "6x13")] * 4  # not "6 rows and 13 columns"
    assert quantity_targets(PRICE) == [("number", "39.84")] * 2
    assert quantity_targets(CLOCK) == [("time", "7:46"), ("time", "7:46"), ("time", "19:46")]
    assert quantity_targets(CODE) == []
    assert quantity_targets(AnswerSpec("Room 12")) == []


def test_exact_variants():
    assert answer_is_correct("k7-4f2.", CODE)
    assert answer_is_correct("K74F2", CODE)
    assert answer_is_correct("K7 4F2", CODE)
    assert answer_is_correct("<answer>K7-4F2</answer>", CODE)
    assert not answer_is_correct("K7-4F3", CODE)
    assert not answer_is_correct("K7-4F2 or K7-4F3", CODE)
    assert not answer_is_correct("the code K7-4F2", CODE)  # codes are not quantities: exact only
    assert not answer_is_correct(None, CODE)
    assert not answer_is_correct("", CODE)
    assert not answer_is_correct("   ...", CODE)


@pytest.mark.parametrize("spec", [COUNT_EXACT, COUNT_NUMERIC], ids=["exact", "numeric"])
def test_tolerance_zero_number_inside_text(spec):
    for text in ("12", "Total: $12", "There are 12 regions.", "<answer>12</answer>", "12.0",
                 "twelve: 12", "012", "+12"):
        assert answer_is_correct(text, spec), text
    for text in ("13", "11.999", "12.001", "Total: $13", "1 2", "-12", "120", "1.2"):
        assert not answer_is_correct(text, spec), text


@pytest.mark.parametrize("spec", [COUNT_EXACT, COUNT_NUMERIC, PRICE, GRID_TOTAL],
                         ids=["exact", "numeric", "price", "total"])
def test_several_numbers_are_a_hedge_and_wrong(spec):
    v = spec.value
    for hedge in (f"{v} or 13", f"13 or {v}", f"{v} 13 14 15", f"11 12 13 {v}", f"{v}, 99",
                  f"{v}-99", f"between 1 and {v}", f"{v} {v}", f"{v} (99)", f"{v}/2"):
        assert not answer_is_correct(hedge, spec), hedge


def test_numeric_tolerance_boundary_is_inclusive_and_exact():
    assert answer_is_correct("39.84", PRICE)
    assert answer_is_correct("39.845", PRICE)        # |d| == tolerance: accepted
    assert answer_is_correct("39.835", PRICE)
    assert answer_is_correct("$39.844", PRICE)
    assert not answer_is_correct("39.8451", PRICE)   # just past it: rejected
    assert not answer_is_correct("39.8349", PRICE)
    assert not answer_is_correct("39.85", PRICE)
    half = AnswerSpec("12", match="numeric", tolerance=0.5)
    assert answer_is_correct("12.5", half) and answer_is_correct("11.5", half)
    assert not answer_is_correct("12.5000001", half)
    assert not answer_is_correct("11.4999999", half)


def test_units_and_currency():
    for text in ("$39.84", "39.84 USD", "USD 39.84", "€39.84", "£39.84", "¥39.84", "39.84$",
                 "Total: $39.84.", "The total is $39.84 dollars"):
        assert answer_is_correct(text, PRICE), text
    for text in ("12 cm", "12cm", "12 kg", "12%", "12 regions"):
        assert answer_is_correct(text, COUNT_NUMERIC), text
    assert not answer_is_correct("$40.84", PRICE)
    assert not answer_is_correct("12 m2", COUNT_NUMERIC)  # two numbers


def test_thousands_separators():
    assert answer_is_correct("1,250", LOOKUP_NUMBER)
    assert answer_is_correct("1250", LOOKUP_NUMBER)
    assert answer_is_correct("It was built in 1,250.", LOOKUP_NUMBER)
    assert answer_is_correct("1250.00", LOOKUP_NUMBER)
    assert not answer_is_correct("1,25", LOOKUP_NUMBER)
    assert not answer_is_correct("1 250", LOOKUP_NUMBER)
    assert not answer_is_correct("12,50", LOOKUP_NUMBER)
    big = AnswerSpec("1250000", match="numeric")
    assert answer_is_correct("$1,250,000", big)
    assert not answer_is_correct("1,250", big)


def test_negative_numbers():
    neg = AnswerSpec("-5", match="numeric")
    pos = AnswerSpec("5", match="numeric")
    for text in ("-5", "\u22125", "\u20135", "-5.0", "It is -5 degrees"):
        assert answer_is_correct(text, neg), text
        assert not answer_is_correct(text, pos), text
    assert answer_is_correct("+5", pos)
    assert not answer_is_correct("5", neg)


def test_times():
    for text in ("7:46", "07:46", "19:46", "It is 7:46 pm.", "<answer>07:46</answer>", "7:46 am"):
        assert answer_is_correct(text, CLOCK), text
    for text in ("7:47", "8:46", "7:46 or 7:47", "7.46", "746", "7 46", "46", "7",
                 "7:46:00", "17:46", "7:46 (19:47)"):
        assert not answer_is_correct(text, CLOCK), text
    for text in ("12:05", "0:05", "00:05", "noon and 12:05"):
        assert answer_is_correct(text, NOON), text
    assert not answer_is_correct("1:05", NOON)


def test_pairs():
    for text in ("6x13", "6X13", "6 x 13", "6 by 13", "6×13", "6 × 13", "6 rows and 13 columns",
                 "a 6 by 13 grid", "<answer>6x13</answer>"):
        assert answer_is_correct(text, GRID_PAIR), text
    for text in ("13x6", "6x12", "78", "6", "6x13 or 13x6", "6x13 6x14", "6 13 rows"):
        assert not answer_is_correct(text, GRID_PAIR), text
    assert answer_is_correct("78 cells", GRID_TOTAL)
    for text in ("6x13", "78 (6x13)", "6 x 13 = 78"):
        assert not answer_is_correct(text, GRID_TOTAL), text


def test_tolerance_applies_to_numeric_specs_only():
    assert answer_is_correct("12.4", AnswerSpec("12", match="numeric", tolerance=0.5))
    assert not answer_is_correct("12.4", AnswerSpec("12", match="exact", tolerance=0.5))


def test_each_accepted_quantity_is_tried_whatever_its_kind():
    mixed = AnswerSpec("6x13", variants=("78",))  # a grid answer that also accepts its product
    assert answer_is_correct("78 cells", mixed)
    assert answer_is_correct("a 6 by 13 grid", mixed)
    assert not answer_is_correct("77 cells", mixed)
    reverse = AnswerSpec("78", variants=("6x13",))
    assert answer_is_correct("a 6 by 13 grid", reverse)
    assert answer_is_correct("78 cells", reverse)


def test_names_are_exact():
    assert answer_is_correct("dusesath analytics", LOOKUP_NAME)
    assert answer_is_correct("The answer is Dusesath Analytics.", LOOKUP_NAME)
    assert not answer_is_correct("Dusesath", LOOKUP_NAME)
    assert not answer_is_correct("Dusesath Analytics or Zimar Works", LOOKUP_NAME)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40), st.sampled_from([CODE, CLOCK, PRICE, COUNT_EXACT, GRID_PAIR,
                                              GRID_TOTAL, LOOKUP_NUMBER, LOOKUP_NAME]))
def test_matcher_never_raises(text, spec):
    assert isinstance(answer_is_correct(text, spec), bool)
    assert isinstance(normalize_answer(text), str)


@pytest.mark.parametrize("text", ["1e400", "1" * 400, "9" * 40 + ".5", "nan", "inf", "1e-400"])
def test_extreme_numbers_do_not_crash(text):
    assert answer_is_correct(text, COUNT_NUMERIC) is False
    normalize_answer(text)


def _check_task_answer(task):
    spec = task.answer
    assert answer_is_correct(spec.value, spec)
    for variant in spec.variants:
        assert answer_is_correct(variant, spec), variant
    assert answer_is_correct(f"<answer>{spec.value}</answer>", spec)
    assert answer_is_correct(f"The answer is {spec.value}.", spec)
    assert task.choices, task.task_id
    accepted = [c for c in task.choices if answer_is_correct(c, spec)]
    assert len(accepted) == 1, (task.task_id, task.choices, spec)
    wrong = [c for c in task.choices if c != accepted[0]]
    for other in wrong:  # a hedge between the answer and any other choice is wrong
        assert not answer_is_correct(f"{spec.value} or {other}", spec), other
        assert not answer_is_correct(f"{other} or {spec.value}", spec), other


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_accepts_its_answer_and_exactly_one_choice(family):
    for seed in range(8):
        _check_task_answer(m3gym.make_task(family, seed))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FAMILIES), st.integers(0, 2**31 - 1))
def test_exactly_one_choice_accepted_property(family, seed):
    _check_task_answer(m3gym.make_task(family, seed))
