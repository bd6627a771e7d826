"""Trust boundaries of ``m3gym mcp`` (issue 40): what a client may choose, whose episode it may
touch, the hard episode cap and the memory bound. The table tests run without the mcp SDK."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

import m3gym  # noqa: F401
from m3gym.eval.runner import read_run_config
from m3gym.mcp.episode_table import (
    MAX_CALLS,
    EpisodeError,
    EpisodeTable,
    McpLimits,
    default_env_ids,
)
from m3gym.reward import PRESETS

PASSWD = ("root:x:0:0:root:/root:/bin/bash\n"
          "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
          "secretuser:$6$saltsalt$9Zq0hashhashhash:19000:0:99999:7:::\n")
"""A file a hostile client would like the server to read (as /etc/passwd or /etc/shadow)."""


def refusal(fn: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(EpisodeError) as info:
        fn(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message, message  # one line
    return message


def test_reward_path_is_never_read_and_tells_nothing(tmp_path: Path) -> None:
    secret = tmp_path / "shadow"
    secret.write_text(PASSWD)
    table = EpisodeTable()
    there = refusal(table.start, "M3Bench-L1", seed=1, reward=str(secret))
    missing = refusal(table.start, "M3Bench-L1", seed=1, reward=str(tmp_path / "nope"))
    assert there == missing  # the same line: whether the path exists is not told
    for line in PASSWD.splitlines():
        for part in line.split(":"):
            if len(part) > 3:
                assert part not in there, part
    assert str(tmp_path) not in there
    for name in PRESETS:
        assert name in there  # the line names what is allowed
    for bad in ({"answer": 1.0}, 3, ["m3"], "", "M3", "../m3", "configs/reward/m3.yaml"):
        assert refusal(table.start, "M3Bench-L1", seed=1, reward=bad) == there
    assert table.measure()["starting"] == 0 and table.live_count() == 0


def test_operator_reward_files_are_named_choices(tmp_path: Path) -> None:
    cfg = tmp_path / "strict.yaml"
    cfg.write_text("name: strict\nanswer: 2.0\n")
    table = EpisodeTable(rewards=[str(cfg), "sparse"], record=tmp_path / "run")
    assert table.default_reward == "strict"
    assert set(PRESETS) | {"strict"} == set(table.rewards)
    # the operator's own file, by path: refused like any path
    line = refusal(table.start, "M3Bench-L1", seed=1, reward=str(cfg))
    assert "strict" in line and str(cfg) not in line
    eid, _, _ = table.start("M3Bench-L1", seed=1)  # the default: the operator's file
    table.answer(eid, "x")
    eid, _, _ = table.start("M3Bench-L1", seed=2, reward="sparse")
    table.answer(eid, "x")
    rows = [json.loads(x) for x in (tmp_path / "run" / "episodes.jsonl").read_text()
               .splitlines()]
    traces = [json.loads((tmp_path / "run" / "traces" / f"{r['episode_id']}.json").read_text())
              for r in rows]
    assert [t["recreate"]["reward"] for t in traces] == [str(cfg), "sparse"]  # recreatable
    settings = read_run_config(tmp_path / "run" / "config.json")["mcp_server"]
    assert settings["rewards"]["strict"] == str(cfg) and settings["default_reward"] == "strict"
    assert settings["shared_episodes"] is False
    named = EpisodeTable(rewards=[f"mine={cfg}"])
    assert named.default_reward == "mine"


def test_bad_operator_rewards_stop_the_server(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("answr: 1\n")
    with pytest.raises(ValueError, match="--reward"):
        EpisodeTable(rewards=[str(bad)])
    clash = tmp_path / "m3.yaml"
    clash.write_text("name: m3\n")
    with pytest.raises(ValueError, match="is taken"):
        EpisodeTable(rewards=[str(clash)])
    with pytest.raises(ValueError, match="unknown reward"):  # the operator's own typo
        EpisodeTable(rewards=[str(tmp_path / "missing.yaml")])
    with pytest.raises(ValueError, match="unknown reward 'm4'"):
        EpisodeTable(rewards=["m4"])
    with pytest.raises(ValueError, match="not a preset"):
        EpisodeTable(rewards=["m4="])


def test_env_ids_are_the_operators_choice() -> None:
    assert "M3Bench-Records" not in default_env_ids()
    assert "M3Bench-Records" in default_env_ids({"records": "x.jsonl"})
    assert {"M3Bench-L1", "M3Bench-L3", "M3Bench-TinyText"} <= set(default_env_ids())
    table = EpisodeTable(envs=["M3Bench-L1"])
    eid, _, _ = table.start("M3Bench-L1-v4", seed=1)  # its versioned id names it too
    table.answer(eid, "x")
    line = refusal(table.start, "M3Bench-L2", seed=1)
    assert line == "unknown env 'M3Bench-L2': this server offers M3Bench-L1"
    for bad in ("/etc/passwd", "../M3Bench-L1", None, 1, ["M3Bench-L1"], "M3Bench-Records"):
        assert "this server offers M3Bench-L1" in refusal(table.start, bad, seed=1)
    with pytest.raises(ValueError, match="not an m3gym env id"):
        EpisodeTable(envs=["Nope-v0"])
    with pytest.raises(ValueError, match="not an m3gym env id"):
        EpisodeTable(envs=["CartPole-v1"])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"seed": True}, "seed must be an integer"),
    ({"seed": 1.5}, "seed must be an integer"),
    ({"seed": "1"}, "seed must be an integer"),
    ({"seed": -1}, "seed must be an integer"),
    ({"seed": 1, "index": 0}, "index goes with split"),
    ({"split": "test"}, "index must be an integer"),
    ({"split": "test", "index": True}, "index must be an integer"),
    ({"split": "test", "index": -1}, "index must be an integer"),
    ({"split": "test", "index": 10**12}, "index must be an integer in [0, 100000]"),
    ({"split": "/etc/passwd", "index": 0}, "split must be 'test' or 'val'"),
    ({"split": "train", "index": 0}, "split must be 'test' or 'val'"),
])
def test_every_start_argument_is_checked(kwargs: dict[str, Any], message: str) -> None:
    table = EpisodeTable(envs=["M3Bench-L1", "M3Bench-Classic"])
    for env_id in ("M3Bench-L1", "M3Bench-Classic"):
        assert message in refusal(table.start, env_id, **kwargs)
    assert table.measure()["starting"] == 0 and table.live_count() == 0


def test_calls_are_checked_before_the_env() -> None:
    table = EpisodeTable()
    eid, _, _ = table.start("M3Bench-L1", seed=1)
    crop = {"name": "crop", "arguments": {"image_index": 0, "bbox_2d": [0, 0, 500, 500]}}
    assert f"at most {MAX_CALLS}" in refusal(table.call, eid, [crop] * (MAX_CALLS + 1))
    assert "each call must be" in refusal(table.call, eid, [{"name": "crop",
                                                             "arguments": "/etc/passwd"}])
    assert "each call must be" in refusal(table.call, eid, [{"name": ["x" * 10_000]}])
    reply = table.call(eid, [{"name": "fetch_webpage", "arguments": {"url": "file:///etc/passwd"}}])
    assert reply.is_error and "root:" not in reply.text  # the offline corpus: no file is read


def test_another_owners_episode_is_unknown() -> None:
    table = EpisodeTable()
    eid, _, _ = table.start("M3Bench-L1", seed=3, owner="alice")
    other = "ep-" + "A" * (len(eid) - 3)  # never started, same form

    def same(fn: Any, *args: Any, **kwargs: Any) -> None:
        mine = refusal(fn, eid, *args, owner="mallory", **kwargs).replace(eid, "ID")
        unknown = refusal(fn, other, *args, owner="mallory", **kwargs).replace(other, "ID")
        assert mine == unknown

    crop = [{"name": "grayscale", "arguments": {"image_index": 0}}]
    same(table.call, crop)
    same(table.answer, "x")
    same(table.report)
    for owner in ("mallory", None):  # an anonymous caller is not the owner either
        with pytest.raises(EpisodeError, match="unknown episode"):
            table.answer(eid, "x", owner=owner)
    assert table.report(eid, owner="alice")["status"] == "in progress"
    assert table.answer(eid, "x", owner="alice").done
    same(table.answer, "again")  # ended: still unknown to others (not "has ended")
    same(table.report)
    with pytest.raises(EpisodeError, match="has ended"):
        table.answer(eid, "again", owner="alice")
    assert table.report(eid, owner="alice")["ended"] == "answered"


def test_shared_episodes_are_an_operator_choice(tmp_path: Path) -> None:
    table = EpisodeTable(shared=True, record=tmp_path / "run")
    eid, _, _ = table.start("M3Bench-L1", seed=3, owner="alice")
    assert table.call(eid, [{"name": "grayscale", "arguments": {"image_index": 0}}],
                      owner="bob").data["new_images"] == [1]
    assert table.answer(eid, "x", owner=None).done
    assert read_run_config(tmp_path / "run" / "config.json")["mcp_server"]["shared_episodes"]
    EpisodeTable(record=tmp_path / "run")  # appended to without sharing: the record stays true
    assert read_run_config(tmp_path / "run" / "config.json")["mcp_server"]["shared_episodes"]


def test_episode_ids_are_unguessable() -> None:
    table = EpisodeTable()
    ids = []
    for seed in range(3):
        eid, _, _ = table.start("M3Bench-L1", seed=seed)
        ids.append(eid)
        table.answer(eid, "x")
    assert len(set(ids)) == 3 and all(len(e) >= 3 + 22 for e in ids)  # 128 random bits
    assert not any(e.startswith(("ep1", "ep-1-")) for e in ids)


def test_the_cap_holds_under_concurrent_starts() -> None:
    cap, threads_n = 4, 40
    table = EpisodeTable(McpLimits(max_episodes=cap, max_busy=8))
    held: list[int] = []
    take = table._take_env

    def counting_take(env_id: str, reward: str) -> Any:  # runs while a slot is reserved
        with table._lock:
            held.append(len(table._live) + table._starting)
        return take(env_id, reward)

    table._take_env = counting_take  # type: ignore[method-assign]
    barrier = threading.Barrier(threads_n)
    started: list[str] = []
    refused: list[str] = []
    lock = threading.Lock()

    def one(n: int) -> None:
        barrier.wait()
        try:
            eid, _, _ = table.start("M3Bench-L1", seed=n)
        except EpisodeError as exc:
            with lock:
                refused.append(str(exc))
            return
        with lock:
            started.append(eid)
            held.append(table.live_count())

    workers = [threading.Thread(target=one, args=(n,)) for n in range(threads_n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert max(held) <= cap and len(started) == cap == table.live_count()
    assert len(refused) == threads_n - cap
    assert all("the server is full" in r and f"--max-episodes {cap}" in r for r in refused)
    assert table.measure()["starting"] == 0
    table.answer(started[0], "x")
    eid, _, _ = table.start("M3Bench-L1", seed=99)  # a freed slot is usable again
    assert table.live_count() == cap


def test_memory_stays_within_its_bound_under_concurrent_sessions() -> None:
    limits = McpLimits(max_episodes=8, finished_kept=6, finished_bytes=40_000,
                       max_pooled_envs=2, max_busy=4)
    table = EpisodeTable(limits)
    seen: list[dict[str, int]] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def session(n: int) -> None:
        try:
            for k in range(1):
                while True:
                    try:
                        eid, _, _ = table.start(("M3Bench-L1", "M3Bench-GlyphZoom")[n % 2],
                                                seed=100 * n + k, owner=f"s{n}")
                        break
                    except EpisodeError as exc:
                        assert "the server is full" in str(exc)
                table.call(eid, [{"name": "crop", "arguments": {
                    "image_index": 0, "bbox_2d": [250, 250, 750, 750]}}], owner=f"s{n}")
                snap = table.measure()
                with lock:
                    seen.append(snap)
                table.answer(eid, "x", owner=f"s{n}")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=session, args=(n,)) for n in range(16)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors
    for snap in seen:
        assert snap["live"] + snap["starting"] <= limits.max_episodes
        assert snap["live_image_bytes"] <= snap["live"] * limits.max_episode_bytes
        assert snap["pooled_envs"] <= limits.max_pooled_envs
        assert snap["pooled_image_bytes"] == 0  # a pooled env keeps no episode's images
        assert snap["ended_kept"] <= limits.finished_kept
        assert snap["ended_bytes"] <= limits.finished_bytes
    end = table.measure()
    assert end["live"] == end["starting"] == end["live_image_bytes"] == 0
    assert 1 <= end["ended_kept"] <= limits.finished_kept
    assert end["pooled_envs"] <= limits.max_pooled_envs and end["pooled_image_bytes"] == 0
