"""The ``records`` family: the split by id, tasks drawn by seed, the env, eval, export and MCP
(m3gym.records.family)."""

from __future__ import annotations

import json

import pytest

from m3gym.records import RecordsError, load_records, record_split
from m3gym.records.family import record_for_seed
from m3gym.tasks.registry import TRAIN_SEED_LIMIT, make_task
from tests.records.helpers import write_jsonl

# ---------------------------------------------------------------------------------------------
# split, family, env, eval, export, MCP


def test_split_is_a_stable_hash_of_the_id(fixture_set):
    assert [record_split(f"r{i}") for i in range(8)] == [record_split(f"r{i}") for i in range(8)]
    import hashlib

    for rid in ("r0", "rot", "two", "x" * 50):
        u = int.from_bytes(hashlib.sha256(rid.encode()).digest()[:8], "big") / 2 ** 64
        assert record_split(rid) == ("test" if u < 0.2 else "train")
    records = load_records(fixture_set)
    train, test = records.split("train"), records.split("test")
    assert len(train) + len(test) == len(records) and train and test
    for seed in range(5):
        assert record_for_seed(records, seed, "train") == train[seed % len(train)]
        held = TRAIN_SEED_LIMIT + seed
        assert record_for_seed(records, held, "test") == test[seed % len(test)]


def test_make_task_draws_train_and_test_records_by_seed(fixture_set):
    records = load_records(fixture_set)
    test_ids = {r.id for r in records.split("test")}
    for seed in (0, 3, 7):
        t = make_task("records", seed, {"records": str(fixture_set)})
        assert t.task_id == f"records/{seed}" and t.metadata["record_id"] not in test_ids
    t = make_task("records", TRAIN_SEED_LIMIT + 1, {"records": str(fixture_set)})
    assert t.metadata["record_id"] in test_ids and t.metadata["record_split"] == "test"
    again = make_task("records", TRAIN_SEED_LIMIT + 1, {"records": str(fixture_set)})
    assert again.content_hash() == t.content_hash()


def test_changed_record_changes_its_task_hash_only(tmp_path, fixture_set):
    from m3gym.records.load import records_fingerprint

    cfg = {"records": str(fixture_set), "split": "all"}
    before = [make_task("records", s, cfg) for s in (0, 1)]
    sha = records_fingerprint(str(fixture_set))["sha256"]
    rows = [json.loads(line) for line in fixture_set.read_text().splitlines()]
    rows[0]["answer"]["value"] = "QX-4811"
    write_jsonl(fixture_set, rows)
    after = [make_task("records", s, cfg) for s in (0, 1)]
    assert before[0].metadata["record_id"] == after[0].metadata["record_id"] == "r0"
    assert before[0].content_hash() != after[0].content_hash()
    assert before[1].content_hash() == after[1].content_hash()  # r1 did not change
    assert records_fingerprint(str(fixture_set))["sha256"] != sha


def test_env_with_records_runs_an_oracle_episode(fixture_set):
    import gymnasium as gym

    import m3gym
    from m3gym.records_env import RECORDS_ENV_ID

    assert RECORDS_ENV_ID == m3gym.versioned_id("M3Bench-Records")
    env = gym.make(RECORDS_ENV_ID, records=str(fixture_set), disable_env_checker=True)
    obs, info = env.reset(seed=0)
    task = env.unwrapped.task
    assert info["family"] == "records" and task.metadata["record_split"] == "train"
    for step in task.reference:
        env.step([{"name": c.name, "arguments": dict(c.arguments)} for c in step])
    _, _, terminated, _, final = env.step({"name": "answer",
                                          "arguments": {"answer": task.answer.value}})
    assert terminated and final["answer_correct"]
    m = final["metrics"]
    assert (m["S"], m["V"]) == (1.0, 1.0)
    env.close()
    with pytest.raises(RecordsError):
        gym.make(RECORDS_ENV_ID, records=[{"id": "x"}], disable_env_checker=True)


def test_eval_export_and_mcp_on_records(tmp_path, fixture_set):
    from m3gym.eval.runner import EvalConfig, run_eval

    cfg = EvalConfig(envs=("M3Bench-Records",), agent="oracle", episodes=2, split="test",
                     env_args={"records": str(fixture_set)})
    result = run_eval(cfg, tmp_path / "run")
    assert len(result.rows) == 2
    for rec in result.rows:
        assert rec["status"] == "ok" and rec["answer_correct"], rec
        assert rec["metrics"]["S"] == 1.0 and rec["metrics"]["V"] == 1.0
        assert rec["task_hash"]
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    digest = __import__("hashlib").sha256(fixture_set.read_bytes()).hexdigest()
    assert config["records"] == {"source": str(fixture_set), "sha256": digest}

    # a resumed run with an edited records file is refused
    original = fixture_set.read_text()
    write_jsonl(fixture_set, [json.loads(x) for x in original.splitlines()][:-1])
    with pytest.raises(ValueError, match="the records file changed since the run"):
        run_eval(cfg, tmp_path / "run", resume=True)
    fixture_set.write_text(original)

    # re-scoring replays the stored calls on the rebuilt task; a changed record is refused
    from m3gym.eval.rescore import rescore_trace

    ep = result.rows[0]
    trace = json.loads((tmp_path / "run" / "traces" / f"{ep['episode_id']}.json").read_text())
    assert rescore_trace(trace)["metrics"]["S"] == 1.0
    rid = trace["task"]["metadata"]["record_id"]
    rows = [json.loads(line) for line in fixture_set.read_text().splitlines()]
    for row in rows:
        if row["id"] == rid:
            row["question"] += " (edited)"
    write_jsonl(fixture_set, rows)
    with pytest.raises(ValueError, match="changed since the run"):
        rescore_trace(trace)

    # the prompt-dataset export (TRL) and the MCP server's start_episode take the records env
    from m3gym.integrations.datasets import iter_prompt_rows
    from m3gym.mcp.episode_table import EpisodeTable

    rows_out = list(iter_prompt_rows("M3Bench-Records", n=2, split="test",
                                     records=str(fixture_set)))
    assert [r["family"] for r in rows_out] == ["records", "records"]
    assert rows_out[0]["images"][0].shape == (576, 768, 3)  # the view of a 1600 x 1200 photo
    from m3gym.integrations.export import verl_rows

    records = load_records(fixture_set)
    for row in verl_rows("M3Bench-Records", 2, split="test", records=str(fixture_set)):
        task = make_task("records", row["extra_info"]["task_seed"], {"records": str(fixture_set)})
        assert row["reward_model"]["ground_truth"] == task.answer.value
        assert records.by_id(task.metadata["record_id"]) in records.split("test")
    table = EpisodeTable(env_args={"records": str(fixture_set)})
    episode_id, data, images = table.start("M3Bench-Records", split="test", index=0)
    assert episode_id and len(images) == 1
