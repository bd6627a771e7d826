"""``m3gym eval --agent openai`` against a real OpenAI-compatible server (issue 42).

Starts ``transformers serve`` on a free port with a tiny random Qwen3-VL built here into
``tmp_path`` (m3gym.integrations.tiny_vlm: no download) and runs L1 episodes through
``m3gym eval --agent openai``: what the random model writes, and what a *scripted* one writes
(``scripted_sequence_bias`` through the request's ``generation_config``: broken tool JSON, a
call without ``arguments``). Every episode must be scored (no ``infra_error``), its failure and
the server's reason recorded. Needs ``.[serve]`` (M3GYM_REAL_SERVER=1 scripts/ci_extra.sh serve ...);
skipped where transformers is not installed, and unless ``M3GYM_REAL_SERVER=1`` (it takes about
a minute and starts a server process).
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("fastapi")
if os.environ.get("M3GYM_REAL_SERVER") != "1":
    pytest.skip("set M3GYM_REAL_SERVER=1 to start a real transformers serve (scripts/ci_extra.sh serve ...)",
                allow_module_level=True)


# `transformers serve` itself, except that the processor is tiny_vlm's image-only one: the saved
# Qwen3-VL's AutoProcessor would need torchvision for its video processor, which must not be
# installed beside the CPU torch build (m3gym.integrations.tiny_vlm). The engine runs in a spawned
# process, so the patch is a sitecustomize module on PYTHONPATH (every process imports it)
PATCH = """
try:
    from transformers.cli.serving import model_manager
except ImportError:
    model_manager = None


def _load_processor(self, model_id):
    from transformers import AutoTokenizer

    from m3gym.integrations.tiny_vlm import build_processor

    return build_processor(AutoTokenizer.from_pretrained(model_id))


if model_manager is not None:
    model_manager.ModelLoader.load_processor = _load_processor
"""
LAUNCHER = "import sys\nfrom transformers.cli.transformers import main\n" \
    "sys.argv = ['transformers', *sys.argv[1:]]\nmain()\n"


def free_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def save_tiny_vlm(path: Path) -> None:
    from m3gym.integrations.tiny_vlm import build_tiny_vlm

    vlm = build_tiny_vlm(seed=0, max_positions=32768)  # room for whole episodes
    vlm.model.save_pretrained(path)
    vlm.tokenizer.save_pretrained(path)
    vlm.processor.image_processor.save_pretrained(path)
    config = json.loads((path / "tokenizer_config.json").read_text())
    (path / "chat_template.jinja").write_text(vlm.tokenizer.chat_template)
    (path / "tokenizer_config.json").write_text(json.dumps(config))


def wait_ready(url: str, proc: subprocess.Popen, log: Path, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"transformers serve exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"transformers serve not ready in {limit} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("serve")
    model = tmp_path / "tiny-qwen3-vl"
    save_tiny_vlm(model)
    port = free_port()
    log = tmp_path / "serve.log"
    patch = tmp_path / "patch"
    patch.mkdir()
    (patch / "sitecustomize.py").write_text(PATCH)
    paths = [str(patch), str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    args = ["serve", str(model), "--host", "127.0.0.1", "--port", str(port)]
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, *args], stdout=out,
                                stderr=subprocess.STDOUT, env=env)
    try:
        wait_ready(f"http://127.0.0.1:{port}/v1/models", proc, log)
        yield f"http://127.0.0.1:{port}/v1", str(model), log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def run_eval(server, out: Path, *agent_args: str) -> list[dict]:
    """Run ``m3gym eval --agent openai`` against the server; return its episodes.jsonl rows."""
    base_url, model, log = server
    cmd = [sys.executable, "-m", "m3gym.cli", "eval", "--env", "M3Bench-L1", "--agent", "openai",
           "--agent-arg", f"base_url={base_url}", "--agent-arg", f"model={model}",
           "--agent-arg", "max_tokens=48", "--agent-arg", "timeout=120",
           "--env-arg", "max_rounds=4",  # a random model's episodes: 4 turns, not 15
           *[a for arg in agent_args for a in ("--agent-arg", arg)],
           "--episodes", "2", "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:] + log.read_text()[-2000:]
    return [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]


def scripted(server, text: str) -> str:
    """Return the ``extra_body`` agent argument that makes the served tiny model write ``text``."""
    from transformers import AutoTokenizer

    from m3gym.integrations.tiny_vlm import scripted_sequence_bias

    tokenizer = AutoTokenizer.from_pretrained(server[1])
    bias = scripted_sequence_bias(tokenizer, text)
    return "extra_body=" + json.dumps({"generation_config": json.dumps({"sequence_bias": bias})})


BROKEN_JSON = '<tool_call>\n{"name": "crop", "arguments": {"image_index": 0, "bbox_2d": [1'
NO_ARGUMENTS = '<tool_call>\n{"name": "crop"}\n</tool_call>'


def test_broken_tool_json_is_the_models_failure_with_the_servers_reason(server, tmp_path):
    records = run_eval(server, tmp_path / "run", scripted(server, BROKEN_JSON))
    for rec in records:
        assert rec["status"] == "ok", rec["error"]  # scored, never dropped as infra_error
        assert rec["failure_mode"] == "tool_misexecution"
        assert "HTTP 400" in rec["error"] and "could not parse" in rec["error"].lower()


def test_a_call_without_arguments_is_the_models_failure(server, tmp_path):
    # transformers serve's tool parser raises KeyError on it and answers a bare 500 "Internal
    # Server Error" on every retry (in tool_mode=text too: the server parses <tool_call> blocks
    # whatever the request says); the same request cut to one token is answered, so the agent
    # knows the server is up and the model's answer is the cause
    records = run_eval(server, tmp_path / "run", scripted(server, NO_ARGUMENTS), "backoff=0")
    for rec in records:
        assert rec["status"] == "ok", rec["error"]  # scored, never dropped as infra_error
        assert rec["failure_mode"] == "tool_misexecution"
        assert "HTTP 500" in rec["error"] and "max_tokens=1 succeeds" in rec["error"]


def test_every_episode_against_transformers_serve_is_scored(server, tmp_path):
    started = time.monotonic()
    records = run_eval(server, tmp_path / "run")
    out = tmp_path / "run"
    assert len(records) == 2
    for rec in records:
        assert rec["status"] == "ok", rec["error"]  # no infra_error: every episode scored
        assert rec["answer_correct"] is False  # random weights
        assert rec["failure_mode"]  # the failure is recorded
        if rec["error"]:  # the server refused the model's output: its reason is kept
            assert "ModelOutputError" in rec["error"] and "HTTP" in rec["error"]
    summary = json.loads((out / "summary.json").read_text())["overall"]
    assert summary["scored"] == 2 and summary["infra_errors"] == 0
    print(f"eval took {time.monotonic() - started:.1f} s; failure modes "
          f"{[r['failure_mode'] for r in records]}; errors {[r['error'] for r in records]}")
