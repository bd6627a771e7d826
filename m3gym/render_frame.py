"""Old name of :mod:`m3gym.env_frame` (the env's frames for ``render()``).

Every public name of that module still imports from here, with a ``DeprecationWarning`` that
names its new home.
"""

from __future__ import annotations

from m3gym import env_frame as _frame
from m3gym.deprecation import renamed_names

_MOVED = ("BACKGROUND", "FRAME_GRID", "FRAME_HEADER", "FRAME_SHAPE", "FRAME_TILE",
          "MAX_RESULT_CHARS", "EpisodeSnapshot", "compose_frame", "describe_image",
          "episode_frame", "episode_text", "fit_tile", "frame_indices", "image_label",
          "status_line")

__getattr__ = renamed_names(__name__, {
    name: (f"m3gym.env_frame.{name}", lambda name=name: getattr(_frame, name)) for name in _MOVED})
