"""The oracle of the OpenEnv package: replay the task's reference trajectory over the client.

``python -m m3gym.openenv.oracle --url URL --env M3Bench-L1 --seed 0`` resets a server session
onto the seed, rebuilds the same task locally (same seed rule: ``gym.make(env).reset(seed=)``),
sends the reference calls step by step, then the true answer, and prints the episode return
and metrics as JSON (the oracle's return is the top of the preset's reward range).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from m3gym.openenv.models import M3GymAction, ToolCall


def oracle_actions(task: Any) -> list[M3GymAction]:
    """Return the oracle's actions for ``task``: each reference step, then the answer."""
    actions = [M3GymAction(tool_calls=[ToolCall(id=c.id, name=c.name, arguments=dict(c.arguments))
                                       for c in step]) for step in task.reference]
    actions.append(M3GymAction(tool_calls=[ToolCall(name="answer",
                                                    arguments={"text": task.answer.value})]))
    return actions


def play(url: str, env_id: str, seed: int, reward: str | None = None) -> dict[str, Any]:
    """Play one oracle episode on the server at ``url``; return its last observation's metadata."""
    import gymnasium as gym

    from m3gym.openenv.client import M3GymEnv
    from m3gym.registration import resolve_env_id

    local = gym.make(resolve_env_id(env_id), disable_env_checker=True).unwrapped
    local.reset(seed=seed)
    options = {"reward": reward} if reward else {}
    with M3GymEnv(base_url=url).sync() as client:
        client.reset(env_id=env_id, seed=seed, **options)
        result = None
        for action in oracle_actions(local.task):
            result = client.step(action)
            if result.done:
                break
    local.close()
    return dict(result.observation.metadata) if result is not None else {}


def main(argv: Sequence[str] | None = None) -> int:
    """Play one oracle episode and print its return and metrics."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:8000")
    p.add_argument("--env", default="M3Bench-L1")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reward", default=None)
    args = p.parse_args(argv)
    meta = play(args.url, args.env, args.seed, args.reward)
    print(json.dumps({"episode_return": meta.get("episode_return"),
                      "metrics": meta.get("metrics")}, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
