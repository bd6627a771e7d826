"""The reward audit: what blind policies earn, as a share of the oracle's return, per preset.

For one env id and one reward preset, every policy (the blind library of
:mod:`m3gym.audit.blind` and the references random, heuristic, oracle and "oracle calls with a
random answer") plays the same ``N`` episodes (env seeds ``seed .. seed + N - 1``) through the
public episode loop (:func:`m3gym.rollout.run_episode`). Reported per policy: the mean return and
its percentage of the oracle's mean return, the mean non-answer reward (return minus the answer
term), and the means of Acc, S, V, M3 and OT.

**Chance adjustment.** Policies that answer a uniformly random choice (every blind policy, the
random agent, the oracle-calls-random-answer reference) are audited at their *expected* return over
that coin flip, with no luck: each episode is played twice from the same policy state, once with
the policy's answer replaced by a correct choice and once by a wrong one (their calls are the same:
none depends on the answer), and the two outcomes are mixed with weight ``p`` = the share of the
task's choices the answer matcher accepts (:func:`chance_accuracy`; ``p = 0`` for a task without
choices, whose free-text guess has negligible chance). This is exact whatever the reward does with
the answer (the answer term, and terminal credit paid only with a correct answer).

**Targets** (:func:`check_targets`), each with an optional sample-size allowance ``z × SE`` of
the paired per-episode difference (``z = 0``: the point estimates, as the issue states them):

- ``blind<=random+5``: every blind policy's %-of-oracle is at most the *random floor*'s + 5
  points, the floor being the higher of the random agent and ``answer_now`` (both answer a random
  choice; the random agent's random calls may cost penalties, see :func:`random_floor`);
- ``heuristic>blind``: on every benchmark level (not the classic suite,
  :data:`HEURISTIC_EXEMPT_ENVS`), the heuristic agent's mean non-answer reward exceeds every
  blind policy's. Not applicable when the preset pays no positive non-answer credit (no ``m3``,
  no ``process`` term, shaping with Φ(terminal) = 0): its non-answer terms are then penalties
  alone and a policy that makes no calls earns the maximum, 0 (:func:`pays_process_credit`);
- ``oracle``: the oracle scores Acc = S = V = M3 = 1 and OT = 0 on every episode.

The policies and presets live in :mod:`m3gym.audit.reward_policies`, the results in
:mod:`m3gym.audit.reward_outcomes`, the targets in :mod:`m3gym.audit.reward_targets` and the
tables in :mod:`m3gym.audit.reward_report`; this module runs the audit and re-exports them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from m3gym.agents.base import Agent
from m3gym.audit.reward_outcomes import (
    EnvAudit,
    EpisodeOutcome,
    PolicyResult,
    counterfactual_answers,
    mix_outcomes,
    outcome_of,
)
from m3gym.audit.reward_policies import (
    RANDOM_ANSWER_REFERENCES,
    REFERENCE_POLICIES,
    AuditRandomAgent,
    OracleCallsRandomAnswer,
    build_policy,
    chance_accuracy,
    is_blind,
    is_chance_adjusted,
    policy_names,
    preset_spec,
    reward_presets,
)
from m3gym.audit.reward_report import (
    audit_json,
    family_rows,
    format_checks,
    format_family_table,
    format_table,
    summary_markdown,
)
from m3gym.audit.reward_targets import (
    BLIND_MARGIN,
    HEURISTIC_EXEMPT_ENVS,
    TargetCheck,
    _paired,  # noqa: F401 (a private name tests/test_reward_audit.py imports from here)
    check_targets,
    pays_process_credit,
    random_floor,
)
from m3gym.spec import Task

__all__ = [
    "BLIND_MARGIN", "DEFAULT_ENVS", "HEURISTIC_EXEMPT_ENVS", "RANDOM_ANSWER_REFERENCES",
    "REFERENCE_POLICIES", "YARDSTICKS", "AuditRandomAgent", "EnvAudit", "EpisodeOutcome",
    "OracleCallsRandomAnswer", "PolicyResult", "TargetCheck", "audit_env", "audit_json",
    "build_policy", "chance_accuracy", "check_targets", "counterfactual_answers", "episode_seed",
    "episode_tasks", "family_rows", "format_checks", "format_family_table", "format_table",
    "is_blind", "is_chance_adjusted", "mix_outcomes", "outcome_of", "pays_process_credit",
    "policy_names", "preset_spec", "random_floor", "reward_presets", "run_policy", "scene_kwargs",
    "summary_markdown", "tool_cell",
]

YARDSTICKS: tuple[str, ...] = ("oracle", "random", "answer_now")
"""Policies every audit runs: the oracle (100 %) and the two random floors."""

DEFAULT_ENVS: tuple[str, ...] = ("M3Bench-L1", "M3Bench-L2", "M3Bench-L3", "M3Bench-Classic")
"""The env ids the audit covers by default: every level and the classic suite."""


def scene_kwargs(scenes: str | None = None,
                 backgrounds: str | None = None) -> dict[str, Any]:
    """Return the ``gym.make`` keyword arguments for ``scenes`` / ``backgrounds`` (none if unset).

    ``scenes="photo"`` draws the families with photo scenes into the bundled photographs,
    ``backgrounds=FOLDER`` into a folder of photos; both ``None`` keeps the env's default.
    """
    kwargs: dict[str, Any] = {}
    if scenes is not None:
        kwargs["scenes"] = scenes
    if backgrounds is not None:
        kwargs["backgrounds"] = backgrounds
    return kwargs


def episode_tasks(env_id: str, episodes: int, seed: int = 0, scenes: str | None = None,
                  backgrounds: str | None = None) -> list[Task]:
    """Return the tasks ``env_id`` resets to for env seeds ``seed .. seed + episodes - 1``.

    Generated once and shared by every policy and preset of an audit (the episodes are then
    reset with ``options={"task": task}`` and the same seed, which is the same episode).
    ``scenes`` / ``backgrounds`` are passed to ``gym.make`` (:func:`scene_kwargs`).
    """
    import gymnasium as gym

    from m3gym.registration import resolve_env_id  # importing m3gym registers the env ids

    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    env = gym.make(resolve_env_id(env_id), **scene_kwargs(scenes, backgrounds))
    try:
        tasks = []
        for i in range(episodes):
            env.reset(seed=seed + i)
            tasks.append(env.unwrapped.task)
    finally:
        env.close()
    return tasks


def episode_seed(seed: int, episode: int) -> int:
    """Return the seed of a chance-adjusted policy's fresh instance for one episode."""
    return int(np.random.SeedSequence([seed, episode]).generate_state(1)[0])


def run_policy(env: Any, name: str, tasks: Sequence[Task], seed: int) -> PolicyResult:
    """Play policy ``name`` on ``env``, episode ``i`` = ``tasks[i]`` with env seed ``seed + i``.

    A chance-adjusted policy is built afresh per episode (seed :func:`episode_seed`) and plays
    it twice, with a correct and a wrong answer forced (see the module docstring).
    """
    from m3gym.rollout import run_episode

    base = env.unwrapped
    outcomes = []

    def play(agent: Agent, i: int, task: Task) -> EpisodeOutcome:
        res = run_episode(env, agent, seed=seed + i, options={"task": task})
        answered = res.trace.get("answer") is not None
        return outcome_of(seed + i, res.total_reward, res.final_info, answered, task.family)

    if not is_chance_adjusted(name):
        agent = build_policy(name, seed, lambda: base.task)
        return PolicyResult(name, [play(agent, i, t) for i, t in enumerate(tasks)])
    for i, task in enumerate(tasks):
        played: dict[str, EpisodeOutcome] = {}
        for label, text in zip(("right", "wrong"), counterfactual_answers(task), strict=True):
            if text is not None:
                agent = build_policy(name, episode_seed(seed, i), lambda: base.task)
                agent.forced_answer = text  # type: ignore[attr-defined]
                played[label] = play(agent, i, task)
        outcomes.append(mix_outcomes(chance_accuracy(task), played.get("right"),
                                     played.get("wrong")))
    return PolicyResult(name, outcomes)


def tool_cell(calls: Sequence[Mapping[str, Any]]) -> str:
    """Return atomic tool calls (dicts) as one ``run_python`` cell calling the tools in order."""
    lines = []
    for call in calls:
        args = ", ".join(f"{k}={v!r}" for k, v in dict(call.get("arguments") or {}).items())
        lines.append(f"{call.get('name')}({args})")
    return "\n".join(lines)


def _code_env(env: Any) -> Any:
    """Wrap a code-mode env so that agents acting with atomic calls act through code cells.

    The agents are shown the atomic tool schemas; every step of tool calls (a parallel step
    included) is sent as one ``run_python`` cell calling the same tools as functions, which
    code mode records as the same canonical calls. Answers pass through unchanged.
    """
    import gymnasium as gym

    from m3gym.tools import default_registry

    schemas = default_registry().schemas("openai")

    class AtomicCallsAsCode(gym.Wrapper):
        def reset(self, **kwargs: Any) -> Any:
            obs, info = self.env.reset(**kwargs)
            return obs, {**info, "tool_schemas": schemas}

        def step(self, action: Any) -> Any:
            calls = [action] if isinstance(action, Mapping) else action
            if (isinstance(calls, list) and calls
                    and all(isinstance(c, Mapping) and c.get("name") not in ("answer",
                                                                             "run_python")
                            for c in calls)):
                action = {"name": "run_python", "arguments": {"code": tool_cell(calls)}}
            return self.env.step(action)

    return AtomicCallsAsCode(env)


def audit_env(env_id: str, preset: str, episodes: int, seed: int = 0,
              policies: Iterable[str] | None = None, tasks: Sequence[Task] | None = None,
              on_policy: Callable[[str], None] | None = None,
              interface: str = "atomic", sandbox: Mapping[str, Any] | None = None,
              scenes: str | None = None, backgrounds: str | None = None) -> EnvAudit:
    """Run every policy (default: all) on ``episodes`` shared seeds of ``env_id`` under ``preset``.

    The oracle, the random agent and ``answer_now`` always run (the targets' yardsticks).
    ``tasks`` (from :func:`episode_tasks` with the same ``seed``) saves generating them again.
    ``interface="code"`` runs the env in code mode, every policy's tool steps sent as code cells
    (:func:`tool_cell`), with ``sandbox`` as the env's sandbox options (e.g.
    ``{"isolation": "none"}`` where bubblewrap is missing). ``scenes`` / ``backgrounds`` are
    passed to every ``gym.make`` (:func:`scene_kwargs`; photographic scenes). Deterministic for
    a given ``seed``.
    """
    import gymnasium as gym

    wanted = list(policies) if policies is not None else policy_names()
    unknown = sorted(set(wanted) - set(policy_names()))
    if unknown:
        raise ValueError(f"unknown audit policies {unknown}; available: {policy_names()}")
    if tasks is None:
        tasks = episode_tasks(env_id, episodes, seed, scenes, backgrounds)
    elif len(tasks) != episodes:
        raise ValueError(f"got {len(tasks)} tasks for {episodes} episodes")
    names = [n for n in policy_names() if n in {*YARDSTICKS, *wanted}]
    from m3gym.registration import resolve_env_id

    scene = scene_kwargs(scenes, backgrounds)
    if interface == "atomic":
        env = gym.make(resolve_env_id(env_id), reward=preset_spec(preset), **scene)
    elif interface == "code":
        env = _code_env(gym.make(resolve_env_id(env_id), reward=preset_spec(preset),
                                 interface="code", sandbox=dict(sandbox or {}), **scene))
    else:
        raise ValueError(f"interface must be 'atomic' or 'code', got {interface!r}")
    audit = EnvAudit(env_id, preset, seed)
    try:
        for name in names:
            if on_policy is not None:
                on_policy(name)
            audit.results[name] = run_policy(env, name, tasks, seed)
    finally:
        env.close()
    return audit
