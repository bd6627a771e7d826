"""``m3gym eval`` end to end: runs, workers, resume, infrastructure and agent errors, replay."""

import json
import sys
import textwrap
from pathlib import Path

import pytest

from m3gym.cli import main
from m3gym.eval.report import write_report
from m3gym.eval.runner import (
    is_infrastructure_error,
    parse_key_values,
    read_episode_rows,
)
from m3gym.eval.summary import summarize

LEVELS = ["--env", "M3Bench-L1", "--env", "M3Bench-L2", "--env", "M3Bench-L3"]

FLAKY = textwrap.dedent('''
    from pathlib import Path

    from m3gym.agents.base import OracleAgent
    from m3gym.agents.errors import InfrastructureError


    class FlakyOracle(OracleAgent):
        """Raises InfrastructureError on its first act() ever (marker file), then replays."""

        name = "flaky"

        def __init__(self, marker):
            super().__init__()
            self.marker = Path(marker)

        def act(self, observation, info):
            if not self.marker.exists():
                self.marker.write_text("raised")
                raise InfrastructureError("connection refused", attempts=3)
            return super().act(observation, info)


    class DownAgent(OracleAgent):
        """Every act() fails like an unreachable endpoint."""

        def act(self, observation, info):
            raise ConnectionRefusedError("http://127.0.0.1:9/v1 unreachable")


    def flaky(seed=0, marker=""):
        return FlakyOracle(marker)


    def down(seed=0):
        return DownAgent()


    class BuggyAgent(OracleAgent):
        """A programming error inside the agent."""

        def act(self, observation, info):
            raise ValueError("bug in the agent")


    def buggy(seed=0):
        return BuggyAgent()
''')


@pytest.fixture
def agents_module(tmp_path, monkeypatch):
    mod_dir = tmp_path / "mods"
    mod_dir.mkdir()
    (mod_dir / "m3gym_eval_test_agents.py").write_text(FLAKY)
    monkeypatch.syspath_prepend(str(mod_dir))
    yield "m3gym_eval_test_agents"
    sys.modules.pop("m3gym_eval_test_agents", None)


def _rows(path):
    return read_episode_rows(Path(path) / "episodes.jsonl")


def _strip(row):
    return {k: v for k, v in row.items() if k != "wall_s"}


def test_eval_oracle_end_to_end(tmp_path, capsys):
    out = tmp_path / "oracle"
    assert main(["eval", *LEVELS, "--agent", "oracle", "--episodes", "2", "--out", str(out),
                 "--quiet"]) == 0
    rows = _rows(out)
    assert len(rows) == 6
    assert [r["env"] for r in rows] == ["M3Bench-L1"] * 2 + ["M3Bench-L2"] * 2 + ["M3Bench-L3"] * 2
    for r in rows:
        assert r["status"] == "ok" and r["answer_correct"] is True
        assert r["task_seed"] >= 1_000_000_000
        assert r["metrics"]["acc"] == 1.0
        trace = json.loads((out / "traces" / f"{r['episode_id']}.json").read_text())
        assert trace["task_id"] == r["task_id"]
        assert trace["recreate"]["options"] == {"family": r["family"], "task_seed": r["task_seed"]}
        for im in trace["images"]:
            assert (out / im["thumb"]).is_file()
        assert len(trace["images"]) > 1  # the oracle produced at least one image
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["episodes"] == 6
    assert summary["overall"]["metrics"]["acc"] == 1.0
    assert set(summary["by_level"]) == {"L1", "L2", "L3"}
    config = json.loads((out / "config.json").read_text())
    assert config["agent"] == "oracle" and config["split"] == "test"


def test_eval_random_and_default_envs(tmp_path):
    out = tmp_path / "random"
    assert main(["eval", "--agent", "random", "--episodes", "1", "--out", str(out),
                 "--quiet", "--agent-arg", "answer_prob=0.5"]) == 0
    rows = _rows(out)
    assert {r["env"] for r in rows} == {"M3Bench-L1-v4", "M3Bench-L2-v4", "M3Bench-L3-v4"}
    assert all(r["status"] == "ok" and r["agent"] == "random" for r in rows)


def test_workers_give_identical_results(tmp_path):
    base = ["eval", "--env", "M3Bench-L1", "--env", "M3Bench-L2", "--agent", "random",
            "--episodes", "3", "--quiet", "--seed", "7"]
    assert main([*base, "--out", str(tmp_path / "w1"), "--workers", "1"]) == 0
    assert main([*base, "--out", str(tmp_path / "w2"), "--workers", "2"]) == 0
    lines1 = (tmp_path / "w1" / "episodes.jsonl").read_text().splitlines()
    lines2 = (tmp_path / "w2" / "episodes.jsonl").read_text().splitlines()
    recs1 = [_strip(json.loads(x)) for x in lines1]
    recs2 = [_strip(json.loads(x)) for x in lines2]
    diffs = [(a["episode_id"], k, a[k], b.get(k)) for a, b in zip(recs1, recs2) for k in a
             if a[k] != b.get(k)]
    assert len(recs1) == len(recs2) and not diffs, diffs[:3]
    t1 = sorted(p.name for p in (tmp_path / "w1" / "traces").iterdir())
    assert t1 == sorted(p.name for p in (tmp_path / "w2" / "traces").iterdir())
    name = t1[0]
    assert (tmp_path / "w1" / "traces" / name).read_text() == \
        (tmp_path / "w2" / "traces" / name).read_text()


def test_resume_skips_done_and_reruns_infra_errors(tmp_path, agents_module, capsys):
    out = tmp_path / "run"
    marker = tmp_path / "marker"
    args = ["eval", "--env", "M3Bench-L1", "--agent", f"{agents_module}:flaky",
            "--agent-arg", f"marker={marker}", "--episodes", "3", "--out", str(out), "--quiet"]
    assert main(args) == 0
    rows = _rows(out)
    assert [r["status"] for r in rows] == ["infra_error", "ok", "ok"]
    assert rows[0]["answer_correct"] is None and rows[0]["metrics"] == {}
    assert "connection refused" in rows[0]["error"]
    summary = summarize(rows)
    assert summary["overall"]["scored"] == 2 and summary["overall"]["infra_errors"] == 1
    assert summary["overall"]["metrics"]["acc"] == 1.0  # the infra error is not a wrong answer
    before = (out / "episodes.jsonl").read_text()

    capsys.readouterr()
    assert main(args) == 2  # existing folder without --resume: refused, nothing touched
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--resume" in err and "Traceback" not in err
    assert (out / "episodes.jsonl").read_text() == before

    assert main([*args, "--resume"]) == 0
    lines = (out / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 4  # only the infra-error episode ran again
    assert json.loads(lines[-1])["episode_id"] == rows[0]["episode_id"]
    assert [r["status"] for r in _rows(out)] == ["ok", "ok", "ok"]

    assert main([*args, "--resume"]) == 0  # nothing left to run
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 4


def test_unreachable_endpoint_aborts_with_one_line(tmp_path, agents_module, capsys):
    out = tmp_path / "down"
    code = main(["eval", "--env", "M3Bench-L1", "--agent", f"{agents_module}:down",
                 "--episodes", "5", "--out", str(out), "--quiet"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "infrastructure errors" in err
    rows = _rows(out)
    assert len(rows) == 3 and all(r["status"] == "infra_error" for r in rows)


@pytest.mark.parametrize("argv, needle", [
    (["--env", "M3Bench-Nope"], "unknown env"),
    (["--agent", "no_such_agent"], "no_such_agent"),
    (["--split", "nope"], "split"),
    (["--episodes", "100000"], "--episodes"),
    (["--agent-arg", "novalue"], "key=value"),
    (["--reward", "nope"], "reward"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, argv, needle):
    out = tmp_path / "bad"
    code = main(["eval", "--env", "M3Bench-L1", "--agent", "random", "--episodes", "1",
                 "--out", str(out), "--quiet", *argv])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err and "Traceback" not in err
    assert not out.exists()


def test_report_generation(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["eval", *LEVELS, "--agent", "oracle", "--episodes", "1", "--out", str(a),
                 "--quiet"]) == 0
    assert main(["eval", *LEVELS, "--agent", "random", "--episodes", "1", "--out", str(b),
                 "--quiet"]) == 0
    assert main(["report", str(a), str(b), "--out", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| a | oracle |" in md and "| b | random |" in md
    assert "## Failure modes" in md
    page = (tmp_path / "rep" / "report.html").read_text()
    assert page.count('<section class="episode"') == 6
    assert page.count("data:image/png;base64,") == 3  # the three plots
    assert 'class="thumb" loading="lazy" src="report_files/thumbs/' in page  # files, not inlined
    assert "src=\"thumbs/" not in page  # the report folder holds its own copies
    paths = write_report([a], max_episodes=2)
    assert paths[0].parent == a
    assert paths[1].read_text().count('<section class="episode"') == 2


def test_helpers():
    assert parse_key_values(["a=1", "b=x", "c=[1, 2]", "d=true"]) == \
        {"a": 1, "b": "x", "c": [1, 2], "d": True}
    assert is_infrastructure_error(TimeoutError("t"))
    assert not is_infrastructure_error(ValueError("v"))
    assert summarize([])["overall"]["metrics"]["acc"] is None


def test_replay_recreates_images(tmp_path):
    from m3gym.eval import replay_trace
    from m3gym.eval.runner import thumbnail_jpeg

    out = tmp_path / "oracle"
    assert main(["eval", "--env", "M3Bench-L2", "--agent", "oracle", "--episodes", "1",
                 "--out", str(out), "--quiet"]) == 0
    row = _rows(out)[0]
    trace = json.loads((out / "traces" / f"{row['episode_id']}.json").read_text())
    env = replay_trace(trace)
    assert len(env.state) == len(trace["images"])
    for im in trace["images"]:
        entry = env.state[im["index"]]
        assert list(entry.array.shape) == im["shape"] and entry.provenance.op == im["op"]
        assert thumbnail_jpeg(entry.array, 256) == (out / im["thumb"]).read_bytes()


def test_resume_after_a_cut_line(tmp_path):
    out = tmp_path / "cut"
    args = ["eval", "--env", "M3Bench-L1", "--agent", "random", "--episodes", "3",
            "--out", str(out), "--quiet"]
    assert main(args) == 0
    path = out / "episodes.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:2]) + "\n" + lines[2][:40])  # crash mid-write
    assert main([*args, "--resume"]) == 0
    rows = _rows(out)
    assert len(rows) == 3 and all(r["status"] == "ok" for r in rows)
    assert [_strip(r) for r in rows] == [_strip(json.loads(x)) for x in lines]


def test_agent_bug_is_recorded_not_scored(tmp_path, agents_module):
    out = tmp_path / "buggy"
    assert main(["eval", "--env", "M3Bench-L1", "--agent", f"{agents_module}:buggy",
                 "--episodes", "2", "--out", str(out), "--quiet"]) == 0
    rows = _rows(out)
    assert [r["status"] for r in rows] == ["agent_error", "agent_error"]
    assert "bug in the agent" in rows[0]["error"]
    assert summarize(rows)["overall"]["agent_errors"] == 2
