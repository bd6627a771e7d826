"""``receipt_total``: read line items off a photographed shop receipt (Level 2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

import numpy as np

from m3gym.deprecation import renamed_names
from m3gym.spec import AnswerSpec, RefCall, Task
from m3gym.tasks import render as R
from m3gym.tasks.families import _document_common as dc
from m3gym.tasks.families import _scene_common as c2
from m3gym.tasks.families._text_common import lookalike_product
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.render import documents as D
from m3gym.tasks.render.content import PRODUCT_SIZES
from m3gym.tasks.verify import first_verified

WIDTH_CHARS: int = 32
"""Characters per receipt line (a 58 mm till roll)."""

KINDS: tuple[str, ...] = ("price", "sum", "difference")
"""Question kinds: one item's price, two items' total, how much more one costs."""

TABLES: tuple[str, ...] = ("wood", "wood", "fabric")
"""Background kinds of the table the receipt lies on."""

PAPER: R.Color = (244, 242, 236)
INK: R.Color = (38, 36, 44)


def item_names(rng: np.random.Generator, count: int) -> list[str]:
    """Return ``count`` distinct upper-case product names (brand + kind, at most 24 characters).

    The size faker appends is dropped; no name is a prefix of another.
    """
    names: list[str] = []
    for _ in range(count * 20):
        if len(names) == count:
            break
        product = R.fake_product(rng, ascii_only=True)
        for size in sorted(PRODUCT_SIZES, key=len, reverse=True):
            if product.endswith(" " + size):
                product = product[:-len(size) - 1]
                break
        name = product.upper().replace("-", " ")
        if len(name) > 24:
            name = name.split(" ", 1)[-1]
        if not any(n.startswith(name) or name.startswith(n) for n in names):
            names.append(name)
    if len(names) < count:  # pragma: no cover - brands x kinds give thousands of names
        raise RuntimeError("faker gave too few distinct product names")
    return names


def receipt_line(left: str, right: str, width: int = WIDTH_CHARS) -> str:
    """Return ``left`` and ``right`` padded apart to ``width`` monospaced characters."""
    gap = max(1, width - len(left) - len(right))
    return f"{left}{' ' * gap}{right}"


@dataclass(frozen=True)
class Receipt:
    """A drawn receipt: the sheet, its item names and prices (cents)."""

    sheet: D.Sheet
    names: tuple[str, ...]
    prices: tuple[int, ...]
    glyph: float


def draw_receipt(rng: np.random.Generator, n_items: int, glyph: float,
                 asked: Sequence[int], fixed: Mapping[int, int] | None = None) -> Receipt:
    """Draw a till receipt with ``n_items`` items; the lines of items ``asked`` are marked.

    The k-th item of ``asked`` is marked under the key ``f"item{k}"`` (its whole line, name and
    price).
    ``fixed`` maps item indices to prices (cents) chosen by the caller; the other prices are
    drawn distinct from them and from each other.
    """
    fixed = dict(fixed or {})
    names = item_names(rng, n_items)
    pool = np.setdiff1d(np.arange(99, 4999), np.array(sorted(fixed.values()), dtype=int))
    prices = [int(v) for v in rng.choice(pool, size=n_items, replace=False)]
    for i, cents in fixed.items():
        prices[i] = int(cents)
    merchant = R.fake_company(rng, ascii_only=True).upper()[:int(WIDTH_CHARS / 1.4)].strip()
    street, _, town = R.fake_address(rng, ascii_only=True).upper().partition(", ")
    adv = D.text_width("M" * 20, glyph, "mono") / 20.0
    line_h = glyph * 1.75
    margin = int(round(2.2 * adv))
    width = int(round(WIDTH_CHARS * adv)) + 2 * margin
    extras = 2 if rng.random() < 0.5 else 0
    height = int(round(line_h * (n_items + extras + 22))) + 2 * margin
    paper = R.jitter_color(rng, PAPER, 6)
    sheet = D.Sheet.blank(width, height, paper)
    img = sheet.rgb
    y = float(margin)
    cx = width / 2.0

    def centred(text: str, g: float = glyph, font: str = "mono") -> None:
        nonlocal y
        if text.strip():
            D.put_text(img, text[:WIDTH_CHARS], g, cx, y, INK, font, "center")
        y += line_h * g / glyph

    def row(text: str, key: str | None = None) -> None:
        nonlocal y
        placed = D.put_text(img, text, glyph, margin, y, INK, "mono")
        if key is not None:
            sheet.mark(key, placed)
        y += line_h

    centred(merchant, glyph * 1.35, "mono-bold")
    centred(street[:WIDTH_CHARS])
    centred(town[:WIDTH_CHARS])
    centred(f"TEL {int(rng.integers(200, 999))}-{int(rng.integers(200, 999))}-"
            f"{int(rng.integers(1000, 9999))}")
    row("-" * WIDTH_CHARS)
    date = R.fake_date(rng, "%m/%d/%Y")
    row(receipt_line(date, f"{int(rng.integers(7, 22)):02d}:{int(rng.integers(60)):02d}"))
    row(receipt_line(f"CASHIER {int(rng.integers(1, 40)):02d}",
                     f"#{int(rng.integers(1000, 99999))}"))
    row("-" * WIDTH_CHARS)
    for i, (name, cents) in enumerate(zip(names, prices)):
        row(receipt_line(name, dc.money(cents)),
            f"item{list(asked).index(i)}" if i in asked else None)
        if extras and i == n_items // 2:
            row(f"  {int(rng.integers(2, 5))} @ {dc.money(int(rng.integers(99, 999)))}")
            row(receipt_line("  COUPON", f"-{dc.money(int(rng.integers(20, 300)))}"))
    subtotal = sum(prices)
    tax = int(round(subtotal * float(rng.choice([0.05, 0.0625, 0.07, 0.0825, 0.1]))))
    row("-" * WIDTH_CHARS)
    row(receipt_line("SUBTOTAL", dc.money(subtotal)))
    row(receipt_line("TAX", dc.money(tax)))
    row(receipt_line("TOTAL", dc.money(subtotal + tax)))
    row(receipt_line(f"VISA ****{int(rng.integers(1000, 9999))}", dc.money(subtotal + tax)))
    row("-" * WIDTH_CHARS)
    centred(f"ITEMS SOLD {n_items}")
    centred("THANK YOU FOR SHOPPING")
    centred(f"STORE {int(rng.integers(100, 999))}  REG {int(rng.integers(1, 9))}  "
            f"TRN {int(rng.integers(1000, 9999))}")
    draw_barcode(img, rng, (margin + 2 * adv, y + 0.3 * line_h),
                 (width - 2 * margin - 4 * adv, 2.2 * line_h))
    return Receipt(sheet, tuple(names), tuple(prices), glyph)


def price_lookalikes(rng: np.random.Generator, glyph: float, scale: float,
                     count: int = 6) -> tuple[str, ...]:
    """Return ``count`` shuffled prices that look alike printed on the receipt and seen in the view.

    A random price (1.00-49.99) is varied in look-alike digits of the receipt's monospaced face
    at ``glyph`` px shrunk by the view ``scale`` (:func:`~m3gym.tasks.families._text_common.
    lookalike_product`; the leading digit never becomes 0). The caller draws the answer
    uniformly from the set after it is built, so neither the option strings nor their looks at
    view resolution single it out.
    """
    base = dc.money(int(rng.integers(100, 5000)))  # "1.00".."49.99": three digits at least
    alphabets = {i: "123456789" if i == 0 else "0123456789"
                 for i, c in enumerate(base) if c.isdigit()}
    prices = lookalike_product(rng, base, alphabets, "mono", glyph, scale, count)
    if prices is None:
        raise ValueError(f"{count} look-alike prices need more digits than {base!r} has")
    return R.shuffled(rng, prices)


def draw_barcode(img: np.ndarray, rng: np.random.Generator, at: tuple[float, float],
                 size: tuple[float, float]) -> None:
    """Draw a random 1-D barcode (bars of 1-3 modules) filling ``size`` at ``at`` (in place)."""
    x, y = at
    w, h = size
    module = max(1, int(w // 95))
    x_end = x + w
    bar = True
    while x < x_end - 3 * module:
        width = module * int(rng.integers(1, 4))
        if bar:
            img[int(y):int(y + h), int(x):int(x + width)] = INK
        x += width
        bar = not bar


@register_family
@dataclass
class ReceiptTotalFamily(FamilyConfig):
    """Read one or two line items off a photographed shop receipt.

    Scene:
        A till receipt (faker merchant, address and products; DejaVu Sans Mono) lying upright
        (tilted a few degrees) on a table among coins, a mug and a pen, photographed with a
        slight perspective, a drop shadow, curled paper and sensor noise. With probability
        ``faded_prob`` it is faded thermal paper (``contrast_range`` gray levels of ink: pale,
        yet legible in a zoomed crop).
    Question:
        The price of a named item, the total of two named items, or how much more one named item
        costs than another. Six amounts as choices: for a price (drawn on the receipt) six prices
        that differ only in digits that look alike in the receipt's face at the view's scale
        (:func:`price_lookalikes`, the answer a uniformly random member); for a sum or a
        difference (not drawn) look-alike digit slips of a hidden pivot.
    Why a tool is needed:
        The receipt text is 8-10.5 px tall in a 3000-3400 px photo (``scene_long``), 1.8-2.7 px
        at the 768 px view: no price is legible without a zoomed crop (a strong OCR reader told
        where the line is reads the view at chance, ``m3gym audit-tools``). The photo is large on
        purpose: at 2000-2400 px (3-4.6 px type in the view) a template matcher that knows the
        face, size and place of the price picked it among the look-alike prices in 0.47 of
        price questions (chance 0.17); at 3000-3400 px it is at chance (the view-only leak
        probe), while the crop the reference makes is as legible as before (the type is the
        same size in the photo). No rotation or contrast op is in the reference: neither adds
        information a zoomed crop lacks, so the family trains locating the asked lines by
        their item names and zooming on them (one crop per asked line, in one parallel step).
    Reference trajectory:
        A zoomed crop of the asked line (price), or two zoomed crops in one parallel step, one
        per asked line (sum, difference); the answer is read, or added / subtracted.
    Checkpoints:
        Per asked line: an S checkpoint (crop_covers), a v_tool on its crop and a v_true on its
        evidence (``item_a``, ``item_b``: the line, name and price).
    Difficulty:
        ``glyph_range`` (14-15 px at 0, 8-9 px at 1), ``contrast_range`` (16-18 levels at 0,
        8-10 at 1), ``items`` (3-5 at 0, 9-12 at 1), ``tilt_deg`` (1 at 0, 5 at 1),
        ``perspective`` (0.01 at 0, 0.05 at 1), ``two_item_prob`` (0.1 at 0, 0.9 at 1).
    Config:
        glyph_range, contrast_range (gray levels, within 36-120), items, tilt_deg, perspective,
        two_item_prob, faded_prob, scene_long (the photo's long side, px).
    """

    name: ClassVar[str] = "receipt_total"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 2
    domains: ClassVar[tuple[str, ...]] = ("Life", "Finance")
    description: ClassVar[str] = "crop a photographed receipt's asked lines in parallel, add"

    glyph_range: tuple[float, float] = (8.0, 10.5)
    contrast_range: tuple[float, float] = (45.0, 70.0)
    items: tuple[int, int] = (4, 10)
    tilt_deg: float = 4.0
    perspective: float = 0.035
    two_item_prob: float = 0.6
    faded_prob: float = 0.5
    scene_long: tuple[int, int] = (3000, 3400)

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Return glyph size, ink contrast, item count, camera and question knobs."""
        d = float(difficulty)
        lerp = lambda a, b: a + (b - a) * d  # noqa: E731
        counts = partial(c2.lerp_range, d, integer=True, half_even=True)
        return {"glyph_range": (lerp(14.0, 8.0), lerp(15.0, 9.0)),
                "contrast_range": (lerp(80.0, 40.0), lerp(100.0, 50.0)),
                "items": counts((3, 5), (9, 12)),
                "tilt_deg": lerp(1.0, 5.0), "perspective": lerp(0.01, 0.05),
                "two_item_prob": lerp(0.1, 0.9)}

    def validate(self) -> None:
        """Check glyph sizes, contrasts, item counts, camera bounds and probabilities."""
        c2.check_range("glyph_range", *self.glyph_range, 7.0, 16.0)
        c2.check_range("contrast_range", *self.contrast_range, 36.0, 120.0)
        c2.check_range("items", *self.items, 2, 14)
        if not 0.0 <= self.tilt_deg <= 6.0:
            raise ValueError("tilt_deg must lie in [0, 6] (the evidence must stay upright)")
        if not 0.0 <= self.perspective <= 0.06:
            raise ValueError("perspective must lie in [0, 0.06]")
        c2.check_range("scene_long", *self.scene_long, 1400, 4096)
        for f in ("two_item_prob", "faded_prob"):
            if not 0.0 <= getattr(self, f) <= 1.0:
                raise ValueError(f"{f} must lie in [0, 1]")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task: the first draw whose reference passes every checkpoint."""
        return first_verified(lambda: self.draw(rng), defer_camera=True)

    def draw(self, rng: np.random.Generator) -> Task:
        """Draw one scene and its task (unverified; :meth:`generate` checks the reference)."""
        domain = c2.pick(rng, self.domains)
        n_items = int(rng.integers(self.items[0], self.items[1] + 1))
        two = n_items >= 2 and bool(rng.random() < self.two_item_prob)
        kind = c2.pick(rng, KINDS[1:]) if two else "price"
        asked = sorted(int(i) for i in rng.choice(n_items, size=2 if two else 1, replace=False))
        glyph = float(rng.uniform(*self.glyph_range))
        w, h = c2.scene_size(rng, self.scene_long)
        fixed: dict[int, int] = {}
        choices: tuple[str, ...] | None = None
        if kind == "price":  # the answer is drawn: its options must look alike in the view
            choices = price_lookalikes(rng, glyph, R.view_scale(h, w))
            fixed[asked[0]] = int(round(100 * float(choices[int(rng.integers(len(choices)))])))
        receipt = draw_receipt(rng, n_items, glyph, asked, fixed)
        faded = bool(rng.random() < self.faded_prob)

        table = R.surface(rng, h, w, kind=c2.pick(rng, TABLES), lighting=0.12, vignette=0.15)
        sw, sh = receipt.sheet.size
        cx = float(rng.uniform(sw / 2 + 60, w - sw / 2 - 60))
        cy = float(rng.uniform(sh / 2 + 40, h - sh / 2 - 40))
        angle = float(rng.uniform(-self.tilt_deg, self.tilt_deg))
        quad = D.sheet_quad(rng, receipt.sheet.size, 1.0, (cx, cy), angle, self.perspective)
        rbox = (int(quad[:, 0].min()), int(quad[:, 1].min()), int(quad[:, 0].max()) + 1,
                int(quad[:, 1].max()) + 1)
        D.desk_props(table, rng, [R.grow_box(rbox, 30, w, h)], int(rng.integers(2, 6)))
        table = R.sheet_shadow(table, rng, quad, float(rng.uniform(0.3, 0.5)))
        contrast = float(rng.uniform(*self.contrast_range))
        shown = receipt.sheet.faded(dc.faded_keep(receipt.sheet.paper, INK, contrast)) if faded \
            else None
        photo = D.photograph(table, receipt.sheet, quad, shown)
        img = D.curl_shading(photo.scene, photo.box, float(rng.uniform(0.02, 0.07)),
                             vertical=False)
        img = R.camera_pipeline(img, rng, float(rng.uniform(0.25, 0.5)), keep=[photo.box])

        a, b = (receipt.prices[i] for i in (asked + asked)[:2])
        keys = ["item0", "item1"][:len(asked)]
        if kind == "difference" and a < b:
            asked, a, b, keys = asked[::-1], b, a, keys[::-1]
        cents = {"price": a, "sum": a + b, "difference": a - b}[kind]
        first, second = (receipt.names[i] for i in (asked + asked)[:2])
        question = {
            "price": f"What does the receipt charge for {first}?",
            "sum": f"What do {first} and {second} cost together on the receipt?",
            "difference": f"How much more does {first} cost than {second} on the receipt?",
        }[kind] + " Answer with the amount only."
        evs = tuple(dc.photo_evidence(f"item_{'ab'[k]}", photo, receipt.sheet, key, 0.4 * glyph,
                                      text=dc.money(cents) if kind == "price" else None)
                    for k, key in enumerate(keys))
        steps: list[tuple[RefCall, ...]] = [tuple(
            c2.crop_call(f"c{k + 1}", 0, R.grow_box(e.box, 0.6 * glyph, w, h), w, h,
                         e.glyph_height) for k, e in enumerate(evs))]
        checkpoints = c2.chain_checkpoints(evs, steps)
        return Task(
            task_id="", family=self.name, level=2, domain=domain, images=(R.freeze(img),),
            question=question,
            answer=AnswerSpec(dc.money(cents), (f"${dc.money(cents)}",), "numeric", 0.005),
            reference=tuple(steps), evidence=evs, checkpoints=checkpoints,
            choices=choices if choices is not None else dc.money_choices(rng, cents),
            capabilities=("visual_grounding", *(("parallelism",) if len(evs) > 1 else ())),
            metadata=c2.l2_metadata(self.name, domain, "receipt_on_table", evs, img,
                                    kind=kind, faded=faded,
                                    items=[receipt.names[i] for i in asked],
                                    prices=[receipt.prices[i] for i in asked]),
        )


# ReceiptTotal: the class's name before every family class was called <Name>Family
__getattr__ = renamed_names(
    __name__, {"ReceiptTotal": ("ReceiptTotalFamily", lambda: ReceiptTotalFamily)})
