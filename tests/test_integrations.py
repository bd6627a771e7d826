"""The trainer-facing core: sessions, generated TRL tool methods, exports, pass@k (no extras needed).

The real TRL / verl runs are in ``test_integration_trl.py`` / ``test_integration_verl.py``.
"""

from __future__ import annotations

import inspect
import json

import gymnasium as gym
import numpy as np
import pytest
from PIL import Image

import m3gym  # noqa: F401
from m3gym.eval.passk import pass_at_k, passk_summary, sample_seed
from m3gym.eval.runner import EvalConfig, episode_seed, plan_episodes
from m3gym.integrations.datasets import prompt_rows
from m3gym.integrations.export import compute_score, load_sft_jsonl, sft_records, write_sft
from m3gym.integrations.session import EpisodeSession, task_ref
from m3gym.integrations.trl import (
    M3GymToolEnv,
    environment_factory,
    reward_functions,
    tool_env_class,
)
from m3gym.tools import default_registry

ENV_ID = "M3Bench-TinyText"
ROW = {"env_id": ENV_ID, "family": "tiny_text", "task_seed": 3}


def call(name, **arguments):
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


# --------------------------------------------------------------------------- rows → tasks
def test_task_ref_forms():
    assert task_ref({"env_id": "M3Bench-L2", "task_seed": "7"}).options == {"task_seed": 7}
    ref = task_ref({"task_id": "tiny_text/42"})
    assert (ref.env_id, ref.seed, ref.options) == ("M3Bench-L1", 42, {"task_seed": 42, "family": "tiny_text"})
    ref = task_ref({"extra_info": {"env_id": ENV_ID, "family": "tiny_text", "task_seed": 5}})
    assert (ref.env_id, ref.options) == (ENV_ID, {"task_seed": 5, "family": "tiny_text"})
    with pytest.raises(ValueError, match="task_seed"):
        task_ref({"task_seed": "seven"})
    with pytest.raises(ValueError, match="task_id"):
        task_ref({"task_id": "no-slash"})
    with pytest.raises(ValueError, match="task_seed"):
        task_ref({"task_seed": True})


def test_same_row_same_task_and_unknown_env_is_precise():
    a, b = EpisodeSession(ENV_ID), EpisodeSession(ENV_ID)
    a.start(ROW)
    b.start(ROW)
    assert a.task.content_hash() == b.task.content_hash()
    assert all(np.array_equal(x, y) for x, y in zip(a.input_images, b.input_images, strict=True))
    with pytest.raises(ValueError, match="unknown env 'Nope'"):
        EpisodeSession().start({"env_id": "Nope"})


# --------------------------------------------------------------------------- bad model output
@pytest.mark.parametrize("text, needle", [
    ("no tool call here", "no <tool_call>"),
    ("<answer>A</answer><answer>B</answer>", "more than one answer"),
    (call("crop", image_index=0, bbox_2d=[0, 0, 500, 500]) + "<answer>A</answer>", "acting and answering"),
    ('<tool_call>{"name": "crop", "arguments": {}} junk</tool_call>', "invalid JSON"),
    (call("teleport", image_index=0), "unknown tool 'teleport'"),
    ("x" * 10_000_000, "no <tool_call>"),
])
def test_session_answers_bad_text_with_precise_errors(text, needle):
    s = EpisodeSession(ENV_ID)
    s.start(ROW)
    result = s.act(text)
    assert needle in result.text and not result.ok and not s.done
    s.finish()
    assert s.done and s.ended_by == "finish" and s.infra_error is None
    assert s.metric("acc") == 0.0
    after = s.act("<answer>x</answer>")
    assert "the episode has ended because the rollout ended" in after.text and not after.ok


def test_session_return_equals_direct_env_return():
    actions = [call("crop", image_index=0, bbox_2d=[0, 0, 1000, 1000], zoom_scale=2.0), "oops",
               "<answer>nope</answer>"]
    s = EpisodeSession(ENV_ID)
    s.start(ROW)
    for a in actions:
        s.act(a)
    env = gym.make(ENV_ID, disable_env_checker=True).unwrapped
    env.reset(seed=3, options={"family": "tiny_text", "task_seed": 3})
    want = sum(env.step(a)[1] for a in actions)
    assert s.done and s.ended_by == "answer"
    assert s.episode_return == pytest.approx(want, abs=1e-12)
    assert len(s.rewards) == 3


def test_env_finish_books_terminal_terms_once():
    env = gym.make(ENV_ID, reward="process", disable_env_checker=True).unwrapped
    env.reset(seed=0, options={"family": "tiny_text", "task_seed": 3})
    reward, info = env.finish()
    assert info["answer_correct"] is False and info["metrics"]["acc"] == 0.0
    assert sum(info["reward_components"].values()) == pytest.approx(reward)
    with pytest.raises(RuntimeError, match="finished episode"):
        env.finish()
    with pytest.raises(RuntimeError):
        env.step("<answer>x</answer>")


def test_internal_env_error_is_flagged_not_scored(monkeypatch):
    s = EpisodeSession(ENV_ID)
    s.start(ROW)
    monkeypatch.setattr(s.env, "step", lambda action: 1 / 0)
    result = s.act("<answer>x</answer>")
    assert "internal environment error (ZeroDivisionError)" in result.text
    assert s.infra_error.startswith("ZeroDivisionError") and s.episode_return is None
    assert s.metrics == {}


# --------------------------------------------------------------------------- TRL tool methods
def test_tool_methods_are_generated_from_the_catalogue():
    registry = default_registry()
    public = sorted(n for n, _ in inspect.getmembers(M3GymToolEnv, inspect.isfunction)
                    if not n.startswith("_") and n not in ("reset", "get_reward"))
    assert public == sorted(registry.names)
    for spec in registry.specs():
        method = getattr(M3GymToolEnv, spec.name)
        props = spec.openai_schema()["function"]["parameters"]["properties"]
        params = inspect.signature(method).parameters
        assert list(params)[1:] == list(props)
        for name, prop in props.items():
            default = params[name].default
            assert ("default" in prop) == (default is not inspect.Parameter.empty)
            if "default" in prop:
                assert default == prop["default"]
            assert f"    {name}: {' '.join(prop['description'].split())}" in method.__doc__
        assert method.__doc__.startswith(spec.description)
    only_crop = tool_env_class(("crop",))
    assert tool_env_class(("crop",)) is only_crop
    assert {"crop", "answer"} <= set(vars(only_crop)) and "rotate" not in vars(only_crop)
    with pytest.raises(ValueError, match="unknown tools"):
        tool_env_class(("zap",))


def test_tool_env_episode_images_answer_and_reward():
    env = environment_factory(ENV_ID, tools=["crop"])()
    blocks = env.reset(env_id=ENV_ID, family="tiny_text", task_seed=3)
    assert [b["type"] for b in blocks] == ["image", "text"]
    assert isinstance(blocks[0]["image"], Image.Image)
    assert np.array_equal(np.asarray(blocks[0]["image"]), env.session.input_images[0])
    assert env.reset(**ROW, prompt=[], images=[]) is None  # the row carries both
    out = env.crop(image_index=0, bbox_2d=[0, 0, 500, 500], zoom_scale=2.0)
    assert out[0]["text"].startswith("[c1] crop: Image 1 created")
    assert np.array_equal(np.asarray(out[1]["image"]), env.session.env.view(1))
    bad = env.crop(image_index=0, bbox_2d=[0, 0, 500, 500], zoom=3)
    assert isinstance(bad, str) and "unknown argument 'zoom'" in bad
    ended = env.answer(text=env.session.task.answer.value)
    assert "Answer received" in ended
    assert "the episode has ended because the answer was given" in env.crop(image_index=0, bbox_2d=[0, 0, 9, 9])
    columns = {f.__name__: f(completions=[None], environments=[env])[0] for f in reward_functions()}
    assert columns["m3gym_accuracy"] == 1.0 and columns["m3gym_safety"] == 1.0
    assert env.get_reward() == pytest.approx(env.session.episode_return)
    assert env.get_reward() == pytest.approx(sum(env.session.rewards))


def test_unanswered_rollout_ends_as_truncation():
    env = M3GymToolEnv(ENV_ID)
    env.reset(**ROW)
    ret = env.get_reward()
    assert env.session.ended_by == "finish" and env.session.metric("acc") == 0.0
    assert ret == pytest.approx(sum(env.session.rewards))


# --------------------------------------------------------------------------- datasets / exports
def test_prompt_rows_are_deterministic():
    a = prompt_rows(ENV_ID, 3, seed=9)
    b = prompt_rows(ENV_ID, 3, seed=9)
    assert [r["task_id"] for r in a] == [r["task_id"] for r in b]
    assert all(np.array_equal(x, y) for ra, rb in zip(a, b, strict=True)
               for x, y in zip(ra["images"], rb["images"], strict=True))
    assert a[0]["prompt"][0]["role"] == "system" and "answer" in a[0]["prompt"][0]["content"]
    assert {r["family"] for r in a} == {"tiny_text"} and a[0]["level"] == 1
    assert prompt_rows(ENV_ID, 3, seed=10)[0]["task_seed"] != a[0]["task_seed"]
    test = prompt_rows(ENV_ID, 2, split="test", images=False)
    assert all(r["task_seed"] >= 1_000_000_000 and "images" not in r for r in test)


def test_compute_score():
    info = {"family": "tiny_text", "task_seed": 3}
    truth = m3gym.make_task("tiny_text", 3).answer.value
    assert compute_score("m3gym", f"<answer>{truth}</answer>", truth, info) == 1.0
    assert compute_score("m3gym", call("answer", text=truth), truth, info) == 1.0
    assert compute_score("m3gym", "<answer>WRONG</answer>", truth, info) == 0.0
    assert compute_score("m3gym", "no answer at all", truth) == 0.0
    assert compute_score("m3gym", "<answer> abc </answer>", "ABC") == 1.0  # normalized match


def test_compute_score_takes_bare_answers_and_the_rows_difficulty():
    # seed 7: a task whose answer moves with the difficulty (not every seed's does)
    truth = m3gym.make_task("tiny_text", 7).answer.value
    info = {"family": "tiny_text", "task_seed": 7}
    assert compute_score("m3gym", f"  {truth}\n", "", info) == 1.0  # bare: no tags, no call
    assert compute_score("m3gym", f"{truth} or WRONG", "", info) == 0.0  # a hedge is not an answer
    assert compute_score("m3gym", call("crop", image_index=0, box=[0, 0, 9, 9]), truth, info) == 0.0
    hard = m3gym.make_task("tiny_text", 7, difficulty=0.95).answer.value
    assert hard != truth  # the row's difficulty changes the task, so the score must follow it
    hard_info = {**info, "difficulty": 0.95}
    assert compute_score("m3gym", hard, truth, hard_info) == 1.0
    assert compute_score("m3gym", truth, truth, hard_info) == 0.0
    assert compute_score("m3gym", f"<answer>{truth}</answer>", truth,
                         {"task_id": "tiny_text/7"}) == 1.0


def test_sft_records_oracle_structure_and_jsonl_round_trip(tmp_path):
    records = list(sft_records(ENV_ID, 2, "oracle", seed=0))
    assert len(records) == 2 and all(r.meta["success"] for r in records)
    rec = records[0]
    roles = [m["role"] for m in rec.messages]
    assert roles[:2] == ["system", "user"] and roles[-1] == "assistant"
    final = rec.messages[-1]["tool_calls"][-1]["function"]
    assert final["name"] == "answer" and json.loads(final["arguments"])["text"] == rec.meta["answer"]
    blocks = sum(1 for m in rec.messages for b in m["content"] if b["type"] == "image")
    assert blocks == len(rec.images)
    for m in rec.messages:
        for tc in m.get("tool_calls", []):
            assert None not in json.loads(tc["function"]["arguments"]).values()
    path = write_sft(records, tmp_path, fmt="jsonl")
    rows = load_sft_jsonl(path)
    assert [r["task_id"] for r in rows] == [r.meta["task_id"] for r in records]
    assert all(np.array_equal(a, b) for a, b in zip(rows[0]["images"], rec.images, strict=True))
    with pytest.raises(ValueError, match="unknown format"):
        write_sft(records, tmp_path, fmt="csv")


def test_sft_filters_and_run_folder_replay(tmp_path):
    from m3gym.cli import main

    random_recs = list(sft_records("M3Bench-L1", 6, "random", seed=0))
    kept = list(sft_records("M3Bench-L1", 6, "random", seed=0, success_only=True))
    assert [r.meta["task_id"] for r in kept] == [r.meta["task_id"] for r in random_recs if r.meta["success"]]
    fams = list(sft_records("M3Bench-L1", 6, "oracle", seed=0, families=["tiny_text"]))
    assert fams and {r.meta["family"] for r in fams} == {"tiny_text"}
    assert list(sft_records("M3Bench-L1", 3, "oracle", seed=0, levels=[2])) == []
    run = tmp_path / "run"
    assert main(["eval", "--env", ENV_ID, "--agent", "oracle", "--episodes", "2", "--split", "train",
                 "--out", str(run), "--quiet"]) == 0
    replayed = list(sft_records(agent=str(run)))
    direct = list(sft_records(ENV_ID, 2, "oracle", seed=0))
    assert [r.meta["task_id"] for r in replayed] == [r.meta["task_id"] for r in direct]
    assert [r.messages for r in replayed] == [r.messages for r in direct]
    assert main(["export", "sft", "--env", ENV_ID, "--episodes", "2", "--out", str(tmp_path / "sft")]) == 0
    assert len((tmp_path / "sft" / "sft.jsonl").read_text().splitlines()) == 2


def test_export_verl_without_pyarrow_is_a_precise_error(tmp_path, capsys):
    from importlib.util import find_spec

    from m3gym.cli import main

    if find_spec("pyarrow") is not None:
        pytest.skip("pyarrow is installed here; the parquet export is tested with the verl extra")
    assert main(["export", "verl", "--env", ENV_ID, "--n", "2", "--out", str(tmp_path)]) == 2
    assert "needs pyarrow" in capsys.readouterr().err


# --------------------------------------------------------------------------- pass@k
def test_pass_at_k_by_hand():
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)   # 1 - C(3,2)/C(4,2) = 1 - 3/6
    assert pass_at_k(4, 2, 2) == pytest.approx(5 / 6)  # 1 - C(2,2)/C(4,2)
    assert pass_at_k(4, 0, 4) == 0.0 and pass_at_k(4, 4, 1) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(2, 3, 1)


def test_passk_summary_by_hand():
    recs = [{"env": "E", "task_id": "t/1", "status": "ok", "answer_correct": c} for c in (1, 0, 0, 0)]
    recs += [{"env": "E", "task_id": "t/2", "status": "ok", "answer_correct": True}] * 4
    recs += [{"env": "E", "task_id": "t/3", "status": "infra_error"}]
    s = passk_summary(recs, 4)
    assert s["tasks"] == 3 and s["scored_tasks"] == 2
    assert s["pass@1"] == pytest.approx((0.25 + 1.0) / 2)
    assert s["pass@2"] == pytest.approx((0.5 + 1.0) / 2)
    assert s["mean_success_variance"] == pytest.approx((0.25 * 0.75 + 0.0) / 2)
    assert s["all_right_share"] == 0.5 and s["all_wrong_share"] == 0.0


def test_plan_with_samples_keeps_single_sample_ids_and_seeds():
    one = plan_episodes(EvalConfig(envs=(ENV_ID,), agent="random", episodes=2, split="train"))
    three = plan_episodes(EvalConfig(envs=(ENV_ID,), agent="random", episodes=2, split="train", samples=3))
    assert len(three) == 6
    assert [s.episode_id for s in three[::3]] == [s.episode_id for s in one]
    assert [s.seed for s in three[::3]] == [s.seed for s in one]
    assert three[1].episode_id == one[0].episode_id + ".s1"
    assert len({s.seed for s in three}) == 6 and len({s.task_seed for s in three}) == 2
    assert three[2].seed == sample_seed(episode_seed(0, three[2].task_seed), 2)
    assert "samples" not in EvalConfig(envs=(ENV_ID,), agent="random").identity()


def test_eval_samples_summary(tmp_path):
    from m3gym.eval.runner import run_eval

    res = run_eval(EvalConfig(envs=(ENV_ID,), agent="random", episodes=2, split="train",
                              samples=3), tmp_path / "run")
    s = res.summary["samples"]
    assert s["k"] == 3 and s["tasks"] == 2 and len(res.rows) == 6
    groups = {}
    for r in res.rows:
        groups.setdefault(r["task_id"], []).append(bool(r["answer_correct"]))
    want = np.mean([np.mean(g) for g in groups.values()])
    assert s["pass@1"] == pytest.approx(want)
