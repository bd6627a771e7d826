"""The task-family registry.

A family is a config dataclass (subclass of :class:`FamilyConfig`) with class attributes ``name``,
``level`` and ``domains``, a ``validate()`` method and ``generate(rng) -> Task``. Families register
themselves with :func:`register_family`; :func:`make_task` builds a task from ``(family, seed)``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, TypeVar

import numpy as np

from m3gym.spec import DOMAINS, Task
from m3gym.view import VIEW_SIZE

SUITES: tuple[str, ...] = ("m3bench", "classic", "records")
"""Family suites: the benchmark levels, the low-resolution classic-RL suite, and the tasks built
from user records (:mod:`m3gym.records`)."""


@dataclass
class FamilyConfig:
    """Base class of every task family: a validated config that generates tasks from an rng."""

    name: ClassVar[str] = ""
    level: ClassVar[int] = 0
    domains: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""
    suite: ClassVar[str] = "m3bench"
    """``"m3bench"`` (the benchmark levels) or ``"classic"`` (low-resolution classic-RL tasks)."""
    view_size: ClassVar[int] = VIEW_SIZE
    """Longest side of the agent's view the family is designed (and scored) for."""
    photo_scenes: ClassVar[bool] = False
    """Whether the family draws its object on :func:`~m3gym.tasks.render.photo_scene.surface`,
    so ``scenes="photo"`` / ``backgrounds=FOLDER`` put it into photographs."""
    flat_scene_reason: ClassVar[str] = ""
    """Why a family without photo scenes stays flat (required when ``photo_scenes`` is False)."""

    def validate(self) -> None:
        """Raise ``ValueError`` when the configuration is inconsistent."""

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Return the config-field values that set this family's difficulty in ``[0, 1]``.

        0 is the easiest and 1 the hardest setting of the family's real knobs (evidence size
        and contrast, rotation, clutter, distractor similarity, hops or items; the family's
        docstring lists them). The frozen levels use the default config, not a difficulty.
        """
        raise NotImplementedError(f"family {cls.name!r} declares no difficulty knobs")

    def generate(self, rng: np.random.Generator) -> Task:  # pragma: no cover - abstract
        """Build one task from ``rng`` (the only source of randomness)."""
        raise NotImplementedError


F = TypeVar("F", bound=type[FamilyConfig])
_FAMILIES: dict[str, type[FamilyConfig]] = {}


def register_family(cls: F) -> F:
    """Class decorator: add a family to the registry (names are unique)."""
    if not cls.name or cls.level not in (1, 2, 3):
        raise ValueError(f"family {cls.__name__} needs a name and a level in 1..3")
    if cls.suite not in SUITES:
        raise ValueError(f"family {cls.name!r} has unknown suite {cls.suite!r}")
    if cls.name in _FAMILIES and _FAMILIES[cls.name] is not cls:
        raise ValueError(f"family {cls.name!r} registered twice")
    bad = [d for d in cls.domains if d not in DOMAINS]
    if bad or not cls.domains:
        raise ValueError(f"family {cls.name!r} has invalid domains {cls.domains}")
    _FAMILIES[cls.name] = cls
    return cls


def _load_builtin_families() -> None:
    """Import the modules that define the built-in families (they register on import)."""
    from m3gym.tasks import families  # noqa: F401


PROCEDURAL_SUITES: tuple[str, ...] = ("m3bench", "classic")
"""The suites whose families generate their tasks from the seed alone."""


def family_names(level: int | None = None, suite: str | None = "m3bench") -> list[str]:
    """Return registered family names of ``suite`` (``None``: every procedural suite), sorted.

    ``level`` keeps only that level's families. The default suite is the benchmark's
    (``M3Bench-L1..L3``); the classic-RL families (``suite="classic"``) are listed separately.
    ``None`` lists the :data:`PROCEDURAL_SUITES`: the ``records`` suite builds tasks from user
    data, not from a seed, so what holds for every procedural family (categorical choices,
    difficulty knobs, the offline world, the leak probes) does not apply to it; it is listed
    only by name (``suite="records"``).
    """
    _load_builtin_families()
    if suite is not None and suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; known: {', '.join(SUITES)}")
    return sorted(n for n, c in _FAMILIES.items()
                  if (level is None or c.level == level)
                  and (c.suite in PROCEDURAL_SUITES if suite is None else c.suite == suite))


def get_family(name: str) -> type[FamilyConfig]:
    """Return the family class called ``name``."""
    _load_builtin_families()
    try:
        return _FAMILIES[name]
    except KeyError:
        known = ", ".join(sorted(_FAMILIES))
        raise KeyError(f"unknown task family {name!r}; known: {known}") from None


def task_seed_rng(family: str, seed: int) -> np.random.Generator:
    """Return the generator for ``(family, seed)``: independent of process and hash seed."""
    key = [int(b) for b in family.encode("utf-8")]
    return np.random.default_rng(np.random.SeedSequence(entropy=int(seed), spawn_key=key))


TRAIN_SEED_LIMIT: int = 1_000_000_000
"""Training task seeds lie in ``[0, TRAIN_SEED_LIMIT)``; larger ones are held out (frozen)."""

HELD_OUT_SEED_BASE: int = TRAIN_SEED_LIMIT
"""First held-out seed of the audits: the frozen ``test`` split's range (the test world, never
used in training)."""


def held_out_seed(family: str, i: int) -> int:
    """Return the ``i``-th held-out seed of ``family`` (in the frozen test split's range)."""
    return HELD_OUT_SEED_BASE + get_family(family).level * 10_000_000 + i


def world_split_for_seed(seed: int) -> str:
    """Return the offline world a task seed draws its entities from: ``"train"`` or ``"test"``.

    Held-out seeds (``>= TRAIN_SEED_LIMIT``, the frozen ``test``/``val`` splits) use the test world,
    whose entity names, logos, urls and codes are disjoint from the training world's.
    """
    return "train" if int(seed) < TRAIN_SEED_LIMIT else "test"


def check_difficulty(difficulty: float) -> float:
    """Return ``difficulty`` as a float after checking it lies in ``[0, 1]``."""
    value = float(difficulty)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"difficulty must lie in [0, 1], got {difficulty!r}")
    return value


def make_task(family: str, seed: int, config: dict[str, Any] | None = None,
              difficulty: float | None = None) -> Task:
    """Build the task of ``family`` for ``seed`` (byte-identical in any process).

    ``difficulty`` in ``[0, 1]`` sets the family's knobs (:meth:`FamilyConfig.difficulty_knobs`);
    keys given in ``config`` override them. ``None`` keeps the family's default config.

    Families with a ``split`` field (the offline world they draw entities from) get
    :func:`world_split_for_seed` unless ``config`` sets ``split``: a held-out seed is always built
    in the test world, whoever builds it (the env, the eval runner, a manifest check).
    """
    cls = get_family(family)
    config = dict(config or {})
    if difficulty is not None:
        config = {**cls.difficulty_knobs(check_difficulty(difficulty)), **config}
    if "split" not in config and any(f.name == "split" for f in fields(cls)):
        config["split"] = world_split_for_seed(seed)
    if "task_seed" not in config and any(f.name == "task_seed" for f in fields(cls)):
        config["task_seed"] = int(seed)  # families that index data by seed (records)
    # allow_outside is the data-folder opt-in: the scene reads it; a family with a field of that
    # name (records) reads it too
    allow_outside = bool(config.get("allow_outside", False))
    if "allow_outside" in config and not any(f.name == "allow_outside" for f in fields(cls)):
        del config["allow_outside"]
    scene_options = {k: config.pop(k) for k in SCENE_OPTION_KEYS if k in config}
    if allow_outside and scene_options:
        scene_options["allow_outside"] = True
    cfg = cls(**config)
    cfg.validate()
    rng = task_seed_rng(family, seed)
    if not scene_options or not cls.photo_scenes:
        if scene_options:
            _check_scene_options(scene_options)
        return replace(cfg.generate(rng), task_id=f"{family}/{seed}")
    from m3gym.tasks.render.photo_scene import (
        active_photo_scene,
        finish_photo_task,
        scene_for_task,
    )
    from m3gym.tasks.verify import reference_checkpoints_pass

    source = _check_scene_options(scene_options)
    if source is None:  # scenes="flat"
        return replace(cfg.generate(rng), task_id=f"{family}/{seed}")
    scene = scene_for_task(source, family, seed, difficulty,
                           scene_options.get("photo_clutter"), scene_options.get("photo_camera"))
    with active_photo_scene(scene):
        task = cfg.generate(rng)
    finished = finish_photo_task(task, scene, reference_checkpoints_pass)
    return replace(finished, task_id=f"{family}/{seed}")


SCENE_OPTION_KEYS: tuple[str, ...] = ("scenes", "backgrounds", "photo_clutter", "photo_camera")
"""Keys of a ``make_task`` config that choose the scene (photographs), not the family's fields.

``scenes="photo"`` draws the scene into the bundled photographs, ``backgrounds=FOLDER`` into a
folder of the user's; ``photo_clutter`` / ``photo_camera`` in ``[0, 1]`` set the backdrop's
clutter and the camera finish (by default the difficulty sets them). Families whose
``photo_scenes`` is False ignore them (their ``flat_scene_reason`` says why).
"""


def _check_scene_options(options: dict[str, Any]) -> Any:
    """Return the photo source the scene options name (``None``: flat), raising on bad ones."""
    from m3gym.tasks.render.photos import photo_source

    for key in ("photo_clutter", "photo_camera"):
        if key in options:
            value = float(options[key])
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{key} must lie in [0, 1], got {options[key]!r}")
    source = photo_source(options.get("scenes"), options.get("backgrounds"),
                          allow_outside=bool(options.get("allow_outside", False)))
    if source is None and options.get("scenes") is None and any(
            k in options for k in ("photo_clutter", "photo_camera")):
        raise ValueError("photo_clutter / photo_camera need scenes='photo' or backgrounds=FOLDER")
    return source
