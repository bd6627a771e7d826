"""Fuzzing the run folder's schemas: whatever they accept, the report shows without an exception.

A real trace (and config) is mutated at random places with random JSON values. The schema
either names the problem (:func:`~m3gym.eval.run_folder.trace_problem`,
:class:`~m3gym.eval.run_folder.RunFolderError`) or the report's viewer, its peer metric tables
and its Markdown render it: a bad trace never reaches code that would crash on it.
``FUZZ_N=5000`` runs more examples (each test passed 3000-6000 when the schemas were written).
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from m3gym.config_errors import ConfigError
from m3gym.eval.peer_summary import peer_episodes
from m3gym.eval.report import Run, episode_context, render_episode, render_markdown
from m3gym.eval.run_folder import RunFolderError, check_run_config, trace_problem
from m3gym.eval.runner import EvalConfig, plan_episodes, run_episode_outcome
from m3gym.eval.summary import summarize


@pytest.fixture(scope="module")
def outcome() -> Any:
    """One oracle episode (calls, images, checkpoints): its record, trace and config."""
    cfg = EvalConfig(envs=("M3Bench-L2",), agent="oracle", episodes=1)
    spec = plan_episodes(cfg)[0]
    out = run_episode_outcome(spec, cfg)
    assert out.row["status"] == "ok" and out.trace["steps"] and out.trace["images"]
    config = {**cfg.to_dict(), "episode_ids": [spec.episode_id], "versions": {"m3gym": "0"}}
    return out.row, json.loads(json.dumps(out.trace, default=str)), config


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**20) | st.floats(allow_nan=False)
    | st.text(max_size=8) | st.sampled_from(["thumbs/x.jpg", "../x", "/etc/passwd", "<b>"]),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(
        st.sampled_from(["index", "thumb", "calls", "name", "id", "reward", "results", "x"]),
        c, max_size=3),
    max_leaves=6)


def _mutate(draw: Any, value: Any) -> Any:
    """Return ``value`` with one part replaced (or a key deleted), chosen level by level.

    At each level the walk stops (and replaces what is there) with probability 1/4, else goes
    on into one child, so each depth is hit as often as the next (a uniform pick of a path of a
    trace's hundreds would almost never reach a step's field).
    """
    children = list(value) if isinstance(value, dict) else list(range(len(value))) \
        if isinstance(value, list) else []
    if not children or draw(st.integers(0, 3)) == 0:
        return draw(_json)
    key = draw(st.sampled_from(children))
    if isinstance(value, dict) and draw(st.integers(0, 4)) == 0:
        value.pop(key)
    else:
        value[key] = _mutate(draw, value[key])
    return value


def _mutations(draw: Any, base: Any) -> Any:
    value = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        value = _mutate(draw, value)
    return value


@settings(max_examples=int(os.environ.get("FUZZ_N", 200)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_trace_the_schema_accepts_renders(outcome, tmp_path, data):
    record, trace, config = outcome
    mutated = _mutations(data.draw, trace)
    if trace_problem(mutated) is not None:
        return  # named and skipped by the report
    run = Run("run", tmp_path, config, [record], summarize([record]))
    episode_context(run, record, mutated, 0)
    render_episode(run, record, mutated, 0)
    skipped: list[str] = []
    peer_episodes([record], lambda _: mutated, skipped)  # a ValueError is named, not raised


@settings(max_examples=int(os.environ.get("FUZZ_N", 150)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_config_the_schema_accepts_reports(outcome, tmp_path, data):
    record, trace, config = outcome
    mutated = _mutations(data.draw, config)
    try:
        checked = check_run_config(mutated, tmp_path / "config.json")
    except RunFolderError as exc:
        assert str(exc).startswith(f"{tmp_path / 'config.json'}: ")
        return
    run = Run("run", tmp_path, checked, [record], summarize([record]))
    render_markdown([run])
    episode_context(run, record, trace, 0)


def test_the_real_trace_and_config_pass(outcome, tmp_path):
    record, trace, config = outcome
    assert trace_problem(trace) is None
    assert check_run_config(config, "config.json") == config
    with pytest.raises(ConfigError):
        check_run_config([], "config.json")


@settings(max_examples=int(os.environ.get("FUZZ_N", 150)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_record_the_reader_accepts_reports(outcome, tmp_path, data):
    from m3gym.eval.report import select_episodes
    from m3gym.eval.runner import _line_problem

    record, trace, config = outcome
    mutated = _mutations(data.draw, record)
    row, reason = _line_problem(json.dumps(mutated).encode())
    if row is None:
        assert reason.startswith(("not an episode row", "could not parse"))
        return  # an unreadable line: named, counted nowhere
    run = Run("run", tmp_path, config, [row], summarize([row]))
    render_markdown([run])
    for run_, chosen in select_episodes([run], 5):
        episode_context(run_, chosen, trace, 0)
