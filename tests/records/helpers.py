"""Records written for the records tests: a cluttered image with a code on it, a valid record, JSONL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np

W, H = 1600, 1200
FONT = cv2.FONT_HERSHEY_SIMPLEX


def text_image(path: Path, text: str, at: tuple[int, int], scale: float = 0.45,
               quarter: int = 0, seed: int = 0) -> list[int]:
    """Write a W x H image with ``text`` (turned ``quarter`` x 90° ccw) at ``at``; return its box."""
    rng = np.random.default_rng(seed)
    img = np.full((H, W, 3), 225, np.uint8)
    for _ in range(12):  # clutter
        x, y = int(rng.integers(0, W - 200)), int(rng.integers(0, H - 200))
        cv2.rectangle(img, (x, y), (x + 120, y + 80), tuple(int(v) for v in
                      rng.integers(60, 200, 3)), -1)
    (tw, th), base = cv2.getTextSize(text, FONT, scale, 1)
    patch = np.full((th + base + 4, tw + 4, 3), 250, np.uint8)
    cv2.putText(patch, text, (2, th + 2), FONT, scale, (0, 0, 0), 1, cv2.LINE_AA)
    patch = np.ascontiguousarray(np.rot90(patch, quarter))
    x, y = at
    img[y:y + patch.shape[0], x:x + patch.shape[1]] = patch
    cv2.imwrite(str(path), img)
    return [x, y, x + patch.shape[1], y + patch.shape[0]]


def base_record(tmp: Path, rid: str = "r1", **over: Any) -> dict[str, Any]:
    """Return a valid record (its image written into ``tmp``) with ``over`` merged in."""
    name = f"{rid}.png"
    box = text_image(tmp / name, "QX-4817", (700, 500), seed=len(rid))
    rec = {"id": rid, "images": [name], "question": "What code is printed on the tag?",
           "answer": {"value": "QX-4817", "match": "choice"},
           "choices": ["QX-4817", "QX-4811", "PL-2098", "ZK-5567"],
           "evidence": [{"image": 0, "box": box, "units": "px"}]}
    rec.update(over)
    return rec


def write_jsonl(path: Path, records: list[Any]) -> Path:
    """Write ``records`` as JSONL (strings are written as raw lines)."""
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n")
    return path
