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

Where each part lives: :mod:`~m3gym.testing.config_checks` (1–3),
:mod:`~m3gym.testing.determinism` (4), :mod:`~m3gym.testing.task_checks` (5–7 and the photo
scenes), :mod:`~m3gym.testing.monotone` (8), :mod:`~m3gym.testing.audit_checks` (9–10),
:mod:`~m3gym.testing.report` (:class:`FamilyReport`), :mod:`~m3gym.testing.orchestration`
(:func:`check_family` and ``python -m m3gym.testing``), :mod:`~m3gym.testing.registry_scope`
(:func:`registered`) and :mod:`~m3gym.testing.errors` (:class:`FamilyCheckError`); every name
is importable from ``m3gym.testing``.
"""

from __future__ import annotations

from m3gym.testing.audit_checks import (
    PROBE_TASKS,
    PROBE_TRAIN_PER_TASK,
    ProbeCheck,
    check_probes,
    check_tool_necessity,
    probe_bound,
    run_probes,
)
from m3gym.testing.config_checks import (
    BAD_OPTION,
    CHECK_DIFFICULTIES,
    DOCSTRING_SECTIONS,
    NOT_RANGE_WORDS,
    bad_config_probes,
    check_docstring,
    check_knobs,
    check_validate,
    docstring_sections,
    refuses,
)
from m3gym.testing.determinism import (
    check_cross_process,
    check_cross_process_triples,
    check_in_process,
    subprocess_hashes,
)
from m3gym.testing.errors import FamilyCheckError
from m3gym.testing.monotone import (
    MONOTONE_OCR,
    MONOTONE_TOLERANCE,
    check_monotone,
    heuristic_accuracy,
)
from m3gym.testing.orchestration import check_family, main
from m3gym.testing.registry_scope import _HELD as _HELD  # tests read which blocks hold a class
from m3gym.testing.registry_scope import registered
from m3gym.testing.report import FROZEN_SPLIT, FamilyReport, frozen_split_levels
from m3gym.testing.task_checks import (
    PHOTO_SEED_TRIES,
    RETRIEVAL_TOOLS,
    check_oracle_and_legibility,
    check_photo_scenes,
    check_task,
    config_of,
)

__all__ = [
    "BAD_OPTION", "CHECK_DIFFICULTIES", "DOCSTRING_SECTIONS", "FROZEN_SPLIT", "MONOTONE_OCR",
    "MONOTONE_TOLERANCE", "NOT_RANGE_WORDS", "PHOTO_SEED_TRIES", "PROBE_TASKS",
    "PROBE_TRAIN_PER_TASK", "RETRIEVAL_TOOLS", "FamilyCheckError", "FamilyReport", "ProbeCheck",
    "bad_config_probes", "check_cross_process", "check_cross_process_triples", "check_docstring",
    "check_family", "check_in_process", "check_knobs", "check_monotone",
    "check_oracle_and_legibility", "check_photo_scenes", "check_probes", "check_task",
    "check_tool_necessity", "check_validate", "config_of", "docstring_sections",
    "frozen_split_levels", "heuristic_accuracy", "main", "probe_bound", "refuses", "registered",
    "run_probes", "subprocess_hashes",
]
