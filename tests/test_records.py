"""User records → process-verified tasks: format, loader, validation, tasks, env, CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from m3gym.records import RecordsError, load_records, record_split
from m3gym.records.cli import add_parser  # noqa: F401 (the group imports)
from m3gym.records.family import record_for_seed
from m3gym.scoring.checkpoints import evaluate_checkpoints
from m3gym.tasks.registry import TRAIN_SEED_LIMIT, make_task
from m3gym.tasks.verify import replay_reference

W, H = 1600, 1200
FONT = cv2.FONT_HERSHEY_SIMPLEX


def text_image(path: Path, text: str, at: tuple[int, int], scale: float = 0.45,
               quarter: int = 0, seed: int = 0) -> list[int]:
    """Write a W x H image with ``text`` (turned ``quarter`` x 90° ccw) at ``at``; return its box."""
    rng = np.random.default_rng(seed)
    img = np.full((H, W, 3), 225, np.uint8)
    for _ in range(12):  # clutter
        x, y = int(rng.integers(0, W - 200)), int(rng.integers(0, H - 200))
        cv2.rectangle(img, (x, y), (x + 120, y + 80), tuple(int(v) for v in
                      rng.integers(60, 200, 3)), -1)
    (tw, th), base = cv2.getTextSize(text, FONT, scale, 1)
    patch = np.full((th + base + 4, tw + 4, 3), 250, np.uint8)
    cv2.putText(patch, text, (2, th + 2), FONT, scale, (0, 0, 0), 1, cv2.LINE_AA)
    patch = np.ascontiguousarray(np.rot90(patch, quarter))
    x, y = at
    img[y:y + patch.shape[0], x:x + patch.shape[1]] = patch
    cv2.imwrite(str(path), img)
    return [x, y, x + patch.shape[1], y + patch.shape[0]]


def base_record(tmp: Path, rid: str = "r1", **over: Any) -> dict[str, Any]:
    """Return a valid record (its image written into ``tmp``) with ``over`` merged in."""
    name = f"{rid}.png"
    box = text_image(tmp / name, "QX-4817", (700, 500), seed=len(rid))
    rec = {"id": rid, "images": [name], "question": "What code is printed on the tag?",
           "answer": {"value": "QX-4817", "match": "choice"},
           "choices": ["QX-4817", "QX-4811", "PL-2098", "ZK-5567"],
           "evidence": [{"image": 0, "box": box, "units": "px"}]}
    rec.update(over)
    return rec


def write_jsonl(path: Path, records: list[Any]) -> Path:
    """Write ``records`` as JSONL (strings are written as raw lines)."""
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n")
    return path


@pytest.fixture
def fixture_set(tmp_path: Path) -> Path:
    """A 12-record set: plain crops, a rotated and a mirrored code, two boxes, a number."""
    recs = [base_record(tmp_path, f"r{i}") for i in range(8)]
    box = text_image(tmp_path / "rot.png", "AB-1234", (300, 300), quarter=1, seed=9)
    recs.append({"id": "rot", "images": ["rot.png"], "question": "Which code?",
                 "answer": {"value": "AB-1234"},
                 "evidence": [{"box": box, "op": {"op": "rotate", "angle": -90}}]})
    img = cv2.imread(str(tmp_path / "r0.png"))
    cv2.imwrite(str(tmp_path / "mirror.png"), cv2.flip(img, 1))
    b = recs[0]["evidence"][0]["box"]
    recs.append({"id": "mirror", "images": ["mirror.png"], "question": "Code?",
                 "answer": {"value": "QX-4817"},
                 "evidence": [{"box": [W - b[2], b[1], W - b[0], b[3]],
                               "op": {"op": "flip", "direction": "horizontal"}}]})
    b2 = text_image(tmp_path / "two.png", "12", (200, 900), seed=3)
    img = cv2.imread(str(tmp_path / "two.png"))
    (tw, th), base = cv2.getTextSize("30", FONT, 0.45, 1)
    cv2.putText(img, "30", (1300, 200 + th), FONT, 0.45, (0, 0, 0), 1, cv2.LINE_AA)
    cv2.imwrite(str(tmp_path / "two.png"), img)
    recs.append({"id": "two", "images": ["two.png"], "question": "Sum of the two numbers?",
                 "answer": {"value": 42, "match": "number", "tolerance": 0.5},
                 "evidence": [{"box": b2, "id": "left"},
                              {"box": [1298, 198, 1302 + tw, 204 + th + base], "id": "right"}]})
    recs.append({"id": "norm", "images": ["r1.png"], "question": "Code?",
                 "answer": {"value": "QX-4817", "variants": ["QX4817"]},
                 "evidence": [{"box": [b[0] * 1000 / W, b[1] * 1000 / H, b[2] * 1000 / W,
                                       b[3] * 1000 / H], "units": "norm1000"}],
                 "judge_checkpoints": [{"id": "j1", "axis": "V", "question": "Is the tag shown?"}]})
    return write_jsonl(tmp_path / "records.jsonl", recs)


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


# ---------------------------------------------------------------------------------------------
# tasks: reference, checkpoints, exact V


def _scores(task, trace_state=None):
    replayed = replay_reference(task) if trace_state is None else trace_state
    assert replayed is not None
    state, trace = replayed
    return evaluate_checkpoints(task, trace, state)


def test_reference_replay_passes_every_checkpoint(fixture_set):
    records = load_records(fixture_set)
    for rec in records:
        task = records.task(rec)
        report = _scores(task)
        assert (report.S, report.V) == (1.0, 1.0), rec.id
        assert all(cp.kind != "judge" for cp in task.checkpoints)
    two = records.task("two")
    assert [[c.name for c in s] for s in two.reference] == [["crop", "crop"]]
    assert two.answer.match == "numeric" and two.answer.tolerance == 0.5
    rot = records.task("rot")
    assert [[c.name for c in s] for s in rot.reference] == [["crop"], ["rotate"]]
    assert rot.reference[1][0].depends_on == ("c1",)
    assert {c.kind for c in rot.checkpoints} == {"crop_covers", "rotate_upright", "v_tool",
                                                 "v_true"}
    assert records.task("mirror").evidence[0].mirrored
    norm = records.task("norm")
    assert norm.metadata["judge_checkpoints"][0]["needs_judge"] is True
    assert len(norm.checkpoints) == 3


def _crop(task, bbox, zoom):
    from m3gym.state import ImageState
    from m3gym.tools.base import ToolContext
    from m3gym.tools.registry import ToolRegistry
    from m3gym.tools.visual import VISUAL_TOOLS
    from m3gym.trace import Trace

    state = ImageState()
    for img in task.images:
        state.add_root(img)
    ctx = ToolContext(state=state, visible_images=1)
    rec = ToolRegistry(VISUAL_TOOLS).execute(ctx, "crop", {"image_index": 0, "bbox_2d": bbox,
                                                           "zoom_scale": zoom}, 0, "x")
    assert rec.ok
    trace = Trace()
    trace.steps.append([rec])
    return state, trace


def test_wrong_region_and_unzoomed_crops_fail_v(fixture_set):
    task = load_records(fixture_set).task("r1")
    ref = task.reference[0][0].arguments
    good = _scores(task, _crop(task, ref["bbox_2d"], ref["zoom_scale"]))
    assert good.V == 1.0
    x0, y0, x1, y1 = ref["bbox_2d"]
    wrong = _scores(task, _crop(task, [x0 + 200, y0, x1 + 200, y1], ref["zoom_scale"]))
    assert wrong.V == 0.0 and wrong.S == 0.0
    # a crop as wide as the image: contains the box, but its glyphs stay below 9 px at view size
    wide = _scores(task, _crop(task, [0, max(0, y0 - 300), 1000, min(1000, y1 + 300)], 1.0))
    assert wide.V == 0.0 and wide.S == 0.0  # and it does not magnify (crop_covers)
    # the same crop zoomed 2x is still shown at 768 px: zoom alone does not make it legible
    assert _scores(task, _crop(task, [0, max(0, y0 - 300), 1000, min(1000, y1 + 300)], 2.0)).V \
        == 0.0
    half = _scores(task, _crop(task, [x0 - 2, y0 - 2, x1 - 10, y1], 4.0))  # cuts the code
    assert half.V == 0.0


def test_tiny_box_needs_a_zoomed_crop(tmp_path):
    rec = base_record(tmp_path, "tiny")
    rec["evidence"][0]["glyph_height"] = 5  # 5 px details: 2.4 px in the 768 px view
    task = load_records([rec], base_dir=tmp_path).task("tiny")
    ref = task.reference[0][0].arguments
    assert ref["zoom_scale"] == 3.0  # 5 px x 3 = 15 px >= 1.5 x 9
    bbox = ref["bbox_2d"]
    assert _scores(task, _crop(task, bbox, 1.0)).V == 0.0  # tight but not zoomed: 5 px
    assert _scores(task, _crop(task, bbox, 1.5)).V == 0.0  # 7.5 px
    assert _scores(task, _crop(task, bbox, 2.0)).V == 1.0  # 10 px: legible
    x0, y0, x1, y1 = bbox
    assert _scores(task, _crop(task, [x0, y0, x1, (y0 + y1) // 2], 4.0)).V == 0.0  # half of it


# ---------------------------------------------------------------------------------------------
# split, family, env, eval, export, MCP


def test_split_is_a_stable_hash_of_the_id(fixture_set):
    assert [record_split(f"r{i}") for i in range(8)] == [record_split(f"r{i}") for i in range(8)]
    import hashlib

    for rid in ("r0", "rot", "two", "x" * 50):
        u = int.from_bytes(hashlib.sha256(rid.encode()).digest()[:8], "big") / 2 ** 64
        assert record_split(rid) == ("test" if u < 0.2 else "train")
    records = load_records(fixture_set)
    train, test = records.split("train"), records.split("test")
    assert len(train) + len(test) == len(records) and train and test
    for seed in range(5):
        assert record_for_seed(records, seed, "train") == train[seed % len(train)]
        held = TRAIN_SEED_LIMIT + seed
        assert record_for_seed(records, held, "test") == test[seed % len(test)]


def test_make_task_draws_train_and_test_records_by_seed(fixture_set):
    records = load_records(fixture_set)
    test_ids = {r.id for r in records.split("test")}
    for seed in (0, 3, 7):
        t = make_task("records", seed, {"records": str(fixture_set)})
        assert t.task_id == f"records/{seed}" and t.metadata["record_id"] not in test_ids
    t = make_task("records", TRAIN_SEED_LIMIT + 1, {"records": str(fixture_set)})
    assert t.metadata["record_id"] in test_ids and t.metadata["record_split"] == "test"
    again = make_task("records", TRAIN_SEED_LIMIT + 1, {"records": str(fixture_set)})
    assert again.content_hash() == t.content_hash()


def test_changed_record_changes_its_task_hash_only(tmp_path, fixture_set):
    from m3gym.records.load import records_fingerprint

    cfg = {"records": str(fixture_set), "split": "all"}
    before = [make_task("records", s, cfg) for s in (0, 1)]
    sha = records_fingerprint(str(fixture_set))["sha256"]
    rows = [json.loads(line) for line in fixture_set.read_text().splitlines()]
    rows[0]["answer"]["value"] = "QX-4811"
    write_jsonl(fixture_set, rows)
    after = [make_task("records", s, cfg) for s in (0, 1)]
    assert before[0].metadata["record_id"] == after[0].metadata["record_id"] == "r0"
    assert before[0].content_hash() != after[0].content_hash()
    assert before[1].content_hash() == after[1].content_hash()  # r1 did not change
    assert records_fingerprint(str(fixture_set))["sha256"] != sha


def test_env_with_records_runs_an_oracle_episode(fixture_set):
    import gymnasium as gym

    import m3gym
    from m3gym.records_env import RECORDS_ENV_ID

    assert RECORDS_ENV_ID == m3gym.versioned_id("M3Bench-Records")
    env = gym.make(RECORDS_ENV_ID, records=str(fixture_set), disable_env_checker=True)
    obs, info = env.reset(seed=0)
    task = env.unwrapped.task
    assert info["family"] == "records" and task.metadata["record_split"] == "train"
    for step in task.reference:
        env.step([{"name": c.name, "arguments": dict(c.arguments)} for c in step])
    _, _, terminated, _, final = env.step({"name": "answer",
                                          "arguments": {"answer": task.answer.value}})
    assert terminated and final["answer_correct"]
    m = final["metrics"]
    assert (m["S"], m["V"]) == (1.0, 1.0)
    env.close()
    with pytest.raises(RecordsError):
        gym.make(RECORDS_ENV_ID, records=[{"id": "x"}], disable_env_checker=True)


def test_eval_export_and_mcp_on_records(tmp_path, fixture_set):
    from m3gym.eval.runner import EvalConfig, run_eval

    cfg = EvalConfig(envs=("M3Bench-Records",), agent="oracle", episodes=2, split="test",
                     env_args={"records": str(fixture_set)})
    result = run_eval(cfg, tmp_path / "run")
    assert len(result.records) == 2
    for rec in result.records:
        assert rec["status"] == "ok" and rec["answer_correct"], rec
        assert rec["metrics"]["S"] == 1.0 and rec["metrics"]["V"] == 1.0
        assert rec["task_hash"]
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    digest = __import__("hashlib").sha256(fixture_set.read_bytes()).hexdigest()
    assert config["records"] == {"source": str(fixture_set), "sha256": digest}

    # a resumed run with an edited records file is refused
    original = fixture_set.read_text()
    write_jsonl(fixture_set, [json.loads(x) for x in original.splitlines()][:-1])
    with pytest.raises(ValueError, match="the records file changed since the run"):
        run_eval(cfg, tmp_path / "run", resume=True)
    fixture_set.write_text(original)

    # re-scoring replays the stored calls on the rebuilt task; a changed record is refused
    from m3gym.eval.rescore import rescore_trace

    ep = result.records[0]
    trace = json.loads((tmp_path / "run" / "traces" / f"{ep['episode_id']}.json").read_text())
    assert rescore_trace(trace)["metrics"]["S"] == 1.0
    rid = trace["task"]["metadata"]["record_id"]
    rows = [json.loads(line) for line in fixture_set.read_text().splitlines()]
    for row in rows:
        if row["id"] == rid:
            row["question"] += " (edited)"
    write_jsonl(fixture_set, rows)
    with pytest.raises(ValueError, match="changed since the run"):
        rescore_trace(trace)

    # the prompt-dataset export (TRL) and the MCP server's start_episode take the records env
    from m3gym.integrations.datasets import iter_prompt_rows
    from m3gym.mcp.episodes import EpisodeTable

    rows_out = list(iter_prompt_rows("M3Bench-Records", n=2, split="test",
                                     records=str(fixture_set)))
    assert [r["family"] for r in rows_out] == ["records", "records"]
    assert rows_out[0]["images"][0].shape == (576, 768, 3)  # the view of a 1600 x 1200 photo
    from m3gym.integrations.export import verl_rows

    records = load_records(fixture_set)
    for row in verl_rows("M3Bench-Records", 2, split="test", records=str(fixture_set)):
        task = make_task("records", row["extra_info"]["task_seed"], {"records": str(fixture_set)})
        assert row["reward_model"]["ground_truth"] == task.answer.value
        assert records.by_id(task.metadata["record_id"]) in records.split("test")
    table = EpisodeTable(env_args={"records": str(fixture_set)})
    episode_id, data, images = table.start("M3Bench-Records", split="test", index=0)
    assert episode_id and len(images) == 1


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
