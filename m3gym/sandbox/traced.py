"""Run-time tracing inside the worker: arrays and Pillow images that remember their lineage.

A *lineage* says how an array was made from an image of the episode's state: the source index,
the 2x3 affine map from the source's pixel-edge coordinates to the array's (``None`` once the
geometry is lost), and the list of operations, each ``(name, params)``. Names that match an
atomic tool (``crop_px``, ``resize``, ``flip``, ``rotate``, ``grayscale``, ``autocontrast``,
``invert``, ``equalize``, ``threshold``, ``blur``, ``sharpen``, ``edge_detect``) are *claims*: the
env re-runs them and keeps them as canonical calls only if the pixels agree
(:mod:`m3gym.sandbox.canonical`). ``code`` marks an unrecognised operation that kept the geometry.

Traced constructs (see the code-mode page, docs/code-mode.md): basic slicing of an image array
(``img[y0:y1, x0:x1]``, negative steps = flips, channel selection), elementwise numpy
operations (geometry kept), ``np.flip/fliplr/flipud/rot90``, ``cv2.resize/flip/rotate/cvtColor/
equalizeHist/threshold/Canny/GaussianBlur/bitwise_not`` (and any other ``cv2`` function that keeps
the image size, as ``code``), ``Image.fromarray`` and the Pillow methods ``crop/rotate/resize/
transpose/convert/filter/copy``, ``ImageOps.autocontrast/equalize/invert/grayscale/mirror/flip``,
and ``np.asarray(pil_image)`` (matched by memory). Anything else gives an untraced array.

This module runs inside the worker as a top-level module: it must not import ``m3gym``. So its
affines are 6-tuples with helpers of their own (the reason is in :mod:`m3gym.geometry`'s
docstring); ``tests/sandbox/test_traced.py`` pins them to the package's geometry.
"""

from __future__ import annotations

import math
import types
from collections import deque
from typing import Any, NamedTuple

import cv2
import numpy as np
from PIL import Image, ImageFilter, ImageOps

Affine = tuple[float, float, float, float, float, float]
IDENTITY: Affine = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0)


class Lineage(NamedTuple):
    """How an array derives from state image ``src``: affine (or ``None``) and the op list."""

    src: int
    affine: Affine | None
    ops: tuple[tuple[str, dict[str, Any]], ...] = ()

    def then(self, name: str, params: dict[str, Any] | None = None,
             step: Affine | None | bool = True) -> Lineage:
        """Return the lineage after one more op; ``step`` True = photometric, None = lost."""
        if step is True or self.affine is None:
            affine = self.affine
        elif step is None or step is False:
            affine = None
        else:
            affine = compose(step, self.affine)
        return Lineage(self.src, affine, (*self.ops, (name, dict(params or {}))))

    def to_json(self) -> dict[str, Any]:
        """Return the lineage as JSON for the env."""
        return {"src": self.src, "affine": None if self.affine is None else list(self.affine),
                "ops": [[n, p] for n, p in self.ops]}


def compose(outer: Affine, inner: Affine) -> Affine:
    """Return ``outer ∘ inner`` of two 2x3 affines given as 6-tuples."""
    a, b, c, d, e, f = outer
    p, q, r, s, t, u = inner
    return (a * p + b * s, a * q + b * t, a * r + b * u + c,
            d * p + e * s, d * q + e * t, d * r + e * u + f)


def quarter_turn(k: int, w: int, h: int) -> Affine:
    """Return the affine of ``k`` counter-clockwise quarter turns of a ``w`` x ``h`` image."""
    k %= 4
    return {0: IDENTITY, 1: (0.0, 1.0, 0.0, -1.0, 0.0, float(w)),
            2: (-1.0, 0.0, float(w), 0.0, -1.0, float(h)),
            3: (0.0, -1.0, float(h), 1.0, 0.0, 0.0)}[k]


def flip_affine(direction: str, w: int, h: int) -> Affine:
    """Return the affine of a horizontal, vertical or both-ways flip."""
    sx = -1.0 if direction in ("horizontal", "both") else 1.0
    sy = -1.0 if direction in ("vertical", "both") else 1.0
    return (sx, 0.0, float(w) if sx < 0 else 0.0, 0.0, sy, float(h) if sy < 0 else 0.0)


def rotation_affine(angle: float, w: int, h: int, ow: int, oh: int) -> Affine:
    """Return the affine of a counter-clockwise rotation about the centre into ``ow`` x ``oh``.

    Multiples of 90 degrees (within ``geometry.EDGE_EPS``, 1e-9) use exact cosines and sines, as
    :func:`m3gym.geometry.rotation_affine` does.
    """
    quarter = angle / 90.0
    if abs(quarter - round(quarter)) < 1e-9:
        cs, sn = [(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)][round(quarter) % 4]
    else:
        t = math.radians(angle)
        cs, sn = math.cos(t), math.sin(t)
    cx, cy, ox, oy = w / 2, h / 2, ow / 2, oh / 2
    return (cs, sn, ox - cs * cx - sn * cy, -sn, cs, oy + sn * cx - cs * cy)


def scale_affine(w: int, h: int, ow: int, oh: int) -> Affine:
    """Return the affine of resizing ``w`` x ``h`` to ``ow`` x ``oh``."""
    return (ow / w, 0.0, 0.0, 0.0, oh / h, 0.0)


# ---------------------------------------------------------------------------------- arrays
class TracedArray(np.ndarray):
    """An ndarray that carries a :class:`Lineage` (``None`` when untraced)."""

    lineage: Lineage | None

    def __array_finalize__(self, obj: Any) -> None:
        lin = getattr(obj, "lineage", None)
        self.lineage = lin if lin is not None and getattr(obj, "shape", None) == self.shape \
            else None

    def __getitem__(self, key: Any) -> Any:
        out = np.ndarray.__getitem__(self.view(np.ndarray), key)
        if not isinstance(out, np.ndarray) or out.ndim < 2:
            return out
        return traced(out, slice_lineage(self, key, out))

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        plain = [np.asarray(x) if isinstance(x, TracedArray) else x for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(np.asarray(x) if isinstance(x, TracedArray) else x
                                  for x in kwargs["out"])
        result = getattr(ufunc, method)(*plain, **kwargs)
        if method == "__call__" and _is_inversion(ufunc, inputs, result):
            src = inputs[-1]
            return traced(result, src.lineage.then("invert") if src.lineage else None)
        return _keep_geometry(result, inputs, f"np.{ufunc.__name__}")

    def __array_function__(self, func: Any, types_: Any, args: Any, kwargs: Any) -> Any:
        name = getattr(func, "__name__", "")
        plain_args = [np.asarray(a) if isinstance(a, TracedArray) else a for a in args]
        plain_kwargs = {k: np.asarray(v) if isinstance(v, TracedArray) else v
                        for k, v in kwargs.items()}
        result = func(*plain_args, **plain_kwargs)
        src = args[0] if args else None
        if isinstance(src, TracedArray) and src.lineage is not None and src.ndim >= 2:
            special = _numpy_geometric(name, src, args, kwargs, result)
            if special is not None:
                return traced(result, special)
        return _keep_geometry(result, args, f"np.{name}")


def _is_inversion(ufunc: Any, inputs: Any, result: Any) -> bool:
    """Return whether a ufunc call is ``255 - img`` or ``~img`` on a uint8 traced image."""
    src = inputs[-1]
    if not (isinstance(src, TracedArray) and src.dtype == np.uint8
            and isinstance(result, np.ndarray) and result.dtype == np.uint8):
        return False
    if ufunc is np.invert and len(inputs) == 1:
        return True
    return ufunc is np.subtract and len(inputs) == 2 and np.isscalar(inputs[0]) \
        and inputs[0] == 255


def traced(array: Any, lineage: Lineage | None) -> Any:
    """Return ``array`` as a :class:`TracedArray` with ``lineage`` (plain when ``None``)."""
    if not isinstance(array, np.ndarray):
        return array
    if lineage is None:
        return array.view(np.ndarray) if isinstance(array, TracedArray) else array
    out = array.view(TracedArray)
    out.lineage = lineage
    return out


def lineage_of(obj: Any) -> Lineage | None:
    """Return the lineage of an array or Pillow image made in this worker (or ``None``)."""
    lin = getattr(obj, "lineage", None)
    if isinstance(lin, Lineage):
        return lin
    if isinstance(obj, np.ndarray):
        return CONVERSIONS.find(obj)
    return None


def _keep_geometry(result: Any, inputs: Any, name: str) -> Any:
    """Elementwise results of the source's shape keep its geometry (an unrecognised ``code`` op)."""
    src = next((x for x in inputs if isinstance(x, TracedArray) and x.lineage is not None), None)
    if src is None or not isinstance(result, np.ndarray):
        return result.view(np.ndarray) if isinstance(result, TracedArray) else result
    if result.shape[:2] == src.shape[:2] and result.ndim >= 2:
        return traced(result, src.lineage.then("code", {"fn": name}))
    return traced(result, None)


def _axis_slice(key: Any, n: int) -> tuple[int, int, int] | None:
    if not isinstance(key, slice):
        return None
    start, stop, step = key.indices(n)
    return (start, stop, step) if step in (1, -1) else None


def slice_lineage(src: TracedArray, key: Any, out: np.ndarray) -> Lineage | None:
    """Return the lineage of ``src[key]``: crops, flips and channel picks are traced."""
    lin = src.lineage
    if lin is None:
        return None
    keys = key if isinstance(key, tuple) else (key,)
    if any(k is Ellipsis for k in keys):
        i = keys.index(Ellipsis)
        keys = keys[:i] + (slice(None),) * (src.ndim - len(keys) + 1) + keys[i + 1:]
    keys = keys + (slice(None),) * (src.ndim - len(keys))
    h, w = src.shape[:2]
    rows, cols = _axis_slice(keys[0], h), _axis_slice(keys[1], w)
    if rows is None or cols is None or len(keys) > 3:
        return None
    (y0, y1, sy), (x0, x1, sx) = rows, cols
    lo_y, hi_y = (y0, y1) if sy > 0 else (y1 + 1, y0 + 1)
    lo_x, hi_x = (x0, x1) if sx > 0 else (x1 + 1, x0 + 1)
    if hi_y <= lo_y or hi_x <= lo_x:
        return None
    if (lo_x, lo_y, hi_x, hi_y) != (0, 0, w, h):
        lin = lin.then("crop_px", {"box": [lo_x, lo_y, hi_x, hi_y]},
                       (1.0, 0.0, -float(lo_x), 0.0, 1.0, -float(lo_y)))
    direction = {(True, False): "horizontal", (False, True): "vertical",
                 (True, True): "both"}.get((sx < 0, sy < 0))
    if direction:
        lin = lin.then("flip", {"direction": direction},
                       flip_affine(direction, hi_x - lo_x, hi_y - lo_y))
    if src.ndim == 3 and keys[2] != slice(None):
        lin = lin.then("code", {"fn": "channels"})
    return lin


def _numpy_geometric(name: str, src: TracedArray, args: Any, kwargs: Any,
                     result: Any) -> Lineage | None:
    h, w = src.shape[:2]
    lin = src.lineage
    assert lin is not None
    if name == "rot90":
        k = int(args[1] if len(args) > 1 else kwargs.get("k", 1))
        axes = tuple(args[2] if len(args) > 2 else kwargs.get("axes", (0, 1)))
        if axes != (0, 1):
            return None
        return lin.then("rotate", {"angle": 90 * (k % 4), "expand": True}, quarter_turn(k, w, h))
    direction = {"fliplr": "horizontal", "flipud": "vertical"}.get(name)
    if name == "flip":
        axis = args[1] if len(args) > 1 else kwargs.get("axis")
        axis = tuple(axis) if isinstance(axis, (tuple, list)) else axis
        direction = {0: "vertical", 1: "horizontal", (0, 1): "both", (1, 0): "both"}.get(axis)
    if direction is None:
        return None
    return lin.then("flip", {"direction": direction}, flip_affine(direction, w, h))


# ------------------------------------------------------------------ np.asarray(pil) matching
class Conversions:
    """The last few arrays handed out by traced Pillow images (found again by shared memory)."""

    def __init__(self, size: int = 8) -> None:
        self.entries: deque[tuple[np.ndarray, Lineage]] = deque(maxlen=size)

    def add(self, array: np.ndarray, lineage: Lineage) -> None:
        """Remember that ``array`` (a Pillow conversion) has ``lineage``."""
        self.entries.append((array, lineage))

    def find(self, array: np.ndarray) -> Lineage | None:
        """Return the lineage of a remembered conversion ``array`` views or equals."""
        for arr, lin in reversed(self.entries):
            if arr.shape == array.shape and (np.shares_memory(arr, array)
                                             or np.array_equal(arr, array)):
                return lin
        return None

    def clear(self) -> None:
        """Forget everything (between episodes)."""
        self.entries.clear()


CONVERSIONS = Conversions()


# ---------------------------------------------------------------------------------- Pillow
class TracedImage(Image.Image):
    """A Pillow image with a lineage; recognised methods return traced images."""

    lineage: Lineage | None = None

    @property
    def __array_interface__(self) -> dict[str, Any]:  # type: ignore[override]
        arr = np.asarray(wrap_pil(self, None))
        if self.lineage is not None:
            CONVERSIONS.add(arr, self.lineage)
        return arr.__array_interface__

    def _traced(self, out: Image.Image, name: str | None, params: dict[str, Any] | None = None,
                step: Affine | None | bool = True) -> TracedImage:
        lin = self.lineage
        if lin is not None and name is not None:
            lin = lin.then(name, params, step)
        elif lin is not None and out.size != self.size:
            lin = None
        return wrap_pil(out, lin)

    def copy(self) -> TracedImage:
        """Copy, keeping the lineage."""
        return self._traced(Image.Image.copy(self), None)

    def crop(self, box: Any = None) -> TracedImage:
        """Crop a pixel box (traced as ``crop_px`` when inside the image)."""
        out = Image.Image.crop(self, box)
        if box is None:
            return self._traced(out, None)
        x0, y0, x1, y1 = (float(v) for v in box)
        inside = all(float(v).is_integer() for v in box) and 0 <= x0 < x1 <= self.width \
            and 0 <= y0 < y1 <= self.height
        name = "crop_px" if inside else "code"
        return self._traced(out, name, {"box": [int(x0), int(y0), int(x1), int(y1)]},
                            (1.0, 0.0, -x0, 0.0, 1.0, -y0))

    def rotate(self, angle: float, *args: Any, **kwargs: Any) -> TracedImage:
        """Rotate counter-clockwise (traced as ``rotate``)."""
        out = Image.Image.rotate(self, angle, *args, **kwargs)
        expand = bool(args[1] if len(args) > 1 else kwargs.get("expand", False))
        step = rotation_affine(float(angle), self.width, self.height, out.width, out.height)
        return self._traced(out, "rotate", {"angle": float(angle), "expand": expand}, step)

    def resize(self, size: Any, *args: Any, **kwargs: Any) -> TracedImage:
        """Resize (traced as ``resize``)."""
        out = Image.Image.resize(self, size, *args, **kwargs)
        step = scale_affine(self.width, self.height, out.width, out.height)
        return self._traced(out, "resize", {"width": out.width, "height": out.height}, step)

    def transpose(self, method: Any) -> TracedImage:
        """Flip or quarter-turn (traced as ``flip`` / ``rotate``)."""
        out = Image.Image.transpose(self, method)
        t = Image.Transpose
        w, h = self.width, self.height
        flips = {t.FLIP_LEFT_RIGHT: "horizontal", t.FLIP_TOP_BOTTOM: "vertical"}
        turns = {t.ROTATE_90: 1, t.ROTATE_180: 2, t.ROTATE_270: 3}
        if method in flips:
            return self._traced(out, "flip", {"direction": flips[method]},
                                flip_affine(flips[method], w, h))
        if method in turns:
            k = turns[method]
            return self._traced(out, "rotate", {"angle": 90 * k, "expand": True},
                                quarter_turn(k, w, h))
        return self._traced(out, "code", {"fn": "transpose"}, None)

    def convert(self, mode: str | None = None, *args: Any, **kwargs: Any) -> TracedImage:
        """Convert the mode (``L`` from RGB traced as ``grayscale``)."""
        out = Image.Image.convert(self, mode, *args, **kwargs)
        if out.mode == self.mode:
            return self._traced(out, None)
        return self._traced(out, "grayscale" if out.mode == "L" else "code",
                            {} if out.mode == "L" else {"fn": f"convert:{out.mode}"})

    def filter(self, filt: Any) -> TracedImage:
        """Apply a filter (Gaussian blur, SHARPEN, FIND_EDGES are traced)."""
        out = Image.Image.filter(self, filt)
        if isinstance(filt, ImageFilter.GaussianBlur):
            return self._traced(out, "blur", {"radius": float(filt.radius)})
        if filt is ImageFilter.SHARPEN or isinstance(filt, ImageFilter.SHARPEN):
            return self._traced(out, "sharpen")
        if filt is ImageFilter.FIND_EDGES or isinstance(filt, ImageFilter.FIND_EDGES):
            return self._traced(out, "edge_detect", {"method": "simple"})
        return self._traced(out, "code", {"fn": f"filter:{type(filt).__name__}"})


def wrap_pil(image: Image.Image, lineage: Lineage | None) -> Any:
    """Return ``image`` as a :class:`TracedImage` (a plain ``Image`` when ``lineage`` is None)."""
    if lineage is None:
        if type(image) is Image.Image:
            return image
        plain = Image.Image()
        plain.__dict__.update(image.__dict__)
        plain.__dict__.pop("lineage", None)
        return plain
    out = TracedImage()
    out.__dict__.update(image.__dict__)
    out.lineage = lineage
    return out


def fromarray(obj: Any, *args: Any, **kwargs: Any) -> Any:
    """``Image.fromarray`` that keeps the array's lineage."""
    lin = lineage_of(obj)
    plain = np.asarray(obj)
    return wrap_pil(Image.fromarray(plain, *args, **kwargs), lin)


def _imageops(name: str, canonical: str | None, params: Any = None) -> Any:
    real = getattr(ImageOps, name)

    def fn(image: Any, *args: Any, **kwargs: Any) -> Any:
        out = real(image, *args, **kwargs)
        lin = lineage_of(image)
        if lin is None or not isinstance(out, Image.Image):
            return wrap_pil(out, None) if isinstance(out, Image.Image) else out
        w, h = image.size
        if name == "mirror":
            return wrap_pil(out, lin.then("flip", {"direction": "horizontal"},
                                          flip_affine("horizontal", w, h)))
        if name == "flip":
            return wrap_pil(out, lin.then("flip", {"direction": "vertical"},
                                          flip_affine("vertical", w, h)))
        if out.size != image.size:
            return wrap_pil(out, None)
        p = params(args, kwargs) if callable(params) else {}
        return wrap_pil(out, lin.then(canonical or "code", p if canonical else {"fn": name}))

    fn.__name__ = name
    fn.__doc__ = real.__doc__
    return fn


def _cutoff(args: Any, kwargs: Any) -> dict[str, Any]:
    return {"cutoff": float(args[0] if args else kwargs.get("cutoff", 0))}


IMAGEOPS_CLAIMS: dict[str, tuple[str, Any]] = {
    "autocontrast": ("autocontrast", _cutoff), "equalize": ("equalize", None),
    "invert": ("invert", None), "grayscale": ("grayscale", None),
    "mirror": ("flip", None), "flip": ("flip", None)}
"""Pillow ``ImageOps`` functions whose result claims a lineage op, and how to read its params.

The keys are Pillow's names; the ops are lineage op names of the tool catalogue (the
``lineage_op`` facets, :func:`m3gym.tools.catalogue.lineage_ops`). This module runs inside the
worker and cannot import ``m3gym``, so the table is written out here; the tool-catalogue tests
check that every op it claims is one the env replays (an op it does not know stays ``code``)."""

IMAGEOPS_UNCLAIMED: tuple[str, ...] = (
    "posterize", "solarize", "colorize", "contain", "pad", "fit", "expand", "scale",
    "exif_transpose")
"""Other ``ImageOps`` functions, traced as ``code`` when they keep the image size."""


def traced_imageops() -> types.ModuleType:
    """Return a stand-in for ``PIL.ImageOps`` whose image functions keep lineages."""
    mod = types.ModuleType("PIL.ImageOps", ImageOps.__doc__)
    mod.__dict__.update({k: v for k, v in vars(ImageOps).items() if not k.startswith("__")})
    for name in (*IMAGEOPS_CLAIMS, *IMAGEOPS_UNCLAIMED):
        if hasattr(ImageOps, name):
            canonical, params = IMAGEOPS_CLAIMS.get(name, (None, None))
            setattr(mod, name, _imageops(name, canonical, params))
    return mod


def traced_image_module() -> types.ModuleType:
    """Return a stand-in for ``PIL.Image`` whose ``fromarray`` keeps lineages."""
    mod = types.ModuleType("PIL.Image", Image.__doc__)
    mod.__dict__.update({k: v for k, v in vars(Image).items() if not k.startswith("__")})
    mod.fromarray = fromarray
    return mod


# ---------------------------------------------------------------------------------- OpenCV
_THRESH_MODES = {cv2.THRESH_BINARY: "binary", cv2.THRESH_BINARY_INV: "binary_inv",
                 cv2.THRESH_TRUNC: "trunc", cv2.THRESH_TOZERO: "tozero"}
_CV_ROTATE = {cv2.ROTATE_90_COUNTERCLOCKWISE: 1, cv2.ROTATE_180: 2, cv2.ROTATE_90_CLOCKWISE: 3}


def _arg(args: Any, kwargs: Any, i: int, name: str, default: Any = None) -> Any:
    return args[i] if len(args) > i else kwargs.get(name, default)


def _cv_claim(name: str, src: np.ndarray, args: Any, kwargs: Any,
              out: np.ndarray) -> tuple[str, dict[str, Any], Affine | None | bool] | None:
    """Return ``(op, params, step)`` for a recognised cv2 call, or ``None``."""
    h, w = src.shape[:2]
    if name == "resize":
        oh, ow = out.shape[:2]
        return "resize", {"width": ow, "height": oh}, scale_affine(w, h, ow, oh)
    if name == "flip":
        code = int(_arg(args, kwargs, 1, "flipCode", 0))
        direction = "vertical" if code == 0 else "horizontal" if code > 0 else "both"
        return "flip", {"direction": direction}, flip_affine(direction, w, h)
    if name == "rotate":
        k = _CV_ROTATE.get(int(_arg(args, kwargs, 1, "rotateCode", -1)))
        if k is None:
            return None
        return "rotate", {"angle": 90 * k, "expand": True}, quarter_turn(k, w, h)
    if out.shape[:2] != (h, w):
        return None
    if name == "cvtColor" and out.ndim == 2:
        return "grayscale", {}, True
    if name == "equalizeHist":
        return "equalize", {}, True
    if name == "bitwise_not":
        return "invert", {}, True
    if name == "Canny":
        lo, hi = _arg(args, kwargs, 1, "threshold1"), _arg(args, kwargs, 2, "threshold2")
        if (lo, hi) == (100, 200):
            return "edge_detect", {"method": "canny"}, True
    if name == "GaussianBlur":
        ksize, sigma = _arg(args, kwargs, 1, "ksize"), _arg(args, kwargs, 2, "sigmaX", 0)
        if tuple(ksize or ()) == (0, 0) and sigma:
            return "blur", {"radius": float(sigma)}, True
    return "code", {"fn": f"cv2.{name}"}, True


def _cv_wrap(name: str, real: Any) -> Any:
    def fn(*args: Any, **kwargs: Any) -> Any:
        src = args[0] if args else kwargs.get("src")
        lin = lineage_of(src) if isinstance(src, np.ndarray) else None
        plain_args = [np.asarray(a) if isinstance(a, TracedArray) else a for a in args]
        plain_kwargs = {k: np.asarray(v) if isinstance(v, TracedArray) else v
                        for k, v in kwargs.items()}
        result = real(*plain_args, **plain_kwargs)
        if lin is None:
            return result
        if name == "threshold" and isinstance(result, tuple) and len(result) == 2:
            thresh_type = int(_arg(args, kwargs, 3, "type", 0))
            maxval = _arg(args, kwargs, 2, "maxval")
            mode = _THRESH_MODES.get(thresh_type)
            if mode and maxval == 255 and float(args[1]).is_integer():
                return result[0], traced(result[1], lin.then(
                    "threshold", {"value": int(args[1]), "mode": mode}))
            return result[0], traced(result[1], lin.then("code", {"fn": "cv2.threshold"}))
        if not isinstance(result, np.ndarray) or result.ndim < 2:
            return result
        claim = _cv_claim(name, np.asarray(src), args, kwargs, result)
        if claim is None:
            return traced(result, None)
        return traced(result, lin.then(*claim))

    fn.__name__ = name
    fn.__doc__ = getattr(real, "__doc__", None)
    return fn


class TracedCV2(types.ModuleType):
    """A stand-in for the ``cv2`` module whose functions keep lineages of traced arrays."""

    def __init__(self) -> None:
        super().__init__("cv2", cv2.__doc__)
        self._cache: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        real = getattr(cv2, name)
        if not callable(real) or isinstance(real, type) or name[:1].isupper() and name.isupper():
            return real
        if name not in self._cache:
            self._cache[name] = _cv_wrap(name, real)
        return self._cache[name]

    def __dir__(self) -> list[str]:
        return dir(cv2)
