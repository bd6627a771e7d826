"""A success-driven task sampler over (family, difficulty): learning progress or a success band.

The curriculum splits ``[0, 1]`` into ``bins`` difficulty bins and keeps, per *arm*
``(family, bin)``, two exponential moving averages of episode success — a fast one (rate
``fast``) and a slow one (rate ``slow``), both starting at 0 — and the counts. Each arm gets a
score:

* ``mode="progress"`` (teacher–student curriculum, Matiisen et al. 2017; the spirit of
  prioritized level replay): ``|fast EMA − slow EMA|``, the learning progress. Arms the policy is
  getting better (or worse) at score high; arms it always fails (both EMAs stay 0) or has
  mastered (both converge to 1) fade out.
* ``mode="band"`` (success-band filtering, as in reasoning-gym's curricula): 1 for an arm whose
  fast success EMA lies in ``band = (lo, hi)``, else ``outside`` (small, so an arm can come back).

Arms never tried score ``1`` (each is tried early). The sampling distribution mixes the scores
with uniform exploration: ``p = (1 − epsilon) · score / Σ score + epsilon / n_arms``. A sampled
difficulty is uniform within the arm's bin.

The sampler is deterministic given its seed and the outcomes fed to it: :meth:`Curriculum.sample`
draws from the generator it is given (the env's ``np_random``) or, without one, from its own
(seeded by ``seed``, saved in the state). :meth:`state_dict` / :meth:`load_state_dict` round-trip
everything through JSON, so the state is saved with a checkpoint and restored with it.

Use it as an env option (``gym.make("M3Bench-L2", curriculum=Curriculum(...))`` or a dict of the
constructor's arguments), in ``training/train_sb3.py`` (config key ``curriculum:``) and in the
RL-fine-tuning dataset builder (:func:`m3gym.integrations.export.curriculum_rows`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from m3gym.config_errors import ConfigError, ConfigSource, read_json_file
from m3gym.tasks.registry import check_difficulty, get_family

MODES: tuple[str, ...] = ("progress", "band")
"""The scoring rules of :class:`Curriculum`."""

STATE_VERSION = 1
"""Version of :meth:`Curriculum.state_dict`'s layout."""


@dataclass
class ArmStats:
    """Outcome statistics of one ``(family, bin)`` arm."""

    fast: float = 0.0
    slow: float = 0.0
    count: int = 0
    successes: int = 0

    def update(self, success: float, fast: float, slow: float) -> None:
        """Fold one outcome (1 = success, 0 = failure; fractions allowed) into the EMAs."""
        self.fast += fast * (success - self.fast)
        self.slow += slow * (success - self.slow)
        self.count += 1
        self.successes += int(success >= 0.5)

    def to_dict(self) -> dict[str, Any]:
        """Return the stats as JSON-serializable data."""
        return {"fast": self.fast, "slow": self.slow, "count": self.count,
                "successes": self.successes}


@dataclass
class Curriculum:
    """Success-driven sampler of ``(family, difficulty)``; see the module docstring.

    Args:
        families: the families to draw from (names of registered families).
        bins: number of equal difficulty bins over ``[0, 1]``.
        mode: ``"progress"`` (learning progress) or ``"band"`` (success band).
        band: ``(lo, hi)`` success band of ``mode="band"``.
        outside: score of an arm outside the band (``mode="band"``).
        fast: rate of the fast success EMA (``0 < slow < fast <= 1``).
        slow: rate of the slow success EMA.
        epsilon: share of uniform exploration over all arms.
        seed: seed of the sampler's own generator (used when ``sample`` gets no rng).
    """

    families: Sequence[str]
    bins: int = 5
    mode: str = "progress"
    band: tuple[float, float] = (0.2, 0.8)
    outside: float = 0.05
    fast: float = 0.2
    slow: float = 0.02
    epsilon: float = 0.1
    seed: int = 0
    stats: dict[tuple[str, int], ArmStats] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.families = tuple(str(f) for f in self.families)
        self.band = (float(self.band[0]), float(self.band[1]))
        self.validate()
        for f in self.families:
            get_family(f)
        self.stats = {arm: self.stats.get(arm, ArmStats()) for arm in self.arms}
        self._rng = np.random.default_rng(self.seed)

    def validate(self) -> None:
        """Raise ``ValueError`` on an inconsistent configuration."""
        if not self.families or len(set(self.families)) != len(self.families):
            raise ValueError(f"families must be non-empty and distinct, got {self.families}")
        if not 1 <= int(self.bins) <= 100:
            raise ValueError(f"bins must lie in 1..100, got {self.bins}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if not 0.0 <= self.band[0] <= self.band[1] <= 1.0:
            raise ValueError(f"band must be (lo, hi) with 0 <= lo <= hi <= 1, got {self.band}")
        if not 0.0 <= self.outside <= 1.0:
            raise ValueError(f"outside must lie in [0, 1], got {self.outside}")
        if not 0.0 < self.slow < self.fast <= 1.0:
            raise ValueError(f"need 0 < slow < fast <= 1, got fast={self.fast}, slow={self.slow}")
        if not 0.0 <= self.epsilon <= 1.0:
            raise ValueError(f"epsilon must lie in [0, 1], got {self.epsilon}")

    # ------------------------------------------------------------------ arms
    @property
    def arms(self) -> list[tuple[str, int]]:
        """All ``(family, bin)`` arms in a fixed order."""
        return [(f, b) for f in self.families for b in range(int(self.bins))]

    def bin_of(self, difficulty: float) -> int:
        """Return the bin of ``difficulty`` (``[0, 1]``; 1 falls in the last bin)."""
        d = check_difficulty(difficulty)
        return min(int(d * self.bins), int(self.bins) - 1)

    def score(self, arm: tuple[str, int]) -> float:
        """Return the arm's unnormalized priority (1 for an arm never tried)."""
        s = self.stats[arm]
        if s.count == 0:
            return 1.0
        if self.mode == "progress":
            return abs(s.fast - s.slow)
        lo, hi = self.band
        return 1.0 if lo <= s.fast <= hi else self.outside

    def probabilities(self) -> np.ndarray:
        """Return the sampling probability of each arm (order of :attr:`arms`)."""
        scores = np.array([self.score(a) for a in self.arms], dtype=np.float64)
        n = len(scores)
        total = scores.sum()
        greedy = scores / total if total > 0 else np.full(n, 1.0 / n)
        return (1.0 - self.epsilon) * greedy + self.epsilon / n

    # ------------------------------------------------------------------ API
    def sample(self, rng: np.random.Generator | None = None) -> tuple[str, float]:
        """Draw ``(family, difficulty)``: an arm by :meth:`probabilities`, a difficulty in its bin.

        ``rng`` (e.g. the env's ``np_random``) supplies the randomness; without it the sampler's
        own generator does.
        """
        gen = self._rng if rng is None else rng
        arms = self.arms
        k = int(gen.choice(len(arms), p=self.probabilities()))
        family, b = arms[k]
        difficulty = (b + float(gen.random())) / self.bins
        return family, min(1.0, difficulty)

    def update(self, family: str, difficulty: float, success: float | bool) -> None:
        """Feed one episode outcome of ``family`` at ``difficulty`` (success 1/0 or a fraction)."""
        arm = (str(family), self.bin_of(difficulty))
        if arm not in self.stats:
            raise KeyError(f"family {family!r} is not in this curriculum ({self.families})")
        value = float(success)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"success must lie in [0, 1], got {success!r}")
        self.stats[arm].update(value, self.fast, self.slow)

    def summary(self) -> list[dict[str, Any]]:
        """Return one row per arm: family, bin, probability, counts and EMAs (for logging)."""
        probs = self.probabilities()
        return [{"family": f, "bin": b, "p": float(p), **self.stats[(f, b)].to_dict()}
                for (f, b), p in zip(self.arms, probs)]

    # ------------------------------------------------------------------ state
    def config_dict(self) -> dict[str, Any]:
        """Return the constructor arguments (JSON-serializable)."""
        return {"families": list(self.families), "bins": int(self.bins), "mode": self.mode,
                "band": list(self.band), "outside": self.outside, "fast": self.fast,
                "slow": self.slow, "epsilon": self.epsilon, "seed": int(self.seed)}

    def state_dict(self) -> dict[str, Any]:
        """Return the full state (config, arm statistics, own generator) as JSON-able data."""
        return {"version": STATE_VERSION, "config": self.config_dict(),
                "arms": [[f, b, self.stats[(f, b)].to_dict()] for f, b in self.arms],
                "rng": _jsonable(self._rng.bit_generator.state)}

    def load_state_dict(self, state: Mapping[str, Any], source: str | None = None) -> None:
        """Restore a :meth:`state_dict` (its config must describe the same arms).

        A malformed state (a missing or mistyped key, another version, other arms, a generator
        state that does not fit) raises :class:`~m3gym.config_errors.ConfigError` naming
        ``source`` (the file it came from, if any) and the key, before anything is changed.
        """
        src = ConfigSource(source)
        config = check_state(state, src)
        if list(config["families"]) != list(self.families) or int(config["bins"]) != self.bins:
            raise src.error(f"state is for families {config['families']} x {config['bins']} "
                            f"bins, this curriculum has {list(self.families)} x {self.bins}",
                            "config")
        _build(config, src)  # the settings are consistent: nothing below can fail half-way
        arms = set(self.arms)
        for i, (f, b, _) in enumerate(state["arms"]):
            if (f, int(b)) not in arms:
                raise src.error(f"arm ({f!r}, {b}) is not one of this curriculum's arms",
                                f"arms[{i}]")
        for key in ("mode", "outside", "fast", "slow", "epsilon", "seed"):
            setattr(self, key, config[key])
        self.band = config["band"]
        self.validate()
        for f, b, st in state["arms"]:
            self.stats[(str(f), int(b))] = ArmStats(float(st["fast"]), float(st["slow"]),
                                                    int(st["count"]), int(st["successes"]))
        self._rng.bit_generator.state = state["rng"]

    @classmethod
    def from_state_dict(cls, state: Mapping[str, Any], source: str | None = None) -> Curriculum:
        """Return a curriculum rebuilt from :meth:`state_dict`.

        The state is checked as in :meth:`load_state_dict` (errors name ``source``).
        """
        src = ConfigSource(source)
        cur = _build(check_state(state, src), src)
        cur.load_state_dict(state, source)
        return cur

    def save(self, path: str | Path) -> None:
        """Write :meth:`state_dict` as JSON to ``path``."""
        Path(path).write_text(json.dumps(self.state_dict(), indent=1))

    @classmethod
    def load(cls, path: str | Path) -> Curriculum:
        """Return the curriculum saved at ``path`` by :meth:`save`.

        A file that is not valid JSON or not a curriculum state raises
        :class:`~m3gym.config_errors.ConfigError` naming the file (line, column, key).
        """
        return cls.from_state_dict(read_json_file(path), str(path))


CONFIG_KEYS: tuple[str, ...] = ("families", "bins", "mode", "band", "outside", "fast", "slow",
                                "epsilon", "seed")
"""The settings of a :class:`Curriculum`: its constructor's arguments (``config_dict``)."""

STATE_KEYS: tuple[str, ...] = ("version", "config", "arms", "rng")
"""The keys of a :meth:`Curriculum.state_dict`."""

_ARM_KEYS: tuple[str, ...] = ("fast", "slow", "count", "successes")


def check_config(config: Any, src: ConfigSource, prefix: str | None = None,
                 required: Sequence[str] = ()) -> dict[str, Any]:
    """Return curriculum settings checked key by key (unknown keys, types), ready to construct.

    ``prefix`` is the dotted key the settings sit under (``config`` in a state); ``required``
    lists keys that must be present. Ranges are checked by :meth:`Curriculum.validate`.
    """
    def key(name: str) -> str:
        return f"{prefix}.{name}" if prefix else name

    data = src.mapping(config, prefix, "a mapping of curriculum settings")
    src.known_keys(data, CONFIG_KEYS, prefix)
    src.require(data, required, prefix)
    args = dict(data)
    if "families" in args:
        fams = src.sequence(args["families"], key("families"))
        args["families"] = [src.string(f, f"{key('families')}[{i}]") for i, f in enumerate(fams)]
    for name in ("bins", "seed"):
        if name in args:
            args[name] = src.integer(args[name], key(name))
    if "mode" in args:
        src.string(args["mode"], key("mode"))
    for name in ("outside", "fast", "slow", "epsilon"):
        if name in args:
            args[name] = src.number(args[name], key(name))
    if "band" in args:
        band = src.sequence(args["band"], key("band"))
        if len(band) != 2:
            raise src.error(f"expected [lo, hi], got {band!r}", key("band"))
        args["band"] = tuple(src.number(v, f"{key('band')}[{i}]") for i, v in enumerate(band))
    return args


def check_state(state: Any, src: ConfigSource) -> dict[str, Any]:
    """Check the layout of a :meth:`Curriculum.state_dict`; return its checked ``config``."""
    data = src.mapping(state, None, "a curriculum state (a JSON object)")
    src.known_keys(data, STATE_KEYS)
    src.require(data, STATE_KEYS)
    if type(data["version"]) is not int or data["version"] != STATE_VERSION:
        raise src.error(f"unsupported curriculum state version {data['version']!r} (this m3gym "
                        f"reads version {STATE_VERSION})", "version")
    config = check_config(data["config"], src, "config", required=CONFIG_KEYS)
    for i, arm in enumerate(src.sequence(data["arms"], "arms")):
        where = f"arms[{i}]"
        if not isinstance(arm, (list, tuple)) or len(arm) != 3:
            raise src.error(f"expected [family, bin, stats], got {arm!r}", where)
        src.string(arm[0], f"{where}[0]")
        src.integer(arm[1], f"{where}[1]")
        st = src.mapping(arm[2], f"{where}[2]")
        src.known_keys(st, _ARM_KEYS, f"{where}[2]")
        src.require(st, _ARM_KEYS, f"{where}[2]")
        for name in ("fast", "slow"):
            src.number(st[name], f"{where}[2].{name}")
        for name in ("count", "successes"):
            src.integer(st[name], f"{where}[2].{name}")
    rng = src.mapping(data["rng"], "rng")
    try:
        np.random.default_rng().bit_generator.state = dict(rng)
    except (ValueError, TypeError, KeyError) as exc:
        raise src.error(f"not a state of the curriculum's generator (PCG64): {exc}",
                        "rng") from None
    return config


def _build(args: Mapping[str, Any], src: ConfigSource) -> Curriculum:
    """Return ``Curriculum(**args)``; a refused setting or family is a ConfigError."""
    try:
        return Curriculum(**args)
    except (ValueError, KeyError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise src.error(str(exc.args[0]) if exc.args else str(exc)) from None


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, np.integer):
        return int(value)
    return value


def make_curriculum(spec: Curriculum | Mapping[str, Any] | str | Path,
                    families: Sequence[str], source: str | None = None) -> Curriculum:
    """Return a :class:`Curriculum` from an instance, a dict of its arguments, or a state file.

    A dict without ``families`` draws from ``families`` (the env's). A dict may name a saved
    state with ``state: path`` (restored after construction). A string or path is a JSON file
    written by :meth:`Curriculum.save`. Malformed settings or files raise
    :class:`~m3gym.config_errors.ConfigError` naming ``source`` (default ``curriculum``) or the
    file, and the key.
    """
    if isinstance(spec, Curriculum):
        return spec
    if isinstance(spec, (str, Path)):
        return Curriculum.load(spec)
    if not isinstance(spec, Mapping):
        raise TypeError(f"curriculum must be a Curriculum, a dict or a state path, got "
                        f"{type(spec).__name__}")
    src = ConfigSource(source or "curriculum")
    src.known_keys(src.mapping(spec), (*CONFIG_KEYS, "state"))
    args = dict(spec)
    state_path = args.pop("state", None)
    if state_path is not None and not isinstance(state_path, (str, Path)):
        raise src.error(f"expected the path of a saved state, got {state_path!r}", "state")
    args.setdefault("families", list(families))
    cur = _build(check_config(args, src), src)
    if state_path:
        cur.load_state_dict(read_json_file(state_path), str(state_path))
    return cur
