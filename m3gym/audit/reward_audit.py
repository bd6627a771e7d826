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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from m3gym.agents.base import Agent, OracleAgent, RandomAgent, make_agent
from m3gym.audit.blind import (
    BLIND_POLICIES,
    NO_CHOICE_ANSWER,
    blind_shape,
    make_blind_policy,
    random_answer,
    with_answer,
)
from m3gym.reward import load_reward_config
from m3gym.scoring.answer import answer_is_correct
from m3gym.spec import Task

REFERENCE_POLICIES: tuple[str, ...] = ("oracle", "oracle_random_answer", "heuristic", "random")
"""The reference agents every audit runs, in table order."""

RANDOM_ANSWER_REFERENCES: frozenset[str] = frozenset({"random", "oracle_random_answer"})
"""References whose answer is a uniformly random choice (their answer term is chance-adjusted)."""

BLIND_MARGIN = 5.0
"""Points of the oracle's return a blind policy may earn above the random agent."""

YARDSTICKS: tuple[str, ...] = ("oracle", "random", "answer_now")
"""Policies every audit runs: the oracle (100 %) and the two random floors."""

DEFAULT_ENVS: tuple[str, ...] = ("M3Bench-L1", "M3Bench-L2", "M3Bench-L3", "M3Bench-Classic")
"""The env ids the audit covers by default: every level and the classic suite."""

HEURISTIC_EXEMPT_ENVS: frozenset[str] = frozenset({"M3Bench-Classic"})
"""Envs where ``heuristic>blind`` is not checked: the issue sets it per benchmark level, and the
heuristic (OCR) agent has no plan for the classic suite's single-digit glyph tasks."""


def reward_presets() -> list[str]:
    """Return the name of every reward preset YAML in ``m3gym/configs/reward/`` (sorted)."""
    folder = resources.files("m3gym").joinpath("configs/reward")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def preset_spec(name: str) -> str:
    """Return what ``gym.make(..., reward=...)`` takes for preset ``name`` (name or YAML path)."""
    from m3gym.reward import PRESETS

    if name in PRESETS:
        return name
    path = resources.files("m3gym").joinpath(f"configs/reward/{name}.yaml")
    if not path.is_file():
        raise ValueError(f"unknown reward preset {name!r}; available: {reward_presets()}")
    return str(path)


class OracleCallsRandomAnswer(OracleAgent):
    """Replays the reference calls exactly, then answers a uniformly random choice.

    Its return (chance-adjusted) is what correct *process* alone is worth under a preset.
    """

    name = "oracle_random_answer"
    forced_answer: str | None = None

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.rng = np.random.default_rng(seed)
        self._choices: tuple[str, ...] = ()

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Start replaying; remember the choices."""
        super().reset(observation, info)
        self._choices = tuple(info.get("choices") or ())

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Return the next reference step, then a random answer."""
        if self.task is not None and self._step >= len(self.task.reference):
            return with_answer(random_answer(self.rng, self._choices), self.forced_answer)
        return super().act(observation, info)


class AuditRandomAgent(RandomAgent):
    """The random agent, whose answer text the audit may replace (``forced_answer``).

    Its calls and its rng stream are the random agent's; only the answer text is swapped, which
    is how the audit measures its expected return over the random choice.
    """

    forced_answer: str | None = None

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Return the random agent's action (with the forced answer text, if any)."""
        return with_answer(super().act(observation, info), self.forced_answer)


def policy_names() -> list[str]:
    """Return every policy the audit runs: the references, then the blind library."""
    return [*REFERENCE_POLICIES, *BLIND_POLICIES]


def is_blind(name: str) -> bool:
    """Return whether ``name`` is a blind policy (held to the blind targets)."""
    return name in BLIND_POLICIES


def is_chance_adjusted(name: str) -> bool:
    """Return whether policy ``name`` answers at random (its answer term is chance-adjusted)."""
    return is_blind(name) or name in RANDOM_ANSWER_REFERENCES


def build_policy(name: str, seed: int, task_source: Callable[[], Task]) -> Agent:
    """Return policy ``name``; ``task_source`` gives the env's current task (read at reset).

    Blind policies receive only :func:`m3gym.audit.blind.blind_shape` of that task.
    """
    if name in BLIND_POLICIES:
        return make_blind_policy(name, seed, lambda: blind_shape(task_source()))
    if name == "oracle_random_answer":
        return OracleCallsRandomAnswer(seed)
    if name == "random":
        return AuditRandomAgent(seed=seed)
    if name in ("oracle", "heuristic"):
        return make_agent(name, seed=seed)
    raise ValueError(f"unknown audit policy {name!r}; available: {', '.join(policy_names())}")


def chance_accuracy(task: Task) -> float:
    """Return the probability that a uniformly random choice of ``task`` is judged correct."""
    if not task.choices:
        return 0.0
    return sum(answer_is_correct(c, task.answer) for c in task.choices) / len(task.choices)


@dataclass(frozen=True)
class EpisodeOutcome:
    """One episode of one policy: return, its answer term and the final metrics.

    For a chance-adjusted policy every number is the expectation over its random answer
    (:func:`mix_outcomes`), so ``acc`` is the chance of a correct choice.
    """

    seed: int
    ret: float
    answer_reward: float
    answered: bool
    acc: float
    S: float
    V: float
    m3: float
    OT: float
    family: str = ""

    @property
    def non_answer(self) -> float:
        """The return without the answer term."""
        return self.ret - self.answer_reward


def outcome_of(seed: int, total_reward: float, final_info: Mapping[str, Any], answered: bool,
               family: str = "") -> EpisodeOutcome:
    """Return the realized :class:`EpisodeOutcome` of a finished episode."""
    metrics = final_info.get("metrics", {})
    components = final_info.get("reward_components", {})
    return EpisodeOutcome(
        seed=seed, ret=float(total_reward), answer_reward=float(components.get("answer", 0.0)),
        answered=answered, acc=float(metrics.get("acc", 0.0)), S=float(metrics.get("S", 0.0)),
        V=float(metrics.get("V", 0.0)), m3=float(metrics.get("m3", 0.0)),
        OT=float(metrics.get("OT", 0.0)), family=family)


_MIXED = ("ret", "answer_reward", "acc", "S", "V", "m3", "OT")


def mix_outcomes(p: float, right: EpisodeOutcome | None,
                 wrong: EpisodeOutcome | None) -> EpisodeOutcome:
    """Return the expectation of an episode answered correctly with probability ``p``.

    ``right``/``wrong`` are the same episode answered with a correct / a wrong choice; either may
    be ``None`` when its probability is 0.
    """
    if right is None or p <= 0.0:
        if wrong is None:
            raise ValueError("mix_outcomes needs the wrong-answer outcome when p is 0")
        return wrong
    if wrong is None or p >= 1.0:
        return right
    mixed = {k: p * getattr(right, k) + (1.0 - p) * getattr(wrong, k) for k in _MIXED}
    return EpisodeOutcome(seed=wrong.seed, answered=wrong.answered, family=wrong.family, **mixed)


def counterfactual_answers(task: Task) -> tuple[str | None, str | None]:
    """Return a correct and a wrong choice of ``task`` (``None`` where there is none)."""
    choices = task.choices or ()
    right = next((c for c in choices if answer_is_correct(c, task.answer)), None)
    wrong = next((c for c in choices if not answer_is_correct(c, task.answer)), None)
    if not choices:
        wrong = NO_CHOICE_ANSWER
    return right, wrong


@dataclass
class PolicyResult:
    """All episodes of one policy under one env id and preset."""

    name: str
    outcomes: list[EpisodeOutcome]

    @property
    def chance_adjusted(self) -> bool:
        """Whether the answer term is chance-adjusted for this policy."""
        return is_chance_adjusted(self.name)

    def returns(self) -> np.ndarray:
        """Per-episode returns (expected over the random answer when chance-adjusted)."""
        return np.array([o.ret for o in self.outcomes])

    def non_answer(self) -> np.ndarray:
        """Per-episode non-answer rewards."""
        return np.array([o.non_answer for o in self.outcomes])

    def mean(self, attr: str) -> float:
        """Mean of an :class:`EpisodeOutcome` field over the episodes."""
        return float(np.mean([getattr(o, attr) for o in self.outcomes]))


@dataclass
class EnvAudit:
    """Every policy's results for one env id and one reward preset."""

    env_id: str
    preset: str
    seed: int
    results: dict[str, PolicyResult] = field(default_factory=dict)

    @property
    def oracle_return(self) -> float:
        """The oracle's mean return (the 100 % of the table)."""
        return float(self.results["oracle"].returns().mean())

    def percent(self, values: np.ndarray) -> np.ndarray:
        """Return ``values`` as percentages of the oracle's mean return."""
        return 100.0 * values / self.oracle_return

    def rows(self) -> list[dict[str, Any]]:
        """Return one summary dict per policy (table order)."""
        rows = []
        for name, res in self.results.items():
            ret = res.returns()
            rows.append({
                "policy": name, "blind": is_blind(name), "chance_adjusted": res.chance_adjusted,
                "episodes": len(ret), "return": float(ret.mean()),
                "pct_oracle": float(self.percent(ret).mean()),
                "non_answer": float(res.non_answer().mean()), "acc": res.mean("acc"),
                "S": res.mean("S"), "V": res.mean("V"), "m3": res.mean("m3"),
                "OT": res.mean("OT"), "answered": res.mean("answered"),
            })
        return rows


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


@dataclass(frozen=True)
class TargetCheck:
    """One target of one audit: its name, the policy it concerns, pass/fail and the numbers."""

    target: str
    policy: str
    passed: bool
    detail: str


def _paired(diff: np.ndarray, z: float) -> tuple[float, float]:
    """Return the mean of ``diff`` and the allowance ``z × SE`` (0 for one episode or z = 0)."""
    mean = float(diff.mean())
    if z == 0.0 or len(diff) < 2:
        return mean, 0.0
    return mean, z * float(diff.std(ddof=1)) / math.sqrt(len(diff))


@cache
def pays_process_credit(preset: str) -> bool:
    """Return whether ``preset`` can pay a positive reward besides the answer term.

    The strictly potential-based shaping telescopes to 0, so only the terminal ``m3`` and
    ``process`` terms and a kept checkpoint bonus (``progress_terminal: on_correct``) can.
    """
    cfg = load_reward_config(preset_spec(preset))
    return cfg.m3 > 0 or cfg.process > 0 or (cfg.progress > 0
                                              and cfg.progress_terminal == "on_correct")


def random_floor(audit: EnvAudit) -> tuple[str, np.ndarray]:
    """Return the random floor: the random agent or ``answer_now``, whichever earns more.

    Both answer a uniformly random choice; the random agent also makes random calls, which the
    penalty terms may charge. Measuring blind policies against the higher of the two keeps the
    target about profit from blind *calls*, not about the random agent's penalties. Returned as
    the policy's name and its per-episode %-of-oracle returns.
    """
    best = max(("random", "answer_now"), key=lambda n: audit.results[n].returns().mean())
    return best, audit.percent(audit.results[best].returns())


def check_targets(audit: EnvAudit, z: float = 0.0,
                  margin: float = BLIND_MARGIN) -> list[TargetCheck]:
    """Return the target checks of one audit (see the module docstring)."""
    checks: list[TargetCheck] = []
    oracle = audit.results["oracle"]
    bad = [f"{k}={oracle.mean(k):.3f}" for k in ("acc", "S", "V", "m3")
           if abs(oracle.mean(k) - 1.0) > 1e-9]
    if oracle.mean("OT") > 1e-9:
        bad.append(f"OT={oracle.mean('OT'):.3f}")
    checks.append(TargetCheck("oracle", "oracle", not bad,
                              "Acc=S=V=M3=1, OT=0" if not bad else ", ".join(bad)))
    if audit.oracle_return <= 0:
        checks.append(TargetCheck("oracle_return>0", "oracle", False,
                                  f"oracle mean return {audit.oracle_return:.3f}"))
        return checks
    floor_name, floor = random_floor(audit)
    heur = audit.results.get("heuristic")
    if audit.env_id in HEURISTIC_EXEMPT_ENVS:
        heur = None  # the heuristic agent has no plan for the classic suite's glyph tasks
    for name, res in audit.results.items():
        if not is_blind(name):
            continue
        pct = audit.percent(res.returns())
        mean, allow = _paired(pct - floor, z)
        checks.append(TargetCheck(
            f"blind<=random+{margin:g}", name, mean <= margin + allow,
            f"{pct.mean():.1f}% vs random floor {floor.mean():.1f}% ({floor_name}): "
            f"{mean:+.1f} points" + (f", allowance {allow:.1f}" if allow else "")))
        if heur is None:
            continue
        h, b = heur.non_answer(), res.non_answer()
        if not pays_process_credit(audit.preset):
            checks.append(TargetCheck("heuristic>blind", name, True,
                                      "n/a: the preset pays no credit besides the answer "
                                      "(its other terms are penalties; its shaping nets 0)"))
            continue
        mean, allow = _paired(h - b, z)
        checks.append(TargetCheck(
            "heuristic>blind", name, mean > -allow,
            f"non-answer heuristic {h.mean():.3f} vs {b.mean():.3f}"
            + (f" (allowance {allow:.3f})" if allow else "")))
    return checks


def format_table(audit: EnvAudit) -> str:
    """Return the audit's table in Markdown (one row per policy)."""
    n = len(audit.results["oracle"].outcomes)
    lines = [f"### {audit.env_id} · preset `{audit.preset}` · {n} episodes (seeds from "
             f"{audit.seed}) · oracle return {audit.oracle_return:.3f}", "",
             "| policy | return | % oracle | non-answer | Acc | S | V | M3 | OT |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in audit.rows():
        tag = " (blind)" if r["blind"] else ""
        star = "*" if r["chance_adjusted"] else ""
        lines.append(
            f"| {r['policy']}{tag} | {r['return']:.3f}{star} | {r['pct_oracle']:.1f} | "
            f"{r['non_answer']:.3f} | {r['acc']:.2f} | {r['S']:.2f} | {r['V']:.2f} | "
            f"{r['m3']:.2f} | {r['OT']:.2f} |")
    return "\n".join(lines)


def family_rows(audit: EnvAudit) -> list[dict[str, Any]]:
    """Return, per task family, each policy's mean audited return as % of the family's oracle.

    Locates where blind profit comes from (a family whose reference calls carry no content is
    solved in process by knowing its tool names alone).
    """
    oracle = audit.results["oracle"]
    families = sorted({o.family for o in oracle.outcomes})
    rows = []
    for fam in families:
        idx = [i for i, o in enumerate(oracle.outcomes) if o.family == fam]
        base = float(oracle.returns()[idx].mean())
        row: dict[str, Any] = {"family": fam, "episodes": len(idx), "oracle_return": base}
        for name, res in audit.results.items():
            if name == "oracle":
                continue
            mean = float(res.returns()[idx].mean())
            row[name] = 100.0 * mean / base if base > 0 else float("nan")
        rows.append(row)
    return rows


def format_family_table(audit: EnvAudit) -> str:
    """Return :func:`family_rows` as a Markdown table (% of the family's oracle return)."""
    rows = family_rows(audit)
    names = [n for n in audit.results if n != "oracle"]
    lines = [f"{audit.env_id} · `{audit.preset}` · % of the family's oracle return", "",
             "| family | n | " + " | ".join(names) + " |",
             "|---|---:|" + "---:|" * len(names)]
    for r in rows:
        lines.append(f"| {r['family']} | {r['episodes']} | "
                     + " | ".join(f"{r[n]:.0f}" for n in names) + " |")
    return "\n".join(lines)


def summary_markdown(audits: Sequence[EnvAudit],
                     checks: Mapping[tuple[str, str], Sequence[TargetCheck]]) -> str:
    """Return one compact table per env: each policy's % of the oracle under every preset.

    ``checks`` maps ``(env_id, preset)`` to its target checks; each table is followed by the
    failed checks (or "all targets pass"). The metric columns (Acc, S, V, M3, OT) do not depend
    on the preset and are taken from the first.
    """
    out: list[str] = []
    envs = list(dict.fromkeys(a.env_id for a in audits))
    for env_id in envs:
        mine = [a for a in audits if a.env_id == env_id]
        presets = [a.preset for a in mine]
        rows = [{r["policy"]: r for r in a.rows()} for a in mine]
        n = len(mine[0].results["oracle"].outcomes)
        out += [f"**{env_id}** ({n} episodes; % of the oracle's return per preset, oracle return "
                + ", ".join(f"{a.preset} {a.oracle_return:.2f}" for a in mine) + ")", "",
                "| policy | " + " | ".join(f"`{p}`" for p in presets)
                + " | Acc | S | V | M3 | OT |",
                "|---|" + "---:|" * (len(presets) + 5)]
        for name in rows[0]:
            first = rows[0][name]
            label = f"{name} (blind)" if first["blind"] else name
            out.append(f"| {label} | " + " | ".join(f"{r[name]['pct_oracle']:.1f}" for r in rows)
                       + f" | {first['acc']:.2f} | {first['S']:.2f} | {first['V']:.2f} | "
                       f"{first['m3']:.2f} | {first['OT']:.2f} |")
        failed = [f"`{a.preset}` {c.target} {c.policy}: {c.detail}"
                  for a in mine for c in checks[(env_id, a.preset)] if not c.passed]
        out += ["", "Failed targets: " + ("none" if not failed else ""), ""]
        out += [f"- {f}" for f in failed]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def format_checks(checks: Sequence[TargetCheck]) -> str:
    """Return one ``PASS``/``FAIL`` line per target check."""
    return "\n".join(f"{'PASS' if c.passed else 'FAIL'}  {c.target:<18} {c.policy:<20} {c.detail}"
                     for c in checks)


def audit_json(audit: EnvAudit, checks: Sequence[TargetCheck]) -> dict[str, Any]:
    """Return a JSON-serializable record of one audit: rows, checks and every episode."""
    return {
        "env": audit.env_id, "preset": audit.preset, "seed": audit.seed,
        "oracle_return": audit.oracle_return, "rows": audit.rows(),
        "families": family_rows(audit),
        "checks": [asdict(c) for c in checks],
        "episodes": {n: [asdict(o) for o in r.outcomes] for n, r in audit.results.items()},
    }
