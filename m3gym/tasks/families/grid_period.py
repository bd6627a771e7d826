"""grid_period: count the rows and columns of a dot array finer than the view resolves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.deprecation import renamed_names
from m3gym.spec import AnswerSpec, Task
from m3gym.tasks import render as R
from m3gym.tasks.checkpoint_builders import evidence_checkpoints
from m3gym.tasks.families import _analysis_common as ac
from m3gym.tasks.families import _scene_common as c2
from m3gym.tasks.families._scene_common import lerp_range
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.verify import first_verified
from m3gym.view import VIEW_SIZE, block_factor, view_shape

PITCH: int = 3
"""Period of the dot array in full-resolution pixels, along both axes."""

DOT: int = 2
"""Side of one dot (px): a 2 x 2 dot in each 3 x 3 cell, one pixel of card between dots."""

LONG_SIDE: tuple[int, int] = (2340, 2700)
"""Range of the photo's long side: the view's block mean is then exactly :data:`PITCH` px."""

PATTERNS: dict[str, tuple[str, str]] = {
    "target": ("a camera calibration card with a tiny printed dot target", "dots"),
    "reticle": ("a microscope stage micrometer card with an etched dot grid", "dots"),
    "mesh": ("a swatch card with a sample of fine printed dot mesh", "dots"),
}
"""Pattern kind → (scene phrase for the question, what is counted)."""


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


def _photo_size(rng: np.random.Generator) -> tuple[int, int]:
    """Return a landscape ``(width, height)`` whose view is a block mean of exactly 3 px."""
    while True:
        w = int(rng.integers(*LONG_SIDE))
        h = int(w * rng.uniform(0.62, 0.8))
        vh, vw = view_shape(h, w, VIEW_SIZE)
        if block_factor(h, w, vh, vw) == PITCH:
            return w, h


@register_family
@dataclass
class GridPeriodFamily(FamilyConfig):
    """Count the rows and columns of a printed dot array whose period the view averages away.

    Scene:
        A photograph (2340–2700 px wide) of a card lying on a surface (a table, a bench). A
        small grey square is printed on the card inside a thin dark frame; in it, a random
        margin away from the frame, an array of ``rows`` x ``cols`` dots: a 2 x 2 px dot in each
        3 x 3 px cell (a period of :data:`PITCH` px along both axes). The margin around the
        array is printed in the array's own mean tone, so the array has no visible outline.
        Sensor noise (``noise_range`` sigma) follows; no blur or JPEG.
    Question:
        "How many rows and columns of dots does the pattern have?" (ROWSxCOLUMNS) or, with
        probability ``total_prob``, how many in total — six candidate grids (2 consecutive row
        counts x 3 column counts, or 3 x 2) drawn before the true one.
    Why a tool is needed:
        The photo's size is chosen so that the view's first step is a block mean of exactly
        3 x 3 px (:func:`m3gym.view.area_downscale`), and the array lies on that block grid:
        every block holds one whole cell of the array, or margin alone, so every block of the
        square has the same mean. The view shows a flat grey square: no dot, no moiré (a period the
        downscale would alias is exactly cancelled), no outline of the array. A crop of the
        square zoomed 5 times shows the dots 15 px apart. No reader applies (the answer is a
        count): measured by the reader-independent share of ``m3gym audit-tools`` and its
        per-op ablation; :func:`view_period_probe` (an FFT of the view's window) finds no peak.
    Reference trajectory:
        crop of the framed square, zoomed (1 hop). No contrast op: the dots are printed with
        ``contrast_range`` levels, and a point op after a zooming crop shows nothing new.
    Checkpoints:
        An S checkpoint on the crop, a ``v_tool`` on it and a ``v_true`` (an artifact shows the
        dot array legibly).
    Difficulty:
        ``rows``/``cols`` (3–5 x 4–6 at 0 → 9–14 x 12–18 at 1: more to count),
        ``contrast_range`` (90–108 → 54–63 levels between dot and card) and ``noise_range``
        (0.8–1.2 → 1.6–2.2).
    Config:
        ``rows`` (within 2–16), ``cols`` (within 2–20), ``total_prob`` ([0, 1]),
        ``contrast_range`` (levels, within 36–117), ``noise_range`` (sigma, within 0.5–3).
    """

    name: ClassVar[str] = "grid_period"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 3
    domains: ClassVar[tuple[str, ...]] = ("Science", "Diagram")
    description: ClassVar[str] = (
        "A dot array finer than the view: crop the framed square with a zoom → count rows x "
        "columns.")

    rows: tuple[int, int] = (3, 10)
    cols: tuple[int, int] = (4, 14)
    total_prob: float = 0.3
    contrast_range: tuple[float, float] = (63.0, 99.0)
    noise_range: tuple[float, float] = (1.0, 1.8)

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Return grid size, dot contrast and noise for ``difficulty`` (0 easiest)."""
        return {
            "rows": lerp_range(difficulty, (3, 5), (9, 14), integer=True),
            "cols": lerp_range(difficulty, (4, 6), (12, 18), integer=True),
            "contrast_range": lerp_range(difficulty, (90.0, 108.0), (54.0, 63.0)),
            "noise_range": lerp_range(difficulty, (0.8, 1.2), (1.6, 2.2)),
        }

    def validate(self) -> None:
        """Check the grid size ranges, the dot contrast and the noise."""
        if not 36.0 <= self.contrast_range[0] <= self.contrast_range[1] <= 117.0:
            raise ValueError("contrast_range must satisfy 36 <= low <= high <= 117")
        if not 0.5 <= self.noise_range[0] <= self.noise_range[1] <= 3.0:
            raise ValueError("noise_range must satisfy 0.5 <= low <= high <= 3")
        if not 2 <= self.rows[0] <= self.rows[1] <= 16:
            raise ValueError("rows must satisfy 2 <= low <= high <= 16")
        if not 2 <= self.cols[0] <= self.cols[1] <= 20:
            raise ValueError("cols must satisfy 2 <= low <= high <= 20")
        if not 0.0 <= self.total_prob <= 1.0:
            raise ValueError("total_prob must lie in [0, 1]")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task: the first draw whose reference passes every checkpoint."""
        return first_verified(lambda: self.draw(rng))

    def draw(self, rng: np.random.Generator) -> Task:
        """Draw one scene and its task (unverified; :meth:`generate` checks the reference)."""
        domain = R.pick(rng, self.domains)
        kind = R.pick(rng, tuple(PATTERNS))
        block = _grid_block(rng, self.rows, self.cols)
        n_rows, n_cols = R.pick(rng, block)
        w, h = _photo_size(rng)
        img = R.surface(rng, h, w, kind=R.pick(rng, ("wood", "paper", "fabric", "noise")),
                        lighting=float(rng.uniform(0.0, 0.12)), vignette=0.1)
        # the card: light, with a soft shadow, a few hundred px across
        cw, ch = int(rng.integers(420, 700)), int(rng.integers(300, 480))
        cx0, cy0 = int(rng.integers(80, w - cw - 80)), int(rng.integers(80, h - ch - 80))
        shadow = R.grow_box((cx0 + 6, cy0 + 8, cx0 + cw + 6, cy0 + ch + 8), 0, w, h)
        img[shadow[1]:shadow[3], shadow[0]:shadow[2]] = (
            img[shadow[1]:shadow[3], shadow[0]:shadow[2]] * 0.7).astype(np.uint8)
        paper = np.array([int(v) for v in rng.integers(228, 246, 3)], np.int32)
        img[cy0:cy0 + ch, cx0:cx0 + cw] = paper
        # the square: array + margin in the array's mean tone, inside a thin dark frame
        contrast = 9 * int(round(float(rng.uniform(*self.contrast_range)) / 9))
        ink = paper - contrast
        tone = paper - contrast * DOT * DOT // (PITCH * PITCH)
        aw, ah = n_cols * PITCH, n_rows * PITCH
        mx0, mx1 = (int(v) for v in rng.integers(2, 7, 2) * PITCH)
        my0, my1 = (int(v) for v in rng.integers(2, 7, 2) * PITCH)
        sq_w, sq_h = aw + mx0 + mx1, ah + my0 + my1
        # on the view's block grid: every 3 x 3 block lies wholly in the array or in its margin
        sx0 = (cx0 + int(rng.integers(40, cw - sq_w - 40))) // PITCH * PITCH
        sy0 = (cy0 + int(rng.integers(40, ch - sq_h - 40))) // PITCH * PITCH
        img[sy0:sy0 + sq_h, sx0:sx0 + sq_w] = tone
        ax0, ay0 = sx0 + mx0, sy0 + my0
        array = np.empty((ah, aw, 3), np.int32)
        array[:] = paper
        mask = np.zeros((ah, aw), bool)
        for r in range(n_rows):
            for c in range(n_cols):
                mask[r * PITCH:r * PITCH + DOT, c * PITCH:c * PITCH + DOT] = True
        array[mask] = ink
        img[ay0:ay0 + ah, ax0:ax0 + aw] = array
        fw = int(rng.integers(4, 7))
        frame = (int(rng.integers(30, 60)),) * 3
        cv2.rectangle(img, (sx0 - fw, sy0 - fw), (sx0 + sq_w + fw - 1, sy0 + sq_h + fw - 1),
                      frame, fw)
        clean_gray = R.to_gray(img)
        img = R.add_sensor_noise(img, rng, float(rng.uniform(*self.noise_range)))

        box = (ax0, ay0, ax0 + aw, ay0 + ah)
        ev = R.region_evidence("grid", clean_gray, box, mask, text=None, glyph_height=PITCH)
        crop_box = (sx0 - fw - 2, sy0 - fw - 2, sx0 + sq_w + fw + 2, sy0 + sq_h + fw + 2)
        steps = ((c2.crop_call("c1", 0, crop_box, w, h, float(PITCH)),),)
        checkpoints = evidence_checkpoints("grid", [steps[0][0]])
        phrase, things = PATTERNS[kind]
        where = "the small grey square in the dark frame"
        if rng.random() < self.total_prob:
            question = (f"This image shows {phrase}. How many {things} does the pattern in "
                        f"{where} have in total?")
            answer = AnswerSpec(str(n_rows * n_cols), match="numeric")
            choices = R.shuffled(rng, list(dict.fromkeys(str(r * c) for r, c in block)))
        else:
            question = (f"This image shows {phrase}. How many rows and columns of {things} does "
                        f"the pattern in {where} have? Answer as ROWSxCOLUMNS, e.g. 3x5.")
            answer = AnswerSpec(f"{n_rows}x{n_cols}", variants=(
                f"{n_rows} x {n_cols}", f"{n_rows} by {n_cols}", f"{n_rows}×{n_cols}",
                f"{n_rows} rows and {n_cols} columns"))
            choices = R.shuffled(rng, [f"{r}x{c}" for r, c in block])
        images = (R.freeze(img),)
        return Task(
            task_id=f"{self.name}/0", family=self.name, level=3, domain=domain, images=images,
            question=question, answer=answer, reference=steps, evidence=(ev,),
            checkpoints=checkpoints, choices=choices, capabilities=("visual_grounding",),
            metadata=ac.l3_metadata(self, domain, kind, images, (ev,), rows=n_rows,
                                    cols=n_cols, pitch=PITCH, contrast=contrast,
                                    square=[sx0, sy0, sx0 + sq_w, sy0 + sq_h]),
        )


def view_period_probe(view: np.ndarray, box: tuple[float, float, float, float]) -> float:
    """Return the largest non-DC spectral peak of the view's window over its mean (a no-tool probe).

    ``box`` is the square in view pixels. A visible period (dots, moiré) gives a peak well above
    the noise floor's; the family's views give noise alone.
    """
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    win = cv2.cvtColor(np.ascontiguousarray(view[y0:y1, x0:x1]), cv2.COLOR_RGB2GRAY)
    win = win.astype(np.float64) - win.mean()
    spec = np.abs(np.fft.fft2(win))
    spec[0, 0] = 0.0
    return float(spec.max() / max(1e-9, np.median(spec)))


# GridPeriod: the class's name before every family class was called <Name>Family
__getattr__ = renamed_names(
    __name__, {"GridPeriod": ("GridPeriodFamily", lambda: GridPeriodFamily)})
