"""``check_family``: one call that tells whether a task family keeps every guarantee of m3gym.

In the spirit of Jumanji's ``check_env_does_not_smoke`` and pgx's API test: a family author runs
``check_family("my_family")`` and gets an :class:`AssertionError` naming the first broken
guarantee, the seed and the difficulty. The checks, in order:

1. **docstring** — the family class docstring has the sections ``Scene:``, ``Question:``,
   ``Why a tool is needed:``, ``Reference trajectory:``, ``Checkpoints:``, ``Difficulty:``,
   ``Config:`` (Google style: the header alone on its line, indented text below), in this order;
2. **validate** — the default config validates, and generic out-of-range probes (a reversed
   range, swapped ``*_min``/``*_max``, a probability outside ``[0, 1]``, a negative size or
   count, an unknown option) are refused with ``ValueError`` (:func:`bad_config_probes`);
3. **difficulty knobs** — ``difficulty_knobs(d)`` exists, names config fields only, its config
   validates at 0, 0.5 and 1, and differs between 0 and 1;
4. **determinism** — the same ``(family, seed, difficulty)`` gives a byte-identical task
   (:meth:`~m3gym.spec.Task.content_hash`) twice in this process, whatever was built in
   between, and in a fresh interpreter with another hash seed (:func:`subprocess_hashes`);
   different seeds give different tasks;
5. **task sanity and choices** — family, level and domain as declared; read-only ``uint8`` RGB
   images; every evidence box inside its image, its ``clean`` render and ``mask`` of the box's
   size, the mask boolean and not empty; the answer among the choices exactly once (no other
   choice accepted as the answer), no duplicate choices, as many choices as the config's
   ``choices`` field declares;
6. **oracle** — the oracle replaying the reference scores ``acc = S = V = 1`` and ``OT = 0``;
7. **why a tool is needed** — every evidence is illegible in its input image at the family's view
   size (:func:`~m3gym.scoring.checkpoints.measure_evidence`) and legible in some artifact after
   the reference; a family without on-image evidence must instead retrieve its answer (its
   reference calls a retrieval tool);
8. **monotone difficulty** — the heuristic agent's accuracy on the same seeds at difficulty 1 is
   not above its accuracy at 0 by more than :data:`MONOTONE_TOLERANCE` (a family the heuristic has
   no plan for sits at chance at both ends and passes); the heuristic reads with a fixed OCR
   backend (:data:`MONOTONE_OCR`), so the verdict is the same on every machine that has it;
9. **leak probes** — the choices-only and view-only probes of ``m3gym audit-leaks``
   (:mod:`m3gym.audit.leaks`) on a small held-out sample (``probes`` tasks each, the choices-only
   classifier trained on :data:`PROBE_TRAIN_PER_TASK` times as many): each accuracy must stay
   under :func:`probe_bound`, the larger of the audit's target (chance + its margin) and the
   audit's noise bound for that sample size (:func:`~m3gym.audit.leaks.binomial_upper_bound` at
   :data:`~m3gym.audit.leaks_cli.Z_NOISE`). A view-only miss the audit calls structural (the
   reference's output is the view turned or re-levelled) is a warning, not a failure.

10. **tool necessity** (docs/tool-necessity.md, (a)) — replayed on the view upsampled to full
   size, the reference's tool output leaves at least 0.3 of the evidence region unexplained
   (median over held-out tasks), or an op is measured to be needed by a later tool
   (:func:`~m3gym.audit.tool_necessity.share_check`); a family in
   :data:`~m3gym.audit.tool_necessity.KNOWN_BELOW_LINE` gets a ``known failure`` warning line.

``check_family`` returns a :class:`FamilyReport`: the probes' numbers and whether the family is in
the frozen test split (:mod:`m3gym.eval.splits`); a family in no level of it (a new family, which
the committed manifest cannot hold) gets a warning line, not a failure.

``quick=True`` (the per-family test) uses two seeds, difficulties ``None``, 0 and 1, and a smaller
heuristic sample; the cross-process check can be run for many families in one interpreter with
:func:`check_cross_process` (the test suite does that once).
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import MISSING, dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from m3gym.spec import Task
from m3gym.tasks import registry
from m3gym.tasks.registry import FamilyConfig, get_family, make_task, register_family

if TYPE_CHECKING:
    from m3gym.audit.leaks import ProbeResult
    from m3gym.audit.tool_necessity import ShareCheck

DOCSTRING_SECTIONS: tuple[str, ...] = (
    "Scene", "Question", "Why a tool is needed", "Reference trajectory", "Checkpoints",
    "Difficulty", "Config",
)
"""The sections every family docstring has, in this order."""

RETRIEVAL_TOOLS: frozenset[str] = frozenset({"web_search", "image_search", "fetch_webpage"})
"""Tools that bring evidence from off the image (the rule for families without image evidence)."""

MONOTONE_TOLERANCE: float = 0.25
"""How far the heuristic's accuracy at difficulty 1 may exceed its accuracy at 0 (sampling noise:
3 of 12 paired episodes; a family at chance both ends differs by ~0.15 s.d.). Samples under 8
episodes allow 2 episodes' worth (``2 / n``)."""

CHECK_DIFFICULTIES: tuple[float, ...] = (0.0, 0.5, 1.0)
"""Difficulties at which the knobs' config must validate."""

BAD_OPTION = "__not_a_valid_option__"
"""The string a probe puts in a string or string-tuple field."""


class FamilyCheckError(AssertionError):
    """A family broke a guarantee (the message names the check, the seed and the difficulty)."""


def _fail(name: str, check: str, message: str) -> FamilyCheckError:
    return FamilyCheckError(f"check_family({name!r}) [{check}]: {message}")


_HELD: Counter[type[FamilyConfig]] = Counter()
"""How many enclosing :func:`registered` blocks hold each class (an inner block keeps them)."""


@contextmanager
def registered(*classes: type[FamilyConfig]) -> Iterator[None]:
    """Register ``classes`` for the duration of a ``with`` block, then restore the registry.

    For tests of families defined outside ``m3gym.tasks.families`` (examples, toy families whose
    module registers them on import): on exit the registry is what it was on entry *without*
    ``classes`` (even when importing their module had registered them before the block) and
    without anything registered inside the block, so nothing leaks into ``family_names()`` (the
    level envs draw from it) for the rest of the process. Blocks nest: a class an enclosing
    block holds stays registered.
    """
    registry._load_builtin_families()
    before = {n: c for n, c in registry._FAMILIES.items() if c not in classes or _HELD[c] > 0}
    try:
        for cls in classes:
            _HELD[cls] += 1
            register_family(cls)
        yield
    finally:
        for cls in classes:
            _HELD[cls] -= 1
        registry._FAMILIES.clear()
        registry._FAMILIES.update(before)


# ------------------------------------------------------------------------------ docstring
def docstring_sections(doc: str | None) -> list[str]:
    """Return the Google-style section headers of ``doc`` in order of appearance.

    A header is a line holding only ``Title:`` (at the docstring's base indentation) followed by
    a non-empty, more indented line.
    """
    lines = inspect.cleandoc(doc or "").splitlines()
    found = []
    for i, line in enumerate(lines[:-1]):
        m = re.fullmatch(r"([A-Z][A-Za-z ]*):", line)
        nxt = lines[i + 1]
        if m and nxt.strip() and nxt.startswith((" ", "\t")):
            found.append(m.group(1))
    return found


def check_docstring(cls: type[FamilyConfig]) -> None:
    """Raise unless the family docstring has :data:`DOCSTRING_SECTIONS` in order."""
    found = [s for s in docstring_sections(cls.__doc__) if s in DOCSTRING_SECTIONS]
    missing = [s for s in DOCSTRING_SECTIONS if s not in found]
    if missing:
        raise _fail(cls.name, "docstring",
                    f"{cls.__name__} docstring lacks section(s) {missing} (each a line "
                    f"'Title:' followed by indented text); found {found}")
    if found != list(DOCSTRING_SECTIONS):
        raise _fail(cls.name, "docstring",
                    f"{cls.__name__} docstring sections {found} are not exactly once each in "
                    f"the order {list(DOCSTRING_SECTIONS)}")


# ------------------------------------------------------------------------------ validate
def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _default(f: Any) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


NOT_RANGE_WORDS: tuple[str, ...] = ("shape", "resolution", "size")
"""A 2-number tuple field whose name holds one of these (and not ``range``) is a pair such as a
``(width, height)``, not a ``(lo, hi)`` range: :func:`bad_config_probes` does not reverse it."""


def _is_range_name(name: str) -> bool:
    return "range" in name or not any(w in name for w in NOT_RANGE_WORDS)


def bad_config_probes(cls: type[FamilyConfig]) -> list[tuple[str, dict[str, Any]]]:
    """Return ``(why, overrides)`` pairs that every sane family config must refuse.

    Built from the config's fields and defaults: a 2-number range ``(lo, hi)`` with ``lo < hi``
    reversed (not a ``(w, h)`` pair, see :data:`NOT_RANGE_WORDS`); ``X_min``/``X_max`` scalars
    swapped; a ``*prob*`` field at 1.5 and -0.1; a positive number (size, count, seed, contrast
    ...) at -1; a ``split`` at an unknown name; a non-empty tuple of strings (scenes, transforms,
    attributes) empty.
    """
    defaults = {f.name: _default(f) for f in fields(cls)}
    probes: list[tuple[str, dict[str, Any]]] = []
    for name, value in defaults.items():
        if value is MISSING:
            continue
        if isinstance(value, tuple) and len(value) == 2 and all(map(_is_number, value)) \
                and value[0] < value[1] and _is_range_name(name):
            probes.append((f"reversed range {name}", {name: (value[1], value[0])}))
        elif _is_number(value) and "prob" in name:
            probes.append((f"probability {name} > 1", {name: 1.5}))
            probes.append((f"probability {name} < 0", {name: -0.1}))
        elif _is_number(value) and value > 0:
            probes.append((f"negative {name}", {name: -1 if isinstance(value, int) else -1.0}))
        elif name == "split" and isinstance(value, str):
            probes.append((f"unknown {name}", {name: BAD_OPTION}))
        elif isinstance(value, tuple) and value and all(isinstance(v, str) for v in value):
            probes.append((f"empty {name}", {name: ()}))
        if name.endswith("_min") and _is_number(value):
            other = name[:-4] + "_max"
            hi = defaults.get(other)
            if _is_number(hi) and hi > value:
                probes.append((f"{name} > {other}", {name: hi, other: value}))
    return probes


def refuses(cls: type[FamilyConfig], overrides: dict[str, Any]) -> bool:
    """Return whether building and validating ``cls(**overrides)`` raises ``ValueError``."""
    try:
        cls(**overrides).validate()
    except ValueError:
        return True
    return False


def check_validate(cls: type[FamilyConfig]) -> None:
    """Raise unless the default config validates and every :func:`bad_config_probes` is refused."""
    try:
        cls().validate()
    except Exception as exc:
        raise _fail(cls.name, "validate", f"the default config does not validate: {exc}") \
            from exc
    probes = bad_config_probes(cls)
    if not probes:
        raise _fail(cls.name, "validate",
                    f"{cls.__name__} has no field a generic probe can perturb (no ranges, "
                    "sizes, probabilities or options): give it validated fields")
    for why, overrides in probes:
        try:
            ok = refuses(cls, overrides)
        except Exception as exc:
            raise _fail(cls.name, "validate",
                        f"{cls.__name__}(**{overrides!r}) ({why}) raised "
                        f"{type(exc).__name__}: {exc} instead of ValueError") from exc
        if not ok:
            raise _fail(cls.name, "validate",
                        f"{cls.__name__}(**{overrides!r}).validate() accepted a bad config "
                        f"({why}); it must raise ValueError")


# ------------------------------------------------------------------------------ difficulty
def check_knobs(cls: type[FamilyConfig]) -> None:
    """Raise unless ``difficulty_knobs`` is implemented, names fields and validates at 0/.5/1."""
    names = {f.name for f in fields(cls)}
    knobs: dict[float, dict[str, Any]] = {}
    for d in CHECK_DIFFICULTIES:
        try:
            knobs[d] = dict(cls.difficulty_knobs(d))
        except NotImplementedError as exc:
            raise _fail(cls.name, "difficulty",
                        f"{cls.__name__}.difficulty_knobs is not implemented ({exc}); map "
                        "difficulty in [0, 1] to the family's real knobs") from exc
        unknown = sorted(set(knobs[d]) - names)
        if unknown:
            raise _fail(cls.name, "difficulty",
                        f"difficulty_knobs({d}) names {unknown}, not fields of {cls.__name__} "
                        f"(fields: {sorted(names)})")
        try:
            cls(**knobs[d]).validate()
        except Exception as exc:
            raise _fail(cls.name, "difficulty",
                        f"the config of difficulty_knobs({d}) = {knobs[d]!r} does not validate: "
                        f"{type(exc).__name__}: {exc}") from exc
    if knobs[0.0] == knobs[1.0]:
        raise _fail(cls.name, "difficulty",
                    f"difficulty_knobs(0) == difficulty_knobs(1) = {knobs[0.0]!r}: the knobs "
                    "do not change anything")


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


# ------------------------------------------------------------------------------ task sanity
def check_task(cls: type[FamilyConfig], task: Task, config: FamilyConfig, where: str) -> None:
    """Raise unless the task declares its family, level, domain and a sane choice set."""
    from m3gym.scoring.answer import answer_is_correct

    name = cls.name
    if task.family != name or task.level != cls.level or task.domain not in cls.domains:
        raise _fail(name, "task", f"{where}: family/level/domain {task.family!r}/{task.level}/"
                    f"{task.domain!r} do not match the class ({name!r}/{cls.level}/{cls.domains})")
    for i, img in enumerate(task.images):
        if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3 or img.flags.writeable:
            raise _fail(name, "task", f"{where}: image {i} must be a read-only uint8 RGB array "
                        f"(R.freeze), got {img.dtype} {img.shape} writeable={img.flags.writeable}")
    for ev in task.evidence:
        if not 0 <= ev.image < len(task.images):
            raise _fail(name, "task", f"{where}: evidence {ev.id!r} names image {ev.image} of "
                        f"{len(task.images)}")
        h, w = task.images[ev.image].shape[:2]
        x0, y0, x1, y1 = ev.box
        if not (0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h):
            raise _fail(name, "task", f"{where}: evidence {ev.id!r} box {ev.box} leaves image "
                        f"{ev.image} ({w}x{h})")
        size = (int(y1 - y0), int(x1 - x0))
        for what, arr in (("clean", ev.clean), ("mask", ev.mask)):
            if arr is not None and arr.shape != size:
                raise _fail(name, "task", f"{where}: evidence {ev.id!r} {what} has shape "
                            f"{arr.shape}, its box {ev.box} is {size} (rows, cols)")
        if ev.mask is not None and (ev.mask.dtype != bool or not ev.mask.any()):
            raise _fail(name, "task", f"{where}: evidence {ev.id!r} mask must be boolean and "
                        f"mark some ink (dtype {ev.mask.dtype}, {int(np.count_nonzero(ev.mask))} "
                        "set)")
    if task.choices is None:
        return
    choices = list(task.choices)
    if len(set(choices)) != len(choices):
        dup = sorted({c for c in choices if choices.count(c) > 1})
        raise _fail(name, "choices", f"{where}: duplicate choices {dup} in {choices}")
    hits = [c for c in choices if answer_is_correct(c, task.answer)]
    if task.answer.value not in choices or len(hits) != 1:
        raise _fail(name, "choices", f"{where}: the answer {task.answer.value!r} must be among "
                    f"the choices exactly once; choices accepted as the answer: {hits} of "
                    f"{choices}")
    declared = getattr(config, "choices", None)
    if _is_number(declared) and len(choices) != int(declared):
        raise _fail(name, "choices", f"{where}: {len(choices)} choices, the config declares "
                    f"choices={declared}")


def config_of(cls: type[FamilyConfig], difficulty: float | None) -> FamilyConfig:
    """Return the config ``make_task`` builds for ``difficulty`` (without the seed's split)."""
    return cls(**(cls.difficulty_knobs(difficulty) if difficulty is not None else {}))


# ------------------------------------------------------------------------------ oracle, legibility
def check_oracle_and_legibility(name: str, task: Task, where: str, env: Any = None) -> None:
    """Raise unless the oracle is perfect and the evidence needs the reference to be legible.

    ``env`` (an :class:`~m3gym.env.M3BenchEnv` of the family) is reused when given.
    """
    from m3gym.agents.base import OracleAgent
    from m3gym.env import M3BenchEnv
    from m3gym.eval.episode import record_episode
    from m3gym.scoring.checkpoints import measure_evidence

    env = env if env is not None else M3BenchEnv(family=name)
    view = env.view_size
    rec = record_episode(env, OracleAgent(), options={"task": task}, catch=False)
    m = rec.final.get("metrics") or {}
    got = {k: m.get(k) for k in ("acc", "S", "V", "OT")}
    if got != {"acc": 1.0, "S": 1.0, "V": 1.0, "OT": 0.0}:
        failed = [c.get("error") for c in rec.final.get("calls", []) if not c.get("ok", True)]
        raise _fail(name, "oracle", f"{where}: the oracle replaying the reference scores {got} "
                    f"(want acc=S=V=1, OT=0); failed calls: {failed}; failure_mode "
                    f"{m.get('failure_mode')!r}")
    state = env.state
    if not task.evidence:
        used = {c.name for c in task.reference_calls}
        if not used & RETRIEVAL_TOOLS:
            raise _fail(name, "tool needed", f"{where}: the task has no on-image evidence and "
                        f"its reference ({sorted(used)}) retrieves nothing: nothing makes a "
                        "tool necessary")
        return
    for ev in task.evidence:
        before = measure_evidence(state[ev.image], ev, view)
        if before.passed:
            raise _fail(name, "tool needed", f"{where}: evidence {ev.id!r} is already legible "
                        f"in input image {ev.image} at view size {view} ({before.reason})")
        after = [measure_evidence(state[i], ev, view) for i in range(len(task.images),
                                                                      len(state))]
        if not any(v.passed for v in after):
            reasons = sorted({v.reason for v in after}) or ["the reference made no image"]
            raise _fail(name, "tool needed", f"{where}: evidence {ev.id!r} is legible in no "
                        f"artifact of the reference ({'; '.join(reasons)[:300]})")


# ------------------------------------------------------------------------------ monotonicity
MONOTONE_OCR: str = "tesseract"
"""The OCR backend the monotone check measures the heuristic with (fixed, so that the verdict does
not depend on what the machine has installed; the built-in glyph matcher reads too little of some
families to rank their difficulties)."""


def heuristic_accuracy(name: str, difficulty: float | None, seeds: Sequence[int],
                       ocr: str = "auto", config: dict | None = None) -> float:
    """Return the heuristic agent's accuracy on ``name`` at ``difficulty`` over ``seeds``.

    ``ocr`` fixes the agent's reader (:func:`m3gym.agents.ocr.forced_ocr_backend`); it raises
    :class:`~m3gym.agents.ocr.OcrUnavailable` when that reader is not installed. ``config`` is
    passed to :func:`~m3gym.tasks.registry.make_task` (e.g. ``{"scenes": "photo"}`` for the
    photographic variant); ``None`` builds the family's default tasks.
    """
    from m3gym.agents.heuristic import HeuristicAgent
    from m3gym.agents.ocr import forced_ocr_backend
    from m3gym.env import M3BenchEnv
    from m3gym.eval.episode import record_episode

    env = M3BenchEnv(family=name)
    correct = 0
    with forced_ocr_backend(ocr):
        for seed in seeds:
            task = make_task(name, int(seed), dict(config) if config is not None else None,
                             difficulty=difficulty)
            rec = record_episode(env, HeuristicAgent(seed=int(seed)), options={"task": task})
            correct += bool(rec.final.get("answer_correct"))
    env.close()
    return correct / max(1, len(seeds))


def check_monotone(name: str, seeds: Sequence[int], tolerance: float | None = None,
                   ocr: str = MONOTONE_OCR) -> tuple[float, float]:
    """Raise when the heuristic does better at difficulty 1 than at 0 (beyond ``tolerance``).

    ``tolerance`` defaults to ``max(MONOTONE_TOLERANCE, 2 / len(seeds))``. The heuristic reads
    with the OCR backend ``ocr`` (default :data:`MONOTONE_OCR`), on every machine the same;
    :class:`~m3gym.agents.ocr.OcrUnavailable` is raised when it is not installed. Returns the two
    accuracies (difficulty 0, difficulty 1) on the same seeds.
    """
    if tolerance is None:
        tolerance = max(MONOTONE_TOLERANCE, 2.0 / max(1, len(seeds)))
    easy = heuristic_accuracy(name, 0.0, seeds, ocr)
    hard = heuristic_accuracy(name, 1.0, seeds, ocr)
    if hard > easy + tolerance:
        raise _fail(name, "monotone", f"the heuristic agent's accuracy ({ocr} OCR) rises with "
                    f"difficulty: {easy:.2f} at 0 vs {hard:.2f} at 1 over seeds {list(seeds)} "
                    f"(tolerance {tolerance:g})")
    return easy, hard


# ------------------------------------------------------------------------------ leak probes
PROBE_TASKS: int = 24
"""Held-out tasks per leak probe in :func:`check_family` (``probes`` overrides it; 0 skips)."""

PROBE_TRAIN_PER_TASK: int = 4
"""Training tasks of the choices-only classifier per held-out task (96 for 24)."""

FROZEN_SPLIT: str = "test"
"""The frozen split whose membership :func:`check_family` reports."""


@dataclass(frozen=True)
class ProbeCheck:
    """One leak probe's result on a small sample and the bound it had to stay under."""

    result: ProbeResult
    """The probe's accuracy, chance level and sample size."""
    bound: float
    """The largest accuracy that passes (:func:`probe_bound`)."""

    @property
    def passes(self) -> bool:
        """Whether the accuracy stays under the bound (a probe with nothing to score passes)."""
        return self.result.n == 0 or self.result.accuracy <= self.bound + 1e-9

    @property
    def structural(self) -> bool:
        """Whether a view-only miss is structural (the tool shows nothing the view lacks)."""
        return bool(self.result.structural)

    def line(self) -> str:
        """Return one report line: probe, accuracy, n, chance, bound and verdict."""
        r = self.result
        if r.n == 0:
            return f"{r.probe} probe: n/a (the answer is not drawn / no choices)"
        verdict = "ok" if self.passes else (
            "over, structural (warning)" if self.structural else "FAIL")
        return (f"{r.probe} probe: {r.accuracy:.3f} ({r.correct}/{r.n}) against a bound of "
                f"{self.bound:.3f} (chance {r.chance:.3f}): {verdict}")


def probe_bound(chance: float, n: int, margin: float) -> float:
    """Return the largest probe accuracy that passes over ``n`` tasks at ``chance``.

    The larger of the audit's target ``chance + margin`` and its noise bound
    :func:`~m3gym.audit.leaks.binomial_upper_bound` at :data:`~m3gym.audit.leaks_cli.Z_NOISE`
    (a guesser at chance exceeds it with probability about 0.001), so a small sample does not
    fail a family for noise.
    """
    from m3gym.audit.leaks import binomial_upper_bound
    from m3gym.audit.leaks_cli import Z_NOISE

    return max(chance + margin, binomial_upper_bound(chance, n, Z_NOISE))


def run_probes(name: str, tasks: int = PROBE_TASKS,
               train_tasks: int | None = None) -> tuple[ProbeCheck, ProbeCheck]:
    """Run the choices-only and view-only probes of ``name`` on ``tasks`` held-out tasks each.

    The choices-only classifier trains on ``train_tasks`` training seeds (default
    :data:`PROBE_TRAIN_PER_TASK` ``* tasks``). Returns the two checks (choices-only, view-only).
    """
    from m3gym.audit.leaks import choices_only_probe, view_only_probe

    train = train_tasks if train_tasks is not None else PROBE_TRAIN_PER_TASK * tasks
    out = []
    for r in (choices_only_probe(name, tasks, train), view_only_probe(name, tasks)):
        out.append(ProbeCheck(r, probe_bound(r.chance, r.n, r.margin)))
    return out[0], out[1]


def check_probes(name: str, tasks: int = PROBE_TASKS) -> tuple[ProbeCheck, ProbeCheck]:
    """Raise when a leak probe beats its :func:`probe_bound` (a structural view-only miss passes).

    Returns the two checks (choices-only, view-only) for the report.
    """
    checks = run_probes(name, tasks)
    for c in checks:
        if c.passes or c.structural:
            continue
        r = c.result
        what = ("the answer can be picked from the choices' text alone" if r.probe ==
                "choices-only" else "the answer can be read from the view without a tool")
        raise _fail(name, r.probe, f"the {r.probe} probe picks the answer in {r.correct} of "
                    f"{r.n} held-out tasks ({r.accuracy:.3f}), above the bound {c.bound:.3f} "
                    f"(chance {r.chance:.3f}, n = {r.n}): {what}; "
                    f"`m3gym audit-leaks --family {name}` measures it on a larger sample")
    return checks


def check_tool_necessity(name: str, tasks: int | None = None) -> ShareCheck:
    """Raise unless the reference's tool output holds evidence the view lacks (measurement (a)).

    Measured on ``tasks`` held-out tasks (default
    :data:`~m3gym.audit.tool_necessity.CHECK_TASKS`, the sample ``KNOWN_BELOW_LINE`` was
    measured on). A family listed in :data:`~m3gym.audit.tool_necessity.KNOWN_BELOW_LINE` is
    reported (a ``known failure`` warning line), not failed.
    """
    from m3gym.audit.tool_necessity import CHECK_TASKS, share_check

    check = share_check(name, CHECK_TASKS if tasks is None else tasks)
    if check.fails:
        raise _fail(name, "tool necessity", check.line())
    return check


def frozen_split_levels(name: str, split: str = FROZEN_SPLIT) -> tuple[int, ...]:
    """Return the levels of the frozen ``split`` whose task list holds family ``name``."""
    from m3gym.eval.splits import LEVELS, split_entries

    return tuple(lv for lv in LEVELS if any(e.family == name for e in split_entries(split, lv)))


@dataclass(frozen=True)
class FamilyReport:
    """What :func:`check_family` found besides failures: leak probes and frozen-split membership."""

    family: str
    probes: tuple[ProbeCheck, ...]
    """The leak probes run (empty when ``probes=0``)."""
    frozen_levels: tuple[int, ...]
    """Levels of the frozen test split that hold the family (empty: in none)."""
    skipped: tuple[str, ...] = ()
    """Checks not run, each with its reason (e.g. the monotone check where Tesseract is absent)."""
    necessity: ShareCheck | None = None
    """Tool necessity (a) (:func:`m3gym.audit.tool_necessity.share_check`); None when not run."""

    @property
    def warnings(self) -> list[str]:
        """Warning lines: not in the frozen split, a structural view-only miss."""
        out = []
        if not self.frozen_levels:
            out.append(f"warning: {self.family!r} is in no level of the frozen {FROZEN_SPLIT!r} "
                       "split (m3gym/data/splits/test.json), so frozen evaluations never draw "
                       "it; a new family joins it only with a new manifest version")
        out += [f"warning: {c.line()}" for c in self.probes if not c.passes and c.structural]
        if self.necessity is not None and self.necessity.known is not None:
            out.append(f"warning: {self.necessity.line()}")
        return out

    def lines(self) -> list[str]:
        """Return the report's lines: membership, each probe, then the warnings."""
        levels = ", ".join(map(str, self.frozen_levels))
        member = (f"frozen {FROZEN_SPLIT!r} split: level {levels}" if self.frozen_levels
                  else f"frozen {FROZEN_SPLIT!r} split: not in any level")
        head = (f"{self.family}: every check run passed ({len(self.skipped)} skipped)"
                if self.skipped else f"{self.family}: every check passed")
        return [head, member, *(c.line() for c in self.probes),
                *(f"skipped: {s}" for s in self.skipped), *self.warnings]

    def __str__(self) -> str:
        return "\n".join(self.lines())


# ------------------------------------------------------------------------------ photo scenes
PHOTO_SEED_TRIES: int = 16
"""Seeds tried (from the first checked one) to find draws that go into a photograph."""


def check_photo_scenes(name: str, seeds: Sequence[int], env: Any = None) -> None:
    """Raise unless the family is drawn into photographs with a perfect oracle, or says why not.

    A family with ``photo_scenes`` must put at least one of :data:`PHOTO_SEED_TRIES` draws into
    a photograph (``scenes="photo"``: ``metadata["photo_scene"]["kind"] == "photo"``), and the
    oracle must stay perfect on those draws (up to ``len(seeds)`` of them); one without must give
    its ``flat_scene_reason``.
    """
    cls = get_family(name)
    if not cls.photo_scenes:
        if not cls.flat_scene_reason.strip():
            raise _fail(name, "photo scenes", "the family neither draws on render.surface "
                        "(photo_scenes = True) nor says why it stays flat (flat_scene_reason)")
        return
    if cls.flat_scene_reason.strip():
        raise _fail(name, "photo scenes", "photo_scenes is True but flat_scene_reason is set")
    start = int(seeds[0]) if len(seeds) else 0
    checked = 0
    for seed in range(start, start + PHOTO_SEED_TRIES):
        task = make_task(name, seed, {"scenes": "photo"})
        if task.metadata.get("photo_scene", {}).get("kind") != "photo":
            continue
        check_oracle_and_legibility(name, task, f"seed {seed}, photo scene", env)
        checked += 1
        if checked >= max(1, len(seeds)):
            return
    if not checked:
        raise _fail(name, "photo scenes", f"none of seeds {start}..{start + PHOTO_SEED_TRIES - 1}"
                    " drew a surface into a photograph: draw the scene's surface with "
                    "render.surface (or set photo_scenes = False with a flat_scene_reason)")


# ------------------------------------------------------------------------------ entry point
def check_family(name: str, *, seeds: Sequence[int] | None = None, quick: bool = False,
                 cross_process: bool = True, monotone_episodes: int | None = None,
                 probes: int | None = None) -> FamilyReport:
    """Check every guarantee of family ``name``; raise :class:`FamilyCheckError` on the first miss.

    Args:
        name: a registered family.
        seeds: task seeds for the per-task checks (default 2 when ``quick``, else 6).
        quick: fewer seeds and difficulties (``None``, 0, 1) and 6 heuristic episodes per end
            (12 otherwise) — the per-family test's setting.
        cross_process: also rebuild the tasks in a fresh interpreter (a ~2 s start-up; the test
            suite checks all families in one child with :func:`check_cross_process` instead).
        monotone_episodes: heuristic episodes per end of the difficulty range (0 skips); the
            heuristic reads with :data:`MONOTONE_OCR`. Where that reader is not installed the
            check is skipped, and the report says so with the reason (:attr:`FamilyReport.skipped`);
            an absent optional reader never fails a family.
        probes: held-out tasks per leak probe (default :data:`PROBE_TASKS`; 0 skips them).

    Returns:
        A :class:`FamilyReport`: the probes' accuracies and bounds, and the frozen test split's
        levels that hold the family (a warning line when none does).
    """
    cls = get_family(name)
    n_probe = PROBE_TASKS if probes is None else int(probes)
    if n_probe < 0:
        raise ValueError(f"probes must be >= 0 (0 skips the leak probes), got {probes}")
    seeds = list(seeds if seeds is not None else (range(2) if quick else range(6)))
    if not seeds:
        raise ValueError("check_family needs at least one seed")
    check_docstring(cls)
    check_validate(cls)
    check_knobs(cls)
    from m3gym.env import M3BenchEnv

    difficulties: tuple[float | None, ...] = (None, 0.0, 1.0) if quick else (None, 0.0, 0.5, 1.0)
    env = M3BenchEnv(family=name)
    for d in difficulties:
        config = config_of(cls, d)
        for seed, task in zip(seeds, check_in_process(name, seeds, d)):
            where = f"seed {seed}, difficulty {d}"
            check_task(cls, task, config, where)
            check_oracle_and_legibility(name, task, where, env)
    check_photo_scenes(name, seeds, env)
    env.close()
    if cross_process:
        check_cross_process([name], seeds[:2], (None, 1.0))
    n = monotone_episodes if monotone_episodes is not None else (6 if quick else 12)
    skipped: list[str] = []
    if n > 0:
        from m3gym.agents.ocr import OcrUnavailable

        try:
            check_monotone(name, range(n))
        except OcrUnavailable as exc:
            skipped.append(f"monotone difficulty: {exc}")
    checks = check_probes(name, n_probe) if n_probe > 0 else ()
    necessity = check_tool_necessity(name)
    return FamilyReport(name, tuple(checks), frozen_split_levels(name), tuple(skipped),
                        necessity)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m m3gym.testing FAMILY [...] [--quick] [--probes N] [--import MODULE]``.

    Checks each family (default: every registered one) and prints its report.
    """
    import argparse

    from m3gym.tasks.registry import family_names

    parser = argparse.ArgumentParser(prog="python -m m3gym.testing",
                                     description="check_family for each named family")
    parser.add_argument("families", nargs="*", help="family names (default: every family)")
    parser.add_argument("--quick", action="store_true", help="the test suite's small sample")
    parser.add_argument("--probes", type=int, default=PROBE_TASKS,
                        help=f"held-out tasks per leak probe (default {PROBE_TASKS}; 0 skips)")
    parser.add_argument("--import", dest="modules", action="append", default=[],
                        metavar="MODULE", help="import MODULE first (a family defined outside "
                        "m3gym, e.g. examples.example_family); repeatable")
    args = parser.parse_args(argv)
    if args.probes < 0:
        parser.error(f"--probes must be >= 0 (0 skips the leak probes), got {args.probes}")
    import importlib

    if args.modules and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # a module of the project being checked
    for module in args.modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            parser.error(f"--import {module}: {exc}")
    known = family_names(suite=None)
    unknown = [n for n in args.families if n not in known]
    if unknown:
        parser.error(f"unknown family {', '.join(map(repr, unknown))}; known: {', '.join(known)}"
                     " (a family outside m3gym needs --import MODULE)")
    failed = 0
    for name in args.families or known:
        try:
            report = check_family(name, quick=args.quick, probes=args.probes)
        except FamilyCheckError as exc:
            failed += 1
            print(f"FAIL {exc}", flush=True)
        else:
            print(f"ok   {name}", flush=True)
            for line in report.lines()[1:]:
                print(f"     {line}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
