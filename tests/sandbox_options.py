"""Which code-mode isolations the tests run under on this machine.

Code mode fails closed: without a working bubblewrap, ``isolation="auto"`` refuses. The functional
code-mode tests then opt out explicitly (``CODE_SANDBOX``: ``isolation="none"``, recorded and
warned about like any unisolated run); the escape suite runs under every isolation available
(``ISOLATIONS``) and asserts the refusal where bubblewrap is missing.
"""

from __future__ import annotations

from typing import Any

from m3gym.sandbox import bwrap_works

BWRAP = bwrap_works()
"""Whether bubblewrap is installed and can create namespaces here."""

ISOLATIONS = ["none"] + (["bwrap"] if BWRAP else [])
"""The isolations the escape suite runs under (``none`` = the explicit opt-out)."""

CODE_SANDBOX: dict[str, Any] = {} if BWRAP else {"isolation": "none"}
"""Sandbox options of the functional code-mode tests: the default where bubblewrap works."""
