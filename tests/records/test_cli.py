"""``m3gym records``: the check command's report, random files, CSV cells (m3gym.records.cli)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from m3gym.records import RecordsError, load_records
from m3gym.records.cli import add_parser  # noqa: F401 (the group imports)
from m3gym.tasks.registry import make_task
from tests.records.helpers import base_record, text_image, write_jsonl

# ---------------------------------------------------------------------------------------------
# the CLI


def test_records_check_cli_prints_counts_rejections_and_warnings(tmp_path, capsys):
    from m3gym.cli import main

    big = base_record(tmp_path, "big")
    big["evidence"] = [{"box": text_image(tmp_path / "big.png", "BIG-1", (100, 100), scale=2.0)}]
    big["images"] = ["big.png"]
    good = write_jsonl(tmp_path / "good.jsonl", [base_record(tmp_path, "a"), big])
    assert main(["records", "check", str(good)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{good}: 2 accepted, 0 rejected, 1 warning(s) (sha256 ")
    assert out[1:] == ["warning line 2 (id big): needs_no_tool: the evidence is already legible "
                       "at view size (768 px longest side)"]
    bad = write_jsonl(tmp_path / "bad.jsonl", [base_record(tmp_path, "a"),
                                               base_record(tmp_path, "b", question="")])
    assert main(["records", "check", str(bad)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{bad}: 1 accepted, 1 rejected, 0 warning(s)")
    assert out[1:] == ["rejected line 2 (id b): empty question"]
    assert main(["records", "check", str(tmp_path / "none.jsonl")]) == 1
    assert "no such records file" in capsys.readouterr().err


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(st.text(max_size=40), max_size=5), suffix=st.sampled_from(
    [".jsonl", ".csv", ".json"]))
def test_random_files_never_traceback(tmp_path_factory, lines, suffix):
    path = tmp_path_factory.mktemp("f") / f"r{suffix}"
    path.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
    with pytest.raises(RecordsError) as info:
        load_records(path)
    assert info.value.problems


def test_csv_cells_hold_required_ops_as_json(tmp_path, fixture_set):
    import csv

    rows = [json.loads(line) for line in fixture_set.read_text().splitlines()]
    rows[0]["required_ops"] = [{"op": "rotate"}, {"op": "enhance"}]
    with (tmp_path / "r.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, sorted({k for r in rows for k in r}))
        w.writeheader()
        for r in rows:
            w.writerow({k: (json.dumps(v) if not isinstance(v, str) else v) for k, v in r.items()})
    from_csv = load_records(tmp_path / "r.csv")
    from_dicts = load_records(rows, base_dir=fixture_set.parent)
    assert [r.required_ops for r in from_csv] == [r.required_ops for r in from_dicts]
    assert [op.op for op in from_csv[0].required_ops] == ["rotate", "enhance"]


def test_the_choice_leak_probe_skips_open_answer_records():
    from m3gym.audit.leaks import iter_tasks_with_choices

    seeds = range(13)  # the demo set's train split holds open-answer and choice records
    tasks = list(iter_tasks_with_choices("records", seeds))
    opened = [make_task("records", s) for s in seeds]
    assert any(t.choices is None for t in opened)
    assert tasks and all(t.choices and len(t.choices) >= 2 for t in tasks)
    assert len(tasks) == sum(t.choices is not None for t in opened)
