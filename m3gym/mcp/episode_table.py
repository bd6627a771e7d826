"""The MCP server's episode table: every episode's state, keyed by ``episode_id``, on the server.

(It was ``m3gym.mcp.episode_table``; that path still imports, with a deprecation warning.)

MCP requests are stateless (protocol 2026): nothing lives in the session object. An episode is
started by :meth:`EpisodeTable.start`, stepped by :meth:`EpisodeTable.call` (one or several
parallel tool calls), ended by :meth:`EpisodeTable.answer`, and read back by
:meth:`EpisodeTable.report`. Every step goes through the one episode loop's
:class:`~m3gym.eval.episode_loop.EpisodeRecorder`, and a finished episode is assembled into the same
row and trace as ``m3gym eval`` writes (:func:`~m3gym.eval.outcome.assemble_outcome`), so a
recorded MCP run (:class:`~m3gym.mcp.recording.RunFolder`) sits beside any other in
``m3gym report``.

This module does not import the ``mcp`` SDK: the table is plain Python (and testable without it).
Bad input raises :class:`EpisodeError` with a precise message, which the server turns into an
MCP tool error (``isError``); nothing here lets input crash the server.

Trust rules (docs/mcp.md): a client chooses only among what the operator allowed (the env ids
and reward choices of :class:`EpisodeTable`), never a path; an episode belongs to the ``owner``
key it was started with, and any other owner is answered exactly as for an unknown episode
(unless the operator shares episodes); no error text quotes a file's content.

The table's neighbours, whose names this module re-exports (``from m3gym.mcp.episode_table import
McpLimits`` keeps working): :mod:`m3gym.mcp.limits` (the server's bounds),
:mod:`m3gym.mcp.images` (images encoded to fit a reply),
:mod:`m3gym.mcp.replies` (what a reply says), :mod:`m3gym.mcp.recording` (the run
folder), :mod:`m3gym.mcp.choices` (the operator's env ids and rewards) and
:mod:`m3gym.mcp.memory` (freed memory back to the OS).
"""


from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

from m3gym.eval.config import EpisodeOutcome, EpisodeSpec, EvalConfig
from m3gym.eval.episode_loop import EpisodeRecorder
from m3gym.eval.outcome import assemble_outcome
from m3gym.eval.plan import env_scope, env_tasks, episode_seed
from m3gym.mcp.choices import DEFAULT_REWARD as DEFAULT_REWARD
from m3gym.mcp.choices import RECORDS_ENV_KEYS as RECORDS_ENV_KEYS
from m3gym.mcp.choices import SERVER_ENV_KEYS as SERVER_ENV_KEYS
from m3gym.mcp.choices import (
    allowed_env_ids,
    check_server_env_args,
    reward_choices,
    unversioned,
)
from m3gym.mcp.choices import default_env_ids as default_env_ids
from m3gym.mcp.images import NOTE_BYTES as NOTE_BYTES
from m3gym.mcp.images import REPLY_OVERHEAD as REPLY_OVERHEAD
from m3gym.mcp.images import EncodedImage, fit_images, json_len
from m3gym.mcp.images import encode_image as encode_image
from m3gym.mcp.images import encode_images as encode_images
from m3gym.mcp.images import image_budget as image_budget
from m3gym.mcp.limits import MIN_RESPONSE_BYTES as MIN_RESPONSE_BYTES
from m3gym.mcp.limits import McpLimits
from m3gym.mcp.memory import MMAP_THRESHOLD as MMAP_THRESHOLD
from m3gym.mcp.memory import TRIM_INTERVAL_S, image_bytes, release_episode_images, release_memory
from m3gym.mcp.memory import limit_heap_retention as limit_heap_retention
from m3gym.mcp.recording import RunFolder
from m3gym.mcp.replies import StepReply, start_text, verdict

logger = logging.getLogger(__name__)

MAX_SEED = 2**31 - 1
"""Largest reset seed ``start_episode`` accepts."""

MAX_INDEX = 100_000
"""Largest split ``index`` ``start_episode`` accepts (frozen splits are far smaller)."""

MAX_CALLS = 64
"""Most calls one ``parallel_calls`` step may carry (the env allows fewer; checked first)."""

EPISODE_ID_BYTES = 16
"""Random bytes in an ``episode_id`` (128 bits): unguessable, so where the transport gives no
session identity the id itself is the capability to act on the episode."""

class EpisodeError(ValueError):
    """A call the table refuses (unknown or finished episode, bad arguments, limits)."""


def _full_sizes(rec: EpisodeRecorder, indices: Any) -> tuple[tuple[int, int], ...]:
    """Return (width, height) of the full-resolution images ``indices`` of an episode."""
    state = rec.env.unwrapped.state
    return tuple((state[int(i)].width, state[int(i)].height) for i in indices)


@dataclass
class _Live:
    """One episode in progress."""

    episode_id: str
    spec: EpisodeSpec
    cfg: EvalConfig
    key: str
    rec: EpisodeRecorder
    last_used: float
    owner: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class _Ended:
    """A finished (or evicted) episode: what reports and precise errors need."""

    outcome: EpisodeOutcome | None
    reason: str
    owner: str | None = None
    nbytes: int = 0


def quote(value: Any, limit: int = 80) -> str:
    """Return a client's value as quoted in an error: its ``repr``, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class EpisodeTable:
    """The server-side table of MCP episodes (thread-safe; see the module docstring).

    Args:
        limits: the server's bounds.
        record: a run folder to record every finished (or evicted) episode into.
        clock: seconds, monotonic (injectable for tests).
        env_args: extra ``gym.make`` keyword arguments of every env (checked here:
            :func:`check_server_env_args`).
        envs: the env ids clients may start (default :func:`default_env_ids`).
        rewards: the operator's reward entries (:func:`reward_choices`; presets are always
            offered, the first entry is the default).
        shared: let any caller act on any episode (``--shared-episodes``); by default an
            episode answers only the ``owner`` it was started with.
    """

    def __init__(self, limits: McpLimits | None = None, record: str | Path | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 env_args: Mapping[str, Any] | None = None, envs: Sequence[str] | None = None,
                 rewards: Sequence[str] | None = None, shared: bool = False) -> None:
        self.limits = limits or McpLimits()
        self.limits.validate()
        self.env_args = dict(env_args or {})
        check_server_env_args(self.env_args)
        self.envs = allowed_env_ids(envs, self.env_args)
        self.rewards, self.reward_sources, self.default_reward = reward_choices(rewards)
        self.shared = bool(shared)
        self.folder = RunFolder(record, self.env_args, self.settings()) \
            if record is not None else None
        self.clock = clock
        self._live: dict[str, _Live] = {}
        self._starting = 0
        self._ended: OrderedDict[str, _Ended] = OrderedDict()
        self._ended_bytes = 0
        self._free_envs: dict[str, list[gym.Env]] = {}
        self._lock = threading.Lock()
        self._busy = threading.BoundedSemaphore(self.limits.max_busy)
        self._stop = threading.Event()
        self._last_trim = 0.0

    def settings(self) -> dict[str, Any]:
        """Return what the operator allowed (recorded in a ``--record`` run's ``config.json``)."""
        return {"envs": sorted({unversioned(e) for e in self.envs}),
                "rewards": dict(self.reward_sources), "default_reward": self.default_reward,
                "shared_episodes": self.shared}

    def env_names(self) -> list[str]:
        """Return the env ids clients may start (unversioned names)."""
        return sorted({unversioned(e) for e in self.envs})

    # ------------------------------------------------------------------ envs
    def _take_env(self, env_id: str, reward: str) -> tuple[str, gym.Env]:
        key = json.dumps([env_id, reward])
        with self._lock:
            pool = self._free_envs.get(key)
            if pool:
                env = pool.pop()
                if not pool:
                    del self._free_envs[key]
                return key, env
        env = gym.make(self.envs[env_id], reward=self.rewards[reward], disable_env_checker=True,
                       max_images=self.limits.max_images,
                       max_bytes=self.limits.max_episode_bytes, **self.env_args)
        return key, env

    def _give_env(self, key: str, env: gym.Env) -> None:
        """Keep ``env`` for reuse; beyond ``limits.max_pooled_envs`` (all ids) close the oldest."""
        release_episode_images(env)
        closing: list[gym.Env] = []
        with self._lock:
            self._free_envs.setdefault(key, []).append(env)
            self._free_envs[key] = self._free_envs.pop(key)  # most recently used id last
            while sum(map(len, self._free_envs.values())) > self.limits.max_pooled_envs:
                oldest = next(iter(self._free_envs))
                closing.append(self._free_envs[oldest].pop(0))
                if not self._free_envs[oldest]:
                    del self._free_envs[oldest]
        for old in closing:
            old.close()

    def pooled_envs(self) -> int:
        """Return the number of idle envs kept for reuse."""
        with self._lock:
            return sum(map(len, self._free_envs.values()))

    def _trim(self) -> None:
        """Return freed memory to the OS, at most every :data:`TRIM_INTERVAL_S` seconds."""
        now = time.monotonic()
        if now - self._last_trim < TRIM_INTERVAL_S:
            return
        self._last_trim = now
        release_memory()

    def measure(self) -> dict[str, int]:
        """Return what the table holds now, beside its bounds (docs/mcp.md, Memory).

        ``live`` + ``starting`` never exceed ``max_episodes``; ``live_image_bytes`` is at most
        ``live × max_episode_bytes``; pooled envs hold no images; ended traces stay within
        ``finished_kept`` and ``finished_bytes``.
        """
        with self._lock:
            lives = list(self._live.values())
            pooled = [e for pool in self._free_envs.values() for e in pool]
            out = {"live": len(lives), "starting": self._starting,
                   "ended_kept": len(self._ended), "ended_bytes": self._ended_bytes,
                   "pooled_envs": len(pooled)}
        out["live_image_bytes"] = sum(image_bytes(live.rec.env) for live in lives)
        out["pooled_image_bytes"] = sum(image_bytes(env) for env in pooled)
        limits = self.limits
        out.update(max_episodes=limits.max_episodes, max_episode_bytes=limits.max_episode_bytes,
                   finished_kept=limits.finished_kept, finished_bytes=limits.finished_bytes,
                   max_pooled_envs=limits.max_pooled_envs)
        return out

    # ------------------------------------------------------------------ lifecycle
    def evict_idle(self) -> list[str]:
        """Evict every episode idle longer than ``limits.idle_s``; return their ids."""
        now = self.clock()
        with self._lock:
            stale = [e for e in self._live.values() if now - e.last_used > self.limits.idle_s]
        evicted = []
        for live in stale:
            if live.lock.acquire(blocking=False):
                try:
                    self._end(live, f"evicted after {self.limits.idle_s:g} s without a call",
                              status="evicted")
                    evicted.append(live.episode_id)
                finally:
                    live.lock.release()
        return evicted

    def _reserve(self) -> None:
        """Take a slot for an episode being started, or refuse: the cap counts resets too."""
        self.evict_idle()
        with self._lock:
            held = len(self._live) + self._starting
            if held >= self.limits.max_episodes:
                raise EpisodeError(
                    f"the server is full: {held} episodes in progress or starting (its maximum, "
                    f"--max-episodes {self.limits.max_episodes}); answer one, or wait for idle "
                    f"ones to be evicted (after {self.limits.idle_s:g} s)")
            self._starting += 1

    def start(self, env_id: str, seed: int | None = None, split: str | None = None,
              index: int | None = None, reward: str | None = None, owner: str | None = None,
              task_seed: int | None = None, family: str | None = None,
              ) -> tuple[str, dict[str, Any], list[EncodedImage]]:
        """Start an episode for ``owner``; return its id, the prompt data and the input images.

        Give one of (the seed rule, ``docs/environments.md#one-seed-rule``):

        * ``seed``: the reset seed, exactly ``gym.make(env_id).reset(seed=seed)`` (the env draws
          the family and the task);
        * ``task_seed`` (optionally with one of the env's ``family``): the task a dataset row
          ``{"env_id", "task_seed", "family"}`` names
          (:func:`~m3gym.integrations.session.task_ref`);
        * ``split`` + ``index``: the ``index``-th task ``m3gym eval --split SPLIT`` runs on
          ``env_id``, with its reset seed, so metrics equal that run's.

        ``env_id`` and ``reward`` must be among the operator's choices (a reward is named, never
        a path).
        """
        reward = self._reward(reward)
        spec, task_options = self._plan(env_id, seed, split, index, task_seed, family)
        self._reserve()
        episode_id = "ep-" + secrets.token_urlsafe(EPISODE_ID_BYTES)
        try:
            with self._busy:
                key, env = self._take_env(env_id, reward)
                rec = EpisodeRecorder(env)
                options = task_options if task_options is not None else (
                    None if spec.family == "" else {"family": spec.family,
                                                    "task_seed": spec.task_seed})
                try:
                    obs, info = rec.reset(seed=spec.seed, options=options)
                except Exception as exc:  # a task that cannot be built: refuse it, keep serving
                    env.close()  # the message may quote operator data: the log has it
                    logger.warning("cannot start %s: %s: %s", env_id, type(exc).__name__, exc)
                    raise EpisodeError(f"cannot start {env_id}: the task could not be built "
                                       f"({type(exc).__name__}; the server's log says more)"
                                       ) from None
                if spec.family == "":  # the env drew the task: name it as eval would
                    family, _, task_seed = rec.task.task_id.rpartition("/")
                    spec = EpisodeSpec(spec.index, f"{env_id}.{family}.{task_seed}", env_id,
                                       rec.task.level, family, int(task_seed), spec.seed)
                cfg = EvalConfig(envs=(env_id,), agent="mcp", episodes=1, split=split or "seed",
                                 seed=0, reward=self.reward_sources[reward],
                                 env_args=dict(self.env_args))
                live = _Live(episode_id, spec, cfg, key, rec, self.clock(), owner)
                data = {"episode_id": episode_id, "prompt": obs["text"],
                        "image_indices": list(obs["image_indices"]), **info}
                sizes = _full_sizes(rec, obs["image_indices"])
                with self._lock:
                    self._live[episode_id] = live
                    self._starting -= 1
        except BaseException:
            with self._lock:
                self._starting -= 1
            raise
        data.pop("tool_schemas", None)
        text, images = fit_images(self.limits, start_text(data), data,
                                  tuple(obs["image_indices"]), tuple(obs["images"]), sizes)
        data["text"] = text
        return episode_id, data, images

    def _reward(self, reward: Any) -> str:
        if reward is None:
            return self.default_reward
        if isinstance(reward, str) and reward in self.rewards:
            return reward
        # the same line for any refused value (a path that exists, one that does not, a
        # dict): nothing of the value is echoed, so nothing tells one from another
        raise EpisodeError("unknown reward: this server offers "
                           f"{', '.join(sorted(self.rewards))} (default {self.default_reward}); "
                           "name one of them")

    def _plan(self, env_id: Any, seed: Any, split: Any, index: Any, task_seed: Any = None,
              family: Any = None) -> tuple[EpisodeSpec, dict[str, Any] | None]:
        """Return the episode's spec and, for a ``task_seed``, the reset options of its row."""
        if not isinstance(env_id, str) or env_id not in self.envs:
            raise EpisodeError(f"unknown env {quote(env_id)}: this server offers "
                               f"{', '.join(self.env_names())}")
        level, families = env_scope(self.envs[env_id])
        if sum(v is not None for v in (seed, split, task_seed)) != 1:
            raise EpisodeError("give one of: seed (the reset seed), task_seed (optionally with "
                               "family), or split and index")
        if family is not None and task_seed is None:
            raise EpisodeError("family goes with task_seed")
        if task_seed is not None:
            if isinstance(task_seed, bool) or not isinstance(task_seed, int) or \
                    not 0 <= task_seed <= MAX_SEED:
                raise EpisodeError(f"task_seed must be an integer in [0, {MAX_SEED}], got "
                                   f"{quote(task_seed)}")
            if index is not None:
                raise EpisodeError("index goes with split, not with task_seed")
            if family is not None and (not isinstance(family, str) or family not in families):
                raise EpisodeError(f"unknown family {quote(family)} for {env_id}: it draws "
                                   f"{', '.join(families)}")
            from m3gym.integrations.session import task_ref

            row = {"env_id": env_id, "task_seed": task_seed}
            if family is not None:
                row["family"] = family
            ref = task_ref(row)
            return EpisodeSpec(0, "", env_id, level, "", 0, int(ref.seed or 0)), ref.options
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
                raise EpisodeError(f"seed must be an integer in [0, {MAX_SEED}], got "
                                   f"{quote(seed)}")
            if index is not None:
                raise EpisodeError("index goes with split, not with seed")
            return EpisodeSpec(0, "", env_id, level, "", 0, int(seed)), None
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= MAX_INDEX:
            raise EpisodeError(f"index must be an integer in [0, {MAX_INDEX}] with split, got "
                               f"{quote(index)}")
        if split not in ("test", "val"):
            raise EpisodeError(f"split must be 'test' or 'val', got {quote(split)}")
        try:
            family, task_seed = env_tasks(env_id, split, index + 1, 0)[index]
        except ValueError as exc:
            raise EpisodeError(str(exc)) from None
        return EpisodeSpec(index, f"{env_id}.{family}.{task_seed}", env_id, level, family,
                           task_seed, episode_seed(0, task_seed)), None

    def _mine(self, owner_of_episode: str | None, owner: str | None) -> bool:
        return self.shared or owner_of_episode == owner

    def _get(self, episode_id: Any, owner: str | None) -> _Live:
        if not isinstance(episode_id, str):
            raise EpisodeError("episode_id must be a string returned by start_episode")
        self.evict_idle()
        with self._lock:
            live = self._live.get(episode_id)
            ended = self._ended.get(episode_id)
        if live is not None and self._mine(live.owner, owner):
            return live
        if ended is not None and self._mine(ended.owner, owner):
            raise EpisodeError(f"episode {episode_id} has ended ({ended.reason}); "
                               "start a new one (episode_report still reads it)")
        # another caller's episode is answered exactly as one never started
        raise EpisodeError(f"unknown episode {quote(episode_id)}; start one with start_episode")

    def call(self, episode_id: str, calls: list[dict[str, Any]], owner: str | None = None
             ) -> StepReply:
        """Run tool calls (in parallel, as one step) on ``owner``'s episode; return the reply."""
        if not isinstance(calls, list) or not calls:
            raise EpisodeError("calls must be a non-empty list of {name, arguments} objects")
        if len(calls) > MAX_CALLS:
            raise EpisodeError(f"{len(calls)} calls in one step; at most {MAX_CALLS}")
        for c in calls:
            if not isinstance(c, Mapping) or not isinstance(c.get("name"), str) or \
                    not isinstance(c.get("arguments", {}), Mapping):
                raise EpisodeError("each call must be an object {name: str, arguments: object}, "
                                   f"got {quote(c, 200)}")
            if c["name"] == "answer":
                raise EpisodeError("answer with the answer tool, on its own")
        return self._step(episode_id, [{"name": c["name"], "arguments": dict(c.get("arguments")
                                                                             or {})}
                                       for c in calls], owner)

    def answer(self, episode_id: str, text: Any, owner: str | None = None) -> StepReply:
        """Give the final answer to ``owner``'s episode; return the verdict and every metric."""
        if not isinstance(text, str):
            raise EpisodeError("text must be a string")
        return self._step(episode_id, {"name": "answer", "arguments": {"text": text}}, owner)

    def _step(self, episode_id: str, action: Any, owner: str | None) -> StepReply:
        live = self._get(episode_id, owner)
        with live.lock:
            if episode_id not in self._live:  # ended while this call waited
                return self._step(episode_id, action, owner)
            live.last_used = self.clock()
            try:
                with self._busy:
                    obs, _r, terminated, truncated, info = live.rec.step(action)
            except Exception as exc:  # an env failure: record it, keep serving
                live.rec.fail(exc)
                self._end(live, f"env error: {live.rec.error}", status=None)
                logger.warning("episode %s: the env failed: %s: %s", episode_id,
                               type(exc).__name__, exc)
                raise EpisodeError(f"the env failed on this call ({type(exc).__name__}; the "
                                   "server's log says more); the episode has ended") from None
            # read the image sizes before the env can go back to the pool
            sizes = _full_sizes(live.rec, obs["image_indices"])
            calls = info.get("calls") or []
            failed = [r for r in calls if not r.get("ok")]
            reply = StepReply(str(obs["text"]), [], is_error=bool(failed) or bool(info.get(
                "parse_errors")), data={"calls_used": info.get("calls_used"),
                                        "rounds": info.get("rounds"),
                                        "new_images": list(obs["image_indices"])})
            if terminated or truncated:
                outcome = self._end(live, "answered" if terminated else "truncated (budget)",
                                    status=None)
                reply.done = True
                reply.data.update(verdict(outcome))
                if truncated:
                    reply.text += "\nThe episode ended: its budget is spent."
            reply.text += (f"\n(Used {reply.data['calls_used']} tool calls and "
                           f"{reply.data['rounds']} rounds.)")
            reply.text, reply.images = fit_images(
                self.limits, reply.text, reply.data, tuple(obs["image_indices"]),
                tuple(obs["images"]), sizes)
            return reply

    def _end(self, live: _Live, reason: str, status: str | None) -> EpisodeOutcome | None:
        """Move an episode out of the live table, record it, free its env."""
        with self._lock:
            if self._live.pop(live.episode_id, None) is None:
                return None
        rec = live.rec
        if status is not None:
            rec.status, rec.error = status, reason
        spec = live.spec
        if self.folder is not None:
            spec = EpisodeSpec(self.folder.next_index(), self.folder.unique_id(spec.episode_id),
                               spec.env_id, spec.level, spec.family, spec.task_seed, spec.seed)
        outcome = assemble_outcome(spec, live.cfg, rec)
        if self.folder is not None:
            self.folder.write(outcome)
        nbytes = json_len(outcome.trace) + json_len(outcome.row)
        with self._lock:  # thumbnails are in the run folder (if any): not kept in memory
            self._ended[live.episode_id] = _Ended(EpisodeOutcome(outcome.row, outcome.trace),
                                                  reason, live.owner, nbytes)
            self._ended_bytes += nbytes
            while len(self._ended) > self.limits.finished_kept or (
                    self._ended_bytes > self.limits.finished_bytes and len(self._ended) > 1):
                self._ended_bytes -= self._ended.popitem(last=False)[1].nbytes
        self._give_env(live.key, rec.env)
        self._trim()
        return outcome

    def report(self, episode_id: Any, owner: str | None = None) -> dict[str, Any]:
        """Return ``owner``'s episode's trace (in progress: the steps so far)."""
        if not isinstance(episode_id, str):
            raise EpisodeError("episode_id must be a string returned by start_episode")
        with self._lock:
            ended = self._ended.get(episode_id)
            live = self._live.get(episode_id)
        if ended is not None and ended.outcome is not None and self._mine(ended.owner, owner):
            return {**ended.outcome.trace, "ended": ended.reason}
        if live is not None and self._mine(live.owner, owner):
            with live.lock:
                return {"status": "in progress", "ended": None, "episode_id": episode_id,
                        "prompt": live.rec.prompt, "steps": list(live.rec.steps)}
        raise EpisodeError(f"unknown episode {quote(episode_id)} (never started, or forgotten: "
                           f"the server remembers the last {self.limits.finished_kept} ended "
                           "ones)")

    def close(self, reason: str = "the server stopped") -> list[str]:
        """End every episode in progress (recorded as ``interrupted``); return their ids.

        The server calls it when it stops (end of the transport, SIGINT or SIGTERM), so a
        ``--record`` run folder holds every episode started. Waits for a call in flight.
        """
        self._stop.set()
        with self._lock:
            lives = list(self._live.values())
        ended = []
        for live in lives:
            with live.lock:
                if self._end(live, reason, status="interrupted") is not None:
                    ended.append(live.episode_id)
        return ended

    def start_reaper(self, interval_s: float | None = None) -> threading.Thread:
        """Evict idle episodes every ``interval_s`` (default ``min(idle_s / 4, 60)``) in a thread.

        Without it eviction happens only when a call arrives; the thread stops on :meth:`close`.
        """
        interval = interval_s if interval_s is not None else min(self.limits.idle_s / 4, 60.0)

        def loop() -> None:
            while not self._stop.wait(interval):
                self.evict_idle()

        thread = threading.Thread(target=loop, name="m3gym-mcp-reaper", daemon=True)
        thread.start()
        return thread

    def live_count(self) -> int:
        """Return the number of episodes in progress."""
        with self._lock:
            return len(self._live)
