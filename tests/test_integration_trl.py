"""TRL integration with the real trainer, offline on CPU (needs ``pip install .[trl]``).

A tiny randomly initialised Qwen3-VL is built in the test (no download). ``GRPOTrainer.train()``
runs with ``environment_factory``: once with the trainer's own ``generate`` steered by a
``sequence_bias`` (the policy's logits choose among a valid call, a malformed call and answers),
once with ``model.generate`` patched to emit scripted tool calls (the pattern of TRL's own
environment tests), and once unsteered (random text).
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

from m3gym.integrations.datasets import answer_spec, prompt_dataset  # noqa: E402
from m3gym.integrations.tiny_vlm import build_tiny_vlm  # noqa: E402
from m3gym.integrations.trl import (  # noqa: E402
    AFTER_TOOL_RESULT,
    M3GymToolEnv,
    environment_factory,
    logging_weights,
    reward_functions,
    steering_sequence_bias,
    tool_call_text,
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


BAD_BOX_ERROR = "bbox_2d needs x1 < x2"


def test_steering_bias_chains_each_completion_after_its_context(tiny):
    tok = tiny.tokenizer
    call = tool_call_text("answer", {"text": "A"})
    assert call.startswith("<tool_call>\n{") and call.endswith("</tool_call><|im_end|>")
    bias = steering_sequence_bias(tok, [(AFTER_TOOL_RESULT, [call, call], 50.0), ([7, 8], ["x"], 9.0)])
    ctx = tok(AFTER_TOOL_RESULT, add_special_tokens=False)["input_ids"]
    ids = tok(call, add_special_tokens=False)["input_ids"]
    keys = {tuple(k): v for k, v in bias}
    assert len(keys) == len(bias) == len(ids) + len(tok("x", add_special_tokens=False)["input_ids"])
    assert all(keys[tuple(ctx + ids[:k])] == 50.0 for k in range(1, len(ids) + 1))
    assert keys[(7, 8, *tok("x", add_special_tokens=False)["input_ids"][:1])] == 9.0
    with pytest.raises(ValueError, match="completions and a positive bias"):
        steering_sequence_bias(tok, [(AFTER_TOOL_RESULT, [], 10.0)])
    with pytest.raises(ValueError, match="positive bias"):
        steering_sequence_bias(tok, [(AFTER_TOOL_RESULT, [call], 0.0)])
    with pytest.raises(ValueError, match="context must not be empty"):
        steering_sequence_bias(tok, [([], [call], 10.0)])


def test_grpo_policy_emits_tool_calls_through_the_real_generate(tmp_path):
    """The trainer's own ``generate`` (no replacement), confined by a ``sequence_bias`` to
    tool-call completions: turn 0 a valid crop; after a tool result a malformed crop or an answer
    (the row's or the other row's), chosen by the policy's logits. The env runs the calls, the
    malformed call's error text reaches the next turn, and the reward follows the calls."""
    from trl import GRPOTrainer

    tiny = build_tiny_vlm(seed=0)  # its own model: the module's is trained by the other tests
    tok = tiny.tokenizer
    dataset = prompt_dataset(ENV_ID, 2, seed=0)
    answers = sorted({str(answer_spec(row).value) for row in dataset})
    assert len(answers) == 2
    good = {"image_index": 0, "bbox_2d": [0, 0, 1000, 1000]}
    bad = {"image_index": 0, "bbox_2d": [900, 900, 100, 100]}  # x1 > x2: a malformed call
    rendered = tok.apply_chat_template(dataset[0]["prompt"], add_generation_prompt=True,
                                       tokenize=True)
    rendered = rendered["input_ids"] if hasattr(rendered, "keys") else rendered
    first_turn = list(rendered[-8:])  # the user text's last token, then the assistant header
    assert tok.decode(first_turn).endswith("<|im_end|>\n<|im_start|>assistant\n")
    bias = steering_sequence_bias(tok, [
        (first_turn, [tool_call_text("crop", good)], 100.0),
        (AFTER_TOOL_RESULT, [tool_call_text("crop", bad)]
         + [tool_call_text("answer", {"text": a}) for a in answers], 100.0)])
    rollouts: list[dict] = []

    class SteeredEnv(tool_env_class(TOOLS)):  # records each rollout when TRL reads its reward
        def get_reward(self):
            value = super().get_reward()
            trace = self.session.env.trace
            rollouts.append({"calls": list(self._calls), "return": value,
                             "acc": self.session.metric("acc"), "answer": trace.answer,
                             "errors": [c.error for c in trace.calls if not c.ok]})
            return value

    terms = reward_functions()
    trainer = GRPOTrainer(model=tiny.model, processing_class=tiny.processor, reward_funcs=terms,
                          train_dataset=dataset,
                          environment_factory=lambda: SteeredEnv(ENV_ID, tools=list(TOOLS)),
                          args=_config(tmp_path, num_generations=4, per_device_train_batch_size=4,
                                       max_tool_calling_iterations=3, max_completion_length=512,
                                       reward_weights=logging_weights(terms),
                                       generation_kwargs={"sequence_bias": bias}))
    real_generate = trainer.model.generate
    prompts: list[list[str]] = []

    def observed_generate(*args, **kwargs):  # a pass-through: records the inputs of each turn
        prompts.append([tok.decode(r[r != tok.pad_token_id]) for r in kwargs["input_ids"]])
        return real_generate(*args, **kwargs)

    trainer.model.generate = observed_generate
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()

    assert trainer.state.global_step == 2 and len(rollouts) == 8
    allowed = [("crop", good), ("crop", bad), *[("answer", {"text": a}) for a in answers]]
    for r in rollouts:  # the model emitted only the grammar's calls, a valid crop first
        assert r["calls"][0] == ("crop", good) and len(r["calls"]) >= 2
        assert all(call in allowed for call in r["calls"])
    # the env ran them: malformed crops failed with m3gym's message, answers were scored
    failed = [e for r in rollouts for e in r["errors"]]
    assert failed and all(BAD_BOX_ERROR in e for e in failed)
    assert {r["acc"] for r in rollouts} == {0.0, 1.0}
    # every failed call's error text reached the model in the next turn's prompt
    last_results = [p.rsplit("<tool_response>", 1)[-1] for turn in prompts for p in turn]
    assert sum(BAD_BOX_ERROR in text for text in last_results) == len(failed)
    # the reward follows the calls: within a group (one task), same calls => same return, a
    # right answer beats a wrong one, and a malformed call costs at equal correctness
    compared = 0
    for step in range(2):
        group = rollouts[4 * step:4 * step + 4]
        for a in group:
            for b in group:
                if (a["answer"], len(a["errors"])) == (b["answer"], len(b["errors"])):
                    assert a["return"] == b["return"]
                elif a["acc"] > b["acc"]:
                    assert a["return"] > b["return"]
                    compared += 1
                elif a["acc"] == b["acc"] and len(a["errors"]) < len(b["errors"]):
                    assert a["return"] > b["return"]
        logged = [h[f"rewards/{SteeredEnv.__name__}/mean"] for h in trainer.state.log_history
                  if f"rewards/{SteeredEnv.__name__}/mean" in h][step]
        assert logged == pytest.approx(float(np.mean([r["return"] for r in group])), abs=1e-6)
    assert compared > 0
    # different calls gave different rewards, hence a non-zero advantage and a weight update
    assert any(not torch.equal(before[n], p.detach()) for n, p in trainer.model.named_parameters())


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
