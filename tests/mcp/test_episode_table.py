"""The MCP server's episode table (plain Python: runs without the mcp SDK)."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import m3gym  # noqa: F401
from m3gym.agents.base import OracleAgent
from m3gym.eval.episode_loop import record_episode
from m3gym.eval.runner import EvalConfig, read_episode_rows, run_eval
from m3gym.mcp.episode_table import EpisodeError, EpisodeTable, McpLimits


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
    rec = record_episode(gym.make("M3Bench-L2"), OracleAgent(), seed=11)
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
    ours = read_episode_rows(tmp_path / "mcp" / "episodes.jsonl")
    theirs = read_episode_rows(tmp_path / "eval" / "episodes.jsonl")
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
    ({"env_id": "M3Bench-L1"}, "give one of: seed (the reset seed), task_seed"),
    ({"env_id": "M3Bench-L1", "seed": 1, "split": "test", "index": 0}, "give one of: seed"),
    ({"env_id": "M3Bench-L1", "seed": 1, "task_seed": 1}, "give one of: seed"),
    ({"env_id": "M3Bench-L1", "family": "tiny_text"}, "give one of: seed"),
    ({"env_id": "M3Bench-L1", "seed": 1, "family": "tiny_text"}, "family goes with task_seed"),
    ({"env_id": "M3Bench-L1", "task_seed": -1}, "task_seed must be an integer"),
    ({"env_id": "M3Bench-L1", "task_seed": True}, "task_seed must be an integer"),
    ({"env_id": "M3Bench-L1", "task_seed": 1, "index": 0}, "index goes with split"),
    ({"env_id": "M3Bench-L1", "task_seed": 1, "family": "chart_value"},
     "unknown family 'chart_value' for M3Bench-L1: it draws"),
    ({"env_id": "M3Bench-L1", "split": "train", "index": 0}, "split must be 'test' or 'val'"),
    ({"env_id": "M3Bench-L1", "split": "test", "index": 10**5}, "is more"),
    ({"env_id": "M3Bench-L1", "split": "test", "index": 10**6}, "index must be an integer in"),
    ({"env_id": "M3Bench-L1", "seed": 1, "index": 0}, "index goes with split"),
    ({"env_id": "M3Bench-L1", "seed": 1, "reward": "nope"}, "unknown reward: this server offers"),
    ({"env_id": 3, "seed": 1}, "unknown env 3: this server offers"),
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
    rows = read_episode_rows(tmp_path / "run" / "episodes.jsonl")
    assert [r["status"] for r in rows] == ["evicted"]  # nothing lost from the run folder
    assert table.live_count() == 2 and {b, c} == set(table._live)


def test_small_reply_cap_downscales_states_the_scale_and_keeps_the_score() -> None:
    limit = 64 * 1024
    table = EpisodeTable(McpLimits(max_response_bytes=limit, image_format="png"))
    eid, data, images = table.start("M3Bench-L2", seed=11)
    state = table._live[eid].rec.env.unwrapped.state
    full_w, full_h = state[0].width, state[0].height
    sent = data["images_sent"][0]
    assert images and images[0].downscaled and sent["full_width"] == full_w
    assert sum(len(i.data) for i in images) * 4 / 3 + len(data["text"]) < limit
    assert f"px of its {full_w}x{full_h} full-resolution image" in data["text"]
    assert "bbox_2d uses a 0-1000 scale" in data["text"]
    got = play_oracle(table, eid)  # the small replies change nothing the env scores
    rec = record_episode(gym.make("M3Bench-L2"), OracleAgent(), seed=11)
    assert got["answer_correct"] is True
    for key in ("acc", "S", "V", "OT", "m3"):
        assert got["metrics"][key] == pytest.approx(rec.final["metrics"][key]), key


def test_start_text_carries_choices_and_budgets() -> None:
    table = EpisodeTable()
    for seed in range(6):
        eid, data, _ = table.start("M3Bench-L1", seed=seed)
        assert f"episode_id: {eid}" in data["text"]
        assert f"{data['max_tool_calls']} tool calls, {data['max_rounds']} rounds" in data["text"]
        for choice in data.get("choices") or []:
            assert str(choice) in data["text"]
        table.answer(eid, "x")


def test_close_records_episodes_in_flight(tmp_path) -> None:
    table = EpisodeTable(record=tmp_path / "run")
    a, _, _ = table.start("M3Bench-L1", seed=1)
    b, _, _ = table.start("M3Bench-L1", seed=2)
    table.call(a, [{"name": "grayscale", "arguments": {"image_index": 0}}])
    table.answer(b, "x")
    assert table.close() == [a]
    rows = read_episode_rows(tmp_path / "run" / "episodes.jsonl")
    assert sorted(r["status"] for r in rows) == ["interrupted", "ok"]
    assert table.live_count() == 0
    with pytest.raises(EpisodeError, match="has ended"):
        table.call(a, [{"name": "grayscale", "arguments": {"image_index": 0}}])


def test_env_pool_and_memory_stay_bounded() -> None:
    table = EpisodeTable(McpLimits(max_pooled_envs=2, finished_kept=3))
    for env_id in ("M3Bench-L1", "M3Bench-L2", "M3Bench-L1", "M3Bench-TinyText"):
        eid, _, _ = table.start(env_id, seed=5)
        table.answer(eid, "x")
    assert table.pooled_envs() == 2
    assert len(table._ended) == 3
    assert all(not e.outcome.thumbs for e in table._ended.values())


def test_reaper_evicts_idle_episodes_without_calls() -> None:
    clock = Clock()
    table = EpisodeTable(McpLimits(idle_s=10), clock=clock)
    eid, _, _ = table.start("M3Bench-L1", seed=1)
    clock.now = 11.0
    thread = table.start_reaper(interval_s=0.01)
    thread.join(timeout=0.5)  # keeps running until close()
    assert table.live_count() == 0 and table._ended[eid].reason.startswith("evicted")
    table.close()
    thread.join(timeout=5)
    assert not thread.is_alive()
