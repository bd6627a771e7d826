"""The ``M3Bench-Records`` env: :class:`~m3gym.env.M3BenchEnv` on the ``records`` family.

It sits beside the env (it is one): :mod:`m3gym.records` turns records into tasks and sits with
the task families, below the env. (It was ``m3gym.wrappers.records``, though it wraps nothing;
that path still imports, with a deprecation warning.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from m3gym.env import M3BenchEnv
from m3gym.records.family import DEMO_RECORDS, FAMILY, cached_records
from m3gym.records.guard import DEFAULT_BUDGET, pixel_budget
from m3gym.registration import versioned_id

RECORDS_ENV_ID: str = versioned_id("M3Bench-Records")
"""Env id of the records env (``M3Bench-Records-v4``)."""

ENTRY_POINT: str = "m3gym.records_env:RecordsEnv"
"""Gymnasium entry point of :data:`RECORDS_ENV_ID`."""


class RecordsEnv(M3BenchEnv):
    """``M3BenchEnv`` on the ``records`` family: ``gym.make("M3Bench-Records-v4", records=...)``.

    Args:
        records: a records path, a list of record dicts or a loaded :class:`Records`
            (default: the bundled demo set, :data:`DEMO_RECORDS`).
        split: ``train``, ``test`` or ``all`` for every episode; ``None`` (default) follows the
            task seed (training seeds draw train records).
        allow_outside: let image paths leave the records' folder (absolute paths, ``..``,
            symlinks); refused by default, warned about when set (``docs/records.md``).
        max_image_pixels / max_record_pixels: the pixel budget per image and per record (one
            episode's input), from the image headers; ``None``: the defaults.
        **kwargs: the other :class:`~m3gym.env.M3BenchEnv` arguments (``family`` and
            ``family_config`` are set here).
    """

    def __init__(self, records: Any = None, split: str | None = None,
                 allow_outside: bool = False, max_image_pixels: int | None = None,
                 max_record_pixels: int | None = None, **kwargs: Any) -> None:
        if kwargs.pop("family", FAMILY) != FAMILY:
            raise TypeError(f"M3Bench-Records draws only the {FAMILY!r} family")
        for key in ("level", "suite", "family_config"):
            if key in kwargs:
                raise TypeError(f"M3Bench-Records takes no {key!r} argument")
        source: Any = DEMO_RECORDS if records is None else records
        if isinstance(source, (str, Path)):
            source = str(Path(source).expanduser().resolve())
        config: dict[str, Any] = {"records": source}
        if split is not None:
            config["split"] = split
        if allow_outside:
            config["allow_outside"] = True
        budget = pixel_budget(max_image_pixels, max_record_pixels)
        if budget != DEFAULT_BUDGET:
            config.update(max_image_pixels=budget.image, max_record_pixels=budget.record)
        # a bad file fails here, with every rejected record listed
        cached_records(source, bool(allow_outside), budget)
        super().__init__(family=FAMILY, family_config=config, allow_outside=allow_outside,
                         **kwargs)
        self.records = cached_records(source, bool(allow_outside), budget)
        """The loaded records (:class:`~m3gym.records.load.Records`)."""


def register_records_env() -> None:
    """Register ``M3Bench-Records-v4`` (idempotent; before the per-family ids)."""
    from gymnasium.envs.registration import register, registry

    if RECORDS_ENV_ID not in registry:
        register(id=RECORDS_ENV_ID, entry_point=ENTRY_POINT, kwargs={"family": FAMILY})
