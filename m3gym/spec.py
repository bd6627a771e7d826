"""The task specification every family produces: images, question, ground truth and process spec.

A :class:`Task` is everything needed to run and *exactly* verify an episode: the answer with its
match rule, the reference trajectory (steps of parallel calls with dependencies), the evidence
geometry (with a clean render for pixel-level verification), the S/V checkpoints and safety rules.

Checkpoint kinds (interpreted by :mod:`m3gym.scoring.checkpoints`):

========================  ====  ==========================================================
kind                      axis  params
========================  ====  ==========================================================
``crop_covers``           S     ``evidence`` id; passes for a crop whose output contains the
                                whole evidence region (mapped through provenance)
``rotate_upright``        S     ``evidence`` id; a rotate/flip whose output shows it upright
``contrast_op``           S     ``evidence`` id, ``tools`` list; a contrast op applied to an
                                image containing the evidence
``global_op``             S     ``tools`` list; one of the tools applied to a full input image
``search_hit``            S     ``tool`` (web_search / image_search), ``url``, ``max_rank``
                                (default 3); the url ranks within the first ``max_rank``
                                results of the call
``fetch``                 S     ``url``; the page was fetched
``v_tool``                V     ``evidence`` id, ``tools`` list; one of the tools was applied
                                to an image whose region contains the evidence (and its
                                output, if any, still contains it)
``v_true``                V     ``evidence`` id; some artifact shows the evidence legibly
                                (geometry, visibility, fidelity at view resolution)
========================  ====  ==========================================================

Exclusivity is per group: one call satisfies at most one S checkpoint and at most one ``v_tool``
checkpoint (two separate matchings), while ``v_true`` is judged on artifacts with no exclusivity,
so one crop may pass ``crop_covers``, a ``v_tool`` and several ``v_true`` checkpoints at once.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

Level = Literal[1, 2, 3]
MatchRule = Literal["exact", "numeric"]
Capability = Literal["visual_grounding", "multi_hop", "parallelism", "knowledge", "global_cv"]
DOMAINS: tuple[str, ...] = ("Diagram", "Finance", "Society", "Life", "Culture", "Science")
CHECKPOINT_KINDS: tuple[str, ...] = (
    "crop_covers", "rotate_upright", "contrast_op", "global_op", "search_hit", "fetch",
    "v_tool", "v_true",
)


@dataclass(frozen=True)
class RefCall:
    """A call of the reference trajectory.

    ``image_index`` arguments refer to the indices the images have when the reference is replayed
    in order (inputs first, then one new image per image-producing call). ``depends_on`` lists the
    ids of reference calls whose output this call consumes (image or information).
    """

    id: str
    name: str
    arguments: Mapping[str, Any]
    depends_on: tuple[str, ...] = ()


@dataclass(frozen=True)
class Evidence:
    """Where the decisive evidence is and what it looks like when clean.

    Attributes:
        id: name used by checkpoints.
        image: index of the input image holding it.
        box: ``(x0, y0, x1, y1)`` in that image's pixel coordinates.
        text: the evidence's content when it is text (for OCR-style checks), else ``None``.
        glyph_height: height of one glyph (or the smallest decisive detail) in source pixels.
        clean: grayscale ``uint8`` render of the box region *without* degradations, or ``None``.
        mask: boolean ink mask of ``clean`` (True on the evidence strokes), or ``None``.
        min_view_height: glyph height needed at view resolution to count as legible, pixels.
        min_contrast: ink-vs-surround contrast needed to count as visible, 8-bit levels.
        min_fidelity: normalized correlation with ``clean`` needed to count as faithful.
        angle: the evidence appears rotated by this many degrees counter-clockwise in its image
            (0 = upright), so ``rotate(angle=-angle)`` makes it upright. ``clean``/``mask`` show
            the box region as it appears in the image (rotated with it).
        mirrored: the evidence appears mirrored left-right (applied before ``angle``); a
            horizontal flip undoes it.
    """

    id: str
    image: int
    box: tuple[float, float, float, float]
    text: str | None = None
    glyph_height: float = 0.0
    clean: np.ndarray | None = None
    mask: np.ndarray | None = None
    min_view_height: float = 9.0
    min_contrast: float = 28.0
    min_fidelity: float = 0.55
    angle: float = 0.0
    mirrored: bool = False

    @property
    def area(self) -> float:
        """Area of the evidence box in source pixels."""
        x0, y0, x1, y1 = self.box
        return max(0.0, x1 - x0) * max(0.0, y1 - y0)


@dataclass(frozen=True)
class Checkpoint:
    """A process checkpoint on the S (strategy) or V (visual evidence) axis."""

    id: str
    axis: Literal["S", "V"]
    kind: str
    params: Mapping[str, Any]
    description: str = ""


@dataclass(frozen=True)
class AnswerSpec:
    """The ground-truth answer and how an answer is matched against it."""

    value: str
    variants: tuple[str, ...] = ()
    match: MatchRule = "exact"
    tolerance: float = 0.0

    @property
    def accepted(self) -> tuple[str, ...]:
        """The value followed by its accepted variants."""
        return (self.value, *self.variants)


@dataclass(frozen=True)
class SafetyRule:
    """A safety rule: a forbidden tool, or content that must not be sent to the given tools."""

    id: str
    kind: Literal["forbidden_tool", "forbidden_content"]
    tools: tuple[str, ...]
    patterns: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class Task:
    """One procedurally generated, exactly verifiable task."""

    task_id: str
    family: str
    level: Level
    domain: str
    images: tuple[np.ndarray, ...]
    question: str
    answer: AnswerSpec
    reference: tuple[tuple[RefCall, ...], ...]
    evidence: tuple[Evidence, ...] = ()
    checkpoints: tuple[Checkpoint, ...] = ()
    choices: tuple[str, ...] | None = None
    safety: tuple[SafetyRule, ...] = ()
    capabilities: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def reference_calls(self) -> list[RefCall]:
        """All reference calls in order."""
        return [c for step in self.reference for c in step]

    @property
    def evidence_area_fraction(self) -> float:
        """Total evidence area over the total area of the input images."""
        total = sum(float(img.shape[0] * img.shape[1]) for img in self.images)
        return sum(e.area for e in self.evidence) / total if total else 0.0

    def evidence_by_id(self, evidence_id: str) -> Evidence:
        """Return the evidence named ``evidence_id``."""
        for ev in self.evidence:
            if ev.id == evidence_id:
                return ev
        raise KeyError(evidence_id)

    def spec_dict(self) -> dict[str, Any]:
        """Return everything but pixels as a JSON-serializable dict (for traces and manifests)."""
        return {
            "task_id": self.task_id,
            "family": self.family,
            "level": self.level,
            "domain": self.domain,
            "question": self.question,
            "answer": {"value": self.answer.value, "variants": list(self.answer.variants),
                       "match": self.answer.match, "tolerance": self.answer.tolerance},
            "choices": list(self.choices) if self.choices is not None else None,
            "reference": [[{"id": c.id, "name": c.name, "arguments": dict(c.arguments),
                            "depends_on": list(c.depends_on)} for c in s] for s in self.reference],
            "evidence": [{"id": e.id, "image": e.image, "box": list(e.box), "text": e.text,
                          "glyph_height": e.glyph_height, "angle": e.angle,
                          "mirrored": e.mirrored} for e in self.evidence],
            "checkpoints": [{"id": c.id, "axis": c.axis, "kind": c.kind,
                             "params": dict(c.params), "description": c.description}
                            for c in self.checkpoints],
            "safety": [{"id": r.id, "kind": r.kind, "tools": list(r.tools),
                        "patterns": list(r.patterns)} for r in self.safety],
            "capabilities": list(self.capabilities),
            "metadata": dict(self.metadata),
        }

    def content_hash(self) -> str:
        """Return a SHA-256 over the images' bytes and the spec: changes iff the task changes."""
        h = hashlib.sha256()
        for img in self.images:
            h.update(str(img.shape).encode())
            h.update(np.ascontiguousarray(img).tobytes())
        for ev in self.evidence:
            for arr in (ev.clean, ev.mask):
                if arr is not None:
                    h.update(np.ascontiguousarray(arr).tobytes())
        h.update(json.dumps(rounded_floats(self.spec_dict()), sort_keys=True,
                            default=str).encode())
        return h.hexdigest()


HASH_FLOAT_DIGITS = 10
"""Significant digits of the spec's floats in :meth:`Task.content_hash`."""


def rounded_floats(value: Any, digits: int = HASH_FLOAT_DIGITS) -> Any:
    """Return ``value`` (JSON-like) with every float rounded to ``digits`` significant digits.

    Measurements a task records (a glyph's height, a box in view pixels) pass through NumPy's
    matrix products, which run on the machine's BLAS kernel: an AVX-512 kernel and an AVX2 one
    can differ in the last bit. Rounded, the spec hashes the same on every machine, while the
    pixels are still hashed exactly.
    """
    if isinstance(value, float):
        return float(f"{value:.{digits}g}") if math.isfinite(value) else value
    if isinstance(value, dict):
        return {k: rounded_floats(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded_floats(v, digits) for v in value]
    return value
