"""The ``tiny_faint_text`` family: a tiny, faded label among look-alike rows (one zoomed crop)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from m3gym.deprecation import renamed_names
from m3gym.spec import AnswerSpec, Evidence, RefCall, Task
from m3gym.tasks import render as R
from m3gym.tasks.checkpoint_builders import evidence_checkpoints
from m3gym.tasks.families import _scene_common as c2
from m3gym.tasks.families._text_common import FIELD_NAMES, text_patch, view_lookalike_codes
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.render import text_scenes as TS
from m3gym.tasks.verify import first_verified

_TEXT_SCENES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "Science": ("lab_bench", ("noise", "gradient", "fabric", "paper"), "specimen label"),
    "Finance": ("invoice_desk", ("wood", "paper", "gradient", "fabric"), "invoice tag"),
}


@dataclass(frozen=True)
class _Label:
    """A drawn label: its plate box, and the target code's box, ink mask and seen glyph height."""

    plate_box: R.Box
    code_box: R.Box
    code_mask: np.ndarray
    glyph_seen: float


@register_family
@dataclass
class TinyFaintTextFamily(FamilyConfig):
    """Read one field's code on a tiny, faded label (one zoomed crop).

    Scene:
        A desk or lab bench (``scene_long`` px on the long side) with clutter, readable decoy
        labels and ``decoys`` other small labels with coloured tabs (some turned). The target
        label has a ``tab`` on its left and ``fields`` rows ``NAME  CODE`` (REF, LOT, SN, ...)
        stacked one line every 1.2 glyph heights, in one TrueType face, ``glyph_range`` px
        tall, its ink faded to ``contrast_range`` gray levels from its plate (about half of
        it survives at view size once zoomed; fresh ink lies ~200 levels off), pasted upright
        in perspective (``tilt``).
    Question:
        "What is the LOT code printed on the small, faded specimen label with a red tab ...?"
        Six choices: codes that differ only in look-alike characters (see
        :func:`~m3gym.tasks.families._text_common.view_lookalike_codes`); the label's other
        rows print other choices.
    Why a tool is needed:
        At view size (longest side 768) the glyphs are about 2-3 px tall (a 2900-3200 px
        photo, like ``tiny_text``'s: at 2300-2600 px the faded rows leaked to the view-only
        probe once their ink was raised to what a crop alone shows): below the 9 px legibility
        bar; the stacked rows of look-alike codes blur into one block, and which row
        holds the named field is unreadable. A zoomed crop of the code shows it large, and its
        faded ink (at least twice the 28-level visibility bar) is then legible as it is. No
        contrast op or rotation is in the reference: a point op after a zooming crop shows
        nothing the crop did not (``audit-tools`` measures both unneeded), and the target label
        is always upright. This trains finding the named label by its tab and position and
        zooming into one row of a small, low-contrast label.
    Reference trajectory:
        One ``crop`` (zoomed) of the code.
    Checkpoints:
        The crop's S checkpoint (covers and magnifies the code) and a ``v_true`` (the code
        legible in some image).
    Difficulty:
        ``difficulty_knobs``: at 0 glyphs 11-14 px, contrast 84-100 levels, tilt up to 0.2, 1
        decoy; at 1 glyphs 8-10 px, contrast 68-76 levels, tilt up to 0.5, 3 decoys.
    Config:
        ``glyph_range``, ``contrast_range``, ``decoys``, ``fields``, ``tilt``,
        ``scene_long``, ``faces`` (TrueType faces), ``choices``.
    """

    name: ClassVar[str] = "tiny_faint_text"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 2
    domains: ClassVar[tuple[str, ...]] = ("Science", "Finance")
    description: ClassVar[str] = "zoom into one row of a tiny faded label"

    glyph_range: tuple[float, float] = (9.0, 12.0)
    contrast_range: tuple[float, float] = (70.0, 90.0)
    decoys: tuple[int, int] = (1, 3)
    fields: tuple[int, int] = (4, 5)
    tilt: tuple[float, float] = (0.1, 0.5)
    scene_long: tuple[int, int] = (2900, 3200)
    faces: tuple[str, ...] = R.FONT_FACES
    choices: int = 6

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Smaller, fainter, more tilted labels, more decoys as ``d`` rises."""
        d = float(difficulty)
        glyph_hi = 14.0 - 4.0 * d
        contrast_hi = 100.0 - 24.0 * d
        return {
            "glyph_range": (glyph_hi - 3.0 + d, glyph_hi),
            "contrast_range": (contrast_hi - 16.0 + 8.0 * d, contrast_hi),
            "tilt": (0.0, 0.2 + 0.3 * d),
            "decoys": (1, 1 + round(2 * d)),
        }

    def validate(self) -> None:
        """Check glyph sizes (legible only when zoomed), faintness, counts and faces."""
        c2.check_range("glyph_range", *self.glyph_range, 7.0, 19.0)
        # thin strokes keep about half their ink contrast at view size once zoomed
        c2.check_range("contrast_range", *self.contrast_range, 2.0 * Evidence.min_contrast,
                       120.0)
        c2.check_range("decoys", *self.decoys, 0, 5)
        c2.check_range("tilt", *self.tilt, 0.0, 0.6)
        c2.check_range("scene_long", *self.scene_long, 1400, 3200)
        if self.glyph_range[1] * R.VIEW_SIZE / self.scene_long[0] >= c2.MIN_VIEW_HEIGHT:
            raise ValueError("glyph_range is legible at view size: the task would not need a crop")
        if not 2 <= self.choices <= 12:
            raise ValueError("choices must lie in 2..12")
        c2.check_range("fields", *self.fields, 1, min(len(FIELD_NAMES), self.choices))
        if not self.faces or any(f not in R.FONT_FACES for f in self.faces):
            raise ValueError(f"faces must be among {R.FONT_FACES}")

    def _label(
        self, img: np.ndarray, clean: np.ndarray | None, rng: np.random.Generator,
        rows: list[tuple[R.TextPatch, R.TextPatch]], glyph: float, tab: str, faint: float | None,
        quarter: int, occupied: list[R.Box], decoration: list[R.Box], target_row: int,
    ) -> _Label | None:
        """Draw one label (faint ink, or full ink when ``faint`` is None); None if no room."""
        h, w = img.shape[:2]
        plate = R.jitter_color(rng, c2.PLATE_COLORS[c2.pick(rng, tuple(c2.PLATE_COLORS))], 8)
        ink = R.faded_color(plate, faint) if faint is not None else R.ink_for(plate)
        tab_w = int(max(10, round(glyph)))
        flat, lay = TS.draw_field_plate(rows, glyph, plate, ink, strip_w=tab_w, frame=False,
                                          margin=1.5)
        flat.rgb[:, :tab_w] = R.NAMED_COLORS[tab]
        strong = None
        if clean is not None:
            strong, _ = TS.draw_field_plate(rows, glyph, plate, R.ink_for(plate), strip_w=tab_w,
                                           frame=False, margin=1.5)
            strong.rgb[:, :tab_w] = R.NAMED_COLORS[tab]
            strong = TS.turn_plate(strong, quarter)
        flat = TS.turn_plate(flat, quarter)
        ph, pw = flat.rgb.shape[:2]
        size = (int(pw * 1.25) + 4, int(ph * 1.25) + 4)
        spot = c2.place(rng, size, (40, 40, w - 40, h - 40), occupied, decoration)
        if spot is None:
            return None
        quad = R.perspective_quad(rng, pw, ph, float(rng.uniform(*self.tilt)))
        quad += np.array(spot, np.float64)
        box, codes = TS.paste_plate(img, flat, quad)
        if clean is not None and strong is not None:
            TS.paste_plate(clean, strong, quad)
        occupied.append(box)
        vbox, vmask = codes[target_row]
        along = (vbox[3] - vbox[1]) if quarter % 2 == 0 else (vbox[2] - vbox[0])
        seen = glyph * along / rows[target_row][1].size[1]
        return _Label(box, vbox, vmask, seen)

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task: the first draw whose reference passes every checkpoint."""
        return first_verified(lambda: self.draw(rng))

    def draw(self, rng: np.random.Generator) -> Task:
        """Draw one scene and its task (unverified; :meth:`generate` checks the reference)."""
        domain = c2.pick(rng, self.domains)
        scene_name, kinds, noun = _TEXT_SCENES[domain]
        w, h = c2.scene_size(rng, self.scene_long)
        img = R.surface(rng, h, w, kind=c2.pick(rng, kinds))
        quarter = 0
        tab_names = list(c2.TAB_COLORS)
        order = rng.permutation(len(tab_names))
        tab = tab_names[int(order[0])]
        face = R.pick_font(rng, self.faces)
        glyph = float(rng.uniform(*self.glyph_range))
        code, choices = view_lookalike_codes(rng, face, glyph, R.view_scale(h, w), self.choices)
        n_rows = int(rng.integers(self.fields[0], self.fields[1], endpoint=True))
        others = [c for c in choices if c != code]
        printed = [code, *(others[int(i)] for i in rng.permutation(len(others))[:n_rows - 1])]
        printed = [printed[int(i)] for i in rng.permutation(len(printed))]
        names = [FIELD_NAMES[int(i)] for i in rng.permutation(len(FIELD_NAMES))[:n_rows]]
        row = printed.index(code)

        decoration = c2.decorate(img, rng, (6, 13), (3, 7))
        occupied: list[R.Box] = []
        faint = float(rng.uniform(*self.contrast_range))
        clean = img.copy()
        rows = [(text_patch(n, glyph, face), text_patch(t, glyph, face))
                for n, t in zip(names, printed)]
        target = self._label(img, clean, rng, rows, glyph, tab, faint, quarter, occupied,
                             decoration, row)
        if target is None:  # pragma: no cover - an empty 2300 px scene always has room
            raise RuntimeError("no room for the label")
        for i in range(int(rng.integers(self.decoys[0], self.decoys[1] + 1))):
            d_face = R.pick_font(rng, self.faces)
            d_glyph = float(rng.uniform(*self.glyph_range))
            texts = [R.random_code(rng) for _ in range(n_rows)]
            d_rows = [(text_patch(n, d_glyph, d_face), text_patch(t, d_glyph, d_face))
                      for n, t in zip(FIELD_NAMES, texts) if t not in choices]
            d_faint = float(rng.uniform(*self.contrast_range)) if rng.random() < 0.6 else None
            d_quarter = int(rng.integers(4)) if rng.random() < 0.3 else 0
            if d_rows:
                self._label(img, None, rng, d_rows, d_glyph, tab_names[int(order[1 + i])],
                            d_faint, d_quarter, occupied, decoration, 0)
        img = c2.degrade(img, rng)

        ev = self._evidence(clean, target, quarter, code)
        crop_box = R.grow_box(target.code_box, 2, w, h)
        c1 = c2.crop_call("c1", 0, crop_box, w, h, target.glyph_seen)
        steps: list[tuple[RefCall, ...]] = [(c1,)]
        checkpoints = evidence_checkpoints("label", [c1])
        pos = R.position_phrase(target.plate_box, w, h)
        question = (f"A small, faded {noun} with a {tab} tab on its left edge is in the {pos} "
                    f"part of the image. What is the {names[row]} code printed on it?")
        return Task(
            task_id="", family=self.name, level=2, domain=domain, images=(R.freeze(img),),
            question=question,
            answer=AnswerSpec(code, R.code_variants(code)),
            reference=tuple(steps), evidence=(ev,), checkpoints=tuple(checkpoints),
            choices=choices,
            capabilities=("visual_grounding", "multi_hop"),
            metadata=c2.l2_metadata(self.name, domain, scene_name, (ev,), img,
                                    rotated=False, ink_contrast=faint,
                                    target_field=names[row],
                                    glyph_height_view=target.glyph_seen * R.view_scale(h, w)),
        )

    @staticmethod
    def _evidence(clean: np.ndarray, target: _Label, quarter: int, code: str) -> Evidence:
        """Return the label's evidence: the code's region in the full-ink render, its angle."""
        h, w = clean.shape[:2]
        box = R.grow_box(target.code_box, 2, w, h)
        mask = R.embed_mask(target.code_mask, (target.code_box[0] - box[0],
                                               target.code_box[1] - box[1]),
                            (box[3] - box[1], box[2] - box[0]))
        ev = R.region_evidence("label", clean, box, mask, text=code,
                               glyph_height=target.glyph_seen)
        angle = float(90 * (quarter % 4))
        if angle == 0.0:
            return ev
        return Evidence(id=ev.id, image=ev.image, box=ev.box, text=ev.text,
                        glyph_height=ev.glyph_height, clean=ev.clean, mask=ev.mask,
                        angle=angle if angle <= 180.0 else angle - 360.0)


# TinyFaintText: the class's name before every family class was called <Name>Family
__getattr__ = renamed_names(
    __name__, {"TinyFaintText": ("TinyFaintTextFamily", lambda: TinyFaintTextFamily)})
