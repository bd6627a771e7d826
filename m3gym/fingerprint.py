"""What produced an artefact: the code and the library builds that its bytes depend on.

Two things decide the bytes m3gym draws: its own code and the libraries that draw pixels
(NumPy, OpenCV, Pillow with the FreeType, Raqm, libjpeg and zlib it was built with) or write text
(Faker, fontTools). This module names both, so that

* a cached artefact (the world's logo store) is keyed on *all* of it and can never go stale:
  :func:`code_fingerprint` hashes the source of every m3gym module that the artefact's builder
  imports, found by following its import statements (:func:`import_closure`), not by a
  hand-kept folder list;
* every evaluation run records what it ran on (:func:`library_versions`), and a frozen task
  whose hash moved can be explained (:func:`pixel_library_versions`).

The closure is static (read from the source with :mod:`ast`, imports inside functions included),
so the key does not depend on what else a process happened to import first. It follows the
import statements themselves: importing ``a.b.c`` runs ``a/__init__.py`` and ``a/b/__init__.py``
too, but those count only where the code imports them by name (package initialisation draws no
pixels).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import platform
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

PACKAGE = "m3gym"

def _module_path(name: str) -> Path | None:
    """Return the source file of m3gym module ``name`` (``None`` when it is not one)."""
    if name != PACKAGE and not name.startswith(PACKAGE + "."):
        return None
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


def _imported_names(path: Path, module: str) -> set[str]:
    """Return every module name an import statement in ``path`` may refer to."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)  # submodules
    return names


def import_closure(modules: Iterable[str]) -> tuple[str, ...]:
    """Return the m3gym modules that ``modules`` import, directly or not (themselves included).

    Sorted by name. Names that are not m3gym modules (third-party libraries, attributes named in
    a ``from`` import) are left out.
    """
    seen: set[str] = set()
    todo = [m for m in modules if _module_path(m) is not None]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _module_path(name)
        if path is None:
            continue
        todo.extend(m for m in _imported_names(path, name)
                    if m not in seen and _module_path(m) is not None)
    return tuple(sorted(seen))


def code_fingerprint(modules: Iterable[str]) -> str:
    """Return a SHA-256 over the names and source bytes of :func:`import_closure` of ``modules``."""
    h = hashlib.sha256()
    for name in import_closure(modules):
        path = _module_path(name)
        assert path is not None
        h.update(name.encode() + b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _distribution_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _opencv_codecs() -> dict[str, str]:
    """Return the JPEG, PNG and zlib builds OpenCV reports (its wheels bundle their own)."""
    import cv2

    info = cv2.getBuildInformation()
    out = {}
    for key, label in (("JPEG", "opencv_jpeg"), ("PNG", "opencv_png"), ("ZLib", "opencv_zlib")):
        m = re.search(rf"^\s*{key}:\s*(.+)$", info, re.MULTILINE)
        if m:
            out[label] = m.group(1).strip()
    return out


@lru_cache(maxsize=1)
def pixel_library_versions() -> dict[str, str | None]:
    """Return the version of every library build that can change the bytes of a drawn task.

    NumPy, OpenCV (and the codecs it was built with), Pillow with its FreeType, Raqm, libjpeg and
    zlib, Faker (the text drawn) and fontTools (which glyphs a face covers). ``None`` marks a
    library or feature that is absent.
    """
    import cv2
    import numpy as np
    import PIL
    from PIL import features

    out: dict[str, str | None] = {"numpy": np.__version__, "opencv": cv2.__version__}
    out.update(_opencv_codecs())
    out["pillow"] = PIL.__version__
    for feature, label in (("freetype2", "freetype"), ("raqm", "raqm"), ("jpg", "libjpeg"),
                           ("zlib", "zlib")):
        try:
            out[label] = features.version(feature)
        except (ValueError, KeyError):
            out[label] = None
    out["faker"] = _distribution_version("faker")
    out["fonttools"] = _distribution_version("fonttools")
    return out


def library_versions() -> dict[str, str | None]:
    """Return what a run records it ran on: m3gym, Python, Gymnasium and the pixel libraries."""
    return {"m3gym": _distribution_version(PACKAGE), "python": platform.python_version(),
            "gymnasium": _distribution_version("gymnasium"), **pixel_library_versions()}


def artefact_key(modules: Iterable[str]) -> str:
    """Return a short key of an artefact built by ``modules``: their code and the pixel libraries.

    Any change to the source of a module in their :func:`import_closure`, or to any version in
    :func:`pixel_library_versions`, gives a new key.
    """
    h = hashlib.sha256(code_fingerprint(modules).encode())
    for name, version in sorted(pixel_library_versions().items()):
        h.update(f"{name}={version}\n".encode())
    return h.hexdigest()[:16]
