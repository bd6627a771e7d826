"""Eval refuses a changed task: every frozen task is checked against its manifest before a run.

A frozen split promises the same tasks on every install. :func:`check_frozen_tasks` builds each
task an evaluation will run (the env builds it again at reset; a task is 0.05-0.3 s) and compares
its :meth:`~m3gym.spec.Task.content_hash` with the manifest's. A mismatch stops the run
before any episode runs, with :class:`ChangedTasksError`: it names the tasks, the library builds
that differ from the ones the manifest was written with, and the fix. ``m3gym eval
--allow-changed-tasks`` runs anyway; the run's ``config.json`` then records the changed tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from m3gym.fingerprint import pixel_library_versions
from m3gym.tasks.registry import make_task


@dataclass(frozen=True)
class ChangedTask:
    """A frozen task whose build on this install differs from its manifest hash."""

    task_id: str
    expected: str
    actual: str


@dataclass
class FrozenCheck:
    """What the check found: the manifest it used, how many tasks it built, which changed."""

    manifest: str
    version: int | None
    checked: int = 0
    changed: list[ChangedTask] = field(default_factory=list)
    allowed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Return the check as recorded in a run's ``config.json``."""
        return {"manifest": self.manifest, "version": self.version, "checked": self.checked,
                "changed": [c.task_id for c in self.changed],
                "allowed_changed_tasks": self.allowed}


class ChangedTasksError(ValueError):
    """Frozen tasks built on this install differ from their manifest (the run did not start)."""


def task_hash(pair: tuple[str, int], config: Mapping[str, Any] | None = None) -> str:
    """Return the content hash of task ``(family, task_seed)`` as built on this install.

    ``config`` is the split's ``make_task`` config (the manifest's ``config``, e.g. photo scenes).
    """
    family, task_seed = pair
    try:
        return make_task(family, int(task_seed), dict(config or {})).content_hash()
    except Exception as exc:  # a removed family or a generator crash is a change, not a crash
        return f"error: {type(exc).__name__}: {exc}"


def check_frozen_tasks(
    pairs: Iterable[tuple[str, int]], expected: Mapping[str, str], manifest: str,
    version: int | None = None,
    map_fn: Callable[[Callable[[tuple[str, int]], str], Sequence[tuple[str, int]]],
                     Iterable[str]] = map,
    config: Mapping[str, Any] | None = None,
) -> FrozenCheck:
    """Build every ``(family, task_seed)`` whose id ``expected`` holds and compare the hashes.

    ``map_fn`` runs :func:`task_hash` over the pairs (``map``, or a process pool's ``imap``);
    ``config`` is the manifest's ``make_task`` config (its ``config`` key), if any.
    Pairs the manifest does not hold are not checked. Returns the :class:`FrozenCheck`.
    """
    todo = sorted({(f, int(s)) for f, s in pairs if f"{f}/{int(s)}" in expected})
    check = FrozenCheck(manifest=manifest, version=version, checked=len(todo))
    hasher = partial(task_hash, config=dict(config)) if config else task_hash
    for (family, seed), actual in zip(todo, map_fn(hasher, todo)):
        task_id = f"{family}/{seed}"
        if actual != expected[task_id]:
            check.changed.append(ChangedTask(task_id, expected[task_id], actual))
    return check


def version_differences(built_with: Mapping[str, Any] | None) -> list[str]:
    """Return ``"name: manifest X, here Y"`` for each library build unlike the manifest's.

    Empty when the manifest does not record its builds (``built_with``) or all agree.
    """
    if not built_with:
        return []
    here = pixel_library_versions()
    return [f"{k}: manifest {built_with.get(k)}, here {here.get(k)}"
            for k in sorted(set(built_with) | set(here)) if built_with.get(k) != here.get(k)]


def changed_tasks_message(check: FrozenCheck, built_with: Mapping[str, Any] | None) -> str:
    """Return the error text of a failed check: the tasks, the differing libraries, the fix."""
    n = len(check.changed)
    shown = "; ".join(f"{c.task_id} (manifest {c.expected[:12]}, built {c.actual[:40]})"
                      for c in check.changed[:8])
    more = f"; and {n - 8} more" if n > 8 else ""
    diffs = version_differences(built_with)
    if diffs:
        why = "Library builds that differ from the manifest's: " + "; ".join(diffs) + "."
    else:
        here = pixel_library_versions()
        why = ("The library builds match the manifest's record (or it has none): "
               + ", ".join(f"{k} {here[k]}" for k in ("numpy", "opencv", "pillow", "freetype"))
               + "; the task code differs from the code that wrote the manifest.")
    return (f"{n} of {check.checked} frozen task(s) of manifest {check.manifest} "
            f"(version {check.version}) differ on this install, so its scores would not be "
            f"comparable: {shown}{more}. {why} Fix: install the dependency versions m3gym "
            "declares (a fresh `pip install -e .` resolves them; 'Frozen tasks' in "
            "docs/evaluation.md says which), or evaluate against a manifest of your own with "
            "--manifest "
            "PATH (`m3gym split-manifest --write` writes one); --allow-changed-tasks runs anyway "
            "and records the changed tasks in the run.")
