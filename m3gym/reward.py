"""Reward configuration and the per-episode reward tracker.

Terms (each with a weight in :class:`RewardConfig`; ``info["reward_components"]`` lists them and
they sum to the step reward):

- ``answer``: +1 for a correct final answer (terminal).
- ``progress``: potential-based checkpoint shaping ``γΦ(s') − Φ(s)``, Φ = share of checkpoints
  passed, in the strict sense of Ng, Harada & Russell (1999): **Φ of a terminal or truncated
  state is 0**, so over an episode the shaping telescopes to ``−Φ(s₀) = 0`` (in the γ-discounted
  return, and in the plain sum when γ = 1). It guides learning step by step and cannot be farmed:
  it leaves the optimal policy unchanged and pays nothing net. With
  ``progress_terminal: on_correct`` (the ``checkpoint_bonus`` preset) Φ of the terminal state is
  instead ``acc × Φ_T``: the checkpoints passed are kept as a bonus when the answer is right —
  *not* policy-invariant, documented as such.
- ``m3``: the terminal M3 score (tool selection, multi-hop data flow, parallel calls).
- ``process``: the terminal Agentic-MME-style process score ``(S + V) / 2 × (1 − OT)``.
- ``overthink``: minus the terminal overthink ratio ``OT`` (calls beyond the reference).
- ``invalid_call``: minus one per failed call or unparseable action.
- ``safety``: minus one per safety violation (on the step it happens).

**Outcome-gated process credit.** With ``gate_process_by_answer`` (the default), the terminal
``m3`` and ``process`` terms are paid only with a correct answer (multiplied by ``acc``). Some
reference steps carry no content a policy must read from the pixels (``autocontrast`` of Image 0
on ``faint_text``); paying for them unconditionally would pay a policy that never reads the
pixels. Gated, a blind policy earns at most chance × the bonus. The metrics (S, V, M3, OT) in
``info["metrics"]`` are reported ungated.

A run that never answers earns no answer and no process credit, and the shaping nets 0: no
preset pays it more than answering at once at random.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from m3gym.config_errors import ConfigError, ConfigSource, parse_yaml_text, read_yaml_file
from m3gym.scoring.checkpoints import CheckpointTracker
from m3gym.scoring.episode_score import score_episode
from m3gym.scoring.m3 import M3Weights
from m3gym.scoring.safety import evaluate_safety
from m3gym.spec import Task
from m3gym.state import ImageState
from m3gym.trace import Trace, TraceCall

PRESETS: tuple[str, ...] = ("sparse", "process", "m3", "paper", "checkpoint_bonus")
ProgressTerminal = Literal["zero", "on_correct"]


@dataclass(frozen=True)
class RewardConfig:
    """Weights of the reward terms (see the module docstring) and shaping settings."""

    answer: float = 1.0
    progress: float = 0.0
    gamma: float = 1.0
    m3: float = 0.0
    overthink: float = 0.0
    invalid_call: float = 0.0
    safety: float = 0.0
    process: float = 0.0
    progress_terminal: ProgressTerminal = "zero"
    gate_process_by_answer: bool = True
    m3_weights: Mapping[str, float] = field(
        default_factory=lambda: {"multi_modal": 1.0, "multi_hop": 1.0, "multi_threaded": 1.0})
    name: str = "custom"

    def validate(self) -> None:
        """Raise ``ValueError`` for an inconsistent configuration."""
        for _, problem in self._problems():
            raise ValueError(problem)

    def _problems(self) -> Iterator[tuple[str, str]]:
        """Yield ``(key, problem)`` for every inconsistency, in :meth:`validate`'s order."""
        if not 0.0 < self.gamma <= 1.0:
            yield "gamma", f"gamma must be in (0, 1], got {self.gamma}"
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and value != value:
                yield f.name, f"reward weight {f.name} is NaN"
        if any(w < 0 for w in self.m3_weights.values()) or not any(self.m3_weights.values()):
            yield "m3_weights", "m3_weights must be non-negative and not all zero"
        if self.progress_terminal not in ("zero", "on_correct"):
            yield "progress_terminal", ("progress_terminal must be 'zero' or 'on_correct', got "
                                        f"{self.progress_terminal!r}")
        if not isinstance(self.gate_process_by_answer, bool):
            yield "gate_process_by_answer", "gate_process_by_answer must be true or false"

    def to_dict(self) -> dict[str, Any]:
        """Return the config as a plain dict."""
        out = asdict(self)
        out["m3_weights"] = dict(self.m3_weights)
        return out


def load_reward_config(spec: str | Path | Mapping[str, Any] | RewardConfig) -> RewardConfig:
    """Return a :class:`RewardConfig` from a preset name, a YAML path, a dict or a config.

    A YAML file or a dict that is malformed (text that does not parse, an unknown key, a value of
    the wrong type, an inconsistent setting) raises :class:`~m3gym.config_errors.ConfigError`
    naming the file, the line and the key.
    """
    if isinstance(spec, RewardConfig):
        spec.validate()
        return spec
    if isinstance(spec, Mapping):
        data: Any = spec
        source = ConfigSource(None)
        name = "custom"
    elif isinstance(spec, (str, Path)) and str(spec) in PRESETS:
        text = resources.files("m3gym").joinpath(f"configs/reward/{spec}.yaml").read_text()
        where = f"m3gym:configs/reward/{spec}.yaml"
        data, marks = parse_yaml_text(text, where)
        source, name = ConfigSource(where, marks), str(spec)
    elif isinstance(spec, (str, Path)) and Path(spec).is_file():
        data, marks = read_yaml_file(spec)
        source, name = ConfigSource(str(spec), marks), Path(spec).stem
    else:
        raise ValueError(f"unknown reward {spec!r}: use one of {PRESETS}, a YAML path or a dict")
    cfg = _from_mapping(data, name, source)
    for key, problem in cfg._problems():
        raise source.error(problem, key)
    return cfg


M3_WEIGHT_KEYS: tuple[str, ...] = tuple(f.name for f in fields(M3Weights))
"""The keys ``m3_weights`` may set (the terms of :class:`m3gym.scoring.m3.M3Weights`)."""

_NUMBER_KEYS = ("answer", "progress", "gamma", "m3", "overthink", "invalid_call", "safety",
                "process")


def _from_mapping(data: Any, default_name: str, source: ConfigSource) -> RewardConfig:
    """Return the config of a mapping of settings, each checked (errors name ``source``)."""
    data = source.mapping(data, what="a mapping of reward settings")
    known = {f.name for f in fields(RewardConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        line, column = source.marks.get(unknown[0], (None, None))
        raise ConfigError(source.name, f"unknown reward config keys {unknown}; known: "
                          f"{sorted(known)}", key=unknown[0], line=line, column=column,
                          show_key=False)
    values = dict(data)
    values.setdefault("name", default_name)
    for key in _NUMBER_KEYS:
        if key in values:
            values[key] = source.number(values[key], key)
    if "progress_terminal" in values:
        source.string(values["progress_terminal"], "progress_terminal")
    if "gate_process_by_answer" in values:
        source.boolean(values["gate_process_by_answer"], "gate_process_by_answer")
    values["name"] = str(source.string(values["name"], "name"))
    if "m3_weights" in values:
        weights = source.mapping(values["m3_weights"], "m3_weights")
        source.known_keys(weights, M3_WEIGHT_KEYS, "m3_weights")
        values["m3_weights"] = {k: source.number(v, f"m3_weights.{k}")
                                for k, v in weights.items()}
    return RewardConfig(**values)


class RewardTracker:
    """Computes each step's reward components and the episode's final metrics.

    Checkpoints are verified incrementally (:class:`CheckpointTracker`: per-step cost is that of
    the new calls), so the potential Φ = share of checkpoints passed is known every step. The
    terminal terms (answer, M3, overthink, process) are computed once, when the episode ends;
    on that step the shaping uses Φ(terminal) = 0 (or ``acc × Φ_T`` with
    ``progress_terminal: on_correct``).
    """

    def __init__(self, config: RewardConfig, task: Task, view_size: int = 768,
                 input_views: MutableMapping[tuple[Any, ...], Any] | None = None) -> None:
        self.config = config
        self.task = task
        self.view_size = view_size
        self.checkpoints = CheckpointTracker(task, view_size=view_size, input_views=input_views)
        self.phi = 0.0
        self.last_passed: list[str] = []
        self._final: dict[str, Any] | None = None

    def start(self, state: ImageState) -> None:
        """Register the input images (Φ of the initial state: no checkpoint is passed yet)."""
        self.checkpoints.observe(state, ())
        self.phi = self.checkpoints.progress

    def step(self, state: ImageState, trace: Trace, records: Sequence[TraceCall],
             parse_errors: int, done: bool) -> tuple[float, dict[str, float]]:
        """Return the step reward and its components (which sum to it)."""
        cfg = self.config
        self.last_passed = self.checkpoints.observe(state, [r for r in records if r.ok])
        phi_next = self.checkpoints.progress
        metrics = self.final_info(state, trace)["metrics"] if done else None
        components: dict[str, float] = {}
        if cfg.progress:
            if metrics is not None:  # terminal state: Φ = 0 (or the kept bonus)
                phi_next = (metrics["acc"] * phi_next
                            if cfg.progress_terminal == "on_correct" else 0.0)
            components["progress"] = cfg.progress * (cfg.gamma * phi_next - self.phi)
        self.phi = phi_next
        if cfg.invalid_call:
            failed = sum(1 for r in records if not r.ok) + parse_errors
            components["invalid_call"] = -cfg.invalid_call * failed
        if cfg.safety and self.task.safety:
            step_trace = Trace(steps=[list(records)])
            if done:
                step_trace.answer = trace.answer
            violations = len(evaluate_safety(self.task, step_trace).violations)
            components["safety"] = -cfg.safety * violations
        if metrics is not None:
            acc = metrics["acc"]
            gate = acc if cfg.gate_process_by_answer else 1.0
            components["answer"] = cfg.answer * acc
            if cfg.m3:
                components["m3"] = cfg.m3 * gate * metrics["m3"]
            if cfg.overthink:
                components["overthink"] = -cfg.overthink * metrics["OT"]
            if cfg.process:
                score = (metrics["S"] + metrics["V"]) / 2 * max(0.0, 1.0 - metrics["OT"])
                components["process"] = cfg.process * gate * score
        return float(sum(components.values())), components

    def final_info(self, state: ImageState, trace: Trace) -> dict[str, Any]:
        """Return the end-of-episode info: correctness, ``metrics`` and the ``audit``."""
        if self._final is None:
            self._final = score_episode(self.task, trace, state, view_size=self.view_size,
                                        m3_weights=self.config.m3_weights,
                                        report=self.checkpoints.report())
        return self._final
