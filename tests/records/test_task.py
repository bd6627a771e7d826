"""Records turned into tasks: the reference, its checkpoints, exact V (m3gym.records.task)."""

from __future__ import annotations

from m3gym.records import load_records
from m3gym.scoring.checkpoints import evaluate_checkpoints
from m3gym.tasks.verify import replay_reference
from tests.records.helpers import base_record

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
