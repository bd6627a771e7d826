"""Offline re-scoring: traces stored as JSON, re-scored in a fresh process with other M3 weights,
checked against a recomputation from the JSON alone (not the scoring code)."""

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from m3gym.cli import main
from m3gym.eval.rescore import rescore_trace, trace_from_dict

ROOT = Path(__file__).resolve().parents[2]
LEVELS = ["--env", "M3Bench-L1", "--env", "M3Bench-L2", "--env", "M3Bench-L3"]

SLOPPY = textwrap.dedent('''
    from m3gym.agents.base import OracleAgent


    class SloppyOracle(OracleAgent):
        """An imperfect agent: a parse error, two failed calls and an extra call before the
        reference, then the true answer on even seeds and a wrong choice on odd ones."""

        name = "sloppy"

        def __init__(self, seed=0):
            super().__init__()
            self.seed = seed
            self._t = 0
            self._choices = ()

        def reset(self, observation, info):
            super().reset(observation, info)
            self._t = 0
            self._choices = tuple(info.get("choices") or ())

        def act(self, observation, info):
            self._t += 1
            if self._t == 1:
                return "let me think about this"
            if self._t == 2:
                return [{"name": "crop", "arguments": {"image_index": 99,
                                                        "bbox_2d": [0, 0, 10, 10]}},
                        {"name": "no_such_tool", "arguments": {}}]
            if self._t == 3:
                return {"name": "rotate", "arguments": {"image_index": 0, "angle": 90}}
            if self._step < len(self.task.reference):
                return super().act(observation, info)
            value = self.task.answer.value
            wrong = [c for c in self._choices if c != value]
            text = wrong[0] if self.seed % 2 and wrong else value
            return {"name": "answer", "arguments": {"text": text}}


    def sloppy(seed=0):
        return SloppyOracle(seed)
''')

OTHER_WEIGHTS = [{"multi_modal": 1.0, "multi_hop": 3.0, "multi_threaded": 0.5},
                 {"multi_modal": 0.0, "multi_hop": 1.0, "multi_threaded": 2.0}]


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Trace JSON files of random, oracle and sloppy agents on every level (18 episodes)."""
    tmp = tmp_path_factory.mktemp("rescore")
    (tmp / "sloppy_agents.py").write_text(SLOPPY)
    sys.path.insert(0, str(tmp))
    try:
        for agent, n in (("random", 3), ("oracle", 1), ("sloppy_agents:sloppy", 2)):
            out = tmp / agent.replace(":", "_")
            assert main(["eval", *LEVELS, "--agent", agent, "--episodes", str(n),
                         "--out", str(out), "--quiet"]) == 0
    finally:
        sys.path.remove(str(tmp))
    files = sorted(tmp.glob("*/traces/*.json"))
    assert len(files) == 18
    return files


def _rescore_in_fresh_process(files, tmp_path, weights):
    out = tmp_path / "rescored.json"
    cmd = [sys.executable, "-m", "m3gym.eval.rescore", *map(str, files), "--out", str(out)]
    if weights is not None:
        cmd += ["--m3-weights", json.dumps(weights)]
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True, timeout=600)
    return json.loads(out.read_text())


def _independent(trace, weights):
    """Metrics recomputed from the JSON by hand: counts, OT, acc and the M3 weighted mean."""
    steps = trace["steps"]
    calls = [c for s in steps for c in s["calls"]]
    ref_calls = sum(len(s) for s in trace["task"]["reference"])
    tool_calls = sum(1 for c in calls if c["name"] != "answer")
    online = trace["metrics"]
    terms = [(online[k], weights[k]) for k in ("multi_modal", "multi_hop", "multi_threaded")
             if online[k] is not None]
    wsum = sum(w for _, w in terms)
    spec = trace["task"]["answer"]
    return {
        "calls": len(calls),
        "failed_calls": sum(not c["ok"] for c in calls) + sum(len(s["parse_errors"]) for s in steps),
        "rounds": len(steps),
        "OT": max(0, tool_calls - ref_calls) / (ref_calls + 1),
        "acc": float(trace["answer"] in [spec["value"], *spec["variants"]]),
        "m3": sum(v * w for v, w in terms) / wsum if wsum else 0.0,
    }


def test_trace_json_round_trips_into_the_scored_trace(traces):
    for path in traces:
        trace = json.loads(path.read_text())
        rebuilt = trace_from_dict(trace)
        assert [[c.to_dict() for c in s] for s in rebuilt.steps] == \
            [s["calls"] for s in trace["steps"]]
        assert rebuilt.answer == trace["answer"]
        assert len(rebuilt.parse_errors) == sum(len(s["parse_errors"]) for s in trace["steps"])


def test_the_sample_exercises_imperfect_episodes(traces):
    metrics = [json.loads(p.read_text())["metrics"] for p in traces]
    assert sum(m["OT"] > 0 for m in metrics) >= 6
    assert sum(m["failed_calls"] > 0 for m in metrics) >= 6
    assert 0 < sum(m["acc"] for m in metrics) < len(metrics)
    assert any(0 < m["m3"] < 1 for m in metrics)
    assert any(m["multi_hop"] is not None for m in metrics)
    assert any(m["multi_threaded"] is not None for m in metrics)


def test_fresh_process_rescoring_reproduces_online_metrics(traces, tmp_path):
    rescored = _rescore_in_fresh_process(traces, tmp_path, None)
    for path in traces:
        trace = json.loads(path.read_text())
        got = rescored[str(path)]["metrics"]
        assert got == trace["metrics"], path
        assert got == {**got, **_independent(trace, {"multi_modal": 1.0, "multi_hop": 1.0,
                                                     "multi_threaded": 1.0})}


@pytest.mark.parametrize("weights", OTHER_WEIGHTS, ids=["hop3", "no-modal"])
def test_fresh_process_rescoring_with_other_m3_weights(traces, tmp_path, weights):
    rescored = _rescore_in_fresh_process(traces, tmp_path, weights)
    changed = 0
    for path in traces:
        trace = json.loads(path.read_text())
        got = rescored[str(path)]["metrics"]
        expected = _independent(trace, weights)
        assert math.isclose(got["m3"], expected["m3"], rel_tol=1e-12, abs_tol=1e-12)
        for key in ("calls", "failed_calls", "rounds", "acc"):
            assert got[key] == expected[key], key
        assert math.isclose(got["OT"], expected["OT"], rel_tol=1e-12)
        for key, value in trace["metrics"].items():  # nothing but M3 depends on its weights
            if key != "m3":
                assert got[key] == value, key
        changed += not math.isclose(got["m3"], trace["metrics"]["m3"])
    assert changed >= 3  # the new weights matter on this sample


def test_rescore_refuses_an_unfinished_trace():
    with pytest.raises(ValueError, match="status"):
        rescore_trace({"status": "agent_error", "steps": []})
    with pytest.raises(ValueError, match="steps"):
        trace_from_dict({"steps": None})
    with pytest.raises(ValueError, match="lacks"):
        trace_from_dict({"steps": [{"calls": [{"name": "crop"}]}]})
