"""What ``env.step`` returns stays the same while its hot path is made cheaper.

Three checks for fixed seeds and scripted actions on the env, a family env and the discrete
wrapper:

* **recorded digests** — every step's observation (text, image indices, image digests), reward
  (exact ``repr``), flags and info (as canonical JSON) hashed per episode and compared with the
  recorded digests (:data:`DIGESTS`). Like the frozen split, they hold under every version that
  pyproject.toml allows (the same under its newest and its oldest, constraints/oldest.txt), so
  the comparison runs wherever the core dependencies are inside those bounds and skips, naming
  the library, only where one is not. Regenerate with ``python tests/test_step_equivalence.py``
  only when a change is meant to alter what a step returns.
* **views** — each observed image equals the view computed afresh from the state (the parent's
  view for ops that commute with the downscale, else the full image downscaled), read-only and
  C-contiguous, whatever was cached before.
* **observe_images** — an env that skips the views returns the very same text, rewards and infos.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import m3gym  # noqa: F401  (registers the ids)
from m3gym.env import M3BenchEnv
from m3gym.fingerprint import pixel_library_versions
from m3gym.tasks.registry import make_task
from m3gym.view import derived_view, to_view, view_shape
from m3gym.wrappers import CLASSIC_DISCRETE_ID

CHEAP_SCRIPT: list[Any] = [
    {"name": "flip", "arguments": {"image_index": 0}},
    {"name": "grayscale", "arguments": {"image_index": 0}},
    {"name": "invert", "arguments": {"image_index": 0}},
    {"name": "threshold", "arguments": {"image_index": 0}},
    {"name": "crop", "arguments": {"image_index": 0, "bbox_2d": [100, 100, 600, 700]}},
    {"name": "rotate", "arguments": {"image_index": 0, "angle": 90}},
    [{"name": "flip", "arguments": {"image_index": 1, "direction": "vertical"}},
     {"name": "resize", "arguments": {"image_index": 0, "scale": 0.5}}],
    [{"name": "invert", "arguments": {"image_index": 2}},
     {"name": "grayscale", "arguments": {"image_index": 3}}],
    {"name": "autocontrast", "arguments": {"image_index": 0, "cutoff": 1}},
    {"name": "answer", "arguments": {"text": "wrong"}},
]
"""Cheap ops (and parallel calls, chains of derived views), then a wrong answer."""


def image_digest(array: np.ndarray) -> str:
    """Return dtype, shape and a hash of the bytes of an image."""
    a = np.ascontiguousarray(array)
    return f"{a.dtype}{a.shape}:{hashlib.sha1(a.tobytes()).hexdigest()[:16]}"


def canonical(value: Any) -> str:
    """Return canonical JSON of an info or action (arrays by digest, floats by ``repr``)."""
    def encode(x: Any) -> Any:
        if isinstance(x, np.ndarray):
            return image_digest(x)
        if isinstance(x, np.generic):
            return x.item()
        return repr(x)

    return json.dumps(value, sort_keys=True, default=encode)


def obs_record(obs: Any) -> Any:
    """Return a JSON-able record of an observation (images by digest)."""
    if not isinstance(obs, dict):
        return image_digest(obs)
    out: dict[str, Any] = {}
    for key, value in obs.items():
        if key == "images":
            out[key] = [image_digest(a) for a in value]
        elif isinstance(value, np.ndarray):
            out[key] = image_digest(value)
        else:
            out[key] = value
    return out


def script_of(task: Any) -> list[Any]:
    """Return the task's reference calls step by step, then its correct answer."""
    steps: list[Any] = [[{"name": c.name, "arguments": dict(c.arguments)} for c in step]
                        for step in task.reference]
    return [*steps, {"name": "answer", "arguments": {"text": str(task.answer)}}]


def run_env(env: gym.Env, seed: int, script: str, task: Any = None) -> list[Any]:
    """Run one episode; return one record per reset/step (observation, reward, flags, info)."""
    options = {"task": task} if task is not None else None
    obs, info = env.reset(seed=seed, options=options)
    records: list[Any] = [["reset", obs_record(obs), canonical(info)]]
    base = env.unwrapped
    actions = CHEAP_SCRIPT if script == "cheap" else script_of(base.task)
    for action in actions:
        obs, reward, term, trunc, info = env.step(action)
        records.append(["step", obs_record(obs), repr(float(reward)), term, trunc,
                        canonical(info)])
        if term or trunc:
            break
    return records


def run_discrete(seed: int, mode: str) -> list[Any]:
    """Run one episode of the classic discrete env: expert or random masked-valid actions."""
    env = gym.make(CLASSIC_DISCRETE_ID, disable_env_checker=True)
    wrapper: Any = env
    while not hasattr(wrapper, "action_masks"):
        wrapper = wrapper.env
    obs, info = env.reset(seed=seed)
    records: list[Any] = [["reset", obs_record(obs), canonical(info)]]
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(env.action_space.nvec)])
    done = False
    while not done:
        if mode == "expert":
            action = wrapper.expert_action()
        else:
            mask = wrapper.action_masks()
            action = [int(rng.choice(np.flatnonzero(mask[offsets[d]:offsets[d + 1]])))
                      for d in range(len(offsets) - 1)]
        obs, reward, term, trunc, info = env.step(action)
        records.append(["step", obs_record(obs), repr(float(reward)), term, trunc,
                        canonical(info)])
        done = term or trunc
    env.close()
    return records


def faint_text_task() -> Any:
    """A real L1 task (faint_text: its checkpoints and evidence) at seed 1."""
    return make_task("faint_text", 1)


EPISODES: dict[str, Any] = {
    "classic seed 0 reference": lambda: run_env(gym.make("M3Bench-Classic-v4"), 0, "reference"),
    "classic seed 1 reference": lambda: run_env(gym.make("M3Bench-Classic-v4"), 1, "reference"),
    "L1 seed 3 reference, paper reward": lambda: run_env(
        gym.make("M3Bench-L1-v4", reward="paper"), 3, "reference"),
    "L2 seed 5 reference, process reward": lambda: run_env(
        gym.make("M3Bench-L2-v4", reward="process"), 5, "reference"),
    "faint_text cheap ops, checkpoint_bonus reward": lambda: run_env(
        gym.make("M3Bench-FaintText-v4", reward="checkpoint_bonus"), 0, "cheap",
        task=faint_text_task()),
    "classic discrete seed 0 expert": lambda: run_discrete(0, "expert"),
    "classic discrete seed 1 random": lambda: run_discrete(1, "random"),
    "classic discrete seed 2 random": lambda: run_discrete(2, "random"),
}
"""The recorded episodes, by name."""


def digest(records: list[Any]) -> str:
    """Return the digest of an episode's records."""
    return hashlib.sha1(json.dumps(records, sort_keys=True).encode()).hexdigest()


RECORDED_UNDER: dict[str, str | None] = {
    'numpy': '2.4.6',
    'opencv': '5.0.0',
    'opencv_jpeg': 'build-libjpeg-turbo (ver 3.1.2-70)',
    'opencv_png': '/usr/local/lib/libpng.so (ver 1.6.58)',
    'opencv_zlib': '/usr/lib64/libz.so (ver 1.2.11)',
    'pillow': '13.0.0',
    'freetype': '2.14.3',
    'raqm': '0.11.0',
    'libjpeg': '6.2',
    'zlib': '1.2.13',
    'faker': '40.63.0',
    'fonttools': '4.68.0',
}
"""The pixel library versions :data:`DIGESTS` were recorded with (a record, not a gate)."""

DIGESTS: dict[str, str] = {
    'classic seed 0 reference': '0ed95cee681b3a487258b15ce0e87a49fafb5a74',
    'classic seed 1 reference': '41510ff6ecb56fbd03cfe32a75c75b84fc09cca9',
    'L1 seed 3 reference, paper reward': '733de51e2a3906e7561099b587762d14cfd9c212',
    'L2 seed 5 reference, process reward': '6a90f1a3768d980cb406ec63e019c0e3b0e08842',
    'faint_text cheap ops, checkpoint_bonus reward': '8c512aec08dddb37ad0788334aceac6221ab3486',
    'classic discrete seed 0 expert': '7efb494259c411b6b53d2c1270f365f62b78b6cf',
    'classic discrete seed 1 random': 'f5941c0b1ed186214ccc178f8d489e5e942b4941',
    'classic discrete seed 2 random': '15fd5f01255d8f17da6968a1ec4ca0b27e2bb3bf',
}
"""Digest of each episode of :data:`EPISODES` (the same under the oldest and newest allowed
versions)."""


@functools.cache
def core_dependencies_outside_bounds() -> tuple[str, ...]:
    """Return ``name version (allowed: spec)`` for each core dependency outside its bounds."""
    from importlib.metadata import PackageNotFoundError, version

    from tests.test_dependency_bounds import core_requirements

    outside = []
    for req in core_requirements().values():
        try:
            installed = version(req.name)
        except PackageNotFoundError:
            installed = "missing"
        if installed == "missing" or not req.specifier.contains(installed, prereleases=True):
            outside.append(f"{req.name} {installed} (allowed: {req.specifier})")
    return tuple(outside)


@pytest.mark.parametrize("name", list(EPISODES))
def test_episode_matches_the_recorded_digest(name: str) -> None:
    outside = core_dependencies_outside_bounds()
    if outside:
        pytest.skip(f"core dependencies outside pyproject.toml's bounds ({'; '.join(outside)}): "
                    "the digests hold only inside them")
    assert digest(EPISODES[name]()) == DIGESTS[name], (
        f"{name}: observations, rewards or infos differ from the recorded episode (recorded under "
        f"{RECORDED_UNDER}, run under {pixel_library_versions()})")


def fresh_view(env: M3BenchEnv, index: int, memo: dict[int, np.ndarray]) -> np.ndarray:
    """Return the view of image ``index`` computed afresh from the state (no env cache)."""
    if index in memo:
        return memo[index]
    entry = env.state[index]
    prov = entry.provenance
    out = None
    if prov.parent is not None:
        hw = view_shape(entry.height, entry.width, env.view_size)
        out = derived_view(prov.op, dict(prov.args), fresh_view(env, prov.parent, memo), hw)
    if out is None:
        out = to_view(entry.array, env.view_size)
    memo[index] = out
    return out


@pytest.mark.parametrize("script", ["cheap", "reference"])
def test_observed_views_equal_views_computed_afresh(script: str) -> None:
    env = M3BenchEnv(family="faint_text")
    task = faint_text_task()
    for episode in range(2):  # the second episode resets the same task: no stale view
        obs, _ = env.reset(seed=episode, options={"task": task})
        memo: dict[int, np.ndarray] = {}
        pairs = list(zip(obs["image_indices"], obs["images"]))
        actions = CHEAP_SCRIPT if script == "cheap" else script_of(task)
        for action in actions:
            obs, *_ = env.step(action)
            pairs += list(zip(obs["image_indices"], obs["images"]))
        assert len(pairs) == len(env.state)
        for index, image in pairs:
            assert not image.flags.writeable and image.flags.c_contiguous
            assert np.array_equal(image, fresh_view(env, index, memo)), index


def test_skipping_views_changes_nothing_else() -> None:
    task = faint_text_task()
    seen, blind = (M3BenchEnv(family="faint_text", reward="paper", observe_images=flag)
                   for flag in (True, False))
    for env in (seen, blind):
        env.reset(seed=0, options={"task": task})
    for action in CHEAP_SCRIPT:
        a = seen.step(action)
        b = blind.step(action)
        assert b[0]["images"] == () and len(a[0]["images"]) == len(b[0]["image_indices"])
        assert a[0]["text"] == b[0]["text"] and a[0]["image_indices"] == b[0]["image_indices"]
        assert a[1:4] == b[1:4]
        assert canonical(a[4]) == canonical(b[4])


def regenerate() -> None:
    """Print :data:`RECORDED_UNDER` and :data:`DIGESTS` for the current code and libraries."""
    print("RECORDED_UNDER: dict[str, str | None] = {")
    for key, value in pixel_library_versions().items():
        print(f"    {key!r}: {value!r},")
    print("}")
    print("DIGESTS: dict[str, str] = {")
    for name, run in EPISODES.items():
        print(f"    {name!r}: {digest(run())!r},")
    print("}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    regenerate()
