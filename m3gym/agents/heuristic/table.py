"""The heuristic agent's plan table: which plan answers which kind of question.

The plan is chosen from the question's wording alone (the agent is never told the task's
family): each row is a family the plan was written for, a regular expression over the
lower-cased question, and the plan. Rows are tried in order; the first match wins; a question no
row matches gets :func:`~m3gym.agents.heuristic.reading.plan_generic`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from m3gym.agents.heuristic import (
    clock,
    counting,
    documents,
    gauges,
    grid,
    lookup,
    prices,
    reading,
    teams,
)
from m3gym.agents.heuristic.view import EpisodeView, Plan

Planner = Callable[[EpisodeView], Plan]


class PlanRule(NamedTuple):
    """One row of the plan table: the family it was written for, its question pattern, the plan."""

    family: str
    pattern: re.Pattern[str]
    plan: Planner


def _rule(family: str, pattern: str, plan: Planner) -> PlanRule:
    return PlanRule(family, re.compile(pattern, re.DOTALL), plan)


PLAN_TABLE: tuple[PlanRule, ...] = (
    # documents and screenshots
    _rule("receipt_total", r"on the receipt\? answer with the amount|^what does the receipt charge",
          documents.plan_receipt_total),
    _rule("chart_value", r'^in the bar chart "', documents.plan_chart_value),
    _rule("ui_status", r"battery percentage does the menu bar|settings window, what is \"|"
          r"does the \"about .+\" window show|badge on the .+ icon in the dock",
          documents.plan_ui_status),
    _rule("privacy_safe_lookup", r"building whose sign is shown|person's badge",
          lookup.plan_privacy_safe_lookup),
    _rule("logo_lookup", r"\blogo\b.*whose logo it is", lookup.plan_logo_lookup),
    _rule("code_lookup", r"product code.*look the product up", lookup.plan_code_lookup),
    _rule("knowledge_count", r"\bplayers\b", teams.plan_knowledge_count),
    _rule("grid_period", r"does the pattern( in .+)? have", grid.plan_grid_period),
    _rule("price_sum", r"total of the prices", prices.plan_price_sum),
    _rule("clock_reading", r"^what time does the small|12 o'clock|answer as h:mm",
          clock.plan_clock_reading),
    _rule("region_count", r"^how many .+ are inside the .+\?", counting.plan_region_count),
    _rule("compare_labels", r"which reads higher", gauges.plan_compare_gauges),
    _rule("tiny_faint_text", r"small, faded .*tab on its left edge", reading.plan_tiny_faint_text),
    _rule("faint_text", r"\bfaded\b.*what is the .+exactly as printed", reading.plan_faint_text),
    _rule("glyph_faint", r"badly washed out\. which digit", reading.plan_faint_digit),
    _rule("tiny_text", r"\bsticker\b", reading.plan_tiny_text),
    _rule("rotated_text", r"^what is the .+ on the .+ in the image\?.*exactly as printed",
          reading.plan_rotated_text),
    # looser wordings (questions of families written after the plans)
    _rule("faint_text", r"\bfaded\b.*what is the", reading.plan_faint_text),
    _rule("rotated_text", r"what is the .*exactly as printed", reading.plan_rotated_text),
)
"""The plan table, tried in order (the first matching row wins)."""


def planner_for(view: EpisodeView) -> Planner:
    """Return the plan for the episode, chosen from the question's wording."""
    return rule_for(view.question).plan


GENERIC_RULE = PlanRule("generic", re.compile(""), reading.plan_generic)
"""What a question no row of :data:`PLAN_TABLE` matches gets."""


def rule_for(question: str) -> PlanRule:
    """Return the first row of :data:`PLAN_TABLE` whose pattern the question matches."""
    q = " ".join(question.lower().split())
    for rule in PLAN_TABLE:
        if rule.pattern.search(q):
            return rule
    return GENERIC_RULE
