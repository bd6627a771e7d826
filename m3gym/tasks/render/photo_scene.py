"""Scenes drawn into photographs: the surface an object lies on becomes a real photograph.

A family draws its physical object (a sign, a receipt, a shelf, a dial, a printed chart) onto a
*surface*: :func:`surface` returns the procedural texture of :func:`~m3gym.tasks.render.
backgrounds.background`, or, while a :class:`PhotoScene` is active (``make_task(...,
{"scenes": "photo"})``), a crop of a photograph in its place. Everything the family draws
afterwards (the object, its perspective, cast shadows, the camera chain) lands on the photo, so
the geometry the family records (evidence boxes, clean renders, provenance) stays exact.

How the photograph replaces the surface (:func:`photo_backdrop`):

* **Scale from the photo's size.** A crop with the surface's aspect ratio covering 60-100 % of
  the photo's largest such window is resized to the surface's size; a small photo is enlarged,
  a large one shrunk with area averaging.
* **Illumination matched.** The photo takes the light of the surface it replaces: its mean
  colour moves most of the way (:data:`MEAN_TRANSFER`) to the surface's, and the surface's
  low-frequency lighting (the family's gradient and vignette) is multiplied in, so the object and
  its surroundings share one light. The family's shadows, blur, noise and JPEG then fall on both.
* **Clutter** (a difficulty knob in ``[0, 1]``): the photo's texture contrast is kept at
  ``0.45 + 0.55 * clutter`` of its own and the backdrop is defocused by ``(1 - clutter)``, so a
  low setting is a calm, out-of-focus backdrop and a high one a sharp, busy photograph.
* **Camera** (a difficulty knob in ``[0, 1]``): after the family is done, :func:`finish_photo_task`
  adds sensor noise and a JPEG round trip to every input image, uniformly (no region is spared, so
  the evidence cannot be found by where the noise is missing). A finish that would break a draw
  the family verified is redone weaker (see :func:`finish_photo_task`).

Draws for the photograph come from the scene's own generator (seeded from the family and task
seed), never from the family's, so a flat task's bytes do not depend on this module and a photo
task has the flat task's content (answer, layout) on a different backdrop, unless the family
chooses its content from the surface's pixels (``region_count`` picks a target colour that
contrasts with the backdrop, so its photo tasks can ask about another colour).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

import cv2
import numpy as np

from m3gym.spec import Task
from m3gym.tasks.render.backgrounds import background
from m3gym.tasks.render.degradations import add_sensor_noise, jpeg_artifacts
from m3gym.tasks.render.photos import PhotoSource

MEAN_TRANSFER: float = 0.6
"""Fraction of the way the photo's mean colour moves to the replaced surface's."""

CROP_FRACTION: tuple[float, float] = (0.6, 1.0)
"""Range of the crop's side over the photo's largest window of the surface's aspect ratio."""

DEFAULT_CLUTTER: float = 0.8
"""Backdrop clutter when neither a difficulty nor ``photo_clutter`` sets it."""

DEFAULT_CAMERA: float = 0.3
"""Camera degradation when neither a difficulty nor ``photo_camera`` sets it."""

@dataclass
class PhotoScene:
    """The photographs one task is drawn into, with its own generator and knobs.

    ``placed`` collects one record per surface replaced (photo name, sha256, crop box in the
    photo's decoded pixels, output size); the task's ``metadata["photo_scene"]`` carries them.
    """

    source: PhotoSource
    rng: np.random.Generator
    clutter: float = DEFAULT_CLUTTER
    camera: float = DEFAULT_CAMERA
    placed: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for name in ("clutter", "camera"):
            value = float(getattr(self, name))
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"photo_{name} must lie in [0, 1], got {value!r}")
            setattr(self, name, value)
        if not len(self.source):
            raise ValueError("a photo scene needs at least one photo")

    def metadata(self) -> dict[str, Any]:
        """Return the JSON record of this scene for ``Task.metadata["photo_scene"]``."""
        return {"kind": "photo", "source": self.source.label, "clutter": self.clutter,
                "camera": self.camera, "photos": [dict(p) for p in self.placed]}


_ACTIVE: ContextVar[PhotoScene | None] = ContextVar("m3gym_photo_scene", default=None)


@contextmanager
def active_photo_scene(scene: PhotoScene | None) -> Iterator[PhotoScene | None]:
    """Make ``scene`` the one :func:`surface` draws into for the duration of the block."""
    token = _ACTIVE.set(scene)
    try:
        yield scene
    finally:
        _ACTIVE.reset(token)


def current_photo_scene() -> PhotoScene | None:
    """Return the active photo scene, or ``None`` (flat scenes)."""
    return _ACTIVE.get()


def surface(rng: np.random.Generator, height: int, width: int, kind: str | None = None,
            **kwargs: Any) -> np.ndarray:
    """Return the surface an object is drawn on: a textured background, or a photo in its place.

    Takes :func:`~m3gym.tasks.render.backgrounds.background`'s arguments and always makes its
    draws from ``rng`` (so flat tasks keep their bytes); while a photo scene is active the
    texture is replaced by :func:`photo_backdrop`.
    """
    flat = background(rng, height, width, kind, **kwargs)
    scene = _ACTIVE.get()
    return flat if scene is None else photo_backdrop(scene, flat)


def _crop_box(rng: np.random.Generator, pw: int, ph: int, w: int, h: int) -> tuple[int, ...]:
    """Return an integer crop ``(x0, y0, x1, y1)`` of a ``pw x ph`` photo with aspect ``w/h``."""
    aspect = w / h
    cw, ch = min(float(pw), ph * aspect), min(float(ph), pw / aspect)
    frac = float(rng.uniform(*CROP_FRACTION))
    cw, ch = max(8.0, cw * frac), max(8.0, ch * frac)
    x0 = float(rng.uniform(0.0, max(0.0, pw - cw)))
    y0 = float(rng.uniform(0.0, max(0.0, ph - ch)))
    return (int(x0), int(y0), min(pw, int(round(x0 + cw))), min(ph, int(round(y0 + ch))))


def _low_light(img: np.ndarray, side: int = 48) -> np.ndarray:
    """Return ``img``'s low-frequency luminance on a small grid, normalised to mean 1."""
    h, w = img.shape[:2]
    s = side / max(h, w)
    small = cv2.resize(img, (max(2, round(w * s)), max(2, round(h * s))),
                       interpolation=cv2.INTER_AREA)
    gray = cv2.cvtColor(small, cv2.COLOR_RGB2GRAY).astype(np.float32)
    gray = cv2.GaussianBlur(gray, (0, 0), side / 8)
    return gray / max(float(gray.mean()), 1.0)


def photo_backdrop(scene: PhotoScene, flat: np.ndarray) -> np.ndarray:
    """Return a photo crop the size of ``flat``, lit like it (see the module docstring)."""
    h, w = flat.shape[:2]
    rng = scene.rng
    index = int(rng.integers(len(scene.source)))
    photo = scene.source.pixels(index)
    ph, pw = photo.shape[:2]
    x0, y0, x1, y1 = _crop_box(rng, pw, ph, w, h)
    crop = photo[y0:y1, x0:x1]
    # everything below runs at the smaller of the crop's and the surface's size, then one resize:
    # the lighting is smooth and the per-channel transfer affine, so both commute with the
    # (linear) enlargement up to rounding, and a 3x enlargement costs one pass instead of six
    if x1 - x0 > w:
        work = cv2.resize(crop, (w, h), interpolation=cv2.INTER_AREA)
    else:
        work = np.ascontiguousarray(crop)
    wh, ww = work.shape[:2]
    defocus = (1.0 - scene.clutter) * 0.004 * max(h, w) * (ww / w)
    if defocus >= 0.3:
        work = cv2.GaussianBlur(work, (0, 0), defocus)
    # illumination: mean colour toward the surface's, contrast by clutter, the surface's light;
    # the surface is a smooth enlargement of a small texture, so every k-th pixel describes it
    k = max(1, max(h, w) // 192)
    thumb = np.ascontiguousarray(flat[::k, ::k])
    small_flat = cv2.resize(thumb, (32, 32), interpolation=cv2.INTER_AREA).reshape(-1, 3)
    small_work = cv2.resize(work, (32, 32), interpolation=cv2.INTER_AREA).reshape(-1, 3)
    mu_f = small_flat.mean(axis=0, dtype=np.float64)
    mu_p = small_work.mean(axis=0, dtype=np.float64)
    target = mu_p + MEAN_TRANSFER * (mu_f - mu_p)
    gain = 0.45 + 0.55 * scene.clutter
    light = cv2.resize(_low_light(thumb), (ww, wh), interpolation=cv2.INTER_LINEAR)
    lit = work.astype(np.float32)
    lit -= mu_p.astype(np.float32)
    lit *= np.float32(gain)
    lit += target.astype(np.float32)
    lit *= light[..., None]
    np.clip(lit, 0, 255, out=lit)
    result = lit.astype(np.uint8)
    if (ww, wh) != (w, h):
        result = cv2.resize(result, (w, h), interpolation=cv2.INTER_LINEAR)
    info = scene.source.photos[index]
    scene.placed.append({"photo": info.name, "sha256": scene.source.sha256(index),
                         "crop": [x0, y0, x1, y1], "size": [w, h]})
    return result


def scene_for_task(source: PhotoSource, family: str, seed: int, difficulty: float | None,
                   clutter: float | None = None, camera: float | None = None) -> PhotoScene:
    """Return the photo scene of task ``(family, seed)``: its own generator and knobs.

    ``difficulty`` (when given) sets clutter ``0.25 + 0.75 d`` and camera ``d``; explicit
    ``clutter`` / ``camera`` override it; otherwise :data:`DEFAULT_CLUTTER` /
    :data:`DEFAULT_CAMERA`.
    """
    key = [int(b) for b in f"photo-scene/{family}".encode()]
    rng = np.random.default_rng(np.random.SeedSequence(entropy=int(seed), spawn_key=key))
    if difficulty is not None:
        d = float(difficulty)
        base_clutter, base_camera = 0.25 + 0.75 * d, d
    else:
        base_clutter, base_camera = DEFAULT_CLUTTER, DEFAULT_CAMERA
    return PhotoScene(source, rng, base_clutter if clutter is None else float(clutter),
                      base_camera if camera is None else float(camera))


def _camera_finish(images: tuple[np.ndarray, ...], rng: np.random.Generator,
                   camera: float) -> tuple[np.ndarray, ...]:
    """Return ``images`` with sensor noise and a JPEG round trip of strength ``camera``."""
    sigma = 2.5 * camera
    quality = int(round(95 - 15 * camera))
    finished = []
    for img in images:
        out = add_sensor_noise(img, rng, sigma) if sigma >= 0.25 else img
        out = jpeg_artifacts(out, quality)
        out.setflags(write=False)
        finished.append(out)
    return tuple(finished)


CAMERA_RETRIES: int = 3
"""How many times the camera finish is halved when it would break a verified reference."""


def finish_photo_task(task: Task, scene: PhotoScene,
                      reference_passes: Callable[[Task], bool]) -> Task:
    """Return ``task`` with the camera finish on every input image and the scene in metadata.

    A draw with no surface (a family's screenshot variant, e.g. ``chart_value``'s slides) stays
    as it is, flat and without the camera finish; its ``metadata["photo_scene"]`` says so.

    The family verified its draw (:func:`~m3gym.tasks.verify.first_verified`) before the finish;
    when ``reference_passes`` (the caller passes
    :func:`~m3gym.tasks.verify.reference_checkpoints_pass`, which this drawing module does not
    import) holds for the unfinished images but not for the finished ones (the noise pushed an
    evidence under its fidelity bar), the finish is redone at half the strength (up to
    :data:`CAMERA_RETRIES` times, then left off) and ``metadata["photo_scene"]`` records the
    strength used as ``camera_applied``.
    """
    if not scene.placed:
        return replace(task, metadata={**task.metadata, "photo_scene": {
            "kind": "flat", "source": scene.source.label,
            "reason": "this draw has no surface for a photograph to replace"}})
    images = task.images
    meta = scene.metadata()
    if scene.camera > 0.0:
        strength = scene.camera
        images = _camera_finish(task.images, scene.rng, strength)
        if (not reference_passes(replace(task, images=images))
                and reference_passes(task)):
            for _ in range(CAMERA_RETRIES):
                strength /= 2.0
                images = _camera_finish(task.images, scene.rng, strength)
                if reference_passes(replace(task, images=images)):
                    break
            else:
                strength, images = 0.0, task.images
            meta["camera_applied"] = strength
    return replace(task, images=images, metadata={**task.metadata, "photo_scene": meta})
