"""Scripted *blind* policies: tool calls that carry no content read from the task.

A blind policy sees what any policy sees (the prompt, the choices, the tool schemas, the budgets)
and, at most, the *shape* of the task's reference trajectory: which tools it calls, in which
steps, on which image indices, with which non-content settings (zoom, cutoff, top_k, ...). This is
what an adversary that learned a family's usual shape would know. It never sees the content
arguments (crop boxes, rotation angles, flip directions, threshold values, search queries, urls)
nor the answer: :func:`blind_shape` strips them, and blind policies receive only that shape.
Content is filled in blindly (whole image, a fixed or random box, a fixed or random angle, the
question text as the query, a made-up url), and the answer is a uniformly random choice.

The reward audit (:mod:`m3gym.audit.reward_audit`) runs these beside the reference agents; a
reward that measures the task pays none of them more than a random agent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from m3gym.agents.heuristic.text import question_of
from m3gym.spec import Task
from m3gym.tools import default_registry

FORM_ARGUMENTS: frozenset[str] = frozenset({
    "zoom_scale", "expand", "cutoff", "mode", "method", "top_k", "max_chars", "width", "height",
    "scale", "radius", "strength", "brightness", "contrast", "sharpness",
})
"""Arguments a blind policy may copy from the reference: settings, not the task's content.

``image_index`` is structure (which image a call reads) and is kept too, remapped to the images
the policy's own calls produced. Every other argument (``bbox_2d``, ``angle``, ``direction``,
``value``, ``query``, ``url``, ``image_ref``, ``label``, ...) is dropped from the shape.
"""

WHOLE_BOX: tuple[int, int, int, int] = (0, 0, 1000, 1000)
"""The whole image on the 0-1000 scale."""

FIXED_BOX: tuple[int, int, int, int] = (400, 400, 600, 600)
"""A fixed central box (4 % of the image) used by the fixed-content policy."""

FIXED_ANGLE = 90.0
"""The fixed rotation angle of the fixed-content policies."""

MADE_UP_URL = "https://blind.example/page"
"""The url blind policies fetch (it names no page of the task)."""

NO_CHOICE_ANSWER = "unknown"
"""What a blind policy answers when the task lists no choices."""

BoxMode = Literal["whole", "fixed", "random"]


@dataclass(frozen=True)
class ShapeCall:
    """One call of a reference *shape*: tool name, image read (reference numbering), settings."""

    name: str
    image_index: int | None
    settings: Mapping[str, Any]


Shape = tuple[tuple[ShapeCall, ...], ...]


def produces_image(name: str) -> bool:
    """Return whether a successful call of tool ``name`` adds an image to the state."""
    registry = default_registry()
    if name not in registry:
        return False
    return registry.resolve(name, {})[0].kind == "visual" or name == "download_image"


def blind_shape(task: Task) -> Shape:
    """Return the task's reference with every content argument removed (see FORM_ARGUMENTS)."""
    steps = []
    for step in task.reference:
        calls = []
        for call in step:
            index = call.arguments.get("image_index")
            settings = {k: v for k, v in call.arguments.items() if k in FORM_ARGUMENTS}
            calls.append(ShapeCall(call.name, None if index is None else int(index), settings))
        steps.append(tuple(calls))
    return tuple(steps)


@dataclass(frozen=True)
class BlindContent:
    """How a blind policy fills content arguments: box and angle mode, never task content."""

    box: BoxMode = "whole"
    random_angle: bool = False

    def arguments(self, name: str, rng: np.random.Generator, question: str) -> dict[str, Any]:
        """Return the content arguments of a call of tool ``name`` (empty if it takes none)."""
        if name == "crop":
            return {"bbox_2d": list(self._box(rng))}
        if name == "rotate":
            angle = float(rng.uniform(-180.0, 180.0)) if self.random_angle else FIXED_ANGLE
            return {"angle": angle}
        if name == "flip" and self.random_angle:
            return {"direction": str(rng.choice(["horizontal", "vertical", "both"]))}
        if name == "web_search":
            return {"query": question[:200] or "image"}
        if name in ("fetch_webpage", "download_image"):
            if self.box == "random":
                return {"url": f"https://site{int(rng.integers(10**6))}.example/"}
            return {"url": MADE_UP_URL}
        return {}

    def _box(self, rng: np.random.Generator) -> tuple[int, int, int, int]:
        if self.box == "whole":
            return WHOLE_BOX
        if self.box == "fixed":
            return FIXED_BOX
        w, h = (int(v) for v in rng.integers(50, 501, size=2))
        x0, y0 = int(rng.integers(0, 1001 - w)), int(rng.integers(0, 1001 - h))
        return (x0, y0, x0 + w, y0 + h)


def random_answer(rng: np.random.Generator, choices: Sequence[str] | None) -> dict[str, Any]:
    """Return an answer call with a uniformly random choice (``NO_CHOICE_ANSWER`` without any)."""
    text = choices[int(rng.integers(len(choices)))] if choices else NO_CHOICE_ANSWER
    return {"name": "answer", "arguments": {"text": text}}


def with_answer(action: Any, text: str | None) -> Any:
    """Return ``action`` with its answer text replaced by ``text`` (unchanged if not an answer).

    The audit uses it to play an episode with a correct and with a wrong choice from the same
    policy state (see :mod:`m3gym.audit.reward_audit`).
    """
    if text is None or not (isinstance(action, dict) and action.get("name") == "answer"):
        return action
    return {"name": "answer", "arguments": {"text": text}}


class ShapePlayer:
    """Replays a shape with blind content, remapping ``image_index`` to the images produced.

    Reference image indices count inputs first, then one per image-producing call in order; the
    player maps each such index (per replay of the shape) to the index the env actually returned
    (Image 0 when that call failed).
    """

    def __init__(self, shape: Shape, num_inputs: int, content: BlindContent,
                 question: str) -> None:
        self.shape = shape
        self.num_inputs = num_inputs
        self.content = content
        self.question = question
        self._cursor = 0
        self._map: dict[int, int] = {}
        self._next_ref = num_inputs
        self._pending: list[int | None] = []

    @property
    def cycle_done(self) -> bool:
        """Whether every step of the current replay has been issued."""
        return self._cursor >= len(self.shape)

    def next_step(self, rng: np.random.Generator) -> list[dict[str, Any]]:
        """Return the next step's calls (starting a new replay after the last step)."""
        if self.cycle_done:
            self._cursor, self._map, self._next_ref = 0, {}, self.num_inputs
        calls, self._pending = [], []
        for call in self.shape[self._cursor]:
            args = dict(call.settings)
            if call.image_index is not None:
                args["image_index"] = self._actual(call.image_index)
            args.update(self.content.arguments(call.name, rng, self.question))
            calls.append({"name": call.name, "arguments": args})
            self._pending.append(self._next_ref if produces_image(call.name) else None)
            self._next_ref += produces_image(call.name)
        self._cursor += 1
        return calls

    def observe(self, info: Mapping[str, Any]) -> None:
        """Record which images the last step's calls produced (from ``info["calls"]``)."""
        for ref, record in zip(self._pending, info.get("calls", ()), strict=False):
            if ref is not None:
                self._map[ref] = record.get("output_index") or 0
        self._pending = []

    def _actual(self, ref: int) -> int:
        return ref if ref < self.num_inputs else self._map.get(ref, 0)

    @property
    def calls_per_cycle(self) -> int:
        """Number of calls in one replay of the shape."""
        return sum(len(step) for step in self.shape)


ShapeSource = Callable[[], Shape]
"""Returns the current episode's blind shape (called by a policy at ``reset``)."""


class BlindPolicy:
    """Base of the blind policies: an rng, the question, the choices and the budgets.

    Subclasses implement :meth:`plan` (called once per step with the step number from 0) and
    return a list of call dicts or an answer call. ``shape_source`` gives the episode's
    :func:`blind_shape` (policies that do not replay a shape ignore it).
    """

    name = "blind"
    forced_answer: str | None = None
    """Set by the audit to replace the random answer's text (its calls stay the same)."""

    def __init__(self, seed: int = 0, shape_source: ShapeSource | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        self.shape_source = shape_source
        self.question = ""
        self.choices: tuple[str, ...] = ()
        self.num_inputs = 1
        self.max_calls = 15
        self.max_rounds = 15
        self.tool_names: tuple[str, ...] = ()
        self.step = 0

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Read what any policy sees at reset: question, choices, images, tools, budgets."""
        self.question = question_of(str(observation.get("text", "")))
        self.choices = tuple(info.get("choices") or ())
        self.num_inputs = len(observation.get("image_indices", ())) or 1
        self.max_calls = int(info.get("max_tool_calls", 15))
        self.max_rounds = int(info.get("max_rounds", 15))
        self.tool_names = tuple(s["function"]["name"] for s in info.get("tool_schemas", ())
                                if s.get("function", {}).get("name") != "answer")
        self.step = 0
        self.start()

    def start(self) -> None:
        """Per-episode set-up of a subclass (after :meth:`reset` read the observation)."""

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Return the next action (see :meth:`plan`)."""
        action = self.plan(info)
        self.step += 1
        return with_answer(action, self.forced_answer)

    def plan(self, info: Mapping[str, Any]) -> Any:
        """Return the action of step ``self.step`` (``info`` is the previous step's info)."""
        raise NotImplementedError

    def answer(self) -> dict[str, Any]:
        """Return a uniformly random answer among the choices."""
        return random_answer(self.rng, self.choices)

    def shape(self) -> Shape:
        """Return the episode's blind shape (empty without a shape source)."""
        return self.shape_source() if self.shape_source is not None else ()


class AnswerNow(BlindPolicy):
    """Answers at once with a random choice: the floor every blind policy is measured against."""

    name = "answer_now"

    def plan(self, info: Mapping[str, Any]) -> Any:
        """Answer immediately."""
        return self.answer()


class SearchQuestion(BlindPolicy):
    """Searches the web with the question text, then answers at random."""

    name = "search_question"

    def plan(self, info: Mapping[str, Any]) -> Any:
        """Step 0: ``web_search(question)``; then answer."""
        if self.step == 0:
            return [{"name": "web_search", "arguments": {"query": self.question[:200] or "image"}}]
        return self.answer()


class WholeCrop(BlindPolicy):
    """Crops every input image whole with a 2x zoom in one step, then answers at random."""

    name = "whole_crop"

    def plan(self, info: Mapping[str, Any]) -> Any:
        """Step 0: one whole-image crop per input image; then answer."""
        if self.step == 0:
            return [{"name": "crop", "arguments": {"image_index": i, "bbox_2d": list(WHOLE_BOX),
                                                   "zoom_scale": 2.0}}
                    for i in range(min(self.num_inputs, self.max_calls))]
        return self.answer()


class EveryTool(BlindPolicy):
    """Calls every tool once, all in one step (as many as the budget allows), then answers."""

    name = "every_tool"

    def plan(self, info: Mapping[str, Any]) -> Any:
        """Step 0: every tool on Image 0 with blind arguments; then answer."""
        if self.step == 0:
            content = BlindContent("whole")
            calls = []
            for name in self.tool_names[:self.max_calls]:
                args: dict[str, Any] = {"image_index": 0} if takes_image(name) else {}
                args.update(content.arguments(name, self.rng, self.question))
                calls.append({"name": name, "arguments": args})
            return calls
        return self.answer()


def takes_image(name: str) -> bool:
    """Return whether tool ``name`` (or an alias) has an ``image_index`` argument."""
    registry = default_registry()
    if name not in registry:
        return False
    return "image_index" in registry.resolve(name, {})[0].args_model.model_fields


class ReferenceShaped(BlindPolicy):
    """Replays the reference's shape with blind content (``content``), then answers at random."""

    def __init__(self, seed: int = 0, shape_source: ShapeSource | None = None,
                 content: BlindContent = BlindContent(), name: str = "ref_whole") -> None:
        super().__init__(seed, shape_source)
        self.content = content
        self.name = name
        self.player: ShapePlayer | None = None

    def start(self) -> None:
        """Load the episode's shape."""
        self.player = ShapePlayer(self.shape(), self.num_inputs, self.content, self.question)

    def plan(self, info: Mapping[str, Any]) -> Any:
        """Replay the shape once, then answer."""
        assert self.player is not None
        if self.step > 0:
            self.player.observe(info)
        if not self.player.shape or self.player.cycle_done:
            return self.answer()
        return self.player.next_step(self.rng)


class BudgetSpam(ReferenceShaped):
    """Replays the shape (whole-image content), fills the call budget with whole crops, answers."""

    def __init__(self, seed: int = 0, shape_source: ShapeSource | None = None) -> None:
        super().__init__(seed, shape_source, BlindContent("whole"), "budget_spam")
        self._filled = False

    def start(self) -> None:
        """Load the shape; the budget is not filled yet."""
        super().start()
        self._filled = False

    def plan(self, info: Mapping[str, Any]) -> Any:
        """Shape steps, then one step of whole crops up to the budget, then answer."""
        assert self.player is not None
        if self.step > 0:
            self.player.observe(info)
        if self.player.shape and not self.player.cycle_done:
            return self.player.next_step(self.rng)
        left = self.max_calls - int(info.get("calls_used", 0))
        if not self._filled and left > 0 and self.step < self.max_rounds - 1:
            self._filled = True
            return [{"name": "crop", "arguments": {"image_index": 0, "bbox_2d": list(WHOLE_BOX),
                                                   "zoom_scale": 1.0}} for _ in range(left)]
        return self.answer()


class NeverAnswer(ReferenceShaped):
    """Replays the shape (whole-image content) again and again and never answers."""

    def __init__(self, seed: int = 0, shape_source: ShapeSource | None = None) -> None:
        super().__init__(seed, shape_source, BlindContent("whole"), "never_answer")

    def plan(self, info: Mapping[str, Any]) -> Any:
        """Return the next shape step, forever (a whole crop when the shape is empty)."""
        assert self.player is not None
        if self.step > 0:
            self.player.observe(info)
        if not self.player.shape:
            return [{"name": "crop", "arguments": {"image_index": 0,
                                                   "bbox_2d": list(WHOLE_BOX)}}]
        return self.player.next_step(self.rng)


BLIND_POLICIES: dict[str, Callable[[int, ShapeSource | None], BlindPolicy]] = {
    "answer_now": lambda seed, src: AnswerNow(seed, src),
    "search_question": lambda seed, src: SearchQuestion(seed, src),
    "whole_crop": lambda seed, src: WholeCrop(seed, src),
    "every_tool": lambda seed, src: EveryTool(seed, src),
    "ref_whole": lambda seed, src: ReferenceShaped(seed, src, BlindContent("whole"), "ref_whole"),
    "ref_fixed": lambda seed, src: ReferenceShaped(seed, src, BlindContent("fixed"), "ref_fixed"),
    "ref_random": lambda seed, src: ReferenceShaped(
        seed, src, BlindContent("random", random_angle=True), "ref_random"),
    "budget_spam": lambda seed, src: BudgetSpam(seed, src),
    "never_answer": lambda seed, src: NeverAnswer(seed, src),
}
"""The blind policy library: name → factory(seed, shape_source)."""


def make_blind_policy(name: str, seed: int = 0,
                      shape_source: ShapeSource | None = None) -> BlindPolicy:
    """Return the blind policy ``name`` (see :data:`BLIND_POLICIES`)."""
    if name not in BLIND_POLICIES:
        raise ValueError(f"unknown blind policy {name!r}; available: {', '.join(BLIND_POLICIES)}")
    return BLIND_POLICIES[name](seed, shape_source)

