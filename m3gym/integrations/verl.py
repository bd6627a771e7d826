"""verl integration: the ``m3gym_agent`` multi-turn agent loop (``pip install .[verl]``).

verl 0.9 runs multi-turn environments as agent loops (``AgentLoopBase``, ``@register(name)``,
``run()`` → ``AgentLoopOutput``). Its per-call ``BaseTool`` cannot hold an episode, so
:class:`M3GymAgentLoop` drives one m3gym episode per sample:

1. reset the env from the row's ``extra_info`` (``env_id`` + ``task_seed``, or ``family`` +
   ``task_seed``, as :func:`m3gym export verl <m3gym.integrations.export.write_verl>` writes; or
   ``env_id`` + ``seed``, the reset seed of ``reset(seed=)``: :mod:`m3gym.integrations.session`);
2. render the system prompt, the tool schemas and the user turn (input images at view
   resolution + task text) with the processor's chat template;
3. each turn: ``server_manager.generate`` on the whole context; the model's tokens go in with
   ``response_mask`` 1; the tool calls are extracted by a parser of verl's registry
   (``ToolParser.get_tool_parser``: ``hermes``, ``qwen3_coder``, ``gpt-oss``, ``glm``, ``kimi``,
   ``gemma4``, ...; ``tool_parser`` below, else ``rollout.multi_turn.format``), the answer from
   an ``<answer>`` block or the ``answer`` tool; the calls of one turn run in parallel as one env
   step; the step's result text and new images go in as one ``tool`` message with
   ``response_mask`` 0;
4. stop on the answer, the env's budget, or ``response_length``.

The prompt is rendered from the env itself (the row's ``raw_prompt`` is not re-used), so it always
matches the task; a row naming an unknown env or a malformed seed raises ``ValueError`` (a data
bug), and so does a prompt longer than ``rollout.prompt_length`` (images cannot be cut). Model
text never raises: no tool call, two answers, a call with an answer, broken JSON, unknown tools
or huge text each come back as a precise error in the next tool message (and count against the
env's budget). A turn in which verl's parser finds no call goes to m3gym's own text parser, so a
malformed Hermes block is reported precisely instead of vanishing.

**Truncation keeps images and image tokens consistent** (verl issues #4050, #3708: a response
cut inside a turn that carried an image). Only the model's own tokens are ever cut; an env segment
(tool result) that does not fit in what is left of ``response_length`` is dropped whole,
together with its images, and the episode ends there (as a truncation: the env scores it
unanswered). ``multi_modal_data["images"]`` therefore always holds exactly the images whose
placeholder tokens are in ``prompt_ids + response_ids``, in order.

``reward_score`` is the episode return under the chosen reward preset; ``extra_fields`` has the
per-step rewards (``turn_scores``), every final metric (``m3gym_<metric>``), the task id and how
the episode ended. An internal env error (a bug, not model output) zeroes ``response_mask`` (no
gradient from that sample), sets ``reward_score`` 0 and ``m3gym_infra_error``.

Agent loop config (``actor_rollout_ref.rollout.agent.agent_loop_config_path``)::

    - name: m3gym_agent
      _target_: m3gym.integrations.verl.M3GymAgentLoop
      reward: m3            # optional: reward preset
      tool_parser: hermes   # optional: a name of verl's ToolParser registry
      env_kwargs: {max_tool_calls: 15, max_rounds: 15}

:class:`M3GymRLDataset` (``data.custom_cls``) is verl's ``RLHFDataset`` for rows that name their
task instead of embedding PNG bytes (``m3gym export verl``'s default): it rebuilds the input
images on load, for agent loops that read them from ``raw_prompt``. ``m3gym_agent`` does not
need it (it rebuilds the task itself).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import uuid4

from omegaconf import OmegaConf
from PIL import Image
from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    register,
)
from verl.experimental.agent_loop.tool_parser import ToolParser
from verl.tools.schemas import OpenAIFunctionToolSchema
from verl.utils.dataset.rl_dataset import RLHFDataset

from m3gym.integrations.datasets import TEXT_ANSWER_RULE, system_message
from m3gym.integrations.export import row_env_kwargs, task_images
from m3gym.integrations.session import DEFAULT_ENV_ID, METRIC_TERMS, EpisodeSession

_ANSWER = re.compile(r"<answer>.*?</answer>", re.DOTALL | re.IGNORECASE)

NATIVE_CALL_RULE = ("Call tools in the format the tool instructions above give (several calls in "
                    "one turn run in parallel); give the final answer alone, as "
                    "<answer>YOUR ANSWER</answer> or with the answer tool.")
"""Last system sentence with a non-Hermes parser: the chat template teaches the call format."""


def _pil(array: Any) -> Image.Image:
    return Image.fromarray(array)


def make_tool_parser(name: str, tokenizer: Any) -> ToolParser:
    """Return parser ``name`` of verl's ``ToolParser`` registry; unknown names raise ValueError."""
    registry = ToolParser._registry
    if name not in registry:
        raise ValueError(f"unknown tool parser {name!r}; verl registers: "
                         f"{', '.join(sorted(registry))}")
    return ToolParser.get_tool_parser(name, tokenizer)


def verl_tool_schemas(schemas: Sequence[Mapping[str, Any]]) -> list[OpenAIFunctionToolSchema]:
    """Return m3gym's OpenAI tool schemas as verl's pydantic schemas (what parsers read).

    Only what verl's schema holds is kept (name, description, each parameter's ``type``,
    ``description`` and ``enum``); a parameter without a ``type`` is typed ``string``.
    """
    out = []
    for schema in schemas:
        fn = schema["function"]
        params = fn.get("parameters") or {}
        props = {key: {"type": prop.get("type", "string"), "description": prop.get("description"),
                       "enum": prop.get("enum")}
                 for key, prop in (params.get("properties") or {}).items()}
        out.append(OpenAIFunctionToolSchema.model_validate({
            "type": "function",
            "function": {"name": fn["name"], "description": fn.get("description") or "",
                         "parameters": {"type": "object", "properties": props,
                                        "required": list(params.get("required") or [])}}}))
    return out


@register("m3gym_agent")
class M3GymAgentLoop(AgentLoopBase):
    """One m3gym episode per sample (see the module docstring).

    Args:
        env_id: env for rows whose ``extra_info`` names none.
        reward: reward preset name, YAML path or dict.
        tool_parser: name in verl's ``ToolParser`` registry; default
            ``rollout.multi_turn.format`` (verl's default: ``hermes``).
        env_kwargs: further ``gym.make`` arguments (``max_tool_calls``, ``tools``, ...).
        *args: what verl passes every agent loop positionally.
        **kwargs: what verl passes every agent loop by name (``trainer_config``,
            ``server_manager``, ``tokenizer``, ``processor``, ...; ``tools`` is ignored: the
            tools are m3gym's).
    """

    def __init__(self, *args: Any, env_id: str = DEFAULT_ENV_ID, reward: Any = "m3",
                 env_kwargs: Mapping[str, Any] | None = None, tools: Any = None,
                 tool_parser: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.env_id = env_id
        self.reward = reward
        self.env_kwargs = dict(env_kwargs or {})
        self.prompt_length = int(self.rollout_config.prompt_length)
        self.response_length = int(self.rollout_config.response_length)
        self.eos_text = self.tokenizer.eos_token or ""
        self.eos_id = self.tokenizer.eos_token_id
        name = tool_parser or OmegaConf.select(self.rollout_config, "multi_turn.format",
                                               default=None) or "hermes"
        self.tool_parser_name = str(name)
        self.tool_parser = make_tool_parser(self.tool_parser_name, self.tokenizer)

    # ------------------------------------------------------------------ rendering
    def _template_owner(self) -> Any:
        return self.processor if self.processor is not None else self.tokenizer

    def _encode(self, text: str, images: Sequence[Image.Image]) -> list[int]:
        """Token ids of rendered text, each image placeholder expanded by the processor."""
        if self.processor is None:
            return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        out = self.processor(text=[text], images=list(images) or None, return_tensors=None,
                             **self._get_mm_processor_kwargs())
        ids = out["input_ids"][0]
        return [int(i) for i in (ids.tolist() if hasattr(ids, "tolist") else ids)]

    def _prompt(self, session: EpisodeSession, schemas: list[dict[str, Any]],
                images: list[Image.Image]) -> list[int]:
        env = session.env
        rule = TEXT_ANSWER_RULE if self.tool_parser_name == "hermes" else NATIVE_CALL_RULE
        system = system_message(env.max_tool_calls, env.max_rounds, rule=rule)
        user = [*({"type": "image", "image": img} for img in images),
                {"type": "text", "text": session.prompt}]
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        text = self._template_owner().apply_chat_template(
            messages, tools=schemas, add_generation_prompt=True, tokenize=False,
            **self.apply_chat_template_kwargs)
        ids = self._encode(text, images)
        if len(ids) > self.prompt_length:
            raise ValueError(f"the m3gym prompt is {len(ids)} tokens, over rollout.prompt_length="
                             f"{self.prompt_length}; raise prompt_length or lower the image size "
                             "(processor max_pixels / env view_size)")
        return ids

    def _env_segment(self, text: str, images: list[Image.Image], ended_with_eos: bool) -> list[int]:
        """Token ids of a tool message after the model's turn (template delta, images expanded)."""
        base = [{"role": "user", "content": "."}, {"role": "assistant", "content": "."}]
        blocks = [{"type": "text", "text": text}, *({"type": "image", "image": img}
                                                    for img in images)]
        owner = self._template_owner()
        prefix = owner.apply_chat_template(base, tokenize=False, **self.apply_chat_template_kwargs)
        full = owner.apply_chat_template(base + [{"role": "tool", "content": blocks}],
                                         tokenize=False, add_generation_prompt=True,
                                         **self.apply_chat_template_kwargs)
        if not full.startswith(prefix):
            raise ValueError("the chat template renders earlier turns differently once a tool "
                             "message follows; cannot append tool results as a token delta")
        cut = prefix.rfind(self.eos_text) if self.eos_text else -1
        tail = prefix[cut + len(self.eos_text):] if cut >= 0 else ""
        delta = ("" if ended_with_eos else self.eos_text) + tail + full[len(prefix):]
        return self._encode(delta, images)

    # ------------------------------------------------------------------ parsing
    async def _action(self, ids: list[int], tools: list[OpenAIFunctionToolSchema]) -> Any:
        """Return the env action of one model turn (``ids`` without EOS), via verl's tool parser.

        Calls found: they run as one step, together with any ``<answer>`` block of the turn
        (m3gym then refuses acting and answering at once). None found (or the parser failed):
        the decoded text itself, for m3gym's parser to find an ``<answer>`` or report precisely
        why nothing was read.
        """
        text = self.tokenizer.decode(ids, skip_special_tokens=False)
        try:
            _, calls = await self.tool_parser.extract_tool_calls(ids, tools)
        except Exception:  # a parser bug on odd model text: m3gym's parser reports instead
            calls = []
        if not calls:
            return text
        action: list[Any] = [{"name": c.name, "arguments": c.arguments,
                              **({"id": c.tool_call_id} if c.tool_call_id else {})}
                             for c in calls]
        answers = _ANSWER.findall(text)
        if answers:
            action.append("".join(answers))
        return action

    # ------------------------------------------------------------------ the loop
    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """Run one episode for the sample in ``kwargs`` (its ``extra_info`` names the task)."""
        extra = kwargs.get("extra_info") or {}
        row = dict(extra) if isinstance(extra, Mapping) else {}
        session = EpisodeSession(row.get("env_id") or self.env_id, reward=self.reward,
                                 **self.env_kwargs)
        session.start(row)
        schemas = session.env.tool_schemas("openai")
        tools = verl_tool_schemas(schemas)
        stop_ids = list(self.tool_parser.stop_token_ids)
        if stop_ids:  # parsers whose models keep going after a call (gemma4, glm, kimi)
            sampling_params = {**sampling_params, "stop_token_ids": sorted(
                set(sampling_params.get("stop_token_ids") or []) | set(stop_ids))}
        images = [_pil(a) for a in session.input_images]
        prompt_ids = self._prompt(session, schemas, images)
        response_ids: list[int] = []
        mask: list[int] = []
        logprobs: list[float] = []
        has_logprobs = True
        turns, ended = 0, ""
        request_id = uuid4().hex
        while not session.done:
            budget = self.response_length - len(response_ids)
            if budget <= 0:
                ended = "response_length"
                break
            out = await self.server_manager.generate(
                request_id=request_id, prompt_ids=prompt_ids + response_ids,
                sampling_params=sampling_params, image_data=images or None)
            ids = [int(t) for t in out.token_ids]
            cut = len(ids) > budget
            ids = ids[:budget]
            response_ids += ids
            mask += [1] * len(ids)
            if out.log_probs is None:
                has_logprobs = False
            else:
                logprobs += [float(x) for x in out.log_probs[:len(ids)]]
            turns += 1
            if cut:
                ended = "response_length"
                break
            ended_with_eos = bool(ids) and ids[-1] == self.eos_id
            result = session.act(await self._action(ids[:-1] if ended_with_eos else ids, tools))
            if session.done:
                break
            new_images = [_pil(a) for a in result.images]
            segment = self._env_segment(result.text, new_images, ended_with_eos)
            if len(response_ids) + len(segment) > self.response_length:
                ended = "response_length"  # dropped whole, with its images: never cut inside
                break
            response_ids += segment
            mask += [0] * len(segment)
            logprobs += [0.0] * len(segment)
            images += new_images
        session.finish()
        return self._output(session, prompt_ids, response_ids, mask,
                            logprobs if has_logprobs else None, images, turns,
                            ended or session.ended_by)

    def _output(self, session: EpisodeSession, prompt_ids: list[int], response_ids: list[int],
                mask: list[int], logprobs: list[float] | None, images: list[Image.Image],
                turns: int, ended: str) -> AgentLoopOutput:
        ret = session.episode_return
        if session.infra_error is not None:
            mask = [0] * len(mask)
        extra: dict[str, Any] = {
            "turn_scores": list(session.rewards), "tool_rewards": [],
            "m3gym_task_id": session.task.task_id if session.task is not None else "",
            "m3gym_ended_by": ended, "m3gym_infra_error": session.infra_error or "",
            "m3gym_return": 0.0 if ret is None else ret,
        }
        for term in METRIC_TERMS:
            value = session.metric(term)
            extra[f"m3gym_{term}"] = float("nan") if value is None else value
        return AgentLoopOutput(
            prompt_ids=prompt_ids, response_ids=response_ids, response_mask=mask,
            response_logprobs=logprobs, multi_modal_data={"images": images} if images else {},
            reward_score=0.0 if ret is None else ret, num_turns=2 * turns + 1,
            metrics=AgentLoopMetrics(), extra_fields=extra)


class M3GymRLDataset(RLHFDataset):
    """verl's ``RLHFDataset`` that rebuilds the input images of rows naming their task.

    Use it as ``data.custom_cls: {path: pkg://m3gym.integrations.verl, name: M3GymRLDataset}``.
    A row without an image column whose prompt holds ``<image>`` marks gets the images of the
    task its ``extra_info`` names (:func:`m3gym.integrations.export.task_images`, byte-identical
    to an embedded export); rows with images are left as they are.
    """

    def _build_messages(self, example: dict, key: str) -> list:
        messages = example[key]
        marked = any(isinstance(m.get("content"), str) and "<image>" in m["content"]
                     for m in messages)
        if marked and not example.get(self.image_key):
            info = example.get("extra_info")
            if not isinstance(info, Mapping):
                raise ValueError("a row with <image> marks and no images must name its task in "
                                 "extra_info (env_id, family, task_seed), as m3gym export verl "
                                 "writes")
            example[self.image_key] = [_pil(a) for a in task_images(info, self._session(info))]
        return super()._build_messages(example, key)

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the envs (each process builds its own on first use)."""
        state = dict(super().__getstate__())
        state.pop("_m3gym_sessions", None)
        return state

    def _session(self, info: Mapping[str, Any]) -> EpisodeSession:
        """One env per (env_id, env_kwargs) of the rows, built on first use."""
        sessions = self.__dict__.setdefault("_m3gym_sessions", {})
        kwargs = row_env_kwargs(info)
        key = (str(info.get("env_id") or DEFAULT_ENV_ID), json.dumps(kwargs, sort_keys=True))
        if key not in sessions:
            sessions[key] = EpisodeSession(key[0], **kwargs)
        return sessions[key]


def validate_verl_config(config: Any) -> dict[str, Any]:
    """Run the config checks verl runs before and while building its workers, without a GPU.

    ``config`` is a composed trainer config (e.g. ``configs/train/verl_grpo_m3gym.yaml`` through
    hydra). Runs verl's ``validate_config``, builds the dataclasses its workers build
    (``HFModelConfig``: loads the model's tokenizer and HF config from
    ``actor_rollout_ref.model.path``, so give a local folder offline; the actor, the reference
    policy when KL needs one, the rollout), looks up the v1 trainer (``trainer.use_v1``; this
    imports TransferQueue) and resolves the agent loop the rollout defaults to. verl's own errors
    propagate; a default agent loop that no entry of ``agent_loop_config_path`` (or verl's
    registry) names raises ``ValueError``. Returns the built objects by name.
    """
    from verl.experimental.agent_loop.agent_loop import _agent_loop_registry
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    use_ref = bool(need_reference_policy(config))
    use_critic = bool(need_critic(config))
    validate_config(config=config, use_reference_policy=use_ref, use_critic=use_critic)
    arr = config.actor_rollout_ref
    built: dict[str, Any] = {"model": omega_conf_to_dataclass(arr.model),
                             "actor": omega_conf_to_dataclass(arr.actor),
                             "rollout": omega_conf_to_dataclass(arr.rollout)}
    if use_ref:  # the worker turns the ref's log_prob_* keys into ppo_* before converting
        ref = OmegaConf.to_container(arr.ref, resolve=True)
        ref["ppo_mini_batch_size"] = arr.actor.ppo_mini_batch_size
        for old, new in (("log_prob_micro_batch_size", "ppo_micro_batch_size"),
                         ("log_prob_micro_batch_size_per_gpu", "ppo_micro_batch_size_per_gpu"),
                         ("log_prob_use_dynamic_bsz", "use_dynamic_bsz"),
                         ("log_prob_max_token_len_per_gpu", "ppo_max_token_len_per_gpu")):
            ref[new] = ref.pop(old, None)
        built["ref"] = omega_conf_to_dataclass(OmegaConf.create(ref))
    if use_critic:
        built["critic"] = omega_conf_to_dataclass(config.critic)
    if OmegaConf.select(config, "trainer.use_v1", default=False):
        from verl.trainer.ppo.v1 import get_trainer_cls

        built["trainer_cls"] = get_trainer_cls(config.trainer.v1.trainer_mode)
    default = OmegaConf.select(arr, "rollout.agent.default_agent_loop", default=None)
    path = OmegaConf.select(arr, "rollout.agent.agent_loop_config_path", default=None)
    names = set(_agent_loop_registry)
    if path:
        entries = OmegaConf.load(path)
        names |= {str(e.name) for e in entries}
    if default and default not in names:
        raise ValueError(f"rollout.agent.default_agent_loop={default!r} is not registered and no "
                         f"entry of agent_loop_config_path={path!r} names it")
    return built
