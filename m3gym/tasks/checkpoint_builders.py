"""Checkpoint builders: the S/V checkpoints a family declares for its reference calls.

The families build their checkpoints with these (the kinds are documented in
:mod:`m3gym.spec`); :mod:`m3gym.scoring.checkpoint_tracker` verifies them. (This module was
``m3gym.tasks.checkpoints``; that name still imports, with a ``DeprecationWarning``.)
"""

from __future__ import annotations

from collections.abc import Iterable

from m3gym.scoring.checkpoint_tracker import DEFAULT_MAX_RANK, SEARCH_ALIASES, SEARCH_TOOLS
from m3gym.spec import Checkpoint, RefCall
from m3gym.tools.catalogue import UPRIGHT_TOOLS, equivalent_tools


def v_tool_checkpoint(evidence: str, tools: Iterable[str], cp_id: str | None = None,
                      description: str = "") -> Checkpoint:
    """Return a ``v_tool`` checkpoint: one of ``tools`` applied to the evidence (and kept it)."""
    tools = list(tools)
    return Checkpoint(cp_id or f"v_tool_{evidence}", "V", "v_tool",
                      {"evidence": evidence, "tools": tools},
                      description or f"apply {' / '.join(tools)} to an image showing {evidence}")


def v_true_checkpoint(evidence: str, cp_id: str | None = None,
                      description: str = "") -> Checkpoint:
    """Return a ``v_true`` checkpoint: some artifact shows ``evidence`` legibly."""
    return Checkpoint(cp_id or f"v_true_{evidence}", "V", "v_true", {"evidence": evidence},
                      description or f"an artifact shows {evidence} legibly at view size")


def search_hit_checkpoint(tool: str, url: str, cp_id: str | None = None,
                          max_rank: int = DEFAULT_MAX_RANK, description: str = "") -> Checkpoint:
    """Return a ``search_hit`` checkpoint: ``url`` ranks within ``max_rank`` of a ``tool`` call."""
    return Checkpoint(cp_id or f"s_{tool}", "S", "search_hit",
                      {"tool": tool, "url": url, "max_rank": max_rank},
                      description or f"{tool} ranks {url} within the top {max_rank}")


def fetch_checkpoint(url: str, cp_id: str | None = None, description: str = "") -> Checkpoint:
    """Return a ``fetch`` checkpoint: page ``url`` was fetched."""
    return Checkpoint(cp_id or "s_fetch", "S", "fetch", {"url": url},
                      description or f"fetch {url}")


def step_checkpoint(call: RefCall, evidence: str | None = None, cp_id: str | None = None,
                    url: str | None = None, max_rank: int = DEFAULT_MAX_RANK) -> Checkpoint:
    """Return the S checkpoint a reference call must reproduce.

    Visual calls on ``evidence``: ``crop`` → ``crop_covers``, ``rotate``/``flip`` →
    ``rotate_upright``, other ops → ``contrast_op`` (tools: :func:`equivalent_tools`); a visual
    call without evidence → ``global_op``. ``web_search``/``image_search`` → ``search_hit`` on
    ``url`` (required) within ``max_rank``; ``fetch_webpage`` → ``fetch`` of its ``url``.
    The id defaults to ``s_<what>_<evidence>`` for a visual call on evidence (``s_crop_code``,
    ``s_upright_code``, ``s_contrast_code``) and to ``s_<what>_<call id>`` otherwise.
    """
    name = SEARCH_ALIASES.get(call.name, call.name)
    if name in SEARCH_TOOLS:
        if url is None:
            raise ValueError(f"search call {call.id!r} needs the expected url")
        return search_hit_checkpoint(name, url, cp_id or f"s_search_{call.id}", max_rank)
    if name == "fetch_webpage":
        return fetch_checkpoint(str(call.arguments["url"]), cp_id or f"s_fetch_{call.id}")
    tools = list(equivalent_tools(name))
    if evidence is None:
        return Checkpoint(cp_id or f"s_global_{call.id}", "S", "global_op", {"tools": tools},
                          f"apply {' / '.join(tools)} to a full input image")
    if name == "crop":
        return Checkpoint(cp_id or f"s_crop_{evidence}", "S", "crop_covers",
                          {"evidence": evidence}, f"crop an image holding all of {evidence}")
    if name in UPRIGHT_TOOLS:
        return Checkpoint(cp_id or f"s_upright_{evidence}", "S", "rotate_upright",
                          {"evidence": evidence}, f"rotate/flip {evidence} upright")
    return Checkpoint(cp_id or f"s_contrast_{evidence}", "S", "contrast_op",
                      {"evidence": evidence, "tools": tools},
                      f"apply {' / '.join(tools)} to an image holding {evidence}")


def evidence_checkpoints(evidence: str, chain: Iterable[RefCall],
                         v_tool_tools: Iterable[str] | None = None) -> tuple[Checkpoint, ...]:
    """Return the checkpoints of one evidence surfaced by a chain of visual reference calls.

    One S checkpoint per call (:func:`step_checkpoint`), one ``v_tool`` on the evidence for the
    chain's decisive tool (the last call's, unless ``v_tool_tools`` is given) and one ``v_true``.
    """
    calls = list(chain)
    out: list[Checkpoint] = []
    for c in calls:
        cp = step_checkpoint(c, evidence)
        if any(o.id == cp.id for o in out):  # a second op of one kind on the same evidence
            cp = step_checkpoint(c, evidence, f"{cp.id}_{c.id}")
        out.append(cp)
    if v_tool_tools is None and calls:
        v_tool_tools = equivalent_tools(calls[-1].name)
    if v_tool_tools is not None:
        out.append(v_tool_checkpoint(evidence, v_tool_tools))
    out.append(v_true_checkpoint(evidence))
    return tuple(out)
