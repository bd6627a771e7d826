"""Classic-RL adapter: ``MultiDiscrete`` tool actions with masks, fixed-size pixel observations.

:class:`DiscreteToolWrapper` turns :class:`~m3gym.env.M3BenchEnv` into an environment that
stable-baselines3 (``PPO``, ``RecurrentPPO``, sb3-contrib's ``MaskablePPO``) can train on.

Action: ``MultiDiscrete([n_tools, 3, 14, 6, max_choices])``
=============================================================

=========  ====  ===========================================================================
dimension  size  meaning
=========  ====  ===========================================================================
tool       T     index into ``tools`` (default :data:`DEFAULT_TOOLS`, ``answer`` first)
source     3     0 = latest image, 1 = original (Image 0), 2 = previous (the one before latest)
region     14    crop box (only ``crop`` reads it): 0 = full, 1-4 = quadrants (TL, TR, BL, BR),
                 5-13 = 3x3 grid row by row; zoom makes the crop about the source's size
                 (x1, x2, x3) or, with ``zoom="view"``, about the env's view size (cheaper)
param      6     parameter bin, read modulo the tool's option count (see the table below)
choice     C     ``answer`` only: index into the task's ``choices`` (C = ``max_choices``)
=========  ====  ===========================================================================

Parameter bins (bin ``b`` selects option ``b % len(options)``, so every bin is valid for every
tool and the masks of the five dimensions can stay independent, as ``MaskablePPO`` requires):

============  ====================================================================
tool          options
============  ====================================================================
rotate        ``angle`` 90, 180, 270 (counter-clockwise, ``expand`` true)
flip          ``direction`` horizontal, vertical, both
autocontrast  ``cutoff`` 0, 0.5, 1, 2, 5, 10 (%)
threshold     ``value`` 64, 96, 128, 160, 192, 224 (``mode`` binary)
denoise       ``strength`` 5, 10, 20
blur          ``radius`` 1, 2, 4
edge_detect   ``method`` canny, sobel, simple
others        no parameter (the bin is ignored)
============  ====================================================================

The tools, their default subset and their options are the tool catalogue's ``discrete`` facets
(:class:`~m3gym.tools.base.Discretization`, :func:`supported_tools`, :func:`tool_options`); a tool
added with :func:`m3gym.tools.register_tool` joins when it declares one, and asking for a tool
without one raises ``ValueError`` saying why and how to add it.

Retrieval tools (``web_search``, ``fetch_webpage``, ...) take free text and are not offered: L3
families that need search cannot be solved by this action space (their choices still can be
answered).

Masks (:meth:`DiscreteToolWrapper.action_masks`, flat booleans of ``sum(nvec)``): ``answer`` is
valid except on tool steps with ``answer_at_end``; a visual tool is masked when the env lacks it,
when the tool-call budget or the image/memory budget is spent, or on the wrapper's last step
(which must answer, so every episode ends with an answer); ``previous`` is masked while only one
image exists; choices beyond the task's list are masked. Dimensions that cannot matter in a step
keep a single valid value (``source``/``region``/``param`` when only ``answer`` is possible,
``choice`` when it is not), so they add no entropy and no gradient noise to a masked policy.
Every masked-valid action yields a successful call.

Observation: ``Dict`` (all ``uint8`` images channel-last ``(H, W, C)``, letterboxed to a square)
=============================================================================================

* ``image`` ``(S, S, 3)``: the latest image; ``original`` ``(S, S, 3)``: Image 0 (``S`` =
  ``obs_size``, default 96; omitted with ``observe_original=False``). Made from the full-resolution
  image (integer-stride subsampling, then ``INTER_AREA``; no resampling when the image already
  has the observation size, e.g. a crop zoomed to a 96-px view), cached per image index (images
  never change) and, for the task's input images, across the resets of pooled tasks.
* ``choices`` ``(S, S, 1)`` (``choices_obs="pixels"``): the choice strings rendered one per row,
  so a choice index means something to a pixel policy; with ``choices_obs="chars"`` a flat
  ``float32`` ``max_choices x CHOICE_CHARS x len(CHOICE_ALPHABET)`` one-hot character encoding
  instead (case-folded; characters outside :data:`CHOICE_ALPHABET` map to its last symbol,
  ``?``), so a policy compares characters directly rather than reading them; omitted with
  ``"none"``.
* ``features`` ``float32``: family one-hot (over every family of the env's level and suite, so
  a policy trained on a level runs on any of its families), step fraction, per-tool use counts /
  max steps, last tool one-hot, image count / (max steps + 1), choice count / max choices.

Tasks: every task must have categorical ``choices``; the wrapper raises ``ValueError`` naming the
family otherwise. ``task_pool=N`` draws episodes from a fixed, cached set of ``N`` tasks
(``pool_offset`` = first task seed, ``pool_order`` random or sequential); use seeds outside the
training pool (e.g. ``pool_offset=10**9``) for held-out evaluation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from m3gym.cache import LRUCache
from m3gym.scoring.answer import answer_is_correct
from m3gym.spec import Task
from m3gym.tasks.registry import family_names, make_task
from m3gym.wrappers.actions import (
    DEFAULT_TOOLS,
    N_PARAM_BINS,
    REGION_NAMES,
    SOURCES,
    SUPPORTED_TOOLS,
    TOOL_OPTIONS,
    DecodedAction,
    action_table,
    box_iou,
    check_tools,
    nearest_option,
    options_text,
    region_box,
    supported_tools,
    tool_options,
)
from m3gym.wrappers.observations import (
    CHOICE_ALPHABET,
    CHOICE_CHARS,
    encode_choices,
    letterbox,
    render_choices,
)

__all__ = [
    "CHOICE_ALPHABET", "CHOICE_CHARS", "DEFAULT_TOOLS", "INPUT_MEASURES_PER_TASK",
    "N_PARAM_BINS", "REGION_NAMES", "SOURCES", "SUPPORTED_TOOLS", "TOOL_OPTIONS",
    "DecodedAction", "DiscreteToolWrapper", "action_table", "box_iou", "check_tools",
    "encode_choices", "letterbox", "nearest_option", "options_text", "region_box",
    "render_choices", "supported_tools", "tool_options",
]

INPUT_MEASURES_PER_TASK = 4
"""Entries of the env's input ``v_true`` measurement cache kept per cached pool task."""


class DiscreteToolWrapper(gym.Wrapper):
    """``MultiDiscrete`` tool actions, action masks and fixed-size pixel observations.

    See the module docstring for the action table, masks and observation layout.

    Args:
        env: an :class:`~m3gym.env.M3BenchEnv` (possibly wrapped).
        obs_size: side of the square ``uint8`` image observations.
        tools: the tool subset of the ``tool`` dimension (``answer`` first; from
            :func:`supported_tools`: the catalogue's tools with a ``discrete`` facet).
        max_steps: steps per episode (the last one must answer); capped by the env's budgets.
        max_choices: size of the ``choice`` dimension (tasks with more choices are refused).
        zoom: ``"source"`` (crops zoomed to about the source's size) or ``"view"`` (to about the
            env's view size: the same detail in the observation, cheaper).
        choices_obs: ``"pixels"`` (render the choices into the ``choices`` image), ``"chars"``
            (one-hot characters, see :func:`encode_choices`) or ``"none"``.
        observe_original: include Image 0 as the ``original`` observation (off halves the CNN
            work when the latest image is all a policy needs, as in the classic suite).
        answer_at_end: fixed horizon: ``answer`` is masked while a tool call is still possible,
            so every episode is ``max_steps - 1`` tool calls, then the answer (the classic
            suite's default with ``max_steps=2``: one call, then the answer).
        task_pool: draw episodes from this many fixed, cached tasks (``None``: a fresh task per
            episode, drawn by the env).
        pool_offset: task seed of the first pool task.
        pool_order: ``"random"`` (seeded by ``reset(seed=...)``) or ``"sequential"``.
        cache_size: how many pool tasks to keep in memory.
    """

    def __init__(
        self,
        env: gym.Env,
        obs_size: int = 96,
        tools: Sequence[str] = DEFAULT_TOOLS,
        max_steps: int = 6,
        max_choices: int = 8,
        zoom: str = "source",
        choices_obs: str = "pixels",
        observe_original: bool = True,
        answer_at_end: bool = False,
        task_pool: int | None = None,
        pool_offset: int = 0,
        pool_order: str = "random",
        cache_size: int = 64,
    ) -> None:
        super().__init__(env)
        base = env.unwrapped
        tools = check_tools(tools)
        if zoom not in ("source", "view"):
            raise ValueError("zoom must be 'source' or 'view'")
        if choices_obs not in ("pixels", "chars", "none"):
            raise ValueError("choices_obs must be 'pixels', 'chars' or 'none'")
        if pool_order not in ("random", "sequential"):
            raise ValueError("pool_order must be 'random' or 'sequential'")
        if obs_size < 36:
            raise ValueError("obs_size must be >= 36 (SB3's NatureCNN needs it)")
        if max_steps < 1 or max_choices < 2:
            raise ValueError("max_steps >= 1 and max_choices >= 2 required")
        self.tools = tools
        self.obs_size = int(obs_size)
        self.max_steps = int(min(max_steps, base.max_rounds, base.max_tool_calls + 1))
        self.max_choices = int(max_choices)
        self.zoom = zoom
        self.choices_obs = choices_obs
        self.observe_original = bool(observe_original)
        self.answer_at_end = bool(answer_at_end)
        # the family one-hot spans the whole level (of the env's suite), not only the families
        # this env draws: a policy trained on a level can be evaluated on one of its families
        self.families: list[str] = (family_names(base.level, base.suite)
                                    if base.level is not None else list(base.families))
        self._available = np.array([t == "answer" or t in base.registry for t in tools])
        self._crop_index: int | None = tools.index("crop") if "crop" in tools else None
        self.action_space = spaces.MultiDiscrete(
            [len(tools), len(SOURCES), len(REGION_NAMES), N_PARAM_BINS, self.max_choices])
        self._nvec: tuple[int, ...] = tuple(int(n) for n in self.action_space.nvec)
        self._nvec_offsets = np.concatenate([[0], np.cumsum(self.action_space.nvec)])
        n_feat = self.feature_size
        obs_spaces: dict[str, spaces.Space] = {
            "image": spaces.Box(0, 255, (self.obs_size, self.obs_size, 3), np.uint8)}
        if self.observe_original:
            obs_spaces["original"] = spaces.Box(0, 255, (self.obs_size, self.obs_size, 3),
                                                np.uint8)
        if choices_obs == "pixels":
            obs_spaces["choices"] = spaces.Box(0, 255, (self.obs_size, self.obs_size, 1),
                                               np.uint8)
        elif choices_obs == "chars":
            # a flat float32 vector: what SB3's MultiInputPolicy flattens without warnings
            obs_spaces["choices"] = spaces.Box(
                0.0, 1.0, (self.max_choices * CHOICE_CHARS * len(CHOICE_ALPHABET),), np.float32)
        obs_spaces["features"] = spaces.Box(0.0, 1.0, (n_feat,), np.float32)
        self.observation_space = spaces.Dict(obs_spaces)
        # task pool
        self.task_pool = task_pool
        self.pool_offset = int(pool_offset)
        self.pool_order = pool_order
        self.cache_size = int(cache_size)
        self._pool_families: list[str] = []
        if task_pool is not None:
            if task_pool < 1:
                raise ValueError("task_pool must be >= 1")
            if getattr(base, "curriculum", None) is not None:
                raise ValueError("task_pool and curriculum exclude each other: a pool is a fixed "
                                 "set of tasks, a curriculum chooses family and difficulty")
            rng = np.random.default_rng(self.pool_offset)
            picks = rng.choice(len(base.families), size=int(task_pool), p=base._family_probs)
            self._pool_families = [base.families[int(i)] for i in picks]
        self._pool_rng = np.random.default_rng(0)
        self._pool_cursor = 0
        self._task_cache = LRUCache(self.cache_size)
        self._input_obs = LRUCache(self.cache_size)
        # the env's measurements of input images (a few per task: one per image and
        # evidence) must cover the cached pool too, or pooled resets measure them again
        measures = getattr(base, "_input_measures", None)
        if task_pool is not None and isinstance(measures, LRUCache):
            measures.maxsize = max(measures.maxsize, INPUT_MEASURES_PER_TASK * self.cache_size)
        self._mask_key: tuple[Any, ...] | None = None
        self._mask = np.ones(int(self._nvec_offsets[-1]), bool)
        # episode state
        self._obs_cache: dict[int, np.ndarray] = {}
        self._choices: tuple[str, ...] = ()
        self._choices_panel = np.zeros((self.obs_size, self.obs_size, 1), np.uint8)
        self._steps = 0
        self._tool_counts = np.zeros(len(tools), np.float32)
        self._last_tool = -1

    # ------------------------------------------------------------------ layout helpers
    @property
    def feature_size(self) -> int:
        """Length of the ``features`` vector."""
        return len(self.families) + 1 + 2 * len(self.tools) + 2

    def pool_task(self, k: int) -> Task:
        """Return pool task ``k`` (cached, LRU)."""
        cached = self._task_cache.lookup(k)
        if cached is not None:
            return cached
        base = self.env.unwrapped
        family = self._pool_families[k]
        config = base.family_config if family in base.families else {}
        task = make_task(family, self.pool_offset + k, config,
                         difficulty=getattr(base, "difficulty", None))
        self._task_cache[k] = task
        return task

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict]:
        """Start an episode (from the task pool when configured)."""
        options = dict(options or {})
        if self.task_pool is not None and "task" not in options:
            if seed is not None:
                self._pool_rng = np.random.default_rng(seed)
                self._pool_cursor = 0
            if self.pool_order == "sequential":
                k = self._pool_cursor % self.task_pool
                self._pool_cursor += 1
            else:
                k = int(self._pool_rng.integers(self.task_pool))
            options["task"] = self.pool_task(k)
            options.setdefault("difficulty", getattr(self.env.unwrapped, "difficulty", None))
        _, info = self.env.reset(seed=seed, options=options)
        task: Task = self.env.unwrapped.task
        if not task.choices:
            raise ValueError(
                f"task family {task.family!r} has no categorical choices; the discrete wrapper "
                "needs tasks with choices (pick a level/family whose tasks list them)")
        if len(task.choices) > self.max_choices:
            raise ValueError(f"task family {task.family!r} has {len(task.choices)} choices, more "
                             f"than max_choices={self.max_choices}")
        self._choices = tuple(task.choices)
        self._obs_cache = {}
        self._mask_key = None
        if self.choices_obs == "pixels":
            self._choices_panel = render_choices(self._choices, self.obs_size, self.max_choices)
        elif self.choices_obs == "chars":
            self._choices_panel = encode_choices(self._choices, self.max_choices)
        self._steps = 0
        self._tool_counts[:] = 0
        self._last_tool = -1
        info = {k: v for k, v in info.items() if k != "tool_schemas"}
        info["action_mask"] = self.action_masks()
        return self.observation(), info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]:
        """Decode the ``MultiDiscrete`` action, run it, and return the pixel observation."""
        decoded = self.decode(action)
        call = self.to_call(decoded)
        _, reward, terminated, truncated, info = self.env.step(call)
        self._mask_key = None
        self._steps += 1
        tool_i = self.tools.index(decoded.tool)
        self._tool_counts[tool_i] += 1
        self._last_tool = tool_i
        if not (terminated or truncated) and self._steps >= self.max_steps:
            truncated = True  # unreachable with masks (last step must answer); kept for PPO
        info = dict(info)
        info["decoded_action"] = decoded.describe()
        task = self.env.unwrapped.task
        info["task_id"], info["family"] = task.task_id, task.family
        info["action_mask"] = self.action_masks()
        return self.observation(), float(reward), bool(terminated), bool(truncated), info

    # ------------------------------------------------------------------ actions
    def decode(self, action: Any) -> DecodedAction:
        """Return the decoded form of a ``MultiDiscrete`` action (values clipped to range)."""
        values = np.asarray(action).reshape(-1).tolist()
        if len(values) != 5:
            raise ValueError(f"action must have 5 entries, got {len(values)}")
        t, src, reg, par, ch = (min(max(int(v), 0), n - 1)
                                for v, n in zip(values, self._nvec))
        return DecodedAction(self.tools[t], src, reg, par, ch)

    def source_index(self, source: int) -> int:
        """Return the image index a ``source`` value refers to now."""
        n = len(self.env.unwrapped.state)
        if source == 0:
            return n - 1
        if source == 1:
            return 0
        return max(0, n - 2)

    def crop_zoom(self, width: int, height: int, fraction: float) -> float:
        """Return the zoom of a crop that keeps ``fraction`` of each side of a ``w x h`` image."""
        if self.zoom == "source":
            zoom = 1.0 / fraction
        else:
            side = max(width, height) * fraction
            zoom = self.env.unwrapped.view_size / side
        return float(np.clip(round(zoom, 3), 1.0, 5.0))

    def to_call(self, decoded: DecodedAction) -> dict[str, Any]:
        """Return the env call (a dict) of a decoded action."""
        if decoded.tool == "answer":
            choice = self._choices[min(decoded.choice, len(self._choices) - 1)]
            return {"name": "answer", "arguments": {"text": choice}}
        index = self.source_index(decoded.source)
        args: dict[str, Any] = {"image_index": index}
        if decoded.tool == "crop":
            box, fraction = region_box(decoded.region)
            h, w = self.env.unwrapped.state[index].array.shape[:2]
            args.update(bbox_2d=box, zoom_scale=self.crop_zoom(w, h, fraction))
        elif options := tool_options(decoded.tool):
            args.update(options[decoded.param % len(options)])
        return {"name": decoded.tool, "arguments": args}

    def expert_action(self) -> np.ndarray:
        """Return the ``MultiDiscrete`` action closest to the task's reference at this step.

        Tool step ``k`` maps the ``k``-th reference call (in step order) to the discrete space:
        its tool, the source holding its input image, for a crop the region whose box overlaps
        the reference box most (IoU on the 0-1000 scale), for a tool with options the nearest
        option (angles modulo 360). When the reference is used up, a tool step is not possible,
        or the call's tool is not in ``tools``, it is the answer: the first choice the answer
        matcher accepts. The oracle for imitation (behaviour cloning, DAgger); it reads the task.
        """
        task = self.env.unwrapped.task
        calls = [c for step in task.reference for c in step]
        mask = self.action_masks()
        can_call = bool(mask[1:len(self.tools)].any())
        if can_call and self._steps < len(calls) and calls[self._steps].name in self.tools:
            return self.call_action(calls[self._steps].name, calls[self._steps].arguments)
        choice = next((i for i, c in enumerate(self._choices)
                       if answer_is_correct(c, task.answer)), 0)
        return np.array([0, 0, 0, 0, choice], dtype=np.int64)

    def call_action(self, name: str, arguments: dict[str, Any]) -> np.ndarray:
        """Return the ``MultiDiscrete`` action nearest to the call ``name(**arguments)``."""
        n_images = len(self.env.unwrapped.state)
        index = int(arguments.get("image_index", n_images - 1))
        source = 0 if index == n_images - 1 else 1 if index == 0 else 2
        region = param = 0
        if name == "crop":
            box = np.asarray(arguments.get("bbox_2d", [0, 0, 1000, 1000]), float)
            region = int(np.argmax([box_iou(box, np.asarray(region_box(r)[0]))
                                    for r in range(len(REGION_NAMES))]))
        elif options := tool_options(name):
            param = nearest_option(options, arguments)
        return np.array([self.tools.index(name), source, region, param, 0], dtype=np.int64)

    def action_masks(self) -> np.ndarray:
        """Return the flat boolean mask (length ``sum(nvec)``) of valid action components.

        Computed once per state (``step`` puts it in ``info["action_mask"]`` and MaskablePPO asks
        again); every call returns a fresh copy.
        """
        base = self.env.unwrapped
        key = (id(base.state), len(base.state), base.calls_used, self._steps, self._choices)
        if self._mask_key != key:
            self._mask = self.compute_action_masks()
            self._mask_key = key
        return self._mask.copy()

    def compute_action_masks(self) -> np.ndarray:
        """Return the action mask of the current state (uncached; see :meth:`action_masks`)."""
        base = self.env.unwrapped
        state = base.state
        n_images = len(state)
        off = self._nvec_offsets
        mask = np.ones(int(off[-1]), bool)
        n_tools = len(self.tools)
        mask[:n_tools] = self._available
        sources = (0, 1, 2) if n_images >= 2 else (0, 1)
        src_arrays = [state[self.source_index(s)].array for s in sources] if n_images else []
        can_act = (self._steps < self.max_steps - 1
                   and base.calls_used < base.max_tool_calls and n_images > 0)
        if can_act:
            # worst case output: a crop zoomed to the source size or a 90-degree turn (+ rounding)
            need = max(int(a.nbytes * 1.1) + 4096 for a in src_arrays)
            can_act = state.check_room(need) is None
        if not can_act:
            mask[1:n_tools] = False
        elif self._crop_index is not None and min(min(a.shape[:2]) for a in src_arrays) < 3:
            mask[self._crop_index] = False
        if self.answer_at_end and mask[1:n_tools].any():
            mask[0] = False  # a tool step: the answer comes last
        if n_images < 2:
            mask[int(off[1]) + 2] = False  # "previous" needs two images
        mask[int(off[4]) + max(1, len(self._choices)):] = False
        # Dimensions that cannot matter this step get one valid value (no entropy, no gradient
        # noise): source/region/param when only `answer` is possible, choice when it is not.
        if not mask[1:n_tools].any():
            mask[int(off[1]):int(off[4])] = False
            mask[[int(off[1]), int(off[2]), int(off[3])]] = True
        if not mask[0]:
            mask[int(off[4]):] = False
            mask[int(off[4])] = True
        return mask

    # ------------------------------------------------------------------ observations
    def image_obs(self, index: int) -> np.ndarray:
        """Return image ``index`` as a letterboxed ``obs_size`` square.

        Cached per episode; the task's input images are also cached across episodes (keyed by
        task id, at most ``cache_size`` of them), so a pooled task resets without resampling.
        """
        if index not in self._obs_cache:
            base = self.env.unwrapped
            key = None
            if base.task is not None and index < len(base.task.images):
                key = (base.task.task_id, index)
                cached = self._input_obs.lookup(key)
                if cached is not None:
                    self._obs_cache[index] = cached
                    return cached
            obs = letterbox(base.state[index].array, self.obs_size)
            obs.setflags(write=False)
            self._obs_cache[index] = obs
            if key is not None:
                self._input_obs[key] = obs
        return self._obs_cache[index]

    def features(self) -> np.ndarray:
        """Return the ``features`` vector (see the module docstring)."""
        base = self.env.unwrapped
        n_fam, n_tools = len(self.families), len(self.tools)
        out = np.zeros(self.feature_size, np.float32)
        if base.task is not None and base.task.family in self.families:
            out[self.families.index(base.task.family)] = 1.0
        out[n_fam] = self._steps / self.max_steps
        np.minimum(self._tool_counts / self.max_steps, 1.0, out=out[n_fam + 1:n_fam + 1 + n_tools])
        if self._last_tool >= 0:
            out[n_fam + 1 + n_tools + self._last_tool] = 1.0
        out[-2] = min(1.0, len(base.state) / (self.max_steps + 1))
        out[-1] = len(self._choices) / self.max_choices
        return out

    def observation(self) -> dict[str, np.ndarray]:
        """Return the current observation dict."""
        n = len(self.env.unwrapped.state)
        # copies (27 KiB each): callers may keep or modify what they are given
        obs = {"image": self.image_obs(n - 1).copy()}
        if self.observe_original:
            obs["original"] = self.image_obs(0).copy()
        if self.choices_obs != "none":
            obs["choices"] = self._choices_panel.copy()
        obs["features"] = self.features()
        return obs
