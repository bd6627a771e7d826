"""Build the bundled ``M3Bench-Records`` demo set from public-domain / CC0 photographs.

The source photographs are committed under ``m3gym/data/records_demo/sources/`` (copied
unchanged from the scikit-image 0.26.0 wheel and matplotlib's sample data; licences in
``m3gym/data/records_demo/LICENSES.md``). This script composes them at native resolution onto
three large plain pinboards (2400 x 1800 px), some rotated, mirrored or darkened, so every
evidence is illegible in the agent's 768 px view and legible in a crop at native resolution, and
writes the hand-written grounded records with their evidence boxes mapped into board pixels.

Deterministic: the placement comes from a fixed ``np.random.default_rng(seed)`` per board and the
output bytes depend only on the sources and the OpenCV build, so running it again regenerates
the committed files byte for byte::

    .venv/bin/python scripts/build_records_demo.py            # rewrite the committed files
    .venv/bin/python scripts/build_records_demo.py --out DIR  # write them elsewhere (tests)
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEMO_DIR = ROOT / "m3gym" / "data" / "records_demo"
"""The committed demo set: ``records.jsonl``, ``images/``, ``sources/``, licences."""

BOARD_SIZE: tuple[int, int] = (2400, 1800)
"""Width and height of every pinboard in pixels."""

GRID: tuple[int, int] = (3, 2)
"""Columns and rows of the placement grid (one photo per cell)."""

MAT = 10
"""Width of the white mat around each photo, in pixels."""

BACKGROUND: tuple[int, int, int] = (206, 214, 220)
"""Plain pinboard colour (BGR)."""

JPEG_QUALITY = 95
"""JPEG quality of the boards."""

Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class Placed:
    """One photo on a board: its source file, the transform applied and the board seed slot."""

    name: str
    source: str
    transform: str = "none"
    """``none``, ``rot180``, ``rot90cw`` (rotated 90 degrees clockwise), ``mirror`` (flipped
    left-right), ``dark`` (intensities scaled to a dark low-contrast range) or ``faint``
    (squeezed into a narrow mid-grey range)."""


@dataclass(frozen=True)
class Board:
    """A pinboard image: its file name, seed and the photos placed on it."""

    file: str
    seed: int
    photos: tuple[Placed, ...]


@dataclass
class Rec:
    """A hand-written record; evidence boxes are in the *source photo's* upright pixels."""

    id: str
    board: str
    photo: str
    question: str
    answer: Any
    match: str
    box: Box
    glyph_height: float
    text: str | None = None
    choices: list[str] | None = None
    op: dict[str, Any] | None = None
    domain: str = "Life"
    level: int = 1
    tolerance: float | None = None


BOARDS: tuple[Board, ...] = (
    Board("board_a.jpg", 20261, (
        Placed("astronaut", "astronaut.png", "rot180"),
        Placed("coins", "coins.png"),
        Placed("chelsea", "chelsea.png"),
        Placed("rocket", "rocket.jpg"),
        Placed("clock", "clock_motion.png"),
    )),
    Board("board_b.jpg", 20262, (
        Placed("hopper", "grace_hopper.jpg", "rot90cw"),
        Placed("camera", "camera.png", "dark"),
        Placed("coins", "coins.png", "faint"),
        Placed("chelsea", "chelsea.png"),
        Placed("rocket", "rocket.jpg"),
    )),
    Board("board_c.jpg", 20263, (
        Placed("astronaut", "astronaut.png", "mirror"),
        Placed("hopper", "grace_hopper.jpg", "dark"),
        Placed("camera", "camera.png"),
        Placed("clock", "clock_motion.png"),
        Placed("rocket", "rocket.jpg"),
    )),
)
"""The three boards. Each photo appears at most once per board (a record sees one board)."""

_PATCH = "the round purple mission patch on the astronaut's orange suit"
_TAG = "the name tag on the naval officer's uniform"
_MIRRORED = "(the photo is mirrored; read it the right way round)"
_COINS = "the photograph of ancient coins"

RECORDS: tuple[Rec, ...] = (
    # board A: the astronaut photo is upside down (rotate 180 makes it upright)
    Rec("patch-upper-second", "board_a.jpg", "astronaut",
        f"On {_PATCH} (the photo is upside down), which name is printed second on the upper arc?",
        "ASHBY", "exact", (168, 350, 191, 364), 6, text="ASHBY",
        op={"op": "rotate", "angle": 180}, domain="Science", level=2),
    Rec("patch-lower-middle", "board_a.jpg", "astronaut",
        f"On {_PATCH}, which name is printed in the middle of the lower arc?",
        "HAWLEY", "choice", (155, 407, 180, 419), 6, text="HAWLEY",
        choices=["COLEMAN", "HAWLEY", "TOGNINI", "ASHBY"],
        op={"op": "rotate", "angle": 180}, domain="Science", level=2),
    Rec("patch-lower-flag", "board_a.jpg", "astronaut",
        f"On {_PATCH}, what does the lower of the two small flags look like?",
        "blue, white and red vertical stripes", "choice", (154, 383, 166, 392), 7,
        choices=["red and white horizontal stripes with a blue canton",
                 "green, white and red vertical stripes",
                 "blue, white and red vertical stripes",
                 "black, red and gold horizontal stripes"],
        op={"op": "rotate", "angle": 180}, domain="Science", level=2),
    Rec("patch-flag-count", "board_a.jpg", "astronaut",
        f"How many small national flags are embroidered on {_PATCH}?",
        2, "number", (146, 375, 166, 392), 7, domain="Science"),
    Rec("patch-lower-count", "board_a.jpg", "astronaut",
        f"How many names are printed along the lower arc of {_PATCH}?",
        3, "number", (136, 389, 201, 419), 6, domain="Science"),
    Rec("coin-top-right", "board_a.jpg", "coins",
        f"In {_COINS}, what is shown on the coin at the right end of the top row?",
        "a standing figure", "choice", (305, 15, 365, 72), 10,
        choices=["a seated figure", "a head in profile", "a face seen from the front",
                 "a standing figure"], domain="Culture"),
    Rec("coin-top-fourth", "board_a.jpg", "coins",
        f"In {_COINS}, what is shown on the fourth coin from the left in the top row?",
        "a seated figure", "choice", (191, 28, 241, 74), 10,
        choices=["a standing figure", "a seated figure", "a head in profile",
                 "a face seen from the front"], domain="Culture"),
    Rec("rocket-fairing", "board_a.jpg", "rocket",
        "In the night photograph of a rocket on its launch pad, what is painted on the rocket's "
        "white nose fairing?",
        "an oval emblem", "choice", (312, 142, 334, 157), 8,
        choices=["the word SPACEX in black letters", "an oval emblem", "a national flag",
                 "nothing, it is plain white"], domain="Science"),
    # board B: the naval officer's photo is rotated 90 degrees clockwise (rotate 90 CCW fixes it)
    Rec("tag-text", "board_b.jpg", "hopper",
        f"What is written on {_TAG} (the photo lies on its side)?",
        "COMO HOPPER", "exact", (109, 494, 161, 508), 8, text="COMO HOPPER",
        op={"op": "rotate", "angle": 90}, domain="Society", level=2),
    Rec("ribbon-rows", "board_b.jpg", "hopper",
        "How many rows of ribbons (as worn; the photo lies on its side) does the ribbon bar on "
        "the naval officer's uniform have?",
        3, "number", (322, 486, 456, 528), 7, domain="Society"),
    Rec("ribbon-top-colour", "board_b.jpg", "hopper",
        "What is the main colour of the single ribbon in the top row (as worn; the photo lies on "
        "its side) of the naval officer's ribbon bar?",
        "red", "choice", (363, 487, 411, 502), 7,
        choices=["blue", "yellow", "green", "red"], domain="Society"),
    Rec("sleeve-buttons", "board_b.jpg", "camera",
        "In the very dark photograph of a man filming with a camera on a tripod, how many buttons "
        "are on the cuff of his coat sleeve?",
        4, "number", (156, 280, 187, 301), 5, op={"op": "enhance"}, level=2),
    Rec("tower-top", "board_b.jpg", "camera",
        "In the very dark photograph of a man filming with a camera on a tripod, what sits on top "
        "of the tall tower on the skyline?",
        "a white sphere", "choice", (406, 110, 438, 140), 10,
        choices=["a pointed spire", "a flag on a pole", "a white sphere", "a large clock"],
        op={"op": "enhance"}, level=2),
    Rec("coin-frontal", "board_b.jpg", "coins",
        f"In the faint low-contrast {_COINS[4:]}, what is shown on the fourth coin from the left "
        "in the third row?",
        "a face seen from the front", "choice", (188, 170, 237, 217), 10,
        choices=["a face seen from the front", "a head in profile", "a seated figure",
                 "a standing figure"], domain="Culture", op={"op": "enhance"}, level=2),
    Rec("coin-bottom-left", "board_b.jpg", "coins",
        f"In the faint low-contrast {_COINS[4:]}, what is shown on the large coin at the left "
        "end of the bottom row?",
        "a helmeted head", "choice", (17, 231, 76, 290), 12,
        choices=["a standing figure", "a seated figure", "a helmeted head",
                 "a face seen from the front"], domain="Culture",
        op={"op": "enhance"}, level=2),
    # board C: the astronaut photo is mirrored, the naval officer's photo darkened
    Rec("patch-lower-last", "board_c.jpg", "astronaut",
        f"On {_PATCH} {_MIRRORED}, which name ends the lower arc?",
        "TOGNINI", "exact", (178, 397, 201, 418), 6, text="TOGNINI",
        op={"op": "flip", "direction": "horizontal"}, domain="Science", level=2),
    Rec("patch-upper-which", "board_c.jpg", "astronaut",
        f"On {_PATCH} {_MIRRORED}, which of these names is printed on the upper arc?",
        "ASHBY", "choice", (145, 351, 191, 368), 6, text="COLLINS ASHBY",
        choices=["COLEMAN", "HAWLEY", "ASHBY", "TOGNINI"],
        op={"op": "flip", "direction": "horizontal"}, domain="Science", level=2),
    Rec("patch-lower-first", "board_c.jpg", "astronaut",
        f"On {_PATCH} {_MIRRORED}, which name begins the lower arc?",
        "COLEMAN", "choice", (136, 389, 159, 414), 6, text="COLEMAN",
        choices=["ASHBY", "TOGNINI", "HAWLEY", "COLEMAN"],
        op={"op": "flip", "direction": "horizontal"}, domain="Science", level=2),
    Rec("tag-first-word", "board_c.jpg", "hopper",
        "In the darkened portrait of a naval officer, what is the first word on her name tag?",
        "COMO", "exact", (109, 494, 131, 508), 8, text="COMO",
        op={"op": "enhance"}, domain="Society", level=2),
    Rec("tag-emblem", "board_c.jpg", "hopper",
        "In the darkened portrait of a naval officer, what is at the left end of her name tag?",
        "a white shield-shaped badge", "choice", (81, 486, 104, 510), 12,
        choices=["a gold anchor", "a pair of silver wings", "a white shield-shaped badge",
                 "a five-pointed star"],
        op={"op": "enhance"}, domain="Society", level=2),
    Rec("ribbon-top-count", "board_c.jpg", "hopper",
        "In the darkened portrait of a naval officer, how many ribbons are in the top row of "
        "the ribbon bar?",
        1, "number", (363, 487, 411, 502), 7, op={"op": "enhance"}, domain="Society", level=2),
    Rec("skyline-shell", "board_c.jpg", "camera",
        "In the photograph of a man filming with a camera on a tripod, what is the building at "
        "the right end of the skyline roofed with?",
        "a low curved shell", "choice", (415, 194, 512, 228), 10,
        choices=["a pointed spire", "a flat roof with antennas", "a stepped pyramid",
                 "a low curved shell"]),
)
"""The hand-written records. Every answer was read from a native-resolution crop by eye."""


def load_source(src_dir: Path, name: str) -> np.ndarray:
    """Read a source photo as 3-channel BGR ``uint8`` (grey sources are replicated)."""
    img = cv2.imread(str(src_dir / name), cv2.IMREAD_COLOR)
    if img is None:
        raise SystemExit(f"cannot read source photo {src_dir / name}")
    return img


def apply_transform(img: np.ndarray, transform: str) -> np.ndarray:
    """Return ``img`` after the placement transform (see :attr:`Placed.transform`)."""
    if transform == "none":
        return img
    if transform == "rot180":
        return cv2.rotate(img, cv2.ROTATE_180)
    if transform == "rot90cw":
        return cv2.rotate(img, cv2.ROTATE_90_CLOCKWISE)
    if transform == "mirror":
        return cv2.flip(img, 1)
    if transform == "dark":
        return np.round(4.0 + img.astype(np.float64) * 0.25).astype(np.uint8)
    if transform == "faint":
        return np.round(112.0 + img.astype(np.float64) * 0.22).astype(np.uint8)
    raise ValueError(f"unknown transform {transform!r}")


def map_box(box: Box, size: tuple[int, int], transform: str) -> Box:
    """Map an upright source box ``[x0, y0, x1, y1)`` through ``transform`` (size = w, h)."""
    x0, y0, x1, y1 = box
    w, h = size
    if transform == "rot180":
        return (w - x1, h - y1, w - x0, h - y0)
    if transform == "rot90cw":
        return (h - y1, x0, h - y0, x1)
    if transform == "mirror":
        return (w - x1, y0, w - x0, y1)
    return box


def compose(board: Board, src_dir: Path) -> tuple[np.ndarray, dict[str, tuple[int, int]]]:
    """Compose one board; return the image and each photo's top-left corner on it."""
    bw, bh = BOARD_SIZE
    cols, rows = GRID
    cw, ch = bw // cols, bh // rows
    canvas = np.empty((bh, bw, 3), np.uint8)
    canvas[:] = BACKGROUND
    rng = np.random.default_rng(board.seed)
    cells = rng.permutation(cols * rows)
    origins: dict[str, tuple[int, int]] = {}
    for placed, cell in zip(board.photos, cells, strict=False):
        img = apply_transform(load_source(src_dir, placed.source), placed.transform)
        h, w = img.shape[:2]
        cx, cy = int(cell % cols) * cw, int(cell // cols) * ch
        slack_x, slack_y = cw - w - 2 * MAT - 40, ch - h - 2 * MAT - 40
        if slack_x < 0 or slack_y < 0:
            raise SystemExit(f"{placed.name} does not fit a {cw}x{ch} cell")
        x = cx + 20 + MAT + int(rng.integers(0, slack_x + 1))
        y = cy + 20 + MAT + int(rng.integers(0, slack_y + 1))
        canvas[y - MAT:y + h + MAT, x - MAT:x + w + MAT] = 255
        canvas[y:y + h, x:x + w] = img
        origins[placed.name] = (x, y)
    return canvas, origins


def record_json(rec: Rec, origin: tuple[int, int], size: tuple[int, int],
                transform: str) -> dict[str, Any]:
    """Return the JSON record for ``rec`` with its box mapped onto the board."""
    bx0, by0, bx1, by1 = map_box(rec.box, size, transform)
    ox, oy = origin
    ev: dict[str, Any] = {"image": 0, "box": [bx0 + ox, by0 + oy, bx1 + ox, by1 + oy],
                          "units": "px", "glyph_height": rec.glyph_height}
    if rec.text is not None:
        ev["text"] = rec.text
    if rec.op is not None:
        ev["op"] = rec.op
    answer: dict[str, Any] = {"value": rec.answer, "match": rec.match}
    if rec.tolerance is not None:
        answer["tolerance"] = rec.tolerance
    out: dict[str, Any] = {"id": rec.id, "images": [f"images/{rec.board}"],
                           "question": rec.question, "answer": answer}
    if rec.choices is not None:
        if rec.answer not in rec.choices:
            raise SystemExit(f"{rec.id}: the answer is not among the choices")
        out["choices"] = rec.choices
    out["evidence"] = [ev]
    out["domain"] = rec.domain
    out["level"] = rec.level
    out["metadata"] = {"photo": rec.photo, "transform": transform,
                       "source_box": list(rec.box)}
    return out


def build(out_dir: Path, src_dir: Path = DEMO_DIR / "sources") -> list[Path]:
    """Write the boards and ``records.jsonl`` under ``out_dir``; return the written paths."""
    (out_dir / "images").mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    placements: dict[str, dict[str, tuple[tuple[int, int], tuple[int, int], str]]] = {}
    for board in BOARDS:
        canvas, origins = compose(board, src_dir)
        ok, buf = cv2.imencode(".jpg", canvas, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY,
                                                cv2.IMWRITE_JPEG_OPTIMIZE, 1])
        if not ok:
            raise SystemExit(f"cannot encode {board.file}")
        path = out_dir / "images" / board.file
        path.write_bytes(buf.tobytes())
        written.append(path)
        info = {}
        for placed in board.photos:
            src = load_source(src_dir, placed.source)
            info[placed.name] = (origins[placed.name], (src.shape[1], src.shape[0]),
                                 placed.transform)
        placements[board.file] = info
    lines = []
    for rec in RECORDS:
        origin, size, transform = placements[rec.board][rec.photo]
        lines.append(json.dumps(record_json(rec, origin, size, transform), ensure_ascii=False))
    path = out_dir / "records.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    written.append(path)
    return written


DOCS_DIR = ROOT / "docs" / "images" / "records"
"""Where ``--docs`` writes the gallery images of :data:`DOCS_RECORD`."""

DOCS_RECORD = "tag-text"
"""The record the docs gallery renders (board in the agent's view, evidence crop upright)."""

VIEW_SIZE = 768
"""The agent's view: longest side in pixels (``m3gym.view.VIEW_SIZE``)."""


def build_docs(out_dir: Path = DOCS_DIR, demo_dir: Path = DEMO_DIR) -> list[Path]:
    """Render :data:`DOCS_RECORD` for the docs: the board as the agent sees it, the crop."""
    rows = [json.loads(line) for line in
            (demo_dir / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    rec = next(r for r in rows if r["id"] == DOCS_RECORD)
    board = cv2.imread(str(demo_dir / rec["images"][0]), cv2.IMREAD_COLOR)
    x0, y0, x1, y1 = rec["evidence"][0]["box"]
    scale = VIEW_SIZE / max(board.shape[:2])
    view = cv2.resize(board, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    pad = 6  # the box is ~16 px wide in the view: draw it a little larger to be seen
    cv2.rectangle(view, (int(x0 * scale) - pad, int(y0 * scale) - pad),
                  (int(x1 * scale) + pad, int(y1 * scale) + pad), (0, 0, 230), 2)
    m = 12
    crop = board[y0 - m:y1 + m, x0 - m:x1 + m]
    crop = cv2.rotate(crop, cv2.ROTATE_90_COUNTERCLOCKWISE)  # the record's op: rotate 90 CCW
    crop = cv2.resize(crop, None, fx=5, fy=5, interpolation=cv2.INTER_CUBIC)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, img, ext, params in (
            ("tag-text-view.jpg", view, ".jpg", [cv2.IMWRITE_JPEG_QUALITY, 90]),
            ("tag-text-crop.png", crop, ".png", [cv2.IMWRITE_PNG_COMPRESSION, 9])):
        ok, buf = cv2.imencode(ext, img, params)
        if not ok:
            raise SystemExit(f"cannot encode {name}")
        path = out_dir / name
        path.write_bytes(buf.tobytes())
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: build into ``--out`` (default: the committed demo folder)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEMO_DIR,
                        help="output folder (default: m3gym/data/records_demo)")
    parser.add_argument("--docs", action="store_true",
                        help="also render the docs gallery images (docs/images/records/)")
    args = parser.parse_args(argv)
    for path in build(args.out):
        print(path)
    if args.docs:
        for path in build_docs(demo_dir=args.out):
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
