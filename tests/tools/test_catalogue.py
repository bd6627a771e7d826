"""One tool catalogue: every tool list derives from it, and a registered tool appears everywhere.

The pins below were taken before the hand-kept lists were replaced by catalogue facets: the 18
built-in tools' schemas, prompts, discrete action tables and code-mode tables must stay
byte-identical (the SB3 tests and the frozen evaluations depend on them).
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from m3gym.agents.prompts import system_prompt
from m3gym.env import M3BenchEnv
from m3gym.sandbox.canonical import CANONICAL_OPS
from m3gym.sandbox.static import ATTRIBUTE_OPS, CALL_OPS, static_ops
from m3gym.tools import Discretization, default_registry, register_tool, unregister_tool
from m3gym.tools.catalogue import lineage_ops
from m3gym.tools.code import interface_registry
from m3gym.wrappers.discrete import (
    DEFAULT_TOOLS,
    SUPPORTED_TOOLS,
    TOOL_OPTIONS,
    action_table,
    supported_tools,
    tool_options,
)
from m3gym.wrappers.flat import flat_action_table
from tests.sandbox_options import CODE_SANDBOX


def _digest(obj: Any) -> str:
    text = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ------------------------------------------------------------------ pins of the built-in tools
def test_schemas_of_the_built_in_tools_are_pinned() -> None:
    reg = default_registry()
    assert _digest(reg.schemas("openai")) == "f0ae8175d6d40c3b"
    assert _digest(reg.schemas("mcp")) == "a0d220a26e92af09"
    pins = {"atomic": "f0ae8175d6d40c3b", "code": "642d60850f65d75f", "both": "60b69b480ad853a4"}
    for interface, pin in pins.items():
        assert _digest(interface_registry(reg, interface).schemas("openai")) == pin, interface


def test_system_prompts_are_pinned() -> None:
    reg = default_registry()
    pins = {("atomic", "native"): "a0d9231a8bc8a405", ("atomic", "text"): "d0b6d0a4c671c73d",
            ("code", "native"): "fdeda5c30dd2a59b", ("code", "text"): "cd221c3cc281c253",
            ("both", "native"): "fdeda5c30dd2a59b", ("both", "text"): "35cefa75efc21f65"}
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


def test_scoring_tables_are_pinned() -> None:
    from m3gym.tools import catalogue

    keys = ("VISUAL_TOOL_NAMES", "RETRIEVAL_TOOL_NAMES", "NON_IMAGE_TOOLS",
            "FRAME_PRESERVING_TOOLS", "CONTRAST_TOOLS", "UPRIGHT_TOOLS", "TOOL_ALIASES",
            "CONTENT_ARGUMENTS", "ENUM_KEYS", "DEFAULT_ARGUMENTS")
    tables = {k: getattr(catalogue, k) for k in keys}
    tables = {k: v if isinstance(v, (tuple, dict)) else sorted(v) for k, v in tables.items()}
    assert _digest(tables) == "04f0a311eb6a11b5"
    assert catalogue.equivalent_tools("threshold") == ("autocontrast", "equalize", "threshold",
                                                       "enhance")


def test_code_mode_tables_are_pinned() -> None:
    assert CANONICAL_OPS == {"autocontrast", "blur", "crop_px", "denoise", "edge_detect",
                             "equalize", "flip", "grayscale", "invert", "resize", "rotate",
                             "sharpen", "threshold"}
    assert len(CALL_OPS) == 44
    assert _digest(CALL_OPS) == "03123478de9021a5"
    assert ATTRIBUTE_OPS == {"SHARPEN": "sharpen", "FIND_EDGES": "edge_detect",
                             "GaussianBlur": "blur", "EDGE_ENHANCE": "sharpen"}


# ------------------------------------------------------------------ the example tool everywhere
def _example() -> Any:
    from examples.example_tool import POSTERIZE_TOOL, posterize_image, register

    return POSTERIZE_TOOL, posterize_image, register


def test_posterize_image_exact_values() -> None:
    _, posterize_image, _ = _example()
    ramp = np.arange(256, dtype=np.uint8).reshape(16, 16)
    two = posterize_image(ramp, 2).ravel()
    assert two.tolist() == [0] * 128 + [255] * 128
    four = posterize_image(ramp, 4).ravel()
    assert four.tolist() == [0] * 64 + [85] * 64 + [170] * 64 + [255] * 64
    rgb = np.dstack([ramp, 255 - ramp, ramp])
    out = posterize_image(rgb, 2)
    assert out.shape == (16, 16, 3) and out.dtype == np.uint8
    assert out[0, 0].tolist() == [0, 255, 0]


def test_registration_is_scoped_and_refreshes_the_catalogue() -> None:
    from m3gym.tools import catalogue

    spec, _, register = _example()
    before = default_registry().names
    with register() as registered:
        assert registered is spec
        names = default_registry().names
        assert names[-2:] == ["posterize", "answer"]  # answer stays last
        assert "posterize" in catalogue.VISUAL_TOOL_NAMES
        assert "posterize" in catalogue.FRAME_PRESERVING_TOOLS
        assert catalogue.DEFAULT_ARGUMENTS["posterize"] == {"levels": 4}
        assert catalogue.CONTENT_ARGUMENTS["posterize"] == {"image_index": "image"}
    assert default_registry().names == before
    assert "posterize" not in catalogue.VISUAL_TOOL_NAMES
    assert "posterize" not in catalogue.DEFAULT_ARGUMENTS
    test_schemas_of_the_built_in_tools_are_pinned()  # nothing leaked
    test_system_prompts_are_pinned()


def test_register_tool_refuses_bad_tools() -> None:
    spec, _, register = _example()
    bad = {
        "not-a-name": "must be a Python identifier",
        "save": "is reserved",
        "crop": "already registered",
    }
    for name, message in bad.items():
        with pytest.raises(ValueError, match=message):
            register_tool(replace(spec, name=name))
    with pytest.raises(ValueError, match="4 discrete options do not divide"):
        register_tool(replace(spec, discrete=Discretization(
            options=tuple({"levels": n} for n in (2, 3, 4, 5)))))
    with pytest.raises(ValueError, match=r"discrete option \{'levels': 99\} is not valid: "
                                         "posterize: argument 'levels' = 99"):
        register_tool(replace(spec, discrete=Discretization(options=({"levels": 99},))))
    with pytest.raises(ValueError, match="kind must be 'visual' or 'retrieval'"):
        register_tool(replace(spec, kind="answer"))
    with pytest.raises(ValueError, match="built in and cannot be unregistered"):
        unregister_tool("crop")
    with pytest.raises(KeyError, match="not registered"):
        unregister_tool("posterize")
    with register(), pytest.raises(ValueError, match="already registered"):
        register_tool(spec)
    assert "posterize" not in default_registry()


def test_registered_tool_is_in_the_env_schemas_and_the_prompt() -> None:
    _, _, register = _example()
    with register():
        env = M3BenchEnv(family="tiny_text")
        openai = env.tool_schemas("openai")
        assert [s["function"]["name"] for s in openai][-2:] == ["posterize", "answer"]
        mcp_schema = next(s for s in env.tool_schemas("mcp") if s["name"] == "posterize")
        assert mcp_schema["inputSchema"]["properties"]["levels"] == {
            "default": 4, "description": "Values kept per channel, 2-64 (fewer = flatter "
            "colours).", "maximum": 64, "minimum": 2, "type": "integer"}
        assert mcp_schema["inputSchema"]["required"] == ["image_index"]
        code = interface_registry(default_registry(), "code").schemas("openai")
        prompt = system_prompt(20, 10, "native", code)
        assert "enhance(i, brightness=1, contrast=1, sharpness=1), posterize(i, levels=4); " \
               "web_search(query, top_k=5)" in prompt
        text = system_prompt(20, 10, "text", openai)
        assert json.dumps(openai[-2]["function"], sort_keys=True) in text
        assert static_ops("out = posterize(0, levels=2)") == ["posterize"]
        env.reset(seed=0)
        env.step({"name": "posterize", "arguments": {"image_index": 0, "levels": 2}})
        call = env.trace.calls[-1]
        assert (call.name, call.ok, call.arguments["levels"]) == ("posterize", True, 2)
        assert set(np.unique(env.state[call.output_index].array).tolist()) <= {0, 255}
    assert static_ops("out = posterize(0, levels=2)") == []


def test_registered_tool_is_in_the_mcp_tool_list() -> None:
    pytest.importorskip("mcp", reason="the MCP server is the optional 'mcp' extra")
    import anyio
    from mcp import Client

    from m3gym.mcp.server import build_server

    _, _, register = _example()

    async def main() -> dict[str, Any]:
        async with Client(build_server()) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    with register():
        listed = anyio.run(main)
        tool = listed["posterize"]
        assert tool.description.startswith("Reduce each colour channel")
        assert tool.input_schema["required"] == ["episode_id", "image_index"]
        assert tool.input_schema["properties"]["levels"]["maximum"] == 64
    assert "posterize" not in anyio.run(main)


def test_registered_tool_is_a_function_in_code_mode() -> None:
    _, _, register = _example()
    with register():
        env = M3BenchEnv(family="tiny_text", interface="code", sandbox=CODE_SANDBOX)
        try:
            env.reset(seed=0)
            code = ("out = posterize(0, levels=2)\n"
                    "print(out.shape[2], sorted(np.unique(out).tolist()))")
            obs, _, _, _, _ = env.step({"name": "run_python", "arguments": {"code": code}})
            assert "Posterized Image 0 to 2 levels." in obs["text"]
            assert "3 [0, 255]" in obs["text"]
            call = next(c for c in env.trace.calls if c.name == "posterize")
            assert call.ok and call.arguments["levels"] == 2 and call.output_index == 1
        finally:
            env.close()


def test_registered_tool_in_the_discrete_wrapper() -> None:
    from m3gym.wrappers import make_discrete_env
    from m3gym.wrappers.flat import FlatToolActions

    spec, _, register = _example()
    with register():
        assert supported_tools()[-1] == "posterize"
        assert tool_options("posterize") == ({"levels": 2}, {"levels": 4}, {"levels": 8})
        tools = (*DEFAULT_TOOLS, "posterize")
        assert action_table(tools)[-1] == {"dimension": "param[posterize]", "size": 3,
                                           "meaning": "levels=2; levels=4; levels=8"}
        env = make_discrete_env(level=1, max_steps=3, tools=tools, task_pool=2, cache_size=2)
        env.reset(seed=0)
        env.step([len(tools) - 1, 1, 0, 5, 0])  # posterize the original, bin 5 -> levels 8
        call = env.unwrapped.trace.calls[-1]
        assert (call.name, call.ok, call.arguments["levels"], call.input_index) == \
            ("posterize", True, 8, 0)
        flat = FlatToolActions(env)
        rows = flat.table[flat.table[:, 0] == len(tools) - 1]
        assert rows.tolist() == [[len(tools) - 1, s, 0, p, 0] for s in range(3) for p in range(3)]
        env.close()
        with register_tool(replace(spec, name="posterize_free", discrete=None)), \
                pytest.raises(ValueError, match="tool 'posterize_free' is not supported by the "
                                                "discrete wrapper: its catalogue entry declares "
                                                "no discretization"):
            make_discrete_env(level=1, tools=(*DEFAULT_TOOLS, "posterize_free"))
    for name, why in (("resize", "declares no discretization"),
                      ("web_search", "takes free-text arguments"),
                      ("posterize", "not in the tool catalogue")):
        with pytest.raises(ValueError, match=why):
            action_table((*DEFAULT_TOOLS, name))


# ------------------------------------------------------------------ no hand-kept lists
ROOT = Path(__file__).resolve().parents[2]

EXEMPT: dict[str, str] = {
    "m3gym/sandbox/traced.py": "runs in the sandbox worker, which cannot import m3gym: "
                               "IMAGEOPS_CLAIMS names Pillow functions; "
                               "test_traced_claims_are_catalogue_ops checks its ops",
    "m3gym/tasks/families/_lookup_common.py": "the privacy rule's watched tools (frozen tasks)",
    "m3gym/testing/task_checks.py": "retrieval tools of check_family's evidence rule",
    "m3gym/records/amme_import.py": "Agentic-MME's op primitives",
    "m3gym/records/amme_export.py": "Agentic-MME's harness names and contrast ops",
    "m3gym/records/schema.py": "record format ops; ENHANCE_TOOLS repeats CONTRAST_TOOLS",
}
"""Modules outside this change's files that still keep a list (to derive from the catalogue)."""


def hand_kept_tool_lists(path: Path) -> list[tuple[int, list[str]]]:
    """Return (line, names) of every tuple/list/set/dict naming >= 3 catalogue tools."""
    names = set(default_registry().names) | set(lineage_ops())
    names |= {a.name for s in default_registry().specs() for a in s.aliases}
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            elts = list(node.elts)
        elif isinstance(node, ast.Dict):
            elts = [k for k in node.keys if k is not None] + list(node.values)
        else:
            continue
        hits = sorted({e.value for e in elts if isinstance(e, ast.Constant)
                       and isinstance(e.value, str) and e.value in names})
        if len(hits) >= 3:
            found.append((node.lineno, hits))
    return found


def test_no_hand_kept_tool_list_outside_the_catalogue() -> None:
    offenders = {}
    for path in sorted((ROOT / "m3gym").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("m3gym/tools/") or rel in EXEMPT:
            continue
        if found := hand_kept_tool_lists(path):
            offenders[rel] = found
    assert offenders == {}, "derive these from m3gym.tools.catalogue"


def test_the_consumers_of_this_change_keep_no_list() -> None:
    for rel in ("m3gym/sandbox/canonical.py", "m3gym/sandbox/static.py",
                "m3gym/agents/prompts.py", "m3gym/wrappers/discrete.py",
                "m3gym/wrappers/flat.py", "m3gym/mcp/server.py"):
        assert hand_kept_tool_lists(ROOT / rel) == [], rel
    assert hand_kept_tool_lists(ROOT / "m3gym/sandbox/traced.py") == [
        (next(i for i, line in enumerate((ROOT / "m3gym/sandbox/traced.py").read_text()
                                         .splitlines(), 1) if "IMAGEOPS_CLAIMS: dict" in line),
         ["autocontrast", "equalize", "flip", "grayscale", "invert"])]


def test_traced_claims_are_catalogue_ops() -> None:
    from m3gym.sandbox.traced import IMAGEOPS_CLAIMS

    assert {op for op, _ in IMAGEOPS_CLAIMS.values()} <= set(lineage_ops())
    assert lineage_ops()["crop_px"] == "crop"


def test_contributing_guide_lists_the_example_tool_verbatim() -> None:
    guide = (ROOT / "docs" / "contributing.md").read_text()
    section = guide.split("## Add a tool", 1)[1].split("\n## ", 1)[0]
    listing = section.split("```python\n", 1)[1].split("```", 1)[0]
    source = (ROOT / "examples" / "example_tool.py").read_text()
    assert listing == source.split('"""', 2)[2].lstrip("\n")
