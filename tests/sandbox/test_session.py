"""Code mode: interfaces, parsing, run-time tracing, verified canonical calls, the oracle as code."""

from __future__ import annotations

import os
import pickle

import cv2
import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import m3gym  # noqa: F401 - registers the env ids
from m3gym.agents.base import OracleAgent, reference_step_code
from m3gym.env import M3BenchEnv
from m3gym.parsing import parse_action
from m3gym.rollout import run_episode
from m3gym.sandbox import protocol, traced
from m3gym.sandbox.canonical import bbox_for_pixels, geometry_agrees
from m3gym.sandbox.static import static_ops
from m3gym.spec import RefCall
from m3gym.tasks.registry import family_names
from m3gym.tools.visual import crop_pixel_box
from m3gym.trace import code_cell_call_ids
from tests.sandbox_options import CODE_SANDBOX

SCORES = ("acc", "S", "V", "m3")


@pytest.fixture(scope="module")
def env() -> M3BenchEnv:
    """One code-mode env for the module (its worker stays warm).

    grid_period's washed-out photo: the canonical-call detection is a pixel comparison, and a
    narrow histogram separates cv2's and PIL's equalisation clearly.
    """
    e = M3BenchEnv(family="grid_period", interface="code", sandbox=CODE_SANDBOX)
    yield e
    e.close()


def cell(env: M3BenchEnv, code: str) -> tuple[dict, dict]:
    """Run one cell; return the observation and info."""
    obs, _, _, _, info = env.step({"name": "run_python", "arguments": {"code": code}})
    return obs, info


# ------------------------------------------------------------------ interfaces and parsing
def test_interfaces_choose_the_tool_set() -> None:
    """atomic = unchanged; code = run_python + answer; both = everything."""
    names = {i: [s["function"]["name"] for s in M3BenchEnv(
        family="tiny_text", interface=i, sandbox=CODE_SANDBOX).tool_schemas()]
        for i in ("atomic", "code", "both")}
    assert "run_python" not in names["atomic"] and "crop" in names["atomic"]
    assert names["code"] == ["run_python", "answer"]
    code_env = M3BenchEnv(family="tiny_text", interface="code", sandbox=CODE_SANDBOX)
    assert code_env.action_space.sample_tools == ["run_python"]
    assert set(names["both"]) == set(names["atomic"]) | {"run_python"}
    with pytest.raises(ValueError, match="interface must be one of"):
        M3BenchEnv(family="tiny_text", interface="python")


def test_atomic_env_has_no_sandbox_and_refuses_run_python() -> None:
    """The default interface starts no worker; run_python there is an unknown tool."""
    e = gym.make("M3Bench-L1", disable_env_checker=True)
    e.reset(seed=0)
    _, _, _, _, info = e.step({"name": "run_python", "arguments": {"code": "print(1)"}})
    assert e.unwrapped._code is None
    assert "unknown tool 'run_python'" in info["calls"][0]["error"]


def test_code_blocks_parse_only_in_code_mode() -> None:
    """<code> blocks become run_python calls with code=True, and nothing otherwise."""
    text = "I will crop.\n<code>\nx = crop(0, [0, 0, 500, 500])\n</code>"
    parsed = parse_action(text, code=True)
    assert [(c.name, dict(c.arguments)) for c in parsed.calls] == \
        [("run_python", {"code": "x = crop(0, [0, 0, 500, 500])"})]
    assert not parse_action(text).calls
    assert parse_action("<answer>7</answer>", code=True).answer == "7"


def test_protocol_round_trip_and_refusals() -> None:
    """Frames carry JSON and uint8 arrays; other dtypes are refused."""
    r, w = os.pipe()
    arr = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    protocol.send(w, {"type": "x", "n": 1}, (arr,))
    header, arrays = protocol.recv(r)
    assert header == {"type": "x", "n": 1} and np.array_equal(arrays[0], arr)
    protocol.send(w, {"type": "x"}, (np.zeros(3, np.float32),))
    with pytest.raises(protocol.ProtocolError, match="bad array description"):
        protocol.recv(r)
    os.close(r)
    os.close(w)


# ------------------------------------------------------------------ tracing (in process)
def base(h: int = 60, w: int = 80) -> np.ndarray:
    """A traced gradient image, Image 0."""
    img = np.dstack([np.tile(np.arange(w, dtype=np.uint8), (h, 1))] * 3)
    return traced.traced(img, traced.Lineage(0, traced.IDENTITY))


def test_slicing_is_a_crop_and_negative_steps_are_flips() -> None:
    """img[y0:y1, x0:x1] maps x -> x - x0; a reversed column slice adds a horizontal flip."""
    out = base()[10:30, 20:60]
    assert out.lineage.ops == (("crop_px", {"box": [20, 10, 60, 30]}),)
    assert out.lineage.affine == (1.0, 0.0, -20.0, 0.0, 1.0, -10.0)
    flipped = base()[:, ::-1]
    assert flipped.lineage.ops == (("flip", {"direction": "horizontal"}),)
    assert flipped.lineage.affine == (-1.0, 0.0, 80.0, 0.0, 1.0, 0.0)


def test_numpy_cv2_and_pillow_operations_are_traced() -> None:
    """rot90, cv2.resize, 255 - img, Image.crop and np.asarray(pil) keep exact lineages."""
    assert traced_ops(np.rot90(base())) == [("rotate", {"angle": 90, "expand": True})]
    cv = traced.TracedCV2()
    big = cv.resize(base(), None, fx=2, fy=2)
    assert traced_ops(big) == [("resize", {"width": 160, "height": 120})]
    assert big.lineage.affine == (2.0, 0.0, 0.0, 0.0, 2.0, 0.0)
    assert traced_ops(255 - base()) == [("invert", {})]
    pil = traced.fromarray(base()).crop((4, 6, 24, 26))
    arr = np.asarray(pil)
    assert traced.lineage_of(arr).ops == (("crop_px", {"box": [4, 6, 24, 26]}),)
    gray = cv.cvtColor(base(), cv2.COLOR_RGB2GRAY)
    assert traced_ops(gray) == [("grayscale", {})]


def test_unrecognised_ops_keep_geometry_only_when_the_shape_is_kept() -> None:
    """An elementwise op is a 'code' op with the geometry; a reduction loses the lineage."""
    out = np.clip(base().astype(np.int16) * 2, 0, 255)
    assert out.lineage.ops[-1][0] == "code" and out.lineage.affine == traced.IDENTITY
    assert traced.lineage_of(base().sum(axis=0)) is None


def traced_ops(arr: np.ndarray) -> list[tuple[str, dict]]:
    """Return the op list of a traced array."""
    return list(arr.lineage.ops)


def test_static_pass_names_the_operations() -> None:
    """The AST pass lists operations in order of first appearance."""
    code = ("g = cv2.GaussianBlur(images[0], (0, 0), 2)\nc = g[10:50, :]\n"
            "p = Image.fromarray(c).filter(ImageFilter.SHARPEN)\nsave(np.array(p))")
    assert static_ops(code) == ["blur", "crop", "sharpen"]
    assert static_ops("def (") == []


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 4000), st.integers(1, 4000), st.data())
def test_bbox_for_pixels_round_trips(width: int, height: int, data: st.DataObject) -> None:
    """The crop tool maps the 0-1000 box back to exactly the traced pixel box."""
    x0 = data.draw(st.integers(0, width - 1))
    x1 = data.draw(st.integers(x0 + 1, width))
    y0 = data.draw(st.integers(0, height - 1))
    y1 = data.draw(st.integers(y0 + 1, height))
    bbox = bbox_for_pixels([x0, y0, x1, y1], width, height)
    assert crop_pixel_box(bbox, width, height) == (x0, y0, x1, y1)


def test_geometry_check_accepts_true_geometry_and_refuses_noise() -> None:
    """A crop (even inverted) agrees with its affine; noise of the same size does not."""
    rng = np.random.default_rng(0)
    src = cv2.GaussianBlur(rng.integers(0, 255, (120, 160), dtype=np.uint8), (0, 0), 3)
    affine = np.array([[1.0, 0.0, -30.0], [0.0, 1.0, -20.0]])
    crop = src[20:80, 30:110]
    assert geometry_agrees(src, affine, crop)
    assert geometry_agrees(src, affine, 255 - crop)
    assert not geometry_agrees(src, affine, rng.integers(0, 255, crop.shape, dtype=np.uint8))


# ------------------------------------------------------------------ in the env
def test_tool_calls_from_code_are_recorded_as_function_calls(env: M3BenchEnv) -> None:
    """crop() in code is the crop tool: same arguments, provenance and a new image."""
    env.reset(seed=3)
    obs, info = cell(env, "c = crop(0, [100, 200, 600, 700], 2.0)\nprint(c.shape)")
    rec = info["calls"][0]
    assert (rec["name"], rec["ok"], rec["arguments"]["bbox_2d"], rec["arguments"]["zoom_scale"]) \
        == ("crop", True, [100, 200, 600, 700], 2.0)
    assert obs["image_indices"] == (1,) and len(obs["images"]) == 1
    assert str(env.state[1].array.shape) in obs["text"]
    (code_cell,) = info["code_cells"]
    assert code_cell["call_ids"] == code_cell["records"] == [rec["call_id"]]  # old key kept
    assert code_cell_call_ids(code_cell) == code_cell_call_ids({"records": [rec["call_id"]]})


def test_slicing_and_resize_become_one_verified_crop(env: M3BenchEnv) -> None:
    """img[y0:y1, x0:x1] + cv2.resize(x2) is recorded as crop(bbox_2d, zoom_scale=2)."""
    env.reset(seed=3)
    h, w = env.state[0].array.shape[:2]
    code = (f"x = images[0][{h // 4}:{h // 2}, {w // 4}:{w // 2}]\n"
            "save(cv2.resize(x, None, fx=2, fy=2, interpolation=cv2.INTER_LANCZOS4))")
    _, info = cell(env, code)
    (rec,) = info["calls"]
    assert rec["name"] == "crop" and rec["arguments"]["zoom_scale"] == 2.0
    assert crop_pixel_box(rec["arguments"]["bbox_2d"], w, h) == (w // 4, h // 4, w // 2, h // 2)
    entry = env.state[rec["output_index"]]
    assert entry.provenance.op == "crop"
    assert np.allclose(entry.provenance.affine, [[2, 0, -2 * (w // 4)], [0, 2, -2 * (h // 4)]])


def test_unknown_and_forged_operations_are_code_ops(env: M3BenchEnv) -> None:
    """A custom contrast stretch keeps its verified geometry; noise gets unknown provenance."""
    env.reset(seed=3)
    code = ("x = images[0][0:300, 0:400]\ny = np.clip(x.astype(np.int16) * 3 // 2 - 40, 0, 255)"
            ".astype(np.uint8)\nsave(y)\n"
            "z = np.random.default_rng(0).integers(0, 255, (300, 400, 3), dtype=np.uint8)\n"
            "save(z)")
    _, info = cell(env, code)
    first, second = info["calls"]
    assert first["name"] == second["name"] == "code"
    assert env.state[first["output_index"]].provenance.root == 0
    assert env.state[second["output_index"]].provenance.root == second["output_index"]
    assert "static_ops" in first["arguments"]


def test_saving_an_existing_image_adds_nothing(env: M3BenchEnv) -> None:
    """save(images[0]) returns 0 and records no call."""
    env.reset(seed=3)
    obs, info = cell(env, "print(save(images[0]))")
    assert info["calls"] == [] and "0" in obs["text"]


def test_budget_applies_to_calls_from_code() -> None:
    """Tool calls and saves from code count against max_tool_calls; past it they fail."""
    e = M3BenchEnv(family="tiny_text", interface="code", max_tool_calls=2, sandbox=CODE_SANDBOX)
    try:
        e.reset(seed=1)
        _, _, _, truncated, info = e.step({"name": "run_python", "arguments": {
            "code": "for k in range(5):\n    crop(0, [0, 0, 500 + k, 500])"}})
        ok = [c for c in info["calls"] if c["ok"]]
        assert len(ok) == 2 and "budget exhausted" in info["calls"][-1]["error"] and truncated
        assert [c["name"] for c in info["calls"]] == ["crop", "crop", "run_python"]
    finally:
        e.close()


def test_env_with_code_mode_pickles(env: M3BenchEnv) -> None:
    """A code-mode env pickles (its workers are not carried) and works after unpickling."""
    env.reset(seed=1)
    clone = pickle.loads(pickle.dumps(env))
    try:
        clone.reset(seed=1)
        obs, _ = cell(clone, "print(len(images))")
        assert "1" in obs["text"]
    finally:
        clone.close()


def test_blind_code_earns_no_evidence_credit(env: M3BenchEnv) -> None:
    """Saving noise or the untouched full image passes no checkpoint."""
    env.reset(seed=5)
    _, info = cell(env, "save(np.zeros((400, 400, 3), np.uint8))\n"
                        "save(np.ascontiguousarray(images[0][:, :, ::-1]))")
    assert info["checkpoints_passed"] == []


def test_reference_step_code_calls_the_tools() -> None:
    """The oracle's cell is one function call per reference call, with keyword arguments."""
    step = [RefCall(id="r1", name="crop", arguments={"image_index": 0, "bbox_2d": [1, 2, 3, 4]}),
            RefCall(id="r2", name="web_search", arguments={"query": "a 'b'"})]
    assert reference_step_code(step) == \
        "crop(image_index=0, bbox_2d=[1, 2, 3, 4])\nweb_search(query=\"a 'b'\")"


@pytest.mark.parametrize("family", family_names(None))
def test_oracle_in_code_mode_is_perfect(family: str) -> None:
    """The reference written as code scores Acc = S = V = M3 = 1 on every family."""
    e = M3BenchEnv(family=family, interface="code", sandbox=CODE_SANDBOX)
    try:
        result = run_episode(e, OracleAgent(), seed=0)
        metrics = result.final_info["metrics"]
        assert {k: metrics[k] for k in SCORES} == dict.fromkeys(SCORES, 1.0)
        assert metrics["OT"] == 0.0 and metrics["failed_calls"] == 0
    finally:
        e.close()


def test_pil_image_can_be_saved_directly(env: M3BenchEnv) -> None:
    """save(pil_image) works and a traced Pillow crop becomes a crop call."""
    env.reset(seed=3)
    _, info = cell(env, "p = Image.fromarray(images[0]).crop((10, 20, 210, 120))\nsave(p)")
    (rec,) = info["calls"]
    assert rec["name"] == "crop"
    assert isinstance(Image.fromarray(env.state[rec["output_index"]].array), Image.Image)


def test_code_op_with_verified_geometry_can_pass_v_true() -> None:
    """A crop done by slicing, resized with another filter and contrast-stretched by hand is a
    ``code`` op, and the evidence measured on its pixels passes ``v_true`` (not the S crop)."""
    e = M3BenchEnv(family="tiny_text", interface="code", sandbox=CODE_SANDBOX)
    try:
        e.reset(seed=4)
        ref = e.task.reference[0][0].arguments
        h, w = e.state[0].array.shape[:2]
        x0, y0, x1, y1 = crop_pixel_box(ref["bbox_2d"], w, h)
        z = ref.get("zoom_scale", 1.0)
        code = (f"x = images[0][{y0}:{y1}, {x0}:{x1}]\n"
                f"y = cv2.resize(x, None, fx={z}, fy={z}, interpolation=cv2.INTER_CUBIC)\n"
                "save(np.clip(y.astype(np.int16) * 1.2 - 20, 0, 255).astype(np.uint8))")
        _, info = cell(e, code)
        assert [c["name"] for c in info["calls"]] == ["code"]
        assert info["checkpoints_passed"] == ["v_true"]
    finally:
        e.close()


def test_eval_in_code_mode_replays(tmp_path) -> None:
    """`m3gym eval --interface code` stores the cells; replay re-runs them to the same images."""
    import json

    from m3gym.cli import main
    from m3gym.eval import replay_trace

    out = tmp_path / "code"
    isolation = CODE_SANDBOX.get("isolation")
    assert main(["eval", "--env", "M3Bench-L2", "--agent", "oracle", "--interface", "code",
                 "--episodes", "1", "--out", str(out), "--quiet",
                 *(["--code-isolation", isolation] if isolation else [])]) == 0
    rec = json.loads((out / "episodes.jsonl").read_text().splitlines()[0])
    assert rec["metrics"]["acc"] == rec["metrics"]["S"] == rec["metrics"]["m3"] == 1.0
    trace = json.loads((out / "traces" / f"{rec['episode_id']}.json").read_text())
    assert trace["recreate"]["env_args"] == {
        "interface": "code", **({"sandbox": {"isolation": isolation}} if isolation else {})}
    env = replay_trace(trace)
    try:
        assert [(e.index, e.provenance.op) for e in env.state] == \
            [(im["index"], im["op"]) for im in trace["images"]]
    finally:
        env.close()


TRACED_SNIPPETS = {
    "save(images[0][:, ::-1])": ["flip"],
    "save(np.rot90(images[0]))": ["rotate"],
    "save(cv2.flip(images[0], 0))": ["flip"],
    "save(cv2.rotate(images[0], cv2.ROTATE_90_CLOCKWISE))": ["rotate"],
    "save(cv2.cvtColor(images[0], cv2.COLOR_RGB2GRAY))": ["grayscale"],
    "save(Image.fromarray(images[0]).convert('L'))": ["grayscale"],
    "save(255 - images[0])": ["invert"],
    "save(ImageOps.autocontrast(Image.fromarray(images[0])))": ["autocontrast"],
    "save(ImageOps.equalize(Image.fromarray(images[0])))": ["equalize"],
    "save(cv2.resize(images[0], (600, 400), interpolation=cv2.INTER_AREA))": ["resize"],
    "save(Image.fromarray(images[0]).resize((600, 400)))": ["resize"],
    "save(Image.fromarray(images[0]).rotate(30, expand=True))": ["rotate"],
    "g = cv2.cvtColor(images[0], cv2.COLOR_RGB2GRAY)\n"
    "save(cv2.threshold(g, 128, 255, cv2.THRESH_BINARY)[1])": ["grayscale", "threshold"],
    "save(cv2.GaussianBlur(images[0], (0, 0), 2))": ["blur"],
    "save(Image.fromarray(images[0]).filter(ImageFilter.GaussianBlur(2)))": ["blur"],
    "save(Image.fromarray(images[0]).filter(ImageFilter.SHARPEN))": ["sharpen"],
    "save(cv2.Canny(cv2.cvtColor(images[0], cv2.COLOR_RGB2GRAY), 100, 200))":
        ["grayscale", "edge_detect"],
    "save(Image.fromarray(images[0]).crop((100, 50, 300, 150)).resize((400, 200), "
    "Image.LANCZOS))": ["crop"],
    "save(ImageOps.mirror(Image.fromarray(images[0])))": ["flip"],
    "save(cv2.equalizeHist(cv2.cvtColor(images[0], cv2.COLOR_RGB2GRAY)))": ["code"],
}


@pytest.mark.parametrize("code", sorted(TRACED_SNIPPETS))
def test_library_operations_become_canonical_calls(env: M3BenchEnv, code: str) -> None:
    """Each numpy/OpenCV/Pillow construct of docs/code-mode.md's table is recorded as its tool(s);
    cv2.equalizeHist differs from the tool's (PIL's) equalisation, so it stays a code op."""
    env.reset(seed=3)
    _, info = cell(env, code)
    assert [(c["name"], c["ok"]) for c in info["calls"]] == \
        [(name, True) for name in TRACED_SNIPPETS[code]]


def test_openai_agent_in_code_mode() -> None:
    """The OpenAI agent gets the Gen-style prompt and run_python's cell report as tool result."""
    from m3gym.agents.openai_agent import OpenAIAgent, OpenAIAgentConfig
    from tests.fake_openai_server import FakeOpenAIServer

    env = M3BenchEnv(family="tiny_text", interface="code", sandbox=CODE_SANDBOX)
    options = {"family": "tiny_text", "task_seed": 3}
    try:
        env.reset(seed=0, options=options)
        task = env.task
        script = [{"tool_calls": [{"name": "run_python",
                                   "arguments": {"code": reference_step_code(step)}}]}
                  for step in task.reference]
        script.append({"tool_calls": [{"name": "answer",
                                       "arguments": {"text": task.answer.value}}]})
        with FakeOpenAIServer(script) as server:
            agent = OpenAIAgent(OpenAIAgentConfig(base_url=server.base_url, model="fake-vlm",
                                                  timeout=5.0, max_retries=0))
            result = run_episode(env, agent, seed=0, options=options)
        assert result.final_info["metrics"]["acc"] == 1.0
        assert result.final_info["metrics"]["m3"] == 1.0
        first, second = server.chat_requests[:2]
        assert [t["function"]["name"] for t in first["tools"]] == ["run_python", "answer"]
        assert "# Code mode" in first["messages"][0]["content"]
        tool = next(m for m in second["messages"] if m["role"] == "tool")
        assert tool["content"].startswith("[c") and "crop: Image 1 created" in tool["content"]
    finally:
        env.close()


def test_a_failing_tool_call_in_code_is_one_failed_call(env: M3BenchEnv) -> None:
    """A tool call with bad arguments fails once (its own record), with the tool's message."""
    env.reset(seed=3)
    obs, info = cell(env, "crop(0, [500, 0, 100, 100])")
    assert [(c["name"], c["ok"]) for c in info["calls"]] == [("crop", False)]
    assert "x1 < x2" in info["calls"][0]["error"] and "RemoteError" in obs["text"]


def test_workers_die_with_an_unclosed_env() -> None:
    """An env dropped without close() takes its sandbox worker with it."""
    import gc

    e = M3BenchEnv(family="tiny_text", interface="code", sandbox=CODE_SANDBOX)
    e.reset(seed=1)
    cell(e, "print(1)")
    proc = e._code._worker.proc
    del e
    gc.collect()
    assert proc.poll() is not None
