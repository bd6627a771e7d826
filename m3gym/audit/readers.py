"""Tool necessity, with a strong reader: can a neural OCR read the evidence without the tool.

Measurement (b) of docs/tool-necessity.md. The reader is PP-OCRv4 through ONNX Runtime
(``rapidocr-onnxruntime``, whose wheel ships the weights: it runs offline on the CPU; the
``audit`` extra) and Tesseract 5 where installed (:mod:`m3gym.agents.ocr`), or the best of both.
It is *told where to look*: it reads a window around the evidence (:func:`evidence_window`).

* **No tool** — the reset view (the env's view size) cut to the window around the evidence.
* **With tool** — each reference artifact that holds the evidence, at the size the agent sees it
  (its view), cut to the window around the evidence mapped into it.

Both get the same tricks (:func:`reader_variants`): ×2 upscale, contrast stretch at ×2 and ×4, each
in the 8 rotations and flips; and, where PP-OCRv4 is installed, its text detector finds the text
lines of the window (×2 and its stretch), each line then read on its own in the 8 orientations
(:func:`line_variants`): a window that holds several lines (a bar with its data label and its
category) is read line by line, as a document reader would. What it reads is matched to the answer
choices the way the heuristic agent matches (:func:`~m3gym.agents.heuristic.text.choice_scores`),
each reading weighted by the reader's confidence; a tie at the top gets an even share of the credit,
so a reader that reads nothing scores chance (:func:`choice_credit`). For the L3 families whose
drawn text is a search key (the answer is off-image), the key counts as read when some reading holds
it (:func:`key_read`); there is no chance level there.

Families whose answer is neither drawn text nor a drawn search key (clocks, counts, periods,
comparisons, logos) have no reader here; the table says so and they rely on (a).
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import cv2
import numpy as np
from rapidfuzz import fuzz

from m3gym.pixels import to_gray
from m3gym.spec import Evidence, Task
from m3gym.view import to_view

READERS: tuple[str, ...] = ("best", "rapidocr", "tesseract", "none")
"""The ``--reader`` choices: both readers (best of both), one of them, or no reader."""
WINDOW_PAD: float = 0.25
"""Window margin around the evidence box, as a fraction of its shorter side (at least 3 px)."""
KEY_MATCH: float = 90.0
"""Least :func:`rapidfuzz.fuzz.partial_ratio` between a reading and a search key that reads it."""
RAPIDOCR_PIN: str = "rapidocr-onnxruntime==1.4.4"

Reading = tuple[str, float]
"""One reading: the text and the reader's confidence in it (0..1)."""
Reader = Callable[[Sequence[np.ndarray]], list[Reading]]
"""A reader: gray images in, its readings out (one or more per image)."""


# --------------------------------------------------------------------------------------------
# readers


class ReaderUnavailable(RuntimeError):
    """The reader asked for is not installed; the message says how to install it."""


@lru_cache(maxsize=1)
def _rapidocr_detector() -> Any:
    """Return PP-OCRv4's text detector, which never upsamples its input (loaded once).

    ``limit_type="max"``: the window is already upscaled ×2 (:func:`line_variants`); the
    default (``"min"``, 736 px) would upsample every small window again, at seconds per window.
    """
    from rapidocr_onnxruntime import RapidOCR

    _rapidocr_engine()  # raises with the install hint
    return RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1, det_limit_type="max",
                    det_limit_side_len=960).text_det


@lru_cache(maxsize=1)
def _rapidocr_engine() -> Any:
    """Return the PP-OCRv4 engine (loaded once; weights from inside the wheel)."""
    try:
        from rapidocr_onnxruntime import RapidOCR
    except ImportError as exc:
        raise ReaderUnavailable(
            f"the rapidocr reader needs {RAPIDOCR_PIN} (the 'audit' extra: pip install "
            f"\"m3gym[audit]\", or pip install --no-deps {RAPIDOCR_PIN} onnxruntime pyclipper "
            f"shapely six tqdm beside opencv-python-headless): {exc}") from None
    return RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1)


def rapidocr_available() -> bool:
    """Return whether the PP-OCRv4 reader can be loaded."""
    try:
        _rapidocr_engine()
    except ReaderUnavailable:
        return False
    return True


def read_rapidocr(images: Sequence[np.ndarray]) -> list[Reading]:
    """Return PP-OCRv4's recognition of each gray image as one text line, with its score.

    No detection step:

    the window is already around the evidence, so the recognizer reads it whole; detection
    (which upsamples every input to 736 px) would cost seconds per window.
    """
    if not images:
        return []
    engine = _rapidocr_engine()
    bgr = [cv2.cvtColor(np.ascontiguousarray(g), cv2.COLOR_GRAY2BGR) for g in images]
    results, _ = engine.text_rec(bgr)
    return [(latin_text(str(text)), float(score)) for text, score in results]


CJK_LOOKALIKES: dict[int, str] = str.maketrans({"口": "O", "囗": "O", "〇": "O", "一": "-"})
"""Glyphs of PP-OCRv4's Chinese charset it reads for Latin shapes (a ring, a dash)."""


def latin_text(text: str) -> str:
    """Return ``text`` in compatibility form (NFKC: ``④`` → ``4``) with CJK lookalikes mapped."""
    return unicodedata.normalize("NFKC", text).translate(CJK_LOOKALIKES)


def read_tesseract(images: Sequence[np.ndarray]) -> list[Reading]:
    """Return Tesseract's reading of each gray image and its mean word confidence (0..1).

    One process for all of them (tiled), page mode 6.
    """
    from m3gym.agents.ocr import (
        OcrUnavailable,
        forced_ocr_backend,
        mean_confidence,
        read_words_batch,
        words_text,
    )

    if not images:
        return []
    try:
        with forced_ocr_backend("tesseract"):
            words = read_words_batch(list(images), enhance=False, psm=6)
    except OcrUnavailable as exc:
        raise ReaderUnavailable(str(exc)) from None
    return [(words_text(w), mean_confidence(w) / 100.0) for w in words]


def make_reader(name: str) -> Reader | None:
    """Return the reader called ``name`` (:data:`READERS`); None for ``"none"``.

    ``best`` reads with both and returns both readings of each image (the matcher weighs them);
    it needs at least one of them. Raises :class:`ReaderUnavailable` when none can run. A reader
    with PP-OCRv4 also finds text lines (its ``detect`` attribute is True, :func:`read_task`
    adds :func:`line_variants`).
    """
    if name not in READERS:
        raise ValueError(f"unknown reader {name!r}; use one of {', '.join(READERS)}")
    if name == "none":
        return None
    from m3gym.agents.ocr import tesseract_available

    use_rapid = name in ("rapidocr", "best") and (name == "rapidocr" or rapidocr_available())
    use_tess = name in ("tesseract", "best") and (name == "tesseract" or tesseract_available())
    if name == "rapidocr":
        _rapidocr_engine()  # raises with the install hint
    if name == "tesseract" and not tesseract_available():
        raise ReaderUnavailable("the tesseract reader needs the tesseract binary on PATH "
                                "(Debian/Ubuntu: apt-get install tesseract-ocr)")
    if not (use_rapid or use_tess):
        raise ReaderUnavailable(f"--reader best needs {RAPIDOCR_PIN} or tesseract; neither is "
                                "installed")

    def read(images: Sequence[np.ndarray]) -> list[Reading]:
        return ((read_rapidocr(images) if use_rapid else [])
                + (read_tesseract(images) if use_tess else []))

    read.detect = use_rapid  # type: ignore[attr-defined]
    return read


def reader_name(name: str) -> str:
    """Return what ``--reader name`` reads with on this machine (for the table's header)."""
    if name != "best":
        return name
    from m3gym.agents.ocr import tesseract_available

    parts = [n for n, ok in (("PP-OCRv4", rapidocr_available()),
                             ("Tesseract", tesseract_available())) if ok]
    return "best of " + " + ".join(parts) if parts else "best (nothing installed)"


# --------------------------------------------------------------------------------------------
# inputs


def stretch(gray: np.ndarray, cutoff: float = 1.0) -> np.ndarray:
    """Return ``gray`` with its ``cutoff``..``100 - cutoff`` percentiles stretched to 0..255."""
    lo, hi = np.percentile(gray, (cutoff, 100.0 - cutoff))
    if hi - lo < 1.0:
        return gray
    lut = np.clip((np.arange(256, dtype=np.float64) - lo) * (255.0 / (hi - lo)), 0, 255)
    return cv2.LUT(gray, lut.astype(np.uint8))


def reader_variants(window: np.ndarray) -> list[np.ndarray]:
    """Return the reader's tricks on a window: ×2 upscale, stretch at ×2 and ×4; 8 orientations."""
    from m3gym.audit.leaks import dihedral

    gray = to_gray(window)
    h, w = gray.shape
    up2 = cv2.resize(gray, (2 * w, 2 * h), interpolation=cv2.INTER_CUBIC)
    up4 = cv2.resize(gray, (4 * w, 4 * h), interpolation=cv2.INTER_CUBIC)
    bases = (up2, stretch(up2), stretch(up4))
    return [np.ascontiguousarray(v) for base in bases for v in dihedral(base)]


LINE_PAD: int = 4
"""Pixels (in the ×2 window) a detected text line's box is grown by before it is read."""


def line_variants(window: np.ndarray) -> list[np.ndarray]:
    """Return each text line PP-OCRv4's detector finds in ``window``, in the 8 orientations.

    The detector runs on the ×2 upscale and on its contrast stretch (the first two bases of
    :func:`reader_variants`); each detected box (its bounding rectangle, grown by
    :data:`LINE_PAD`) is cut from the base it was found in. Lines found in both come twice
    (the matcher keeps the best reading). Detection finds lines in any orientation, so the
    variants are only upright or turned the way the window is.
    """
    from m3gym.audit.leaks import dihedral

    detector = _rapidocr_detector()
    gray = to_gray(window)
    h, w = gray.shape
    up2 = cv2.resize(gray, (2 * w, 2 * h), interpolation=cv2.INTER_CUBIC)
    out: list[np.ndarray] = []
    for base in (up2, stretch(up2)):
        boxes, _ = detector(cv2.cvtColor(np.ascontiguousarray(base), cv2.COLOR_GRAY2BGR))
        if boxes is None:
            continue
        bh, bw = base.shape
        for quad in boxes:
            xs, ys = np.asarray(quad)[:, 0], np.asarray(quad)[:, 1]
            a, b = max(0, int(xs.min()) - LINE_PAD), max(0, int(ys.min()) - LINE_PAD)
            c, d = min(bw, int(math.ceil(xs.max())) + LINE_PAD), min(
                bh, int(math.ceil(ys.max())) + LINE_PAD)
            if c - a >= 4 and d - b >= 4:
                out += [np.ascontiguousarray(v) for v in dihedral(base[b:d, a:c])]
    return out


def evidence_window(view: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    """Return ``view`` cut to ``box`` (view pixels) grown by :data:`WINDOW_PAD` on every side."""
    x0, y0, x1, y1 = box
    pad = max(3.0, WINDOW_PAD * min(x1 - x0, y1 - y0))
    h, w = view.shape[:2]
    a, b = max(0, int(math.floor(x0 - pad))), max(0, int(math.floor(y0 - pad)))
    c, d = min(w, int(math.ceil(x1 + pad))), min(h, int(math.ceil(y1 + pad)))
    return view[b:max(d, b + 1), a:max(c, a + 1)]


def mapped_box(ev: Evidence, affine: np.ndarray, scale: float) -> tuple[float, float, float, float]:
    """Return the bounding box of ``ev.box`` mapped through ``affine`` then scaled by ``scale``."""
    from m3gym.geometry import mapped_extent

    a, b, c, d = mapped_extent(affine, ev.box)
    return a * scale, b * scale, c * scale, d * scale


def no_tool_windows(task: Task, ev: Evidence, view_size: int) -> list[np.ndarray]:
    """Return the reset view's window around ``ev`` (one image: what the reader sees)."""
    image = task.images[ev.image]
    view = to_view(image, view_size)
    scale = view.shape[0] / image.shape[0]
    return [evidence_window(view, tuple(v * scale for v in ev.box))]


def with_tool_windows(task: Task, ev: Evidence, view_size: int) -> list[np.ndarray]:
    """Return the window around ``ev`` in each reference artifact that holds it, at view size."""
    from m3gym.audit.tool_necessity import evidence_region, replay_calls

    real = replay_calls(task, task.images)
    out = []
    for index in real.outputs.values():
        entry = real.state[index]
        if entry.provenance.root != ev.image:
            continue
        view = to_view(entry.array, view_size)
        scale = view.shape[0] / entry.array.shape[0]
        if evidence_region(ev, entry.provenance.affine, scale, view.shape[:2]) is None:
            continue
        out.append(evidence_window(view, mapped_box(ev, entry.provenance.affine, scale)))
    return out


# --------------------------------------------------------------------------------------------
# scoring


def choice_credit(readings: Sequence[Reading], choices: Sequence[str], answer: int) -> float:
    """Return the reader's credit on one task: 1/t when the answer is among the t top choices.

    Each reading scores the choices like the heuristic agent does
    (:func:`~m3gym.agents.heuristic.text.choice_scores`, 0..100), weighted by the reading's
    confidence; a choice's score is its best over the readings (so a turned variant read with
    little confidence does not tie the upright one). Reading nothing ties every choice, which
    gives chance.
    """
    from m3gym.agents.heuristic.text import choice_scores

    scores = [0.0] * len(choices)
    for text, conf in readings:
        if not text.strip():
            continue
        for i, s in enumerate(choice_scores([text], list(choices))):
            scores[i] = max(scores[i], s * max(conf, 1e-3))
    top = max(scores)
    best = [i for i, s in enumerate(scores) if s >= top - 1e-9]
    return 1.0 / len(best) if answer in best else 0.0


def key_read(readings: Sequence[Reading], key: str) -> bool:
    """Return whether some reading holds the search key (normalized, fuzzy ≥ :data:`KEY_MATCH`).

    Readings and key are normalized like the heuristic's codes (``norm_code``); a reading at
    least as long as the key holds it when some substring matches it (``partial_ratio``), a
    shorter one only as a whole (``ratio``).
    """
    from m3gym.agents.heuristic.text import norm_code

    target = norm_code(key)

    def score(reading: str) -> float:
        # partial_ratio aligns the shorter string: a reading shorter than the key must match whole
        if len(reading) < len(target):
            return fuzz.ratio(target, reading)
        return fuzz.partial_ratio(target, reading)

    return bool(target) and any(score(norm_code(t)) >= KEY_MATCH for t, _ in readings
                                if norm_code(t))


def search_key_evidence(task: Task) -> Evidence | None:
    """Return the drawn evidence whose text (or part of it) the reference searches for, or None."""
    from m3gym.agents.heuristic.text import norm_code

    queries = [norm_code(str(c.arguments.get("query", ""))) for step in task.reference
               for c in step if c.name == "web_search"]
    for ev in task.evidence:
        if ev.text is None:
            continue
        for part in (ev.text, *ev.text.split(":")[1:]):
            key = norm_code(part)
            if key and any(key in q or q in key for q in queries if q):
                return ev
    return None


def search_key(task: Task, ev: Evidence) -> str:
    """Return the part of ``ev.text`` the reference searches for (after a ``label:`` prefix)."""
    from m3gym.agents.heuristic.text import norm_code

    queries = [norm_code(str(c.arguments.get("query", ""))) for step in task.reference
               for c in step if c.name == "web_search"]
    parts = [p.strip() for p in (*ev.text.split(":")[1:], ev.text)] if ev.text else []
    for p in parts:
        if any(norm_code(p) in q for q in queries):
            return p
    return ev.text or ""


@dataclass(frozen=True)
class ReaderScore:
    """One task read by the strong reader: credits without and with the tool, and chance.

    ``kind`` is ``"answer"`` (the answer is drawn text; credits per :func:`choice_credit`) or
    ``"key"`` (a drawn search key; credit 1 when read, chance undefined).
    """

    kind: str
    no_tool: float
    with_tool: float
    chance: float | None


def blank_window(window: np.ndarray) -> bool:
    """Whether ``window`` is one flat grey level: it holds nothing to read.

    Such a window is not read: a recognizer still answers on a blank (PP-OCRv4 reads a flat
    window as "2"), which would credit the reader with a guess that no pixel supports. Reading
    nothing scores chance (:func:`choice_credit`).
    """
    if window.size == 0:
        return True
    gray = to_gray(window)
    return int(gray.max()) == int(gray.min())


def read_task(task: Task, reader: Reader, view_size: int | None = None) -> ReaderScore | None:
    """Return the reader's scores on ``task``; None when it has no drawn answer or search key."""
    from m3gym.audit.leaks import answer_index, drawn_answer_evidence
    from m3gym.tasks.registry import get_family

    size = view_size or get_family(task.family).view_size
    ev = drawn_answer_evidence(task) if task.choices else None
    kind = "answer"
    if ev is None:
        ev, kind = search_key_evidence(task), "key"
    if ev is None:
        return None
    readings = []
    detect = bool(getattr(reader, "detect", False))
    for windows in (no_tool_windows(task, ev, size), with_tool_windows(task, ev, size)):
        windows = [w for w in windows if not blank_window(w)]
        variants = [v for w in windows
                    for v in (*reader_variants(w), *(line_variants(w) if detect else ()))]
        readings.append(reader(variants) if variants else [])
    if kind == "answer":
        k = answer_index(task)
        return ReaderScore(kind, *(choice_credit(t, task.choices, k) for t in readings),
                           1.0 / len(task.choices))
    key = search_key(task, ev)
    return ReaderScore(kind, *(float(key_read(t, key)) for t in readings), None)
