"""One env's code runner: runs ``run_python`` cells and records what they did.

:class:`CodeSession` owns the env's :class:`~m3gym.sandbox.pool.WorkerPool`. Per episode it holds
one worker (variables persist between the episode's cells). ``run`` sends a cell and serves the
worker's requests:

* ``image`` — the pixels of a state image (sent once per episode; the worker caches them);
* ``call`` — an atomic tool called from code: executed by the env's registry exactly like a
  function call (same validation, provenance, call record), and counted against the episode's
  tool-call budget;
* ``save`` — an array the code registers: recorded by :func:`~m3gym.sandbox.canonical.
  record_saved_image` as canonical calls (verified replay), a ``code`` op with verified geometry,
  or a ``code`` op with unknown provenance. A save that adds an image also costs one call.

The calls go into the env's trace in the step of the ``run_python`` call; a cell that fails
(exception, timeout, limit) adds one failed ``run_python`` record with the precise error.
"""

from __future__ import annotations

import math
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from m3gym.sandbox.canonical import record_saved_image
from m3gym.sandbox.launcher import (
    Isolation,
    SandboxLimits,
    UnisolatedCodeWarning,
    resolve_isolation,
)
from m3gym.sandbox.pool import SandboxError, SandboxWorker, WorkerPool
from m3gym.sandbox.static import static_ops
from m3gym.tools.base import ToolContext
from m3gym.tools.registry import ToolRegistry
from m3gym.trace import TraceCall, json_copy

MAX_CODE_CHARS = 20000
"""Longest cell accepted."""

UNISOLATED_TERMS = ("progress", "process", "answer", "m3")
"""Reward terms that read the checkpoints or the answer: untrusted when code ran unisolated."""


def tool_parameters(registry: ToolRegistry) -> dict[str, list[str]]:
    """Return each code-callable tool's positional parameter order.

    ``image_index`` comes first and ``label`` last, as in ``crop(0, [x1, y1, x2, y2], 2.0)``.
    """
    out: dict[str, list[str]] = {}
    for spec in registry.specs():
        if spec.kind not in ("visual", "retrieval"):
            continue
        fields = list(spec.args_model.model_fields)
        first = [f for f in fields if f == "image_index"]
        last = [f for f in fields if f == "label"]
        out[spec.name] = first + [f for f in fields if f not in ("image_index", "label")] + last
    return out


@dataclass
class CellOutcome:
    """What one ``run_python`` call did: its calls, the agent's text, budget use."""

    calls: list[TraceCall] = field(default_factory=list)
    text: str = ""
    ok: bool = True
    error: str | None = None
    calls_used: int = 0
    over_budget: bool = False
    static_ops: list[str] = field(default_factory=list)


class CodeSession:
    """Runs an env's code cells in sandbox workers (see the module docstring)."""

    def __init__(self, tools: ToolRegistry, limits: SandboxLimits | None = None,
                 isolation: Isolation = "auto", pool_size: int = 1) -> None:
        self.tools = tools
        self.limits = limits or SandboxLimits()
        self.isolation = resolve_isolation(isolation)
        """``"bwrap"`` or ``"none"`` (the explicit opt-out); ``auto`` without bubblewrap raised."""
        if self.isolation == "none":
            warnings.warn("code mode runs agent code WITHOUT an isolation layer "
                          "(isolation='none'): every episode is recorded as unisolated and its "
                          "checkpoint and answer rewards as untrusted", UnisolatedCodeWarning,
                          stacklevel=3)
        self.pool = WorkerPool(tool_parameters(tools), self.limits, self.isolation, pool_size)
        self._worker: SandboxWorker | None = None
        # workers die with the session even when the env is never closed
        self._finalizer = weakref.finalize(self, self.pool.close)

    def new_episode(self) -> None:
        """Reset the held worker for a new episode (its variables and files are dropped)."""
        if self._worker is not None:
            self.pool.release(self._worker)
            self._worker = None

    def close(self) -> None:
        """Kill every worker."""
        self._worker = None
        self.pool.close()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_worker"] = None
        state.pop("_finalizer", None)
        state["pool"] = (self.pool.tools, self.pool.limits, self.pool.isolation, self.pool.size)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.pool = WorkerPool(*state["pool"])
        self._finalizer = weakref.finalize(self, self.pool.close)

    def run(self, code: Any, ctx: ToolContext, step: int, call_id: str,
            budget_left: int) -> CellOutcome:
        """Run one cell; never raises for bad code (see :class:`CellOutcome`)."""
        out = CellOutcome()
        if not isinstance(code, str) or not code.strip():
            return self._failed(out, step, call_id, "run_python needs 'code': a non-empty string "
                                "of Python")
        if len(code) > MAX_CODE_CHARS:
            return self._failed(out, step, call_id, f"code of {len(code)} characters exceeds "
                                f"{MAX_CODE_CHARS}")
        out.static_ops = static_ops(code)
        counter = iter(range(1, 10**6))

        def next_id() -> str:
            return f"{call_id}.{next(counter)}"

        handler = self._handler(ctx, step, next_id, budget_left, out)
        visible = ctx.visible_images  # a cell is sequential inside; its step stays parallel
        try:
            if self._worker is None or not self._worker.alive:
                self._worker = self.pool.acquire()
            cell = self._worker.run(code, len(ctx.state), handler)
        except SandboxError as exc:
            self._worker = None
            note = " (variables from earlier cells are lost)"
            return self._failed(out, step, call_id, f"{exc}{note}")
        finally:
            ctx.visible_images = visible
        lines = [f"[{r.call_id}] {r.name}: {r.result_text}" for r in out.calls]
        if cell.stdout:
            lines.append("stdout:\n" + cell.stdout.rstrip("\n"))
        if cell.dropped_chars:
            lines.append(f"({cell.dropped_chars} more characters of output dropped)")
        out.text = "\n".join(lines) if lines else "(no output)"
        if not cell.ok:
            error = cell.error or "the code failed"
            if error.startswith("RemoteError") and out.calls and not out.calls[-1].ok:
                # the failed tool call is already recorded (and counted) once
                out.ok, out.error = False, error
                out.text += f"\nError: {error}"
                return out
            return self._failed(out, step, call_id, error)
        return out

    def _failed(self, out: CellOutcome, step: int, call_id: str, error: str) -> CellOutcome:
        out.ok, out.error = False, error
        out.calls.append(TraceCall(step=step, call_id=call_id, name="run_python",
                                      requested_name="run_python", arguments={}, ok=False,
                                      error=error, result_text=f"Error: {error}"))
        out.text = (out.text + "\n" if out.text else "") + f"Error: {error}"
        return out

    def _handler(self, ctx: ToolContext, step: int, next_id: Callable[[], str],
                 budget_left: int, out: CellOutcome) -> Callable[..., Any]:
        def charge() -> str | None:
            if out.calls_used >= budget_left:
                out.over_budget = True
                return "tool-call budget exhausted: no more tool calls or saves in this episode"
            out.calls_used += 1
            return None

        def handle(msg: dict[str, Any], arrays: list[np.ndarray]
                   ) -> tuple[dict[str, Any], tuple[np.ndarray, ...]]:
            kind = msg.get("type")
            if kind == "image":
                index = msg.get("index")
                if not isinstance(index, int) or not 0 <= index < len(ctx.state):
                    return {"ok": False, "error": f"image {index!r} does not exist"}, ()
                return {"ok": True}, (ctx.state[index].array,)
            if kind == "call":
                return self._call(ctx, step, next_id, msg, out, charge)
            if kind == "save":
                if len(arrays) != 1:
                    raise ValueError("save without exactly one array")
                label = msg.get("label")
                if label is not None and (not isinstance(label, str) or len(label) > 200):
                    return {"ok": False, "error": "label must be a string of at most 200 "
                            "characters"}, ()
                refused = charge()
                if refused:
                    return {"ok": False, "error": refused}, ()
                saved, index = record_saved_image(self.tools, ctx, arrays[0],
                                                    msg.get("lineage"), label, step, next_id,
                                                    out.static_ops)
                out.calls.extend(saved)
                if not saved:
                    out.calls_used -= 1  # the image already existed: nothing was added
                if index is None:
                    error = saved[-1].error if saved else "not recorded"
                    return {"ok": False, "error": error}, ()
                return {"ok": True, "index": index}, ()
            raise ValueError(f"unknown request {kind!r}")

        return handle

    def _call(self, ctx: ToolContext, step: int, next_id: Callable[[], str],
              msg: dict[str, Any], out: CellOutcome, charge: Callable[[], str | None]
              ) -> tuple[dict[str, Any], tuple[np.ndarray, ...]]:
        name, arguments = msg.get("name"), msg.get("arguments")
        if not isinstance(name, str) or name not in self.tools or \
                self.tools.resolve(name, {})[0].kind not in ("visual", "retrieval"):
            return {"ok": False, "error": f"{name!r} is not a tool callable from code"}, ()
        if not isinstance(arguments, dict):
            return {"ok": False, "error": f"{name}: arguments must be keyword arguments"}, ()
        refused = charge()
        if refused:
            return {"ok": False, "error": refused}, ()
        ctx.visible_images = len(ctx.state)
        record = self.tools.execute(ctx, name, arguments, step, next_id())
        record.requested_name = name
        out.calls.append(record)
        if not record.ok:
            return {"ok": False, "error": record.error}, ()
        if record.output_index is not None:
            return ({"ok": True, "index": record.output_index, "text": record.result_text},
                    (ctx.state[record.output_index].array,))
        return {"ok": True, "text": record.result_text,
                "value": _json_safe(json_copy(record.payload)) or record.result_text}, ()


def _json_safe(value: Any) -> Any:
    """Return ``value`` with non-JSON leaves turned into strings (payloads go to the worker)."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
