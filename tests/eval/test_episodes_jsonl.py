"""Unreadable lines of a run's episodes.jsonl are never lost in silence.

``m3gym report`` counts and names each (stderr and the report); ``m3gym eval --resume`` names
them, removes them (backup kept, file replaced atomically) and reruns their episodes, so the file
ends line for line as an uninterrupted run's.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from m3gym.cli import main
from m3gym.eval.report import load_run, render_html, render_markdown
from m3gym.eval.runner import (
    EvalConfig,
    UnreadableLine,
    drop_unreadable_lines,
    read_episode_rows,
    read_episode_rows_checked,
    run_eval,
)

ARGS = ["eval", "--env", "M3Bench-L1", "--agent", "random", "--episodes", "3", "--quiet"]


def _strip(line: str) -> dict:
    return {k: v for k, v in json.loads(line).items() if k != "wall_s"}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """One uninterrupted three-episode run (copied by each test that changes it)."""
    out = tmp_path_factory.mktemp("runs") / "full"
    assert main([*ARGS, "--out", str(out)]) == 0
    return out


@pytest.fixture
def run(finished_run, tmp_path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(finished_run, out)
    return out


def _cut_last_line(run: Path, keep: int = 40) -> list[str]:
    """Cut the last record mid-write (as kill -9 would); return the uninterrupted lines."""
    path = run / "episodes.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:keep])
    return lines


def test_report_counts_and_names_a_truncated_last_line(run, capsys):
    _cut_last_line(run)
    path = run / "episodes.jsonl"
    capsys.readouterr()
    assert main(["report", str(run)]) == 0
    err = capsys.readouterr().err
    assert f"1 unreadable line in {path}" in err
    assert f"{path}:3: could not parse JSON" in err and "Traceback" not in err
    md = (run / "report.md").read_text()
    page = (run / "report.html").read_text()
    for text in (md, page):
        assert "1 unreadable line in" in text and "episodes.jsonl:3: could not parse JSON" in text
    assert "<h2>Warnings</h2>" in page and "## Warnings" in md
    assert load_run(run).summary["overall"]["episodes"] == 2  # the cut episode is not counted


def test_resume_removes_junk_keeps_a_backup_and_reruns(run, capsys):
    lines = _cut_last_line(run)
    path = run / "episodes.jsonl"
    with path.open("r+") as f:  # a valid JSON line that is no row, between two rows
        kept = f.read().splitlines(keepends=True)
        f.seek(0)
        f.write("".join([kept[0], '{"note": "not a record"}\n', *kept[1:]]))
        f.truncate()
    original = path.read_bytes()
    capsys.readouterr()
    assert main([*ARGS, "--out", str(run), "--resume"]) == 0
    err = capsys.readouterr().err
    assert f"removed 2 unreadable lines from {path}" in err
    assert f"{path}:2: not an episode row: no 'episode_id'" in err
    assert f"{path}:4: could not parse JSON" in err and "Traceback" not in err
    backups = sorted(run.glob("episodes.jsonl.bak-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == original
    assert str(backups[0]) in err
    final = path.read_text().splitlines()
    assert [_strip(x) for x in final] == [_strip(x) for x in lines]  # line for line, rerun last
    assert read_episode_rows_checked(path)[1] == []
    assert not list(run.glob(".episodes.jsonl.tmp-*"))
    capsys.readouterr()
    assert main([*ARGS, "--out", str(run), "--resume"]) == 0  # clean now: nothing to do
    assert "unreadable" not in capsys.readouterr().err
    assert len(list(run.glob("episodes.jsonl.bak-*"))) == 1
    assert path.read_text().splitlines() == final


def test_library_resume_reports_removed_lines(run):
    _cut_last_line(run)
    cfg = EvalConfig(envs=("M3Bench-L1",), agent="random", episodes=3)
    told = []
    result = run_eval(cfg, run, resume=True, on_unreadable=lambda ls, b: told.append((ls, b)))
    assert result.ran == 1 and len(result.removed) == 1 and result.removed[0].line == 3
    assert told == [(result.removed, result.backup)] and result.backup.is_file()
    _cut_last_line(run)
    with pytest.warns(UserWarning, match=r"removed 1 unreadable line in .*episodes\.jsonl"):
        run_eval(cfg, run, resume=True)


@pytest.mark.parametrize("line, reason", [
    ("[1, 2]", "an array in JSON, not an object"),
    ('"text"', "a string in JSON, not an object"),
    ("null", "null in JSON, not an object"),
    ("3.5", "a number in JSON, not an object"),
    ('{"status": "ok"}', "no 'episode_id'"),
    ('{"episode_id": "e"}', "no 'status'"),
    ('{"episode_id": 3, "status": "ok"}', "'episode_id' is not a string"),
    ('{"episode_id": "e", "status": "ok", "index": "1"}', "'index' is not an integer"),
    ('{"episode_id": "e", "status": "ok",', "could not parse JSON"),
    ("\udcff", "not UTF-8 text"),
])
def test_lines_that_are_not_records_are_named(tmp_path, line, reason):
    path = tmp_path / "episodes.jsonl"
    good = json.dumps({"episode_id": "a", "status": "ok", "index": 0})
    data = (good + "\n").encode() + line.encode("utf-8", "surrogateescape") + b"\n\n"
    path.write_bytes(data)
    rows, bad = read_episode_rows_checked(path)
    assert [r["episode_id"] for r in rows] == ["a"]
    assert len(bad) == 1 and bad[0].line == 2 and bad[0].path == path
    assert reason in bad[0].reason and str(bad[0]).startswith(f"{path}:2: ")
    with pytest.warns(UserWarning, match=rf"1 unreadable line in .*: {path}:2"):
        assert read_episode_rows(path) == rows


def test_markdown_report_shows_junk_as_written(tmp_path, run):
    path = run / "episodes.jsonl"
    path.write_text(path.read_text() + "**bold** `x` <b>|</b>\n")
    loaded = load_run(run)
    assert [u.line for u in loaded.unreadable] == [4]
    md = render_markdown([loaded])
    assert r"\*\*bold\*\* \`x\` \<b\>\|\</b\>" in md
    assert "&#x27;**bold** `x` &lt;b&gt;|&lt;/b&gt;" in render_html([loaded], max_episodes=0)


def test_backups_never_overwrite_each_other(tmp_path):
    path = tmp_path / "episodes.jsonl"
    good = json.dumps({"episode_id": "a", "status": "ok"})
    contents = [f"{good}\nfirst junk\n", f"{good}\nsecond junk"]
    for text in contents:
        path.write_text(text)
        removed, backup = drop_unreadable_lines(path)
        assert len(removed) == 1 and backup is not None
    backups = sorted(tmp_path.glob("episodes.jsonl.bak-*"))  # -2 sorts after its stamp
    assert [b.read_text() for b in backups] == contents
    assert path.read_text() == good + "\n"
    assert drop_unreadable_lines(path) == ([], None)  # clean: nothing written
    assert drop_unreadable_lines(tmp_path / "missing.jsonl") == ([], None)


# ------------------------------------------------------------------------------ property
def _is_record(raw: bytes) -> bool:
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return (isinstance(obj, dict) and isinstance(obj.get("episode_id"), str)
            and isinstance(obj.get("status"), str)
            and type(obj.get("index", 0)) is int
            and type(obj.get("reward")) in (int, float, type(None))  # RECORD_SCHEMA
            and isinstance(obj.get("metrics", {}), (dict, type(None))))


_junk = st.one_of(
    st.binary(max_size=40),
    st.text(max_size=40).map(lambda t: t.encode("utf-8")),
    st.builds(lambda r, k: r[:k], st.just(b'{"episode_id": "x", "status": "ok", "index": 0}'),
              st.integers(0, 46)),
    st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                 lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c,
                                                                      max_size=3),
                 max_leaves=6).map(lambda v: json.dumps(v).encode()),
).map(lambda b: b.replace(b"\n", b" "))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.tuples(st.just("row"), st.integers(0, 5)),
                          st.tuples(st.just("junk"), _junk)), max_size=12),
       st.booleans())
def test_arbitrary_junk_never_crashes_and_is_all_reported(items, trailing_newline):
    lines: list[bytes] = []
    for kind, value in items:
        if kind == "row":
            lines.append(json.dumps({"episode_id": f"e{value}", "status": "ok",
                                     "index": value, "n": len(lines)}).encode())
        else:
            lines.append(value)
    data = b"\n".join(lines) + (b"\n" if trailing_newline and lines else b"")
    expected_bad = [i + 1 for i, raw in enumerate(lines) if raw.strip() and not _is_record(raw)]
    latest = {}
    for raw in lines:
        if raw.strip() and _is_record(raw):
            row = json.loads(raw)
            latest[row["episode_id"]] = row
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "episodes.jsonl"
        path.write_bytes(data)
        rows, bad = read_episode_rows_checked(path)
        assert [u.line for u in bad] == expected_bad
        assert all(isinstance(u, UnreadableLine) and u.reason for u in bad)
        assert {r["episode_id"]: r for r in rows} == latest
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            removed, backup = drop_unreadable_lines(path)
        assert removed == bad
        if bad:
            assert backup is not None and backup.read_bytes() == data
            kept = [raw for raw in lines if raw.strip() and _is_record(raw)]
            assert path.read_bytes() == b"".join(raw + b"\n" for raw in kept)
            assert read_episode_rows_checked(path) == (rows, [])
        else:
            assert backup is None and path.read_bytes() == data


def test_sft_jsonl_reader_names_a_bad_line(tmp_path):
    from m3gym.config_errors import ConfigError
    from m3gym.integrations.export import load_sft_jsonl

    path = tmp_path / "sft.jsonl"
    path.write_text('{"messages": [], "images": []}\n\n{"messages": [], "ima\n')
    with pytest.raises(ConfigError, match=rf"^{path}: line 3, column 18: could not parse JSON: Unterminated"):
        load_sft_jsonl(path)
    path.write_text('{"messages": [], "images": []}\n[1]\n')
    with pytest.raises(ConfigError, match=rf"^{path}: line 2: not an SFT record"):
        load_sft_jsonl(path)
    path.write_text('{"messages": [], "images": []}\n')
    assert load_sft_jsonl(path) == [{"messages": [], "images": []}]
