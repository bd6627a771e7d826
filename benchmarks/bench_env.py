"""The environment as a user sees it: full ``env.step`` per tool, reset, memory, vector envs.

Not a test; prints medians of repeats (and the load average beside each section: the machine may
be shared). Sections:

* **step** — a whole ``M3BenchEnv.step`` with one visual call on a 1024² RGB image (parsing,
  validation, the op, provenance, reward tracking with the task's checkpoints, the view of the new
  image, ``info``), beside the bare OpenCV op it wraps and ``ToolRegistry.execute`` alone, all
  measured interleaved in one run; the overhead (step − bare op) and the ratio to the bare op
  are printed per tool. Targets: the bare op plus ≤ 0.3 ms for crop without zoom / flip /
  grayscale / invert / threshold, ≤ 1.3× the bare op for every other tool. With ``AMME_REPO``
  pointing at a checkout of Agentic-MME (its ``atomic_toolbox.py``; PNG read and write per call,
  as released) the peer's time per call and the speed ratio are added (goal: median ≥ 100×).
* **reset** — ``env.reset()`` with a fresh task per episode, per level (median and p90).
* **memory** — RSS and PSS (from ``/proc/self/smaps_rollup``) of fresh processes: after
  ``import m3gym``, after one env ran random episodes, per additional env, and the offline world.
* **vector** — ``gym.make_vec("M3Bench-L1", num_envs=2)`` sync vs async (Gymnasium's defaults),
  steps per second with a scripted two-call step.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_env.py [--repeats 40]
        [--sections step,reset,memory,vector] [--cv2-threads 1] [--markdown]
    python benchmarks/bench_env.py --smoke      # every section, a few repeats (CI: it runs)
    AMME_REPO=/path/to/Agentic-MME python benchmarks/bench_env.py --sections step
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tools import text_image  # noqa: E402

from m3gym.env import M3BenchEnv  # noqa: E402
from m3gym.spec import Task  # noqa: E402
from m3gym.state import ImageState  # noqa: E402
from m3gym.tasks.registry import make_task  # noqa: E402
from m3gym.tools import default_registry  # noqa: E402
from m3gym.tools.base import ToolContext  # noqa: E402
from m3gym.tools.visual import denoise_image, enhance_image, gaussian_blur  # noqa: E402

FAST_TOOLS = ("crop", "flip", "grayscale", "invert", "threshold")
"""Cheap tools: a full step must cost the bare op plus at most :data:`OVERHEAD_TARGET_MS`."""

OVERHEAD_TARGET_MS = 0.3
RATIO_TARGET = 1.3
PEER_TARGET = 100.0


def _gray(img: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)


def _hist_lut(img: np.ndarray) -> np.ndarray:
    luts = [np.cumsum(cv2.calcHist([img], [c], None, [256], [0, 256]).ravel())
            for c in range(3)]
    lut = np.stack([(255 * h / h[-1]).astype(np.uint8) for h in luts], axis=1)
    return cv2.LUT(img, lut.reshape(1, 256, 3))


def _rotate30(img: np.ndarray) -> np.ndarray:
    h, w = img.shape[:2]
    m = cv2.getRotationMatrix2D((w / 2, h / 2), 30, 1.0)
    c, s = abs(m[0, 0]), abs(m[0, 1])
    nw, nh = int(w * c + h * s + 1), int(w * s + h * c + 1)
    m[0, 2] += nw / 2 - w / 2
    m[1, 2] += nh / 2 - h / 2
    return cv2.warpAffine(img, m, (nw, nh), flags=cv2.INTER_LINEAR)


def _sobel(img: np.ndarray) -> np.ndarray:
    g = _gray(img)
    return cv2.convertScaleAbs(cv2.magnitude(cv2.Sobel(g, cv2.CV_32F, 1, 0),
                                             cv2.Sobel(g, cv2.CV_32F, 0, 1)))


# name: (tool, arguments, the bare OpenCV op a minimal implementation needs, peer tool, peer args)
CASES: dict[str, tuple[str, dict[str, Any], Callable[[np.ndarray], Any], str, dict[str, Any]]] = {
    "crop": ("crop", {"bbox_2d": [100, 150, 600, 700]},
             lambda im: np.ascontiguousarray(im[154:717, 102:615]), "crop",
             {"bbox_2d": [100, 150, 600, 700]}),
    "crop (zoom 2)": ("crop", {"bbox_2d": [400, 400, 600, 600], "zoom_scale": 2.0},
                      lambda im: cv2.resize(im[409:615, 409:615], (412, 412),
                                            interpolation=cv2.INTER_LANCZOS4),
                      "crop", {"bbox_2d": [400, 400, 600, 600], "zoom_scale": 2.0}),
    "rotate 90": ("rotate", {"angle": 90},
                  lambda im: cv2.rotate(im, cv2.ROTATE_90_COUNTERCLOCKWISE), "rotate",
                  {"angle": 90}),
    "rotate 30": ("rotate", {"angle": 30}, _rotate30, "rotate", {"angle": 30}),
    "flip": ("flip", {}, lambda im: cv2.flip(im, 1), "flip", {}),
    "resize 0.5": ("resize", {"scale": 0.5},
                   lambda im: cv2.resize(im, (512, 512), interpolation=cv2.INTER_AREA),
                   "resize", {"scale": 0.5}),
    "grayscale": ("grayscale", {}, _gray, "grayscale", {}),
    "autocontrast": ("autocontrast", {"cutoff": 1}, _hist_lut, "autocontrast", {"cutoff": 1}),
    "invert": ("invert", {}, cv2.bitwise_not, "invert", {}),
    "equalize": ("equalize", {}, _hist_lut, "equalize", {}),
    "threshold": ("threshold", {},
                  lambda im: cv2.threshold(_gray(im), 128, 255, cv2.THRESH_BINARY)[1],
                  "threshold", {}),
    "blur": ("blur", {}, lambda im: gaussian_blur(im, 2.0), "blur", {}),
    "sharpen": ("sharpen", {},
                lambda im: cv2.filter2D(im, -1, np.array([[-1, -1, -1], [-1, 9, -1],
                                                          [-1, -1, -1]], np.float32)),
                "sharpen", {}),
    "denoise": ("denoise", {}, lambda im: denoise_image(im, 10), "denoise", {}),
    "edge_detect": ("edge_detect", {}, lambda im: cv2.Canny(_gray(im), 100, 200),
                    "edge_detect", {}),
    "edge_detect sobel": ("edge_detect", {"method": "sobel"}, _sobel, "edge_detect",
                          {"method": "sobel"}),
    "enhance": ("enhance", {"brightness": 1.2, "contrast": 1.3, "sharpness": 2.0},
                lambda im: enhance_image(im, 1.2, 1.3, 2.0), "enhance",
                {"brightness": 1.2, "contrast": 1.3, "sharpness": 2.0}),
}
"""The bare op of blur, denoise and enhance is m3gym's own OpenCV pipeline for them (the op
without the env); the others are the OpenCV calls themselves."""


def load_note() -> str:
    """Return the 1-minute load average and the CPU count, for the record."""
    return f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"


def bench_task(image: np.ndarray) -> Task:
    """A real L1 task (faint_text, its checkpoints and evidence) with ``image`` as Image 0."""
    return dataclasses.replace(make_task("faint_text", 1), images=(image,))


def load_peer() -> types.ModuleType | None:
    """Import Agentic-MME's ``atomic_toolbox`` from ``$AMME_REPO`` (or ``None``)."""
    repo = os.environ.get("AMME_REPO")
    if not repo:
        return None
    if "common_utils" not in sys.modules:  # the toolbox imports one helper from its repo
        shim = types.ModuleType("common_utils")
        shim.ensure_dir = lambda p: Path(p).mkdir(parents=True, exist_ok=True)  # type: ignore
        sys.modules["common_utils"] = shim
    sys.path.insert(0, repo)
    import atomic_toolbox  # type: ignore[import-not-found]

    return atomic_toolbox


def bench_steps(repeats: int, size: int) -> list[dict[str, Any]]:
    """Return one row per case: bare op, registry.execute and env.step medians (ms)."""
    image = text_image(size)
    image.setflags(write=False)
    task = bench_task(image)
    env = M3BenchEnv(family="faint_text")
    registry = default_registry()
    peer = load_peer()
    tmp = tempfile.TemporaryDirectory(prefix="bench-env-")
    png = Path(tmp.name) / "orig.png"
    cv2.imwrite(str(png), cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    rows = []
    clock = time.perf_counter
    for name, (tool, args, bare, peer_tool, peer_args) in CASES.items():
        call = {"name": tool, "arguments": {"image_index": 0, **args}}
        t_bare, t_exec, t_step, t_peer = [], [], [], []
        for i in range(repeats + 2):  # interleaved; the first two warm caches
            t0 = clock()
            bare(image)
            t1 = clock()
            state = ImageState()
            state.add_root(image)
            ctx = ToolContext(state=state, visible_images=1)
            t2 = clock()
            record = registry.execute(ctx, tool, call["arguments"], step=0, call_id="b")
            t3 = clock()
            env.reset(seed=0, options={"task": task})
            t4 = clock()
            _, _, _, _, info = env.step(call)
            t5 = clock()
            if not (record.ok and info["calls"][0]["ok"]):
                raise RuntimeError(f"{name}: {record.error or info['calls'][0]['error']}")
            if peer is not None and i < max(3, repeats // 8) + 2:
                st = peer.AtomicState(orig_path=png, processed_dir=Path(tmp.name) / "out")
                t6 = clock()
                getattr(peer, f"tool_{peer_tool}")(st, 0, **peer_args)
                t_peer.append(clock() - t6)
            if i >= 2:
                t_bare.append(t1 - t0)
                t_exec.append(t3 - t2)
                t_step.append(t5 - t4)
        ms = {k: statistics.median(v) * 1e3 if v else None
              for k, v in (("bare", t_bare), ("exec", t_exec), ("step", t_step),
                           ("peer", t_peer[2:] or t_peer))}
        fast = tool in FAST_TOOLS and "zoom" not in name
        over = ms["step"] - ms["bare"]
        ok = over <= OVERHEAD_TARGET_MS if fast else ms["step"] <= RATIO_TARGET * ms["bare"]
        rows.append({"case": name, **ms, "over": over, "ratio": ms["step"] / ms["bare"],
                     "target": (f"bare + {OVERHEAD_TARGET_MS:g} ms" if fast
                                else f"<= {RATIO_TARGET:g}x bare"),
                     "ok": ok})
    tmp.cleanup()
    return rows


def print_steps(rows: list[dict[str, Any]], markdown: bool) -> None:
    """Print the step table (plain or as a Markdown table)."""
    peer = any(r["peer"] is not None for r in rows)
    if markdown:
        head = ("| tool | bare op ms | execute ms | env.step ms | step − bare ms | step / bare "
                "| target |")
        head += " peer ms | peer / step |" if peer else ""
        print(head)
        print("|---" * (head.count("|") - 1) + "|")
        for r in rows:
            line = (f"| {r['case']} | {r['bare']:.2f} | {r['exec']:.2f} | {r['step']:.2f} | "
                    f"{r['over']:+.2f} | {r['ratio']:.2f}x | {r['target']} "
                    f"{'ok' if r['ok'] else '**missed**'} |")
            if peer:
                line += f" {r['peer']:.0f} | {r['peer'] / r['step']:.0f}x |"
            print(line)
    else:
        print(f"{'tool':<20}{'bare ms':>9}{'exec ms':>9}{'step ms':>9}{'step-bare':>10}"
              f"{'step/bare':>10}{'peer ms':>9}{'peer/step':>10}  target")
        for r in rows:
            peer_ms = f"{r['peer']:9.1f}{r['peer'] / r['step']:9.0f}x" if r["peer"] else " " * 19
            print(f"{r['case']:<20}{r['bare']:9.2f}{r['exec']:9.2f}{r['step']:9.2f}"
                  f"{r['over']:+10.2f}{r['ratio']:9.2f}x{peer_ms}  {r['target']} "
                  f"{'ok' if r['ok'] else 'MISSED'}")
    missed = [r["case"] for r in rows if not r["ok"]]
    print(f"targets met: {len(rows) - len(missed)} of {len(rows)}"
          + (f" (missed: {', '.join(missed)})" if missed else ""))
    if peer:
        ratios = sorted(r["peer"] / r["step"] for r in rows)
        print(f"peer / m3gym full step: min {ratios[0]:.0f}x, median "
              f"{statistics.median(ratios):.0f}x (goal: median >= {PEER_TARGET:g}x)")


def bench_resets(episodes: int) -> list[tuple[str, float, float]]:
    """Return ``(level, median ms, p90 ms)`` of ``env.reset()`` with fresh tasks."""
    out = []
    for level in (1, 2, 3):
        env = M3BenchEnv(level=level)
        env.reset(seed=0)
        times = []
        for k in range(episodes):
            t0 = time.perf_counter()
            env.reset(seed=1000 + k)
            times.append(time.perf_counter() - t0)
        times.sort()
        out.append((f"L{level}", statistics.median(times) * 1e3,
                    times[int(0.9 * (len(times) - 1))] * 1e3))
    return out


MEMORY_CHILD = r"""
import gc, json, os, sys
import numpy as np
def mem():
    out = {}
    with open("/proc/self/smaps_rollup") as fh:
        for line in fh:
            key = line.split(":")[0]
            if key in ("Rss", "Pss", "Anonymous"):
                out[key] = int(line.split()[1]) / 1024
    return out["Rss"], out["Pss"], out["Anonymous"]
out = {"start": mem()}
import m3gym
from m3gym.env import M3BenchEnv
out["import"] = mem()
level, n_envs, episodes, world = (int(a) for a in sys.argv[1:5])
if world:
    from m3gym.web import build_world
    w = build_world(0, "train"); w.search("museum", 5); w.logo(w.entities_of_kind("company")[0])
    out["world"] = mem()
envs = []
for i in range(n_envs):
    env = M3BenchEnv(level=level)
    rng = np.random.default_rng(i)
    for ep in range(episodes):
        env.reset(seed=100 * i + ep)
        done = False
        while not done:
            a = env.action_space.sample() if rng.random() < 0.8 else {"name": "answer",
                "arguments": {"text": "x"}}
            _, _, term, trunc, _ = env.step(a)
            done = term or trunc
    envs.append(env)
    gc.collect()
    out[f"envs{i + 1}"] = mem()
print(json.dumps(out))
"""


def memory_child(level: int, n_envs: int, episodes: int, world: bool) -> dict[str, Any]:
    """Run :data:`MEMORY_CHILD` in a fresh interpreter; return its RSS/PSS checkpoints (MB)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    res = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(level), str(n_envs),
                          str(episodes), str(int(world))], capture_output=True, text=True,
                         env=env, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def bench_memory(n_envs: int, episodes: int) -> None:
    """Print RSS / PSS / private anonymous memory of fresh processes (MB).

    The world's logos and search index are memory-mapped from the machine's cache
    (:mod:`m3gym.web.store`): shared file pages count in RSS (and in PSS divided among the
    processes mapping them), not in a process's private anonymous memory.
    """
    print(f"\nMemory (fresh processes; MB as RSS / PSS / private anonymous; {load_note()})")
    base = memory_child(2, 0, 0, True)
    start, imp, world = base["start"], base["import"], base["world"]

    def fmt(a: list[float], b: list[float]) -> str:
        return " / ".join(f"{x - y:+.0f}" for x, y in zip(a, b))

    print(f"  interpreter: {start[0]:.0f} / {start[1]:.0f} / {start[2]:.0f}; import m3gym: "
          f"{fmt(imp, start)}")
    print(f"  offline world (build_world(0, 'train'), a search, the logo store mapped): "
          f"{fmt(world, imp)}")
    for level in (2, 3):
        res = memory_child(level, n_envs, episodes, False)
        one, last = res["envs1"], res[f"envs{n_envs}"]
        per = [(x - y) / max(1, n_envs - 1) for x, y in zip(last, one)]
        print(f"  L{level}: first env, {episodes} random episodes (world included): "
              f"{fmt(one, res['import'])}; each additional env in the process: "
              + " / ".join(f"{v:+.1f}" for v in per) + " (goal <= 64)")


def bench_vector(steps: int) -> None:
    """Print sync vs async vector throughput (2 envs, Gymnasium defaults)."""
    import gymnasium as gym

    import m3gym  # noqa: F401

    print(f"\nVector envs, M3Bench-L1, 2 envs, Gymnasium defaults ({load_note()})")
    action = ({"name": "grayscale", "arguments": {"image_index": 0}},
              {"name": "flip", "arguments": {"image_index": 0}})
    rates = {}
    modes = {"sync": ("sync", {}), "async": ("async", {}),
             "async, shared_memory=False": ("async", {"vector_kwargs": {"shared_memory": False}})}
    for label, (mode, kwargs) in modes.items():
        env = gym.make_vec("M3Bench-L1", num_envs=2, vectorization_mode=mode, **kwargs)
        env.reset(seed=[0, 1])
        for _ in range(5):
            env.step(action)
        t0 = time.perf_counter()
        for _ in range(steps):
            env.step(action)
        rates[label] = 2 * steps / (time.perf_counter() - t0)
        env.close()
        print(f"  {label:<28} {rates[label]:8.0f} env-steps/s")
    print(f"  async / sync: {rates['async'] / rates['sync']:.2f}x on {os.cpu_count()} CPUs "
          "(steps of two visual calls on Image 0; episodes truncate after 15 calls and "
          "auto-reset with a fresh task)")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--resets", type=int, default=100)
    parser.add_argument("--envs", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--vector-steps", type=int, default=300)
    parser.add_argument("--sections", default="step,reset,memory,vector")
    parser.add_argument("--markdown", action="store_true", help="step table as Markdown")
    parser.add_argument("--cv2-threads", type=int, default=None,
                        help="cv2.setNumThreads for this run (default: OpenCV's own)")
    parser.add_argument("--smoke", action="store_true",
                        help="every section with a few repeats (CI: it runs, no numbers)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeats, args.resets = 2, 3
        args.envs, args.episodes, args.vector_steps = 2, 1, 5
    if args.cv2_threads is not None:
        cv2.setNumThreads(args.cv2_threads)
    sections = set(args.sections.split(","))
    cv2.setRNGSeed(0)
    if "step" in sections:
        print(f"Full env.step with one visual call on a {args.size}² RGB image, medians of "
              f"{args.repeats} ({load_note()}; cv2 threads {cv2.getNumThreads()})")
        rows = bench_steps(args.repeats, args.size)
        print_steps(rows, args.markdown)
        print(f"  (measured to {load_note()})")
    if "reset" in sections:
        print(f"\nenv.reset() with a fresh task, {args.resets} episodes per level ({load_note()})")
        for level, med, p90 in bench_resets(args.resets):
            print(f"  {level}: median {med:6.2f} ms, p90 {p90:6.2f} ms (goal median <= 10 ms)")
    if "memory" in sections:
        bench_memory(args.envs, args.episodes)
    if "vector" in sections:
        bench_vector(args.vector_steps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
