"""Benchmark the image tools on a 1024x1024 RGB image through ``ToolRegistry.execute``.

Prints the median (and p90) step time per tool over ``--repeats`` runs (validation, the op and
the state append included), then the denoiser against OpenCV's NL-means: time, speed ratio and
PSNR gain on a noisy synthetic text image for Gaussian, salt-and-pepper and mixed noise.

    python benchmarks/bench_tools.py [--repeats 40] [--size 1024]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import cv2
import numpy as np

from m3gym.state import ImageState
from m3gym.tools.base import ToolContext
from m3gym.tools.registry import ToolRegistry
from m3gym.tools.visual import VISUAL_TOOLS, denoise_image

CALLS: dict[str, dict] = {
    "crop": {"bbox_2d": [100, 150, 600, 700]},
    "crop(zoom 2)": {"bbox_2d": [400, 400, 600, 600], "zoom_scale": 2.0},
    "rotate": {"angle": 90},
    "rotate(30)": {"angle": 30},
    "flip": {},
    "resize": {"scale": 0.5},
    "grayscale": {},
    "autocontrast": {"cutoff": 1},
    "invert": {},
    "equalize": {},
    "threshold": {},
    "blur": {},
    "blur(r=50)": {"radius": 50},
    "sharpen": {},
    "denoise": {},
    "edge_detect": {},
    "edge_detect(sobel)": {"method": "sobel"},
    "enhance": {"brightness": 1.2, "contrast": 1.3, "sharpness": 2.0},
}
FAST_TARGET_MS = {"crop": 1.5, "flip": 1.5, "grayscale": 1.5, "threshold": 1.5}
TARGET_MS = 25.0


def text_image(size: int) -> np.ndarray:
    """A deterministic document-like RGB test image: coloured background, text, shapes."""
    img = np.full((size, size, 3), (235, 225, 200), np.uint8)
    lines = size // 36
    for i in range(lines):
        cv2.putText(img, f"Invoice {i:03d} total 4{i}.95 EUR code XK-{i * 37}",
                    (20, 30 + i * 35), cv2.FONT_HERSHEY_SIMPLEX, 0.5 + 0.4 * (i % 3),
                    (20 + 5 * i % 200, 40, 90), 1 + (i % 2), cv2.LINE_AA)
    cv2.rectangle(img, (size * 6 // 10, size * 6 // 10), (size * 9 // 10, size * 9 // 10),
                  (200, 60, 60), -1)
    cv2.circle(img, (size // 4, size * 3 // 4), size // 8, (40, 160, 80), -1)
    return img


def time_tool(registry: ToolRegistry, image: np.ndarray, name: str, args: dict,
              repeats: int) -> list[float]:
    """Return per-call seconds of ``registry.execute`` on a fresh one-image state."""
    tool = name.split("(")[0]
    times = []
    for i in range(repeats + 2):
        state = ImageState()
        state.add_root(image)
        ctx = ToolContext(state=state, visible_images=1)
        start = time.perf_counter()
        record = registry.execute(ctx, tool, {"image_index": 0, **args}, step=0, call_id="b")
        elapsed = time.perf_counter() - start
        if not record.ok:
            raise RuntimeError(f"{name}: {record.error}")
        if i >= 2:  # first two calls warm caches
            times.append(elapsed)
    return times


def noisy_versions(clean: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Gaussian sigma 10 and 20, 5 % salt-and-pepper, and Gaussian 15 + 2 % salt-and-pepper."""
    def gauss(img: np.ndarray, sigma: float) -> np.ndarray:
        return np.clip(img + rng.normal(0, sigma, img.shape), 0, 255).astype(np.uint8)

    def salt_pepper(img: np.ndarray, p: float) -> np.ndarray:
        out = img.copy()
        u = rng.random(img.shape[:2])
        out[u < p / 2] = 0
        out[u > 1 - p / 2] = 255
        return out

    return {"gauss10": gauss(clean, 10), "gauss20": gauss(clean, 20),
            "s&p5%": salt_pepper(clean, 0.05),
            "gauss15+s&p2%": salt_pepper(gauss(clean, 15), 0.02)}


def bench_denoise(clean: np.ndarray, repeats: int) -> None:
    """Print NL-means vs m3gym denoise: speed and PSNR gain per noise type."""
    noisy = noisy_versions(clean, np.random.default_rng(0))
    sample = noisy["gauss15+s&p2%"]
    nlm_times = []
    for _ in range(3):
        start = time.perf_counter()
        cv2.fastNlMeansDenoisingColored(sample, None, 10, 10, 7, 21)
        nlm_times.append(time.perf_counter() - start)
    ours_times = []
    for _ in range(repeats):
        start = time.perf_counter()
        denoise_image(sample, 10)
        ours_times.append(time.perf_counter() - start)
    nlm, ours = statistics.median(nlm_times), statistics.median(ours_times)
    print(f"\nDenoise on {clean.shape[1]}x{clean.shape[0]} RGB (strength / h = 10)")
    print(f"  NL-means (fastNlMeansDenoisingColored h=10, 7, 21): {nlm * 1e3:8.1f} ms "
          "(median of 3)")
    print(f"  m3gym denoise (impulse removal + bilateral):    {ours * 1e3:8.1f} ms "
          f"(median of {repeats})")
    print(f"  speed ratio: {nlm / ours:.0f}x")
    print(f"  {'noise':<16}{'noisy PSNR':>12}{'NL-means':>12}{'m3gym':>12}")
    for name, img in noisy.items():
        base = cv2.PSNR(img, clean)
        p_nlm = cv2.PSNR(cv2.fastNlMeansDenoisingColored(img, None, 10, 10, 7, 21), clean)
        p_ours = cv2.PSNR(denoise_image(img, 10), clean)
        print(f"  {name:<16}{base:>10.2f}dB{p_nlm - base:>+10.2f}dB{p_ours - base:>+10.2f}dB")


def main() -> None:
    """Run the benchmark and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--size", type=int, default=1024)
    opts = parser.parse_args()
    cv2.setRNGSeed(0)
    image = text_image(opts.size)
    image.setflags(write=False)
    registry = ToolRegistry(VISUAL_TOOLS)
    print(f"Per-call time of ToolRegistry.execute on a {opts.size}x{opts.size} RGB image "
          f"(median of {opts.repeats}; cv2 threads: {cv2.getNumThreads()})")
    print(f"  load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"  {'tool':<20}{'median ms':>10}{'min ms':>10}{'p90 ms':>10}{'target':>9}  ok")
    failures = []
    for name, args in CALLS.items():
        times = sorted(time_tool(registry, image, name, args, opts.repeats))
        med = statistics.median(times) * 1e3
        p90 = times[int(0.9 * (len(times) - 1))] * 1e3
        target = FAST_TARGET_MS.get(name, TARGET_MS)
        ok = med <= target
        if not ok:
            failures.append(name)
        print(f"  {name:<20}{med:>10.3f}{times[0] * 1e3:>10.3f}{p90:>10.3f}{target:>9.1f}  "
              f"{'yes' if ok else 'NO'}")
    bench_denoise(image, opts.repeats)
    print("\nall targets met" if not failures else f"\nmissed targets: {', '.join(failures)}")


if __name__ == "__main__":
    main()
