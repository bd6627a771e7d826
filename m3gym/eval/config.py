"""The settings of an evaluation run and the episodes it plans and produces.

:class:`EvalConfig` is everything that defines a run (``m3gym eval``'s flags); a run plans
:class:`EpisodeSpec` s (:mod:`m3gym.eval.plan`), runs each into an :class:`EpisodeOutcome`
(:mod:`m3gym.eval.outcome`) and writes those into its run folder (:mod:`m3gym.eval.runner`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from m3gym.deprecation import renamed_attribute

METRIC_KEYS: tuple[str, ...] = (
    "acc", "S", "V", "V_tool", "V_true", "OT", "multi_modal", "multi_hop", "multi_threaded", "m3",
    "recall", "precision", "arg_similarity", "arg_similarity_strong", "step_coherence",
    "order_consistency", "merge_purity", "safety", "safety_violations", "failure_mode", "calls",
    "failed_calls", "rounds",
)
"""Metric keys of the env's final ``info["metrics"]`` copied into every episode row."""

RERUN_STATUSES: frozenset[str] = frozenset({"infra_error", "agent_error", "env_error"})
"""Episode statuses that are not scored and are run again on ``--resume``."""

DEFAULT_EPISODES: int = 30
"""Episodes per env of the default ``m3gym eval`` (all three levels, test split)."""

class EvalAbort(RuntimeError):
    """The run was stopped early (e.g. the model endpoint is unreachable); finished work is kept."""


@dataclass(frozen=True)
class EvalConfig:
    """Everything that defines an evaluation run.

    Attributes:
        envs: env ids (level ids such as ``M3Bench-L2`` or family ids).
        agent: an agent name known to :func:`m3gym.agents.make_agent`, or ``module:attr`` of a
            factory called as ``factory(seed=..., **agent_args)``.
        episodes: episodes per env.
        split: ``test`` / ``val`` (frozen task lists) or ``train`` (random training seeds).
        seed: run seed (episode reset seeds and ``train`` draws derive from it).
        reward: reward preset name or YAML path passed to the env.
        workers: processes; each builds its own env (results are identical for any count).
        agent_args / env_args: keyword arguments for the agent factory / ``gym.make``.
        max_consecutive_infra: abort after this many infrastructure errors in a row.
        thumb_size: longest side of the stored JPEG thumbnails; ``max_thumbs`` caps them.
        samples: rollouts per task (``--samples k``: pass@k, per-task success variance).
        manifest: a manifest file to take the frozen split's tasks and hashes from (default:
            the one inside the package).
        allow_changed_tasks: run even when frozen tasks differ from the manifest (recorded).
        judge_endpoint / judge_model: an OpenAI-compatible endpoint (and model; ``None``: the
            first it lists) that scores records' judge checkpoints after each episode
            (:func:`judge_block`); ``None`` (the default) leaves them "not judged".
    """

    envs: tuple[str, ...]
    agent: str
    episodes: int = DEFAULT_EPISODES
    split: str = "test"
    seed: int = 0
    reward: str = "m3"
    workers: int = 1
    agent_args: Mapping[str, Any] = field(default_factory=dict)
    env_args: Mapping[str, Any] = field(default_factory=dict)
    max_consecutive_infra: int = 3
    thumb_size: int = 256
    max_thumbs: int = 24
    samples: int = 1
    manifest: str | None = None
    allow_changed_tasks: bool = False
    judge_endpoint: str | None = None
    judge_model: str | None = None

    def identity(self) -> dict[str, Any]:
        """Return the settings that must not change when a run is resumed."""
        return {"agent": self.agent, "agent_args": dict(self.agent_args), "split": self.split,
                "seed": self.seed, "reward": self.reward, "env_args": dict(self.env_args),
                **({"samples": self.samples} if self.samples != 1 else {}),
                **({"manifest": self.manifest} if self.manifest else {}),
                **({"judge": {"endpoint": self.judge_endpoint, "model": self.judge_model}}
                   if self.judge_endpoint else {})}

    def manifest_data(self) -> dict[str, Any] | None:
        """Return the manifest of the run's frozen split (``None``: none, or not a frozen split)."""
        from m3gym.eval.splits import FROZEN_SPLITS, load_manifest

        if self.manifest or self.split in FROZEN_SPLITS:
            return load_manifest(self.split, self.manifest)
        return None

    def to_dict(self) -> dict[str, Any]:
        """Return the config as a JSON-serializable dict."""
        out = asdict(self)
        out["envs"] = list(self.envs)
        out["agent_args"] = dict(self.agent_args)
        out["env_args"] = dict(self.env_args)
        return out


@dataclass(frozen=True)
class EpisodeSpec:
    """One planned episode: which env, which task, which reset seed."""

    index: int
    episode_id: str
    env_id: str
    level: int | None
    family: str
    task_seed: int
    seed: int


@dataclass
class EpisodeOutcome:
    """What one episode produced: its row, its trace and its thumbnails (JPEG bytes)."""

    row: dict[str, Any]
    trace: dict[str, Any]
    thumbs: dict[int, bytes] = field(default_factory=dict)

    record = renamed_attribute("m3gym.eval.config.EpisodeOutcome", "record", "row")


def parse_key_values(items: Iterable[str]) -> dict[str, Any]:
    """Return ``{"k": value}`` from ``k=value`` strings; values are JSON when they parse."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected key=value, got {item!r}")
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out
