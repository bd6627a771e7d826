"""code_lookup: zoom into a tiny product code on a tag, search it, answer a fact of its page."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, ClassVar

import numpy as np

from m3gym.spec import Evidence, RefCall, Task
from m3gym.tasks import render as R
from m3gym.tasks.checkpoint_builders import evidence_checkpoints, search_hit_checkpoint
from m3gym.tasks.families import _lookup_common as C
from m3gym.tasks.families._scene_common import lerp_range
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.render import lookup_scenes as S
from m3gym.web.entities import Entity


@lru_cache(maxsize=8)
def code_pairs(seed: int, split: str) -> tuple[tuple[str, str], ...]:
    """Return ``(target key, near-miss key)`` pairs of products whose codes nearly coincide.

    A pair qualifies when the codes differ in at most two characters, searching the target's code
    ranks the target first and searching the near-miss code ranks the near-miss first (so a
    misread code leads to the wrong product page).
    """
    from rapidfuzz.distance import Levenshtein

    world = C.world_for(seed, split)
    products = [p for p in world.entities_of_kind("product")]
    codes = [p.attributes["code"] for p in products]
    pairs = []
    for p, code in zip(products, codes):
        best: Entity | None = None
        best_d = 3
        for q, other in zip(products, codes):
            if q.key == p.key or len(other) != len(code):
                continue
            d = Levenshtein.distance(code, other)
            if d < best_d:
                best, best_d = q, d
        if best is None:
            continue
        hit = world.search(code, 1)
        miss = world.search(best.attributes["code"], 1)
        if hit and hit[0].entity == p.key and miss and miss[0].entity == best.key:
            pairs.append((p.key, best.key))
    return tuple(pairs)


CODE_QUESTIONS: dict[str, str] = {
    "release_year": "In what year was this product first released?",
    "price_usd": "What is the list price of this product in US dollars?",
    "colour": "In which colour does this product come as standard?",
    "maker.headquarters": "In which town is the maker of this product headquartered?",
    "maker.founded": "In what year was the company that makes this product founded?",
    "maker.industry": "In which industry does the maker of this product operate?",
    "maker.ceo": "Who is the chief executive of the company that makes this product?",
}
"""Attribute (``rel.attr`` = attribute of a linked page) → question tail."""

CODE_SCENES: dict[str, tuple[str, tuple[str, ...]]] = {
    "shelf": ("Finance", ("wood", "paper", "gradient")),
    "package": ("Life", ("fabric", "noise", "asphalt")),
    "crate": ("Life", ("wood", "brick", "noise")),
}
"""Scene → (domain, background kinds)."""


@register_family
@dataclass
class CodeLookupFamily(FamilyConfig):
    """Read a tiny product code on a tag, look the product up, answer a fact of its page.

    Scene:
        A product box (shelf, package or crate scene) drawn with depth and shading; on its front a
        small light tag carries the product code in grey print. Around it: readable stickers and
        labels, clutter, and (at higher difficulty) look-alike tags with near-miss codes in other
        parts of the image.

    Question:
        "A small tag in the <where> part of the image shows a product code in faint print. Look the
        product up by its code." plus a question about the product or (one link further) its
        maker; multiple choice (consecutive integers for numeric answers).

    Why a tool is needed:
        The code's glyphs are ``glyph_min``-``glyph_max`` px tall in an image ``width`` px wide
        (1850-2048 by default), so at the view (longest side 768) they are about 2-2.7 px tall:
        the view's downscale merges the strokes, and a strong reader told where the tag is
        (PP-OCRv4 + Tesseract, upscaled and contrast-stretched) reads the whole code on none of
        the held-out tasks. A zoomed ``crop`` of the tag shows the full-resolution strokes, which
        the same reader reads. The ink is ``contrast_min``-``contrast_max`` levels darker than
        the tag (the antialiased 6 px strokes keep about a third of it, above
        :attr:`Evidence.min_contrast`), so no contrast op is needed (a point op after a zooming
        crop adds nothing the crop did not show). The answer is not in
        the image: the fictional product is found only by searching its exact code, and the
        world holds a product whose code differs in one or two characters.

    Reference trajectory:
        ``crop`` (tag) -> ``web_search(code)`` -> ``fetch_webpage(product)``
        [-> ``fetch_webpage(maker)`` for a two-hop question].

    Checkpoints:
        ``crop_covers`` on the code, ``v_tool`` + ``v_true`` on it, ``search_hit`` (product page
        ranked first), ``fetch`` of each reference page.

    Difficulty:
        ``glyph_min``/``glyph_max`` 6.2-7 px at 0 -> 5.5-6 px at 1; ``contrast_min``/
        ``contrast_max`` 165-200 -> 140-160 levels; ``clutter`` (2, 5) -> (8, 14) and ``labels``
        (1, 3) -> (5, 8); ``decoy_tags`` (look-alike tags with near-miss codes) (0, 0) -> (2, 3);
        ``hops`` (1,) below 1/3, (1, 2) in the middle, (2,) above 2/3.

    Config:
        ``width``/``aspect`` image size; ``glyph_min``/``glyph_max`` code glyph height (px);
        ``contrast_min``/``contrast_max`` ink contrast (levels); ``noise_sigma`` sensor noise;
        ``camera`` camera-pipeline strength; ``clutter``/``labels`` distractor counts;
        ``decoy_tags`` look-alike tag count range; ``attributes`` asked attributes (keys of
        :data:`CODE_QUESTIONS`); ``hops`` allowed page hops; ``choices`` option count;
        ``split``/``world_seed`` the offline world.
    """

    name: ClassVar[str] = "code_lookup"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 3
    domains: ClassVar[tuple[str, ...]] = ("Finance", "Life")
    description: ClassVar[str] = ("Read a tiny product code (zoomed crop), search it, fetch the "
                                  "product page, answer a fact.")

    width: tuple[int, int] = (1850, 2048)
    aspect: tuple[float, float] = (0.62, 0.8)
    glyph_min: float = 5.5
    glyph_max: float = 6.5
    contrast_min: float = 140.0
    contrast_max: float = 180.0
    noise_sigma: tuple[float, float] = (0.8, 1.8)
    camera: tuple[float, float] = (0.15, 0.4)
    clutter: tuple[int, int] = (5, 10)
    labels: tuple[int, int] = (3, 6)
    decoy_tags: tuple[int, int] = (0, 0)
    attributes: tuple[str, ...] = tuple(CODE_QUESTIONS)
    hops: tuple[int, ...] = C.HOPS
    choices: int = 6
    split: str = "train"
    world_seed: int = 0

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Return glyph size, ink contrast, clutter, look-alike tags and hops for ``difficulty``."""
        d = float(difficulty)
        counts = partial(lerp_range, d, integer=True, half_even=True)
        return {"glyph_min": C.lerp(6.2, 5.5, d), "glyph_max": C.lerp(7.0, 6.0, d),
                "contrast_min": C.lerp(165.0, 140.0, d), "contrast_max": C.lerp(200.0, 160.0, d),
                "clutter": counts((2, 5), (8, 14)),
                "labels": counts((1, 3), (5, 8)),
                "decoy_tags": counts((0, 0), (2, 3)), "hops": C.hops_for(d)}

    def validate(self) -> None:
        """Check the world, the illegibility of the code at view size, and the attributes."""
        C.check_world_config(self.world_seed, self.split)
        C.check_camera(self.noise_sigma, self.camera)
        C.check_tiny_text_scene(self.width, self.aspect, self.glyph_min, self.glyph_max)
        if not Evidence.min_contrast < self.contrast_min <= self.contrast_max <= 220:
            raise ValueError("contrast range must lie in min_contrast..220 (ink a zoomed "
                             "crop shows legibly without a contrast op)")
        if not self.attributes or any(a not in CODE_QUESTIONS for a in self.attributes):
            raise ValueError(f"attributes must be among {sorted(CODE_QUESTIONS)}")
        C.check_hops(self.hops, self.attributes)
        C.check_count_range("clutter", self.clutter, 40)
        C.check_count_range("labels", self.labels, 20)
        C.check_count_range("decoy_tags", self.decoy_tags, 4)
        if self.choices < 2:
            raise ValueError("choices must be >= 2")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one code-lookup task."""
        world = C.world_for(self.world_seed, self.split)
        pairs = code_pairs(self.world_seed, self.split)
        target_key, miss_key = pairs[int(rng.integers(len(pairs)))]
        product, near = world.entity(target_key), world.entity(miss_key)
        code = product.attributes["code"]
        attribute = R.pick(rng, C.with_hops(self.attributes, self.hops))
        answer, owner = C.question_value(world, product, attribute)

        w = int(rng.integers(self.width[0], self.width[1] + 1))
        h = int(w * rng.uniform(*self.aspect))
        scene = R.pick(rng, tuple(CODE_SCENES))
        domain, kinds = CODE_SCENES[scene]
        img = S.scene_base(rng, w, h, kinds)
        # the product's package (category word, Faker brand, barcode); on a shelf: neighbours
        pw, ph = int(w * rng.uniform(0.25, 0.4)), int(h * rng.uniform(0.3, 0.5))
        px, py = int(rng.integers(40, w - pw - 40)), int(rng.integers(60, h - ph - 40))
        keep: list[R.Box] = []
        if scene == "shelf":
            S.draw_shelf(img, rng, py + ph)
        category = product.name.split()[-1].upper()
        keep.append(S.draw_package(img, rng, (px, py, px + pw, py + ph), category))
        if scene == "shelf":
            keep += S.draw_neighbour_boxes(img, rng, int(rng.integers(2, 6)), py + ph, keep)

        glyph = float(rng.uniform(self.glyph_min, self.glyph_max))
        patch = S.evidence_patch(rng, code, glyph)
        size = S.label_size(patch)
        plate_col = R.jitter_color(rng, R.pick(rng, S.PLATE_COLORS), 8)
        inner = (px + 8, py + ph // 2, px + pw - 8, py + ph - 8)
        spot = S.place(rng, size, inner, [], (20, 20, w - 20, h - 20))
        contrast = float(rng.uniform(self.contrast_min, self.contrast_max))
        label = S.draw_faint_label(img, rng, code, glyph, contrast, spot, plate_col, patch)
        keep.append(label.plate)
        where = R.position_phrase(label.plate, w, h)
        decoys: list[str] = []
        if self.decoy_tags[1] > 0:
            n = int(rng.integers(self.decoy_tags[0], self.decoy_tags[1] + 1))
            texts = [near.attributes["code"], *R.confusable_edits(code)][:n]
            decoys = S.draw_decoy_labels(img, rng, texts, (self.glyph_min, self.glyph_max),
                                         (self.contrast_min, self.contrast_max), keep, where)
        S.finish_scene(img, rng, keep, self.clutter, self.labels)
        evidence = C.text_evidence("code", img, label.text, code)
        img = R.add_sensor_noise(img, rng, float(rng.uniform(*self.noise_sigma)))
        img = S.camera_shot(img, rng, float(rng.uniform(*self.camera)), [label.plate])

        crop_bbox = C.inner_bbox1000(label.crop_box, w, h)
        x0, y0, x1, y1 = R.bbox1000_to_box(crop_bbox, w, h)
        zoom = R.crop_zoom_for((x1 - x0, y1 - y0), label.text.glyph_height, C.MIN_VIEW_HEIGHT)
        assert zoom is not None
        second = owner if owner.key != product.key else None
        steps: list[tuple[RefCall, ...]] = [
            (RefCall("c1", "crop", {"image_index": 0, "bbox_2d": crop_bbox, "zoom_scale": zoom}),),
            (RefCall("c2", "web_search", {"query": code}, ("c1",)),),
        ]
        more, fetch_cps = C.fetch_steps(product, second, "c2", 3)
        steps += more
        checkpoints = [
            *evidence_checkpoints("code", [steps[0][0]]),
            search_hit_checkpoint("web_search", product.url, "s_search", C.SEARCH_MAX_RANK,
                                  "a web search ranked the product page first"),
            *fetch_cps,
        ]
        confusers = [near, *world.distractors(product)]
        if second is not None:
            confusers = [world.related(e, attribute.split(".")[0]) for e in confusers]
        attr = attribute.split(".")[-1]
        choices = C.lookup_choices(rng, world, owner, attr, confusers, self.choices)
        question = (f"A small tag in the {where} part of the image shows a product code in tiny "
                    f"print. Look the product up by its code. {CODE_QUESTIONS[attribute]}")
        caps = ("visual_grounding", "knowledge", "multi_hop")
        meta = {"scene": scene, "world": {"seed": self.world_seed, "split": self.split},
                "target": product.key, "target_url": product.url, "attribute": attribute,
                "answer_entity": owner.key, "search_query": code,
                "distractor_query": near.attributes["code"], "distractor": near.key,
                "decoy_codes": decoys,
                "glyph_height_view": label.text.glyph_height * R.view_scale(h, w)}
        return C.lookup_task(self, domain, img, question, answer, choices, steps, (evidence,),
                             checkpoints, caps, meta)

