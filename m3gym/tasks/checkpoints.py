"""Old name of :mod:`m3gym.tasks.checkpoint_builders` (the checkpoint builders families use).

Every name of that module still imports from here, with a ``DeprecationWarning`` that names its
new home.
"""

from __future__ import annotations

from m3gym.deprecation import renamed_names
from m3gym.tasks import checkpoint_builders as _builders

_MOVED = ("v_tool_checkpoint", "v_true_checkpoint", "search_hit_checkpoint", "fetch_checkpoint",
          "step_checkpoint", "evidence_checkpoints", "DEFAULT_MAX_RANK", "SEARCH_ALIASES",
          "SEARCH_TOOLS", "UPRIGHT_TOOLS", "equivalent_tools")

__getattr__ = renamed_names(__name__, {
    name: (f"m3gym.tasks.checkpoint_builders.{name}", lambda name=name: getattr(_builders, name))
    for name in _MOVED})
