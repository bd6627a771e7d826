"""logo_lookup: identify a small logo by reverse image search, answer a fact of its owner."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any, ClassVar

import numpy as np

from m3gym.scoring.checkpoints import UPRIGHT_TOLERANCE_DEG
from m3gym.spec import RefCall, Task
from m3gym.tasks import render as R
from m3gym.tasks.checkpoint_builders import evidence_checkpoints, search_hit_checkpoint
from m3gym.tasks.families import _lookup_common as C
from m3gym.tasks.families._scene_common import lerp_range
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.render import lookup_scenes as S
from m3gym.web.world import World

LOGO_QUESTIONS: dict[str, dict[str, str]] = {
    "company": {
        "founded": "In what year was the company whose logo this is founded?",
        "headquarters": "In which town is the company whose logo this is headquartered?",
        "industry": "In which industry does the company whose logo this is operate?",
        "ceo": "Who is the chief executive of the company whose logo this is?",
        "headquarters.region": "In which region lies the town where this company is "
                               "headquartered?",
        "headquarters.founded": "In what year was the town where this company is headquartered "
                                "founded?",
    },
    "team": {
        "founded": "In what year was the club whose crest this is founded?",
        "home_city": "In which city are the club whose crest this is based?",
        "coach": "Who is the head coach of the club whose crest this is?",
        "venue": "What is the name of the home ground of the club whose crest this is?",
        "venue.opened": "In what year did the home ground of the club whose crest this is open?",
        "venue.city": "In which town stands the home ground of the club whose crest this is?",
    },
}
"""Entity kind → attribute (``rel.attr`` = on a linked page) → question tail."""

LOGO_SCENES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "storefront": ("company", "Society", ("brick", "asphalt", "wood")),
    "jersey": ("team", "Culture", ("fabric", "gradient", "noise")),
}
"""Scene → (entity kind, domain, background kinds)."""

ATTEMPTS: int = 4
"""Checked scene draws before an unchecked one (the reference search almost always succeeds)."""

LOGO_GLYPH_FRACTION: float = 0.2
"""Height of a logo's initials relative to the logo side (its smallest decisive detail)."""


def logo_mask(gray_logo: np.ndarray) -> np.ndarray:
    """Return the ``bool`` mask of a logo's strongest one-sided detail.

    Pixels clearly darker (or, if those are fewer, clearly lighter) than the logo's background
    (the median of its top and bottom rows). One side only, so the mean ink level stays far from
    the background's even when a logo has both darker and lighter elements.
    """
    bg = float(np.median(np.concatenate([gray_logo[0], gray_logo[-1]])))
    diff = gray_logo.astype(np.float32) - bg
    darker, lighter = diff < -40.0, diff > 40.0
    return darker if int(darker.sum()) >= int(lighter.sum()) else lighter


@register_family
@dataclass
class LogoLookupFamily(FamilyConfig):
    """Identify a small logo on a shop sign or a jersey by reverse image search, answer a fact.

    Scene:
        A storefront (a shop sign band above a window and a door) or a football jersey, drawn
        with shading and depth; a small logo (sometimes tilted) sits on the sign or the chest.
        Decoy logos of other entities, at higher difficulty the near-duplicate ("twin") logo, lie
        elsewhere, with readable labels and clutter around.

    Question:
        "Look at the small logo on the shop sign / on the jersey in the <where> part of the image
        and find out whose logo it is." plus a question about its owner or a page one link
        further; multiple choice.

    Why a tool is needed:
        The logo is ``side_min``-``side_max`` px wide in an image at least ``width[0]`` px wide,
        so its initials are a few view pixels tall, and a reverse image search of the whole image
        cannot match it (the search compares windows of 60-100 % of the query's short side). A
        ``crop`` framing the logo (and a ``rotate`` when it is tilted beyond the upright
        tolerance) makes it searchable; ``image_search`` finds the fictional owner's page. The
        logo carries no name; near-duplicate logos (one element changed) lead to wrong pages.

    Reference trajectory:
        ``crop`` (logo) [-> ``rotate(-tilt)``] -> ``image_search`` -> ``fetch_webpage(owner)``
        [-> ``fetch_webpage(linked page)``].

    Checkpoints:
        ``crop_covers`` [and ``rotate_upright``] on the logo, ``v_tool`` + ``v_true`` on it,
        ``search_hit`` (owner's page ranked first), ``fetch`` of each reference page.

    Difficulty:
        ``side_min``/``side_max`` 60-70 px at 0 -> 34-42 px at 1; ``tilt`` (0, 0) below 1/4,
        then 14-24 deg -> 20-35 deg (needs a ``rotate``); ``decoys`` (0, 1) -> (2, 3);
        ``twin_prob`` (the near-duplicate logo in the scene) 0 -> 1; ``clutter`` (2, 5) ->
        (8, 13), ``labels`` (1, 3) -> (4, 7); ``hops`` (1,) below 1/3, (1, 2), (2,) above 2/3.

    Config:
        ``width``/``aspect`` image size; ``side_min``/``side_max`` logo side (px); ``tilt`` range of
        the logo's absolute tilt (deg; 0 or above the upright tolerance); ``decoys`` other logos;
        ``twin_prob`` probability of the twin decoy; ``noise_sigma`` sensor noise; ``camera``
        camera-pipeline strength; ``clutter``/``labels`` distractor counts; ``scenes`` among
        :data:`LOGO_SCENES`; ``hops`` allowed page hops; ``choices`` option count;
        ``split``/``world_seed`` the world.
    """

    name: ClassVar[str] = "logo_lookup"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 3
    domains: ClassVar[tuple[str, ...]] = ("Culture", "Society")
    description: ClassVar[str] = ("Crop a small logo, reverse-search it, fetch the owner's page, "
                                  "answer a fact.")

    width: tuple[int, int] = (1400, 1800)
    aspect: tuple[float, float] = (0.62, 0.8)
    side_min: int = 40
    side_max: int = 60
    tilt: tuple[float, float] = (0.0, 0.0)
    decoys: tuple[int, int] = (1, 2)
    twin_prob: float = 0.0
    noise_sigma: tuple[float, float] = (0.8, 2.0)
    camera: tuple[float, float] = (0.15, 0.4)
    clutter: tuple[int, int] = (4, 9)
    labels: tuple[int, int] = (2, 5)
    scenes: tuple[str, ...] = tuple(LOGO_SCENES)
    hops: tuple[int, ...] = C.HOPS
    choices: int = 6
    split: str = "train"
    world_seed: int = 0

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Return logo size, tilt, decoys, the twin, clutter and hops for ``difficulty``."""
        d = float(difficulty)
        counts = partial(lerp_range, d, integer=True, half_even=True)
        tilt = (0.0, 0.0) if d < 0.25 else (C.lerp(12.0, 20.0, d), C.lerp(20.0, 35.0, d))
        return {"side_min": int(round(C.lerp(60, 34, d))),
                "side_max": int(round(C.lerp(70, 42, d))), "tilt": tilt,
                "decoys": counts((0, 1), (2, 3)), "twin_prob": d,
                "clutter": counts((2, 5), (8, 13)),
                "labels": counts((1, 3), (4, 7)), "hops": C.hops_for(d)}

    def validate(self) -> None:
        """Check the world, the illegibility of the logo at view size, and the scenes."""
        C.check_world_config(self.world_seed, self.split)
        C.check_camera(self.noise_sigma, self.camera)
        if not 1000 <= self.width[0] <= self.width[1] <= 4096:
            raise ValueError("width range must lie in 1000..4096")
        if not 0.4 <= self.aspect[0] <= self.aspect[1] <= 1.0:
            raise ValueError("aspect range must lie in 0.4..1.0")
        if not 24 <= self.side_min <= self.side_max <= 120:
            raise ValueError("need 24 <= side_min <= side_max <= 120")
        if self.side_max * LOGO_GLYPH_FRACTION * R.VIEW_SIZE / self.width[0] >= C.MIN_VIEW_HEIGHT:
            raise ValueError("side_max is legible at view size: the task would not need a crop")
        lo, hi = self.tilt
        if not (lo == hi == 0.0 or UPRIGHT_TOLERANCE_DEG + 1.0 <= lo <= hi <= 45.0):
            raise ValueError(f"tilt must be (0, 0) or lie in {UPRIGHT_TOLERANCE_DEG + 1:g}..45 "
                             "degrees (a tilt the search tolerates would make rotate optional)")
        if not 0 <= self.decoys[0] <= self.decoys[1] <= 3:
            raise ValueError("decoys must lie in 0..3")
        if not 0.0 <= self.twin_prob <= 1.0:
            raise ValueError("twin_prob must lie in [0, 1]")
        C.check_count_range("clutter", self.clutter, 40)
        C.check_count_range("labels", self.labels, 20)
        if not self.scenes or any(s not in LOGO_SCENES for s in self.scenes):
            raise ValueError(f"scenes must be among {sorted(LOGO_SCENES)}")
        C.check_hops(self.hops, tuple(a for q in LOGO_QUESTIONS.values() for a in q))
        if self.choices < 2:
            raise ValueError("choices must be >= 2")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one logo-lookup task."""
        world = C.world_for(self.world_seed, self.split)
        for _ in range(ATTEMPTS):  # the search is robust: a scene rarely needs a redraw
            task = self._attempt(rng, world)
            if task is not None:
                return task
        task = self._attempt(rng, world, check=False)
        assert task is not None
        return task

    def _attempt(self, rng: np.random.Generator, world: World, check: bool = True
                 ) -> Task | None:
        """Draw one scene; ``None`` when ``check`` finds the searched image not matching first.

        The check runs the world's reverse image search on exactly the reference's search input
        (the crop, rotated upright for a tilted logo; one search per attempt): near-duplicate
        logos and noise occasionally make another logo rank first, and such scenes are redrawn
        so that the reference's top hit is the target.
        """
        scene = R.pick(rng, self.scenes)
        kind, domain, kinds = LOGO_SCENES[scene]
        entity = world.pick(rng, kind, min_distractors=1)
        options = [a for a in LOGO_QUESTIONS[kind]
                   if a.split(".")[0] in entity.attributes]
        attribute = R.pick(rng, C.with_hops(options, self.hops) or options)
        answer, owner = C.question_value(world, entity, attribute)

        w = int(rng.integers(self.width[0], self.width[1] + 1))
        h = int(w * rng.uniform(*self.aspect))
        img = S.scene_base(rng, w, h, kinds)
        side = int(rng.integers(self.side_min, self.side_max + 1))
        tilt = 0.0
        if self.tilt[1] > 0:
            tilt = float(rng.uniform(*self.tilt)) * (1.0 if rng.random() < 0.5 else -1.0)
        host, logo_box, ink = S.draw_logo_host(img, rng, scene, world.logo(entity), side, tilt,
                                               logo_mask)
        keep = [host]
        where = R.position_phrase(logo_box, w, h)
        twin = world.distractors(entity)[0]
        decoy_keys = []
        pool = world.entities_of_kind(kind)
        others = [pool[int(rng.integers(len(pool)))]
                  for _ in range(int(rng.integers(self.decoys[0], self.decoys[1] + 1)))]
        if self.twin_prob > 0 and rng.random() < self.twin_prob:
            others.insert(0, twin)
        for other in others:
            if other.group == entity.group and other.key != twin.key:
                continue
            dside = int(rng.integers(self.side_min, self.side_max + 1))
            spot = R.find_free_spot(rng, (dside, dside), (10, 10, w - 10, h - 10), keep,
                                    margin=30, tries=40)
            if spot is None:
                continue
            x, y = spot
            box = (x, y, x + dside, y + dside)
            if other.key == twin.key and R.position_phrase(box, w, h) == where:
                continue  # the twin must not sit in the part of the image the question names
            S.paste_logo(img, rng, world.logo(other), box)
            keep.append(box)
            decoy_keys.append(other.key)
        S.finish_scene(img, rng, keep, self.clutter, self.labels)
        glyph = side * LOGO_GLYPH_FRACTION
        evidence = replace(R.region_evidence("logo", img, logo_box, ink, text=None,
                                             glyph_height=glyph), angle=tilt)
        img = R.add_sensor_noise(img, rng, float(rng.uniform(*self.noise_sigma)))
        img = S.camera_shot(img, rng, float(rng.uniform(*self.camera)), [logo_box])

        margin = max(1, int(side * rng.uniform(0.0, 0.05)))
        crop, _ = C.crop_call("c1", R.grow_box(logo_box, margin, w, h), w, h, glyph)
        chain = [crop]
        if tilt != 0.0:
            chain.append(RefCall("c2", "rotate", {"image_index": 1, "angle": -tilt,
                                                  "expand": True}, ("c1",)))
        searched = [(c.name, dict(c.arguments)) for c in chain]
        if check and not C.logo_found_first(world, entity, C.reference_chain(img, searched)):
            return None
        second = owner if owner.key != entity.key else None
        n = len(chain)
        steps: list[tuple[RefCall, ...]] = [(c,) for c in chain]
        steps.append((RefCall(f"c{n + 1}", "image_search", {"image_index": n}, (f"c{n}",)),))
        more, fetch_cps = C.fetch_steps(entity, second, f"c{n + 1}", n + 2)
        steps += more
        checkpoints = [
            *evidence_checkpoints("logo", chain),
            search_hit_checkpoint("image_search", entity.url, "s_image_search", C.SEARCH_MAX_RANK,
                                  "a reverse image search ranked the logo owner's page first"),
            *fetch_cps,
        ]
        confusers = list(world.distractors(entity))
        if second is not None:
            rel = attribute.split(".")[0]
            confusers = [world.related(e, rel) for e in confusers if rel in e.attributes]
        choices = C.lookup_choices(rng, world, owner, attribute.split(".")[-1], confusers,
                                   self.choices)
        host_phrase = "on the shop sign" if scene == "storefront" else "on the jersey"
        question = (f"Look at the small logo {host_phrase} in the {where} part of the image and "
                    f"find out whose logo it is. {LOGO_QUESTIONS[kind][attribute]}")
        caps = ("visual_grounding", "knowledge", "multi_hop")
        meta = {"scene": scene, "world": {"seed": self.world_seed, "split": self.split},
                "target": entity.key, "target_url": entity.url, "attribute": attribute,
                "answer_entity": owner.key, "distractor": twin.key,
                "decoys": decoy_keys, "logo_side": side, "tilt": tilt,
                "glyph_height_view": glyph * R.view_scale(h, w)}
        return C.lookup_task(self, domain, img, question, answer, choices, steps, (evidence,),
                             checkpoints, caps, meta)
