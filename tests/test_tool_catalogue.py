"""One tool catalogue: every tool list derives from it, and a registered tool appears everywhere.

The pins below were taken before the hand-kept lists were replaced by catalogue facets: the 18
built-in tools' schemas, prompts, discrete action tables and code-mode tables must stay
byte-identical (the SB3 tests and the frozen evaluations depend on them).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from m3gym.agents.prompts import system_prompt
from m3gym.sandbox.canonical import CANONICAL_OPS
from m3gym.sandbox.static import ATTRIBUTE_OPS, CALL_OPS
from m3gym.tools import default_registry
from m3gym.tools.code import interface_registry
from m3gym.wrappers.discrete import DEFAULT_TOOLS, SUPPORTED_TOOLS, TOOL_OPTIONS, action_table
from m3gym.wrappers.flat import flat_action_table


def _digest(obj: Any) -> str:
    text = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ------------------------------------------------------------------ pins of the built-in tools
def test_schemas_of_the_built_in_tools_are_pinned() -> None:
    reg = default_registry()
    assert _digest(reg.schemas("openai")) == "b94402f1df36ea9e"
    assert _digest(reg.schemas("mcp")) == "14d93777dc1cd0b1"
    pins = {"atomic": "b94402f1df36ea9e", "code": "642d60850f65d75f", "both": "208fdc4b34db38fa"}
    for interface, pin in pins.items():
        assert _digest(interface_registry(reg, interface).schemas("openai")) == pin, interface


def test_system_prompts_are_pinned() -> None:
    reg = default_registry()
    pins = {("atomic", "native"): "a0d9231a8bc8a405", ("atomic", "text"): "60324e7aacb365d3",
            ("code", "native"): "fdeda5c30dd2a59b", ("code", "text"): "cd221c3cc281c253",
            ("both", "native"): "fdeda5c30dd2a59b", ("both", "text"): "c7d2d39f4887ee93"}
    for (interface, mode), pin in pins.items():
        schemas = interface_registry(reg, interface).schemas("openai")
        assert _digest(system_prompt(20, 10, mode, schemas)) == pin, (interface, mode)


def test_discrete_tables_are_pinned() -> None:
    assert DEFAULT_TOOLS == ("answer", "crop", "rotate", "flip", "autocontrast", "equalize",
                             "threshold", "sharpen", "denoise", "invert", "grayscale")
    assert SUPPORTED_TOOLS == (*DEFAULT_TOOLS, "blur", "edge_detect")
    assert _digest({k: list(v) for k, v in TOOL_OPTIONS.items()}) == "42428968211d0665"
    assert _digest(action_table()) == "f526eec9fdeae52f"
    assert _digest(action_table(SUPPORTED_TOOLS, 5)) == "4fb3a3f301f5b568"
    flat = flat_action_table(SUPPORTED_TOOLS, 8)
    assert flat.shape == (143, 5)
    assert hashlib.sha256(flat.tobytes()).hexdigest()[:16] == "f1ebb0790821f61e"
    flat = flat_action_table(DEFAULT_TOOLS, 4)
    assert flat.shape == (121, 5)
    assert hashlib.sha256(flat.tobytes()).hexdigest()[:16] == "c627ccee3b8d9bc8"


def test_code_mode_tables_are_pinned() -> None:
    assert CANONICAL_OPS == {"autocontrast", "blur", "crop_px", "denoise", "edge_detect",
                             "equalize", "flip", "grayscale", "invert", "resize", "rotate",
                             "sharpen", "threshold"}
    assert len(CALL_OPS) == 44
    assert _digest(CALL_OPS) == "03123478de9021a5"
    assert ATTRIBUTE_OPS == {"SHARPEN": "sharpen", "FIND_EDGES": "edge_detect",
                             "GaussianBlur": "blur", "EDGE_ENHANCE": "sharpen"}
