"""Loading user records: every rejection reason, all at once, never a traceback (m3gym.records.load,
m3gym.records.validate)."""

from __future__ import annotations

import json
from typing import Any

import cv2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from m3gym.records import RecordsError, load_records
from tests.records.helpers import base_record, text_image, write_jsonl

# ---------------------------------------------------------------------------------------------
# validation: every rejection reason, all at once, never a traceback


REJECTIONS: dict[str, tuple[dict[str, Any], str]] = {
    "missing image": ({"images": ["nope.png"]}, "missing image 'nope.png'"),
    "box outside": ({"evidence": [{"box": [1500, 1100, 1700, 1190]}]}, "lies outside image 0"),
    "empty question": ({"question": "  "}, "empty question"),
    "unknown match": ({"answer": {"value": "QX-4817", "match": "fuzzy"}},
                      "unknown match type 'fuzzy'"),
    "choices without answer": ({"choices": ["A", "B"]},
                               "choices do not contain the answer 'QX-4817'"),
    "bad units": ({"evidence": [{"box": [1, 1, 5, 5], "units": "cm"}]}, "bad units 'cm'"),
    "unknown key": ({"colour": "red"}, "unknown key 'colour' in record"),
    "unknown evidence key": ({"evidence": [{"box": [1, 1, 9, 9], "bx": 1}]},
                             "unknown key 'bx' in evidence[0]"),
    "empty box": ({"evidence": [{"box": [10, 10, 10, 20]}]}, "is empty"),
    "no evidence": ({"evidence": []}, "nothing to verify in the process: give evidence boxes, "
                    "required_ops or judge_checkpoints"),
    "evidence not a list": ({"evidence": {"box": [1, 1, 9, 9]}}, "evidence must be a list"),
    "required op unknown": ({"required_ops": [{"op": "resize"}]},
                            "required_ops[0] has unknown op 'resize' (known: crop, rotate, "
                            "flip, enhance)"),
    "required op image": ({"evidence": [], "required_ops": [{"op": "crop", "image": 2}]},
                          "required_ops[0].image 2 but the record has 1 image(s)"),
    "required op key": ({"required_ops": [{"op": "crop", "box": [1, 1, 2, 2]}]},
                        "unknown key 'box' in required_ops[0] (allowed: op, image)"),
    "bad op": ({"evidence": [{"box": [1, 1, 9, 9], "op": {"op": "blur"}}]}, "unknown op 'blur'"),
    "enhance tool": ({"evidence": [{"box": [1, 1, 9, 9], "op": {"op": "enhance", "tool": "crop"}}]},
                     "needs a contrast tool"),
    "choice without choices": ({"choices": None, "answer": {"value": "x", "match": "choice"}},
                               "match 'choice' needs choices"),
    "number not numeric": ({"choices": None, "answer": {"value": "abc", "match": "number"}},
                           "is not a number"),
    "bad domain": ({"domain": "Sports"}, "unknown domain 'Sports'"),
    "bad level": ({"level": 4}, "level must be 1, 2 or 3"),
    "image index": ({"evidence": [{"box": [1, 1, 9, 9], "image": 1}]},
                    "evidence[0].image 1 but the record has 1 image(s)"),
    "judge axis": ({"judge_checkpoints": [{"id": "j", "axis": "X", "question": "q"}]},
                   "axis must be 'S' or 'V'"),
    "illegible": ({"evidence": [{"box": [0, 0, 1600, 1200], "glyph_height": 2}]},
                  "cannot be made legible by a crop"),
}


@pytest.mark.parametrize("reason", sorted(REJECTIONS))
def test_each_rejection_is_named_with_the_record_id(tmp_path, reason):
    over, message = REJECTIONS[reason]
    good = base_record(tmp_path, "ok")
    bad = base_record(tmp_path, "bad", **over)
    with pytest.raises(RecordsError) as info:
        load_records(write_jsonl(tmp_path / "r.jsonl", [good, bad]))
    err = info.value
    assert err.accepted == 1 and len(err.problems) == 1
    assert err.problems[0].startswith("line 2 (id bad): ")
    assert message in err.problems[0]


def test_all_problems_of_all_records_are_listed_at_once(tmp_path):
    recs = [base_record(tmp_path, "a"), base_record(tmp_path, "a"),
            base_record(tmp_path, "b", question="", answer={"value": "x", "match": "fuzzy"}),
            "{not json", base_record(tmp_path, "c", images=["gone.jpg"])]
    (tmp_path / "broken.png").write_bytes(b"not an image")
    recs.append(base_record(tmp_path, "d", images=["broken.png"]))
    with pytest.raises(RecordsError) as info:
        load_records(write_jsonl(tmp_path / "r.jsonl", recs))
    p = info.value.problems
    assert len(p) == 5 and info.value.accepted == 1
    assert p[0] == "line 2 (id a): duplicate id 'a' (first at line 1)"
    assert "empty question" in p[1] and "unknown match type 'fuzzy'" in p[1]
    bad = base_record(tmp_path, "e", question="", images=["lost.png"])
    with pytest.raises(RecordsError) as info2:
        load_records(write_jsonl(tmp_path / "r2.jsonl", [bad]))
    assert info2.value.problems == ["line 1 (id e): empty question; missing image 'lost.png'"]
    assert p[2].startswith("line 4: invalid JSON")
    assert "missing image 'gone.jpg'" in p[3]
    assert p[4].startswith("line 6 (id d): unreadable image 'broken.png'")
    assert "5 rejected record(s)" in str(info.value)


def test_needs_no_tool_is_a_warning_not_a_rejection(tmp_path):
    rec = base_record(tmp_path, "big")
    box = text_image(tmp_path / "big.png", "BIG-1", (100, 100), scale=2.0)
    rec["evidence"] = [{"box": box}]
    records = load_records(write_jsonl(tmp_path / "r.jsonl", [rec]))
    assert len(records) == 1
    assert records.warnings == ("line 1 (id big): needs_no_tool: the evidence is already legible "
                                "at view size (768 px longest side)",)
    assert records.task("big").metadata["needs_no_tool"] is True


def test_required_ops_silence_needs_no_tool_and_a_record_may_have_no_evidence(tmp_path):
    big = base_record(tmp_path, "big")
    box = text_image(tmp_path / "big.png", "BIG-1", (100, 100), scale=2.0)
    big["evidence"] = [{"box": box}]
    big["required_ops"] = [{"op": "rotate"}]
    bare = base_record(tmp_path, "bare", required_ops=[{"op": "flip"}])
    del bare["evidence"]
    records = load_records(write_jsonl(tmp_path / "r.jsonl", [big, bare]))
    assert records.warnings == ()
    task = records.task("big")
    assert task.metadata["needs_no_tool"] is False
    assert [(c.id, c.kind) for c in task.checkpoints if c.kind == "global_op"] == [
        ("s_global_g1", "global_op")]
    task = records.task("bare")
    assert task.evidence == () and task.metadata["needs_no_tool"] is False
    assert [(c.axis, c.kind, c.params["tools"]) for c in task.checkpoints] == [
        ("S", "global_op", ["rotate", "flip"])]
    assert task.reference_calls[0].arguments == {"image_index": 0, "direction": "horizontal"}


def test_loading_reads_headers_only(tmp_path, monkeypatch):
    recs = [base_record(tmp_path, f"r{i}") for i in range(5)]
    path = write_jsonl(tmp_path / "r.jsonl", recs)
    decoded: list[str] = []
    real = cv2.imdecode
    monkeypatch.setattr(cv2, "imdecode", lambda *a, **k: decoded.append("x") or real(*a, **k))
    monkeypatch.setattr(cv2, "imread", lambda *a, **k: pytest.fail("imread at load"))
    records = load_records(path)
    assert len(records) == 5 and decoded == []
    records.task("r3")
    assert decoded == ["x"]  # one image decoded: the task's


def test_csv_and_json_and_dicts_load_the_same_records(tmp_path, fixture_set):
    rows = [json.loads(line) for line in fixture_set.read_text().splitlines()]
    import csv

    with (tmp_path / "r.csv").open("w", newline="") as fh:
        keys = sorted({k for r in rows for k in r})
        w = csv.DictWriter(fh, keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: (json.dumps(v) if not isinstance(v, str) else v)
                        for k, v in r.items()})
    (tmp_path / "r.json").write_text(json.dumps(rows))
    a = load_records(fixture_set)
    for other in (load_records(tmp_path / "r.csv"), load_records(tmp_path / "r.json"),
                  load_records(rows, base_dir=tmp_path)):
        assert [r.id for r in other] == [r.id for r in a]
        assert [r.evidence for r in other] == [r.evidence for r in a]
        assert [r.answer for r in other] == [r.answer for r in a]


def test_parquet_loads(tmp_path, fixture_set):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    rows = [json.loads(line) for line in fixture_set.read_text().splitlines()]
    frame = pd.DataFrame([{k: (json.dumps(v) if not isinstance(v, str) else v)
                           for k, v in r.items()} for r in rows])
    frame.to_parquet(tmp_path / "r.parquet")
    assert [r.id for r in load_records(tmp_path / "r.parquet")] == [r["id"] for r in rows]


def test_deeply_nested_json_is_a_problem_not_a_traceback(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(RecordsError, match=r"line 1: invalid JSON \(nested too deeply\)"):
        load_records(write_jsonl(tmp_path / "r.jsonl", [deep]))


def test_parquet_style_rows_load(tmp_path):
    """Rows as pandas reads them from parquet: arrays for lists, NaN for gaps, float levels."""
    pd = pytest.importorskip("pandas")
    from m3gym.records.load import _frame_rows
    from m3gym.records.validate import validate_rows

    rec = base_record(tmp_path, "p1")
    ev = {**rec["evidence"][0], "box": np.asarray(rec["evidence"][0]["box"]), "id": None}
    frame = pd.DataFrame([
        {**rec, "choices": np.asarray(rec["choices"], dtype=object), "evidence": np.asarray(
            [ev], dtype=object), "images": np.asarray(rec["images"], dtype=object),
         "level": 2.0},
        {**base_record(tmp_path, "p2"), "level": float("nan"), "choices": None,
         "answer": {"value": "QX-4817", "match": "exact", "tolerance": float("nan")}},
    ])
    out = validate_rows(list(_frame_rows(frame)), tmp_path)
    assert out.problems == [] and [r.id for r in out.records] == ["p1", "p2"]
    assert out.records[0].level == 2 and out.records[1].level is None
    assert out.records[0].evidence[0].box == tuple(float(v) for v in rec["evidence"][0]["box"])


def test_unreadable_sources_raise_records_error(tmp_path):
    with pytest.raises(RecordsError, match="no such records file"):
        load_records(tmp_path / "none.jsonl")
    (tmp_path / "x.txt").write_text("{}")
    with pytest.raises(RecordsError, match="unknown records format '.txt'"):
        load_records(tmp_path / "x.txt")
    with pytest.raises(RecordsError, match="no records"):
        load_records(write_jsonl(tmp_path / "e.jsonl", []))


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 2000) | st.floats(allow_nan=True)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(
        ["id", "images", "question", "answer", "value", "match", "box", "evidence", "units",
         "op", "choices", "image", "angle", "x"]), inner, max_size=5),
    max_leaves=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=st.dictionaries(st.sampled_from(["id", "images", "question", "answer", "choices",
                                            "evidence", "level", "domain", "knowledge",
                                            "judge_checkpoints", "metadata", "zz"]),
                           JSONISH, max_size=8))
def test_random_malformed_records_never_traceback(tmp_path_factory, raw):
    base = tmp_path_factory.getbasetemp()
    try:
        records = load_records([raw], base_dir=base)
    except RecordsError as err:
        assert err.problems and all(p.startswith("item 0") for p in err.problems)
    else:  # pragma: no cover - a random dict is practically never a valid record
        assert len(records) == 1
