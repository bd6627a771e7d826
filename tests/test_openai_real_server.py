"""``m3gym eval --agent openai`` against a real OpenAI-compatible server (issue 42).

Starts ``transformers serve`` on a free port with a tiny random Qwen3-VL built here into
``tmp_path`` (m3gym.integrations.tiny_vlm: no download) and runs two L1 episodes: whatever the
random model writes (garbage text, broken tool JSON the server refuses), every episode must be
scored (no ``infra_error``), its failure recorded. Needs ``.[serve]`` (M3GYM_REAL_SERVER=1 scripts/ci_extra.sh serve ...);
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

    vlm = build_tiny_vlm(seed=0)
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


@pytest.fixture
def server(tmp_path):
    model = tmp_path / "tiny-qwen3-vl"
    save_tiny_vlm(model)
    port = free_port()
    log = tmp_path / "serve.log"
    patch = tmp_path / "patch"
    patch.mkdir()
    (patch / "sitecustomize.py").write_text(PATCH)
    paths = [str(patch), str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")]
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


def test_every_episode_against_transformers_serve_is_scored(server, tmp_path):
    base_url, model, log = server
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "m3gym.cli", "eval", "--env", "M3Bench-L1", "--agent", "openai",
           "--agent-arg", f"base_url={base_url}", "--agent-arg", f"model={model}",
           "--agent-arg", "max_tokens=48", "--agent-arg", "timeout=120",
           "--episodes", "2", "--out", str(out)]
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:] + log.read_text()[-2000:]
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
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
