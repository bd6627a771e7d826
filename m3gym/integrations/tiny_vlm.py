"""A tiny, randomly initialised, tool-capable Qwen3-VL built offline (for tests and smoke runs).

No download: the tokenizer is a byte-level BPE trained here with ``tokenizers`` on m3gym's own
prompt and tool text plus the chat template, wrapped as ``PreTrainedTokenizerFast`` with the
Qwen3-VL special tokens; the chat template is the exact text TRL ships for ``qwen3_vl`` (so TRL's
``supports_tool_calling`` / ``add_response_schema`` accept it); the image processor is the PIL
``Qwen2VLImageProcessorPil`` with small size bounds (a 64×64 image is a handful of tokens); the
model is ``Qwen3VLForConditionalGeneration`` from a 2-layer config (~160k parameters).

``Qwen3VLProcessor`` insists on a video processor, whose registry needs torchvision (which must
not be installed beside the CPU torch build): :class:`ImageOnlyQwen3VLProcessor` skips that check
when ``video_processor`` is ``None``. Such a processor cannot be ``save_pretrained``-ed: pass the
object, not a path. Needs ``.[trl]`` (transformers ≥ 5.13, trl) or ``.[verl]``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<tool_response>",
    "</tool_response>", "<think>", "</think>",
)
"""Qwen3-VL's special tokens, added to the tiny tokenizer as whole tokens."""


@dataclass
class TinyVLM:
    """The model, its processor and its tokenizer."""

    model: Any
    processor: Any
    tokenizer: Any


FALLBACK_CHAT_TEMPLATE = (
    "{% macro render(content) %}"
    "{% if content is string %}{{ content }}{% else %}{% for block in content %}"
    "{% if block.type == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif block.type == 'text' %}{{ block.text }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{% endmacro %}"
    "{% if messages[0].role == 'system' or tools %}<|im_start|>system\n"
    "{% if messages[0].role == 'system' %}{{ render(messages[0].content) }}{% endif %}"
    "{% if tools %}\n\n# Tools\n<tools>{% for tool in tools %}\n{{ tool | tojson }}"
    "{% endfor %}\n</tools>{% endif %}<|im_end|>\n{% endif %}"
    "{% for message in messages %}"
    "{% if message.role == 'tool' %}<|im_start|>user\n<tool_response>\n"
    "{{ render(message.content) }}\n</tool_response><|im_end|>\n"
    "{% elif message.role != 'system' %}<|im_start|>{{ message.role }}\n"
    "{{ render(message.content) }}"
    "{% for call in message.tool_calls or [] %}\n<tool_call>\n"
    "{{ {'name': call.function.name, 'arguments': call.function.arguments} | tojson }}"
    "\n</tool_call>{% endfor %}<|im_end|>\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""m3gym's own minimal Qwen-style template, used where TRL (and its shipped one) is absent."""


def qwen3_vl_chat_template() -> str:
    """Return TRL's shipped ``qwen3_vl`` chat template, else :data:`FALLBACK_CHAT_TEMPLATE`.

    TRL accepts tool calling only with the template text it ships; verl does not care.
    """
    try:
        return resources.files("trl").joinpath("chat_templates/qwen3_vl.jinja").read_text()
    except (ModuleNotFoundError, FileNotFoundError):
        return FALLBACK_CHAT_TEMPLATE


def _corpus(template: str) -> list[str]:
    from m3gym.agents.prompts import system_prompt
    from m3gym.tools import default_registry

    schemas = default_registry().schemas("openai")
    texts = [template, system_prompt(15, 15, "native"), json.dumps(schemas)]
    texts += [json.dumps({"name": s["function"]["name"], "arguments": {"image_index": 0}})
              for s in schemas]
    texts += ["What is the code printed in the image? Answer with the value exactly as printed.",
              "Image 1 created (64x64). Cropped [0,0,500,500] of Image 0 at zoom 2.",
              "Error: the episode has ended; no further tool calls are run. 0123456789"]
    return texts


def build_tokenizer(vocab_size: int = 1024, template: str | None = None) -> Any:
    """Return a byte-level BPE ``PreTrainedTokenizerFast`` trained locally, with the template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    template = template if template is not None else qwen3_vl_chat_template()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(_corpus(template), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>",
                                   additional_special_tokens=list(SPECIAL_TOKENS[1:]))
    fast.chat_template = template
    return fast


def build_processor(tokenizer: Any, min_pixels: int = 32 * 32, max_pixels: int = 64 * 64) -> Any:
    """Return an image-only Qwen3-VL processor with small image size bounds."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    image_processor = Qwen2VLImageProcessorPil(
        size={"shortest_edge": min_pixels, "longest_edge": max_pixels}, patch_size=16,
        merge_size=2, temporal_patch_size=2)
    return _processor_class()(image_processor=image_processor, tokenizer=tokenizer,
                              video_processor=None, chat_template=tokenizer.chat_template)


def _processor_class() -> type:
    from transformers.models.qwen3_vl.processing_qwen3_vl import Qwen3VLProcessor

    class ImageOnlyQwen3VLProcessor(Qwen3VLProcessor):
        """Qwen3-VL processor without a video processor (see the module docstring)."""

        def check_argument_for_proper_class(self, argument_name: str, argument: Any) -> Any:
            if argument_name == "video_processor" and argument is None:
                return None
            return super().check_argument_for_proper_class(argument_name, argument)

    return ImageOnlyQwen3VLProcessor


def build_model(tokenizer: Any, seed: int = 0, max_positions: int = 4096) -> Any:
    """Return a randomly initialised 2-layer Qwen3-VL (``torch.manual_seed(seed)`` first).

    ``max_positions`` is its context (prompt plus answer, in tokens); the tiny tokenizer spends
    about 5,000 tokens on an m3gym system prompt with the 19 tool schemas.
    """
    import torch
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    ids = {name: tokenizer.convert_tokens_to_ids(tok) for name, tok in (
        ("image_token_id", "<|image_pad|>"), ("video_token_id", "<|video_pad|>"),
        ("vision_start_token_id", "<|vision_start|>"),
        ("vision_end_token_id", "<|vision_end|>"))}
    text = {"vocab_size": len(tokenizer), "hidden_size": 32, "intermediate_size": 64,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 8, "max_position_embeddings": max_positions,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                "mrope_interleaved": True, "mrope_section": [2, 1, 1]},
            "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id}
    vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 4,
              "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2,
              "out_hidden_size": 32, "num_position_embeddings": 64,
              "deepstack_visual_indexes": [1]}
    config = Qwen3VLConfig(text_config=text, vision_config=vision, **ids)
    config.eos_token_id = tokenizer.eos_token_id
    config.pad_token_id = tokenizer.pad_token_id
    torch.manual_seed(seed)
    model = Qwen3VLForConditionalGeneration(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def build_tiny_vlm(seed: int = 0, vocab_size: int = 1024, max_positions: int = 4096) -> TinyVLM:
    """Return the tiny tool-capable Qwen3-VL, its processor and tokenizer (all offline)."""
    tokenizer = build_tokenizer(vocab_size)
    processor = build_processor(tokenizer)
    return TinyVLM(model=build_model(tokenizer, seed, max_positions), processor=processor,
                   tokenizer=tokenizer)


def scripted_sequence_bias(tokenizer: Any, text: str, step_bias: float = 20.0) -> list[list[Any]]:
    """Return a ``sequence_bias`` that makes any tiny model write ``text``, then end its turn.

    For a real-server test of what a model *writes* (broken tool JSON, a call without
    ``arguments``) without training one: the ``k``-th token of ``text`` (then ``<|im_end|>``)
    gets a bias of ``step_bias·(k+1)`` when the ``k`` tokens before it were written, so the
    longest matching prefix always outweighs any shorter one and the tiny model's own logits
    (about ±0.1). The list form ``[[token_ids, bias], ...]`` is what ``generate(sequence_bias=)``
    and a ``transformers serve`` request's ``generation_config`` JSON accept.
    """
    ids = list(tokenizer.encode(text, add_special_tokens=False))
    ids.append(tokenizer.convert_tokens_to_ids("<|im_end|>"))
    return [[ids[:k + 1], step_bias * (k + 1)] for k in range(len(ids))]
