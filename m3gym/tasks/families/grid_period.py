"""grid_period: count the rows and columns of a barely visible repetitive pattern."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.deprecation import renamed_names
from m3gym.spec import AnswerSpec, Checkpoint, RefCall, Task
from m3gym.tasks import render as R
from m3gym.tasks.checkpoint_builders import (
    v_tool_checkpoint,
    v_true_checkpoint,
)
from m3gym.tasks.families import _analysis_common as ac
from m3gym.tasks.families._scene_common import lerp_range
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.render.grid_scenes import SCENES

PATTERNS: dict[str, tuple[str, str]] = {
    "well_plate": ("a microplate on a lab bench photographed under very weak light", "wells"),
    "dot_slide": ("a microscope calibration slide with a dot array on a light box, badly "
                  "underexposed", "dots"),
    "facade": ("a tiled building facade in dense fog", "windows"),
}
"""Pattern kind → (scene phrase for the question, what is counted)."""

EXPOSURE: dict[str, tuple[float, float]] = {
    "well_plate": (60.0, 130.0), "dot_slide": (25.0, 70.0), "facade": (165.0, 210.0),
}
"""Pattern kind → range of the washed-out photo's darkest level (weak light, underexposure, fog)."""


def _grid_block(rng: np.random.Generator, rows: tuple[int, int],
                cols: tuple[int, int]) -> list[tuple[int, int]]:
    """Return six candidate grids: 2 consecutive row counts x 3 column counts (or 3 x 2).

    The block is drawn inside the feasible ranges *before* the true grid, which is then a
    uniformly random member of it, so no statistic of the options singles out the answer. Blocks
    whose totals coincide (3 x 8 = 4 x 6) are redrawn, so "how many in total" options stay
    distinct (a range too narrow to avoid it keeps the last block; its totals are deduplicated).
    """
    block: list[tuple[int, int]] = []
    for _ in range(50):
        n_r, n_c = (2, 3) if rng.random() < 0.5 else (3, 2)
        row_counts = R.value_window(rng, rows[0], rows[1], n_r)
        col_counts = R.value_window(rng, cols[0], cols[1], n_c)
        block = [(r, c) for r in row_counts for c in col_counts]
        if len({r * c for r, c in block}) == len(block):
            break
    return block




@register_family
@dataclass
class GridPeriodFamily(FamilyConfig):
    """Count the rows and columns of a barely visible repetitive pattern.

    Scene:
        A photograph (1400–1800 px) of one of three periodic objects, drawn by
        :mod:`m3gym.tasks.render.grid_scenes` and pasted with a slight perspective (tilt up to
        2.5°): a white microplate on a lab bench (moulded rim and chamfered corner, an embossed
        maker's mark and lot but no row letters or column numbers, which would print the
        answer, shaded wells with a meniscus glint, whole columns filled
        with tinted liquid, a soft drop shadow); a glass calibration slide on a light box
        (ground glass edges, a printed label with a fictional maker and serial number, a chrome
        dot array in an etched frame, vignetting); or a tiled facade below a cornice (dark
        window frames with mullions and transoms, stone sills and their shadows, some rooms lit,
        some windows with blinds). The whole photo is washed out (weak light, underexposure,
        fog): its full range is squeezed into ``span_range`` gray levels, then lens blur,
        sensor noise (``noise_range`` sigma) and JPEG, so the counted objects differ from their
        surround by only a few levels.
    Question:
        "How many rows and columns of <things> does the pattern have?" (ROWSxCOLUMNS) or, with
        probability ``total_prob``, how many in total — six candidate grids (2 consecutive row
        counts x 3 column counts, or 3 x 2) drawn before the true one.
    Why a tool is needed:
        The contrast is under the 28-level visibility threshold at any zoom, so no crop helps:
        the evidence is global. The surroundings (bench, light box, sky) are washed out with
        the rest, so nothing in the photo already spans the full range: a global
        ``autocontrast`` (or ``equalize``) stretches it, and a ``threshold`` between the objects
        and their surround yields a binary pattern in which rows and columns can be counted.
        ``glyph_height`` of the evidence is the smallest distance between neighbouring objects
        in the image.
    Reference trajectory:
        autocontrast of image 0 → threshold at the level midway between the objects and their
        surround on the object (plate deck, glass, wall); labels, rims, sills, blinds and lit
        rooms stay on their own side of it.
    Checkpoints:
        ``global_op`` S checkpoints for the stretch and the threshold, a ``v_tool`` on the
        threshold and a ``v_true`` (an artifact shows the whole pattern with visible contrast).
    Difficulty:
        ``rows``/``cols`` (3–5 x 4–6 at 0 → 9–14 x 12–18 at 1: more, finer periods to count),
        ``span_range`` (22–26 → 13–17 gray levels) and ``noise_range`` (0.8–1.2 → 1.6–2.2).
    Config:
        ``rows`` (within 2–16), ``cols`` (within 2–20), ``total_prob`` ([0, 1]),
        ``span_range`` (gray levels, within 10–28), ``noise_range`` (sigma, within 0.5–3).
    """

    name: ClassVar[str] = "grid_period"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 3
    domains: ClassVar[tuple[str, ...]] = ("Science", "Diagram")
    description: ClassVar[str] = (
        "Faint whole-image grid: autocontrast (global) → threshold → count rows x columns.")

    rows: tuple[int, int] = (3, 10)
    cols: tuple[int, int] = (4, 14)
    total_prob: float = 0.3
    span_range: tuple[float, float] = (16.0, 24.0)
    noise_range: tuple[float, float] = (1.0, 1.8)

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Return grid size, exposure span and noise for ``difficulty`` (0 easiest)."""
        return {
            "rows": lerp_range(difficulty, (3, 5), (9, 14), integer=True),
            "cols": lerp_range(difficulty, (4, 6), (12, 18), integer=True),
            "span_range": lerp_range(difficulty, (22.0, 26.0), (13.0, 17.0)),
            "noise_range": lerp_range(difficulty, (0.8, 1.2), (1.6, 2.2)),
        }

    def validate(self) -> None:
        """Check the grid size ranges, the exposure span and the noise."""
        if not 10.0 <= self.span_range[0] <= self.span_range[1] <= 28.0:
            raise ValueError("span_range must satisfy 10 <= low <= high <= 28")
        if not 0.5 <= self.noise_range[0] <= self.noise_range[1] <= 3.0:
            raise ValueError("noise_range must satisfy 0.5 <= low <= high <= 3")
        if not 2 <= self.rows[0] <= self.rows[1] <= 16:
            raise ValueError("rows must satisfy 2 <= low <= high <= 16")
        if not 2 <= self.cols[0] <= self.cols[1] <= 20:
            raise ValueError("cols must satisfy 2 <= low <= high <= 20")
        if not 0.0 <= self.total_prob <= 1.0:
            raise ValueError("total_prob must lie in [0, 1]")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task."""
        domain = R.pick(rng, self.domains)
        kind = R.pick(rng, tuple(PATTERNS))
        block = _grid_block(rng, self.rows, self.cols)
        n_rows, n_cols = R.pick(rng, block)
        w = int(rng.integers(1400, 1801))
        h = int(rng.integers(1000, 1301))
        scene = SCENES[kind](rng, w, h, n_rows, n_cols)
        mask = scene.mask
        # the exposure problem: the whole photo squeezed into ``span`` levels above ``low``
        span = float(rng.uniform(*self.span_range))
        base = float(rng.uniform(*EXPOSURE[kind]))
        low = [base + float(rng.uniform(-8.0, 8.0)) for _ in range(3)]
        img = R.compress_dynamic_range(scene.rgb, low, span)
        img = R.lens_blur(img, float(rng.uniform(0.0, 1.2)))
        img = R.add_sensor_noise(img, rng, float(rng.uniform(*self.noise_range)))
        img = R.jpeg_artifacts(img, int(rng.integers(85, 96)))
        clean_gray = R.to_gray(scene.rgb)

        # the reference's threshold: midway between the objects and their surround on the
        # object (plate deck, glass, wall) after autocontrast
        from m3gym.tools.visual import autocontrast_luts, channel_histograms

        cutoff = 0.5
        sub = np.ascontiguousarray(img[::2, ::2])  # one copy (calcHist copied it per channel)
        luts = autocontrast_luts(channel_histograms(sub), cutoff).astype(np.float64)
        sub_mask = np.ascontiguousarray(mask[::2, ::2]).astype(np.uint8)
        near = cv2.dilate(sub_mask, np.ones((5, 5), np.uint8))
        reach = max(3, int(scene.pitch * 0.1))
        ring = cv2.dilate(sub_mask, cv2.getStructuringElement(
            cv2.MORPH_ELLIPSE, (2 * reach + 1, 2 * reach + 1))) & (1 - near)
        ink_mean = cv2.mean(sub, mask=sub_mask)[:3]
        bg_mean = cv2.mean(sub, mask=ring)[:3]
        weights = (0.299, 0.587, 0.114)

        def stretched_gray(rgb: tuple[float, ...]) -> float:
            return sum(wt * float(np.interp(v, np.arange(256), luts[c]))
                       for c, (wt, v) in enumerate(zip(weights, rgb)))

        thr = int(round((stretched_gray(ink_mean) + stretched_gray(bg_mean)) / 2))
        ink = mask
        ys0, xs0 = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
        box = (int(xs0[0]), int(ys0[0]), int(xs0[-1]) + 1, int(ys0[-1]) + 1)
        pitch = scene.pitch
        dark_objects = True
        ev = R.region_evidence("grid", clean_gray, box, ink[box[1]:box[3], box[0]:box[2]],
                               text=None, glyph_height=pitch, image=0)
        steps = (
            (RefCall("stretch", "autocontrast", {"image_index": 0, "cutoff": cutoff}),),
            (RefCall("binarize", "threshold", {"image_index": 1, "value": thr,
                                               "mode": "binary"}, ("stretch",)),),
        )
        checkpoints = (
            Checkpoint("s_global", "S", "global_op", {"tools": list(ac.GLOBAL_TOOLS)},
                       "stretch the contrast of the whole image"),
            Checkpoint("s_binarize", "S", "global_op", {"tools": ["threshold"]},
                       "binarize the whole (stretched) image"),
            v_tool_checkpoint("grid", ["threshold"], "v_tool_grid",
                              "threshold an image holding the whole pattern"),
            v_true_checkpoint("grid", "v_true_grid",
                              "an artifact shows the whole pattern with visible contrast"),
        )
        phrase, things = PATTERNS[kind]
        if rng.random() < self.total_prob:
            total = n_rows * n_cols
            question = (f"This image shows {phrase}. How many {things} does the pattern have in "
                        "total?")
            answer = AnswerSpec(str(total), match="numeric")
            choices = R.shuffled(rng, list(dict.fromkeys(str(r * c) for r, c in block)))
        else:
            rc = f"{n_rows}x{n_cols}"
            question = (f"This image shows {phrase}. How many rows and columns of {things} does "
                        "the pattern have? Answer as ROWSxCOLUMNS, e.g. 3x5.")
            answer = AnswerSpec(rc, variants=(f"{n_rows} x {n_cols}", f"{n_rows} by {n_cols}",
                                              f"{n_rows}×{n_cols}",
                                              f"{n_rows} rows and {n_cols} columns"))
            choices = R.shuffled(rng, [f"{r}x{c}" for r, c in block])
        images = (R.freeze(img),)
        evidence = (ev,)
        return Task(
            task_id=f"{self.name}/0", family=self.name, level=3, domain=domain, images=images,
            question=question, answer=answer, reference=steps, evidence=evidence,
            checkpoints=checkpoints, choices=choices, capabilities=("global_cv",),
            metadata=ac.l3_metadata(self, domain, kind, images, evidence, rows=n_rows, cols=n_cols,
                           pitch=pitch, threshold=thr, dark_objects=dark_objects,
                           **scene.details),
        )


# GridPeriod: the class's name before every family class was called <Name>Family
__getattr__ = renamed_names(
    __name__, {"GridPeriod": ("GridPeriodFamily", lambda: GridPeriodFamily)})
