"""verl agent loop without a GPU (needs ``pip install .[verl]``).

``M3GymAgentLoop.run`` runs with the tiny offline Qwen3-VL tokenizer/processor and a stub
``server_manager`` that returns scripted token ids; masks, images, turns, reward and truncation
are checked against an env stepped directly with the same texts.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import gymnasium as gym
import pytest

if os.environ.get("M3GYM_REQUIRE_EXTRA") == "verl":  # CI's .[verl] venv: never skip silently
    import verl.experimental.agent_loop.agent_loop  # noqa: F401
else:
    pytest.importorskip("verl")
    pytest.importorskip("verl.experimental.agent_loop.agent_loop")

from omegaconf import OmegaConf  # noqa: E402
from verl.experimental.agent_loop.agent_loop import DictConfigWrap, _agent_loop_registry  # noqa: E402
from verl.experimental.agent_loop.tool_parser import ToolParser  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

import m3gym  # noqa: E402,F401
from m3gym.integrations.tiny_vlm import build_processor, build_tokenizer  # noqa: E402
from m3gym.integrations.verl import M3GymAgentLoop, M3GymRLDataset, validate_verl_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ENV_ID = "M3Bench-TinyText"
ROW = {"env_id": ENV_ID, "family": "tiny_text", "task_seed": 5}


@pytest.fixture(scope="module")
def tok_proc():
    tok = build_tokenizer()
    return tok, build_processor(tok)


class StubServer:
    """Returns the scripted texts in order (as token ids ending with EOS) and records each call."""

    def __init__(self, tok, texts, logprob=-0.5):
        self.tok, self.texts, self.logprob, self.calls = tok, list(texts), logprob, []

    async def generate(self, request_id, *, prompt_ids, sampling_params, image_data=None, **kw):
        self.calls.append({"prompt_ids": list(prompt_ids), "images": list(image_data or [])})
        text = self.texts[len(self.calls) - 1] if len(self.calls) <= len(self.texts) else "<answer>x</answer>"
        ids = self.tok(text, add_special_tokens=False)["input_ids"] + [self.tok.eos_token_id]
        return TokenOutput(token_ids=ids, log_probs=[self.logprob] * len(ids))


def make_loop(tok, proc, server, response_length=2048, prompt_length=8192, **kw):
    config = OmegaConf.create({
        "actor_rollout_ref": {"rollout": {"prompt_length": prompt_length,
                                          "response_length": response_length}},
        "data": {}})
    return M3GymAgentLoop(trainer_config=DictConfigWrap(config), server_manager=server,
                          tokenizer=tok, processor=proc, dataset_cls=None,
                          data_config=DictConfigWrap(config.data), **kw)


def run(loop, row=ROW):
    return asyncio.run(loop.run({"temperature": 1.0}, extra_info=dict(row), raw_prompt=[]))


def call(name, **arguments):
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def image_tokens(proc, images):
    """Placeholder tokens the processor spends on ``images`` (grid cells / merge²)."""
    if not images:
        return 0
    grids = proc.image_processor(images=images)["image_grid_thw"]
    return int(sum(int(g.prod()) for g in grids) // proc.image_processor.merge_size ** 2)


def direct_return(texts, **env_kwargs):
    env = gym.make(ENV_ID, reward="m3", disable_env_checker=True, **env_kwargs).unwrapped
    env.reset(seed=ROW["task_seed"], options={"family": "tiny_text", "task_seed": ROW["task_seed"]})
    total, done = 0.0, False
    for text in texts:
        _, r, term, trunc, _ = env.step(text)
        total += r
        done = term or trunc
        if done:
            break
    if not done:
        total += env.finish()[0]
    return total, env


def test_registered_as_m3gym_agent():
    assert _agent_loop_registry["m3gym_agent"]["_target_"] == "m3gym.integrations.verl.M3GymAgentLoop"


def test_crop_then_answer_masks_images_reward(tok_proc):
    tok, proc = tok_proc
    env = gym.make(ENV_ID, disable_env_checker=True).unwrapped
    env.reset(seed=5, options={"family": "tiny_text", "task_seed": 5})
    answer = env.task.answer.value
    # zoom 1.25: tiny_text scenes are 3200 x 2400, 1.5 times that exceeds the image size limit
    texts = [call("crop", image_index=0, bbox_2d=[0, 0, 1000, 1000], zoom_scale=1.25),
             f"<answer>{answer}</answer>"]
    server = StubServer(tok, texts)
    out = run(make_loop(tok, proc, server))
    n1 = len(tok(texts[0], add_special_tokens=False)["input_ids"]) + 1
    n2 = len(tok(texts[1], add_special_tokens=False)["input_ids"]) + 1
    seg = len(out.response_ids) - n1 - n2
    assert seg > 0
    assert out.response_mask == [1] * n1 + [0] * seg + [1] * n2
    assert out.response_logprobs == [-0.5] * n1 + [0.0] * seg + [-0.5] * n2
    # two images: the input and the crop; every placeholder token is accounted for
    images = out.multi_modal_data["images"]
    assert len(images) == 2
    pad = tok.convert_tokens_to_ids("<|image_pad|>")
    total = (out.prompt_ids + out.response_ids).count(pad)
    assert total == image_tokens(proc, images)
    assert out.response_ids.count(pad) == image_tokens(proc, images[1:])
    # the second turn saw both images and the whole context
    assert len(server.calls) == 2 and len(server.calls[1]["images"]) == 2
    assert server.calls[1]["prompt_ids"] == out.prompt_ids + out.response_ids[:n1 + seg]
    # reward = the env's episode return for the same actions; metrics in extra_fields
    want, _ = direct_return(texts)
    assert out.reward_score == pytest.approx(want, abs=1e-12)
    assert out.extra_fields["m3gym_acc"] == 1.0 and out.extra_fields["m3gym_ended_by"] == "answer"
    assert out.extra_fields["turn_scores"] and sum(out.extra_fields["turn_scores"]) == pytest.approx(want)
    assert out.num_turns == 5


def test_truncation_drops_an_image_segment_whole(tok_proc):
    tok, proc = tok_proc
    texts = [call("crop", image_index=0, bbox_2d=[0, 0, 1000, 1000], zoom_scale=2.0)]
    full = run(make_loop(tok, proc, StubServer(tok, texts + ["<answer>x</answer>"])))
    n1 = len(tok(texts[0], add_special_tokens=False)["input_ids"]) + 1
    first_segment_end = full.response_mask.index(1, n1)  # where the second model turn starts
    out = run(make_loop(tok, proc, StubServer(tok, texts), response_length=first_segment_end - 1))
    assert out.response_mask == [1] * n1  # the tool segment did not fit: dropped whole
    assert len(out.multi_modal_data["images"]) == 1  # only the input image
    pad = tok.convert_tokens_to_ids("<|image_pad|>")
    assert out.response_ids.count(pad) == 0
    assert out.prompt_ids.count(pad) == image_tokens(proc, out.multi_modal_data["images"])
    assert out.extra_fields["m3gym_ended_by"] == "response_length"
    want, _ = direct_return(texts)  # the crop ran, then the episode ended unanswered
    assert out.reward_score == pytest.approx(want, abs=1e-12)


def test_model_turn_longer_than_budget_is_cut(tok_proc):
    tok, proc = tok_proc
    text = "word " * 200
    out = run(make_loop(tok, proc, StubServer(tok, [text]), response_length=50))
    assert out.response_mask == [1] * 50 and len(out.response_ids) == 50
    assert len(out.multi_modal_data["images"]) == 1
    assert out.extra_fields["m3gym_ended_by"] == "response_length"
    assert out.extra_fields["m3gym_acc"] == 0.0


@pytest.mark.parametrize("text", [
    "I think the answer is obvious.",
    "<answer>A</answer><answer>B</answer>",
    call("crop", image_index=0, bbox_2d=[0, 0, 500, 500]) + "<answer>A</answer>",
    '<tool_call>{"name": "crop", "arguments": {"image_index": 0}} trailing junk</tool_call>',
    call("teleport", image_index=0),
    "x" * 200_000,
])
def test_malformed_model_text_gives_errors_never_exceptions(tok_proc, text):
    tok, proc = tok_proc
    loop = make_loop(tok, proc, StubServer(tok, [text] * 3), env_kwargs={"max_rounds": 3},
                     response_length=10**7)  # the huge text must reach the env, not the cap
    out = run(loop)
    assert out.extra_fields["m3gym_infra_error"] == ""
    assert out.extra_fields["m3gym_ended_by"] in ("budget", "answer")
    segments = [i for i in range(1, len(out.response_mask)) if out.response_mask[i] == 0
                and out.response_mask[i - 1] == 1]
    if out.extra_fields["m3gym_ended_by"] == "budget":
        assert len(segments) == 2  # error feedback after turns 1 and 2, turn 3 hit max_rounds
        feedback = tok.decode(out.response_ids[segments[0]:])
        assert "rror" in feedback
    want, _ = direct_return([tok.decode(tok(text, add_special_tokens=False)["input_ids"])] * 3,
                            max_rounds=3)
    assert out.reward_score == pytest.approx(want, abs=1e-12)


def test_internal_env_error_is_not_scored(tok_proc, monkeypatch):
    tok, proc = tok_proc
    from m3gym.env import M3BenchEnv

    def boom(self, action):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(M3BenchEnv, "step", boom)
    out = run(make_loop(tok, proc, StubServer(tok, ["<answer>x</answer>"])))
    assert "simulated bug" in out.extra_fields["m3gym_infra_error"]
    assert set(out.response_mask) == {0} and out.reward_score == 0.0


def test_config_examples_compose_and_instantiate(tok_proc):
    from pathlib import Path

    import yaml
    from hydra import compose, initialize_config_dir
    from hydra.utils import get_class

    root = Path(__file__).resolve().parents[1] / "configs" / "train"
    with initialize_config_dir(config_dir=str(root), version_base=None):
        cfg = compose(config_name="verl_grpo_m3gym")
    rollout = cfg.actor_rollout_ref.rollout
    assert rollout.agent.default_agent_loop == "m3gym_agent" and rollout.multi_turn.enable
    assert cfg.algorithm.adv_estimator == "grpo" and cfg.data.image_key == "images"
    entries = yaml.safe_load((root / "verl_agent_loop.yaml").read_text())
    (entry,) = entries
    assert entry["name"] == "m3gym_agent" and get_class(entry["_target_"]) is M3GymAgentLoop
    tok, proc = tok_proc
    extra = {k: v for k, v in entry.items() if k not in ("name", "_target_")}
    loop = make_loop(tok, proc, StubServer(tok, ["<answer>x</answer>"]), **extra)
    assert run(loop).extra_fields["m3gym_ended_by"] == "answer"


def test_export_verl_parquet_reads_back(tmp_path, tok_proc):
    import pyarrow.parquet as pq
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from m3gym.cli import main
    from m3gym.integrations.export import compute_score

    assert main(["export", "verl", "--env", ENV_ID, "--n", "3", "--out", str(tmp_path)]) == 0
    rows = pq.read_table(tmp_path / f"{ENV_ID}-train.parquet").to_pylist()
    assert len(rows) == 3
    row = rows[0]
    assert row["agent_name"] == "m3gym_agent" and row["data_source"] == f"m3gym/{ENV_ID}"
    assert row["prompt"][1]["content"].count("<image>") == 1 and "images" not in row
    info = row["extra_info"]
    task = m3gym.make_task(info["family"], info["task_seed"])
    assert row["reward_model"] == {"style": "rule", "ground_truth": task.answer.value}
    assert compute_score(row["data_source"], f"<answer>{task.answer.value}</answer>",
                         row["reward_model"]["ground_truth"], info) == 1.0
    # verl's own dataset class reads it: the agent loop and its extra_info reach run()
    tok, proc = tok_proc
    cfg = OmegaConf.create({"prompt_key": "prompt", "image_key": "images", "max_prompt_length": 8192,
                            "return_raw_chat": True, "filter_overlong_prompts": False})
    ds = RLHFDataset(data_files=[str(tmp_path / f"{ENV_ID}-train.parquet")], tokenizer=tok,
                     config=cfg, processor=proc)
    item = ds[0]
    assert len(ds) == 3 and item["agent_name"] == "m3gym_agent"
    assert item["extra_info"]["task_id"] == info["task_id"]
    assert [m["role"] for m in item["raw_prompt"]] == ["system", "user"]
    out = run(make_loop(tok, proc, StubServer(tok, ["<answer>x</answer>"])), row=item["extra_info"])
    assert out.extra_fields["m3gym_task_id"] == info["task_id"]


# ------------------------------------------------------------------ the shipped trainer config
@pytest.fixture(scope="module")
def tiny_model_dir(tok_proc, tmp_path_factory):
    """A local model folder verl's HFModelConfig loads offline: the tiny Qwen3-VL + tokenizer."""
    from m3gym.integrations.tiny_vlm import build_model

    tok, proc = tok_proc
    path = tmp_path_factory.mktemp("tiny-qwen3-vl")
    tok.save_pretrained(path)
    build_model(tok).save_pretrained(path)
    proc.image_processor.save_pretrained(path)
    return path


def compose_shipped(*overrides):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "configs" / "train"), version_base=None):
        return compose(config_name="verl_grpo_m3gym", overrides=list(overrides))


def test_shipped_config_passes_verls_validation(tiny_model_dir, monkeypatch):
    monkeypatch.chdir(ROOT)  # agent_loop_config_path is relative to the launch folder
    cfg = compose_shipped(f"actor_rollout_ref.model.path={tiny_model_dir}")
    built = validate_verl_config(cfg)
    assert built["model"].architectures == ["Qwen3VLForConditionalGeneration"]
    assert built["rollout"].name == "vllm" and built["rollout"].multi_turn.format == "hermes"
    assert built["trainer_cls"].__name__ == "PPOTrainerSync"  # the v1 trainer imports
    assert "ref" not in built  # GRPO without KL: no reference policy
    # with KL loss the reference policy's micro batch size is checked too
    built = validate_verl_config(compose_shipped(f"actor_rollout_ref.model.path={tiny_model_dir}",
                                                 "actor_rollout_ref.actor.use_kl_loss=true"))
    assert built["ref"].ppo_micro_batch_size_per_gpu == 4
    # the model path follows M3GYM_VERL_MODEL when it is set
    monkeypatch.setenv("M3GYM_VERL_MODEL", str(tiny_model_dir))
    assert compose_shipped().actor_rollout_ref.model.path == str(tiny_model_dir)


@pytest.mark.parametrize("override, match", [
    ("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=null", "log_prob_micro_batch_size"),
    ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=null", "micro_batch_size"),
    ("actor_rollout_ref.rollout.agent.default_agent_loop=nope", "default_agent_loop='nope'"),
])
def test_validation_fails_on_what_verl_rejects(tiny_model_dir, monkeypatch, override, match):
    monkeypatch.chdir(ROOT)
    cfg = compose_shipped(f"actor_rollout_ref.model.path={tiny_model_dir}", override)
    with pytest.raises(Exception, match=match):
        validate_verl_config(cfg)


# ------------------------------------------------------------------ parquet: images by task
def test_rows_refer_to_images_by_task_and_rebuild_exactly(tmp_path, tok_proc):
    import io

    import numpy as np
    import pyarrow.parquet as pq
    from PIL import Image
    from verl.utils.dataset.rl_dataset import get_dataset_class

    from m3gym.integrations.export import task_images, write_verl

    small = write_verl(ENV_ID, 4, tmp_path / "task")
    big = write_verl(ENV_ID, 4, tmp_path / "embed", images="embed")
    assert small.stat().st_size * 100 / 4 <= 1_000_000  # <= 1 MB per 100 rows
    assert big.stat().st_size > 10 * small.stat().st_size  # the PNG bytes were the bulk
    by_task = pq.read_table(small).to_pylist()
    embedded = pq.read_table(big).to_pylist()
    assert [r["prompt"] for r in by_task] == [r["prompt"] for r in embedded]
    tok, proc = tok_proc
    cfg = OmegaConf.create({"prompt_key": "prompt", "image_key": "images", "max_prompt_length": 8192,
                            "return_raw_chat": True, "filter_overlong_prompts": False,
                            "custom_cls": {"path": "pkg://m3gym.integrations.verl",
                                           "name": "M3GymRLDataset"}})
    assert get_dataset_class(cfg) is M3GymRLDataset
    ds = M3GymRLDataset(data_files=[str(small)], tokenizer=tok, config=cfg, processor=proc)
    for i, (row, emb) in enumerate(zip(by_task, embedded)):
        want = [np.asarray(Image.open(io.BytesIO(im["bytes"])).convert("RGB")) for im in emb["images"]]
        got = task_images(row["extra_info"])
        assert len(got) == len(want) == 1
        assert all(np.array_equal(g, w) for g, w in zip(got, want))  # rebuilt byte for byte
        blocks = [b for b in ds[i]["raw_prompt"][1]["content"] if b["type"] == "image"]
        assert [np.asarray(b["image"]) for b in blocks][0].tobytes() == want[0].tobytes()
    assert "_m3gym_sessions" in ds.__dict__ and "_m3gym_sessions" not in ds.__getstate__()
    bad = dict(by_task[0]["extra_info"], task_id="tiny_text/999")
    with pytest.raises(ValueError, match="re-export"):
        task_images(bad)
    with pytest.raises(ValueError, match="env_kwargs"):
        task_images(dict(by_task[0]["extra_info"], env_kwargs="[1, 2]"))
    with pytest.raises(ValueError, match="env_kwargs"):  # ConfigError is a ValueError
        task_images(dict(by_task[0]["extra_info"], env_kwargs="{broken"))


# ------------------------------------------------------------------ verl's tool parser registry
def xml_call(name, **arguments):
    """A Qwen3-Coder / Qwen3.5 style call (verl's ``qwen3_coder`` parser)."""
    params = "".join(f"<parameter={k}>\n{json.dumps(v) if not isinstance(v, str) else v}\n</parameter>\n"
                     for k, v in arguments.items())
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


def test_tool_calls_go_through_verls_parser_registry(tok_proc):
    tok, proc = tok_proc
    env = gym.make(ENV_ID, disable_env_checker=True).unwrapped
    env.reset(seed=5, options={"family": "tiny_text", "task_seed": 5})
    answer = env.task.answer.value
    crop = dict(image_index=0, bbox_2d=[0, 0, 1000, 1000], zoom_scale=1.25)
    hermes = run(make_loop(tok, proc, StubServer(tok, [call("crop", **crop), f"<answer>{answer}</answer>"])))
    xml_texts = [xml_call("crop", **crop), f"<answer>{answer}</answer>"]
    loop = make_loop(tok, proc, StubServer(tok, xml_texts), tool_parser="qwen3_coder")
    assert isinstance(loop.tool_parser, ToolParser._registry["qwen3_coder"])
    xml = run(loop)
    # the system prompt leaves the call format to the chat template (no Hermes JSON rule)
    prompt = tok.decode(loop.server_manager.calls[0]["prompt_ids"])
    assert "Call tools in the format the tool instructions" in prompt
    assert "Call tools with <tool_call>" not in prompt
    # the same crop ran: same images, same reward, same ending
    assert len(xml.multi_modal_data["images"]) == len(hermes.multi_modal_data["images"]) == 2
    assert xml.reward_score == pytest.approx(hermes.reward_score, abs=1e-12)
    assert xml.extra_fields["m3gym_acc"] == 1.0 and xml.extra_fields["m3gym_ended_by"] == "answer"
    # the Hermes parser does not read the XML form: the env reports it, no crop ran
    mixed = run(make_loop(tok, proc, StubServer(tok, xml_texts), tool_parser="hermes"))
    assert len(mixed.multi_modal_data["images"]) == 1
    # the parser comes from rollout.multi_turn.format when the loop config names none
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {
        "prompt_length": 8192, "response_length": 2048, "multi_turn": {"format": "qwen3_coder"}}},
        "data": {}})
    loop = M3GymAgentLoop(trainer_config=DictConfigWrap(config), server_manager=StubServer(tok, []),
                          tokenizer=tok, processor=proc, dataset_cls=None,
                          data_config=DictConfigWrap(config.data))
    assert loop.tool_parser_name == "qwen3_coder"


def test_unknown_tool_parser_names_the_registry(tok_proc):
    tok, proc = tok_proc
    with pytest.raises(ValueError, match="unknown tool parser 'nope'.*hermes"):
        make_loop(tok, proc, StubServer(tok, []), tool_parser="nope")


def test_answer_with_a_parsed_call_is_refused(tok_proc):
    tok, proc = tok_proc
    text = xml_call("crop", image_index=0, bbox_2d=[0, 0, 500, 500]) + "<answer>A</answer>"
    out = run(make_loop(tok, proc, StubServer(tok, [text] * 3), tool_parser="qwen3_coder",
                        env_kwargs={"max_rounds": 3}))
    assert out.extra_fields["m3gym_ended_by"] == "budget"
    first = out.response_mask.index(0)
    assert "same step" in tok.decode(out.response_ids[first:])
