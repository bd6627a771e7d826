"""A two-node Ray cluster on this machine (``ray start`` on loopback ports): eval over it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def records(path: Path) -> list[dict]:
    out = [json.loads(x) for x in (path / "episodes.jsonl").read_text().splitlines()]
    for r in out:
        r.pop("wall_s")
    return out


@pytest.mark.slow
def test_eval_on_a_two_node_cluster(tmp_path: Path) -> None:
    ray_cli = str(Path(sys.executable).parent / "ray")
    port = free_port()
    address = f"127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0",
           "RAY_AUTH_MODE": "disabled"}  # loopback-only test cluster: no token exchange
    common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--disable-usage-stats"]
    try:
        subprocess.run([ray_cli, "start", "--head", f"--port={port}", "--include-dashboard=false",
                        *common], check=True, env=env, timeout=180, capture_output=True)
        subprocess.run([ray_cli, "start", f"--address={address}", *common], check=True, env=env,
                       timeout=180, capture_output=True)
        nodes = subprocess.run(
            [sys.executable, "-c", f"import ray; ray.init(address={address!r}, "
             "log_to_driver=False); print(sum(n['Alive'] for n in ray.nodes()))"],
            check=True, env=env, timeout=180, capture_output=True, text=True)
        assert nodes.stdout.strip().splitlines()[-1] == "2"
        args = ["-m", "m3gym.cli", "eval", "--env", "M3Bench-L1", "--agent", "oracle",
                "--episodes", "4", "--quiet"]
        subprocess.run([sys.executable, *args, "--backend", "ray", "--address", address,
                        "--out", str(tmp_path / "ray")], check=True, env=env, timeout=300,
                       cwd=ROOT)
        subprocess.run([sys.executable, *args, "--workers", "2", "--out", str(tmp_path / "loc")],
                       check=True, env=env, timeout=300, cwd=ROOT)
        assert records(tmp_path / "ray") == records(tmp_path / "loc")
    finally:
        subprocess.run([ray_cli, "stop", "--force"], env=env, timeout=120, capture_output=True)
