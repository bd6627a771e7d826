"""Bootstrap intervals: exact values on hand-made cases, coverage, and the report's leaderboard."""

import numpy as np
import pytest

from m3gym.eval.report import Run, error_bar, leaderboard_table, render_markdown
from m3gym.eval.summary import fmt_interval, stat_interval, stat_samples, summarize
from m3gym.stats import bootstrap_mean_interval


def _rng(seed=0):
    return np.random.default_rng(seed)


def test_exact_interval_of_a_hand_made_case():
    # Resample means of [0, 0, 0, 1] are k/4 with k ~ Binomial(4, 1/4): P(k = 0) = 0.316 and
    # P(k <= 2) = 0.949 < 0.975 <= P(k <= 3) = 0.996, so the 2.5 % and 97.5 % points are 0 and 3/4.
    assert bootstrap_mean_interval([0, 0, 0, 1], _rng()) == (0.0, 0.75)
    # [0, 1]: means 0, 1/2, 1 with probabilities 1/4, 1/2, 1/4 -> the ends are 0 and 1
    assert bootstrap_mean_interval([0, 1], _rng()) == (0.0, 1.0)


def test_equal_values_give_a_zero_width_interval():
    assert bootstrap_mean_interval([0.6] * 7, _rng()) == (0.6, 0.6)
    assert bootstrap_mean_interval([3.0], _rng()) == (3.0, 3.0)
    assert bootstrap_mean_interval([1, 1, 1], _rng(), groups=["a", "b", "b"]) == (1.0, 1.0)


def test_same_seed_same_interval_other_seed_other_interval():
    values = _rng(5).random(40)
    assert bootstrap_mean_interval(values, _rng(1)) == bootstrap_mean_interval(values, _rng(1))
    assert bootstrap_mean_interval(values, _rng(1)) != bootstrap_mean_interval(values, _rng(2))


@pytest.mark.parametrize("seed", range(8))
def test_interval_contains_the_mean_and_narrows_with_more_data(seed):
    data = _rng(100 + seed).random(400)
    lo, hi = bootstrap_mean_interval(data, _rng(seed))
    assert lo <= data.mean() <= hi
    lo_small, hi_small = bootstrap_mean_interval(data[:25], _rng(seed))
    assert hi - lo < hi_small - lo_small
    # a percentile interval of the mean is about ±1.96 standard errors wide
    se = data.std() / np.sqrt(len(data))
    assert (hi - lo) == pytest.approx(2 * 1.96 * se, rel=0.15)


def test_coverage_is_near_95_percent():
    rng = _rng(7)
    trials, covered = 300, 0
    for _ in range(trials):
        sample = (rng.random(60) < 0.6).astype(float)
        lo, hi = bootstrap_mean_interval(sample, rng, resamples=600)
        covered += lo <= 0.6 <= hi
    assert 0.89 <= covered / trials <= 0.99


def test_groups_resample_whole_tasks():
    # two tasks with two identical rollouts each behave like two episodes, not four
    grouped = bootstrap_mean_interval([0, 0, 1, 1], _rng(), groups=["a", "a", "b", "b"])
    assert grouped == bootstrap_mean_interval([0, 1], _rng()) == (0.0, 1.0)
    # ten tasks rolled out twice: as wide as the ten tasks alone, wider than twenty episodes
    tasks = [0.0] * 5 + [1.0] * 5
    lo, hi = bootstrap_mean_interval(tasks * 2, _rng(), groups=list(range(10)) * 2)
    assert (lo, hi) == bootstrap_mean_interval(tasks, _rng())
    lo_iid, hi_iid = bootstrap_mean_interval(tasks * 2, _rng())
    assert hi - lo > hi_iid - lo_iid


@pytest.mark.parametrize("kwargs, message", [
    ({"values": []}, "non-empty"),
    ({"values": [0.5, float("nan")]}, "finite"),
    ({"values": [0, 1], "level": 1.0}, "level must be in (0, 1)"),
    ({"values": [0, 1], "resamples": 0}, "resamples must be at least 1"),
    ({"values": [0, 1], "groups": ["a"]}, "groups has 1 labels for 2 values"),
])
def test_bad_input_is_a_precise_error(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        bootstrap_mean_interval(rng=_rng(), **kwargs)


def _record(task, acc, reward, status="ok", ot=None):
    return {"episode_id": f"e{task}", "env": "M3Bench-L1-v4", "task_id": f"fam/{task}",
            "level": 1, "family": "fam", "status": status, "answer_correct": bool(acc),
            "reward": reward, "calls": 2, "metrics": {"acc": float(acc), "OT": ot}}


RECORDS = [_record(0, 1, 0.5), _record(1, 0, -0.5), _record(2, 0, -0.5), _record(3, 0, 0.5),
           _record(4, 1, 9.0, status="infra_error")]


def test_samples_count_scored_episodes_that_report_the_metric():
    assert stat_samples(RECORDS, "acc") == ([1.0, 0.0, 0.0, 0.0],
                                            [f"M3Bench-L1-v4:fam/{i}" for i in range(4)])
    assert stat_samples(RECORDS, "reward")[0] == [0.5, -0.5, -0.5, 0.5]
    assert stat_samples(RECORDS, "OT") == ([], [])
    assert stat_interval(RECORDS, "OT", _rng()) is None
    assert stat_interval(RECORDS, "acc", _rng()) == (0.0, 0.75)


def test_interval_cells():
    assert fmt_interval(0.25, (0.0, 0.75), "acc") == "0.250 [0.000, 0.750]"
    assert fmt_interval(2.0, (2.0, 2.0), "calls") == "2.0 [2.0, 2.0]"
    assert fmt_interval(None, None, "OT") == "-"
    assert error_bar(0.25, (0.0, 0.75)) == (0.25, 0.5)
    assert error_bar(None, None) == (0.0, 0.0)


def test_leaderboard_shows_mean_and_interval(tmp_path):
    run = Run("r", tmp_path, {"agent": "oracle"}, RECORDS, summarize(RECORDS))
    header, rows = leaderboard_table([run])
    row = dict(zip(header, rows[0]))
    assert row["N"] == "4/5"
    assert row["Acc"] == "0.250 [0.000, 0.750]"  # the hand-made case above
    assert row["Calls"] == "2.0 [2.0, 2.0]"
    assert row["OT"] == "-"
    lo, hi = (float(x) for x in row["Reward"].split(" [")[1].rstrip("]").split(", "))
    assert lo <= 0.0 <= hi and -0.5 <= lo and hi <= 0.5
    md = render_markdown([run])
    assert "| 0.250 [0.000, 0.750] |" in md and "95 % percentile-bootstrap" in md
    assert render_markdown([run]) == md  # seeded: the same runs give the same text
