import pytest

from m3gym.scoring.answer import answer_is_correct, normalize_answer
from m3gym.tasks.spec import AnswerSpec


@pytest.mark.parametrize("raw,expected", [
    ("  K7-4F2 ", "k7-4f2"),
    ("<answer>K7-4F2</answer>", "k7-4f2"),
    ("The answer is: $1,250.00", "1250"),
    ("12.50", "12.5"),
    ("007", "7"),
    ("Red!", "red"),
    ("10:45", "10:45"),
])
def test_normalize(raw, expected):
    assert normalize_answer(raw) == expected


def test_exact_variants_and_numeric_tolerance():
    spec = AnswerSpec("K7-4F2", variants=("K74F2",))
    assert answer_is_correct("k7-4f2.", spec)
    assert answer_is_correct("K74F2", spec)
    assert not answer_is_correct("K7-4F3", spec)
    assert not answer_is_correct(None, spec)
    assert not answer_is_correct("", spec)
    num = AnswerSpec("12.5", match="numeric", tolerance=0.01)
    assert answer_is_correct("$12.50", num)
    assert answer_is_correct("about 12.505", num)
    assert not answer_is_correct("12.6", num)
    assert not answer_is_correct("12 or 13", num)
