"""Determinism checks: the same ``(family, seed, difficulty)`` gives the same task bytes.

In this process, whatever was built in between, and in a fresh interpreter with another hash seed
(check 4 of :func:`~m3gym.testing.check_family`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import replace

from m3gym.spec import Task
from m3gym.tasks.registry import get_family, make_task
from m3gym.testing.errors import _fail


# ------------------------------------------------------------------------------ determinism
def _hash_script(pairs: Sequence[tuple[str, int, float | None]], modules: Sequence[str]) -> str:
    return "\n".join([
        "import importlib, json, sys",
        *(f"importlib.import_module({m!r})" for m in modules),
        "from m3gym.tasks.registry import make_task",
        f"pairs = {list(pairs)!r}",
        "print(json.dumps([make_task(f, s, difficulty=d).content_hash() for f, s, d in pairs]))",
    ])


def subprocess_hashes(pairs: Sequence[tuple[str, int, float | None]],
                      modules: Sequence[str] = (), hash_seed: str = "4242") -> list[str]:
    """Return the content hashes of ``(family, seed, difficulty)`` built in a fresh interpreter.

    The child runs ``sys.executable`` with this process's ``sys.path`` and
    ``PYTHONHASHSEED=hash_seed`` (so string hashing differs from a parent with another seed),
    after importing ``modules`` (where families defined outside m3gym register).
    """
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = hash_seed
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if isinstance(p, str) and p)
    proc = subprocess.run([sys.executable, "-c", _hash_script(pairs, modules)], env=env,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"the task-hash subprocess failed:\n{proc.stderr[-2000:]}")
    return list(json.loads(proc.stdout.strip().splitlines()[-1]))


def _modules_of(names: Iterable[str]) -> list[str]:
    """Return the modules (outside m3gym) a child must import for ``names`` to be registered."""
    mods = {get_family(n).__module__ for n in names}
    return sorted(m for m in mods if m != "__main__" and not m.startswith("m3gym."))


def _child_hash_seed() -> str:
    return "4242" if os.environ.get("PYTHONHASHSEED") != "4242" else "4243"


def check_cross_process(names: Sequence[str], seeds: Sequence[int] = (0, 1),
                        difficulties: Sequence[float | None] = (None,)) -> None:
    """Raise unless every ``(family, seed, difficulty)`` hashes the same in a fresh interpreter.

    One child process serves all ``names`` (interpreter start-up dominates the cost).
    """
    check_cross_process_triples([(n, int(s), d) for n in names for s in seeds
                                 for d in difficulties])


def check_cross_process_triples(triples: Sequence[tuple[str, int, float | None]]) -> None:
    """Raise unless each ``(family, seed, difficulty)`` builds the same task in a fresh process."""
    theirs = subprocess_hashes(triples, _modules_of({n for n, _, _ in triples}),
                               _child_hash_seed())
    for (n, s, d), h in zip(triples, theirs):
        ours = make_task(n, s, difficulty=d).content_hash()
        if ours != h:
            raise _fail(n, "determinism",
                        f"seed {s}, difficulty {d}: the task differs in a fresh process "
                        f"(hash {h[:12]} vs {ours[:12]} here): randomness must come only from "
                        "the passed rng (no hash(), set order, global numpy state, clock)")


def check_in_process(name: str, seeds: Sequence[int], difficulty: float | None) -> list[Task]:
    """Raise unless each seed's task is byte-identical when built twice; return the tasks.

    All seeds are built, then all again, so other tasks are built in between (with one seed,
    a task of another seed is): state leaking from one build into the next shows. Two seeds
    that give the same task fail too (the seed does not reach the scene).
    """
    first = [make_task(name, s, difficulty=difficulty) for s in seeds]
    seen: dict[str, int] = {}
    for seed, task in zip(seeds, first):
        content = replace(task, task_id="").content_hash()  # the id names the seed: not content
        other = seen.setdefault(content, int(seed))
        if other != int(seed):
            raise _fail(name, "determinism",
                        f"seeds {other} and {seed}, difficulty {difficulty}: the same task "
                        f"(all but the id; hash {content[:12]}): the seed must reach the task")
    if len(seeds) == 1:
        make_task(name, int(seeds[0]) + 1000, difficulty=difficulty)
    for seed, task in zip(seeds, first):
        again = make_task(name, seed, difficulty=difficulty)
        if task.content_hash() != again.content_hash():
            raise _fail(name, "determinism",
                        f"seed {seed}, difficulty {difficulty}: two builds of the same task "
                        "differ in this process (" + _first_difference(task, again) + ")")
    return first


def _first_difference(a: Task, b: Task) -> str:
    for i, (x, y) in enumerate(zip(a.images, b.images)):
        if x.shape != y.shape or x.tobytes() != y.tobytes():
            return f"image {i} differs"
    if len(a.images) != len(b.images):
        return "the number of images differs"
    sa, sb = a.spec_dict(), b.spec_dict()
    for key in sa:
        if sa[key] != sb.get(key):
            return f"{key} differs: {sa[key]!r:.120} vs {sb.get(key)!r:.120}"
    return "evidence renders differ"
