"""One definition per tool: a pydantic argument model plus a function.

From that single :class:`ToolSpec` come argument validation with precise messages, the OpenAI
function schema and the MCP tool schema. Tools never raise for bad input: they raise
:class:`ToolError`, which the registry turns into a failed :class:`~m3gym.trace.TraceCall`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from m3gym.state import ImageEntry, ImageState

ToolKind = Literal["visual", "retrieval", "answer"]
FrameBehaviour = Literal["affine", "preserving", "new_root", "none"]
"""How a tool's output relates to its input's geometry.

``affine``: a new image whose pixels map to the input's by an affine (crop, rotate, flip);
``preserving``: a new image with the same normalized frame (photometric ops, resize);
``new_root``: a new image with no parent (``download_image``); ``none``: no image.
"""
ContentSimilarity = Literal["box", "upright_angle", "exact", "image", "query", "url"]
"""How a content argument is compared with the reference's (see :mod:`m3gym.scoring.alignment`).

``box``: the crop box in the root frame — it must cover the evidence the reference crop covers
and magnify it, or overlap the reference box (IoU); ``upright_angle``: the same upright result
(equal modulo 360 within the upright tolerance); ``exact``: equal (enums); ``image``: the same
input image, or the output of the call aligned to the reference producer; ``query``: token F1
with the reference query or the evidence text; ``url``: equal after normalization.
"""


class ToolError(Exception):
    """A call that is well-formed but cannot run (bad index, budget, unknown url, ...)."""


class ToolArgs(BaseModel):
    """Base argument model: unknown arguments are refused, NaN/inf are refused."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ImageArgs(ToolArgs):
    """Arguments shared by every image tool."""

    image_index: int = Field(ge=0, description="Index of the image to operate on (0 = original).")
    label: str | None = Field(
        default=None, max_length=200, description="Optional note to attach to the new image."
    )


@dataclass
class ToolOutput:
    """What a tool function returns on success.

    Attributes:
        text: human-readable result shown to the agent.
        image: a new image to append (visual tools, ``download_image``), or ``None``.
        step_affine: for a new image, the 2x3 map from the parent's pixels to the new image's;
            ``None`` for photometric ops.
        parent: the image the new image derives from (``None`` makes it a new root).
        payload: structured result (search hits, page url, ...) logged in the trace.
    """

    text: str
    image: np.ndarray | None = None
    step_affine: np.ndarray | None = None
    parent: int | None = None
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolContext:
    """Everything a tool may read or change during one call.

    ``visible_images`` is the number of images that existed when the current step began: a call
    may not use an image produced by a parallel call of the same step.
    """

    state: ImageState
    visible_images: int
    world: Any = None
    downloads: int = 0
    max_downloads: int = 5

    def image(self, index: int) -> ImageEntry:
        """Return the image ``index`` or raise a precise :class:`ToolError`."""
        if index >= len(self.state):
            raise ToolError(
                f"image_index {index} does not exist; valid indices are 0..{len(self.state) - 1}"
            )
        if index >= self.visible_images:
            raise ToolError(
                f"image_index {index} is produced in this same step; parallel calls may only use "
                f"images 0..{self.visible_images - 1} that existed before the step"
            )
        return self.state[index]


ToolFn = Callable[[ToolContext, Any], ToolOutput]


@dataclass(frozen=True)
class ToolAlias:
    """Another name a harness uses for a tool, with its argument renames (alias → canonical)."""

    name: str
    rename: Mapping[str, str] = field(default_factory=dict)
    drop: tuple[str, ...] = ()


@dataclass(frozen=True)
class Discretization:
    """How the discrete wrapper (:mod:`m3gym.wrappers.discrete`) expresses a tool.

    A tool whose :attr:`ToolSpec.discrete` is ``None`` is not offered by the discrete wrapper
    (asking for it raises an error that says how to add it).

    Attributes:
        options: the argument sets the ``param`` bin selects (bin ``b`` picks option
            ``b % len(options)``); ``()`` for a tool without parameters (the bin is ignored).
            Their number must divide the wrapper's 6 bins (1, 2, 3 or 6 options).
        default_slot: the tool's position in the wrapper's default tool subset (``answer`` is
            0), or ``None`` for a tool the user opts into with ``tools=``.
    """

    options: tuple[Mapping[str, Any], ...] = ()
    default_slot: int | None = None


@dataclass(frozen=True)
class ToolSpec:
    """A tool: its name, description, argument model, function, kind and scoring facets.

    The facets are declared once, here, and every table scoring needs is derived from them
    (:mod:`m3gym.tools.catalogue`):

    Attributes:
        frame: how the output's geometry relates to the input's (:data:`FrameBehaviour`).
        equivalence: the class of tools that do the same job for a checkpoint (``"contrast"``,
            ``"upright"``), or ``None``.
        content: the arguments that carry the call's content, each with its typed similarity
            (:data:`ContentSimilarity`). A call whose content differs from the reference call's
            does not match it in alignment, whatever its other arguments.

    Code mode and the discrete wrapper read these facets (every built-in table is derived from
    them, see :mod:`m3gym.tools.catalogue`):

    Attributes:
        code_signature: how the code-mode prompt shows the tool's function (e.g.
            ``"blur(i, radius=2)"``); ``None`` derives it from the argument model.
        code_names: other function or method names (numpy, OpenCV, Pillow) whose call in a
            cell amounts to this tool (the static pass, :mod:`m3gym.sandbox.static`); the
            tool's own name always counts.
        code_attributes: names used without a call (filter constants such as ``SHARPEN``)
            that amount to this tool.
        lineage_op: the op name the worker's run-time tracing (:mod:`m3gym.sandbox.traced`)
            records for this tool, which the env may replay as a call of it (``crop_px`` for
            ``crop``); ``None`` when the worker does not trace it (the tool's own function,
            called from code, is still recorded as a call).
        discrete: how the discrete wrapper expresses it (:class:`Discretization`), or ``None``
            when it cannot (free-text arguments, or no discretization declared).
    """

    name: str
    description: str
    args_model: type[ToolArgs]
    fn: ToolFn
    kind: ToolKind
    aliases: tuple[ToolAlias, ...] = ()
    frame: FrameBehaviour = "none"
    equivalence: str | None = None
    content: Mapping[str, ContentSimilarity] = field(default_factory=dict)
    code_signature: str | None = None
    code_names: tuple[str, ...] = ()
    code_attributes: tuple[str, ...] = ()
    lineage_op: str | None = None
    discrete: Discretization | None = None

    def validate(self, arguments: Mapping[str, Any]) -> ToolArgs:
        """Return validated arguments or raise :class:`ToolError` naming every problem."""
        try:
            return self.args_model.model_validate(dict(arguments))
        except ValidationError as exc:
            raise ToolError(f"{self.name}: {format_validation_error(exc)}") from None

    def parameters_schema(self) -> dict[str, Any]:
        """Return the JSON schema of the arguments, self-contained (no ``$defs``)."""
        return inline_schema(self.args_model.model_json_schema())

    def openai_schema(self) -> dict[str, Any]:
        """Return the OpenAI ``tools`` entry (function calling) for this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters_schema(),
            },
        }

    def mcp_schema(self) -> dict[str, Any]:
        """Return the MCP ``tools/list`` entry for this tool."""
        return {"name": self.name, "description": self.description,
                "inputSchema": self.parameters_schema()}


def format_validation_error(exc: ValidationError) -> str:
    """Turn a pydantic error into one precise, agent-readable line per problem."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"])
        kind = err["type"]
        if not loc:
            parts.append(str(err["msg"]).removeprefix("Value error, "))
        elif kind == "extra_forbidden":
            parts.append(f"unknown argument '{loc}'")
        elif kind == "missing":
            parts.append(f"missing required argument '{loc}'")
        else:
            value = err.get("input")
            shown = repr(value)
            if len(shown) > 60:
                shown = shown[:57] + "..."
            parts.append(f"argument '{loc}' = {shown}: {err['msg']}")
    return "; ".join(parts)


BOUND_KEYWORDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
"""JSON-schema bounds: a whole number is written as an integer (``16``, never ``16.0``)."""


def inline_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Resolve ``$ref`` into ``$defs`` and drop pydantic's ``title`` keys for compact schemas.

    Whole-number bounds (:data:`BOUND_KEYWORDS`) are written as integers: pydantic 2.5 writes
    ``le=16`` on a float field as ``16.0`` where later releases keep ``16``, and the schemas an
    agent sees must not depend on the pydantic release.
    """
    schema = copy.deepcopy(schema)
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, list):
            return [resolve(v) for v in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return resolve(defs[node["$ref"].split("/")[-1]])
        out = {}
        for key, value in node.items():
            if key == "title":  # pydantic's; an argument named "title" sits under "properties"
                continue
            if key == "properties":
                out[key] = {name: resolve(sub) for name, sub in value.items()}
            elif key in BOUND_KEYWORDS and isinstance(value, float) and value.is_integer():
                out[key] = int(value)
            else:
                out[key] = resolve(value)
        return out

    out = resolve(schema)
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    return out

