"""Play one oracle episode per level with only the core installed; fail if an extra was imported.

Run by scripts/check_bare_core.sh in a venv holding ``pip install .`` and nothing else, and by
tests/test_core_imports.py in a subprocess. Also builds one task of every family (a family may
need a core library no level's first episode reaches). Prints one line per level and exits 1 when
an episode did not end with the right answer, a family could not build its task, or when
``import m3gym`` and the episodes imported a library of an extra (openai, matplotlib, rich,
jinja2, torch).
"""

from __future__ import annotations

import sys

import gymnasium as gym

import m3gym
from m3gym.agents import OracleAgent

EXTRA_MODULES = ("openai", "matplotlib", "rich", "jinja2", "torch")
"""Top-level modules of the extras that the core must not import."""


def play(env_id: str, seed: int = 0) -> tuple[int, bool]:
    """Play the oracle on one episode of ``env_id``; return (steps, answer_correct)."""
    env = gym.make(env_id)
    obs, info = env.reset(seed=seed)
    agent = OracleAgent(env.unwrapped.task)
    agent.reset(obs, info)
    steps, done = 0, False
    while not done:
        obs, _reward, terminated, truncated, info = env.step(agent.act(obs, info))
        steps, done = steps + 1, terminated or truncated
    env.close()
    return steps, bool(info.get("answer_correct"))


def main() -> int:
    """Play the levels, check the imports; return the exit status."""
    ok = True
    for level in (1, 2, 3):
        if not m3gym.family_names(level):
            continue
        env_id = m3gym.level_env_id(level)
        try:
            steps, correct = play(env_id)
        except Exception as exc:  # noqa: BLE001 - report every level and family, then fail
            print(f"{env_id}: cannot play an episode: {type(exc).__name__}: {exc}")
            ok = False
            continue
        print(f"{env_id}: {steps} steps, answer_correct={correct}")
        ok &= correct
    families = m3gym.family_names(suite=None)
    for family in families:
        try:
            m3gym.make_task(family, 1_000_000_000)  # the first seed of the frozen test split
        except Exception as exc:  # noqa: BLE001 - report every family, then fail
            print(f"{family}: cannot build a task: {type(exc).__name__}: {exc}")
            ok = False
    print(f"built one task of each of {len(families)} families")
    imported = [m for m in EXTRA_MODULES if m in sys.modules]
    print("extra modules imported:", ", ".join(imported) or "none")
    return 0 if ok and not imported else 1


if __name__ == "__main__":
    sys.exit(main())
