"""Re-create an episode's images from its stored trace (task seed + the op chain).

Traces store only small thumbnails; the full-resolution images are re-created by rebuilding the
task from its ``(family, task_seed)`` and replaying the logged calls step by step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from m3gym.trace import code_cell_call_ids


def replay_trace(trace: Mapping[str, Any]) -> Any:
    """Return the unwrapped env after replaying ``trace``'s calls (its ``state`` holds the images).

    The final answer is not sent, so the episode stays open and ``env.state`` / ``env.view(i)``
    give every image the agent produced, at full or view resolution.
    """
    from m3gym.registration import resolve_env_id  # importing m3gym registers the env ids

    spec = trace["recreate"]
    env = gym.make(resolve_env_id(spec["env"]), reward=spec.get("reward", "m3"),
                   disable_env_checker=True, **dict(spec.get("env_args") or {}))
    env.reset(seed=spec["reset_seed"], options=dict(spec["options"]))
    for step in trace.get("steps", []):
        cells = step.get("code_cells") or []  # code mode: re-run the cells, not what they did
        inner = {i for c in cells for i in code_cell_call_ids(c)}
        calls = [{"id": c.get("call_id"), "name": "run_python",
                  "arguments": {"code": c.get("code")}} for c in cells]
        calls += [{"id": c.get("call_id"), "name": c.get("requested_name") or c.get("name"),
                   "arguments": dict(c.get("arguments") or {})} for c in step.get("calls", [])
                  if c.get("call_id") not in inner]
        if calls:
            env.step(calls)
    return env.unwrapped
