"""The monotone-difficulty check: the heuristic agent (fixed OCR) is not better at difficulty 1.

Check 8 of :func:`~m3gym.testing.check_family`.
"""

from __future__ import annotations

from collections.abc import Sequence

from m3gym.tasks.registry import make_task
from m3gym.testing.errors import _fail

MONOTONE_TOLERANCE: float = 0.25
"""How far the heuristic's accuracy at difficulty 1 may exceed its accuracy at 0 (sampling noise:
3 of 12 paired episodes; a family at chance both ends differs by ~0.15 s.d.). Samples under 8
episodes allow 2 episodes' worth (``2 / n``)."""


# ------------------------------------------------------------------------------ monotonicity
MONOTONE_OCR: str = "tesseract"
"""The OCR backend the monotone check measures the heuristic with (fixed, so that the verdict does
not depend on what the machine has installed; the built-in glyph matcher reads too little of some
families to rank their difficulties)."""


def heuristic_accuracy(name: str, difficulty: float | None, seeds: Sequence[int],
                       ocr: str = "auto", config: dict | None = None) -> float:
    """Return the heuristic agent's accuracy on ``name`` at ``difficulty`` over ``seeds``.

    ``ocr`` fixes the agent's reader (:func:`m3gym.agents.ocr.forced_ocr_backend`); it raises
    :class:`~m3gym.agents.ocr.OcrUnavailable` when that reader is not installed. ``config`` is
    passed to :func:`~m3gym.tasks.registry.make_task` (e.g. ``{"scenes": "photo"}`` for the
    photographic variant); ``None`` builds the family's default tasks.
    """
    from m3gym.agents.heuristic import HeuristicAgent
    from m3gym.agents.ocr import forced_ocr_backend
    from m3gym.env import M3BenchEnv
    from m3gym.eval.episode_loop import record_episode

    env = M3BenchEnv(family=name)
    correct = 0
    with forced_ocr_backend(ocr):
        for seed in seeds:
            task = make_task(name, int(seed), dict(config) if config is not None else None,
                             difficulty=difficulty)
            rec = record_episode(env, HeuristicAgent(seed=int(seed)), options={"task": task})
            correct += bool(rec.final.get("answer_correct"))
    env.close()
    return correct / max(1, len(seeds))


def check_monotone(name: str, seeds: Sequence[int], tolerance: float | None = None,
                   ocr: str = MONOTONE_OCR) -> tuple[float, float]:
    """Raise when the heuristic does better at difficulty 1 than at 0 (beyond ``tolerance``).

    ``tolerance`` defaults to ``max(MONOTONE_TOLERANCE, 2 / len(seeds))``. The heuristic reads
    with the OCR backend ``ocr`` (default :data:`MONOTONE_OCR`), on every machine the same;
    :class:`~m3gym.agents.ocr.OcrUnavailable` is raised when it is not installed. Returns the two
    accuracies (difficulty 0, difficulty 1) on the same seeds.
    """
    if tolerance is None:
        tolerance = max(MONOTONE_TOLERANCE, 2.0 / max(1, len(seeds)))
    easy = heuristic_accuracy(name, 0.0, seeds, ocr)
    hard = heuristic_accuracy(name, 1.0, seeds, ocr)
    if hard > easy + tolerance:
        raise _fail(name, "monotone", f"the heuristic agent's accuracy ({ocr} OCR) rises with "
                    f"difficulty: {easy:.2f} at 0 vs {hard:.2f} at 1 over seeds {list(seeds)} "
                    f"(tolerance {tolerance:g})")
    return easy, hard
