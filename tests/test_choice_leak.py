"""Choices must not give the answer away to a policy that never reads the evidence.

Fast versions of ``m3gym audit-leaks`` (``M3GYM_LEAK_SEEDS`` tasks for training and as many
held-out tasks per family; the full audit uses 800 and 300). Every bound is the one-sided binomial
bound of a blind guesser at the family's chance level ``p`` over the ``n`` held-out tasks:
``p + z * sqrt(p (1 - p) / n)`` with ``z = 3.09``, so a family without any leak fails a test with
probability about 0.001 (about 3 % over the ~40 probe tests here). Nothing is added on top.

* shortcuts: the *medoid* of the choices (closest by edit distance to all others — near-miss
  distractors built around the answer make it the medoid) and, for numbers, the median;
* the choices-only classifier of :mod:`m3gym.audit.leaks` trained on training seeds;
* the view-only template matcher (families whose answer is drawn in the image).

The fast view-only test catches a leak (any excess above noise at p = 0.001: 11-15 points at 100
tasks); ``test_view_only_matcher_meets_the_five_point_target`` (marked slow) checks the audit's
target itself, chance + 5 points, on ``M3GYM_LEAK_TARGET_TASKS`` (300) held-out tasks.
"""

import os
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Levenshtein

import m3gym
from m3gym.audit.leaks import (
    STRUCTURAL_UNEXPLAINED,
    VIEW_ONLY_MARGIN,
    ChoiceRecord,
    answer_index,
    binomial_upper_bound,
    choice_records,
    choices_only_correct,
    drawn_answer_evidence,
    glyph_view_distances,
    held_out_seed,
    iter_tasks_with_choices,
    reference_unexplained_share,
    view_only_correct,
)
from m3gym.scoring.answer import parse_number
from m3gym.spec import AnswerSpec, RefCall, Task
from m3gym.tasks import render as R

SEEDS = int(os.environ.get("M3GYM_LEAK_SEEDS", "100"))
TARGET_TASKS = int(os.environ.get("M3GYM_LEAK_TARGET_TASKS", "300"))
"""Held-out tasks of the slow five-point view-only test (the full audit's default)."""
Z = 3.09
"""One-sided normal quantile of a 0.001 false-alarm rate per test."""
FAMILIES = m3gym.family_names(suite=None)

VIEW_LEAKS_KNOWN: dict[str, str] = {}
"""Families whose view-only target is not met, each for a structural reason: its reference's output
holds nothing the reset view lacks (checked by ``test_view_leak_exemptions_are_structural``)."""


@cache
def train_records(family: str) -> tuple[ChoiceRecord, ...]:
    return tuple(choice_records(family, range(SEEDS)))


@cache
def held_out(family: str) -> tuple[tuple[ChoiceRecord, ...], tuple[bool, ...]]:
    """Held-out records and, for tasks whose answer is drawn, whether the view matcher wins."""
    records, view_hits = [], []
    for task in iter_tasks_with_choices(family, (held_out_seed(family, i) for i in range(SEEDS))):
        records.append(ChoiceRecord(tuple(task.choices), task.question, answer_index(task)))
        hit = view_only_correct(task)
        if hit is not None:
            view_hits.append(hit)
    return tuple(records), tuple(view_hits)


def chance(records) -> float:
    return float(np.mean([1 / len(r.choices) for r in records]))


def medoid(choices):
    costs = [sum(Levenshtein.distance(a, b) for b in choices) for a in choices]
    return int(np.argmin(costs))


def median_choice(choices):
    nums = [parse_number(c) for c in choices]
    if any(n is None for n in nums):
        return None
    order = np.argsort(nums, kind="stable")
    return int(order[len(order) // 2])


def test_binomial_bound_by_hand():
    # p = 0.2, n = 100: sd = sqrt(0.16 / 100) = 0.04, so 0.2 + 3.09 * 0.04 = 0.3236
    assert binomial_upper_bound(0.2, 100, 3.09) == pytest.approx(0.3236)


@pytest.mark.slow  # ~5 min on 2 cores over all families (CI runs it in the slow pass)
@pytest.mark.parametrize("family", FAMILIES)
def test_choice_only_shortcuts_stay_near_chance(family):
    records, _ = held_out(family)
    if not records:
        pytest.skip("family without choices")
    bound = binomial_upper_bound(chance(records), len(records), Z)
    hits = {"medoid": sum(medoid(r.choices) == r.answer for r in records),
            "median": sum(median_choice(r.choices) == r.answer for r in records)}
    for name, h in hits.items():
        assert h / len(records) <= bound, (
            f"{family}: the {name} of the choices is the answer {h}/{len(records)} times "
            f"(chance {chance(records):.3f}, bound {bound:.3f})")


@pytest.mark.slow  # ~5 min on 2 cores over all families (CI runs it in the slow pass)
@pytest.mark.parametrize("family", FAMILIES)
def test_choices_only_classifier_stays_near_chance(family):
    train = train_records(family)
    test, _ = held_out(family)
    if not train or not test:
        pytest.skip("family without choices")
    correct = choices_only_correct(train, test)
    bound = binomial_upper_bound(chance(test), len(test), Z)
    assert correct / len(test) <= bound, (
        f"{family}: choices-only classifier {correct}/{len(test)} (chance {chance(test):.3f}, "
        f"bound {bound:.3f})")


@pytest.mark.parametrize("family", [
    pytest.param(f, marks=pytest.mark.xfail(reason=VIEW_LEAKS_KNOWN[f], strict=True))
    if f in VIEW_LEAKS_KNOWN else f for f in FAMILIES])
def test_view_only_matcher_stays_near_chance(family):
    records, hits = held_out(family)
    if not hits:
        pytest.skip("the answer is not drawn in the image")
    # every family with a drawn answer offers the same number of choices on every seed
    p = chance(records)
    bound = binomial_upper_bound(p, len(hits), Z)
    assert sum(hits) / len(hits) <= bound, (
        f"{family}: view-only matcher {sum(hits)}/{len(hits)} (chance {p:.3f}, bound {bound:.3f})")


def view_hits(family: str, start: int, stop: int) -> list[bool]:
    """Whether the view matcher wins, on held-out tasks ``start .. stop - 1`` with a drawn answer."""
    hits = (view_only_correct(task) for task in iter_tasks_with_choices(
        family, (held_out_seed(family, i) for i in range(start, stop))))
    return [hit for hit in hits if hit is not None]


@pytest.mark.slow
@pytest.mark.parametrize("family", [f for f in FAMILIES if f not in VIEW_LEAKS_KNOWN])
def test_view_only_matcher_meets_the_five_point_target(family):
    # the target of issue 10, not only "no leak above noise": accuracy at most chance + 5
    # points, with half a standard error of slack so that a harmless change of the generator's
    # draws does not fail a family that sits near the target (the seeds are fixed: no
    # flakiness); the leaks this caught measured chart_value 0.297 (n = 175) and ui_status
    # 0.233 (n = 300) against 0.217 + 0.016 and + 0.012
    records, hits = held_out(family)
    if not hits:
        pytest.skip("the answer is not drawn in the image")
    every = list(hits) + view_hits(family, SEEDS, max(SEEDS, TARGET_TASKS))
    target = chance(records) + VIEW_ONLY_MARGIN
    slack = 0.5 * float(np.sqrt(target * (1 - target) / len(every)))
    accuracy = sum(every) / len(every)
    assert accuracy <= target + slack, (
        f"{family}: view-only matcher {sum(every)}/{len(every)} = {accuracy:.3f}, target "
        f"{target:.3f} (+ half a standard error, {slack:.3f})")


@pytest.mark.parametrize("family", FAMILIES)
def test_view_leak_exemptions_are_structural(family):
    # a family may miss the view-only target only if its tool adds nothing to the view (a
    # quarter turn, a flip, a point operation: 1 - R^2 of the output's view predicted from the
    # reset view under 0.05); a crop family never qualifies, so it cannot be exempted
    tasks = list(iter_tasks_with_choices(family, (held_out_seed(family, i) for i in range(3))))
    tasks = [t for t in tasks if drawn_answer_evidence(t) is not None]
    if not tasks:
        pytest.skip("the answer is not drawn in the image")
    shares = [reference_unexplained_share(t) for t in tasks]
    structural = max(shares) <= STRUCTURAL_UNEXPLAINED
    assert structural == (family in VIEW_LEAKS_KNOWN), (family, shares)


def test_unexplained_share_by_hand():
    # a quarter turn is explained exactly; a point op up to its rounding; a crop not at all
    rng = np.random.default_rng(0)
    img = rng.integers(100, 110, size=(384, 384, 3), dtype=np.uint8)
    img[100:200, 150:160] = 120
    def task_of(call):
        return Task(task_id="t/0", family="glyph_zoom", level=1, domain="Life",
                    images=(img,), question="q", answer=AnswerSpec(value="1"),
                    reference=((call,),))
    turn = RefCall("c1", "rotate", {"image_index": 0, "angle": 90})
    stretch = RefCall("c1", "autocontrast", {"image_index": 0, "cutoff": 0.0})
    crop = RefCall("c1", "crop", {"image_index": 0, "bbox_2d": [250, 250, 500, 500]})
    assert reference_unexplained_share(task_of(turn)) == 0.0
    assert reference_unexplained_share(task_of(stretch)) < 0.05
    assert reference_unexplained_share(task_of(crop)) > 0.5


# --------------------------------------------------------------------------------------------
# the constructions behind it


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 50), st.integers(0, 60), st.integers(1, 8),
       st.data())
def test_value_window_is_consecutive_feasible_and_holds_the_value(seed, low, extra, count, data):
    high = low + extra
    value = data.draw(st.integers(low, high))
    window = R.value_window(np.random.default_rng(seed), low, high, count, value)
    assert window == list(range(window[0], window[0] + count))
    assert value in window
    if high - low + 1 >= count:
        assert low <= window[0] and window[-1] <= high
    else:
        assert window[0] == low


def test_value_window_position_is_uniform_away_from_the_edges():
    # answer 50 in [0, 100], 6 values: the start is 50 - k for k = rng.integers(6), so the six
    # windows starting at 45..50 are all reachable and nothing else is
    starts = {R.value_window(np.random.default_rng(s), 0, 100, 6, 50)[0] for s in range(200)}
    assert starts == {45, 46, 47, 48, 49, 50}


def test_value_window_clips_at_the_edges():
    assert {R.value_window(np.random.default_rng(s), 3, 12, 6, 3)[0] for s in range(50)} == {3}
    assert {R.value_window(np.random.default_rng(s), 3, 12, 6, 12)[0] for s in range(50)} == {7}
    assert R.value_window(np.random.default_rng(0), 3, 4, 6, 4) == [3, 4, 5, 6, 7, 8]
    with pytest.raises(ValueError, match="outside the feasible range"):
        R.value_window(np.random.default_rng(0), 3, 12, 6, 13)


def test_confusable_cycles_cover_the_code_alphabet_once_and_are_regular():
    chars = "".join(R.CONFUSABLE_CYCLES)
    assert sorted(chars) == sorted(R.CODE_LETTERS + R.CODE_DIGITS)
    assert all(len(R.confusable_neighbours(c)) == 2 for c in chars)
    for cycle in R.CONFUSABLE_CYCLES:
        assert cycle.isdigit() or cycle.isalpha()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_code_choices_differ_from_the_answer_only_by_look_alikes(seed):
    rng = np.random.default_rng(seed)
    code = R.random_code(rng)
    # regular edit graph: every code of a layout has the same number of look-alike edits
    assert len(R.confusable_edits(code)) == 2 * sum(ch.isalnum() for ch in code)
    choices = R.code_choices(rng, code, 6)
    assert code in choices and len(set(choices)) == 6
    for c in choices:
        diffs = [(a, b) for a, b in zip(code, c) if a != b]
        assert len(c) == len(code) and len(diffs) <= 2
        for a, b in diffs:
            near = {n2 for n1 in R.confusable_neighbours(a) for n2 in
                    (n1, *R.confusable_neighbours(n1))}
            assert b in near, f"{a}->{b} is not a look-alike step in {code} -> {c}"


@pytest.mark.parametrize("chars", [R.CODE_LETTERS, R.CODE_DIGITS])
def test_cycle_neighbours_look_more_alike_downscaled_than_other_characters(chars):
    # tiny_text's view: 8-11 px glyphs in a 1600 px image shown at 768 px
    d = glyph_view_distances(chars, (8.0, 9.5, 11.0), 768 / 1600)
    d = (d + d.T) / 2
    n = len(chars)
    near = np.zeros((n, n), bool)
    for i, ch in enumerate(chars):
        for nb in R.confusable_neighbours(ch):
            near[i, chars.index(nb)] = True
    off = ~np.eye(n, dtype=bool)
    assert d[near].mean() < d[off & ~near].mean()
    # and a glyph against itself half a pixel off is closer still than any look-alike pair
    assert np.diag(d).max() < d[near].min()


def test_audit_leaks_command_prints_one_row_per_probe(capsys):
    from m3gym.cli import main

    assert main(["audit-leaks", "--family", "region_count", "--tasks", "6",
                 "--train-tasks", "12"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("| family | probe | n |") and len(lines) == 4
    assert lines[2].startswith("| region_count | choices-only | 6 |")
    assert "n/a" in lines[3]  # a count is not drawn as text: no view-only probe
    assert main(["audit-leaks", "--family", "no_such_family"]) == 2


def test_audit_leaks_strict_fails_a_leak_but_reports_a_structural_miss(capsys):
    from m3gym.audit.leaks import VIEW_ONLY_MARGIN, ProbeResult
    from m3gym.audit.leaks_cli import format_row
    from m3gym.cli import main

    leak = ProbeResult("f", "view-only", 100, 90, 0.125, VIEW_ONLY_MARGIN, unexplained=0.4)
    turn = ProbeResult("f", "view-only", 100, 90, 0.125, VIEW_ONLY_MARGIN, unexplained=0.0)
    assert "LEAK" in format_row(leak) and not leak.structural
    assert "structural" in format_row(turn) and turn.structural
    # the CLI prints the verdict column; --strict passes a family at its target
    assert main(["audit-leaks", "--family", "glyph_rotate", "--probe", "view-only",
                 "--tasks", "8", "--strict"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("| ok |")
