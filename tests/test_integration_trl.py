"""TRL integration with the real trainer, offline on CPU (needs ``pip install .[trl]``).

A tiny randomly initialised Qwen3-VL is built in the test (no download). ``GRPOTrainer.train()``
runs with ``environment_factory`` and ``model.generate`` patched to emit scripted tool calls (the
pattern of TRL's own environment tests); one more run leaves ``generate`` unpatched (random text).
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

if os.environ.get("M3GYM_REQUIRE_EXTRA") == "trl":  # CI's .[trl] venv: never skip silently
    import torch
    import transformers  # noqa: F401
    import trl  # noqa: F401
else:
    trl = pytest.importorskip("trl")
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from m3gym.integrations.datasets import prompt_dataset  # noqa: E402
from m3gym.integrations.tiny_vlm import build_tiny_vlm  # noqa: E402
from m3gym.integrations.trl import (  # noqa: E402
    M3GymToolEnv,
    environment_factory,
    logging_weights,
    reward_functions,
    tool_env_class,
)
from m3gym.tools import default_registry  # noqa: E402

ENV_ID = "M3Bench-TinyText"
TOOLS = ("crop",)


@pytest.fixture(scope="module")
def tiny():
    return build_tiny_vlm(seed=0)


def test_tool_methods_match_the_openai_schemas():
    from transformers.utils import get_json_schema

    env = M3GymToolEnv()
    for spec in default_registry().specs():
        got = get_json_schema(getattr(env, spec.name))["function"]
        want = spec.openai_schema()["function"]
        assert got["name"] == want["name"]
        assert got["description"] == want["description"]
        assert list(got["parameters"]["properties"]) == list(want["parameters"]["properties"])
        assert set(got["parameters"].get("required", [])) == set(want["parameters"].get("required", []))
        for name, prop in want["parameters"]["properties"].items():
            assert got["parameters"]["properties"][name]["description"] == " ".join(prop["description"].split())


def _group_calls(trainer):
    return [list(env._calls) for env in trainer.environments]


def _config(tmp_path, **overrides):
    from trl import GRPOConfig

    kwargs = dict(output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, fp16=False,
                  gradient_checkpointing=False, report_to="none", num_generations=2,
                  per_device_train_batch_size=2, max_steps=2, max_tool_calling_iterations=2,
                  max_completion_length=256, logging_steps=1, learning_rate=1e-2, seed=0,
                  save_strategy="no", beta=0.0)
    kwargs.update(overrides)
    return GRPOConfig(**kwargs)


def _tool_call_text(name, arguments):
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def test_grpo_train_with_scripted_tool_calls(tiny, tmp_path):
    from trl import GRPOTrainer

    base_cls = tool_env_class(TOOLS)
    returns: list[float] = []

    class RecordingEnv(base_cls):  # its own class: TRL logs get_reward under this name
        def get_reward(self):
            value = super().get_reward()
            returns.append(value)
            return value

    dataset = prompt_dataset(ENV_ID, 2, seed=0)
    make_env = environment_factory(ENV_ID, tools=list(TOOLS))
    factory_envs = []

    def factory():
        env = RecordingEnv(ENV_ID, tools=list(TOOLS))
        factory_envs.append(env)
        return env

    assert callable(make_env) and isinstance(make_env(), base_cls)
    terms = reward_functions()
    trainer = GRPOTrainer(model=tiny.model, processing_class=tiny.processor,
                          reward_funcs=terms, train_dataset=dataset, environment_factory=factory,
                          args=_config(tmp_path, reward_weights=logging_weights(terms)))
    tok = tiny.tokenizer
    turns: list[dict] = []
    image_pad = tok.convert_tokens_to_ids("<|image_pad|>")

    def scripted_generate(input_ids, attention_mask=None, **kwargs):
        texts = [tok.decode(row[row != tok.pad_token_id]) for row in input_ids]
        turn = texts[0].count("<tool_response>")
        grids = kwargs.get("image_grid_thw")
        turns.append({"turn": turn, "batch": len(texts), "images": 0 if grids is None else len(grids),
                      "texts": texts,
                      "image_tokens": [int((row == image_pad).sum()) for row in input_ids]})
        outs = []
        for i in range(len(texts)):
            env = trainer.environments[i]
            if turn == 0:
                box = [0, 0, 1000, 1000] if i % 2 == 0 else [900, 900, 100, 100]  # odd: invalid box
                text = _tool_call_text("crop", {"image_index": 0, "bbox_2d": box, "zoom_scale": 1.0})
            else:
                answer = env.session.task.answer.value if i % 2 == 0 else "definitely wrong"
                text = _tool_call_text("answer", {"text": answer})
            outs.append(tok(text + "<|im_end|>", add_special_tokens=False)["input_ids"])
        width = max(len(o) for o in outs)
        padded = [o + [tok.pad_token_id] * (width - len(o)) for o in outs]
        return torch.cat([input_ids, torch.tensor(padded, dtype=input_ids.dtype)], dim=1)

    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.model.generate = scripted_generate
    trainer.train()

    # 2 optimizer steps ran, each on one group of 2 rollouts: call, answer, then the last turn
    # (max_tool_calling_iterations=2 stops the loop)
    assert trainer.state.global_step == 2
    assert [(t["turn"], t["batch"]) for t in turns] == [(0, 2), (1, 2), (2, 2)] * 2
    # the env executed the calls: the even rollout's crop made Image 1, the odd one's failed
    crops = [(env._calls[0], env.session) for env in factory_envs if env._calls]
    assert crops and all(call[0] == "crop" for call, _ in crops)
    traces = [s.env.trace for _, s in crops]
    assert any(t.calls[0].ok and t.calls[0].output_index == 1 for t in traces)
    assert any(not t.calls[0].ok and "bbox_2d" in (t.calls[0].error or "") for t in traces)
    # the image returned by crop reached the next generation turn (one more image per OK crop)
    first, second = turns[0], turns[1]
    assert first["images"] == 2 and second["images"] == 3
    assert "<tool_response>" in second["texts"][0] and "<|vision_start|>" in \
        second["texts"][0].split("<tool_response>", 1)[1]
    assert second["image_tokens"][0] > first["image_tokens"][0]
    assert second["image_tokens"][1] == first["image_tokens"][1]  # failed crop: no image
    # the logged rewards equal the env's episode returns
    logged = [h[f"rewards/{RecordingEnv.__name__}/mean"] for h in trainer.state.log_history
              if f"rewards/{RecordingEnv.__name__}/mean" in h]
    assert len(logged) == 2 and len(returns) == 4
    for step, value in enumerate(logged):
        assert value == pytest.approx(float(np.mean(returns[2 * step:2 * step + 2])), abs=1e-6)
    accs = [h["rewards/m3gym_accuracy/mean"] for h in trainer.state.log_history
            if "rewards/m3gym_accuracy/mean" in h]
    assert accs == [0.5, 0.5]  # the even rollout answered right, the odd one wrong
    # the weights changed, the vision tower's included (the tool image reached the forward pass)
    changed = {n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p.detach())}
    assert changed
    assert any("visual" in n for n in changed)


def test_grpo_group_sees_byte_identical_tasks():
    row = {"env_id": ENV_ID, "family": "tiny_text", "task_seed": 11, "prompt": [], "images": []}
    a, b = M3GymToolEnv(ENV_ID), M3GymToolEnv(ENV_ID)
    a.reset(**row)
    b.reset(**row)
    ta, tb = a.session.task, b.session.task
    assert ta.content_hash() == tb.content_hash()
    assert all(np.array_equal(x, y) for x, y in zip(ta.images, tb.images, strict=True))
    assert a.session.prompt == b.session.prompt


def test_grpo_unpatched_random_model_never_crashes(tiny, tmp_path):
    from trl import GRPOTrainer

    dataset = prompt_dataset(ENV_ID, 1, seed=1)
    terms = reward_functions()
    trainer = GRPOTrainer(model=tiny.model, processing_class=tiny.processor, reward_funcs=terms,
                          train_dataset=dataset,
                          environment_factory=environment_factory(ENV_ID, tools=list(TOOLS)),
                          args=_config(tmp_path, max_steps=1, max_completion_length=48,
                                       reward_weights=logging_weights(terms)))
    trainer.train()
    assert trainer.state.global_step == 1
    for env in trainer.environments:
        assert env.session.done and env.session.infra_error is None
        assert math.isfinite(env.get_reward())


def test_sft_trainer_step_on_exported_trajectories(tiny, tmp_path):
    from datasets import load_dataset
    from trl import SFTConfig, SFTTrainer

    from m3gym.integrations.export import sft_records, write_sft

    records = list(sft_records(ENV_ID, 2, "oracle", seed=0, success_only=True))
    assert len(records) == 2
    path = write_sft(records, tmp_path / "sft", fmt="parquet")
    dataset = load_dataset("parquet", data_files=str(path), split="train")
    row = dataset[0]
    import base64
    import io

    from PIL import Image

    # the input image in the images column, the tool's image inline (TRL fills only user turns)
    assert len(row["images"]) == 1 and np.array_equal(np.asarray(row["images"][0]), records[0].images[0])
    tool_images = [b["base64"] for m in row["messages"] if m["role"] == "tool"
                   for b in m["content"] if b["type"] == "image"]
    assert len(tool_images) == 1
    decoded = np.asarray(Image.open(io.BytesIO(base64.b64decode(tool_images[0]))))
    assert np.array_equal(decoded, records[0].images[1])
    assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert row["messages"][-1]["tool_calls"][0]["function"]["name"] == "answer"
    before = {n: p.detach().clone() for n, p in tiny.model.named_parameters()}
    trainer = SFTTrainer(model=tiny.model, processing_class=tiny.processor, train_dataset=dataset,
                         args=SFTConfig(output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False,
                                        max_steps=1, per_device_train_batch_size=2,
                                        report_to="none", learning_rate=1e-2, save_strategy="no",
                                        max_length=None))
    batch = trainer.data_collator([dataset[0]])
    assert batch["image_grid_thw"].shape[0] == 2  # both images reach the forward pass
    assert int((batch["labels"] != -100).sum()) > 0
    trainer.train()
    assert trainer.state.global_step == 1
    assert any(not torch.equal(before[n], p.detach()) for n, p in tiny.model.named_parameters())
