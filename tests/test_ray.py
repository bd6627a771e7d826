"""``m3gym eval --backend ray`` and ``RayEnvPool`` on a local Ray cluster (``num_cpus=2``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

ray = pytest.importorskip("ray")

import m3gym  # noqa: E402,F401
from m3gym.distributed import RayBackend, RayEnvPool  # noqa: E402
from m3gym.distributed.eval import check_address  # noqa: E402
from m3gym.eval.runner import EvalConfig, read_episode_rows, run_eval  # noqa: E402

TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module", autouse=True)
def cluster():
    if not ray.is_initialized():
        path = os.pathsep.join([str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH", "")])
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": path, "OMP_NUM_THREADS": "1"}})
    yield
    ray.shutdown()


def folder_bytes(out: Path) -> dict[str, bytes]:
    """Every file of a run folder except the config, with ``wall_s`` removed from rows."""
    files = {}
    for path in sorted(out.rglob("*")):
        rel = str(path.relative_to(out))
        if path.is_file() and rel not in ("config.json", "summary.json"):
            files[rel] = path.read_bytes()
    lines = [json.loads(x) for x in files.pop("episodes.jsonl").decode().splitlines()]
    for row in lines:
        row.pop("wall_s")
    files["episodes.jsonl"] = json.dumps(sorted(lines, key=lambda r: r["index"])).encode()
    return files


@pytest.mark.parametrize("agent", ["oracle", "random"])
def test_ray_results_are_those_of_local_workers(tmp_path: Path, agent: str) -> None:
    cfg = EvalConfig(envs=("M3Bench-L1", "M3Bench-L2"), agent=agent, episodes=3, workers=2)
    local = run_eval(cfg, tmp_path / "local")
    remote = run_eval(cfg, tmp_path / "ray", backend=RayBackend())
    assert remote.ran == local.ran == 6
    assert folder_bytes(tmp_path / "ray") == folder_bytes(tmp_path / "local")
    assert remote.summary == local.summary or \
        json.dumps(remote.summary["overall"]) == json.dumps(local.summary["overall"])


def test_resume_runs_only_what_is_missing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = run_eval(EvalConfig(envs=("M3Bench-L1",), agent="oracle", episodes=2), out,
                     backend=RayBackend())
    second = run_eval(EvalConfig(envs=("M3Bench-L1",), agent="oracle", episodes=4), out,
                      resume=True, backend=RayBackend())
    assert (first.ran, second.ran, second.skipped) == (2, 2, 2)
    ids = [json.loads(x)["episode_id"] for x in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 4


def test_a_killed_worker_is_retried_and_nothing_is_lost_or_doubled(tmp_path: Path) -> None:
    marker = tmp_path / "killed"
    cfg = EvalConfig(envs=("M3Bench-L1",), agent="tests.ray_agents:kill_once_oracle", episodes=4,
                     agent_args={"marker": str(marker)})
    result = run_eval(cfg, tmp_path / "run", backend=RayBackend(max_retries=2))
    assert marker.is_file()  # a worker process really died mid-episode
    lines = (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()
    rows = [json.loads(x) for x in lines]
    assert len(rows) == 4 and len({r["episode_id"] for r in rows}) == 4
    assert all(r["status"] == "ok" and r["answer_correct"] for r in rows)
    want = read_episode_rows(run_eval(EvalConfig(envs=("M3Bench-L1",), agent="oracle", episodes=4),
                                 tmp_path / "local").out / "episodes.jsonl")
    skip = {"agent", "wall_s"}
    assert [{k: v for k, v in r.items() if k not in skip} for r in result.rows] == \
        [{k: v for k, v in r.items() if k not in skip} for r in want]


def test_an_address_that_does_not_answer_fails_fast() -> None:
    with pytest.raises(ConnectionError, match="does not answer"):
        check_address("127.0.0.1:1", timeout=2.0)
    with pytest.raises(ValueError, match="auto or HOST:PORT"):
        check_address("nowhere")


def test_eval_on_a_silent_address_writes_nothing(tmp_path: Path) -> None:
    backend = RayBackend(address="127.0.0.1:1")
    with pytest.raises(ConnectionError, match="does not answer"):
        run_eval(EvalConfig(envs=("M3Bench-L1",), agent="oracle", episodes=1), tmp_path / "r",
                 backend=backend)
    assert not (tmp_path / "r").exists()


def test_env_pool_matches_local_envs() -> None:
    pool = RayEnvPool("M3Bench-L1", 2)
    try:
        seeds = [3, 4]
        remote = pool.get(pool.reset(seeds))
        local_envs = [gym.make("M3Bench-L1") for _ in seeds]
        local = [e.reset(seed=s) for e, s in zip(local_envs, seeds)]
        for (ro, ri), (lo, li) in zip(remote, local):
            assert ro["text"] == lo["text"] and ri["choices"] == li["choices"]
            assert [a.tobytes() for a in ro["images"]] == [a.tobytes() for a in lo["images"]]
            assert all(a.flags.writeable for a in ro["images"])  # copied out of the object store
        actions = [{"name": "crop", "arguments": {"image_index": 0, "bbox_2d": [0, 0, 600, 600],
                                                  "zoom_scale": 2}},
                   {"name": "autocontrast", "arguments": {"image_index": 0}}]
        futures = pool.step(actions)
        ready, rest = pool.wait(futures, num_returns=2, timeout=60)
        assert len(ready) == 2 and not rest
        steps = pool.get(futures)
        for (ro, rr, rt, rtr, _), env, act in zip(steps, local_envs, actions):
            lo, lr, lt, ltr, _ = env.step(act)
            assert (rr, rt, rtr) == (lr, lt, ltr)
            assert [a.tobytes() for a in ro["images"]] == [a.tobytes() for a in lo["images"]]
        one = pool.get(pool.step_at(0, {"name": "answer", "arguments": {"text": "x"}}))
        assert one[2] is True and "metrics" in one[4]
        with pytest.raises(ValueError, match="one per env"):
            pool.step(actions[:1])
    finally:
        pool.close()


def test_env_pool_refuses_unknown_envs() -> None:
    with pytest.raises(ValueError, match="unknown env"):
        RayEnvPool("Nope-v0", 1)
    with pytest.raises(ValueError, match="num_envs"):
        RayEnvPool("M3Bench-L1", 0)


def test_writable_copies_read_only_arrays() -> None:
    from m3gym.distributed.pool import writable

    a = np.zeros((2, 2), np.uint8)
    a.setflags(write=False)
    out = writable({"x": (a,), "y": [1]})
    assert out["x"][0].flags.writeable and out["y"] == [1]
