"""Helpers shared by the family tests (tests/families/ and the level files): cached tasks,
reference replays and the checks several families make the same way."""

from __future__ import annotations

from functools import cache

import numpy as np
from PIL import Image, ImageOps

from m3gym.spec import Task
from m3gym.state import ImageState
from m3gym.tasks.registry import make_task
from m3gym.tasks.verify import replay_reference
from m3gym.trace import Trace
from m3gym.web.world import build_world

SEEDS = range(60)


VISUAL_NAMES = {"crop", "rotate", "flip", "resize", "grayscale", "autocontrast", "invert",
                "equalize", "threshold", "blur", "sharpen", "denoise", "edge_detect", "enhance"}


@cache
def task(family: str, seed: int) -> Task:
    return make_task(family, seed)


def all_tasks(family: str) -> list[Task]:
    return [task(family, s) for s in SEEDS]


def ncc(a: np.ndarray, b: np.ndarray) -> float:
    """Normalized correlation of two equally shaped gray arrays (-1 when shapes differ)."""
    if a.shape != b.shape:
        return -1.0
    x = a.astype(np.float64) - a.mean()
    y = b.astype(np.float64) - b.mean()
    den = np.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / den) if den else 0.0


def region(img: np.ndarray, box) -> np.ndarray:
    x0, y0, x1, y1 = (int(v) for v in box)
    return img[y0:y1, x0:x1]


def apply_reference(img: np.ndarray, call) -> np.ndarray:
    """Apply a rotate (CCW positive, expand) / flip / autocontrast reference call with numpy/PIL."""
    a = call.arguments
    if call.name == "rotate":
        assert a["expand"] is True and a["angle"] % 90 == 0
        return np.rot90(img, k=(a["angle"] // 90) % 4)
    if call.name == "flip":
        return {"horizontal": img[:, ::-1], "vertical": img[::-1]}[a["direction"]]
    if call.name == "autocontrast":
        return np.asarray(ImageOps.autocontrast(Image.fromarray(img), cutoff=a["cutoff"]))
    raise AssertionError(call.name)


def world_of(task: Task):
    """Return the world a task names in its metadata."""
    spec = task.metadata["world"]
    return build_world(spec["seed"], spec["split"])


def assert_checkpoint_density(task) -> None:
    """The per-group rule: each reference call carries one S checkpoint, each evidence one
    ``v_tool`` (at most one per visual call) and one ``v_true`` (artifact-level)."""
    cps = task.checkpoints
    assert len({cp.id for cp in cps}) == len(cps)
    s = [cp for cp in cps if cp.axis == "S"]
    v_tool = [cp for cp in cps if cp.kind == "v_tool"]
    v_true = [cp for cp in cps if cp.kind == "v_true"]
    assert len(s) == len(task.reference_calls)  # one S checkpoint per reference call
    visual = [c for c in task.reference_calls if c.name in VISUAL_NAMES]
    assert len(v_tool) <= len(visual)  # one call satisfies at most one v_tool checkpoint
    ids = sorted(ev.id for ev in task.evidence)
    assert sorted(cp.params["evidence"] for cp in v_true) == ids
    assert sorted(cp.params["evidence"] for cp in v_tool) == ids
    for cp in cps:
        if cp.kind == "search_hit":
            assert cp.params["max_rank"] == 1


def replay(task: Task) -> tuple[ImageState, Trace]:
    """Run the reference trajectory through the real visual tools (``replay_reference``)."""
    replayed = replay_reference(task)
    assert replayed is not None, f"{task.task_id}: a reference call failed"
    return replayed
