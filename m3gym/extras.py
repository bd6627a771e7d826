"""Optional dependencies: import a library of an extra, or say which extra installs it.

The core (``import m3gym``, ``gym.make``, the tools and the scoring) needs only the
``dependencies`` of ``pyproject.toml``. Evaluation and reports (``m3gym eval``, ``m3gym report``,
the OpenAI agent) need the ``eval`` extra: ``openai``, ``matplotlib``, ``rich`` and ``jinja2``.
Those modules import them through :func:`require_extra`, only when they are used, so a missing
one gives :class:`MissingExtraError` naming the ``pip install`` command instead of a traceback.
"""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtraError(ImportError):
    """A library of an optional extra is not installed; the message names the extra to install."""


def extra_install_hint(extra: str) -> str:
    """Return the command that installs extra ``extra``: ``pip install "m3gym[eval]"``."""
    return f'pip install "m3gym[{extra}]"'


def require_extra(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` (``"matplotlib.pyplot"``), which extra ``extra`` installs, for ``purpose``.

    Raises :class:`MissingExtraError` (an ``ImportError``) naming the extra when the module's
    top-level package is not installed; any other import error propagates unchanged.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        if exc.name is None or exc.name.split(".")[0] != top:
            raise
        raise MissingExtraError(
            f"{purpose} needs {top}, which is not installed: it comes with the {extra!r} "
            f"extra, {extra_install_hint(extra)} (or pip install -e \".[{extra}]\" in a "
            "checkout)") from None
