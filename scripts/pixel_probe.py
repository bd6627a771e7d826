"""Which OpenCV calls draw different bytes under this install than under another.

Usage: ``python scripts/pixel_probe.py > here.json`` in each venv, then
``python scripts/pixel_probe.py --diff a.json b.json`` lists the calls whose outputs differ.
Every call runs on the same fixed inputs (a seeded random image); the output is one short
SHA-256 per call. This is how docs/evaluation.md's "Frozen tasks" found what moved between
OpenCV 4.8, 4.14 and 5.0 (``warpAffine``, ``warpPerspective``, ``remap``, ``putText``; float32
``resize`` and ``GaussianBlur``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import cv2
import numpy as np

INTERPOLATIONS = {"NEAREST": cv2.INTER_NEAREST, "LINEAR": cv2.INTER_LINEAR,
                  "CUBIC": cv2.INTER_CUBIC, "AREA": cv2.INTER_AREA,
                  "LANCZOS4": cv2.INTER_LANCZOS4}
"""The interpolations every resampling call is probed with."""


def digest(array: np.ndarray) -> str:
    """Return a short SHA-256 of an array's bytes."""
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:10]


def _resampling(img: np.ndarray, f32: np.ndarray) -> dict[str, str]:
    rot = cv2.getRotationMatrix2D((150, 120), 17.3, 1.1)
    quad = cv2.getPerspectiveTransform(
        np.float32([[0, 0], [396, 0], [396, 300], [0, 300]]),
        np.float32([[10, 5], [380, 20], [390, 290], [3, 280]]))
    out = {}
    for name, flag in INTERPOLATIONS.items():
        out[f"resize_down_{name}"] = digest(cv2.resize(img, (123, 97), interpolation=flag))
        out[f"resize_up_{name}"] = digest(cv2.resize(img, (811, 605), interpolation=flag))
        out[f"resize_f32_{name}"] = digest(cv2.resize(f32, (123, 97), interpolation=flag))
        out[f"warpAffine_{name}"] = digest(cv2.warpAffine(
            img, rot, (400, 300), flags=flag, borderMode=cv2.BORDER_REPLICATE))
        out[f"warpPerspective_{name}"] = digest(cv2.warpPerspective(img, quad, (400, 300),
                                                                    flags=flag))
    xs, ys = np.meshgrid(np.linspace(0, 396, 300, dtype=np.float32),
                         np.linspace(0, 300, 200, dtype=np.float32))
    out["remap"] = digest(cv2.remap(img, xs, ys, cv2.INTER_LINEAR))
    out["pyrDown"] = digest(cv2.pyrDown(img))
    return out


def _filters(img: np.ndarray, f32: np.ndarray, gray: np.ndarray) -> dict[str, str]:
    ok, jpeg = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 70])
    ok2, png = cv2.imencode(".png", img)
    assert ok and ok2
    return {
        "gauss": digest(cv2.GaussianBlur(img, (0, 0), 2.3)),
        "gauss_f32": digest(cv2.GaussianBlur(f32, (0, 0), 2.3)),
        "gauss_k5": digest(cv2.GaussianBlur(img, (5, 5), 0)),
        "blur": digest(cv2.blur(img, (5, 5))),
        "median": digest(cv2.medianBlur(img, 5)),
        "filter2D": digest(cv2.filter2D(img, -1, np.ones((3, 3), np.float32) / 9)),
        "bilateral": digest(cv2.bilateralFilter(img, 5, 30, 30)),
        "denoise": digest(cv2.fastNlMeansDenoisingColored(img[:100, :100].copy(), None,
                                                          10, 10, 7, 21)),
        "cvt_gray": digest(gray),
        "cvt_hsv": digest(cv2.cvtColor(img, cv2.COLOR_RGB2HSV)),
        "cvt_lab": digest(cv2.cvtColor(img, cv2.COLOR_RGB2LAB)),
        "jpeg_encode": digest(jpeg),
        "jpeg_decode": digest(cv2.imdecode(jpeg, cv2.IMREAD_COLOR)),
        "png_encode": digest(png),
        "addWeighted": digest(cv2.addWeighted(img, 0.3, img[::-1].copy(), 0.7, 3)),
        "multiply_f32": digest(cv2.multiply(f32, f32 * 0.5 + 0.2)),
        "canny": digest(cv2.Canny(gray, 100, 200)),
        "sobel": digest(cv2.Sobel(gray, cv2.CV_32F, 1, 0, ksize=3)),
        "equalize": digest(cv2.equalizeHist(gray)),
        "threshold": digest(cv2.threshold(gray, 128, 255, cv2.THRESH_BINARY)[1]),
        "dilate": digest(cv2.dilate(gray, np.ones((3, 3), np.uint8))),
    }


def _drawing() -> dict[str, str]:
    poly = np.array([[10, 10], [150, 30], [120, 180], [20, 120]], np.int32)
    colour = (200, 100, 50)
    calls = {
        "line": lambda c, t: cv2.line(c, (3, 7), (190, 150), colour, 3, t),
        "circle_fill": lambda c, t: cv2.circle(c, (100, 90), 43, colour, -1, t),
        "circle": lambda c, t: cv2.circle(c, (100, 90), 43, colour, 2, t),
        "ellipse": lambda c, t: cv2.ellipse(c, (100, 90), (43, 20), 15, 0, 270, colour, 2, t),
        "fillPoly": lambda c, t: cv2.fillPoly(c, [poly], colour, t),
        "polylines": lambda c, t: cv2.polylines(c, [poly], True, colour, 2, t),
        "putText": lambda c, t: cv2.putText(c, "Ab12", (10, 100), cv2.FONT_HERSHEY_SIMPLEX,
                                            1.3, (255, 255, 255), 2, t),
        "rectangle": lambda c, t: cv2.rectangle(c, (10, 10), (150, 120), colour, 2, t),
    }
    out = {}
    for name, draw in calls.items():
        for line_type, suffix in ((cv2.LINE_8, "8"), (cv2.LINE_AA, "AA")):
            canvas = np.zeros((200, 200, 3), np.uint8)
            draw(canvas, line_type)
            out[f"{name}_{suffix}"] = digest(canvas)
    return out


def probe() -> dict[str, str]:
    """Return ``call name -> output digest`` for the OpenCV calls m3gym draws tasks with."""
    img = np.random.default_rng(0).integers(0, 256, (301, 397, 3), dtype=np.uint8)
    f32 = img.astype(np.float32) / 255
    gray = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    return {"opencv": cv2.__version__, "numpy": np.__version__, **_resampling(img, f32),
            **_filters(img, f32, gray), **_drawing()}


def main(argv: list[str] | None = None) -> int:
    """Print this install's digests, or (``--diff A B``) the calls whose digests differ."""
    parser = argparse.ArgumentParser(description="OpenCV output digests of this install")
    parser.add_argument("--diff", nargs=2, metavar=("A", "B"), help="two saved outputs")
    args = parser.parse_args(argv)
    if not args.diff:
        print(json.dumps(probe(), indent=1))
        return 0
    a, b = (json.loads(Path(p).read_text()) for p in args.diff)
    moved = [k for k in a if k in b and a[k] != b[k] and k not in ("opencv", "numpy")]
    print("\n".join(moved) or "no call differs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
