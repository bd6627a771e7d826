"""The MCP server's episode table (plain Python: runs without the mcp SDK)."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import m3gym  # noqa: F401
from m3gym.agents.base import OracleAgent
from m3gym.eval.episode import run_episode
from m3gym.eval.runner import EvalConfig, read_records, run_eval
from m3gym.mcp.episodes import EpisodeError, EpisodeTable, McpLimits, encode_image


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def play_oracle(table: EpisodeTable, episode_id: str) -> dict:
    task = table._live[episode_id].rec.task  # the test plays the oracle: it may read the task
    for step in task.reference:
        table.call(episode_id, [{"name": c.name, "arguments": dict(c.arguments)} for c in step])
    return table.answer(episode_id, task.answer.value).data


def test_oracle_through_the_table_scores_like_gym_make() -> None:
    table = EpisodeTable()
    eid, data, images = table.start("M3Bench-L2", seed=11)
    assert images and data["prompt"].startswith(data["prompt"][:10])
    assert not {"task_id", "family", "level", "domain"} & set(data)
    got = play_oracle(table, eid)
    rec = run_episode(gym.make("M3Bench-L2"), OracleAgent(), seed=11)
    assert got["answer_correct"] is True
    assert got["metrics"] == json.loads(json.dumps(
        {k: got["metrics"][k] for k in got["metrics"]}))
    want = rec.final["metrics"]
    for key in ("acc", "S", "V", "OT", "m3", "calls", "rounds"):
        assert got["metrics"][key] == pytest.approx(want[key]), key


def test_recorded_mcp_run_matches_m3gym_eval(tmp_path) -> None:
    run_eval(EvalConfig(envs=("M3Bench-L1",), agent="oracle", episodes=2), tmp_path / "eval")
    table = EpisodeTable(record=tmp_path / "mcp")
    for index in range(2):
        eid, _, _ = table.start("M3Bench-L1", split="test", index=index)
        play_oracle(table, eid)
    ours = read_records(tmp_path / "mcp" / "episodes.jsonl")
    theirs = read_records(tmp_path / "eval" / "episodes.jsonl")
    assert len(ours) == len(theirs) == 2
    skip = {"agent", "split", "wall_s"}
    for a, b in zip(ours, theirs):
        assert {k: v for k, v in a.items() if k not in skip} == \
            {k: v for k, v in b.items() if k not in skip}
        assert (tmp_path / "mcp" / "traces" / f"{a['episode_id']}.json").is_file()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"env_id": "Nope-v0", "seed": 1}, "unknown env 'Nope-v0'"),
    ({"env_id": "M3Bench-L1", "seed": -1}, "seed must be an integer"),
    ({"env_id": "M3Bench-L1", "seed": 2**40}, "seed must be an integer"),
    ({"env_id": "M3Bench-L1"}, "give either seed, or split and index"),
    ({"env_id": "M3Bench-L1", "seed": 1, "split": "test", "index": 0}, "not both"),
    ({"env_id": "M3Bench-L1", "split": "train", "index": 0}, "split must be 'test' or 'val'"),
    ({"env_id": "M3Bench-L1", "split": "test", "index": 10**6}, "is more"),
    ({"env_id": "M3Bench-L1", "seed": 1, "reward": "nope"}, "bad reward 'nope'"),
    ({"env_id": 3, "seed": 1}, "env_id must be a string"),
])
def test_bad_starts_are_refused_precisely(kwargs: dict, message: str) -> None:
    table = EpisodeTable()
    with pytest.raises(EpisodeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        table.start(**kwargs)
    assert table.live_count() == 0


def test_bad_calls_are_refused_precisely() -> None:
    table = EpisodeTable()
    eid, _, _ = table.start("M3Bench-L1", seed=2)
    with pytest.raises(EpisodeError, match="unknown episode 'nope'"):
        table.call("nope", [{"name": "crop", "arguments": {}}])
    with pytest.raises(EpisodeError, match="non-empty list"):
        table.call(eid, [])
    with pytest.raises(EpisodeError, match="answer with the answer tool"):
        table.call(eid, [{"name": "answer", "arguments": {"text": "x"}}])
    reply = table.call(eid, [{"name": "crop", "arguments": {"image_index": 5, "bbox_2d": [0]}}])
    assert reply.is_error and "image_index" in reply.text or "bbox_2d" in reply.text
    reply = table.call(eid, [{"name": "nope_tool", "arguments": {}}])
    assert reply.is_error and "nope_tool" in reply.text
    table.answer(eid, "x")
    with pytest.raises(EpisodeError, match="has ended"):
        table.answer(eid, "again")
    report = table.report(eid)
    assert report["ended"] == "answered" and report["status"] == "ok"
    assert len(report["steps"]) == 3


def test_limits_and_idle_eviction(tmp_path) -> None:
    clock = Clock()
    table = EpisodeTable(McpLimits(max_episodes=2, idle_s=10), record=tmp_path / "run",
                         clock=clock)
    a, _, _ = table.start("M3Bench-L1", seed=1)
    b, _, _ = table.start("M3Bench-L1", seed=2)
    with pytest.raises(EpisodeError, match="maximum"):
        table.start("M3Bench-L1", seed=3)
    clock.now = 8.0
    table.call(b, [{"name": "grayscale", "arguments": {"image_index": 0}}])
    clock.now = 12.0
    c, _, _ = table.start("M3Bench-L1", seed=3)  # a was idle 12 s: evicted, its slot is free
    with pytest.raises(EpisodeError, match=r"has ended \(evicted after 10 s without a call\)"):
        table.call(a, [{"name": "grayscale", "arguments": {"image_index": 0}}])
    records = read_records(tmp_path / "run" / "episodes.jsonl")
    assert [r["status"] for r in records] == ["evicted"]  # nothing lost from the run folder
    assert table.live_count() == 2 and {b, c} == set(table._live)


def test_response_images_respect_the_byte_cap() -> None:
    rng = np.random.default_rng(0)
    noise = rng.integers(0, 256, size=(512, 512, 3), dtype=np.uint8)
    data, mime = encode_image(noise, 40_000)
    assert len(data) <= 40_000 and mime == "image/jpeg"
    assert encode_image(noise, 10) is None
    table = EpisodeTable(McpLimits(max_response_bytes=3_000))
    eid, data, images = table.start("M3Bench-L1", seed=4)
    assert sum(len(i.data) for i in images) <= 3_000 or data["images_left_out"]
