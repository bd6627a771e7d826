"""region_count: count tiny clustered objects of one colour in a marked region of a photo."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.deprecation import renamed_names
from m3gym.spec import AnswerSpec, Task
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

SCENE_LONG_SIDE: tuple[int, int] = (2300, 2600)
"""Range of the photo's long side: the view shrinks it 3.0–3.4 times."""

_COUNT_SCENES: dict[str, dict[str, object]] = {
    "Science": {"scene": "petri_dish", "kinds": ("paper", "noise", "fabric"),
                "object": "colonies", "region": "dashed rectangle drawn on the plate"},
    "Society": {"scene": "parking_lot", "kinds": ("asphalt", "noise"),
                "object": "cars", "region": "dashed parking zone"},
}


@register_family
@dataclass
class RegionCountFamily(FamilyConfig):
    """Count tiny objects of one colour inside a dashed region of a photo (a zoomed crop).

    Scene:
        A petri dish with colonies or a parking lot with cars, 2300–2600 px wide (the view
        shrinks it 3.0–3.4 times; wider than 2048 px so that an object of 3 px is a third of a
        view pixel while a crop zoomed 5 times still shows it legibly). A dashed frame (2–3 view
        pixels thick) marks a region of 100–170 px; inside and outside it, objects of several
        colours lie in clusters of up to ``cluster_max``, ``gap_range`` px apart (colonies in
        2 x 2 clumps, cars parked side by side).
    Question:
        "How many <colour> <objects> are inside the <colour> <region>?" — six consecutive counts
        to choose from (the true count is a uniformly random member).
    Why a tool is needed:
        An object is ``size_range`` px across (2–4 px each: about one view pixel or less) and
        its neighbours in a cluster lie 1–3 px away: the view's downscale merges a cluster into
        one blob of blended colour, so neither the number of objects nor their colours can be
        read from it. A crop of the frame zoomed until one object is 13.5 view pixels separates
        them. The same colour also occurs outside the region, and other colours inside it (in
        the same clusters), so only the grounded count is right. No reader applies (the answer
        is a count): measured by the reader-independent share of ``m3gym audit-tools`` (the
        crop's detail the view cannot explain) and its per-op ablation.
    Reference trajectory:
        crop (zoomed onto the frame): 1 hop. No contrast op: the objects keep their colours, and
        a point op after a zooming crop shows nothing the crop did not.
    Checkpoints:
        An S checkpoint on the crop, a ``v_tool`` on it and a ``v_true`` (an artifact shows the
        region's objects legibly).
    Difficulty:
        ``size_range`` (4 px at 0 → 3 px at 1), ``count_range`` (1–6 → 7–12 targets),
        ``others`` (0–2 → 8–12 other-colour objects in the region: clutter), ``gap_range``
        (2–3 → 1 px between clustered objects) and ``cluster_max`` (2 → 4 objects per cluster).
    Config:
        ``size_range`` (px, within 3–6), ``count_range`` (within 0–12), ``others`` (within
        0–12), ``gap_range`` (px, within 1–4), ``cluster_max`` (within 1–4).
    """

    name: ClassVar[str] = "region_count"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 2
    domains: ClassVar[tuple[str, ...]] = ("Science", "Society")
    description: ClassVar[str] = "crop a marked region with a zoom, count tiny clustered objects"

    size_range: tuple[int, int] = (3, 3)
    count_range: tuple[int, int] = (3, 12)
    others: tuple[int, int] = (3, 8)
    gap_range: tuple[int, int] = (1, 2)
    cluster_max: int = 3

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Return object size, counts, clutter and clustering for ``difficulty`` (0 easiest)."""
        return {
            "size_range": c2.lerp_range(difficulty, (4, 4), (3, 3), integer=True),
            "count_range": c2.lerp_range(difficulty, (1, 6), (7, 12), integer=True),
            "others": c2.lerp_range(difficulty, (0, 2), (8, 12), integer=True),
            "gap_range": c2.lerp_range(difficulty, (2, 3), (1, 1), integer=True),
            "cluster_max": int(round(c2.lerp(difficulty, 2.0, 4.0))),
        }

    def validate(self) -> None:
        """Check object sizes, counts, clutter, gaps and cluster size."""
        c2.check_range("size_range", *self.size_range, 3, 6)
        c2.check_range("count_range", *self.count_range, 0, 12)
        c2.check_range("others", *self.others, 0, 12)
        c2.check_range("gap_range", *self.gap_range, 1, 4)
        c2.check_range("cluster_max", self.cluster_max, self.cluster_max, 1, 4)

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task: the first draw whose reference passes every checkpoint."""
        return first_verified(lambda: self.draw(rng))

    def draw(self, rng: np.random.Generator) -> Task:
        """Draw one scene and its task (unverified; :meth:`generate` checks the reference)."""
        domain = c2.pick(rng, self.domains)
        spec = _COUNT_SCENES[domain]
        w, h = c2.scene_size(rng, SCENE_LONG_SIDE)
        img = render.surface(rng, h, w, kind=c2.pick(rng, spec["kinds"]),  # type: ignore[arg-type]
                                lighting=float(rng.uniform(0.0, 0.15)), vignette=0.1)
        bg_lum = float(render.to_gray(img[::16, ::16]).mean())
        d = int(rng.integers(self.size_range[0], self.size_range[1] + 1))
        cars = domain == "Society"
        frame_w = int(rng.integers(6, 9))  # 2–3 view pixels: the frame shows in the view
        # the largest region a crop still zooms until one object is legible (1.5 x 9 view px)
        max_side = int(render.VIEW_SIZE * d / (c2.LEGIBILITY_MARGIN * c2.MIN_VIEW_HEIGHT + 0.5)
                       ) - 2 * frame_w - 16
        rw = int(rng.integers(int(0.75 * max_side), max_side + 1))
        rh = int(rng.integers(int(0.75 * max_side), max_side + 1))
        # the target stands out from the whole ground of its region (a photo's light patch too):
        # a region whose ground spans too wide a range for any colour is placed again
        lum = {n: render.luminance(c) for n, c in render.NAMED_COLORS.items()}
        for _ in range(8):
            rx = int(rng.integers(60, w - rw - 60))
            ry = int(rng.integers(60, h - rh - 60))
            lo, hi = np.percentile(render.to_gray(img[ry:ry + rh:4, rx:rx + rw:4]), (5, 95))
            targets = [n for n in render.NAMED_COLORS if lum[n] <= lo - 60 or lum[n] >= hi + 60]
            if targets:
                break
        targets = targets or [n for n in render.NAMED_COLORS if abs(lum[n] - bg_lum) >= 72]
        inner = (rx, ry, rx + rw, ry + rh)
        target = c2.pick(rng, targets)
        others = [n for n in render.NAMED_COLORS if n != target and n not in _CONFUSABLE[target]
                  and abs(lum[n] - bg_lum) >= 30] or [
            n for n in render.NAMED_COLORS if n != target and n not in _CONFUSABLE[target]]

        if cars:  # the lot's worn bay markings: a grey a little lighter than the asphalt
            paint = tuple(int(min(255, bg_lum + 40 + v)) for v in rng.integers(-4, 5, 3))
            objects.draw_parking_lines(img, rng, (0, 0, w, h), int(round(d * 6)),
                                       int(round(d * 4)), paint)  # type: ignore[arg-type]
        frame_col = c2.pick(rng, tuple(c for c in ("white", "yellow", "cyan", "orange")
                                       if c != target))
        mask = np.zeros((rh, rw), np.uint8)

        def place_cluster(names: list[str], bounds: render.Box,
                          occupied: list[tuple[int, int, int, int]], tries: int,
                          in_region: bool) -> bool:
            """Draw one cluster of touching-close objects at a free spot; False when none is."""
            k = len(names)
            sizes = [int(rng.integers(max(2, d - 1), d + 1)) for _ in names]
            gap = int(rng.integers(self.gap_range[0], self.gap_range[1] + 1))
            big = max(sizes)
            if cars:  # parked side by side: one car per lane of pitch ``big + gap``
                long_side = int(round(big * 1.7))
                cells = [(0, i) for i in range(k)]
                box_w, box_h = long_side, k * (big + gap) - gap
            else:  # a clump: up to 2 x 2 colonies, ``gap`` px apart
                slots = [(0, 0), (1, 0), (0, 1), (1, 1)]
                order = rng.permutation(4)[:k] if k > 1 else np.array([0])
                cells = [slots[int(i)] for i in order]
                box_w = (max(c[0] for c in cells) + 1) * (big + gap) - gap
                box_h = (max(c[1] for c in cells) + 1) * (big + gap) - gap
            spot = render.find_free_spot(rng, (box_w, box_h), bounds, occupied,
                                         margin=max(6, 2 * d), tries=tries)
            if spot is None:
                return False
            sx, sy = spot
            for name, size, (cx, cy) in zip(names, sizes, cells):
                col = render.jitter_color(rng, render.NAMED_COLORS[name], 10)
                if cars:
                    ox, oy = sx, sy + cy * (big + gap) + (big - size) // 2
                    ow = int(round(size * 1.7))
                    objects.draw_car(img, ox, oy, ow, size, col)
                    if in_region and name == target:
                        mask[oy - ry:oy - ry + size, ox - rx:ox - rx + ow] = 1
                else:
                    c16 = (int(round((sx + cx * (big + gap) + big / 2) * 16)),
                           int(round((sy + cy * (big + gap) + big / 2) * 16)))
                    objects.draw_colony(img, c16, size * 8, col)
                    if in_region and name == target:
                        cv2.circle(mask, (c16[0] - rx * 16, c16[1] - ry * 16), size * 8 - 4, 1,
                                   -1, cv2.LINE_8, 4)
            occupied.append((sx, sy, sx + box_w, sy + box_h))
            return True

        # the options are drawn first (consecutive counts inside the feasible range) and the
        # answer is a uniformly random member: no statistic of the options can single it out
        window = render.value_window(rng, self.count_range[0], self.count_range[1], 6)
        n = int(render.pick(rng, window))
        n_other = int(rng.integers(self.others[0], self.others[1] + 1))
        names = [target] * n + [c2.pick(rng, others) for _ in range(n_other)]
        names = [names[int(i)] for i in rng.permutation(len(names))]
        occupied: list[tuple[int, int, int, int]] = []
        inside_bounds = (rx + 3, ry + 3, rx + rw - 3, ry + rh - 3)
        placed = 0
        while names:
            k = min(len(names), int(rng.integers(1, self.cluster_max + 1)))
            group, names = names[:k], names[k:]
            if not place_cluster(group, inside_bounds, occupied, 120, True):
                raise RuntimeError("no room for a cluster")  # pragma: no cover - 24 objects fit
            placed += group.count(target)
        outside = [render.grow_box(inner, 3 * d + frame_w, w, h)]
        for _ in range(int(rng.integers(40, 90))):
            k = int(rng.integers(1, self.cluster_max + 1))
            group = [target if rng.random() < 0.45 else c2.pick(rng, others) for _ in range(k)]
            place_cluster(group, (10, 10, w - 10, h - 10), outside, 10, False)
        # the dashed frame, just outside the inner box
        dash = int(rng.integers(12, 22))
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
        img = c2.degrade(img, rng, (1.0, 2.5))

        ev = render.region_evidence("region", clean_region, inner, mask.astype(bool), text=None,
                                    glyph_height=float(d), clean_is_region=True)
        crop_box = render.grow_box(inner, frame_w + 4, w, h)
        steps = ((c2.crop_call("c1", 0, crop_box, w, h, float(d)),),)
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
                               object_size=d, target=target),
        )


# RegionCount: the class's name before every family class was called <Name>Family
__getattr__ = renamed_names(
    __name__, {"RegionCount": ("RegionCountFamily", lambda: RegionCountFamily)})
