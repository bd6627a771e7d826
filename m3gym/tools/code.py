"""``run_python``: code mode's one action, and the tool sets of each interface.

``gym.make(id, interface=...)`` picks the tools an agent sees:

* ``"atomic"`` (default): the atomic tools and ``answer``, as before;
* ``"code"``: ``run_python`` and ``answer`` only — the atomic tools are functions inside the code
  (Agentic-MME's "Gen" mode);
* ``"both"``: the atomic tools, ``run_python`` and ``answer``.

The env runs ``run_python`` itself (in its sandbox, :mod:`m3gym.sandbox.session`); executing it
through a bare registry fails with a message saying so.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from m3gym.tools.base import ToolArgs, ToolContext, ToolError, ToolOutput, ToolSpec
from m3gym.tools.registry import ToolRegistry

Interface = Literal["atomic", "code", "both"]
INTERFACES: tuple[str, ...] = ("atomic", "code", "both")

CODE_DESCRIPTION = (
    "Run Python code on the episode's images in a sandbox (no network, no files outside a private "
    "working directory; limits on time and memory). The code sees images[i] (read-only numpy "
    "uint8 arrays, RGB or grayscale, full resolution), np, cv2, Image/ImageOps/ImageFilter/"
    "ImageEnhance (Pillow) and math; the atomic tools are functions (crop(image_index, bbox_2d, "
    "zoom_scale), rotate(image_index, angle, expand), web_search(query, top_k), ...) that return "
    "the new image as an array. save(image, label=None) adds an array or PIL image to the "
    "episode's images and returns its index; only saved images and tool results are shown to "
    "you. print() output is returned (truncated). Variables persist between calls of an episode."
)


class RunPythonArgs(ToolArgs):
    """Arguments of ``run_python``."""

    code: str = Field(min_length=1, max_length=20000, description="Python source to run.")


def _not_here(ctx: ToolContext, args: RunPythonArgs) -> ToolOutput:
    raise ToolError("run_python runs only in an env made with interface='code' or 'both'")


RUN_PYTHON_TOOL = ToolSpec(name="run_python", description=CODE_DESCRIPTION,
                           args_model=RunPythonArgs, fn=_not_here, kind="visual")
"""The ``run_python`` tool (its function refuses: the env runs cells in its sandbox)."""


def interface_registry(base: ToolRegistry, interface: str) -> ToolRegistry:
    """Return the tools an agent sees under ``interface`` given the env's atomic ``base``."""
    if interface not in INTERFACES:
        raise ValueError(f"interface must be one of {', '.join(INTERFACES)}, got {interface!r}")
    if interface == "atomic":
        return base
    specs = [s for s in base.specs() if s.kind != "answer"] if interface == "both" else []
    answer = [s for s in base.specs() if s.kind == "answer"]
    return ToolRegistry([*specs, RUN_PYTHON_TOOL, *answer])
