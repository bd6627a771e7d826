"""Gymnasium spaces for tool-call actions, free text and variable-size images."""

from __future__ import annotations

import string
from collections.abc import Sequence as SequenceABC
from typing import Any

import numpy as np
from gymnasium import spaces

from m3gym.parsing import parse_action
from m3gym.tools.base import ToolError, ToolSpec
from m3gym.tools.registry import ToolRegistry

TEXT_CHARSET = string.ascii_letters + string.digits + string.punctuation + " \n\t"
_WORDS = ("total", "price", "logo", "team", "founded", "code", "label", "city", "year", "red",
          "museum", "river", "company", "sign", "report")


class PromptText(spaces.Text):
    """A text space that accepts any ``str`` up to ``max_length`` characters.

    ``spaces.Text.contains`` rejects characters outside its charset; prompts and tool results echo
    arbitrary user text, so only the length is checked. ``sample()`` draws from printable ASCII.
    """

    def __init__(self, max_length: int = 200_000, seed: int | None = None) -> None:
        super().__init__(max_length=max_length, min_length=0, charset=TEXT_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        """Return whether ``x`` is a string of at most ``max_length`` characters."""
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"PromptText(max_length={self.max_length})"


class ImageSpace(spaces.Space[np.ndarray]):
    """RGB ``uint8`` images ``(H, W, 3)`` of any size whose longest side is at most ``max_side``."""

    def __init__(self, max_side: int = 768, seed: int | None = None) -> None:
        super().__init__(shape=None, dtype=np.uint8, seed=seed)
        self.max_side = int(max_side)

    @property
    def is_np_flattenable(self) -> bool:
        """Variable-size images cannot be flattened."""
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        """Return a random image with sides in ``[1, max_side]``."""
        h, w = (int(v) for v in self.np_random.integers(1, self.max_side + 1, size=2))
        return self.np_random.integers(0, 256, size=(h, w, 3), dtype=np.uint8)

    def contains(self, x: Any) -> bool:
        """Return whether ``x`` is a ``uint8`` ``(H, W, 3)`` array within the size bound."""
        return (isinstance(x, np.ndarray) and x.dtype == np.uint8 and x.ndim == 3
                and x.shape[2] == 3 and 0 < max(x.shape[:2]) <= self.max_side
                and min(x.shape[:2]) > 0)

    def __repr__(self) -> str:
        return f"ImageSpace(max_side={self.max_side})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ImageSpace) and other.max_side == self.max_side


class ToolCallSpace(spaces.Space[Any]):
    """The action space: one tool call or a list of parallel calls, in any accepted form.

    ``contains`` parses the action and validates every call against its tool's schema (state-free:
    an ``image_index`` beyond the current images is schema-valid; the env reports it).
    ``sample()`` returns a random schema-valid call as a dict ``{"name", "arguments"}``, using
    image indices below :attr:`num_images` (the env keeps it up to date).
    """

    def __init__(self, registry: ToolRegistry, seed: int | None = None,
                 sample_tools: SequenceABC[str] | None = None) -> None:
        super().__init__(shape=None, dtype=None, seed=seed)
        self.registry = registry
        self.num_images = 1
        names = sample_tools if sample_tools is not None else [
            s.name for s in registry.specs() if s.kind != "answer"]
        self.sample_tools = list(names)

    @property
    def is_np_flattenable(self) -> bool:
        """Tool calls cannot be flattened."""
        return False

    def contains(self, x: Any) -> bool:
        """Return whether ``x`` parses into schema-valid calls (or one answer)."""
        parsed = parse_action(x)
        if parsed.errors:
            return False
        for call in parsed.calls:
            try:
                spec, args = self.registry.resolve(call.name, call.arguments)
                spec.validate(args)
            except ToolError:
                return False
        return True

    def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
        """Return a random schema-valid tool call ``{"name", "arguments"}``."""
        name = self.sample_tools[int(self.np_random.integers(len(self.sample_tools)))]
        spec = self.registry[name]
        for _ in range(8):
            args = sample_arguments(spec, self.np_random, self.num_images)
            try:
                return {"name": name, "arguments": spec.validate(args).model_dump(
                    exclude_none=True)}
            except ToolError:
                continue
        return {"name": "grayscale", "arguments": {"image_index": 0}}

    def __repr__(self) -> str:
        return f"ToolCallSpace({len(self.registry.names)} tools)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolCallSpace) and other.registry.names == self.registry.names


def sample_arguments(spec: ToolSpec, rng: np.random.Generator, num_images: int) -> dict[str, Any]:
    """Draw arguments for ``spec`` from its JSON schema.

    Required arguments always, optional ones half of the time; ``image_index`` stays below
    ``num_images`` and boxes are well ordered.
    """
    schema = spec.parameters_schema()
    required = set(schema.get("required", []))
    args: dict[str, Any] = {}
    for key, prop in schema.get("properties", {}).items():
        if key not in required and (key == "label" or rng.random() < 0.5):
            continue
        args[key] = _sample_value(key, prop, rng, num_images)
    return args


def _sample_value(key: str, prop: dict[str, Any], rng: np.random.Generator,
                  num_images: int) -> Any:
    if key == "image_index":
        return int(rng.integers(max(1, num_images)))
    if key == "bbox_2d":
        xs = np.sort(rng.choice(1001, size=2, replace=False))
        ys = np.sort(rng.choice(1001, size=2, replace=False))
        return [int(xs[0]), int(ys[0]), int(xs[1]), int(ys[1])]
    if "anyOf" in prop:
        options = [p for p in prop["anyOf"] if p.get("type") != "null"]
        return _sample_value(key, options[0], rng, num_images) if options else None
    if "enum" in prop:
        return prop["enum"][int(rng.integers(len(prop["enum"])))]
    kind = prop.get("type")
    lo = prop.get("minimum", prop.get("exclusiveMinimum", 0))
    hi = prop.get("maximum", prop.get("exclusiveMaximum", lo + 10))
    if kind == "integer":
        return int(rng.integers(int(lo), int(hi) + 1))
    if kind == "number":
        return float(np.round(rng.uniform(float(lo), float(hi)), 3))
    if kind == "boolean":
        return bool(rng.random() < 0.5)
    if kind == "string":
        n = int(rng.integers(1, 4))
        return " ".join(_WORDS[int(i)] for i in rng.integers(len(_WORDS), size=n))
    if kind == "array":
        item = prop.get("items", {"type": "number"})
        n = int(prop.get("minItems", 1))
        return [_sample_value(key + "[]", item, rng, num_images) for _ in range(n)]
    return None
