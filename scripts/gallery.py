"""Render one image per registered task family into ``docs/gallery/`` (flat and photo scenes).

Usage (from the repository root)::

    python scripts/gallery.py                    # docs/gallery/flat/ from the current tree
    python scripts/gallery.py --out OTHER_FOLDER # e.g. run in a worktree of another commit
    python scripts/gallery.py --scenes photo     # docs/gallery/photo/ + photo-sheet.jpg

For every family (every suite) the task of ``--seed`` (default 0) with the default config is
built; its input images are tiled side by side, downscaled (INTER_AREA) to at most
``--max-side`` px and saved as ``<family>.jpg`` at the highest JPEG quality that stays under
``--max-kb``. ``index.json`` in the output folder records each family's level, question and
image size; ``docs/gallery/README.md`` is then rebuilt from every ``index.json`` under
``docs/gallery/`` (one table, one column per folder).

``--scenes photo`` (or ``--backgrounds FOLDER``, a folder of one's own photos) builds every
family whose ``photo_scenes`` is set with that scene config instead
(``make_task(family, seed, {"scenes": "photo"})``), taking per family the first seed at or
after ``--seed`` whose task really has a photographed surface (``metadata["photo_scene"]["kind"] ==
"photo"``: ``chart_value``'s slide variant has none). Its default output folder is
``docs/gallery/photo/``, and a contact sheet of every family's first image, each tile labelled
with the family's name, is written beside it (``<out>-sheet.jpg``, under ``--sheet-kb``).
Everything is deterministic: the same tree writes the same bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
"""The repository root: its ``m3gym`` is imported (not whichever one is installed)."""
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from m3gym.view import VIEW_SIZE  # noqa: E402  (the repository's m3gym, after the path fix)

GALLERY = ROOT / "docs" / "gallery"
"""The gallery's root folder."""

COLUMNS = ("flat", "photo")
"""Folder names shown first, in this order, in the README table (others follow, sorted)."""

PHOTO_SEED_SEARCH: int = 64
"""How many seeds from ``--seed`` on are tried for a task with a photographed surface."""

SHEET_COLUMNS: int = 5
"""Tiles per row of the photo contact sheet."""

SHEET_TILE: tuple[int, int] = (360, 264)
"""Width and height of one contact-sheet tile's image area (the label bar comes on top)."""

SHEET_LABEL: int = 30
"""Height of the label bar above each contact-sheet tile."""


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


def photo_task(family: str, seed: int, scene: dict[str, str]) -> Any:
    """Return the first task of ``family`` from seed ``seed`` on that is drawn into a photo.

    ``scene`` is the scene config (``{"scenes": "photo"}`` or ``{"backgrounds": FOLDER}``). A
    draw without a surface (``chart_value``'s slides) records ``metadata["photo_scene"]["kind"] ==
    "flat"`` and is skipped; ``RuntimeError`` if none of :data:`PHOTO_SEED_SEARCH` seeds has one.
    """
    from m3gym.tasks.registry import make_task

    for s in range(seed, seed + PHOTO_SEED_SEARCH):
        task = make_task(family, s, dict(scene))
        scene_meta = task.metadata.get("photo_scene")
        if isinstance(scene_meta, dict) and scene_meta.get("kind") == "photo":
            return task
    raise RuntimeError(f"{family}: no task with a photographed surface in seeds "
                       f"{seed}..{seed + PHOTO_SEED_SEARCH - 1}")


def photo_families() -> list[str]:
    """Return every registered family (every suite) whose ``photo_scenes`` is set."""
    from m3gym.tasks.registry import family_names, get_family

    return [n for n in family_names(suite=None) if get_family(n).photo_scenes]


def render_task(task: Any, max_side: int, max_bytes: int) -> tuple[bytes, dict]:
    """Return the JPEG of ``task``'s input images (tiled, downscaled) and its index entry."""
    img = downscale(tile(list(task.images)), max_side)
    data = encode_jpeg(img, max_bytes)
    entry: dict[str, Any] = {
        "level": int(task.level),
        "question": " ".join(task.question.split()),
        "source_sizes": [[int(im.shape[1]), int(im.shape[0])] for im in task.images],
        "kb": round(len(data) / 1024, 1),
    }
    scene = task.metadata.get("photo_scene")
    if isinstance(scene, dict):  # photo scenes (flat tasks may keep a scene name string)
        entry["seed"] = int(str(task.task_id).rsplit("/", 1)[1])
        entry["scene"] = {"kind": scene["kind"], "clutter": scene.get("clutter"),
                          "camera": scene.get("camera"),
                          "photos": [p["photo"] for p in scene.get("photos", [])]}
    return data, entry


def render_family(family: str, seed: int, max_side: int, max_bytes: int) -> tuple[bytes, dict]:
    """Return the JPEG of ``family``'s task ``seed`` (default config) and its index entry."""
    from m3gym.tasks.registry import make_task

    return render_task(make_task(family, seed), max_side, max_bytes)


def write_gallery(out: Path, seed: int, max_side: int, max_kb: float,
                  families: list[str] | None = None,
                  scene: dict[str, str] | None = None) -> dict[str, dict]:
    """Write ``<family>.jpg`` and ``index.json`` for ``families`` (all if None) into ``out``.

    With a ``scene`` config (photo scenes) ``families`` defaults to :func:`photo_families` and
    each family's task is :func:`photo_task`'s.
    """
    from m3gym.tasks.registry import family_names

    names = families or (photo_families() if scene else family_names(suite=None))
    out.mkdir(parents=True, exist_ok=True)
    index: dict[str, dict] = {}
    for name in names:
        if scene:
            data, entry = render_task(photo_task(name, seed, scene), max_side, int(max_kb * 1024))
        else:
            data, entry = render_family(name, seed, max_side, int(max_kb * 1024))
        (out / f"{name}.jpg").write_bytes(data)
        index[name] = entry
        print(f"{name:28s} level {entry['level']}  {entry['kb']:6.1f} KB", file=sys.stderr)
    meta: dict[str, Any] = {"seed": seed, "max_side": max_side, "families": index}
    if scene:
        meta["scenes"] = "photo"
        meta["source"] = "folder" if "backgrounds" in scene else "bundled"
    (out / "index.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return index


def sheet_tile(img: np.ndarray, label: str, size: tuple[int, int] = SHEET_TILE) -> np.ndarray:
    """Return ``img`` fitted (aspect kept) into a white ``size`` box under a ``label`` bar."""
    w, h = size
    rgb = img if img.ndim == 3 else cv2.cvtColor(img, cv2.COLOR_GRAY2RGB)
    rgb = rgb[..., :3]
    ih, iw = rgb.shape[:2]
    scale = min(w / iw, h / ih)
    nw, nh = max(1, round(iw * scale)), max(1, round(ih * scale))
    fitted = cv2.resize(rgb, (nw, nh),
                        interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
    out = np.full((SHEET_LABEL + h, w, 3), 255, np.uint8)
    x0, y0 = (w - nw) // 2, SHEET_LABEL + (h - nh) // 2
    out[y0:y0 + nh, x0:x0 + nw] = fitted
    cv2.putText(out, label, (6, SHEET_LABEL - 9), cv2.FONT_HERSHEY_SIMPLEX, 0.62, (20, 20, 20),
                1, cv2.LINE_AA)
    return out


def contact_sheet(tasks: dict[str, Any], columns: int = SHEET_COLUMNS, gap: int = 8) -> np.ndarray:
    """Return a grid of every task's first input image, each labelled with its family."""
    tiles = [sheet_tile(task.images[0], name) for name, task in tasks.items()]
    if not tiles:
        raise ValueError("a contact sheet needs at least one task")
    th, tw = tiles[0].shape[:2]
    rows = -(-len(tiles) // columns)
    sheet = np.full((gap + rows * (th + gap), gap + columns * (tw + gap), 3), 255, np.uint8)
    for i, t in enumerate(tiles):
        r, c = divmod(i, columns)
        y, x = gap + r * (th + gap), gap + c * (tw + gap)
        sheet[y:y + th, x:x + tw] = t
    return sheet


def write_photo_sheet(path: Path, seed: int, max_kb: float, families: list[str] | None = None,
                      scene: dict[str, str] | None = None) -> float:
    """Write the photo contact sheet of ``families`` (default every photo family) to ``path``.

    Returns its size in KB (JPEG, the highest quality under ``max_kb``).
    """
    scene = scene or {"scenes": "photo"}
    names = families or photo_families()
    tasks = {name: photo_task(name, seed, scene) for name in names}
    data = encode_jpeg(contact_sheet(tasks), int(max_kb * 1024))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return round(len(data) / 1024, 1)


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
        f"{VIEW_SIZE} px on its longest side). `flat/` is the default config, `photo/` "
        "`--scenes photo` (the family's object drawn into one of the bundled photographs; "
        "per family the first seed from 0 whose task has a photographed surface, families "
        "that stay flat show —). All photo families on one page: "
        "[`photo-sheet.jpg`](photo-sheet.jpg); how it works: "
        "[Photographic scenes](../photo-scenes.md).",
        "",
        "| family | level | question | " + " | ".join(order) + " |",
        "|---|---|---|" + "---|" * len(order),
    ]
    for name in sorted(families, key=lambda n: (families[n]["level"], n)):
        entry = families[name]
        cells = []
        for col in order:
            if name in folders[col]["families"]:
                cell = f'<img src="{col}/{name}.jpg" width="320" alt="{name} {col}">'
                seed = folders[col]["families"][name].get("seed", folders[col].get("seed"))
                if seed != folders[col].get("seed"):  # a photo family's first photo task
                    cell += f"<br>seed {seed}"
                cells.append(cell)
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
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for the images (default docs/gallery/flat, or "
                             "docs/gallery/photo with photo scenes)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-side", type=int, default=768)
    parser.add_argument("--max-kb", type=float, default=140.0)
    parser.add_argument("--families", nargs="*", default=None,
                        help="only these families (default: every registered family)")
    parser.add_argument("--readme-root", type=Path, default=None,
                        help="gallery root whose README.md to rebuild (default: --out's parent)")
    parser.add_argument("--scenes", choices=("flat", "photo"), default=None,
                        help="photo: draw every photo family into the bundled photographs")
    parser.add_argument("--backgrounds", type=Path, default=None,
                        help="a folder of your own photos (implies --scenes photo)")
    parser.add_argument("--sheet-kb", type=float, default=400.0,
                        help="size cap of the photo contact sheet (default 400)")
    args = parser.parse_args(argv)
    scene: dict[str, str] | None = None
    if args.backgrounds is not None:
        if args.scenes == "flat":
            parser.error("--backgrounds draws photo scenes; drop --scenes flat")
        scene = {"backgrounds": str(args.backgrounds.expanduser().resolve())}
    elif args.scenes == "photo":
        scene = {"scenes": "photo"}
    out = args.out or GALLERY / ("photo" if scene else "flat")
    write_gallery(out, args.seed, args.max_side, args.max_kb, args.families, scene)
    if scene:
        sheet = out.parent / f"{out.name}-sheet.jpg"
        kb = write_photo_sheet(sheet, args.seed, args.sheet_kb, args.families, scene)
        print(f"{sheet}  {kb:.1f} KB", file=sys.stderr)
    print(write_readme(args.readme_root or out.parent), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
