"""The tool registry: names and aliases → :class:`ToolSpec`, schema export and execution."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from m3gym.state import ImageBudgetError
from m3gym.tools.base import ToolContext, ToolError, ToolSpec
from m3gym.trace import TraceCall

SchemaFormat = Literal["openai", "mcp"]


class ToolRegistry:
    """An ordered set of tools addressable by canonical name or alias."""

    def __init__(self, specs: Iterable[ToolSpec] = ()) -> None:
        self._specs: dict[str, ToolSpec] = {}
        self._aliases: dict[str, tuple[ToolSpec, Mapping[str, str], tuple[str, ...]]] = {}
        for spec in specs:
            self.add(spec)

    def add(self, spec: ToolSpec, before: str | None = None) -> None:
        """Register a tool (and its aliases); a duplicate name is a programming error.

        The tool goes last, or just before the tool ``before`` when that one is registered.
        """
        if spec.name in self._specs or spec.name in self._aliases:
            raise ValueError(f"tool {spec.name!r} registered twice")
        if before in self._specs:
            items = list(self._specs.items())
            at = [name for name, _ in items].index(before)
            self._specs = dict([*items[:at], (spec.name, spec), *items[at:]])
        else:
            self._specs[spec.name] = spec
        for alias in spec.aliases:
            self._aliases[alias.name] = (spec, dict(alias.rename), tuple(alias.drop))

    def remove(self, name: str) -> ToolSpec:
        """Unregister the tool ``name`` (a canonical name) and its aliases; return its spec."""
        if name not in self._specs:
            raise KeyError(f"tool {name!r} is not registered (canonical names: "
                           f"{', '.join(self.names)})")
        spec = self._specs.pop(name)
        for alias in spec.aliases:
            self._aliases.pop(alias.name, None)
        return spec

    def __contains__(self, name: object) -> bool:
        return name in self._specs or name in self._aliases

    def __getitem__(self, name: str) -> ToolSpec:
        return self._specs[name]

    @property
    def names(self) -> list[str]:
        """Canonical tool names in registration order."""
        return list(self._specs)

    def specs(self) -> list[ToolSpec]:
        """All tool specs in registration order."""
        return list(self._specs.values())

    def subset(self, names: Iterable[str]) -> ToolRegistry:
        """Return a registry with only the named tools (order of this registry kept)."""
        wanted = set(names)
        return ToolRegistry(s for s in self._specs.values() if s.name in wanted)

    def resolve(self, name: str, arguments: Mapping[str, Any]) -> tuple[ToolSpec, dict[str, Any]]:
        """Return the spec and canonical arguments for ``name`` (which may be an alias)."""
        if name in self._specs:
            return self._specs[name], dict(arguments)
        if name in self._aliases:
            spec, rename, drop = self._aliases[name]
            args = {rename.get(k, k): v for k, v in arguments.items() if k not in drop}
            return spec, args
        known = ", ".join(self.names)
        raise ToolError(f"unknown tool '{name}'; available tools: {known}")

    def schemas(self, fmt: SchemaFormat = "openai") -> list[dict[str, Any]]:
        """Return every tool's schema in the OpenAI or MCP format."""
        if fmt == "openai":
            return [s.openai_schema() for s in self._specs.values()]
        if fmt == "mcp":
            return [s.mcp_schema() for s in self._specs.values()]
        raise ValueError(f"unknown schema format {fmt!r}; use 'openai' or 'mcp'")

    def execute(
        self, ctx: ToolContext, name: str, arguments: Mapping[str, Any], step: int, call_id: str
    ) -> TraceCall:
        """Validate and run one call; never raises for bad input, returns a :class:`TraceCall`."""
        raw = dict(arguments) if isinstance(arguments, Mapping) else {}
        record = TraceCall(step=step, call_id=call_id, name=name, requested_name=name,
                            arguments=raw, ok=False)
        try:
            if not isinstance(arguments, Mapping):
                raise ToolError(f"{name}: arguments must be a JSON object, got "
                                f"{type(arguments).__name__}")
            spec, canonical = self.resolve(name, arguments)
            record.name = spec.name
            if spec.kind == "answer":
                raise ToolError("answer must be given on its own, not executed as a tool call")
            args = spec.validate(canonical)
            record.arguments = args.model_dump()
            index = getattr(args, "image_index", None)
            record.input_index = index
            out = spec.fn(ctx, args)
            if out.image is not None:
                label = getattr(args, "label", None)
                if out.parent is None:
                    entry = ctx.state.add_root(out.image, op=spec.name, args=record.arguments,
                                               call_id=call_id, label=label)
                else:
                    entry = ctx.state.add_derived(
                        out.parent, out.image, spec.name, record.arguments, out.step_affine,
                        call_id=call_id, label=label)
                record.output_index = entry.index
                h, w = entry.array.shape[:2]
                record.result_text = f"Image {entry.index} created ({w}x{h}). {out.text}".strip()
            else:
                record.result_text = out.text
            record.payload = out.payload
            record.ok = True
        except (ToolError, ImageBudgetError) as exc:
            record.error = str(exc)
            record.result_text = f"Error: {exc}"
        return record
