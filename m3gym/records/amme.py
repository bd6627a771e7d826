"""Agentic-MME's task folders in and out of m3gym records (see ``docs/agentic-mme.md``).

An Agentic-MME dataset is a folder ``json/NNNN.json`` (one task each) with its images in
``image/`` (or ``images/``): ``image_NNNN.png`` for one image, ``image_NNNN_1.png``,
``image_NNNN_2.png``, ... for several. A task has ``input.prompt`` (the question), ``meta.level``,
``golden_answer`` (``value``, ``match_type``, ``tolerance``) and ``process_evaluation``
(``checkpoints``, ``ordering_constraints``, ``efficiency``).

* :func:`amme_to_record` (pure) turns one task dict into one m3gym record dict: checkpoints that
  m3gym can verify exactly (a ``region`` box, with the op it needs) become ``evidence``; a
  checkpoint without a region whose ``code_check`` verifier names an op (``require_op:rotate``,
  ``verify_crop_ast``) becomes one of ``required_ops`` (the op applied to a full input image);
  ``visual_check`` questions without a region and ``google_search`` strategy checkpoints become
  ``judge_checkpoints`` (scored only by :mod:`m3gym.records.judge`, never in S/V); everything
  else is kept in ``source["task"]`` so :func:`export_amme` writes the task back unchanged.
* :func:`import_amme` converts a whole folder into a records JSONL file.
* :func:`task_to_amme` / :func:`export_amme` write m3gym tasks (a procedural family's or a
  record's) as such a folder, with checkpoints Agentic-MME's own evaluator reads.

Agentic-MME's released checkpoints name operations, not regions: such a task imports with
``required_ops`` and judge checkpoints. ``region`` (an m3gym evidence object on a checkpoint) is
the one key m3gym adds to verify a region exactly; the Agentic-MME harness ignores it.

The import lives in :mod:`m3gym.records.amme_import` (with the format's vocabulary), the export
in :mod:`m3gym.records.amme_export`; this module re-exports both.
"""

from __future__ import annotations

from m3gym.records.amme_export import (
    EXPORT_GAP_SLACK,
    EXPORT_MAX_TOOL_CALLS,
    EXPORT_PENALTY_PER_EXTRA_CALL,
    SEARCH_TOOLS,
    checkpoint_to_amme,
    evidence_record,
    export_amme,
    judge_to_amme,
    reference_image_tools,
    task_to_amme,
    value_text,
)
from m3gym.records.amme_import import (
    FORMAT,
    IMAGE_DIRS,
    IMAGE_EXTS,
    LOOSER_MATCH_TYPES,
    MATCH_TYPES,
    AmmeError,
    ImportResult,
    amme_to_record,
    choices_suffix,
    import_amme,
    task_images,
)

__all__ = [
    "EXPORT_GAP_SLACK", "EXPORT_MAX_TOOL_CALLS", "EXPORT_PENALTY_PER_EXTRA_CALL", "FORMAT",
    "IMAGE_DIRS", "IMAGE_EXTS", "LOOSER_MATCH_TYPES", "MATCH_TYPES", "SEARCH_TOOLS", "AmmeError",
    "ImportResult", "amme_to_record", "checkpoint_to_amme", "choices_suffix", "evidence_record",
    "export_amme", "import_amme", "judge_to_amme", "reference_image_tools", "task_images",
    "task_to_amme", "value_text",
]
