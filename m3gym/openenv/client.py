"""The typed OpenEnv client of m3gym: one WebSocket session, one episode at a time.

>>> from m3gym.openenv.client import M3GymEnv
>>> from m3gym.openenv.models import M3GymAction, ToolCall
>>> with M3GymEnv(base_url="http://127.0.0.1:8000").sync() as env:  # doctest: +SKIP
...     result = env.reset(env_id="M3Bench-L1", seed=3)
...     result = env.step(M3GymAction(tool_calls=[ToolCall(name="answer",
...                                                         arguments={"text": "A"})]))
...     result.observation.metadata["metrics"]
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
from openenv.core import EnvClient
from openenv.core.client_types import StepResult

from m3gym.openenv.models import M3GymAction, M3GymObservation, M3GymState

_PNG_PREFIX = "data:image/png;base64,"


def decode_image(data_url: str) -> np.ndarray:
    """Return a PNG data URL (as the server sends images) as an RGB/gray ``uint8`` array."""
    import cv2

    if not data_url.startswith(_PNG_PREFIX):
        raise ValueError("not a PNG data URL")
    buf = np.frombuffer(base64.b64decode(data_url[len(_PNG_PREFIX):]), dtype=np.uint8)
    img = cv2.imdecode(buf, cv2.IMREAD_UNCHANGED)
    if img is None:
        raise ValueError("the PNG does not decode")
    if img.ndim == 3 and img.shape[2] == 3:
        img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    elif img.ndim == 3 and img.shape[2] == 4:
        img = cv2.cvtColor(img, cv2.COLOR_BGRA2RGBA)
    return img


class M3GymEnv(EnvClient[M3GymAction, M3GymObservation, M3GymState]):
    """Client of ``m3gym openenv``: ``reset(env_id=, seed=)`` then ``step(M3GymAction)``.

    ``reset`` takes ``env_id``, ``seed`` (the reset seed) or ``task_seed`` (+ ``family``),
    ``reward`` (a name the server offers) and ``difficulty``. Use ``.sync()`` for sync code.
    """

    def _step_payload(self, action: M3GymAction | dict[str, Any]) -> dict[str, Any]:
        if isinstance(action, dict):  # sent as is: the server validates it
            return action
        return action.model_dump(exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[M3GymObservation]:
        obs = dict(payload.get("observation") or {})
        obs.pop("metadata", None)
        observation = M3GymObservation(
            **obs, done=bool(payload.get("done", False)), reward=payload.get("reward"),
            metadata=payload.get("metadata") or {})
        return StepResult(observation=observation, reward=payload.get("reward"),
                          done=bool(payload.get("done", False)), metadata=observation.metadata)

    def _parse_state(self, payload: dict[str, Any]) -> M3GymState:
        return M3GymState(**payload)
