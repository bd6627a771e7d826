"""``chart_value``: read a value off a grouped bar chart in a slide or a photographed report."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

import numpy as np

from m3gym.deprecation import renamed_names
from m3gym.spec import AnswerSpec, Task
from m3gym.tasks import render as R
from m3gym.tasks.families import _document_common as dc
from m3gym.tasks.families import _scene_common as c2
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.render import documents as D
from m3gym.tasks.render.content import fake_shared

SLIDE_WIDTHS: tuple[int, int] = (3000, 3200)
"""Slide screenshot widths (px, 16:9): text 7-8.5 px tall is 1.7-2.2 px at the 768 px view."""

PAGE_WIDTHS: tuple[int, int] = (2550, 2750)
"""Report page widths (px, A4); the photo is 1.12-1.25 times wider (2860-3440 px)."""

CHART_GLYPHS: float = 170.0
"""Widest chart box, in glyph heights: a bar group stays narrow enough to zoom into."""

SCENES: tuple[str, ...] = ("slide", "printout")
"""A flat slide screenshot, or a printed report page photographed on a desk."""

KINDS: tuple[str, ...] = ("value", "difference")
"""Read one bar's value, or how much one series exceeds another at a category."""

TOPICS: dict[str, tuple[tuple[str, str], ...]] = {
    "Finance": (("Revenue by region", "USD m"), ("Operating costs by segment", "USD k"),
                ("Net sales by channel", "EUR m"), ("Orders by market", "thousands")),
    "Science": (("Mean yield by strain", "mg/L"), ("Enzyme activity by treatment", "U/L"),
                ("Signal intensity by probe", "a.u."), ("Biomass by medium", "mg")),
}
"""Chart titles and units per domain (quantities in the hundreds, as the axis maxima are)."""

SERIES: dict[str, tuple[str, ...]] = {
    "Finance": ("North", "South", "East", "West", "Europe", "Asia", "Americas", "Online",
                "Retail", "Wholesale", "Direct", "Partners"),
    "Science": ("Control", "Strain A", "Strain B", "Strain C", "Mutant", "Wild type",
                "Low dose", "High dose", "Medium M9", "Medium LB", "Buffer", "Placebo"),
}
"""Series (legend) names per domain; no name is a prefix of another within a chart."""

CATEGORY_SETS: dict[str, tuple[tuple[str, ...], ...]] = {
    "Finance": (("Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7"),
                ("2019", "2020", "2021", "2022", "2023", "2024", "2025"),
                ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul")),
    "Science": (("Day 1", "Day 2", "Day 3", "Day 4", "Day 5", "Day 6", "Day 7"),
                ("pH 5", "pH 6", "pH 7", "pH 8", "pH 9", "pH 10", "pH 11"),
                ("10 C", "15 C", "20 C", "25 C", "30 C", "35 C", "40 C")),
}
"""Category (x-axis) label sets per domain; a chart uses a random run of one of them."""


def distinct_names(rng: np.random.Generator, pool: tuple[str, ...], count: int) -> list[str]:
    """Return ``count`` names of ``pool`` in random order, none a prefix of another."""
    out: list[str] = []
    for i in rng.permutation(len(pool)):
        name = pool[int(i)]
        if not any(n.startswith(name) or name.startswith(n) for n in out):
            out.append(name)
        if len(out) == count:
            return out
    raise ValueError(f"cannot pick {count} distinct names from {pool}")  # pragma: no cover


def filler_lines(rng: np.random.Generator, count: int, chars: int) -> list[str]:
    """Return ``count`` lines of fictional prose (faker sentences) of at most ``chars`` chars.

    Sentences are drawn until the text wraps (:func:`textwrap.wrap`, whole words) to more than
    ``count`` lines, so every returned line is a full one. Greedy wrapping never moves a line
    break once a later word has gone to a new line, so only the open last line is re-wrapped
    with each new sentence: the lines of wrapping the whole text each time, in linear time.
    """
    if count <= 0:
        return []
    fk = fake_shared(rng)  # nothing else re-seeds it before the lines are done
    done: list[str] = []  # closed lines: no later sentence can change them
    tail = ""  # the open last line
    while True:
        tail = f"{tail} {fk.sentence(nb_words=int(rng.integers(8, 16)))}".strip()
        lines = wrap_line(tail, chars)
        if len(done) + len(lines) > count:
            return (done + lines)[:count]
        done += lines[:-1]
        tail = lines[-1] if lines else ""


def wrap_line(text: str, chars: int) -> list[str]:
    """Return ``text`` wrapped to lines of at most ``chars`` chars: :func:`filler_lines`' rule.

    Whole words, no breaks at hyphens; a word longer than ``chars`` stands on its own line:
    :func:`textwrap.wrap` with ``break_long_words=False, break_on_hyphens=False``. Words
    separated by single spaces (prose) are wrapped by :func:`_wrap_spaced` in a few string
    searches per line; anything else goes to :mod:`textwrap`.
    """
    if (isinstance(chars, int) and chars > 0 and text.isprintable() and "  " not in text
            and text[:1] not in ("", " ") and text[-1] != " "):
        return _wrap_spaced(text, chars)
    return textwrap.wrap(text, chars, break_long_words=False, break_on_hyphens=False)


def _wrap_spaced(text: str, chars: int) -> list[str]:
    """Return :func:`textwrap.wrap`'s lines of ``text``: words between single spaces.

    ``text`` is printable (so its only whitespace is the plain space), neither starts nor ends
    with a space and has no two in a row. Greedy whole-word wrapping then ends each line at the
    last space at most ``chars`` past its start (or, for a longer word, at the word's end) and
    starts the next after that space.
    """
    lines: list[str] = []
    start, n = 0, len(text)
    while n - start > chars:
        cut = text.rfind(" ", start, start + chars + 1)
        if cut < 0:  # a word longer than a line: it stands alone
            cut = text.find(" ", start)
            if cut < 0:
                break
        lines.append(text[start:cut])
        start = cut + 1
    lines.append(text[start:])
    return lines


PROSE_SAMPLE: str = "Participants reported that the regional teams met most of their targets."
"""A typical prose line: its ink width per character sizes the filler lines to a column."""


def draw_prose(img: np.ndarray, rng: np.random.Generator, x: float, y: float, width: float,
               bottom: float, size: float, font: str, color: R.Color,
               bullet_every: int = 0) -> float:
    """Draw filler prose in a ``width``-px column from ``y`` down to ``bottom``.

    Returns the y under its last line. With ``bullet_every`` > 0, every that many lines start a
    bullet.
    """
    per_char = D.text_width(PROSE_SAMPLE, size, font) / len(PROSE_SAMPLE)
    chars = max(8, int(0.92 * width / per_char) - 2)
    step = 1.85 * size
    count = max(0, int((bottom - y) / step))
    for i, line in enumerate(filler_lines(rng, count, chars)):
        if bullet_every:
            line = f"- {line}" if i % bullet_every == 0 else f"  {line}"
        D.put_text(img, line, size, x, y, color, font)
        y += step
    return y


@register_family
@dataclass
class ChartValueFamily(FamilyConfig):
    """Read a value (or the gap between two series) off a grouped bar chart.

    Scene:
        A grouped bar chart (2-4 series, 3-7 categories, gridlines, tick labels, a legend and a
        data label on every bar; DejaVu fonts) on a presentation slide (a flat screenshot) or
        on a printed report page among paragraphs of text, photographed on a desk with a
        slight perspective, shadow and camera noise.
    Question:
        The value of a named series at a named category, or by how much one named series
        exceeds another there. Values print with two decimals, both 0, 6 or 8 (closed digits,
        the same blob at two pixels). A value's six choices share its units and differ only in
        those decimals (every closed tenth times two closed hundredths); a difference's are the
        first value minus six such look-alikes of the second (whose units are lower, so every
        option is positive). Either set is symmetric in the answer, and the axis runs to
        400-800, so the options lie within a fifth of a view pixel of bar height: only the
        printed labels tell them apart.
    Why a tool is needed:
        Tick labels, legend names, category names and data labels are 7-8.5 px tall in a
        3000-3440 px image, 1.7-2.2 px at the 768 px view: the legend (which colour is which
        series), the category and the value cannot be read without zoomed crops. The chart
        stays at most 170 glyphs wide, so a bar group remains a small crop.
    Reference trajectory:
        Two crops in one parallel step: the legend entries of the asked series, and the asked
        bar group from its data labels down to its category label; the answer is read (or
        subtracted).
    Checkpoints:
        Per evidence ("legend", "value"): crop_covers (S), v_tool (crop) and v_true.
    Difficulty:
        ``glyph_range`` (12-13 px at 0, 7-8.5 px at 1), ``series`` (2 at 0, 3-4 at 1),
        ``categories`` (3-4 at 0, 6-7 at 1), ``perspective`` (0 at 0, 0.04 at 1),
        ``difference_prob`` (0.1 at 0, 0.8 at 1).
    Config:
        glyph_range, series, categories, perspective, difference_prob, slide_prob.
    """

    name: ClassVar[str] = "chart_value"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 2
    domains: ClassVar[tuple[str, ...]] = ("Science", "Finance")
    description: ClassVar[str] = "crop a chart's legend and bar group in parallel, read values"

    glyph_range: tuple[float, float] = (7.0, 8.5)
    series: tuple[int, int] = (2, 4)
    categories: tuple[int, int] = (3, 7)
    perspective: float = 0.03
    difference_prob: float = 0.4
    slide_prob: float = 0.5

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Return glyph size, series/category counts, camera and question knobs."""
        d = float(difficulty)
        lerp = lambda a, b: a + (b - a) * d  # noqa: E731
        counts = partial(c2.lerp_range, d, integer=True, half_even=True)
        return {"glyph_range": (lerp(12.0, 7.0), lerp(13.0, 8.5)),
                "series": counts((2, 2), (3, 4)), "categories": counts((3, 4), (6, 7)),
                "perspective": lerp(0.0, 0.04), "difference_prob": lerp(0.1, 0.8)}

    def validate(self) -> None:
        """Check glyph sizes, counts, camera bound and probabilities."""
        c2.check_range("glyph_range", *self.glyph_range, 7.0, 14.0)
        c2.check_range("series", *self.series, 2, 4)
        c2.check_range("categories", *self.categories, 2, 7)
        if not 0.0 <= self.perspective <= 0.05:
            raise ValueError("perspective must lie in [0, 0.05]")
        for f in ("difference_prob", "slide_prob"):
            if not 0.0 <= getattr(self, f) <= 1.0:
                raise ValueError(f"{f} must lie in [0, 1]")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task."""
        domain = c2.pick(rng, self.domains)
        slide = bool(rng.random() < self.slide_prob)
        glyph = float(rng.uniform(*self.glyph_range))
        n_ser = int(rng.integers(self.series[0], self.series[1] + 1))
        n_cat = int(rng.integers(self.categories[0], self.categories[1] + 1))
        pw = int(rng.integers(*(SLIDE_WIDTHS if slide else PAGE_WIDTHS), endpoint=True))
        ph = pw * 9 // 16 if slide else int(pw / 1.414)
        chart_w = min(int((0.59 if slide else 0.69) * pw), int(CHART_GLYPHS * glyph))
        plot_w = chart_w - int(16 * glyph)  # tick labels and a legend column
        while n_cat > 2 and D.chart_width(n_ser, n_cat, glyph, "888.88") > plot_w:
            n_cat -= 1
        title, unit = c2.pick(rng, TOPICS[domain])
        series = distinct_names(rng, SERIES[domain], n_ser)
        cats_all = c2.pick(rng, CATEGORY_SETS[domain])
        start = int(rng.integers(0, len(cats_all) - n_cat + 1))
        cats = list(cats_all[start:start + n_cat])
        axis_max = int(c2.pick(rng, D.AXIS_MAXIMA))
        # values in hundredths with closed decimals only: a value's options look alike in the view
        values = [[dc.closed_tail_value(rng, axis_max // 10, int(axis_max * 0.85)) for _ in cats]
                  for _ in series]
        kind = "difference" if rng.random() < self.difference_prob else "value"
        c = int(rng.integers(n_cat))
        s1, s2 = (int(v) for v in rng.choice(n_ser, size=2, replace=False))
        if kind == "difference":
            if values[s1][c] < values[s2][c]:
                s1, s2 = s2, s1
            if values[s1][c] // 100 == values[s2][c] // 100:
                values[s2][c] -= 100  # every option (see below) stays positive
        legend_top = n_ser <= 3 and bool(rng.random() < 0.6)

        # the page: the chart, its title, and the prose or bullets around it
        sheet = D.Sheet.blank(pw, ph, R.jitter_color(rng, (250, 250, 248), 4))
        img = sheet.rgb
        m = int(0.05 * pw)
        chart_h = int(58 * glyph)  # evidence boxes stay small enough to zoom into
        if slide:
            band = R.jitter_color(rng, c2.pick(rng, ((32, 64, 120), (40, 40, 48), (20, 96, 90))),
                                  10)
            img[:int(0.12 * ph)] = band
            D.put_text(img, f"{title} ({unit})", 3.2 * glyph, m, 0.04 * ph, (250, 250, 250),
                       "sans-bold")
            chart_box = (m, int(0.17 * ph), m + chart_w, int(0.17 * ph) + chart_h)
            bx = m + chart_w + int(6 * glyph)
            draw_prose(img, rng, bx, 0.2 * ph, pw - m - bx, 0.9 * ph, 2.2 * glyph, "sans",
                       (50, 50, 56), bullet_every=3)
            draw_prose(img, rng, m, chart_box[3] + 4 * glyph, chart_w, 0.9 * ph, 1.6 * glyph,
                       "sans", (70, 70, 76), bullet_every=2)
            D.put_text(img, f"{R.fake_company(rng, ascii_only=True)}  |  "
                       f"{int(rng.integers(2, 40))}", 1.2 * glyph, m, 0.95 * ph, (120, 120, 126))
        else:
            D.put_text(img, R.fake_company(rng, ascii_only=True) + " - annual report",
                       2.2 * glyph, m, m * 0.6, (30, 30, 36), "serif-bold")
            y = draw_prose(img, rng, m, m * 0.6 + 4.5 * glyph, pw - 2 * m,
                           m * 0.6 + 10.5 * glyph, 1.2 * glyph, "serif", (40, 40, 44))
            D.put_text(img, f"Figure {int(rng.integers(1, 9))}. {title} ({unit})",
                       1.3 * glyph, m, y + 1.2 * glyph, (30, 30, 36), "sans-bold")
            chart_box = (m, int(y + 3.6 * glyph), m + chart_w, int(y + 3.6 * glyph) + chart_h)
            side_x = m + chart_w + int(3 * glyph)
            draw_prose(img, rng, side_x, y + 4 * glyph, pw - m - side_x, chart_box[3],
                       1.2 * glyph, "serif", (40, 40, 44))
            col_w = (pw - 2 * m - 4 * glyph) / 2
            for col in range(2):
                draw_prose(img, rng, m + col * (col_w + 4 * glyph), chart_box[3] + 2.5 * glyph,
                           col_w, ph - 4 * glyph, 1.2 * glyph, "serif", (40, 40, 44))
            D.put_text(img, str(int(rng.integers(2, 60))), 1.1 * glyph, pw / 2,
                       ph - 2.2 * glyph, (90, 90, 96), "serif", anchor="center")
        chart = D.draw_bar_chart(img, chart_box, series, cats, values, axis_max, glyph,
                                 legend_top, decimals=2)
        for s in (s1, s2) if kind == "difference" else (s1,):
            sheet.mark("legend", chart.texts[f"legend/{s}"])
            sheet.mark("value", chart.texts[f"label/{s}/{c}"])
        sheet.mark("value", chart.texts[f"category/{c}"])

        if slide:
            w, h = pw, ph
            quad = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float64)
            photo = D.photograph(img, sheet, quad)  # reads the background, never writes it
            shot = R.jpeg_artifacts(photo.scene, int(rng.integers(82, 95)))
        else:
            w = int(pw * rng.uniform(1.12, 1.25))
            h = int(w * rng.uniform(0.74, 0.8))
            desk = R.surface(rng, h, w, kind=c2.pick(rng, ("wood", "fabric")))
            quad = D.sheet_quad(rng, (pw, ph), 1.0, (w / 2 + float(rng.uniform(-20, 20)),
                                                       h / 2 + float(rng.uniform(-20, 20))),
                                float(rng.uniform(-2.0, 2.0)), self.perspective)
            desk = R.sheet_shadow(desk, rng, quad, float(rng.uniform(0.25, 0.45)),
                                  D.covered_box((pw, ph), quad, w, h))  # the page goes there
            photo = D.photograph(desk, sheet, quad)
            shot = R.camera_pipeline(photo.scene, rng, float(rng.uniform(0.2, 0.45)),
                                     keep=[photo.box])
        pad = 0.35 * glyph
        a, b = values[s1][c], values[s2][c]
        answer = a if kind == "value" else a - b
        ev = (dc.photo_evidence("legend", photo, sheet, "legend", pad, None),
              dc.photo_evidence("value", photo, sheet, "value", pad,
                                dc.money(answer) if kind == "value" else None))
        calls = tuple(c2.crop_call(f"c{i + 1}", 0, R.grow_box(e.box, 0.5 * glyph, w, h), w, h,
                                   e.glyph_height) for i, e in enumerate(ev))
        steps = (calls,)
        label = f"{title} ({unit})"
        if kind == "value":
            question = (f'In the bar chart "{label}", what value is printed on the '
                        f'"{series[s1]}" bar for {cats[c]}? Answer with the number only.')
        else:
            question = (f'In the bar chart "{label}", by how much does "{series[s1]}" exceed '
                        f'"{series[s2]}" for {cats[c]}? Answer with the number only.')
        return Task(
            task_id="", family=self.name, level=2, domain=domain, images=(R.freeze(shot),),
            question=question,
            answer=AnswerSpec(dc.money(answer), (), "numeric", 0.005),
            reference=steps, evidence=ev, checkpoints=c2.chain_checkpoints(ev, steps),
            # a difference's options subtract look-alikes of the second value from the first
            choices=(dc.closed_tail_choices(rng, a, dc.money) if kind == "value"
                     else dc.closed_tail_choices(rng, b, lambda v: dc.money(a - v))),
            capabilities=("visual_grounding", "parallelism"),
            metadata=c2.l2_metadata(self.name, domain, "slide" if slide else "printout", ev,
                                    shot, kind=kind, axis_max=axis_max,
                                    series=[series[s1], series[s2]], category=cats[c]),
        )


# ChartValue: the class's name before every family class was called <Name>Family
__getattr__ = renamed_names(
    __name__, {"ChartValue": ("ChartValueFamily", lambda: ChartValueFamily)})
