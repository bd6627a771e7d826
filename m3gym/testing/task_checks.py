"""Checks of built tasks: sanity and choices, the oracle, why a tool is needed, photo scenes.

Checks 5–7 of :func:`~m3gym.testing.check_family`, and the photographic variant of 6–7.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from m3gym.spec import Task
from m3gym.tasks.registry import FamilyConfig, get_family, make_task
from m3gym.testing.config_checks import _is_number
from m3gym.testing.errors import _fail

RETRIEVAL_TOOLS: frozenset[str] = frozenset({"web_search", "image_search", "fetch_webpage"})
"""Tools that bring evidence from off the image (the rule for families without image evidence)."""


# ------------------------------------------------------------------------------ task sanity
def check_task(cls: type[FamilyConfig], task: Task, config: FamilyConfig, where: str) -> None:
    """Raise unless the task declares its family, level, domain and a sane choice set."""
    from m3gym.scoring.answer import answer_is_correct

    name = cls.name
    if task.family != name or task.level != cls.level or task.domain not in cls.domains:
        raise _fail(name, "task", f"{where}: family/level/domain {task.family!r}/{task.level}/"
                    f"{task.domain!r} do not match the class ({name!r}/{cls.level}/{cls.domains})")
    for i, img in enumerate(task.images):
        if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3 or img.flags.writeable:
            raise _fail(name, "task", f"{where}: image {i} must be a read-only uint8 RGB array "
                        f"(R.freeze), got {img.dtype} {img.shape} writeable={img.flags.writeable}")
    for ev in task.evidence:
        if not 0 <= ev.image < len(task.images):
            raise _fail(name, "task", f"{where}: evidence {ev.id!r} names image {ev.image} of "
                        f"{len(task.images)}")
        h, w = task.images[ev.image].shape[:2]
        x0, y0, x1, y1 = ev.box
        if not (0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h):
            raise _fail(name, "task", f"{where}: evidence {ev.id!r} box {ev.box} leaves image "
                        f"{ev.image} ({w}x{h})")
        size = (int(y1 - y0), int(x1 - x0))
        for what, arr in (("clean", ev.clean), ("mask", ev.mask)):
            if arr is not None and arr.shape != size:
                raise _fail(name, "task", f"{where}: evidence {ev.id!r} {what} has shape "
                            f"{arr.shape}, its box {ev.box} is {size} (rows, cols)")
        if ev.mask is not None and (ev.mask.dtype != bool or not ev.mask.any()):
            raise _fail(name, "task", f"{where}: evidence {ev.id!r} mask must be boolean and "
                        f"mark some ink (dtype {ev.mask.dtype}, {int(np.count_nonzero(ev.mask))} "
                        "set)")
    if task.choices is None:
        return
    choices = list(task.choices)
    if len(set(choices)) != len(choices):
        dup = sorted({c for c in choices if choices.count(c) > 1})
        raise _fail(name, "choices", f"{where}: duplicate choices {dup} in {choices}")
    hits = [c for c in choices if answer_is_correct(c, task.answer)]
    if task.answer.value not in choices or len(hits) != 1:
        raise _fail(name, "choices", f"{where}: the answer {task.answer.value!r} must be among "
                    f"the choices exactly once; choices accepted as the answer: {hits} of "
                    f"{choices}")
    declared = getattr(config, "choices", None)
    if _is_number(declared) and len(choices) != int(declared):
        raise _fail(name, "choices", f"{where}: {len(choices)} choices, the config declares "
                    f"choices={declared}")


def config_of(cls: type[FamilyConfig], difficulty: float | None) -> FamilyConfig:
    """Return the config ``make_task`` builds for ``difficulty`` (without the seed's split)."""
    return cls(**(cls.difficulty_knobs(difficulty) if difficulty is not None else {}))


# ------------------------------------------------------------------------------ oracle, legibility
def check_oracle_and_legibility(name: str, task: Task, where: str, env: Any = None) -> None:
    """Raise unless the oracle is perfect and the evidence needs the reference to be legible.

    ``env`` (an :class:`~m3gym.env.M3BenchEnv` of the family) is reused when given.
    """
    from m3gym.agents.base import OracleAgent
    from m3gym.env import M3BenchEnv
    from m3gym.eval.episode_loop import record_episode
    from m3gym.scoring.checkpoints import measure_evidence

    env = env if env is not None else M3BenchEnv(family=name)
    view = env.view_size
    rec = record_episode(env, OracleAgent(), options={"task": task}, catch=False)
    m = rec.final.get("metrics") or {}
    got = {k: m.get(k) for k in ("acc", "S", "V", "OT")}
    if got != {"acc": 1.0, "S": 1.0, "V": 1.0, "OT": 0.0}:
        failed = [c.get("error") for c in rec.final.get("calls", []) if not c.get("ok", True)]
        raise _fail(name, "oracle", f"{where}: the oracle replaying the reference scores {got} "
                    f"(want acc=S=V=1, OT=0); failed calls: {failed}; failure_mode "
                    f"{m.get('failure_mode')!r}")
    state = env.state
    if not task.evidence:
        used = {c.name for c in task.reference_calls}
        if not used & RETRIEVAL_TOOLS:
            raise _fail(name, "tool needed", f"{where}: the task has no on-image evidence and "
                        f"its reference ({sorted(used)}) retrieves nothing: nothing makes a "
                        "tool necessary")
        return
    for ev in task.evidence:
        before = measure_evidence(state[ev.image], ev, view)
        if before.passed:
            raise _fail(name, "tool needed", f"{where}: evidence {ev.id!r} is already legible "
                        f"in input image {ev.image} at view size {view} ({before.reason})")
        after = [measure_evidence(state[i], ev, view) for i in range(len(task.images),
                                                                      len(state))]
        if not any(v.passed for v in after):
            reasons = sorted({v.reason for v in after}) or ["the reference made no image"]
            raise _fail(name, "tool needed", f"{where}: evidence {ev.id!r} is legible in no "
                        f"artifact of the reference ({'; '.join(reasons)[:300]})")



# ------------------------------------------------------------------------------ photo scenes
PHOTO_SEED_TRIES: int = 16
"""Seeds tried (from the first checked one) to find draws that go into a photograph."""


def check_photo_scenes(name: str, seeds: Sequence[int], env: Any = None) -> None:
    """Raise unless the family is drawn into photographs with a perfect oracle, or says why not.

    A family with ``photo_scenes`` must put at least one of :data:`PHOTO_SEED_TRIES` draws into
    a photograph (``scenes="photo"``: ``metadata["photo_scene"]["kind"] == "photo"``), and the
    oracle must stay perfect on those draws (up to ``len(seeds)`` of them); one without must give
    its ``flat_scene_reason``.
    """
    cls = get_family(name)
    if not cls.photo_scenes:
        if not cls.flat_scene_reason.strip():
            raise _fail(name, "photo scenes", "the family neither draws on render.surface "
                        "(photo_scenes = True) nor says why it stays flat (flat_scene_reason)")
        return
    if cls.flat_scene_reason.strip():
        raise _fail(name, "photo scenes", "photo_scenes is True but flat_scene_reason is set")
    start = int(seeds[0]) if len(seeds) else 0
    checked = 0
    for seed in range(start, start + PHOTO_SEED_TRIES):
        task = make_task(name, seed, {"scenes": "photo"})
        if task.metadata.get("photo_scene", {}).get("kind") != "photo":
            continue
        check_oracle_and_legibility(name, task, f"seed {seed}, photo scene", env)
        checked += 1
        if checked >= max(1, len(seeds)):
            return
    if not checked:
        raise _fail(name, "photo scenes", f"none of seeds {start}..{start + PHOTO_SEED_TRIES - 1}"
                    " drew a surface into a photograph: draw the scene's surface with "
                    "render.surface (or set photo_scenes = False with a flat_scene_reason)")
