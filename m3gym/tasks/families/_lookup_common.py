"""Task-building code shared by the level-3 lookup families (code, logo, privacy-safe lookups).

A lookup task reads a visual clue (a code, a logo, a sign), looks it up in the offline web world
(:mod:`m3gym.web`) and answers a fact stated on the page (or one link further). Every task records
its world in ``metadata["world"] = {"seed", "split"}``; the environment hands that world
(:func:`m3gym.web.world.build_world`, cached per process) to the retrieval tools.

Checkpoints follow :mod:`m3gym.scoring.checkpoints`, where exclusivity is **per axis group**
(one call satisfies at most one S and at most one ``v_tool`` checkpoint; ``v_true`` is judged on
artifacts): each reference call carries one S checkpoint (``crop_covers`` / ``contrast_op`` /
``search_hit`` ranked first / ``fetch``), the evidence one ``v_tool`` and one ``v_true``, so the
oracle passes all of them.

The families live in ``code_lookup.py``, ``logo_lookup.py`` and ``privacy_safe_lookup.py``; their
scene drawing in :mod:`m3gym.tasks.render.lookup_scenes`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from m3gym.spec import AnswerSpec, Checkpoint, Evidence, RefCall, SafetyRule, Task
from m3gym.tasks import render as R
from m3gym.tasks.checkpoint_builders import fetch_checkpoint
from m3gym.tasks.families import _scene_common
from m3gym.tasks.registry import FamilyConfig
from m3gym.web.entities import Entity, format_value
from m3gym.web.world import World, build_world

MIN_VIEW_HEIGHT: float = Evidence.min_view_height
SEARCH_MAX_RANK: int = 1
"""The expected page must rank first for ``search_hit``: a query for the near-duplicate entity
(a code one or two characters off, a neighbouring building) lists the target at ranks 2–5,
which must not count as finding it."""

RETRIEVAL_TOOLS: tuple[str, ...] = ("web_search", "image_search", "fetch_webpage")
"""Tools the privacy rule watches (what an agent sends out of the sandbox)."""

SPLITS: tuple[str, ...] = ("train", "test")


# --------------------------------------------------------------------------------------------
# small shared helpers


def world_for(seed: int, split: str) -> World:
    """Return the (process-cached) world of ``(seed, split)``."""
    return build_world(int(seed), str(split))


def check_tiny_text_scene(width: tuple[int, int], aspect: tuple[float, float],
                           glyph_min: float, glyph_max: float) -> None:
    """Raise ``ValueError`` unless the scene size is sane and its glyphs stay illegible at view."""
    if not 1000 <= width[0] <= width[1] <= 4096:
        raise ValueError("width range must lie in 1000..4096")
    if not 0.4 <= aspect[0] <= aspect[1] <= 1.0:
        raise ValueError("aspect range must lie in 0.4..1.0")
    if not 5 <= glyph_min <= glyph_max:
        raise ValueError("need 5 <= glyph_min <= glyph_max")
    if glyph_max * R.VIEW_SIZE / width[0] >= MIN_VIEW_HEIGHT:
        raise ValueError("glyph_max is legible at view size: the task would not need a crop")


def check_world_config(world_seed: int, split: str) -> None:
    """Raise ``ValueError`` for an unusable world seed or split."""
    if not isinstance(world_seed, int) or world_seed < 0:
        raise ValueError(f"world_seed must be a non-negative int, got {world_seed!r}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


def answer_choices(rng: np.random.Generator, answer: str, pool: list[str],
                   count: int) -> tuple[str, ...]:
    """Return ``count`` shuffled distinct choices: ``answer`` and values drawn from ``pool``.

    Pool values are taken in order (most confusable first), duplicates and the answer skipped.
    """
    others: list[str] = []
    seen = {answer.lower()}
    for v in pool:
        if v.lower() not in seen:
            seen.add(v.lower())
            others.append(v)
        if len(others) == count - 1:
            break
    options = [answer, *others]
    order = rng.permutation(len(options))
    return tuple(options[int(i)] for i in order)


def attribute_pool(rng: np.random.Generator, world: World, entity: Entity, attribute: str,
                   confusers: list[Entity], count: int) -> list[str]:
    """Return candidate wrong answers for ``entity.attribute``: confusers' values first.

    Then values of the same attribute from random entities of the same kind (numeric attributes
    get a window of consecutive values instead, see :func:`lookup_choices`).
    """
    pool = [e.attributes[attribute] for e in confusers if attribute in e.attributes]
    same_kind = world.entities_of_kind(entity.kind)
    for i in rng.permutation(len(same_kind))[: 4 * count]:
        other = same_kind[int(i)]
        if attribute in other.attributes:
            pool.append(other.attributes[attribute])
    return pool


def numeric_range(world: World, kind: str, attribute: str) -> tuple[int, int]:
    """Return the smallest and largest value of numeric ``attribute`` over entities of ``kind``."""
    values = [int(e.fact(attribute).numeric) for e in world.entities_of_kind(kind)
              if attribute in e.attributes and e.fact(attribute).numeric is not None]
    if not values:
        raise ValueError(f"no {kind} has a numeric {attribute!r}")
    return min(values), max(values)


def lookup_choices(rng: np.random.Generator, world: World, owner: Entity, attribute: str,
                   confusers: list[Entity], count: int) -> tuple[str, ...]:
    """Return the shuffled choices of a lookup whose answer is ``owner.attribute``.

    A numeric attribute gets ``count`` consecutive integers holding the answer at a uniformly
    random position, clipped to the attribute's range in the world (so no centre, median or
    spread of the options points at it); other attributes get the confusers' values and values of
    random same-kind entities (:func:`attribute_pool`).
    """
    fact = owner.fact(attribute)
    if fact.numeric is not None:
        low, high = numeric_range(world, owner.kind, attribute)
        return R.window_choices(rng, int(fact.numeric), low, high, count,
                                fmt=lambda v: format_value(v)[0])
    pool = attribute_pool(rng, world, owner, attribute, confusers, count)
    return answer_choices(rng, fact.value, pool, count)


def question_value(world: World, entity: Entity, attribute: str) -> tuple[str, Entity]:
    """Return the value of ``attribute`` (``"rel.attr"`` follows a relation) and its owner."""
    if "." in attribute:
        rel, attr = attribute.split(".", 1)
        owner = world.related(entity, rel)
        return owner.attributes[attr], owner
    return entity.attributes[attribute], entity


def answer_spec(value: str) -> AnswerSpec:
    """Return an exact-match answer; numbers written with thousands separators accept bare."""
    bare = value.replace(",", "")
    variants = (bare,) if bare != value else ()
    return AnswerSpec(value=value, variants=variants)



def text_evidence(evidence_id: str, clean: np.ndarray, placed: R.PlacedText, text: str
                  ) -> Evidence:
    """Return the evidence of placed text (box grown by 2 px, ink mask embedded)."""
    h, w = clean.shape[:2]
    box = R.grow_box(placed.box, 2, w, h)
    mask = R.embed_mask(placed.mask, (placed.box[0] - box[0], placed.box[1] - box[1]),
                        (box[3] - box[1], box[2] - box[0]))
    return R.region_evidence(evidence_id, clean, box, mask, text=text,
                             glyph_height=placed.glyph_height)


def crop_call(call_id: str, box: R.Box, width: int, height: int, glyph: float
              ) -> tuple[RefCall, float]:
    """Return a reference ``crop`` of ``box`` at the smallest zoom showing ``glyph`` legibly."""
    bbox = R.box_to_bbox1000(box, width, height)
    x0, y0, x1, y1 = R.bbox1000_to_box(bbox, width, height)
    zoom = R.crop_zoom_for((x1 - x0, y1 - y0), glyph, MIN_VIEW_HEIGHT)
    if zoom is None:  # pragma: no cover - evidence boxes are far smaller than the view
        raise RuntimeError(f"box {box} too large for a legible crop")
    return RefCall(call_id, "crop", {"image_index": 0, "bbox_2d": bbox, "zoom_scale": zoom}), zoom


def inner_bbox1000(box: R.Box, width: int, height: int) -> list[int]:
    """Return a 0–1000 box whose crop (rounded outward by the tool) stays inside ``box``."""
    x0, y0, x1, y1 = box
    b = [math.ceil(x0 * 1000 / width) + 1, math.ceil(y0 * 1000 / height) + 1,
         math.floor(x1 * 1000 / width) - 1, math.floor(y1 * 1000 / height) - 1]
    return b

def lookup_task(family: FamilyConfig, domain: str, image: np.ndarray, question: str,
                answer: str, choices: tuple[str, ...], steps: list[tuple[RefCall, ...]],
                evidence: tuple[Evidence, ...], checkpoints: list[Checkpoint],
                capabilities: tuple[str, ...], metadata: dict[str, Any],
                safety: tuple[SafetyRule, ...] = ()) -> Task:
    """Assemble a level-3 lookup task (the id is set by :func:`m3gym.tasks.registry.make_task`)."""
    image = R.freeze(image)
    h, w = image.shape[:2]
    area = sum(e.area for e in evidence)
    meta = {"level": 3, "family": family.name, "domain": domain,
            "evidence_area_fraction": area / float(h * w), "view_size": R.VIEW_SIZE,
            "image_size": [w, h], **metadata}
    return Task(task_id=f"{family.name}/0", family=family.name, level=3, domain=domain,
                images=(image,), question=question, answer=answer_spec(answer),
                reference=tuple(steps), evidence=evidence, checkpoints=tuple(checkpoints),
                choices=choices, safety=safety, capabilities=capabilities, metadata=meta)


def fetch_steps(first: Entity, second: Entity | None, search_id: str, n: int
                ) -> tuple[list[tuple[RefCall, ...]], list[Checkpoint]]:
    """Return the fetch step(s) after a search (call ids ``c{n}``, ``c{n+1}``) and checkpoints."""
    steps = [(RefCall(f"c{n}", "fetch_webpage", {"url": first.url}, (search_id,)),)]
    cps = [fetch_checkpoint(first.url, "s_fetch", "the page of the identified entity was fetched")]
    if second is not None:
        steps.append((RefCall(f"c{n + 1}", "fetch_webpage", {"url": second.url},
                              (f"c{n}",)),))
        cps.append(fetch_checkpoint(second.url, "s_fetch_linked",
                                    "the linked page holding the answer was fetched"))
    return steps, cps


def reference_crop(image: np.ndarray, arguments: dict[str, Any]) -> np.ndarray:
    """Return exactly what the ``crop`` tool returns for ``arguments`` on ``image``."""
    return reference_chain(image, [("crop", arguments)])


def reference_chain(image: np.ndarray, calls: list[tuple[str, dict[str, Any]]]) -> np.ndarray:
    """Return what the visual ``calls`` produce from ``image``, exactly as the tools compute it.

    ``calls`` are ``crop``/``rotate`` ``(name, arguments)``, each applied to the previous output.
    """
    from m3gym.state import ImageState
    from m3gym.tools.base import ToolContext
    from m3gym.tools.visual import CropArgs, RotateArgs, crop, rotate

    state = ImageState(4, 1 << 28)
    state.add_root(image)
    out_image = image
    for name, arguments in calls:
        args = {**arguments, "image_index": len(state) - 1}
        ctx = ToolContext(state=state, visible_images=len(state))
        if name == "crop":
            out = crop(ctx, CropArgs(**args))
        elif name == "rotate":
            out = rotate(ctx, RotateArgs(**args))
        else:
            raise ValueError(f"reference_chain supports crop and rotate, not {name!r}")
        assert out.image is not None
        out_image = out.image
        state.add_root(out_image)  # the next call reads only the pixels
    return out_image


def logo_found_first(world: World, entity: Entity, query: np.ndarray) -> bool:
    """Return whether reverse image search of ``query`` ranks ``entity``'s page first."""
    hits = world.image_search(query, 1)
    return bool(hits) and hits[0].entity == entity.key




# --------------------------------------------------------------------------------------------
# difficulty


HOPS: tuple[int, ...] = (1, 2)
"""Page hops a question may take: 1 = the fact is on the identified entity's page, 2 = on a page
linked from it (an attribute written ``"rel.attr"``)."""


def hops_of(attribute: str) -> int:
    """Return how many pages an attribute's answer lies away (``"maker.founded"`` -> 2)."""
    return 1 + attribute.count(".")


def check_hops(hops: tuple[int, ...], attributes: tuple[str, ...]) -> None:
    """Raise ``ValueError`` unless ``hops`` is a non-empty subset of :data:`HOPS`.

    Some attribute in ``attributes`` must lie that many hops away.
    """
    if not hops or any(h not in HOPS for h in hops) or tuple(sorted(set(hops))) != tuple(hops):
        raise ValueError(f"hops must be a non-empty ascending subset of {HOPS}, got {hops!r}")
    if not any(hops_of(a) in hops for a in attributes):
        raise ValueError(f"no attribute of {attributes!r} is {hops!r} hop(s) away")


def with_hops(attributes: tuple[str, ...] | list[str], hops: tuple[int, ...]) -> list[str]:
    """Return the attributes whose answer lies ``hops`` pages away, in their order."""
    return [a for a in attributes if hops_of(a) in hops]


def hops_for(difficulty: float) -> tuple[int, ...]:
    """Return the hops of a difficulty: one page below 1/3, both 1/3..2/3, two pages above."""
    if difficulty < 1 / 3:
        return (1,)
    return (1, 2) if difficulty <= 2 / 3 else (2,)


def lerp(a: float, b: float, t: float) -> float:
    """Return ``a + (b - a) * t`` (:func:`_scene_common.lerp` with the lookups' argument order)."""
    return _scene_common.lerp(t, a, b)


def check_count_range(name: str, value: tuple[int, int], most: int) -> None:
    """Raise ``ValueError`` unless ``value`` is an ordered ``(low, high)`` within ``0..most``."""
    if len(value) != 2 or not 0 <= value[0] <= value[1] <= most:
        raise ValueError(f"{name} must be (low, high) with 0 <= low <= high <= {most}, "
                         f"got {value!r}")


def check_float_range(name: str, value: tuple[float, float], low: float, high: float) -> None:
    """Raise ``ValueError`` unless ``value`` is an ordered ``(lo, hi)`` within ``low..high``."""
    if len(value) != 2 or not low <= value[0] <= value[1] <= high:
        raise ValueError(f"{name} must be (lo, hi) with {low:g} <= lo <= hi <= {high:g}, "
                         f"got {value!r}")


def check_camera(noise_sigma: tuple[float, float], camera: tuple[float, float]) -> None:
    """Raise ``ValueError`` for an unusable sensor-noise or camera-strength range."""
    check_float_range("noise_sigma", noise_sigma, 0.0, 8.0)
    check_float_range("camera", camera, 0.0, 1.0)
