"""Frozen evaluation splits: fixed ``(family, task_seed)`` lists per level, with content hashes.

The ``test`` split holds :data:`TASKS_PER_LEVEL` tasks per level, dealt round-robin over the
level's families (sorted by name) with task seeds from ``SPLIT_SEED_BASES["test"] + level * 10**7``
upward, so they never meet the training range ``[0, 1e9)``; tasks of families that draw from the
offline world are built in the *test* world (:func:`m3gym.tasks.registry.world_split_for_seed`),
whose entities, names, logos, urls and codes never occur in training. The committed manifest
(``m3gym/data/splits/test.json``) freezes the list and records ``Task.content_hash()`` per task;
:func:`check_manifest` regenerates tasks and reports every hash that no longer matches (a task
generator changed the bytes of a frozen task). ``m3gym split-manifest --write`` rewrites it.

**Versions.** :data:`~m3gym.versions.MANIFEST_VERSION` names the tasks, not the file:
:data:`~m3gym.versions.MANIFEST_DIGESTS` (in :mod:`m3gym.versions`, below every layer)
records the :func:`manifest_digest` of every version's task list, and a test fails when the
committed manifest's tasks differ from its version's digest. Changing a frozen task therefore
means a new version, a new digest and a CHANGELOG entry. The manifest also records the library
builds it was written with (``built_with``), so a mismatch on another install can be explained.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from m3gym.tasks.registry import family_names, make_task
from m3gym.versions import MANIFEST_VERSION

SPLIT_SEED_BASES: dict[str, int] = {"test": 1_000_000_000, "val": 2_000_000_000,
                                     "test-photo": 1_500_000_000}
"""First task seed of each frozen split (all above the training range)."""

SPLIT_CONFIGS: dict[str, dict[str, Any]] = {"test-photo": {"scenes": "photo"}}
"""The ``make_task`` config a split's tasks are built with (``test-photo``: the procedural
scenes drawn into the bundled photographs, :mod:`m3gym.tasks.render.photo_scene`). A split with a
config holds only the families it applies to (those with ``photo_scenes``)."""

SPLIT_TASKS_PER_LEVEL: dict[str, int] = {"test-photo": 100}
"""Tasks per level of the splits that do not hold :data:`TASKS_PER_LEVEL`."""

FROZEN_SPLITS: tuple[str, ...] = tuple(SPLIT_SEED_BASES)
"""Names of the splits built from a fixed seed list (``train`` draws random training seeds)."""

TASKS_PER_LEVEL: int = 200
"""Tasks per level in a frozen split."""

LEVELS: tuple[int, ...] = (1, 2, 3)
"""Levels of the frozen splits."""

@dataclass(frozen=True)
class SplitEntry:
    """One task of a split: its family, task seed, id and (in a manifest) content hash."""

    family: str
    task_seed: int
    task_id: str
    hash: str | None = None


@dataclass(frozen=True)
class HashMismatch:
    """A manifest entry whose regenerated task differs (``actual`` is the error text on failure)."""

    level: int
    task_id: str
    expected: str | None
    actual: str


def split_config(split: str) -> dict[str, Any]:
    """Return the ``make_task`` config of ``split``'s tasks (empty for the flat splits)."""
    return dict(SPLIT_CONFIGS.get(split, {}))


def split_families(split: str, level: int) -> list[str]:
    """Return the families of ``level`` that ``split`` deals its tasks over (sorted)."""
    families = family_names(level)
    if split_config(split).get("scenes") == "photo":
        from m3gym.tasks.registry import get_family

        families = [f for f in families if get_family(f).photo_scenes]
    return families


def level_seed_base(split: str, level: int) -> int:
    """Return the first task seed of ``level`` in the frozen split ``split``."""
    if split not in SPLIT_SEED_BASES:
        raise ValueError(f"unknown split {split!r}; frozen splits: {', '.join(FROZEN_SPLITS)}")
    return SPLIT_SEED_BASES[split] + level * 10_000_000


def generate_split_entries(split: str, level: int, n: int | None = None) -> list[SplitEntry]:
    """Return the rule-generated entries of a level (no hashes): round-robin over its families.

    ``n`` defaults to the split's size (:data:`SPLIT_TASKS_PER_LEVEL`, else
    :data:`TASKS_PER_LEVEL`).
    """
    if n is None:
        n = SPLIT_TASKS_PER_LEVEL.get(split, TASKS_PER_LEVEL)
    families = split_families(split, level)
    if not families:
        return []
    base = level_seed_base(split, level)
    out = []
    for i in range(n):
        family = families[i % len(families)]
        out.append(SplitEntry(family, base + i, f"{family}/{base + i}"))
    return out


def manifest_path(split: str) -> Path:
    """Return the path of the committed manifest of ``split`` inside the package."""
    return Path(str(resources.files("m3gym").joinpath(f"data/splits/{split}.json")))


def build_manifest(split: str = "test", per_level: int | None = None) -> dict[str, Any]:
    """Generate every task of ``split`` and return the manifest dict (with content hashes).

    A split with a config (:data:`SPLIT_CONFIGS`) records it as ``config``; its tasks are built
    and checked with it.
    """
    levels: dict[str, list[dict[str, Any]]] = {}
    config = split_config(split)
    if per_level is None:
        per_level = SPLIT_TASKS_PER_LEVEL.get(split, TASKS_PER_LEVEL)
    for level in LEVELS:
        entries = []
        for e in generate_split_entries(split, level, per_level):
            task = make_task(e.family, e.task_seed, config)
            entries.append(asdict(SplitEntry(e.family, e.task_seed, task.task_id,
                                              task.content_hash())))
        levels[str(level)] = entries
    from m3gym.fingerprint import pixel_library_versions

    return {"split": split, "version": manifest_version(split), "tasks_per_level": per_level,
            "seed_bases": {str(lv): level_seed_base(split, lv) for lv in LEVELS},
            "built_with": pixel_library_versions(), "levels": levels,
            **({"config": config} if config else {})}


def manifest_version(split: str) -> int:
    """Return the version of ``split``'s committed task list (``test-photo`` has its own)."""
    from m3gym.versions import PHOTO_MANIFEST_VERSION

    return PHOTO_MANIFEST_VERSION if split in SPLIT_CONFIGS else MANIFEST_VERSION


def manifest_digest(manifest: dict[str, Any]) -> str:
    """Return a SHA-256 over the manifest's tasks: level, task id and content hash, in order.

    Only the tasks count (not ``built_with`` or the file's layout), so the digest changes exactly
    when a frozen task does.
    """
    h = hashlib.sha256()
    for level in sorted(manifest["levels"], key=int):
        for e in manifest["levels"][level]:
            h.update(f"{level} {e['task_id']} {e['hash']}\n".encode())
    return h.hexdigest()


def manifest_hashes(manifest: dict[str, Any]) -> dict[str, str]:
    """Return ``task_id -> content hash`` of every task in ``manifest``."""
    return {e["task_id"]: e["hash"] for entries in manifest["levels"].values() for e in entries}


def write_manifest(split: str = "test", per_level: int | None = None,
                   path: Path | None = None) -> Path:
    """Regenerate the manifest of ``split`` and write it (sorted keys, one entry a line)."""
    manifest = build_manifest(split, per_level)
    target = Path(path) if path is not None else manifest_path(split)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(dump_manifest(manifest))
    return target


def dump_manifest(manifest: dict[str, Any]) -> str:
    """Return the manifest as stable JSON text with one task per line (diff-friendly)."""
    head = {k: v for k, v in manifest.items() if k != "levels"}
    lines = ["{"]
    for key in sorted(head):
        lines.append(f"  {json.dumps(key)}: {json.dumps(head[key], sort_keys=True)},")
    lines.append('  "levels": {')
    level_keys = sorted(manifest["levels"])
    for li, level in enumerate(level_keys):
        entries = manifest["levels"][level]
        lines.append(f"    {json.dumps(level)}: [")
        for ei, entry in enumerate(entries):
            sep = "," if ei < len(entries) - 1 else ""
            lines.append(f"      {json.dumps(entry, sort_keys=True)}{sep}")
        lines.append("    ]" + ("," if li < len(level_keys) - 1 else ""))
    lines += ["  }", "}", ""]
    return "\n".join(lines)


def load_manifest(split: str = "test", path: str | Path | None = None) -> dict[str, Any] | None:
    """Return the committed manifest of ``split`` (``None`` when there is none), or ``path``'s.

    A given ``path`` is read with :func:`read_manifest_file` (checked; missing or malformed files
    raise).
    """
    if path is not None:
        return read_manifest_file(path)
    target = manifest_path(split)
    return json.loads(target.read_text()) if target.is_file() else None


def read_manifest_file(path: str | Path) -> dict[str, Any]:
    """Return the manifest in ``path`` (a user's own frozen split, say), checked for shape.

    Raises ``FileNotFoundError`` or ``ValueError`` naming the file and what is wrong with it.
    """
    target = Path(path)
    if not target.is_file():
        raise FileNotFoundError(f"manifest {target} does not exist")
    try:
        data = json.loads(target.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"manifest {target} is not valid JSON: {exc}") from None
    levels = data.get("levels") if isinstance(data, dict) else None
    if not isinstance(levels, dict):
        raise ValueError(f"manifest {target} has no 'levels' object")
    for level, entries in levels.items():
        if not isinstance(entries, list):
            raise ValueError(f"manifest {target}: level {level!r} is not a list")
        for i, e in enumerate(entries):
            missing = [k for k in ("family", "task_seed", "task_id", "hash")
                       if not isinstance(e, dict) or k not in e]
            if missing:
                raise ValueError(f"manifest {target}: level {level} entry {i} lacks "
                                 f"{', '.join(missing)}")
    return data


def split_entries(split: str, level: int,
                  manifest: dict[str, Any] | None = None) -> list[SplitEntry]:
    """Return the frozen entries of ``level`` from ``manifest``, else from the seed rule.

    ``manifest`` defaults to the committed one of ``split``.
    """
    if split not in SPLIT_SEED_BASES:
        raise ValueError(f"unknown split {split!r}; frozen splits: {', '.join(FROZEN_SPLITS)}")
    if manifest is None:
        manifest = load_manifest(split)
    if manifest is None:
        return generate_split_entries(split, level)
    return [SplitEntry(**e) for e in manifest["levels"].get(str(level), [])]


def sample_entries(entries: Sequence[SplitEntry], per_family: int | None) -> list[SplitEntry]:
    """Return the first ``per_family`` entries of each family (all when ``None``), in order."""
    if per_family is None:
        return list(entries)
    seen: dict[str, int] = {}
    out = []
    for e in entries:
        if seen.get(e.family, 0) < per_family:
            seen[e.family] = seen.get(e.family, 0) + 1
            out.append(e)
    return out


def check_manifest(split: str = "test", per_family: int | None = 5,
                   path: Path | None = None) -> list[HashMismatch]:
    """Regenerate manifest tasks (``per_family`` per family, or all) and return the mismatches."""
    manifest = load_manifest(split, path)
    if manifest is None:
        where = path or manifest_path(split)
        raise FileNotFoundError(f"no manifest for split {split!r} at {where}")
    bad: list[HashMismatch] = []
    config = dict(manifest.get("config") or {})
    for level_key, raw in sorted(manifest["levels"].items()):
        for e in sample_entries([SplitEntry(**r) for r in raw], per_family):
            bad.extend(_check_entry(int(level_key), e, config))
    return bad


def _check_entry(level: int, entry: SplitEntry,
                 config: dict[str, Any] | None = None) -> Iterable[HashMismatch]:
    try:
        task = make_task(entry.family, entry.task_seed, config)
    except Exception as exc:  # a removed family or a generator crash is a mismatch, not a crash
        return [HashMismatch(level, entry.task_id, entry.hash, f"error: {exc}")]
    actual = task.content_hash()
    if actual != entry.hash or task.task_id != entry.task_id:
        return [HashMismatch(level, entry.task_id, entry.hash, actual)]
    return []
