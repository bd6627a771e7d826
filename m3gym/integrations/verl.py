"""verl integration: the ``m3gym_agent`` multi-turn agent loop (``pip install .[verl]``).

verl 0.9 runs multi-turn environments as agent loops (``AgentLoopBase``, ``@register(name)``,
``run()`` → ``AgentLoopOutput``). Its per-call ``BaseTool`` cannot hold an episode, so
:class:`M3GymAgentLoop` drives one m3gym episode per sample:

1. reset the env from the row's ``extra_info`` (``env_id`` + ``task_seed``, or ``family`` +
   ``task_seed``, as :func:`m3gym export verl <m3gym.integrations.export.write_verl>` writes);
2. render the system prompt, the tool schemas and the user turn (input images at view
   resolution + task text) with the processor's chat template;
3. each turn: ``server_manager.generate`` on the whole context; the model's tokens go in with
   ``response_mask`` 1; the decoded text is parsed by m3gym's own parser (Hermes ``<tool_call>``
   blocks, ``<answer>``; the calls of one turn run in parallel) and steps the env; the step's
   result text and new images go in as one ``tool`` message with ``response_mask`` 0;
4. stop on the answer, the env's budget, or ``response_length``.

The prompt is rendered from the env itself (the row's ``raw_prompt`` is not re-used), so it always
matches the task; a row naming an unknown env or a malformed seed raises ``ValueError`` (a data
bug), and so does a prompt longer than ``rollout.prompt_length`` (images cannot be cut). Model
text never raises: no tool call, two answers, a call with an answer, broken JSON, unknown tools
or huge text each come back as a precise error in the next tool message (and count against the
env's budget).

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
      env_kwargs: {max_tool_calls: 15, max_rounds: 15}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import uuid4

from PIL import Image
from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    register,
)

from m3gym.integrations.datasets import TEXT_ANSWER_RULE, system_message
from m3gym.integrations.session import DEFAULT_ENV_ID, METRIC_TERMS, EpisodeSession


def _pil(array: Any) -> Image.Image:
    return Image.fromarray(array)


@register("m3gym_agent")
class M3GymAgentLoop(AgentLoopBase):
    """One m3gym episode per sample (see the module docstring).

    Args:
        env_id: env for rows whose ``extra_info`` names none.
        reward: reward preset name, YAML path or dict.
        env_kwargs: further ``gym.make`` arguments (``max_tool_calls``, ``tools``, ...).
        *args, **kwargs: what verl passes every agent loop (``trainer_config``,
            ``server_manager``, ``tokenizer``, ``processor``, ...; ``tools`` is ignored: the
            tools are m3gym's).
    """

    def __init__(self, *args: Any, env_id: str = DEFAULT_ENV_ID, reward: Any = "m3",
                 env_kwargs: Mapping[str, Any] | None = None, tools: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.env_id = env_id
        self.reward = reward
        self.env_kwargs = dict(env_kwargs or {})
        self.prompt_length = int(self.rollout_config.prompt_length)
        self.response_length = int(self.rollout_config.response_length)
        self.eos_text = self.tokenizer.eos_token or ""
        self.eos_id = self.tokenizer.eos_token_id

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
        system = system_message(env.max_tool_calls, env.max_rounds, rule=TEXT_ANSWER_RULE)
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

    # ------------------------------------------------------------------ the loop
    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """Run one episode for the sample in ``kwargs`` (its ``extra_info`` names the task)."""
        extra = kwargs.get("extra_info") or {}
        row = dict(extra) if isinstance(extra, Mapping) else {}
        session = EpisodeSession(row.get("env_id") or self.env_id, reward=self.reward,
                                 **self.env_kwargs)
        session.start(row)
        schemas = session.env.tool_schemas("openai")
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
            text = self.tokenizer.decode(ids[:-1] if ended_with_eos else ids,
                                         skip_special_tokens=False)
            result = session.act(text)
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
