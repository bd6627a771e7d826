"""Recording an MCP server's episodes: a run folder ``m3gym report`` reads like any other."""

import json

import pytest

from m3gym.mcp.recording import RunFolder


def test_mcp_run_folder_repairs_before_appending(tmp_path):
    folder = tmp_path / "mcp"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"agent": "mcp"}))
    good = json.dumps({"episode_id": "a", "status": "ok", "index": 0})
    (folder / "episodes.jsonl").write_text(f"{good}\n{good[:20]}")
    with pytest.warns(UserWarning, match=r"removed 1 unreadable line"):
        rf = RunFolder(folder)
    assert rf.removed[0].line == 2 and rf.backup is not None and rf.backup.is_file()
    assert (folder / "episodes.jsonl").read_text() == good + "\n"
    assert [r["episode_id"] for r in rf.rows] == ["a"]


def test_a_folder_that_is_not_an_mcp_run_is_refused(tmp_path):
    other = tmp_path / "eval-run"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"agent": "random"}))
    with pytest.raises(FileExistsError, match="not an MCP run folder"):
        RunFolder(other)
    (other / "config.json").unlink()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not an MCP run folder"):
        RunFolder(other)
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(FileExistsError, match="not a folder"):
        RunFolder(afile)


def test_ids_already_recorded_get_a_suffix(tmp_path):
    folder = tmp_path / "mcp"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"agent": "mcp"}))
    lines = [json.dumps({"episode_id": e, "status": "ok", "index": i})
             for i, e in enumerate(["a", "a~2"])]
    (folder / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    rf = RunFolder(folder)
    assert rf.next_index() == 2
    assert rf.unique_id("b") == "b"
    assert rf.unique_id("a") == "a~3"


def test_settings_once_shared_stay_recorded(tmp_path):
    folder = tmp_path / "mcp"
    RunFolder(folder, settings={"envs": ["M3Bench-L1"], "shared_episodes": True})
    RunFolder(folder, settings={"envs": ["M3Bench-L1"], "shared_episodes": False})
    config = json.loads((folder / "config.json").read_text())
    assert config["agent"] == "mcp" and config["mcp_server"]["shared_episodes"] is True
