"""region_count: count objects of one colour in a marked region of a dim photo."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.deprecation import renamed_names
from m3gym.spec import AnswerSpec, RefCall, Task
from m3gym.tasks import render
from m3gym.tasks.checkpoint_builders import evidence_checkpoints
from m3gym.tasks.families import _scene_common as c2
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.render import smallobjects as objects
from m3gym.tasks.verify import first_verified

_CONFUSABLE: dict[str, frozenset[str]] = {
    "red": frozenset({"orange", "pink"}), "orange": frozenset({"red", "yellow", "pink"}),
    "yellow": frozenset({"orange", "white"}), "pink": frozenset({"red", "orange", "purple"}),
    "blue": frozenset({"purple", "cyan"}), "purple": frozenset({"blue", "pink"}),
    "cyan": frozenset({"blue", "green", "white"}), "green": frozenset({"cyan"}),
    "white": frozenset({"yellow", "cyan"}),
}

DIM_CONTRAST: float = 14.0
"""Default largest target-vs-ground contrast (gray levels) of the dim photo (``dim_contrast``)."""

_COUNT_SCENES: dict[str, dict[str, object]] = {
    "Science": {"scene": "petri_dish", "kinds": ("paper", "noise", "fabric"),
                "object": "colonies", "region": "dashed rectangle drawn on the plate"},
    "Society": {"scene": "parking_lot", "kinds": ("asphalt", "noise"),
                "object": "cars", "region": "dashed parking zone"},
}


@register_family
@dataclass
class RegionCountFamily(FamilyConfig):
    """Count objects of one colour inside a dashed region of a dim photo (crop → autocontrast).

    Scene:
        A petri dish with colonies or a parking lot with cars (1400–2000 px), photographed
        dim: its dynamic range is compressed so the target-vs-ground contrast is at most
        ``dim_contrast`` gray levels. A dashed frame marks a region; objects of several colours
        lie inside and outside it.
    Question:
        "How many <colour> <objects> are inside the <colour> <region>?" — six consecutive counts
        to choose from (the true count is a uniformly random member).
    Why a tool is needed:
        Objects are ``size_range`` px across (2–5 px at view size) and faint (less still once
        the view's downscale averages them with their ground). A zoomed crop of the region makes
        them large enough but leaves them too faint to tell colours apart; an autocontrast of
        the crop restores them. The same colour also occurs outside the region, and other
        colours inside it, so only the grounded count is right.
    Reference trajectory:
        crop (zoomed onto the frame) → autocontrast of the crop (2 hops).
    Checkpoints:
        An S checkpoint per call, a ``v_tool`` on the autocontrast and a ``v_true`` (an artifact
        shows the region's objects with visible contrast).
    Difficulty:
        ``size_range`` (9–11 px at 0 → 5–6 px at 1), ``count_range`` (1–6 → 7–12 targets),
        ``others`` (0–2 → 8–12 other-colour objects in the region: clutter) and
        ``dim_contrast`` (20 → 9 gray levels).
    Config:
        ``size_range`` (px, within 5–12), ``count_range`` (within 0–12),
        ``others`` (within 0–12), ``dim_contrast`` (gray levels, within 6–24).
    """

    name: ClassVar[str] = "region_count"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 2
    domains: ClassVar[tuple[str, ...]] = ("Science", "Society")
    description: ClassVar[str] = "crop a marked region of a dim photo, autocontrast, count"

    size_range: tuple[int, int] = (6, 9)
    count_range: tuple[int, int] = (3, 12)
    others: tuple[int, int] = (3, 8)
    dim_contrast: float = DIM_CONTRAST

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Return object size, counts, clutter and dimness for ``difficulty`` (0 easiest)."""
        return {
            "size_range": c2.lerp_range(difficulty, (9, 11), (5, 6), integer=True),
            "count_range": c2.lerp_range(difficulty, (1, 6), (7, 12), integer=True),
            "others": c2.lerp_range(difficulty, (0, 2), (8, 12), integer=True),
            "dim_contrast": c2.lerp(difficulty, 20.0, 9.0),
        }

    def validate(self) -> None:
        """Check object sizes, counts, clutter and dimness."""
        c2.check_range("size_range", *self.size_range, 5, 12)
        c2.check_range("count_range", *self.count_range, 0, 12)
        c2.check_range("others", *self.others, 0, 12)
        c2.check_range("dim_contrast", self.dim_contrast, self.dim_contrast, 6.0, 24.0)

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task: the first draw whose reference passes every checkpoint."""
        return first_verified(lambda: self.draw(rng))

    def draw(self, rng: np.random.Generator) -> Task:
        """Draw one scene and its task (unverified; :meth:`generate` checks the reference)."""
        domain = c2.pick(rng, self.domains)
        spec = _COUNT_SCENES[domain]
        w, h = c2.scene_size(rng)
        img = render.surface(rng, h, w, kind=c2.pick(rng, spec["kinds"]),  # type: ignore[arg-type]
                                lighting=float(rng.uniform(0.0, 0.15)), vignette=0.1)
        bg_lum = float(render.to_gray(img[::16, ::16]).mean())
        d = int(rng.integers(self.size_range[0], self.size_range[1] + 1))
        cars = domain == "Society"
        targets = [n for n in render.NAMED_COLORS
                   if abs(render.luminance(render.NAMED_COLORS[n]) - bg_lum) >= 72]
        target = c2.pick(rng, targets)
        others = [n for n in render.NAMED_COLORS if n != target and n not in _CONFUSABLE[target]
                  and abs(render.luminance(render.NAMED_COLORS[n]) - bg_lum) >= 30] or [
            n for n in render.NAMED_COLORS if n != target and n not in _CONFUSABLE[target]]

        if cars:  # the lot's worn bay markings: a grey a little lighter than the asphalt
            paint = tuple(int(min(255, bg_lum + 40 + v)) for v in rng.integers(-4, 5, 3))
            objects.draw_parking_lines(img, rng, (0, 0, w, h), int(round(d * 3.4)),
                                       int(round(d * 2.4)), paint)  # type: ignore[arg-type]
        frame_w = int(rng.integers(3, 5))
        max_side = int(render.VIEW_SIZE * d / (c2.LEGIBILITY_MARGIN * c2.MIN_VIEW_HEIGHT + 0.5)
                       ) - 2 * frame_w - 16
        rw = int(rng.integers(200, max_side + 1))
        rh = int(rng.integers(200, max_side + 1))
        rx = int(rng.integers(60, w - rw - 60))
        ry = int(rng.integers(60, h - rh - 60))
        inner = (rx, ry, rx + rw, ry + rh)
        frame_col = c2.pick(rng, tuple(c for c in ("white", "yellow", "cyan", "orange")
                                       if c != target))
        shape = (int(round(d * 1.7)), d) if cars else (d, d)

        def draw_obj(x: int, y: int, color: tuple[int, int, int], mask: np.ndarray | None,
                     ) -> None:
            ow, oh = shape
            if cars:
                objects.draw_car(img, x, y, ow, oh, color)
                if mask is not None:
                    mask[y - ry:y - ry + oh, x - rx:x - rx + ow] = True
            else:
                objects.draw_colony(img, (x * 16 + ow * 8, y * 16 + oh * 8), d * 8, color)
                if mask is not None:
                    cv2.circle(mask_u8, ((x - rx) * 16 + ow * 8, (y - ry) * 16 + oh * 8),
                               d * 8 - 4, 1, -1, cv2.LINE_8, 4)

        # the options are drawn first (consecutive counts inside the feasible range) and the
        # answer is a uniformly random member: no statistic of the options can single it out
        window = render.value_window(rng, self.count_range[0], self.count_range[1], 6)
        n = int(render.pick(rng, window))
        n_other = int(rng.integers(self.others[0], self.others[1] + 1))
        mask_u8 = np.zeros((rh, rw), np.uint8)
        mask = np.zeros((rh, rw), bool)
        occupied: list[tuple[int, int, int, int]] = []
        placed = 0
        inside_bounds = (rx + d + 2, ry + d + 2, rx + rw - d - 2, ry + rh - d - 2)
        for k in range(n + n_other):
            is_target = k < n
            ow, oh = shape
            spot = render.find_free_spot(rng, (ow, oh), inside_bounds, occupied,
                                         margin=max(3, d // 2), tries=80)
            if spot is None:
                if is_target:  # pragma: no cover - the region has room for 18 tiny objects
                    raise RuntimeError("no room for a target object")
                continue
            name = target if is_target else c2.pick(rng, others)
            col = render.jitter_color(rng, render.NAMED_COLORS[name], 10)
            draw_obj(spot[0], spot[1], col, mask if is_target else None)
            occupied.append((spot[0], spot[1], spot[0] + ow, spot[1] + oh))
            placed += is_target
        outside = [render.grow_box(inner, 3 * d + frame_w, w, h)]
        for _ in range(int(rng.integers(25, 60))):
            ow, oh = shape
            spot = render.find_free_spot(rng, (ow, oh), (10, 10, w - 10, h - 10), outside,
                                         margin=max(3, d // 2), tries=10)
            if spot is None:
                continue
            name = target if rng.random() < 0.45 else c2.pick(rng, others)
            draw_obj(spot[0], spot[1], render.jitter_color(rng, render.NAMED_COLORS[name], 10),
                     None)
            outside.append((spot[0], spot[1], spot[0] + ow, spot[1] + oh))
        mask |= mask_u8.astype(bool)
        # the dashed frame, just outside the inner box
        dash = int(rng.integers(10, 22))
        fc = render.NAMED_COLORS[frame_col]
        x0, y0, x1, y1 = rx - frame_w, ry - frame_w, rx + rw, ry + rh
        for sx in range(x0, x1, 2 * dash):
            cv2.rectangle(img, (sx, y0), (min(x1 + frame_w, sx + dash) - 1, y0 + frame_w - 1),
                          fc, -1)
            cv2.rectangle(img, (sx, y1), (min(x1 + frame_w, sx + dash) - 1, y1 + frame_w - 1),
                          fc, -1)
        for sy in range(y0, y1, 2 * dash):
            cv2.rectangle(img, (x0, sy), (x0 + frame_w - 1, min(y1 + frame_w, sy + dash) - 1),
                          fc, -1)
            cv2.rectangle(img, (x1, sy), (x1 + frame_w - 1, min(y1 + frame_w, sy + dash) - 1),
                          fc, -1)
        clean_region = render.to_gray(img[ry:ry + rh, rx:rx + rw])
        contrast = max(render.ink_surround_contrast(clean_region, mask), 1.0)
        dim = self.dim_contrast
        span = float(np.clip(dim * 255.0 / contrast, 16.0 * dim / DIM_CONTRAST,
                             40.0 * dim / DIM_CONTRAST))
        low = float(rng.uniform(10.0, 200.0 - span))
        offsets = [low + float(rng.uniform(-8, 8)) for _ in range(3)]
        # noise first, then the dim exposure: the stretch of the crop restores both alike
        img = render.compress_dynamic_range(c2.degrade(img, rng, (1.0, 2.5)), offsets, span)

        ev = render.region_evidence("region", clean_region, inner, mask, text=None,
                                    glyph_height=float(d), clean_is_region=True)
        crop_box = render.grow_box(inner, frame_w + 4, w, h)
        steps = (
            (c2.crop_call("c1", 0, crop_box, w, h, float(d)),),
            (RefCall("c2", "autocontrast", {"image_index": 1, "cutoff": 0.0}, ("c1",)),),
        )
        checkpoints = evidence_checkpoints("region", [c for step in steps for c in step])
        question = (f"How many {target} {spec['object']} are inside the {frame_col} "
                    f"{spec['region']}? Answer with a number.")
        return Task(
            task_id="", family=self.name, level=2, domain=domain, images=(render.freeze(img),),
            question=question, answer=AnswerSpec(str(placed)),
            reference=steps, evidence=(ev,), checkpoints=checkpoints,
            choices=render.shuffled(rng, [str(v) for v in window]),
            capabilities=("visual_grounding", "multi_hop"),
            metadata=c2.l2_metadata(self.name, domain, str(spec["scene"]), (ev,), img,
                               object_size=d, span=span, target=target),
        )


# RegionCount: the class's name before every family class was called <Name>Family
__getattr__ = renamed_names(
    __name__, {"RegionCount": ("RegionCountFamily", lambda: RegionCountFamily)})
