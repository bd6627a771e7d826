"""Corrupt run folders: each file of the layout replaced by something else, for both readers.

A run folder is read back by ``m3gym eval --resume`` and ``m3gym report``. Each file of its
layout (``config.json``, ``episodes.jsonl``, ``summary.json``, ``traces/``, ``thumbs/``, one
trace, one thumbnail) is replaced by a directory, a symbolic link to one, a broken link, a FIFO,
an empty file, binary garbage, Latin-1 text and valid JSON of the wrong shape. Every case ends
in a named one-line error (exit status 2) or, for what the report can do without (a trace, a
thumbnail), a named warning while the report goes on. Never a traceback, never a hang, and
``--resume`` never changes ``episodes.jsonl`` when it refuses a folder.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from m3gym.cli import main
from m3gym.eval.run_folder import (
    RUN_CONFIG_SCHEMA,
    RunFolderError,
    check_run_config,
    path_kind,
)
from m3gym.eval.runner import EvalConfig, read_run_config

ARGS = ["eval", "--env", "M3Bench-L1", "--agent", "random", "--episodes", "2", "--quiet",
        "--metrics", "m3gym,amme"]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """One uninterrupted two-episode run (copied by each test that changes it)."""
    out = tmp_path_factory.mktemp("runs") / "full"
    assert main([*ARGS, "--out", str(out)]) == 0
    return out


@pytest.fixture(autouse=True)
def no_plots(monkeypatch):
    """The report's plots (most of its time) are tested elsewhere: drawn by one test here."""
    monkeypatch.setattr("m3gym.eval.report.plot_images", lambda runs: {})


@pytest.fixture
def run(finished_run, tmp_path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    return out


def _trace_name(run: Path) -> str:
    return sorted(p.name for p in (run / "traces").iterdir())[0]


def _replace(path: Path, kind: str, tmp: Path) -> None:
    """Replace ``path`` (file or folder) by ``kind``."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    if kind == "dir":
        path.mkdir()
        (path / "inside").write_text("x")
    elif kind == "symlink-dir":
        target = tmp / "elsewhere"
        target.mkdir(exist_ok=True)
        path.symlink_to(target)
    elif kind == "dangling":
        path.symlink_to(tmp / "no-such-target")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "garbage":
        path.write_bytes(bytes(range(256)) * 4)
    elif kind == "latin1":
        path.write_bytes('{"agent": "caf\xe9"}'.encode("latin-1"))
    elif kind == "array":
        path.write_text("[1, 2]")
    elif kind == "null":
        path.write_text("null")
    else:
        raise AssertionError(kind)


def _main(argv: list[str], capsys) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


def _resume(run: Path, capsys) -> tuple[int, str]:
    return _main([*ARGS, "--out", str(run), "--resume"], capsys)


def _report(run: Path, capsys) -> tuple[int, str]:
    return _main(["report", str(run), "--no-full-images"], capsys)


def _one_error(err: str, path: Path, phrase: str) -> None:
    """``err`` is one ``m3gym: error:`` line naming ``path`` and saying ``phrase``."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"m3gym: error: {path}: "), err
    assert phrase in lines[0], err


KINDS_WRONG = {  # kind -> what the error says
    "dir": "is a directory, not a file",
    "symlink-dir": "is a directory, not a file",
    "dangling": "is a broken symbolic link, not a file",
    "fifo": "is a FIFO (named pipe), not a file",
}
CONTENT = {  # config.json content -> what the error says
    "empty": "could not parse JSON",
    "garbage": "not UTF-8 text (byte 128)",
    "latin1": "not UTF-8 text (byte 14)",
    "array": "expected a JSON object (the run's config), got [1, 2]",
    "null": "expected a JSON object (the run's config), got nothing (null)",
}


# ------------------------------------------------------------------------------ the layout
@pytest.mark.parametrize("name", ["config.json", "episodes.jsonl", "summary.json"])
@pytest.mark.parametrize("kind", sorted(KINDS_WRONG))
def test_a_file_that_is_not_a_file_is_named_by_resume(run, tmp_path, capsys, name, kind):
    before = (run / "episodes.jsonl").read_bytes()
    _replace(run / name, kind, tmp_path)
    rc, err = _resume(run, capsys)
    assert rc == 2
    _one_error(err, run / name, KINDS_WRONG[kind])
    assert "move it away" in err
    if name != "episodes.jsonl":
        assert (run / "episodes.jsonl").read_bytes() == before  # nothing lost, nothing run


@pytest.mark.parametrize("name", ["config.json", "episodes.jsonl"])
@pytest.mark.parametrize("kind", sorted(KINDS_WRONG))
def test_a_file_that_is_not_a_file_is_named_by_report(run, tmp_path, capsys, name, kind):
    _replace(run / name, kind, tmp_path)
    rc, err = _report(run, capsys)
    assert rc == 2
    _one_error(err, run / name, KINDS_WRONG[kind])
    assert not (run / "report.html").exists()


@pytest.mark.parametrize("kind", ["empty", "garbage", "dangling", "fifo"])
@pytest.mark.parametrize("name", ["traces", "thumbs"])
def test_a_folder_that_is_not_a_folder(run, tmp_path, capsys, name, kind):
    _replace(run / name, kind, tmp_path)
    what = {"dangling": "a broken symbolic link", "fifo": "a FIFO (named pipe)"}.get(kind,
                                                                                     "a file")
    rc, err = _resume(run, capsys)
    assert rc == 2
    _one_error(err, run / name, f"is {what}, not a folder")
    rc, err = _report(run, capsys)  # the report does without: named, and it goes on
    assert rc == 0
    assert f"m3gym: warning: {run / name}: is {what}, not a folder" in err
    shown = "no trace is shown" if name == "traces" else "no image is shown"
    assert shown in err and shown in (run / "report.md").read_text()
    assert shown in (run / "report.html").read_text()


def test_summary_json_garbage_is_rewritten_by_resume(run, capsys):
    (run / "summary.json").write_bytes(b"\xff\x00garbage")
    rc, _ = _resume(run, capsys)
    assert rc == 0 and json.loads((run / "summary.json").read_text())["overall"]
    (run / "summary.json").write_bytes(b"\xff\x00garbage")  # the report recomputes it
    assert _report(run, capsys)[0] == 0


@pytest.mark.parametrize("kind", sorted(CONTENT))
def test_config_json_content_is_named_by_both(run, tmp_path, capsys, kind):
    _replace(run / "config.json", kind, tmp_path)
    for call in (_resume, _report):
        rc, err = call(run, capsys)
        assert rc == 2
        _one_error(err, run / "config.json", CONTENT[kind])


@pytest.mark.parametrize("key, value, expected", [
    ("seed", "zero", "key 'seed': expected an integer, got 'zero'"),
    ("envs", "M3Bench-L1", "key 'envs': expected a list of strings, got 'M3Bench-L1'"),
    ("envs", ["M3Bench-L1", 3], "key 'envs[1]': expected a string, got 3"),
    ("agent", 7, "key 'agent': expected a string, got 7"),
    ("agent_args", [1], "key 'agent_args': expected an object, got [1]"),
    ("samples", "2", "key 'samples': expected an integer, got '2'"),
    ("seed", True, "key 'seed': expected an integer, got True"),
    ("thumb_size", "big", "key 'thumb_size': expected an integer, got 'big'"),
    ("allow_changed_tasks", "no", "key 'allow_changed_tasks': expected true or false, got 'no'"),
    ("versions", "x", "key 'versions': expected an object or null, got 'x'"),
    ("frozen_tasks", {"changed": "abc"}, "key 'frozen_tasks.changed': expected a list of strings"),
    ("records", {"source": "r.jsonl"}, "key 'records.sha256': missing"),
    ("episode_ids", 3, "key 'episode_ids': expected a list of strings, got 3"),
])
def test_config_json_wrong_type_is_named_by_both(run, capsys, key, value, expected):
    path = run / "config.json"
    data = json.loads(path.read_text())
    data[key] = value
    path.write_text(json.dumps(data))
    for call in (_resume, _report):
        rc, err = call(run, capsys)
        assert rc == 2
        _one_error(err, path, expected)


def test_config_json_unknown_keys_and_older_runs_are_fine(run, capsys):
    path = run / "config.json"
    data = json.loads(path.read_text())
    data["added_by_a_newer_m3gym"] = {"x": 1}
    del data["versions"]  # written by an older m3gym
    path.write_text(json.dumps(data))
    assert _report(run, capsys)[0] == 0
    assert _resume(run, capsys)[0] == 0


def test_the_schema_covers_every_eval_config_field():
    from dataclasses import fields

    assert {f.name for f in fields(EvalConfig)} <= set(RUN_CONFIG_SCHEMA)
    cfg = EvalConfig(envs=("M3Bench-L1",), agent="random", manifest="m.json",
                     judge_endpoint="http://x", judge_model="m")
    assert check_run_config(cfg.to_dict(), "config.json") == cfg.to_dict()


def test_the_mcp_run_folder_config_passes():
    check_run_config({"agent": "mcp", "envs": [], "split": "mcp", "seed": 0, "reward": None,
                      "versions": {"m3gym": "0.1.0", "manifest": 3}}, "config.json")


def test_a_run_folder_error_pickles_and_is_a_value_error(tmp_path):
    import pickle

    from m3gym.config_errors import ConfigError

    (tmp_path / "config.json").write_text('{"seed": "x"}')
    with pytest.raises(RunFolderError) as info:
        read_run_config(tmp_path / "config.json")
    exc = info.value
    assert isinstance(exc, ConfigError) and isinstance(exc, ValueError)
    assert exc.key == "seed" and exc.source == str(tmp_path / "config.json")
    again = pickle.loads(pickle.dumps(exc))
    assert type(again) is RunFolderError and str(again) == str(exc)


# ------------------------------------------------------------------------------ permissions
@pytest.mark.parametrize("name", ["config.json", "episodes.jsonl"])
def test_an_unreadable_file_is_named(run, capsys, monkeypatch, name):
    """A file that cannot be read (permissions) is named (root reads anything: simulated)."""
    real = Path.read_bytes

    def denied(self: Path) -> bytes:
        if self == run / name:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", denied)
    for call in (_resume, _report):
        rc, err = call(run, capsys)
        assert rc == 2
        _one_error(err, run / name, "cannot be read (Permission denied)")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root reads files whatever their permissions")
def test_a_chmod_000_file_is_named(run, capsys):
    path = run / "episodes.jsonl"
    path.chmod(0)
    try:
        rc, err = _report(run, capsys)
        assert rc == 2
        _one_error(err, path, "cannot be read (Permission denied)")
    finally:
        path.chmod(0o644)


def test_path_kind():
    assert path_kind(Path("/")) == "folder"
    assert path_kind(Path("/no/such/thing")) == "missing"


# ------------------------------------------------------------------------------ traces
TRACE_KINDS = {
    "empty": "line 1, column 1: could not parse JSON: Expecting value",
    "garbage": "not UTF-8 text (byte 128)",
    "latin1": "not UTF-8 text (byte 14)",
    "array": "expected a JSON object (an episode trace), got [1, 2]",
    "null": "expected a JSON object (an episode trace), got null",
    "dir": "is a directory, not a file",
    "symlink-dir": "is a directory, not a file",
    "dangling": "is a broken symbolic link, not a file",
    "fifo": "is a FIFO (named pipe), not a file",
}


@pytest.mark.parametrize("kind", sorted(TRACE_KINDS))
def test_a_garbage_trace_is_named_and_skipped(run, tmp_path, capsys, kind):
    name = _trace_name(run)
    path = run / "traces" / name
    _replace(path, kind, tmp_path)
    rc, err = _report(run, capsys)
    assert rc == 0
    assert "run run: 1 file skipped" in err
    assert f"m3gym: warning: {path}: {TRACE_KINDS[kind]}" in err
    md = (run / "report.md").read_text()
    page = (run / "report.html").read_text()
    assert "1 file skipped" in md and "1 file skipped" in page
    assert name.replace("_", "\\_") in md and name in page  # (Markdown escapes _)
    assert page.count("(trace missing)") == 1  # the other episode's trace is shown
    assert "Agentic-MME metrics" in md  # the peer tables go on without it
    with pytest.warns(UserWarning, match="1 trace left out of the peer metrics"):
        rc, _ = _resume(run, capsys)  # nothing to run; the summary's peer blocks skip it
    assert rc == 0


def test_a_corrupt_run_still_gets_its_plots(run, capsys, monkeypatch):
    monkeypatch.undo()  # the real plots
    (run / "traces" / _trace_name(run)).write_bytes(b"\xff garbage")
    sorted((run / "thumbs").rglob("*.jpg"))[-1].write_bytes(b"not a jpeg")  # the other one's
    rc, err = _main(["report", str(run)], capsys)
    assert rc == 0 and "run run: 2 files skipped" in err
    assert (run / "report.html").read_text().count("data:image/png;base64,") == 3


@pytest.mark.parametrize("change, expected", [
    (lambda t: t.update(steps=5), "key 'steps': expected a list of objects, got 5"),
    (lambda t: t["steps"][0].update(reward=None), "key 'steps[0].reward': expected a number"),
    (lambda t: t["steps"][0].update(calls=[3]), "key 'steps[0].calls[0]': expected an object"),
    (lambda t: t.update(images=[{"index": "0"}]), "key 'images[0].index': expected an integer"),
    (lambda t: t.update(images=[{"thumb": "x"}]), "key 'images[0].index': missing"),
    (lambda t: t.update(task="q"), "key 'task': expected an object or null, got 'q'"),
    (lambda t: t["task"].update(checkpoints=[{"id": [1]}]),
     "key 'task.checkpoints[0].id': expected a string or an integer, got [1]"),
    (lambda t: t.update(audit={"checkpoints": {"results": [{"checkpoint_id": {}}]}}),
     "key 'audit.checkpoints.results[0].checkpoint_id'"),
])
def test_a_trace_of_the_wrong_shape_is_named_with_its_key(run, capsys, change, expected):
    path = run / "traces" / _trace_name(run)
    trace = json.loads(path.read_text())
    change(trace)
    path.write_text(json.dumps(trace))
    rc, err = _report(run, capsys)
    assert rc == 0
    assert f"m3gym: warning: {path}: {expected}" in err


def test_a_missing_trace_is_named(run, capsys):
    path = run / "traces" / _trace_name(run)
    path.unlink()
    rc, err = _report(run, capsys)
    assert rc == 0 and f"{path}: missing (the episode has a row but no trace)" in err


def test_an_unfinished_trace_is_left_out_of_the_peer_tables_and_named(run, capsys):
    path = run / "traces" / _trace_name(run)
    trace = json.loads(path.read_text())
    trace["status"] = "agent_error"
    path.write_text(json.dumps(trace))
    rc, err = _report(run, capsys)
    assert rc == 0 and "not used by the peer metrics: trace status is 'agent_error'" in err


def test_resume_with_a_garbage_trace_warns_in_the_peer_metrics(run, capsys):
    path = run / "traces" / _trace_name(run)
    path.write_bytes(b"\x00garbage")
    lines = (run / "episodes.jsonl").read_text().splitlines()
    (run / "episodes.jsonl").write_text(lines[0] + "\n")  # the second episode runs again
    with pytest.warns(UserWarning, match=r"1 trace left out of the peer metrics: .*"
                                         r"could not parse JSON"):
        rc, err = _resume(run, capsys)
    assert rc == 0


# ------------------------------------------------------------------------------ hostile paths
def test_a_thumbnail_path_outside_the_run_is_never_read(run, tmp_path, capsys):
    secret = tmp_path / "secret.jpg"
    secret.write_bytes(b"\xff\xd8\xff SECRET BYTES")
    path = run / "traces" / _trace_name(run)
    trace = json.loads(path.read_text())
    escapes = [str(secret), "../secret.jpg", "thumbs/../../secret.jpg"]
    for image, rel in zip(trace["images"], escapes):
        image["thumb"] = rel
    path.write_text(json.dumps(trace))
    for full in ([], ["--no-full-images"]):
        capsys.readouterr()
        assert main(["report", str(run), *full]) == 0
        err = capsys.readouterr().err
        assert "a thumbnail path outside the run's thumbs/ folder; not read" in err
        files = run / "report_files"
        assert all(b"SECRET" not in p.read_bytes() for p in files.rglob("*") if p.is_file())
        assert "SECRET" not in (run / "report.html").read_text()
    from m3gym.eval.report import load_run, render_html

    loaded = load_run(run)
    assert "SECRET" not in render_html([loaded])  # inlined thumbnails too
    assert any("outside the run's thumbs/" in r for r in loaded.skipped.values())


def test_an_episode_id_that_is_a_path_reads_no_trace_outside(run, tmp_path, capsys):
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"question": "SECRET QUESTION", "steps": [], "images": []}))
    rel = os.path.relpath(outside.with_suffix(""), run / "traces")
    path = run / "episodes.jsonl"
    row = json.loads(path.read_text().splitlines()[0])
    row.update(episode_id=rel, index=99)
    path.write_text(path.read_text() + json.dumps(row) + "\n")
    rc, err = _report(run, capsys)
    assert rc == 0 and "is not a plain file name; its trace is not read" in err
    assert "SECRET QUESTION" not in (run / "report.html").read_text()


def test_a_thumbnail_that_is_not_a_jpeg_is_named(run, capsys):
    thumb = sorted((run / "thumbs").rglob("*.jpg"))[0]
    thumb.write_bytes(b"<script>alert(1)</script>")
    for full in ([], ["--no-full-images"]):
        capsys.readouterr()
        assert main(["report", str(run), *full]) == 0
        err = capsys.readouterr().err
        assert f"{thumb}: not a JPEG file; not shown" in err
        assert "<script>alert(1)" not in (run / "report.html").read_text()


# ------------------------------------------------------------------------------ episodes
def test_resume_names_an_episode_file_it_cannot_write_before_running(run, capsys):
    lines = (run / "episodes.jsonl").read_text().splitlines()
    (run / "episodes.jsonl").write_text(lines[0] + "\n")  # the second episode runs again
    ep = json.loads(lines[1])["episode_id"]
    trace = run / "traces" / f"{ep}.json"
    trace.unlink()
    trace.mkdir()
    rc, err = _resume(run, capsys)
    assert rc == 2
    _one_error(err, trace, "is a directory, not a file (move it away: the episode runs again")
    assert (run / "episodes.jsonl").read_text() == lines[0] + "\n"
    trace.rmdir()
    thumbs = run / "thumbs" / ep
    shutil.rmtree(thumbs)
    thumbs.write_text("x")
    rc, err = _resume(run, capsys)
    assert rc == 2
    _one_error(err, thumbs, "is a file, not a folder")
    thumbs.unlink()
    thumbs.mkdir()
    (thumbs / "0.jpg").mkdir()
    rc, err = _resume(run, capsys)
    assert rc == 2
    _one_error(err, thumbs / "0.jpg", "is a directory, not a file")
    (thumbs / "0.jpg").rmdir()
    assert _resume(run, capsys)[0] == 0
    assert [json.loads(x)["episode_id"] for x in
            (run / "episodes.jsonl").read_text().splitlines()] == [
        json.loads(x)["episode_id"] for x in lines]


@pytest.mark.parametrize("key, value, reason", [
    ("reward", "x", "key 'reward': expected a number or null, got 'x'"),
    ("reward", [1], "key 'reward': expected a number or null, got [1]"),
    ("metrics", "x", "key 'metrics': expected an object or null, got 'x'"),
])
def test_a_record_with_a_wrong_type_is_an_unreadable_line(run, capsys, key, value, reason):
    path = run / "episodes.jsonl"
    lines = path.read_text().splitlines()
    row = json.loads(lines[1])
    row[key] = value
    path.write_text(lines[0] + "\n" + json.dumps(row) + "\n")
    rc, err = _report(run, capsys)
    assert rc == 0 and f"{path}:2: not an episode row: {reason}" in err
    rc, err = _resume(run, capsys)  # removed (backup kept) and run again
    assert rc == 0 and f"removed 1 unreadable line from {path}" in err
    assert [json.loads(x)["episode_id"] for x in path.read_text().splitlines()] == [
        json.loads(x)["episode_id"] for x in lines]
