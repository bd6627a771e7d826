"""Agentic-MME task folders in and out of m3gym records (m3gym.records.amme, m3gym.records.judge).

The fixtures are written here from Agentic-MME's released format (``json/NNNN.json`` +
``image/image_NNNN[_K].png``; keys as read by its ``evaluation/eval_runs_search.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.records import load_records
from m3gym.records.amme import (
    AmmeError,
    amme_to_record,
    choices_suffix,
    export_amme,
    import_amme,
    task_images,
    task_to_amme,
)
from m3gym.records.judge import (
    judge_checkpoint,
    openai_judge,
    score_judge_checkpoints,
    score_task_judges,
)
from m3gym.tasks.registry import make_task
from m3gym.tasks.verify import reference_checkpoints_pass

REGION_1 = {"id": "code", "image": 0, "box": [200, 150, 260, 170], "units": "px",
            "text": "QX-4817", "glyph_height": 12.0}
REGION_2 = {"id": "label", "image": 1, "box": [100, 200, 400, 300], "units": "norm1000",
            "op": {"op": "rotate", "angle": 90}}
REGION_3 = {"id": "price", "image": 0, "box": [40, 60, 140, 90], "units": "px",
            "op": {"op": "enhance"}}

TASK_1: dict[str, Any] = {  # L1, one image, a crop with a region (and its visual check)
    "task_id": "0001",
    "input": {"prompt": "What code is printed on the tag?"},
    "meta": {"level": 1, "domain": "Life"},
    "golden_answer": {"value": "QX-4817", "match_type": "contains"},
    "process_evaluation": {
        "checkpoints": [
            {"id": "v1", "axis": "V", "tools": ["crop"], "description": "zoom on the tag",
             "code_check": {"verifier": "verify_crop_ast"},
             "visual_check": {"question": "What code is shown?", "expected_answer": "QX-4817"},
             "region": REGION_1},
            {"id": "r1", "axis": "V", "answer_check": {"match_type": "exact",
                                                       "target": "QX-4817"}},
        ],
        "ordering_constraints": [],
        "efficiency": {"reference_tool_calls": 1, "penalty_per_extra_call": 0.2,
                       "max_tool_calls": 5},
    },
}
TASK_2: dict[str, Any] = {  # L2, two images, numeric answer, a search checkpoint for the judge
    "task_id": "0002",
    "input": {"prompt": "How many grams does the rotated label on the second photo state?"},
    "meta": {"level": 2, "domain": "Finance", "subcategory": "labels"},
    "golden_answer": {"value": 250, "match_type": "numeric", "tolerance": 0.5},
    "process_evaluation": {
        "checkpoints": [
            {"id": "v_rot", "axis": "V", "tools": ["rotate"],
             "code_check": {"verifier": "require_op:rotate"}, "region": REGION_2},
            {"id": "s_search", "axis": "S", "tools": ["google_search"],
             "description": "search for the brand name printed on the label"},
        ],
        "ordering_constraints": [],
        "efficiency": {"reference_tool_calls": 2, "penalty_per_extra_call": 0.1,
                       "max_tool_calls": 8},
    },
}
TASK_3: dict[str, Any] = {  # L3: a judge-only visual check, ordering constraints, efficiency
    "task_id": "0003",
    "input": {"prompt": "What is the price after the discount?"},
    "meta": {"level": 3, "domain": "Society"},
    "golden_answer": {"value": "12.50", "match_type": "exact"},
    "process_evaluation": {
        "checkpoints": [
            {"id": "v_crop", "axis": "V", "tools": ["crop"],
             "code_check": {"verifier": "verify_crop_ast"}, "region": REGION_3},
            {"id": "v_judge", "axis": "V", "tools": ["crop"],
             "code_check": {"verifier": "verify_crop_ast"},
             "visual_check": {"question": "Is the discount sticker readable?",
                              "expected_answer": "Yes"}},
            {"id": "s_lens", "axis": "S", "tools": ["google_lens_search"]},
            {"id": "v_flip", "axis": "V", "tools": ["flip"],
             "code_check": {"verifier": "verify_flip_ast"}},
        ],
        "ordering_constraints": [{"id": "o1", "sequence": ["v_crop", "v_judge"], "max_gap": 1}],
        "efficiency": {"reference_tool_calls": 3, "penalty_per_extra_call": 0.1,
                       "max_tool_calls": 6},
    },
}
TASK_4: dict[str, Any] = {  # names an op only: a required op, no region
    "input": {"prompt": "Which way does the arrow point?"},
    "golden_answer": {"value": "left"},
    "process_evaluation": {"checkpoints": [
        {"id": "v1", "axis": "V", "tools": ["crop"],
         "code_check": {"verifier": "verify_crop_ast"}}]},
}


def _image(h: int, w: int, value: int) -> np.ndarray:
    img = np.full((h, w, 3), value, np.uint8)
    img[10:20, 10:40] = (200, 30, 30)
    return img


def write_dataset(root: Path) -> Path:
    """Write the fixture dataset (tasks 1-4 and a broken file) and return its folder."""
    (root / "json").mkdir(parents=True)
    (root / "image").mkdir()
    for n, task in ((1, TASK_1), (2, TASK_2), (3, TASK_3), (4, TASK_4)):
        (root / "json" / f"{n:04d}.json").write_text(json.dumps(task), encoding="utf-8")
    (root / "json" / "0005.json").write_text("{not json", encoding="utf-8")
    for name, (h, w, v) in {"image_0001.png": (300, 400, 90),
                            "image_0002_1.png": (240, 320, 60),
                            "image_0002_2.png": (200, 300, 120),
                            "image_0003.png": (200, 200, 150),
                            "image_0004.png": (50, 50, 10)}.items():
        cv2.imwrite(str(root / "image" / name), _image(h, w, v))
    return root


def _source(task: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(task))
    out["input"] = {}
    return out


EXPECTED_1 = {
    "id": "0001", "images": ["image/image_0001.png"],
    "question": "What code is printed on the tag?",
    "answer": {"value": "QX-4817", "match": "exact"},
    "evidence": [REGION_1], "level": 1, "domain": "Life",
    "source": {"format": "agentic-mme", "id": "0001", "task": _source(TASK_1)},
    "metadata": {"amme": {"match_type": "contains"}},
}
EXPECTED_2 = {
    "id": "0002", "images": ["image/image_0002_1.png", "image/image_0002_2.png"],
    "question": "How many grams does the rotated label on the second photo state?",
    "answer": {"value": 250, "match": "number", "tolerance": 0.5},
    "evidence": [REGION_2],
    "judge_checkpoints": [{"id": "s_search", "axis": "S",
                           "question": "search for the brand name printed on the label"}],
    "level": 2, "domain": "Finance",
    "source": {"format": "agentic-mme", "id": "0002", "task": _source(TASK_2)},
    "metadata": {"amme": {"match_type": "numeric", "judge_expected": {"s_search": "yes"}}},
}
EXPECTED_3 = {
    "id": "0003", "images": ["image/image_0003.png"],
    "question": "What is the price after the discount?",
    "answer": {"value": "12.50", "match": "exact"},
    "evidence": [REGION_3],
    "required_ops": [{"op": "crop"}, {"op": "flip"}],
    "judge_checkpoints": [{"id": "v_judge", "axis": "V",
                           "question": "Is the discount sticker readable?"}],
    "level": 3, "domain": "Society",
    "source": {"format": "agentic-mme", "id": "0003", "task": _source(TASK_3)},
    "metadata": {"amme": {
        "match_type": "exact", "judge_expected": {"v_judge": "Yes"},
        "unverified_checkpoints": {
            "s_lens": "a search requirement (records have no search checkpoints)"}}},
}
EXPECTED_4 = {  # names an op but no region: a required op
    "id": "0004", "images": ["image/image_0004.png"],
    "question": "Which way does the arrow point?",
    "answer": {"value": "left", "match": "exact"},
    "required_ops": [{"op": "crop"}], "domain": "Life",
    "source": {"format": "agentic-mme", "id": "0004", "task": _source(TASK_4)},
    "metadata": {"amme": {"match_type": "contains"}},
}


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    return write_dataset(tmp_path / "amme")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_import_gives_exact_records_and_lists_every_skipped_task(dataset: Path) -> None:
    out = dataset / "records.jsonl"
    result = import_amme(dataset, out)
    assert result.records == [EXPECTED_1, EXPECTED_2, EXPECTED_3, EXPECTED_4]
    assert _read_jsonl(out) == result.records
    assert [name for name, _ in result.skipped] == ["0005.json"]
    assert result.skipped[0][1].startswith("not readable JSON: ")


def test_import_skips_a_task_the_records_validator_rejects(dataset: Path) -> None:
    bad = json.loads(json.dumps(TASK_1))
    bad["process_evaluation"]["checkpoints"][0]["region"]["box"] = [200, 150, 460, 170]
    (dataset / "json" / "0006.json").write_text(json.dumps(bad))
    cv2.imwrite(str(dataset / "image" / "image_0006.png"), _image(300, 400, 90))
    result = import_amme(dataset, dataset / "r.jsonl")
    assert [r["id"] for r in result.records] == ["0001", "0002", "0003", "0004"]
    assert result.skipped[-1][0] == "0006.json"
    assert result.skipped[-1][1].startswith("task 0006 (id 0006): evidence[0].box")


def test_imported_records_pass_the_records_validator(dataset: Path) -> None:
    out = dataset / "records.jsonl"
    import_amme(dataset, out)
    records = load_records(out)
    assert [r.id for r in records] == ["0001", "0002", "0003", "0004"]
    assert records.by_id("0002").answer.match == "number"
    assert [len(r.image_paths) for r in records] == [1, 2, 1, 1]
    assert records.by_id("0004").evidence == ()
    assert [(o.op, o.image) for o in records.by_id("0004").required_ops] == [("crop", 0)]


def test_round_trip_import_export_reimport(dataset: Path, tmp_path: Path) -> None:
    out = dataset / "records.jsonl"
    first = import_amme(dataset, out).records
    records = load_records(out)
    back = tmp_path / "back"
    files = export_amme([records.task(r) for r in records], back)
    assert [f.name for f in files] == ["0001.json", "0002.json", "0003.json", "0004.json"]
    # Agentic-MME's own task files come back as they were (question stripped of nothing here)
    for n, task in ((1, TASK_1), (2, TASK_2), (3, TASK_3), (4, TASK_4)):
        assert json.loads((back / "json" / f"{n:04d}.json").read_text()) == task
    assert sorted(p.name for p in (back / "image").iterdir()) == [
        "image_0001.png", "image_0002_1.png", "image_0002_2.png", "image_0003.png",
        "image_0004.png"]
    np.testing.assert_array_equal(cv2.imread(str(back / "image" / "image_0002_2.png")),
                                  cv2.imread(str(dataset / "image" / "image_0002_2.png")))
    again = import_amme(back, back / "records.jsonl")
    assert again.records == first and again.skipped == []


def test_exported_family_task_reimports_with_same_answer_and_evidence(tmp_path: Path) -> None:
    task = make_task("tiny_text", 5)
    files = export_amme([task], tmp_path / "out")
    data = json.loads(files[0].read_text())
    assert data["golden_answer"] == {"value": "AR-4E2", "match_type": "exact"}
    assert data["input"]["prompt"] == task.question + choices_suffix(task.choices)
    pe = data["process_evaluation"]
    assert [(c["id"], c["axis"], c["tools"], c["code_check"]) for c in pe["checkpoints"]] == [
        ("s_crop", "V", ["crop"], {"verifier": "require_op:crop"}),
        ("v_tool", "V", ["crop"], {"verifier": "require_op:crop"}),
        ("v_true", "V", ["crop"], {"verifier": "require_op:crop"}),
    ]
    assert pe["checkpoints"][2]["visual_check"] == {
        "question": "What text is shown in this image? Reply with the text only.",
        "expected_answer": "AR-4E2"}
    assert pe["efficiency"] == {"reference_tool_calls": 1, "penalty_per_extra_call": 0.1,
                                "max_tool_calls": 15}
    ev = task.evidence[0]
    result = import_amme(tmp_path / "out", tmp_path / "out" / "records.jsonl")
    (record,) = result.records
    assert record["answer"] == {"value": "AR-4E2", "match": "exact",
                                "variants": ["AR4E2", "AR 4E2"]}
    assert record["choices"] == list(task.choices)
    assert record["question"] == task.question
    assert record["evidence"] == [{"id": "code", "image": 0, "box": list(ev.box), "units": "px",
                                   "text": "AR-4E2", "glyph_height": ev.glyph_height}]
    assert record["source"] == {"format": "m3gym", "task_id": "tiny_text/5",
                                "family": "tiny_text"}
    rebuilt = load_records(tmp_path / "out" / "records.jsonl")[0]
    assert rebuilt.evidence[0].box == ev.box
    assert cv2.imread(str(tmp_path / "out" / "image" / "image_0001.png")).shape == (2400, 3200, 3)


EXPECTED_ROTATE_CHECKPOINTS = [("s_crop_e1", ["crop"]), ("s_upright_e1", ["rotate", "flip"]),
                               ("v_tool_e1", ["rotate", "flip"]),
                               ("v_true_e1", ["crop", "rotate"])]
EXPECTED_ROTATE_ORDERING = [{"id": "o1", "sequence": ["s_crop_e1", "s_upright_e1"],
                             "max_gap": 2}]


def test_rotated_record_exports_its_op_and_an_ordering_constraint(tmp_path: Path) -> None:
    cv2.imwrite(str(tmp_path / "a.png"), _image(100, 120, 50))
    records = load_records([{
        "id": "rot", "images": ["a.png"], "question": "Code?", "answer": {"value": "AB-12"},
        "evidence": [{"id": "e1", "box": [10, 10, 60, 30], "text": "AB-12",
                      "op": {"op": "rotate", "angle": 90}}]}], base_dir=tmp_path)
    task = records.task("rot")
    data = task_to_amme(task, 1)
    cps = data["process_evaluation"]["checkpoints"]
    assert [(c["id"], c["tools"]) for c in cps] == EXPECTED_ROTATE_CHECKPOINTS
    assert cps[0]["region"] == {"id": "e1", "image": 0, "box": [10.0, 10.0, 60.0, 30.0],
                                "units": "px", "text": "AB-12", "glyph_height": 20.0,
                                "op": {"op": "rotate", "angle": 90.0}}
    assert data["process_evaluation"]["ordering_constraints"] == EXPECTED_ROTATE_ORDERING
    export_amme([task], tmp_path / "out")
    assert json.loads((tmp_path / "out" / "json" / "0001.json").read_text()) == data
    (again,) = import_amme(tmp_path / "out", tmp_path / "out" / "r.jsonl").records
    assert again["evidence"] == [cps[0]["region"]]
    assert again["id"] == "rot" and again["source"] == {} and again["metadata"] == {}


def test_imported_records_replay_their_reference_with_every_checkpoint(dataset: Path) -> None:
    import_amme(dataset, dataset / "r.jsonl")
    records = load_records(dataset / "r.jsonl")
    for r in records:
        task = records.task(r)
        assert reference_checkpoints_pass(task), r.id
    assert [c.kind for c in records.task("0002").checkpoints] == [
        "crop_covers", "rotate_upright", "v_tool", "v_true"]


def test_user_record_round_trips_through_the_export(tmp_path: Path) -> None:
    cv2.imwrite(str(tmp_path / "a.png"), _image(200, 300, 80))
    cv2.imwrite(str(tmp_path / "b.png"), _image(100, 100, 160))
    row = {"id": "mine-1", "images": ["a.png", "b.png"], "question": "Which size?",
           "answer": {"value": "M", "match": "choice"}, "choices": ["S", "M", "L"],
           "evidence": [{"id": "tag", "image": 1, "box": [100, 200, 500, 400],
                         "units": "norm1000", "op": {"op": "flip", "direction": "horizontal"}}],
           "judge_checkpoints": [{"id": "j1", "axis": "V", "question": "Tag visible?",
                                  "image": 1},
                                 {"id": "j2", "axis": "S", "question": "search the brand"}],
           "level": 2, "domain": "Culture", "source": {"format": "mine", "row": 7},
           "metadata": {"amme": {"judge_expected": {"j1": "Yes"}}, "note": "x"}}
    records = load_records([row], base_dir=tmp_path)
    export_amme([records.task("mine-1")], tmp_path / "out")
    data = json.loads((tmp_path / "out" / "json" / "0001.json").read_text())
    judges = [c for c in data["process_evaluation"]["checkpoints"] if c["id"] in ("j1", "j2")]
    assert judges == [
        {"id": "j1", "axis": "V", "tools": ["crop"], "code_check": {"verifier": "require_op:crop"},
         "visual_check": {"question": "Tag visible?", "expected_answer": "Yes"},
         "m3gym": {"judge": True, "image": 1}},
        {"id": "j2", "axis": "S", "tools": ["google_search"], "description": "search the brand",
         "m3gym": {"judge": True}}]
    (back,) = import_amme(tmp_path / "out", tmp_path / "out" / "r.jsonl").records
    assert back == {
        "id": "mine-1", "images": ["image/image_0001_1.png", "image/image_0001_2.png"],
        "question": "Which size?", "answer": {"value": "M", "match": "choice"},
        "choices": ["S", "M", "L"],
        "evidence": [{"id": "tag", "image": 1, "box": [10.0, 20.0, 50.0, 40.0], "units": "px",
                      "glyph_height": 20.0, "op": {"op": "flip", "direction": "horizontal"}}],
        "judge_checkpoints": [{"id": "j1", "axis": "V", "question": "Tag visible?", "image": 1},
                              {"id": "j2", "axis": "S", "question": "search the brand"}],
        "level": 2, "domain": "Culture", "source": {"format": "mine", "row": 7},
        "metadata": {"amme": {"judge_expected": {"j1": "Yes"}}, "note": "x"}}
    load_records(tmp_path / "out" / "r.jsonl")  # valid


def test_task_images_prefer_numbered_multi_images(tmp_path: Path) -> None:
    root = write_dataset(tmp_path / "d")
    assert [p.name for p in task_images(root, "0002")] == ["image_0002_1.png",
                                                            "image_0002_2.png"]
    with pytest.raises(AmmeError, match="no image_0009.png or image_0009_1.png"):
        task_images(root, "0009")


@pytest.mark.parametrize("task, message", [
    ({"golden_answer": {"value": "x"}}, "input.prompt"),
    ({"input": {"prompt": "q"}}, "golden_answer is missing"),
    ({"input": {"prompt": "q"}, "golden_answer": {"value": "  "}}, "non-empty string"),
    ({"input": {"prompt": "q"}, "golden_answer": {"value": "ten", "match_type": "numeric"}},
     "numeric golden_answer needs a number"),
    ({"input": {"prompt": "q"}, "golden_answer": {"value": "1"},
      "process_evaluation": {"checkpoints": [{"id": "a", "region": [1, 2]}]}},
     "region must be an evidence object"),
])
def test_bad_tasks_give_precise_errors(task: dict[str, Any], message: str) -> None:
    with pytest.raises(AmmeError, match=message):
        amme_to_record(task, "0042", ["image/image_0042.png"])


def test_import_of_a_folder_without_tasks_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(AmmeError, match="has no json/\\*.json task files"):
        import_amme(tmp_path, tmp_path / "r.jsonl")


# ------------------------------------------------------------------------------- judge


def test_judge_checkpoints_never_change_s_or_v(dataset: Path) -> None:
    out = dataset / "records.jsonl"
    import_amme(dataset, out)
    rows = _read_jsonl(out)
    stripped = [{k: v for k, v in r.items() if k != "judge_checkpoints"} for r in rows]
    with_judges = load_records(rows, base_dir=dataset)
    without = load_records(stripped, base_dir=dataset)
    for a, b in zip(with_judges, without):
        ta, tb = with_judges.task(a), without.task(b)
        assert ta.checkpoints == tb.checkpoints and ta.reference == tb.reference
    assert len(with_judges.task("0003").metadata["judge_checkpoints"]) == 1
    assert score_judge_checkpoints(rows[2]["judge_checkpoints"], {}, [], ask=None).judge is None


def test_task_judges_read_the_records_metadata(dataset: Path) -> None:
    import_amme(dataset, dataset / "r.jsonl")
    records = load_records(dataset / "r.jsonl")
    task = records.task("0003")
    asked: list[str] = []

    def ask(text: str, image: np.ndarray | None) -> str:
        asked.append(text)
        return "yes"

    report = score_task_judges(task, task.images, ask)
    assert (report.judge, asked) == (1.0, ["Is the discount sticker readable?"])
    assert score_task_judges(task, task.images).judge is None
    assert score_task_judges(records.task("0001"), task.images, ask).judge is None


def test_judge_any_image_passes_under_the_strict_rule() -> None:
    asked: list[tuple[str, bool]] = []
    replies = iter(["No.", "Yes."])

    def ask(text: str, image: np.ndarray | None) -> str:
        asked.append((text, image is not None))
        return next(replies)

    imgs = [np.zeros((4, 4, 3), np.uint8)] * 3
    v = judge_checkpoint(ask, "Readable?", "yes", imgs, checkpoint_id="v")
    assert (v.passed, v.replies, asked) == (True, ("No.", "Yes."), [("Readable?", True)] * 2)
    hedge = judge_checkpoint(lambda t, i: "yes or no", "Readable?", "yes", imgs[:1])
    assert hedge.passed is False  # Agentic-MME's contains rule would pass this
    assert judge_checkpoint(lambda t, i: "yes", "Readable?", "yes", []).passed is False


def test_judge_against_the_fake_openai_server() -> None:
    pytest.importorskip("openai")
    from tests.fake_openai_server import FakeOpenAIServer

    checkpoints = [{"id": "v_judge", "axis": "V", "question": "Is the sticker readable?"},
                   {"id": "s_search", "axis": "S", "question": "search for the brand"},
                   {"id": "v_img", "axis": "V", "question": "Code?", "image": 1}]
    expected = {"v_judge": "Yes", "v_img": "QX-4817"}
    imgs = [np.zeros((8, 8, 3), np.uint8), np.full((8, 8, 3), 255, np.uint8)]
    script = [{"content": "No"}, {"content": "Yes."}, {"content": "no"},
              {"content": "QX-4817"}]
    with FakeOpenAIServer(script) as server:
        ask = openai_judge(server.base_url, model="judge-vlm", max_retries=0)
        report = score_judge_checkpoints(checkpoints, expected, imgs, ask,
                                         queries=["brand label 250g"])
        bodies = server.chat_requests
    assert report.judge == pytest.approx(2 / 3)
    assert report.as_dict()["checkpoints"] == {
        "v_judge": {"axis": "V", "passed": True, "replies": ["No", "Yes."], "error": None},
        "s_search": {"axis": "S", "passed": False, "replies": ["no"], "error": None},
        "v_img": {"axis": "V", "passed": True, "replies": ["QX-4817"], "error": None},
    }
    assert len(bodies) == 4 and all(b["model"] == "judge-vlm" for b in bodies)
    assert bodies[0]["temperature"] == 0.0
    parts = bodies[0]["messages"][1]["content"]
    assert parts[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert parts[1] == {"type": "text", "text": "Is the sticker readable?"}
    s_text = bodies[2]["messages"][1]["content"]
    assert s_text == [{"type": "text", "text": (
        "An agent ran these search queries:\nbrand label 250g\n\nRequirement: search for the "
        "brand\nDo the queries meet the requirement? Answer yes or no.")}]


def test_judge_endpoint_failure_is_a_failed_verdict_not_a_crash() -> None:
    pytest.importorskip("openai")
    from tests.fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer([{"status": 400, "message": "bad request"}]) as server:
        ask = openai_judge(server.base_url, model="m", max_retries=0)
        v = judge_checkpoint(ask, "Q?", "yes", [np.zeros((4, 4, 3), np.uint8)], checkpoint_id="x")
    assert v.passed is False and v.error is not None and "400" in v.error


# ------------------------------------------------------------------------------- CLI


def _run_cli(argv: list[str]) -> int:
    from m3gym.cli import main

    return main(["records", *argv])


def test_cli_import_lists_skipped_tasks_and_exits_1(dataset: Path, capsys: Any) -> None:
    out = dataset / "r.jsonl"
    assert _run_cli(["import-amme", str(dataset), str(out)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (f"{out}: 4 record(s) written, 1 task(s) skipped, 2 judge checkpoint(s) "
                        "(scored only with a judge endpoint)")
    assert [line.split(":")[0] for line in lines[1:]] == ["skipped 0005.json"]


def test_cli_export_env_seeds_and_records(tmp_path: Path, capsys: Any) -> None:
    assert _run_cli(["export-amme", "--env", "M3Bench-TinyText", "--seeds", "2",
                     str(tmp_path / "a")]) == 0
    assert sorted(p.name for p in (tmp_path / "a" / "json").iterdir()) == ["0001.json",
                                                                          "0002.json"]
    assert _run_cli(["import-amme", str(tmp_path / "a"), str(tmp_path / "a" / "r.jsonl")]) == 0
    assert _run_cli(["export-amme", "--records", str(tmp_path / "a" / "r.jsonl"),
                     str(tmp_path / "b")]) == 0
    for name in ("0001.json", "0002.json"):
        a = json.loads((tmp_path / "a" / "json" / name).read_text())
        b = json.loads((tmp_path / "b" / "json" / name).read_text())
        assert b["golden_answer"] == a["golden_answer"] and b["input"] == a["input"]
    capsys.readouterr()
    assert _run_cli(["export-amme", str(tmp_path / "c")]) == 2
    assert capsys.readouterr().err == ("m3gym records export-amme: give exactly one of --env ID "
                                       "or --records PATH\n")
    assert _run_cli(["export-amme", "--env", "M3Bench-Nope", "--seeds", "1",
                     str(tmp_path / "d")]) == 2
    assert capsys.readouterr().err == ("m3gym records export-amme: unknown env id "
                                       "'M3Bench-Nope' (m3gym list shows them)\n")


# ------------------------------------------------------------------------------- parser fuzz

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=True)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=8)
_checkpoint = st.fixed_dictionaries({}, optional={
    "id": _json, "axis": st.sampled_from(["S", "V", "R", 3]) | _json,
    "tools": _json | st.lists(st.sampled_from(["crop", "google_search"])),
    "description": _json, "code_check": _json | st.just({"verifier": "verify_crop_ast"}),
    "visual_check": _json | st.just({"question": "q?", "expected_answer": "yes"}),
    "answer_check": _json, "region": _json | st.just(REGION_1), "m3gym": _json})
_task = st.fixed_dictionaries({}, optional={
    "input": _json | st.just({"prompt": "What?"}),
    "golden_answer": _json | st.fixed_dictionaries(
        {"value": _json}, optional={"match_type": _json | st.just("numeric"),
                                    "tolerance": _json}),
    "meta": _json, "m3gym": _json,
    "process_evaluation": _json | st.fixed_dictionaries(
        {"checkpoints": _json | st.lists(_checkpoint | _json, max_size=4)})})


@settings(max_examples=300, deadline=None)
@given(task=_task | _json)
def test_any_malformed_task_is_a_record_or_an_amme_error(task: Any) -> None:
    try:
        record = amme_to_record(task, "0007", ["image/image_0007.png"])
    except AmmeError as exc:
        assert str(exc).startswith("task 0007: ")
        return
    assert record.get("evidence") or record.get("required_ops") or record.get("judge_checkpoints")
    assert record["question"].strip()
    json.dumps(record)


def test_env_judges_see_the_agents_artifacts(dataset: Path) -> None:
    import gymnasium as gym

    from m3gym.records.judge import score_env_judges

    import_amme(dataset, dataset / "r.jsonl")
    rows = _read_jsonl(dataset / "r.jsonl")
    (dataset / "one.jsonl").write_text(json.dumps(rows[2]) + "\n")
    env = gym.make("M3Bench-Records-v4", records=str(dataset / "one.jsonl"))
    seen: list[tuple[int, ...]] = []

    def ask(text: str, image: np.ndarray | None) -> str:
        assert image is not None
        seen.append(image.shape)
        return "Yes"

    env.reset(seed=0)
    assert score_env_judges(env, ask).judge == 1.0 and seen == [(200, 200, 3)]  # the input
    env.step({"name": "crop", "arguments": {"image_index": 0, "bbox_2d": [0, 0, 500, 500]}})
    seen.clear()
    report = score_env_judges(env, ask)
    assert report.judge == 1.0 and seen == [(100, 100, 3)]  # the crop, not the input
    assert score_env_judges(env).judge is None
    env.close()


TASK_RELEASED: dict[str, Any] = {  # strictly Agentic-MME's released schema: no region anywhere
    "task_id": "0008",
    "input": {"prompt": "The photo is sideways and dark. What word is on the sign?"},
    "meta": {"level": 2, "domain": "Life"},
    "golden_answer": {"value": "EXIT", "match_type": "contains"},
    "process_evaluation": {
        "checkpoints": [
            {"id": "c1", "axis": "V", "tools": ["rotate"], "description": "turn it upright",
             "code_check": {"verifier": "require_op:rotate"}},
            {"id": "c2", "axis": "V", "tools": ["crop"], "description": "zoom on the sign",
             "code_check": {"verifier": "verify_crop_ast"},
             "visual_check": {"question": "Is the sign's word readable?",
                              "expected_answer": "yes"}},
            {"id": "c3", "axis": "V", "tools": ["enhance"],
             "code_check": {"verifier": "require_op:enhance"}},
            {"id": "c4", "axis": "V", "answer_check": {"match_type": "contains",
                                                       "target": "EXIT"}},
        ],
        "ordering_constraints": [{"id": "o1", "sequence": ["c1", "c2"], "max_gap": 2}],
        "efficiency": {"reference_tool_calls": 3, "penalty_per_extra_call": 0.1,
                       "max_tool_calls": 8},
    },
}


def test_released_schema_task_without_region_imports_checks_and_plays(tmp_path: Path,
                                                                     capsys: Any) -> None:
    import gymnasium as gym

    from m3gym.agents.base import OracleAgent
    from m3gym.eval.episode_loop import record_episode

    root = tmp_path / "released"
    (root / "json").mkdir(parents=True)
    (root / "image").mkdir()
    (root / "json" / "0008.json").write_text(json.dumps(TASK_RELEASED), encoding="utf-8")
    cv2.imwrite(str(root / "image" / "image_0008.png"), _image(240, 320, 40))
    out = root / "records.jsonl"
    result = import_amme(root, out)
    assert result.skipped == []
    assert result.records == [{
        "id": "0008", "images": ["image/image_0008.png"],
        "question": "The photo is sideways and dark. What word is on the sign?",
        "answer": {"value": "EXIT", "match": "exact"},
        "required_ops": [{"op": "rotate"}, {"op": "crop"}, {"op": "enhance"}],
        "judge_checkpoints": [{"id": "c2", "axis": "V",
                               "question": "Is the sign's word readable?"}],
        "level": 2, "domain": "Life",
        "source": {"format": "agentic-mme", "id": "0008", "task": _source(TASK_RELEASED)},
        "metadata": {"amme": {"match_type": "contains", "judge_expected": {"c2": "yes"}}}}]
    assert _run_cli(["check", str(out)]) == 0
    capsys.readouterr()
    records = load_records(out)
    task = records.task(records.by_id("0008"))
    assert [(c.id, c.axis, c.kind, c.params["tools"][0]) for c in task.checkpoints] == [
        ("s_global_g1", "S", "global_op", "rotate"), ("s_global_g2", "S", "global_op", "crop"),
        ("s_global_g3", "S", "global_op", "autocontrast")]
    assert [c.name for c in task.reference_calls] == ["rotate", "crop", "autocontrast"]
    assert task.metadata["needs_no_tool"] is False
    assert reference_checkpoints_pass(task)
    # round trip: the original JSON comes back, and re-imports to the same record
    back = tmp_path / "back"
    export_amme([task], back)
    assert json.loads((back / "json" / "0008.json").read_text()) == TASK_RELEASED
    assert import_amme(back, back / "r.jsonl").records == result.records
    env = gym.make("M3Bench-Records-v4", records=str(out), disable_env_checker=True)
    rec = record_episode(env.unwrapped, OracleAgent(), options={"task": task}, catch=False)
    m = rec.final.get("metrics") or {}
    assert {k: m.get(k) for k in ("acc", "S", "V")} == {"acc": 1.0, "S": 1.0, "V": 1.0}
    env.close()


def test_released_task_with_nothing_to_verify_is_skipped() -> None:
    task = {"input": {"prompt": "What?"}, "golden_answer": {"value": "x"},
            "process_evaluation": {"checkpoints": [
                {"id": "r", "axis": "V", "answer_check": {"target": "x"}},
                {"id": "z", "axis": "V", "code_check": {"verifier": "require_op:resize"}}]}}
    with pytest.raises(AmmeError, match="task 0009: nothing to verify in the process"):
        amme_to_record(task, "0009", ["image/image_0009.png"])


def test_user_record_with_required_ops_round_trips_through_the_export(tmp_path: Path) -> None:
    cv2.imwrite(str(tmp_path / "a.png"), _image(200, 300, 80))
    row = {"id": "ops-1", "images": ["a.png"], "question": "Which way?",
           "answer": {"value": "up", "match": "exact"},
           "required_ops": [{"op": "rotate"}, {"op": "enhance"}, {"op": "crop"}]}
    (tmp_path / "r.jsonl").write_text(json.dumps(row) + "\n")
    records = load_records(tmp_path / "r.jsonl")
    task = records.task(records.by_id("ops-1"))
    assert task.level == 2 and task.evidence == ()
    export_amme([task], tmp_path / "out")
    again = import_amme(tmp_path / "out", tmp_path / "out" / "r.jsonl").records
    assert again[0]["required_ops"] == row["required_ops"]
    assert "evidence" not in again[0] and again[0]["id"] == "ops-1"
