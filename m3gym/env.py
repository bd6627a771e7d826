"""M3BenchEnv: the Gymnasium environment for multimodal tool-using agents.

An episode is one task (images + question). Each ``step`` takes one tool call or a list of
parallel calls (or an answer) in any form :mod:`m3gym.parsing` accepts, runs the calls on the
indexed image state / offline corpus, and returns their results and new images at the agent's view
resolution. ``answer`` terminates; running past ``max_tool_calls`` or ``max_rounds`` truncates.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from m3gym.cache import LRUCache
from m3gym.deprecation import renamed_names
from m3gym.env_frame import FRAME_SHAPE, EpisodeSnapshot, episode_frame, episode_text
from m3gym.parsing import parse_action
from m3gym.reward import RewardConfig, RewardTracker, load_reward_config
from m3gym.spaces import ImageSpace, PromptText, ToolCallSpace
from m3gym.spec import Task
from m3gym.state import ImageState
from m3gym.tasks.registry import (
    TRAIN_SEED_LIMIT,
    check_difficulty,
    family_names,
    get_family,
    make_task,
)
from m3gym.tools import default_registry
from m3gym.tools.base import ToolContext
from m3gym.tools.code import interface_registry
from m3gym.tools.registry import SchemaFormat, ToolRegistry
from m3gym.trace import Trace, TraceCall, step_text
from m3gym.vector import ObservationSpace
from m3gym.view import derived_view, to_view, view_shape

__getattr__ = renamed_names(__name__, {"TRAIN_SEED_RANGE": (
    "(0, m3gym.tasks.registry.TRAIN_SEED_LIMIT)", lambda: (0, TRAIN_SEED_LIMIT))})
# TRAIN_SEED_RANGE, the old spelling of the boundary, is (0, TRAIN_SEED_LIMIT)

INPUT_VIEW_CACHE = 256
"""How many input-image views an env keeps across resets (keyed by task id and index)."""


def build_prompt(task: Task, view_size: int, show_choices: bool) -> str:
    """Return the reset prompt: question, images and how to address them, how to answer."""
    lines = [task.question.strip(), ""]
    if show_choices and task.choices:
        lines += ["Options: " + " | ".join(task.choices), ""]
    lines.append("Images (address them by index with the image_index argument):")
    for i, img in enumerate(task.images):
        h, w = img.shape[:2]
        vh, vw = view_shape(h, w, view_size)
        shown = "" if (vh, vw) == (h, w) else f", shown to you downscaled to {vw}x{vh}"
        lines.append(f"- Image {i}: {w}x{h} pixels{shown}")
    lines += [
        "",
        "Every visual tool works on the full-resolution image and adds a new image with the next "
        "index. Boxes (bbox_2d) use a 0-1000 scale of the source image, (0,0) = top-left. "
        "Calls sent together in one step run in parallel and may only use images that already "
        "exist. Give the final answer on its own step with the answer tool or "
        "<answer>...</answer>.",
    ]
    return "\n".join(lines)


def level_families(level: int | None, family: str | None,
                   weights: Mapping[str, float] | None,
                   suite: str = "m3bench") -> tuple[list[str], np.ndarray]:
    """Return the families an env draws from (of ``suite``) and their normalized probabilities."""
    if family is not None:
        get_family(family)
        return [family], np.ones(1)
    names = family_names(level, suite)
    if weights:
        unknown = sorted(set(weights) - set(names))
        if unknown:
            raise ValueError(f"family weights name families not in level {level} of suite "
                             f"{suite!r}: {unknown}")
        names = [n for n in names if weights.get(n, 0.0) > 0]
        probs = np.array([float(weights[n]) for n in names])
    else:
        probs = np.ones(len(names))
    if not names:
        raise ValueError(f"no task families for level {level} in suite {suite!r}")
    return names, probs / probs.sum()


def require_knobs(families: Sequence[str]) -> None:
    """Raise ``ValueError`` naming the families that declare no ``difficulty_knobs``."""
    missing = []
    for name in families:
        try:
            get_family(name).difficulty_knobs(0.0)
        except NotImplementedError:
            missing.append(name)
    if missing:
        raise ValueError(f"difficulty/curriculum need difficulty knobs; these families declare "
                         f"none: {', '.join(missing)}")


def scene_options(scenes: str | None, backgrounds: str | os.PathLike[str] | None,
                  allow_outside: bool = False) -> dict[str, Any]:
    """Return the ``make_task`` config keys for ``scenes``/``backgrounds`` (checked now).

    A bad folder raises :class:`~m3gym.tasks.render.photos.PhotoSourceError` at construction,
    not at the first reset; so does a photo that resolves outside it unless ``allow_outside``
    (then recorded in the keys, so every task built from them carries the opt-in).
    """
    if scenes is None and backgrounds is None:
        return {}
    from m3gym.tasks.render.photos import photo_source

    source = photo_source(scenes, backgrounds, allow_outside=allow_outside)
    if source is None:
        return {}
    if backgrounds is not None:
        keys: dict[str, Any] = {"backgrounds": str(Path(backgrounds).expanduser().resolve())}
        if allow_outside:
            keys["allow_outside"] = True
        return keys
    return {"scenes": "photo"}


def default_view_size(families: Sequence[str]) -> int:
    """Return the view size the families are designed for (the largest, if they differ)."""
    return max(get_family(f).view_size for f in families)


class M3BenchEnv(gym.Env[dict, Any]):
    """Tool-using multimodal agent environment (see the module docstring).

    Args:
        level: draw tasks from the families of this level (1-3), or ``None`` for all.
        family: pin one family (overrides ``level``).
        family_weights: per-family draw weights within the level.
        family_config: keyword overrides for the family config dataclass (with ``family``).
        suite: ``"m3bench"`` (the benchmark levels) or ``"classic"`` (the low-resolution
            classic-RL families, the ``glyph_*`` family modules); ignored with ``family``.
        view_size: longest side of images in observations (and of the view ``v_true``
            checkpoints are measured in); tools work at full resolution. ``None``: the families'
            own view size (768 for the benchmark levels, 96 for the classic suite).
        max_tool_calls: tool-call budget; a call beyond it is refused and truncates the episode.
        max_rounds: step budget; reaching it without an answer truncates.
        reward: a preset name (``sparse``, ``process``, ``m3``, ``paper``), a YAML path, a dict or
            a :class:`RewardConfig`.
        show_choices: list the task's categorical choices in the prompt.
        max_images: per-episode bound on the number of images in the image state.
        max_bytes: per-episode bound on the image state's bytes.
        tools: restrict the tool set to these names (``answer`` is always kept).
        observe_images: put the new images (at view resolution) in observations. Wrappers that
            build their own pixel observations turn it off and skip the view downscaling; the
            ``images`` entry is then an empty tuple (``image_indices`` is still filled).
        render_mode: ``"rgb_array"`` for a fixed-size frame of the episode's latest images
            (:data:`~m3gym.env_frame.FRAME_SHAPE` for every id and step, so
            ``RecordVideo`` can record it), ``"ansi"`` for a text description of the state.
        interface: ``"atomic"`` (tool calls, the default), ``"code"`` (``run_python`` + answer:
            the agent writes Python, the atomic tools are functions in it) or ``"both"``; see
            :mod:`m3gym.tools.code` and :mod:`m3gym.sandbox`.
        sandbox: code mode's limits (a :class:`~m3gym.sandbox.SandboxLimits` or its fields as a
            dict) plus optionally ``isolation`` and ``pool_size`` (warm workers kept between
            episodes, 1). ``isolation`` ``"auto"`` (default) or ``"bwrap"`` needs bubblewrap and
            raises :class:`~m3gym.sandbox.IsolationUnavailable` without it; ``"none"`` is the
            explicit opt-out: it warns, and every info then carries ``code_isolation="none"``
            and the final info ``untrusted_reward_terms``.
        difficulty: build every task at this difficulty in ``[0, 1]`` (each family's
            ``difficulty_knobs``; ``family_config`` keys win). ``None`` keeps the families'
            default configs (the frozen levels' distribution).
        curriculum: draw ``(family, difficulty)`` per episode from a
            :class:`~m3gym.curriculum.Curriculum` (an instance, a dict of its arguments —
            ``families`` default to the env's — or a saved state's path).
        curriculum_update: feed each episode's outcome (``answer_correct``) back to the
            curriculum at its end. Off when the curriculum lives elsewhere (an SB3 learner
            process that reads the final infos and pushes its state to the envs).
        scenes: ``"flat"`` (procedural surfaces) or ``"photo"``: every family with
            ``photo_scenes`` draws its object into a photograph (the bundled public-domain set,
            or ``backgrounds``); see :mod:`m3gym.tasks.render.photo_scene`. ``None``: photo when
            ``backgrounds`` is given, else flat.
        backgrounds: a folder of the user's own JPEG/PNG photos to draw scenes into (picked by
            the task seed, decoded once per machine). An empty folder, an unreadable file or a
            photo under 256 px raises :class:`~m3gym.tasks.render.photos.PhotoSourceError`
            here, naming each file; so does a photo that resolves outside the folder (a
            symlink to elsewhere).
        allow_outside: the explicit opt-in that lets ``backgrounds`` photos resolve outside
            their folder (warned about, and recorded in every task's config); the records env
            takes the same word for its image paths.
    """

    metadata = {"render_modes": ["rgb_array", "ansi"], "render_fps": 1,
                "render_frame_shape": FRAME_SHAPE}

    def __init__(
        self,
        level: int | None = None,
        family: str | None = None,
        family_weights: Mapping[str, float] | None = None,
        family_config: Mapping[str, Any] | None = None,
        suite: str = "m3bench",
        view_size: int | None = None,
        max_tool_calls: int = 15,
        max_rounds: int = 15,
        reward: str | Mapping[str, Any] | RewardConfig = "m3",
        show_choices: bool = False,
        max_images: int = 64,
        max_bytes: int = 256 * 1024 * 1024,
        tools: Sequence[str] | None = None,
        observe_images: bool = True,
        render_mode: str | None = None,
        interface: str = "atomic",
        sandbox: Mapping[str, Any] | Any = None,
        difficulty: float | None = None,
        curriculum: Any = None,
        curriculum_update: bool = True,
        scenes: str | None = None,
        backgrounds: str | os.PathLike[str] | None = None,
        allow_outside: bool = False,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}")
        if (view_size is not None and view_size < 32) or max_tool_calls < 1 or max_rounds < 1:
            raise ValueError("view_size >= 32, max_tool_calls >= 1 and max_rounds >= 1 required")
        self.level = level
        self.suite = suite
        self.families, self._family_probs = level_families(level, family, family_weights, suite)
        self.family_config = dict(family_config or {})
        self.scenes = scene_options(scenes, backgrounds, allow_outside)
        self.family_config.update(self.scenes)
        self.difficulty = None if difficulty is None else check_difficulty(difficulty)
        self.curriculum = None
        if curriculum is not None:
            from m3gym.curriculum import make_curriculum

            self.curriculum = make_curriculum(curriculum, self.families)
        self.curriculum_update = bool(curriculum_update)
        self._episode_difficulty: float | None = None
        if self.difficulty is not None or self.curriculum is not None:
            require_knobs(self.curriculum.families if self.curriculum is not None
                          else self.families)
        self.view_size = int(view_size if view_size is not None
                             else default_view_size(self.families))
        self.max_tool_calls = int(max_tool_calls)
        self.max_rounds = int(max_rounds)
        self.reward_config = load_reward_config(reward)
        self.show_choices = bool(show_choices)
        self.max_images = int(max_images)
        self.max_bytes = int(max_bytes)
        self.render_mode = render_mode
        self.observe_images = bool(observe_images)
        registry = default_registry()
        if tools is not None:
            registry = registry.subset([*tools, "answer"])
        self.interface = interface
        self.registry: ToolRegistry = interface_registry(registry, interface)
        self._code = None if interface == "atomic" else make_code_session(registry, sandbox)
        self.action_space = ToolCallSpace(self.registry)
        self.observation_space = ObservationSpace({
            "text": PromptText(),
            "images": spaces.Sequence(ImageSpace(self.view_size)),
            "image_indices": spaces.Sequence(spaces.Discrete(self.max_images)),
        })
        self._schemas: dict[str, list[dict[str, Any]]] = {}
        self.task: Task | None = None
        self.state = ImageState(self.max_images, self.max_bytes)
        self.trace = Trace()
        self._ctx: ToolContext | None = None
        self._tracker: RewardTracker | None = None
        self._views: dict[int, np.ndarray] = {}
        self._input_views = LRUCache(INPUT_VIEW_CACHE)
        # measurements of input images (native ink contrast), shared by the episodes'
        # checkpoint trackers (entries hold weak references: the cache pickles empty)
        self._input_measures = LRUCache(INPUT_VIEW_CACHE)
        self._calls_used = 0
        self._rounds = 0
        self._done = True

    # ------------------------------------------------------------------ public helpers
    @property
    def calls_used(self) -> int:
        """Tool calls counted against ``max_tool_calls`` this episode."""
        return self._calls_used

    @property
    def rounds_used(self) -> int:
        """Steps taken this episode (counted against ``max_rounds``)."""
        return self._rounds

    @property
    def episode_over(self) -> bool:
        """Whether the episode has ended (answered, truncated) or not started yet."""
        return self._done

    @property
    def code_isolation(self) -> str | None:
        """Code mode's isolation (``"bwrap"``, or ``"none"`` when opted out); ``None`` atomic."""
        return None if self._code is None else self._code.isolation

    def tool_schemas(self, fmt: SchemaFormat = "openai") -> list[dict[str, Any]]:
        """Return the tool schemas of this env in the OpenAI or MCP format."""
        if fmt not in self._schemas:
            self._schemas[fmt] = self.registry.schemas(fmt)
        return self._schemas[fmt]

    def view(self, index: int) -> np.ndarray:
        """Return image ``index`` at view resolution (cached; images never change).

        With ``observe_images=False`` (wrappers that only read views on demand), views of a
        task's input images are also kept across resets of the same task (a bounded cache keyed by
        task id), so pooled tasks reset without downscaling again. Observations never share
        buffers across resets, so the cache is off when views go into observations.
        """
        if index not in self._views:
            key = None
            if not self.observe_images and self.task is not None and index < len(self.task.images):
                key = (self.task.task_id, index)
                cached = self._input_views.lookup(key)
                if cached is not None:
                    self._views[index] = cached
                    return cached
            self._views[index] = self._make_view(index)
            if key is not None:
                self._input_views[key] = self._views[index]
        return self._views[index]

    def _make_view(self, index: int) -> np.ndarray:
        """Compute the view of image ``index`` (from its parent's view where the op allows).

        Ops that commute with the downscale (:func:`m3gym.view.derived_view`) apply to the
        parent's view; others downscale the full image. The parent's view is always the source
        for such ops (computed and cached if needed), so a view never depends on which views
        were requested before.
        """
        entry = self.state[index]
        prov = entry.provenance
        if prov.parent is not None:
            hw = view_shape(entry.height, entry.width, self.view_size)
            out = derived_view(prov.op, dict(prov.args), self.view(prov.parent), hw)
            if out is not None:
                return out
        return to_view(entry.array, self.view_size)

    def _observed(self, indices: Sequence[int]) -> tuple[np.ndarray, ...]:
        return tuple(self.view(i) for i in indices) if self.observe_images else ()

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict, dict[str, Any]]:
        """Start an episode; ``options`` may give ``task`` (a Task) or ``family``/``task_seed``."""
        super().reset(seed=seed)
        options = dict(options or {})
        task = options.get("task")
        difficulty = options.get("difficulty")
        if task is None:
            family = options.get("family")
            if difficulty is None:
                difficulty = self.difficulty
            if family is None and self.curriculum is not None:
                family, difficulty = self.curriculum.sample(self.np_random)
            elif family is None:
                idx = int(self.np_random.choice(len(self.families), p=self._family_probs))
                family = self.families[idx]
            task_seed = options.get("task_seed")
            if task_seed is None:
                task_seed = int(self.np_random.integers(0, TRAIN_SEED_LIMIT))
            config = self.family_config if family in self.families else {}
            task = make_task(family, int(task_seed), config, difficulty=difficulty)
        self.task = task
        self._episode_difficulty = None if difficulty is None else float(difficulty)
        self.state = ImageState(self.max_images, self.max_bytes)
        for img in task.images:
            self.state.add_root(img)
        self.trace = Trace()
        self._views = {}
        if self._code is not None:
            self._code.new_episode()
        self._ctx = ToolContext(state=self.state, visible_images=len(self.state),
                                world=task_world(task))
        self._tracker = RewardTracker(self.reward_config, task, view_size=self.view_size,
                                      input_views=self._input_measures)
        self._tracker.start(self.state)
        self._calls_used = 0
        self._rounds = 0
        self._done = False
        self.action_space.num_images = len(self.state)
        indices = tuple(range(len(task.images)))
        obs = {
            "text": build_prompt(task, self.view_size, self.show_choices)
            + (CODE_PROMPT_NOTE if self._code is not None else ""),
            "images": self._observed(indices),
            "image_indices": indices,
        }
        info = {
            "task_id": task.task_id, "family": task.family, "level": task.level,
            "domain": task.domain, "choices": task.choices,
            "tool_schemas": self.tool_schemas("openai"),
            "max_tool_calls": self.max_tool_calls, "max_rounds": self.max_rounds,
            "difficulty": self._episode_difficulty,
        }
        if self.code_isolation is not None:
            info["code_isolation"] = self.code_isolation
        return obs, info

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict[str, Any]]:
        """Run one step: parallel tool calls, or the final answer."""
        if self._done or self.task is None or self._ctx is None or self._tracker is None:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        step_index = self._rounds
        self._rounds += 1
        parsed = parse_action(action, code=self._code is not None)
        for err in parsed.errors:
            self.trace.parse_errors.append((step_index, err))
        records: list[TraceCall] = []
        code_texts: list[str] = []
        code_cells: list[dict[str, Any]] = []
        atomic: list[TraceCall] = []  # records of plain tool calls (code cells report their own)
        over_budget = False
        self._ctx.visible_images = len(self.state)
        used_ids = {c.call_id for c in self.trace.calls}
        for call in parsed.calls:
            call_id = call.id if call.id and call.id not in used_ids else f"c{len(used_ids) + 1}"
            while call_id in used_ids:
                call_id = f"{call_id}_"
            used_ids.add(call_id)
            if self._calls_used >= self.max_tool_calls:
                over_budget = True
                error = f"tool-call budget of {self.max_tool_calls} calls exhausted"
                records.append(TraceCall(
                    step=step_index, call_id=call_id, name=call.name, requested_name=call.name,
                    arguments=dict(call.arguments), ok=False, error=error,
                    result_text=f"Error: {error}"))
                continue
            if self._code is not None and call.name == "run_python":
                cell = self._code.run(call.arguments.get("code"), self._ctx, step_index, call_id,
                                      self.max_tool_calls - self._calls_used)
                self._calls_used += max(1, cell.calls_used)
                over_budget = over_budget or cell.over_budget
                records.extend(cell.calls)
                code_texts.append(f"[{call_id}] run_python:\n{cell.text}")
                code_cells.append({"call_id": call_id, "code": call.arguments.get("code"),
                                   "ok": cell.ok, "error": cell.error,
                                   "text": cell.text, "static_ops": cell.static_ops,
                                   # "records": the old name of "call_ids", kept one release
                                   "call_ids": (ids := [r.call_id for r in cell.calls]),
                                   "records": list(ids)})
                continue
            self._calls_used += 1
            records.append(self.registry.execute(self._ctx, call.name, call.arguments,
                                                 step_index, call_id))
            atomic.append(records[-1])
        self.trace.steps.append(records)
        terminated = parsed.answer is not None
        if terminated:
            self.trace.answer = parsed.answer
            self.trace.answer_step = step_index
        truncated = not terminated and (over_budget or self._rounds >= self.max_rounds)
        self._done = terminated or truncated
        self.action_space.num_images = len(self.state)

        reward, components = self._tracker.step(self.state, self.trace, records,
                                                len(parsed.errors), done=self._done)
        new_indices = tuple(r.output_index for r in records if r.output_index is not None)
        obs = {
            "text": step_text(records, parsed.errors, parsed.answer) if not code_texts
            else "\n".join([*code_texts, step_text(atomic, parsed.errors, parsed.answer)]).strip(),
            "images": self._observed(new_indices),
            "image_indices": new_indices,
        }
        info: dict[str, Any] = {
            "calls": [r.to_dict() for r in records],
            "parse_errors": list(parsed.errors),
            "calls_used": self._calls_used,
            "rounds": self._rounds,
            "reward_components": components,
            "checkpoints_passed": list(self._tracker.last_passed),
        }
        if self._code is not None:
            info["code_cells"] = code_cells
            info["code_isolation"] = self.code_isolation
        if self._done:
            info.update(self._tracker.final_info(self.state, self.trace))
            self._episode_end(info)
        return obs, float(reward), terminated, truncated, info

    def finish(self) -> tuple[float, dict[str, Any]]:
        """End the episode without an answer, as a truncation, for a harness whose agent stopped.

        Trainers (TRL, verl) end a rollout when the model stops calling tools; this books the
        terminal terms (answer = 0) exactly as a truncating ``step`` would, without a step.
        Returns the terminal reward and the final info (``reward_components``, ``metrics``, ...).
        """
        if self._done or self.task is None or self._tracker is None:
            raise RuntimeError("finish() called on a finished episode; call reset() first")
        self._done = True
        reward, components = self._tracker.step(self.state, self.trace, [], 0, done=True)
        info: dict[str, Any] = {"reward_components": components, "calls_used": self._calls_used,
                                "rounds": self._rounds}
        info.update(self._tracker.final_info(self.state, self.trace))
        self._episode_end(info)
        return float(reward), info

    def _episode_end(self, info: dict[str, Any]) -> None:
        """Add the episode's family and difficulty to the final info; feed the curriculum."""
        assert self.task is not None
        info["family"] = self.task.family
        info["difficulty"] = self._episode_difficulty
        if self.code_isolation is not None:
            info["code_isolation"] = self.code_isolation
            if self.code_isolation == "none":
                from m3gym.sandbox.session import UNISOLATED_TERMS

                info["untrusted_reward_terms"] = [t for t in UNISOLATED_TERMS
                                                  if t in info.get("reward_components", {})]
        cur = self.curriculum
        if cur is not None and self.curriculum_update and self._episode_difficulty is not None \
                and self.task.family in cur.families:
            cur.update(self.task.family, self._episode_difficulty,
                       bool(info.get("answer_correct")))

    def curriculum_state(self) -> dict[str, Any] | None:
        """Return the curriculum's ``state_dict`` (``None`` without one); for ``env_method``."""
        return None if self.curriculum is None else self.curriculum.state_dict()

    def set_curriculum_state(self, state: Mapping[str, Any]) -> None:
        """Load a curriculum ``state_dict`` (a learner pushing its state to the envs)."""
        if self.curriculum is None:
            raise RuntimeError("this env has no curriculum")
        self.curriculum.load_state_dict(state)

    def close(self) -> None:
        """Stop code mode's sandbox workers (if any)."""
        if self._code is not None:
            self._code.close()
        super().close()

    def render(self) -> np.ndarray | str | None:
        """Return the state as a frame (``rgb_array``) or as text (``ansi``); see env_frame."""
        if self.render_mode == "rgb_array":
            return episode_frame(self.episode_snapshot())
        if self.render_mode == "ansi":
            return episode_text(self.episode_snapshot())
        return None

    def episode_snapshot(self) -> EpisodeSnapshot:
        """Return what ``render`` shows of the current episode (live references, no copies)."""
        return EpisodeSnapshot(
            task=self.task, state=self.state, trace=self.trace, view=self.view,
            view_size=self.view_size, rounds_used=self.rounds_used, max_rounds=self.max_rounds,
            calls_used=self.calls_used, max_tool_calls=self.max_tool_calls,
            episode_over=self.episode_over)


CODE_PROMPT_NOTE = (
    "\n\nCode mode: act with run_python (or <code>...</code> in text). In the code, images[i] is "
    "Image i as a numpy array; the visual and retrieval tools are functions (e.g. "
    "crop(0, bbox_2d=[x1, y1, x2, y2], zoom_scale=2)) returning the new image; save(array) adds "
    "an image you computed; print() what you want to read."
)


def make_code_session(tools: ToolRegistry, sandbox: Mapping[str, Any] | Any) -> Any:
    """Return the code runner of an env (sandbox limits from a dict or a SandboxLimits)."""
    from m3gym.sandbox.launcher import split_sandbox_options
    from m3gym.sandbox.session import CodeSession

    return CodeSession(tools, *split_sandbox_options(sandbox))


class LazyWorld:
    """A proxy that builds the offline web world on first use (most L1/L2 episodes never search)."""

    def __init__(self, seed: int, split: str) -> None:
        self.seed, self.split = seed, split
        self._world: Any = None

    def resolve(self) -> Any:
        """Return the built world (cached per process by the builder)."""
        if self._world is None:
            from m3gym.web import build_world

            self._world = build_world(self.seed, self.split)
        return self._world

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("seed", "split", "_world"):
            raise AttributeError(name)
        return getattr(self.resolve(), name)


def task_world(task: Task) -> Any:
    """Return the world a task's retrieval tools search: ``metadata["world"]`` or the default.

    A task with ``metadata["knowledge"]`` (a record's pages) gets an
    :class:`~m3gym.web.overlay.OverlayWorld` that adds them to that world.
    """
    spec = task.metadata.get("world") or {}
    world = LazyWorld(int(spec.get("seed", 0)), str(spec.get("split", "train")))
    knowledge = task.metadata.get("knowledge")
    if not knowledge:
        return world
    from m3gym.web.overlay import OverlayWorld, knowledge_pages

    record_id = str(task.metadata.get("record_id", task.task_id))
    return OverlayWorld(world, knowledge_pages(knowledge, record_id))
