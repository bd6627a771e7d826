"""Render every task family's example with an inset of its evidence (``docs/families/img/``).

Usage (from the repository root)::

    python scripts/family_insets.py                      # every family
    python scripts/family_insets.py --family tiny_text   # one or more families

For every family (every suite) the task of seed 0 with the default config is built with the
family's own generator (``m3gym.make_task(name, 0)``). The picture shows, on the left, its input
images side by side and downscaled, each evidence box (``Task.evidence``) outlined and numbered;
on the right, the same boxes (with a margin) cut from the full-resolution image and scaled to the
inset's size: what an agent must read, next to how small it is in the whole task. Every output is
``<family>.png`` (palette PNG, optimized); ``index.json`` beside them records each family's
question, image sizes and evidence boxes. The docs hook (``docs/hooks/families.py``) puts the
picture on the family's page, and renders it at build time for a family that has none yet.
Deterministic: the same tree and library versions write the same bytes.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

ROOT = Path(__file__).resolve().parents[1]
"""The repository root: its ``m3gym`` is imported (not whichever one is installed)."""
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OUT = ROOT / "docs" / "families" / "img"
"""Default output folder (served as ``families/img/`` on the docs site)."""

SEED: int = 0
"""The seed of the example task on every family page."""

OVERVIEW: tuple[int, int] = (520, 420)
"""Largest width and height of the full task (all input images side by side)."""

INSET_WIDTH: int = 340
"""Width of the inset column; the insets share the overview's height."""

GAP: int = 12
"""Space between the overview and the insets, and between two insets, in pixels."""

MAX_INSETS: int = 3
"""At most this many evidence boxes get an inset (the first ones; all are outlined)."""

MARGIN: float = 0.2
"""Context kept around an evidence box in its inset, as a fraction of the box's longer side."""

MIN_MARGIN: int = 6
"""Least context kept around an evidence box in its inset, in source pixels."""

MIN_OUTLINE: int = 14
"""Least side of an outline drawn on the overview, in overview pixels (tiny boxes stay visible)."""

INK: tuple[int, int, int] = (226, 36, 36)
"""Colour of the outlines, the inset frames and the number badges."""

COLORS: int = 256
"""Palette size of the PNG (a fast-octree palette, no dithering)."""

FONT = ROOT / "m3gym" / "data" / "fonts" / "DejaVuSans-Bold.ttf"
"""Font of the number badges (bundled with m3gym)."""


def side_by_side(images: Sequence[np.ndarray], gap: int) -> tuple[np.ndarray, list[int]]:
    """Return ``images`` (uint8 RGB or gray) in one row, top-aligned, and each one's x offset."""
    rgb = [np.repeat(im[..., None], 3, axis=2) if im.ndim == 2 else im[..., :3] for im in images]
    height = max(im.shape[0] for im in rgb)
    width = sum(im.shape[1] for im in rgb) + gap * (len(rgb) - 1)
    row = np.full((height, width, 3), 255, np.uint8)
    offsets, x = [], 0
    for im in rgb:
        row[:im.shape[0], x:x + im.shape[1]] = im
        offsets.append(x)
        x += im.shape[1] + gap
    return row, offsets


def fit_scale(size: tuple[int, int], bound: tuple[int, int]) -> float:
    """Return the factor that fits ``size`` (width, height) inside ``bound``, keeping its shape."""
    return min(bound[0] / size[0], bound[1] / size[1])


def context_box(box: Sequence[float], shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """Return ``box`` (x0, y0, x1, y1 source pixels) grown by the inset margin.

    The result is in integer pixels, inside an image of ``shape`` (height, width, ...).
    """
    x0, y0, x1, y1 = (float(v) for v in box)
    pad = max(MIN_MARGIN, MARGIN * max(x1 - x0, y1 - y0))
    height, width = shape[:2]
    return (max(0, int(np.floor(x0 - pad))), max(0, int(np.floor(y0 - pad))),
            min(width, int(np.ceil(x1 + pad))), min(height, int(np.ceil(y1 + pad))))


def resized(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    """Return ``image`` resized to ``size`` (Lanczos, which also averages when shrinking)."""
    return image.resize((max(1, size[0]), max(1, size[1])), Image.Resampling.LANCZOS)


def badge(draw: ImageDraw.ImageDraw, xy: tuple[float, float], number: int,
          font: ImageFont.FreeTypeFont) -> None:
    """Draw ``number`` in white on a small red square whose top-left corner is ``xy``."""
    x, y = xy
    draw.rectangle((x, y, x + 17, y + 17), fill=INK)
    draw.text((x + 9, y + 9), str(number), fill=(255, 255, 255), font=font, anchor="mm")


def overview_outline(box: Sequence[float], scale: float, dx: float) -> tuple[float, ...]:
    """Return the overview rectangle of source ``box``, scaled and shifted right by ``dx``.

    The rectangle is at least ``MIN_OUTLINE`` px on each side, around the box's centre.
    """
    x0, y0, x1, y1 = (float(v) * scale for v in box)
    x0, x1 = x0 + dx, x1 + dx
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    half_w, half_h = max(x1 - x0, MIN_OUTLINE) / 2, max(y1 - y0, MIN_OUTLINE) / 2
    return (cx - half_w, cy - half_h, cx + half_w, cy + half_h)


def family_inset(task: Any) -> Image.Image:
    """Return the picture of ``task``: its images with the evidence outlined, beside the insets."""
    row, offsets = side_by_side(task.images, gap=24)
    scale = fit_scale((row.shape[1], row.shape[0]), OVERVIEW)
    view = resized(Image.fromarray(row), (round(row.shape[1] * scale), round(row.shape[0] * scale)))
    evidence = list(task.evidence)
    shown = evidence[:MAX_INSETS]
    height = max(view.height, 160 * len(shown) + GAP * (len(shown) - 1)) if shown else view.height
    width = view.width + (GAP + INSET_WIDTH if shown else 0)
    canvas = Image.new("RGB", (width, height), (255, 255, 255))
    canvas.paste(view, (0, (height - view.height) // 2))
    draw = ImageDraw.Draw(canvas)
    font = ImageFont.truetype(str(FONT), 12)
    top = (height - view.height) // 2
    for number, ev in enumerate(evidence, 1):
        x0, y0, x1, y1 = overview_outline(ev.box, scale, offsets[ev.image] * scale)
        draw.rectangle((x0, y0 + top, x1, y1 + top), outline=INK, width=2)
        if number <= len(shown):
            badge(draw, (min(x1 + 2, view.width - 18), max(0.0, y0 + top - 18)), number, font)
    slot_h = (height - GAP * (len(shown) - 1)) // max(1, len(shown))
    for i, ev in enumerate(shown):
        image = np.asarray(task.images[ev.image])
        cx0, cy0, cx1, cy1 = context_box(ev.box, image.shape)
        cut = side_by_side([image[cy0:cy1, cx0:cx1]], gap=0)[0]
        fit = fit_scale((cut.shape[1], cut.shape[0]), (INSET_WIDTH - 4, slot_h - 4))
        zoom = resized(Image.fromarray(cut), (round(cut.shape[1] * fit), round(cut.shape[0] * fit)))
        x = view.width + GAP + (INSET_WIDTH - zoom.width) // 2
        y = i * (slot_h + GAP) + (slot_h - zoom.height) // 2
        canvas.paste(zoom, (x, y))
        frame = (x - 2, y - 2, x + zoom.width + 1, y + zoom.height + 1)
        draw.rectangle(frame, outline=INK, width=2)
        badge(draw, (x - 2, y - 2), i + 1, font)
    return canvas


def png_bytes(picture: Image.Image) -> bytes:
    """Return ``picture`` as an optimized palette PNG (fast-octree palette, no dithering)."""
    palette = picture.quantize(colors=COLORS, method=Image.Quantize.FASTOCTREE,
                               dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    palette.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def family_record(task: Any) -> dict[str, Any]:
    """Return what ``index.json`` records of ``task``: question, image sizes, evidence boxes."""
    return {"seed": SEED, "question": task.question,
            "images": [[int(im.shape[1]), int(im.shape[0])] for im in task.images],
            "evidence": [{"id": ev.id, "image": ev.image,
                          "box": [round(float(v), 2) for v in ev.box]} for ev in task.evidence]}


def render_family(name: str) -> tuple[bytes, dict[str, Any]]:
    """Return the PNG bytes of family ``name``'s picture and its ``index.json`` record."""
    from m3gym.tasks.registry import make_task

    task = make_task(name, SEED)
    return png_bytes(family_inset(task)), family_record(task)


def index_json(index: dict[str, Any]) -> str:
    """Return ``index`` as JSON text, one family per line, sorted by name."""
    lines = [f"{json.dumps(name)}: {json.dumps(index[name])}" for name in sorted(index)]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Write the pictures of the chosen families (default: all) and update ``index.json``."""
    import m3gym

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--family", action="append", help="only this family (repeatable)")
    parser.add_argument("--out", type=Path, default=OUT, help="output folder")
    args = parser.parse_args(argv)
    names = args.family or m3gym.family_names(suite=None)
    args.out.mkdir(parents=True, exist_ok=True)
    index_path = args.out / "index.json"
    index = json.loads(index_path.read_text()) if index_path.is_file() else {}
    for name in names:
        data, record = render_family(name)
        (args.out / f"{name}.png").write_bytes(data)
        index[name] = record
        print(f"{name}: {len(data) // 1024} KB")
    index_path.write_text(index_json(index))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
