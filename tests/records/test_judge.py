"""Records everywhere: MCP env arguments, the judge in ``m3gym eval``, the report's records check.

The records are Agentic-MME tasks imported with :func:`m3gym.records.amme.import_amme` from the
fixtures of ``tests/records/test_amme.py``; task 0003 carries one judge checkpoint
("Is the discount sticker readable?", expected "Yes").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from m3gym.eval.runner import EvalConfig, run_eval
from m3gym.records.amme import import_amme
from tests.records.test_amme import write_dataset

QUESTION_3 = "What is the price after the discount?"


@pytest.fixture
def judged_records(tmp_path: Path) -> Path:
    """A one-record JSONL file: Agentic-MME task 0003 (one judge checkpoint) with its image."""
    root = write_dataset(tmp_path / "amme")
    import_amme(root, root / "all.jsonl")
    rows = [json.loads(line) for line in (root / "all.jsonl").read_text().splitlines()]
    (row,) = [r for r in rows if r.get("judge_checkpoints")
              and r["question"].startswith(QUESTION_3)]
    out = root / "one.jsonl"
    out.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return out


def _cfg(records: Path, **kw: Any) -> EvalConfig:
    return EvalConfig(envs=("M3Bench-Records",), agent="oracle", episodes=1, split="test",
                      env_args={"records": str(records), "split": "all"}, **kw)


# ------------------------------------------------------------------------------- MCP


def test_mcp_table_plays_a_record_from_env_args(judged_records: Path) -> None:
    from m3gym.mcp.episode_table import EpisodeTable, verdict

    table = EpisodeTable(env_args={"records": str(judged_records), "split": "all"})
    eid, data, images = table.start("M3Bench-Records", seed=0)
    assert data["prompt"].startswith(QUESTION_3) and len(images) == 1
    table.answer(eid, "12.50")
    report = table.report(eid)
    assert report["answer_correct"] is True
    assert verdict is not None and table.live_count() == 0
    table.close()


def test_mcp_refuses_bad_env_args_at_start_up(tmp_path: Path) -> None:
    from m3gym.mcp.episode_table import EpisodeTable

    with pytest.raises(ValueError, match="recods"):
        EpisodeTable(env_args={"recods": "x.jsonl"})
    with pytest.raises(ValueError, match="max_images"):
        EpisodeTable(env_args={"max_images": 3})
    with pytest.raises(ValueError, match="records="):
        EpisodeTable(env_args={"records": str(tmp_path / "missing.jsonl")})


def test_mcp_cli_parses_env_args() -> None:
    from m3gym.cli import build_parser
    from m3gym.eval.runner import parse_key_values

    args = build_parser().parse_args(["mcp", "--env-arg", "records=data/r.jsonl",
                                      "--env-arg", "max_tool_calls=4"])
    assert parse_key_values(args.env_arg) == {"records": "data/r.jsonl", "max_tool_calls": 4}
    assert build_parser().parse_args(["mcp"]).env_arg == []


def test_mcp_cli_bad_env_arg_is_an_error_at_start_up(capsys: Any) -> None:
    from m3gym.cli import main

    assert main(["mcp", "--env-arg", "max_tool_call=4"]) == 2  # before the mcp extra is needed
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "max_tool_call" in err
    assert main(["mcp", "--env-arg", "novalue"]) == 2
    assert "expected key=value, got 'novalue'" in capsys.readouterr().err


def test_mcp_recorded_records_run_is_checked_by_the_report(judged_records: Path,
                                                            tmp_path: Path) -> None:
    from m3gym.eval.report import load_runs, records_warnings
    from m3gym.mcp.episode_table import EpisodeTable

    env_args = {"records": str(judged_records), "split": "all"}
    table = EpisodeTable(record=tmp_path / "mcp", env_args=env_args)
    eid, _, _ = table.start("M3Bench-Records", seed=0)
    table.answer(eid, "12.50")
    table.close()
    config = json.loads((tmp_path / "mcp" / "config.json").read_text())
    assert config["env_args"] == env_args
    assert config["records"]["source"] == str(judged_records)
    assert records_warnings(load_runs([tmp_path / "mcp"])) == []
    judged_records.write_text(judged_records.read_text().replace(QUESTION_3, "Price?"))
    assert len(records_warnings(load_runs([tmp_path / "mcp"]))) == 2


# ------------------------------------------------------------------------------- judge


def test_eval_without_a_judge_counts_not_judged(judged_records: Path, tmp_path: Path) -> None:
    from m3gym.eval.summary import judge_line

    result = run_eval(_cfg(judged_records), tmp_path / "run")
    (rec,) = result.rows
    assert rec["status"] == "ok" and rec["answer_correct"] is True
    assert rec["judge"] == {"judge": None, "checkpoints": 1, "judged": 0, "passed": 0,
                            "errors": 0, "not_judged": 1}
    assert "judge" not in rec["metrics"]
    assert result.summary["overall"]["judge"] == {
        "episodes": 1, "checkpoints": 1, "judged": 0, "passed": 0, "errors": 0,
        "not_judged": 1, "rate": None}
    assert judge_line(result.summary["overall"]["judge"]) == (
        "judge (VLM-judged checkpoints, not in S/V): - = 0/0 passed; 1 not judged "
        "(no --judge-endpoint) [1 episode(s)]")


def test_eval_with_the_fake_judge_stores_verdicts_apart_from_s_and_v(
        judged_records: Path, tmp_path: Path) -> None:
    pytest.importorskip("openai")
    from tests.fake_openai_server import FakeOpenAIServer

    plain = run_eval(_cfg(judged_records), tmp_path / "plain").rows[0]
    with FakeOpenAIServer(default={"content": "Yes."}) as server:
        result = run_eval(_cfg(judged_records, judge_endpoint=server.base_url,
                               judge_model="judge-vlm"), tmp_path / "run")
        bodies = server.chat_requests
    (rec,) = result.rows
    assert rec["judge"] == {"judge": 1.0, "checkpoints": 1, "judged": 1, "passed": 1,
                            "errors": 0, "not_judged": 0}
    assert rec["metrics"] == plain["metrics"]  # S, V and the rest untouched by the judge
    trace = json.loads((tmp_path / "run" / "traces" / f"{rec['episode_id']}.json").read_text())
    (cp_id,) = trace["judge"]["verdicts"]
    assert trace["judge"]["verdicts"][cp_id] == {"axis": "V", "passed": True,
                                                 "replies": ["Yes."], "error": None}
    assert len(bodies) == 1 and bodies[0]["model"] == "judge-vlm"
    assert bodies[0]["messages"][1]["content"][1] == {
        "type": "text", "text": "Is the discount sticker readable?"}
    assert result.summary["overall"]["judge"]["rate"] == 1.0
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["judge_endpoint"] == server.base_url and config["judge_model"] == "judge-vlm"

    from m3gym.eval.report import load_runs, render_markdown

    md = render_markdown(load_runs([tmp_path / "run", tmp_path / "plain"]))
    assert "## Judge checkpoints" in md
    assert "| run | 1 | 1 | 1 | 1 | 1.000 | 0 | 0 |" in md
    assert "| plain | 1 | 1 | 0 | 0 | - | 0 | 1 |" in md


def test_a_failing_judge_is_a_failed_verdict(judged_records: Path, tmp_path: Path) -> None:
    pytest.importorskip("openai")
    from tests.fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer(default={"status": 400, "message": "bad request"}) as server:
        result = run_eval(_cfg(judged_records, judge_endpoint=server.base_url,
                               judge_model="m"), tmp_path / "run")
    (rec,) = result.rows
    assert rec["status"] == "ok" and rec["answer_correct"] is True
    assert rec["judge"]["judge"] == 0.0 and rec["judge"]["errors"] == 1


def test_judge_flags_on_the_eval_cli() -> None:
    from m3gym.cli import build_parser, main

    args = build_parser().parse_args(["eval", "--judge-endpoint", "http://h/v1",
                                      "--judge-model", "m"])
    assert (args.judge_endpoint, args.judge_model) == ("http://h/v1", "m")
    off = build_parser().parse_args(["eval"])
    assert (off.judge_endpoint, off.judge_model) == (None, None)
    assert main(["eval", "--judge-model", "m", "--quiet"]) == 2


# ------------------------------------------------------------------------------- report


def test_report_warns_when_the_records_file_or_a_task_changed(
        judged_records: Path, tmp_path: Path, capsys: Any) -> None:
    from m3gym.cli import main
    from m3gym.eval.report import load_runs, records_warnings

    run = tmp_path / "run"
    run_eval(_cfg(judged_records), run)
    assert records_warnings(load_runs([run])) == []

    # the JSONL file as it was, but the record's image changed: only the task hash says so
    image = judged_records.parent / "image" / "image_0003.png"
    cv2.imwrite(str(image), np.full((200, 200, 3), 7, np.uint8))
    (warning,) = records_warnings(load_runs([run]))
    assert warning.startswith(f"run run: 1 task(s) built from {judged_records} no longer match "
                              "the run's task_hash, e.g. ")

    # the file edited: its sha256 differs (and the task with it)
    row = json.loads(judged_records.read_text())
    row["question"] += " (edited)"
    judged_records.write_text(json.dumps(row) + "\n", encoding="utf-8")
    warnings = records_warnings(load_runs([run]))
    assert len(warnings) == 2
    assert warnings[0].startswith(f"run run: the records file {judged_records} changed since "
                                  "the run (sha256 ")
    capsys.readouterr()
    assert main(["report", str(run), "--no-full-images"]) == 0
    err = capsys.readouterr().err
    assert f"m3gym: warning: run run: the records file {judged_records} changed" in err
    md = (run / "report.md").read_text()
    assert "changed since the run" in md and "no longer match" in md
    page = (run / "report.html").read_text()
    assert "changed since the run" in page
    assert "Judge checkpoints" in page and "counted as not judged" in page

    judged_records.unlink()
    (missing,) = records_warnings(load_runs([run]))
    assert missing.startswith(f"run run: its records file {judged_records} is missing")
