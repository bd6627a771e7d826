"""The heuristic agent: an OpenCV + OCR + retrieval pipeline that reads only observations.

One module per part:

* :mod:`~m3gym.agents.heuristic.agent` — :class:`HeuristicAgent` (the agent protocol, the
  no-tools ablation);
* :mod:`~m3gym.agents.heuristic.view` — what the agent knows of an episode, and the plan type;
* :mod:`~m3gym.agents.heuristic.table` — which plan answers which wording of question;
* :mod:`~m3gym.agents.heuristic.calls`, :mod:`~m3gym.agents.heuristic.text`,
  :mod:`~m3gym.agents.heuristic.vision`, :mod:`~m3gym.agents.heuristic.dials`,
  :mod:`~m3gym.agents.heuristic.web` — call dicts, question text, image analysis, round dials,
  page reading;
* one module of plans per kind of question: :mod:`~m3gym.agents.heuristic.reading` (printed
  text), :mod:`~m3gym.agents.heuristic.prices`, :mod:`~m3gym.agents.heuristic.documents`,
  :mod:`~m3gym.agents.heuristic.lookup`, :mod:`~m3gym.agents.heuristic.clock`,
  :mod:`~m3gym.agents.heuristic.gauges`, :mod:`~m3gym.agents.heuristic.counting` (regions),
  :mod:`~m3gym.agents.heuristic.grid` (grid periods), :mod:`~m3gym.agents.heuristic.teams`
  (a team's players in the goal areas; it builds on ``lookup`` and ``counting``).
"""

from m3gym.agents.heuristic.agent import NO_TOOLS_MIN_SCORE, UNKNOWN_ANSWER, HeuristicAgent

__all__ = ["NO_TOOLS_MIN_SCORE", "UNKNOWN_ANSWER", "HeuristicAgent"]
