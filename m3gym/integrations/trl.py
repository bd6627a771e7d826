"""TRL integration: ``GRPOTrainer(environment_factory=...)`` on m3gym tasks (needs ``.[trl]``).

TRL's contract (``trl`` 1.16, "Environments" in its GRPO docs): a zero-argument factory returns an
object whose ``reset(**row)`` gets the dataset row and returns ``None``, a string or content
blocks appended to the user turn; every other public method is a tool whose JSON schema
transformers builds from its type hints and Google-style docstring; ``get_reward()`` is an extra
reward column (weight 1); reward functions receive ``environments=[...]``.

:class:`M3GymToolEnv` has one public method per m3gym tool, **generated from the ToolSpec
catalogue** (:func:`m3gym.tools.default_registry`): same names, parameters, defaults and
descriptions as ``env.tool_schemas("openai")``. Each call is run through the env as one step
(TRL runs the calls of one model turn one after another, so under TRL each call is its own env
step: parallel-call credit of the M3 score needs a harness that sends a turn's calls together).
A call returns the result text plus, for a call that made an image, that image at view
resolution (``{"type": "image", "image": PIL.Image}``), which TRL feeds to the next turn of a VLM.
``answer(text)`` ends the episode; later calls return a clear error. A rollout that stops without
calling ``answer`` ends unanswered (accuracy 0), like a truncated episode.

``get_reward()`` returns the episode return under the chosen reward preset (the same number a
``gym.make`` episode sums to); :func:`reward_functions` gives per-term columns (accuracy, S, V,
M3, overthink, safety) read from the environments — pass them with weight 0
(:func:`logging_weights`) to log them without changing the reward. An internal env error makes
every column ``None`` for that rollout, which TRL ignores (never scored as a wrong answer).

A GRPO group is ``num_generations`` completions of one row: every environment of the group resets
from the same row, hence onto the byte-identical task.

Smoke runs with an untrained model: such a model never emits a tool call by itself.
:func:`steering_sequence_bias` builds ``GRPOConfig(generation_kwargs={"sequence_bias": ...})``
that confines the trainer's own ``generate`` to a set of completions (e.g. a valid and a malformed
call) after a given context; the model's logits choose among them, so rollouts differ, the tools
run, and the gradient flows as in a real run (``tests/test_integration_trl.py``).
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

import numpy as np
from PIL import Image

from m3gym.integrations.session import DEFAULT_ENV_ID, METRIC_TERMS, EpisodeSession, StepResult
from m3gym.tools import default_registry
from m3gym.tools.base import ToolSpec

ContentBlocks = list[dict[str, Any]]

TERM_COLUMNS: dict[str, str] = {"acc": "accuracy", "S": "S", "V": "V", "m3": "m3",
                                "OT": "overthink", "safety": "safety"}
"""Metric key → reward column name (TRL logs ``rewards/m3gym_<name>/mean``)."""


# --------------------------------------------------------------------------- generated tools
def plain_annotation(tp: Any) -> Any:
    """Return ``tp`` without ``Annotated`` metadata (recursively), for transformers' schemas."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return plain_annotation(typing.get_args(tp)[0])
    args = typing.get_args(tp)
    if origin is None or not args:
        return tp
    if origin is typing.Literal:
        return tp
    stripped = tuple(plain_annotation(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return typing.Union[stripped]  # noqa: UP007  (built from a runtime tuple)
    return origin[stripped if len(stripped) > 1 else stripped[0]]


def schema_fields(spec: ToolSpec) -> list[str]:
    """Return the argument names a tool's schema shows (hidden alias-only fields left out)."""
    props = spec.parameters_schema().get("properties", {})
    return [name for name in spec.args_model.model_fields if name in props]


def tool_docstring(spec: ToolSpec) -> str:
    """Return the Google-style docstring of a tool method (description + ``Args:``)."""
    props = spec.parameters_schema().get("properties", {})
    lines = [spec.description, "", "Args:"]
    for name in schema_fields(spec):
        desc = str(props[name].get("description") or name.replace("_", " "))
        lines.append(f"    {name}: {' '.join(desc.split())}")
    lines += ["", "Returns:", "    The result text, and the new image for a call that made one."]
    return "\n".join(lines)


def tool_signature(spec: ToolSpec) -> inspect.Signature:
    """Return the method signature of a tool: ``self`` plus keyword arguments with defaults."""
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for name in schema_fields(spec):
        info = spec.args_model.model_fields[name]
        default = inspect.Parameter.empty if info.is_required() else info.get_default(
            call_default_factory=True)
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=plain_annotation(info.annotation)))
    return inspect.Signature(params, return_annotation=str | list[dict[str, Any]])


def tool_method(spec: ToolSpec) -> Callable[..., str | ContentBlocks]:
    """Return the environment method of one tool, generated from its :class:`ToolSpec`.

    The method takes the tool's arguments as keywords and runs them through the env; arguments
    the model invents reach the tool's validation, which answers with a precise error.
    """
    name = spec.name

    def method(self: M3GymToolEnv, **arguments: Any) -> str | ContentBlocks:
        return self._call_tool(name, arguments)

    signature = tool_signature(spec)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = tool_docstring(spec)
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()
                              if p.name != "self"}
    method.__annotations__["return"] = signature.return_annotation
    return method


def to_pil(array: np.ndarray) -> Image.Image:
    """Return an RGB ``uint8`` view array as a PIL image (the form TRL passes to processors)."""
    return Image.fromarray(np.ascontiguousarray(array))


def result_blocks(result: StepResult) -> str | ContentBlocks:
    """Return a step result as TRL tool content: the text, plus its new images if any."""
    if not result.images:
        return result.text
    blocks: ContentBlocks = [{"type": "text", "text": result.text}]
    blocks += [{"type": "image", "image": to_pil(img)} for img in result.images]
    return blocks


# --------------------------------------------------------------------------- the environment
class M3GymToolEnvBase:
    """An m3gym episode as a TRL environment (tools are added by :func:`tool_env_class`).

    Args:
        env_id: env used for rows that name none.
        reward: reward preset for the episode return (``m3``, ``process``, ``sparse``, ...).
        **env_kwargs: further ``gym.make`` arguments (``max_tool_calls``, ``view_size``, ...).
    """

    def __init__(self, env_id: str = DEFAULT_ENV_ID, reward: Any = "m3",
                 **env_kwargs: Any) -> None:
        self._session = EpisodeSession(env_id, reward=reward, **env_kwargs)
        self._calls: list[tuple[str, dict[str, Any]]] = []

    def reset(self, **row: Any) -> ContentBlocks | None:
        """Start the episode the row names; return what the prompt lacks of the task.

        The row names the task with ``env_id``/``seed`` (the reset seed, as ``reset(seed=)``),
        ``env_id``/``task_seed``, ``family``/``task_seed`` or ``task_id`` (see
        :mod:`m3gym.integrations.session`). Returned blocks: the input images at
        view resolution unless the row carries ``images``, and the task text unless it carries a
        ``prompt`` (rows of :func:`m3gym.integrations.datasets.prompt_dataset` carry both, and
        ``None`` is returned). A row naming an unknown env or a malformed seed raises
        ``ValueError`` (a dataset bug, not model output).
        """
        self._session.start(row)
        self._calls = []
        blocks: ContentBlocks = []
        if "images" not in row:
            blocks += [{"type": "image", "image": to_pil(a)} for a in self._session.input_images]
        if "prompt" not in row:
            blocks.append({"type": "text", "text": self._session.prompt})
        return blocks or None

    def get_reward(self) -> float | None:
        """Return the episode return (ending an unanswered episode first); ``None`` on env error."""
        self._session.finish()
        return self._session.episode_return

    def _call_tool(self, name: str, arguments: Mapping[str, Any]) -> str | ContentBlocks:
        """Run one tool call as one env step; never raises."""
        self._calls.append((name, dict(arguments)))
        return result_blocks(self._session.act({"name": name, "arguments": dict(arguments)}))

    @property
    def session(self) -> EpisodeSession:
        """The underlying :class:`EpisodeSession` (task, rewards, metrics, trace)."""
        return self._session


@cache
def tool_env_class(tools: tuple[str, ...] | None = None) -> type[M3GymToolEnvBase]:
    """Return the environment class with one generated method per tool (``answer`` always).

    Cached per tool set, so every rollout of a run has the same class (TRL keys the
    ``get_reward`` column by the exact class).
    """
    registry = default_registry()
    if tools is not None:
        unknown = sorted(set(tools) - set(registry.names))
        if unknown:
            raise ValueError(f"unknown tools {unknown}; available: {', '.join(registry.names)}")
        registry = registry.subset([*tools, "answer"])
    namespace: dict[str, Any] = {spec.name: tool_method(spec) for spec in registry.specs()}
    namespace["__doc__"] = M3GymToolEnvBase.__doc__
    namespace["__module__"] = __name__
    name = "M3GymToolEnv" if tools is None else "M3GymToolEnv_" + "_".join(sorted(tools))
    return type(name, (M3GymToolEnvBase,), namespace)


M3GymToolEnv = tool_env_class()
"""The TRL environment with every m3gym tool (see the module docstring)."""


def environment_factory(env_id: str = DEFAULT_ENV_ID, reward: Any = "m3",
                        **env_kwargs: Any) -> Callable[[], M3GymToolEnvBase]:
    """Return a zero-argument factory for ``GRPOTrainer(environment_factory=...)``.

    ``env_kwargs["tools"]`` restricts the tool methods (and the env) to those tools.
    """
    tools = env_kwargs.get("tools")
    cls = tool_env_class(tuple(tools) if tools is not None else None)
    cls(env_id, reward=reward, **env_kwargs)  # fail fast on a bad env id or argument

    def factory() -> M3GymToolEnvBase:
        return cls(env_id, reward=reward, **env_kwargs)

    return factory


# --------------------------------------------------------------------------- reward columns
def _term_function(term: str) -> Callable[..., list[float | None]]:
    column = TERM_COLUMNS[term]

    def reward(completions: Sequence[Any] | None = None,
               environments: Sequence[M3GymToolEnvBase] | None = None,
               **kwargs: Any) -> list[float | None]:
        if environments is None:
            raise ValueError("m3gym reward functions need environment_factory (environments=)")
        out: list[float | None] = []
        for env in environments:
            env.session.finish()
            out.append(env.session.metric(term))
        return out

    reward.__name__ = reward.__qualname__ = f"m3gym_{column}"
    reward.__doc__ = f"Per-rollout final metric {term!r} of the m3gym episode (column {column})."
    return reward


def reward_functions(terms: Sequence[str] = METRIC_TERMS) -> list[Callable[..., Any]]:
    """Return one TRL reward function per final metric (accuracy, S, V, M3, overthink, safety).

    Each reads the rollouts' environments (ending unanswered episodes first) and returns the
    metric, or ``None`` for a rollout hit by an internal env error. Overthink is ``OT`` ≥ 0.
    """
    unknown = [t for t in terms if t not in TERM_COLUMNS]
    if unknown:
        raise ValueError(f"unknown reward terms {unknown}; known: {list(TERM_COLUMNS)}")
    return [_term_function(t) for t in terms]


# --------------------------------------------------------------------------- steering (smoke runs)
ASSISTANT_TURN = "<|im_start|>assistant\n"
"""Text that opens every assistant turn in the Qwen chat templates (the first turn's context)."""

AFTER_TOOL_RESULT = "</tool_response><|im_end|>\n<|im_start|>assistant\n"
"""Text before an assistant turn that follows a tool result (Qwen templates)."""


def tool_call_text(name: str, arguments: Mapping[str, Any], end: str = "<|im_end|>") -> str:
    """Return one tool call as a Qwen/Hermes completion: a ``<tool_call>`` JSON block + ``end``."""
    import json

    body = json.dumps({"name": name, "arguments": dict(arguments)})
    return f"<tool_call>\n{body}\n</tool_call>{end}"


def steering_sequence_bias(tokenizer: Any,
                           branches: Sequence[tuple[str | Sequence[int], Sequence[str], float]]
                           ) -> list[list[Any]]:
    """Return a ``sequence_bias`` that confines generation to given completions after a context.

    Each branch is ``(context, completions, bias)``: once the token ids end with ``context`` (a
    text, tokenized alone, or token ids, e.g. the tail of a rendered prompt), every token that
    continues one of ``completions`` (tokenized alone, so their tokens are exactly what is
    generated) gets ``bias`` added to its logit. With a bias far above the model's logit range
    (e.g. 100) the model can only emit one of the completions, and where they part (``"crop"``
    or ``"answer"``, one box or another) its own logits choose, so sampling and the GRPO
    gradient work as usual. A context that ends another one (``AFTER_TOOL_RESULT`` ends with
    ``ASSISTANT_TURN``) adds its bias to the other's: prefer contexts that exclude each other.
    Pass the result as ``GRPOConfig(generation_kwargs={"sequence_bias": ...})``.
    """
    biases: dict[tuple[int, ...], float] = {}
    for context, completions, bias in branches:
        if not completions or bias <= 0:
            raise ValueError(f"branch {context!r}: needs completions and a positive bias")
        ctx = (list(tokenizer(context, add_special_tokens=False)["input_ids"])
               if isinstance(context, str) else [int(i) for i in context])
        if not ctx:
            raise ValueError("a branch context must not be empty")
        for text in completions:
            ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
            for k in range(1, len(ids) + 1):
                biases[tuple(ctx + ids[:k])] = float(bias)
    return [[list(key), value] for key, value in biases.items()]


def logging_weights(functions: Sequence[Any]) -> list[float]:
    """Return ``GRPOConfig.reward_weights`` that log ``functions`` without rewarding them.

    The reward is then ``get_reward()`` alone (weight 1, appended by TRL).
    """
    return [0.0] * len(functions)
