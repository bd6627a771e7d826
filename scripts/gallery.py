"""Render one image per registered task family into ``docs/gallery/`` (before/after realism).

Usage (from the repository root)::

    python scripts/gallery.py                    # docs/gallery/after/ from the current tree
    python scripts/gallery.py --out docs/gallery/before   # e.g. run in a worktree of an old commit

For every family (every suite) the task of ``--seed`` (default 0) with the default config is
built; its input images are tiled side by side, downscaled (INTER_AREA) to at most
``--max-side`` px and saved as ``<family>.jpg`` at the highest JPEG quality that stays under
``--max-kb``. ``index.json`` in the output folder records each family's level, question and
image size; ``docs/gallery/README.md`` is then rebuilt from every ``index.json`` under
``docs/gallery/`` (one table, one column per folder).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
"""The repository root: its ``m3gym`` is imported (not whichever one is installed)."""
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

GALLERY = ROOT / "docs" / "gallery"
"""The gallery's root folder."""

COLUMNS = ("before", "after")
"""Folder names shown first, in this order, in the README table (others follow, sorted)."""


def tile(images: list[np.ndarray], gap: int = 8) -> np.ndarray:
    """Return ``images`` (uint8 RGB or gray) side by side at the tallest one's height."""
    rgb = [im if im.ndim == 3 else cv2.cvtColor(im, cv2.COLOR_GRAY2RGB) for im in images]
    height = max(im.shape[0] for im in rgb)
    parts = []
    for i, im in enumerate(rgb):
        if im.shape[0] != height:
            width = max(1, round(im.shape[1] * height / im.shape[0]))
            im = cv2.resize(im, (width, height), interpolation=cv2.INTER_AREA)
        if i:
            parts.append(np.full((height, gap, 3), 255, np.uint8))
        parts.append(im[..., :3])
    return np.concatenate(parts, axis=1)


def downscale(img: np.ndarray, max_side: int) -> np.ndarray:
    """Return ``img`` shrunk (INTER_AREA) so its longest side is at most ``max_side`` px."""
    h, w = img.shape[:2]
    scale = max_side / max(h, w)
    if scale >= 1.0:
        return img
    return cv2.resize(img, (max(1, round(w * scale)), max(1, round(h * scale))),
                      interpolation=cv2.INTER_AREA)


def encode_jpeg(img: np.ndarray, max_bytes: int) -> bytes:
    """Return ``img`` (RGB) as JPEG bytes at the highest quality (95 down to 40) under the cap."""
    bgr = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
    data = b""
    for quality in range(95, 35, -5):
        ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, quality])
        if not ok:  # pragma: no cover - OpenCV always encodes uint8 RGB
            raise RuntimeError("JPEG encoding failed")
        data = buf.tobytes()
        if len(data) <= max_bytes:
            break
    return data


def render_family(family: str, seed: int, max_side: int, max_bytes: int) -> tuple[bytes, dict]:
    """Return the JPEG of ``family``'s task ``seed`` and its index entry."""
    from m3gym.tasks.registry import make_task

    task = make_task(family, seed)
    img = downscale(tile(list(task.images)), max_side)
    data = encode_jpeg(img, max_bytes)
    entry = {
        "level": int(task.level),
        "question": " ".join(task.question.split()),
        "source_sizes": [[int(im.shape[1]), int(im.shape[0])] for im in task.images],
        "kb": round(len(data) / 1024, 1),
    }
    return data, entry


def write_gallery(out: Path, seed: int, max_side: int, max_kb: float,
                  families: list[str] | None = None) -> dict[str, dict]:
    """Write ``<family>.jpg`` and ``index.json`` for ``families`` (all if None) into ``out``."""
    from m3gym.tasks.registry import family_names

    names = families or family_names(suite=None)
    out.mkdir(parents=True, exist_ok=True)
    index: dict[str, dict] = {}
    for name in names:
        data, entry = render_family(name, seed, max_side, int(max_kb * 1024))
        (out / f"{name}.jpg").write_bytes(data)
        index[name] = entry
        print(f"{name:28s} level {entry['level']}  {entry['kb']:6.1f} KB", file=sys.stderr)
    meta = {"seed": seed, "max_side": max_side, "families": index}
    (out / "index.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return index


def _short(text: str, limit: int = 110) -> str:
    text = text.replace("|", "\\|")
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def write_readme(root: Path = GALLERY) -> Path:
    """Rebuild ``root/README.md``: one row per family, one image column per gallery folder."""
    folders = {p.parent.name: json.loads(p.read_text())
               for p in sorted(root.glob("*/index.json"))}
    order = [c for c in COLUMNS if c in folders] + sorted(c for c in folders if c not in COLUMNS)
    families: dict[str, dict] = {}
    for col in order:
        for name, entry in folders[col]["families"].items():
            families.setdefault(name, entry)
    lines = [
        "# Gallery: one task per family",
        "",
        "Generated by `python scripts/gallery.py` (the task of seed 0 with the default config, "
        "input images tiled side by side and downscaled; the agent sees each at most "
        "1024 px on its longest side). `before/` is main at commit cafeb78 (Hershey text, "
        "flat clip-art), `after/` the current tree.",
        "",
        "| family | level | question | " + " | ".join(order) + " |",
        "|---|---|---|" + "---|" * len(order),
    ]
    for name in sorted(families, key=lambda n: (families[n]["level"], n)):
        entry = families[name]
        cells = []
        for col in order:
            if name in folders[col]["families"]:
                cells.append(f'<img src="{col}/{name}.jpg" width="320" alt="{name} {col}">')
            else:
                cells.append("—")
        lines.append(f"| `{name}` | {entry['level']} | {_short(entry['question'])} | "
                     + " | ".join(cells) + " |")
    path = root / "README.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, write the gallery folder and rebuild the README."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=GALLERY / "after",
                        help="folder for the images (default docs/gallery/after)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-side", type=int, default=768)
    parser.add_argument("--max-kb", type=float, default=140.0)
    parser.add_argument("--families", nargs="*", default=None,
                        help="only these families (default: every registered family)")
    parser.add_argument("--readme-root", type=Path, default=None,
                        help="gallery root whose README.md to rebuild (default: --out's parent)")
    args = parser.parse_args(argv)
    write_gallery(args.out, args.seed, args.max_side, args.max_kb, args.families)
    print(write_readme(args.readme_root or args.out.parent), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
