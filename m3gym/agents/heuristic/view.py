"""What the heuristic agent knows of an episode, and the shape of its plans.

Shared by the agent (:mod:`m3gym.agents.heuristic.agent`), the plans (one module per kind of
question) and the plan table (:mod:`m3gym.agents.heuristic.table`); it imports none of them, so
the modules form no cycle.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class StepOutcome:
    """What one step returned: result text, per-call records and new images (None = failed)."""

    text: str
    calls: list[dict[str, Any]]
    images: list[np.ndarray | None]
    indices: list[int | None]


@dataclass
class EpisodeView:
    """What the agent knows of the episode: question, choices, images seen so far, budget.

    Everything here comes from what a policy sees (the prompt, the images at view resolution,
    the choices and the budgets): never the task id, family or seed.
    """

    question: str
    choices: tuple[str, ...]
    images: dict[int, np.ndarray] = field(default_factory=dict)
    sizes: dict[int, tuple[int, int]] = field(default_factory=dict)
    budget: int = 15
    calls_used: int = 0
    guess: str | None = None

    def view_scale(self, index: int) -> float:
        """Return view size / full size of image ``index`` (1.0 when it was not downscaled)."""
        full = self.sizes.get(index)
        if not full:
            return 1.0
        return self.images[index].shape[1] / full[0]


Plan = Generator[list[dict[str, Any]], StepOutcome, "str | None"]
"""A plan: yields steps of call dicts, receives each :class:`StepOutcome`, returns the answer."""


class BudgetExhausted(Exception):
    """Raised inside a plan when its next step would exceed the tool-call budget."""
