"""Preparing a run folder (fresh or resumed) and writing an episode's files into it."""

import io
import json

import pytest

from m3gym.eval.config import EpisodeOutcome, EvalConfig
from m3gym.eval.run_folder_write import (
    prepare_run_folder,
    records_entry,
    write_outcome,
    write_run_config,
)

CFG = EvalConfig(envs=("M3Bench-L1",), agent="random", episodes=2)


def test_a_fresh_folder_gets_its_layout(tmp_path) -> None:
    out = tmp_path / "run"
    prepared = prepare_run_folder(out, CFG, resume=False)
    assert prepared.rows == [] and prepared.removed == [] and prepared.backup is None
    assert (out / "traces").is_dir() and (out / "thumbs").is_dir()
    with pytest.raises(FileExistsError, match="already exists and is not empty"):
        prepare_run_folder(out, CFG, resume=False)  # traces/ and thumbs/ are in it now
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(FileExistsError, match="exists and is not a folder"):
        prepare_run_folder(afile, CFG, resume=True)


def test_a_resumed_folder_must_be_the_same_run(tmp_path) -> None:
    out = tmp_path / "run"
    prepare_run_folder(out, CFG, resume=False)
    with pytest.raises(FileExistsError, match="not an m3gym run folder"):
        prepare_run_folder(out, CFG, resume=True)  # no config.json yet
    write_run_config(out, CFG, ["M3Bench-L1.faint_text.1"], {"m3gym": "0"}, None)
    config = json.loads((out / "config.json").read_text())
    assert config["episode_ids"] == ["M3Bench-L1.faint_text.1"] and config["frozen_tasks"] is None
    assert config["agent"] == "random" and config["versions"] == {"m3gym": "0"}
    line = json.dumps({"episode_id": "M3Bench-L1.faint_text.1", "status": "ok", "index": 0})
    (out / "episodes.jsonl").write_text(line + "\n" + line[:10])
    prepared = prepare_run_folder(out, CFG, resume=True)
    assert [r["episode_id"] for r in prepared.rows] == ["M3Bench-L1.faint_text.1"]
    assert [u.line for u in prepared.removed] == [2] and prepared.backup.is_file()
    other = EvalConfig(envs=CFG.envs, agent="random", seed=1)
    with pytest.raises(ValueError, match="cannot resume .*: seed was 0, now 1"):
        prepare_run_folder(out, other, resume=True)


def test_an_outcome_is_written_trace_and_thumbs_first(tmp_path) -> None:
    (tmp_path / "traces").mkdir()
    outcome = EpisodeOutcome({"episode_id": "e1", "status": "ok"}, {"steps": []},
                             {0: b"jpeg0", 2: b"jpeg2"})
    jsonl = io.StringIO()
    write_outcome(tmp_path, outcome, jsonl)
    assert json.loads((tmp_path / "traces" / "e1.json").read_text()) == {"steps": []}
    assert (tmp_path / "thumbs" / "e1" / "2.jpg").read_bytes() == b"jpeg2"
    assert json.loads(jsonl.getvalue()) == {"episode_id": "e1", "status": "ok"}
    assert jsonl.getvalue().endswith("\n")


def test_only_a_records_run_fingerprints_its_records() -> None:
    assert records_entry({}) == {}
    assert records_entry({"records": None, "max_images": 8}) == {}
