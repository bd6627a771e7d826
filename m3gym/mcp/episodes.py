"""The MCP server's episode table: every episode's state, keyed by ``episode_id``, on the server.

MCP requests are stateless (protocol 2026): nothing lives in the session object. An episode is
started by :meth:`EpisodeTable.start`, stepped by :meth:`EpisodeTable.call` (one or several
parallel tool calls), ended by :meth:`EpisodeTable.answer`, and read back by
:meth:`EpisodeTable.report`. Every step goes through the one episode loop's
:class:`~m3gym.eval.episode.EpisodeRecorder`, and a finished episode is assembled into the same
record and trace as ``m3gym eval`` writes (:func:`~m3gym.eval.runner.assemble_outcome`), so a
recorded MCP run (:class:`RunFolder`) sits beside any other in ``m3gym report``.

This module does not import the ``mcp`` SDK: the table is plain Python (and testable without it).
Bad input raises :class:`EpisodeError` with a precise message, which the server turns into an
MCP tool error (``isError``); nothing here lets input crash the server.
"""

from __future__ import annotations

import itertools
import json
import secrets
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import gymnasium as gym
import numpy as np

from m3gym.eval.episode import EpisodeRecorder
from m3gym.eval.runner import (
    EpisodeOutcome,
    EpisodeSpec,
    EvalConfig,
    assemble_outcome,
    drop_unreadable_lines,
    env_scope,
    env_tasks,
    episode_seed,
    read_records_checked,
    read_run_config,
    terminate_last_line,
    unreadable_message,
    write_outcome,
)

MAX_SEED = 2**31 - 1
"""Largest reset seed ``start_episode`` accepts."""


class EpisodeError(ValueError):
    """A call the table refuses (unknown or finished episode, bad arguments, limits)."""


@dataclass(frozen=True)
class McpLimits:
    """Bounds of one MCP server.

    Attributes:
        max_episodes: episodes in progress at once (finished ones no longer count).
        idle_s: an episode untouched this long is evicted (its env is freed).
        max_images: images one episode may hold (the env's image-state bound).
        max_episode_bytes: bytes of image data one episode may hold.
        max_response_bytes: encoded image bytes in one response (images are re-encoded smaller,
            then left out with a note, to stay under it).
        finished_kept: finished or evicted episodes remembered for reports and precise errors.
    """

    max_episodes: int = 32
    idle_s: float = 900.0
    max_images: int = 48
    max_episode_bytes: int = 192 * 1024 * 1024
    max_response_bytes: int = 2 * 1024 * 1024
    finished_kept: int = 1024

    def validate(self) -> None:
        """Raise ``ValueError`` for a bound that cannot work."""
        for name in ("max_episodes", "max_images", "max_episode_bytes", "max_response_bytes",
                     "finished_kept"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if not self.idle_s > 0:
            raise ValueError("idle_s must be > 0")


@dataclass
class EncodedImage:
    """An image ready for an MCP image content block."""

    index: int
    data: bytes
    mime_type: str


@dataclass
class StepReply:
    """What a tool call returns: text, new images, whether it failed, and (when done) metrics."""

    text: str
    images: list[EncodedImage] = field(default_factory=list)
    is_error: bool = False
    done: bool = False
    data: dict[str, Any] = field(default_factory=dict)


def encode_image(array: np.ndarray, budget: int) -> tuple[bytes, str] | None:
    """Return ``(bytes, mime)`` of an RGB/gray ``uint8`` image within ``budget`` bytes, or None.

    PNG when it fits, else JPEG at falling quality, then halved sizes.
    """
    img = cv2.cvtColor(array, cv2.COLOR_RGB2BGR) if array.ndim == 3 else array
    ok, buf = cv2.imencode(".png", img)
    if ok and buf.nbytes <= budget:
        return buf.tobytes(), "image/png"
    while min(img.shape[:2]) >= 16:
        for quality in (90, 75, 60):
            ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, quality])
            if ok and buf.nbytes <= budget:
                return buf.tobytes(), "image/jpeg"
        img = cv2.resize(img, (img.shape[1] // 2, img.shape[0] // 2),
                         interpolation=cv2.INTER_AREA)
    return None


def encode_images(indices: tuple[int, ...], images: tuple[np.ndarray, ...],
                  budget: int) -> tuple[list[EncodedImage], list[int]]:
    """Encode images within a shared byte ``budget``; return them and the indices left out."""
    out: list[EncodedImage] = []
    left: list[int] = []
    for n, (index, array) in enumerate(zip(indices, images)):
        share = budget // max(1, len(images) - n)
        enc = encode_image(array, share)
        if enc is None:
            left.append(int(index))
            continue
        budget -= len(enc[0])
        out.append(EncodedImage(int(index), enc[0], enc[1]))
    return out, left


class RunFolder:
    """A run folder an MCP server records into (the layout ``m3gym eval`` writes).

    ``config.json`` names the agent ``mcp``; an existing MCP run folder is appended to, any other
    non-empty folder is refused.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise FileExistsError(f"{self.path} exists and is not a folder")
        cfg_path = self.path / "config.json"
        if self.path.is_dir() and any(self.path.iterdir()):
            old = read_run_config(cfg_path) if cfg_path.is_file() else {}
            if old.get("agent") != "mcp":
                raise FileExistsError(f"{self.path} is not empty and not an MCP run folder; "
                                      "choose another --record folder")
        (self.path / "traces").mkdir(parents=True, exist_ok=True)
        (self.path / "thumbs").mkdir(parents=True, exist_ok=True)
        jsonl = self.path / "episodes.jsonl"
        # a line cut by a crash is removed (backup kept, named in a warning), and the next
        # record starts on its own line
        self.removed, self.backup = drop_unreadable_lines(jsonl)
        if self.removed:
            warnings.warn(f"removed {unreadable_message(self.removed)}; the original is kept as "
                          f"{self.backup}", UserWarning, stacklevel=2)
        terminate_last_line(jsonl)
        self.records = read_records_checked(jsonl)[0]
        self._ids = {r["episode_id"] for r in self.records}
        self._lock = threading.Lock()
        if not cfg_path.is_file():
            from m3gym.eval.runner import run_versions
            from m3gym.eval.splits import load_manifest

            cfg_path.write_text(json.dumps(
                {"agent": "mcp", "envs": [], "split": "mcp", "seed": 0, "reward": None,
                 "versions": run_versions(None, load_manifest("test"))},
                indent=2, default=str) + "\n")

    def next_index(self) -> int:
        """Return the index the next recorded episode gets."""
        return len(self._ids)

    def unique_id(self, episode_id: str) -> str:
        """Return ``episode_id``, suffixed ``~2``, ``~3`` ... when already recorded."""
        if episode_id not in self._ids:
            return episode_id
        return next(f"{episode_id}~{n}" for n in itertools.count(2)
                    if f"{episode_id}~{n}" not in self._ids)

    def write(self, outcome: EpisodeOutcome) -> None:
        """Append one episode (record, trace, thumbnails), flushed."""
        with self._lock, (self.path / "episodes.jsonl").open("a") as jsonl:
            write_outcome(self.path, outcome, jsonl)
            self._ids.add(outcome.record["episode_id"])


@dataclass
class _Live:
    """One episode in progress."""

    episode_id: str
    spec: EpisodeSpec
    cfg: EvalConfig
    key: str
    rec: EpisodeRecorder
    last_used: float
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class _Ended:
    """A finished (or evicted) episode: what reports and precise errors need."""

    outcome: EpisodeOutcome | None
    reason: str


class EpisodeTable:
    """The server-side table of MCP episodes (thread-safe; see the module docstring).

    Args:
        limits: the server's bounds.
        record: a run folder to record every finished (or evicted) episode into.
        clock: seconds, monotonic (injectable for tests).
        env_args: extra ``gym.make`` keyword arguments of every env.
    """

    def __init__(self, limits: McpLimits | None = None, record: str | Path | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 env_args: Mapping[str, Any] | None = None) -> None:
        self.limits = limits or McpLimits()
        self.limits.validate()
        self.folder = RunFolder(record) if record is not None else None
        self.clock = clock
        self.env_args = dict(env_args or {})
        self._live: dict[str, _Live] = {}
        self._ended: OrderedDict[str, _Ended] = OrderedDict()
        self._free_envs: dict[str, list[gym.Env]] = {}
        self._lock = threading.Lock()
        self._counter = itertools.count(1)

    # ------------------------------------------------------------------ envs
    def _take_env(self, env_id: str, reward: str) -> tuple[str, gym.Env]:
        from m3gym import resolve_env_id  # importing m3gym registers the ids

        key = json.dumps([env_id, reward])
        with self._lock:
            pool = self._free_envs.get(key)
            if pool:
                return key, pool.pop()
        env = gym.make(resolve_env_id(env_id), reward=reward, disable_env_checker=True,
                       max_images=self.limits.max_images,
                       max_bytes=self.limits.max_episode_bytes, **self.env_args)
        return key, env

    def _give_env(self, key: str, env: gym.Env) -> None:
        with self._lock:
            pool = self._free_envs.setdefault(key, [])
            if len(pool) < 4:
                pool.append(env)

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

    def start(self, env_id: str, seed: int | None = None, split: str | None = None,
              index: int | None = None, reward: str | None = None) -> tuple[str, dict[str, Any],
                                                                         list[EncodedImage]]:
        """Start an episode; return its id, the prompt data and the input images.

        Give either ``seed`` (a reset seed: the env draws the task) or ``split`` + ``index``
        (the ``index``-th task ``m3gym eval --split SPLIT`` runs on ``env_id``, with its reset
        seed, so metrics equal that run's).
        """
        from m3gym.reward import load_reward_config

        reward = reward or "m3"
        spec = self._plan(env_id, seed, split, index)
        try:
            load_reward_config(reward)
        except (ValueError, FileNotFoundError, OSError) as exc:
            raise EpisodeError(f"bad reward {reward!r}: {exc}") from None
        self.evict_idle()
        with self._lock:
            if len(self._live) >= self.limits.max_episodes:
                raise EpisodeError(
                    f"the server holds {len(self._live)} episodes in progress (its maximum): "
                    "answer or abandon one, or wait for idle ones to be evicted "
                    f"(after {self.limits.idle_s:g} s)")
            episode_id = f"ep{next(self._counter)}-{secrets.token_hex(6)}"
        key, env = self._take_env(env_id, reward)
        rec = EpisodeRecorder(env)
        options = None if spec.family == "" else {"family": spec.family,
                                                  "task_seed": spec.task_seed}
        try:
            obs, info = rec.reset(seed=spec.seed, options=options)
        except Exception as exc:  # a task that cannot be built: refuse it, keep serving
            raise EpisodeError(f"cannot start {env_id}: {type(exc).__name__}: {exc}") from None
        if options is None:  # the env drew the task: name it as eval would
            family, _, task_seed = rec.task.task_id.rpartition("/")
            spec = EpisodeSpec(spec.index, f"{env_id}.{family}.{task_seed}", env_id,
                               rec.task.level, family, int(task_seed), spec.seed)
        cfg = EvalConfig(envs=(env_id,), agent="mcp", episodes=1, split=split or "seed",
                         seed=0, reward=reward, env_args=dict(self.env_args))
        live = _Live(episode_id, spec, cfg, key, rec, self.clock())
        with self._lock:
            self._live[episode_id] = live
        images, left = encode_images(tuple(obs["image_indices"]), tuple(obs["images"]),
                                     self.limits.max_response_bytes)
        data = {"episode_id": episode_id, "prompt": obs["text"],
                "image_indices": list(obs["image_indices"]), "images_left_out": left, **info}
        return episode_id, data, images

    def _plan(self, env_id: Any, seed: Any, split: Any, index: Any) -> EpisodeSpec:
        if not isinstance(env_id, str):
            raise EpisodeError("env_id must be a string such as 'M3Bench-L1'")
        try:
            level, _ = env_scope(env_id)
        except ValueError as exc:
            raise EpisodeError(str(exc)) from None
        if (seed is None) == (split is None):
            raise EpisodeError("give either seed, or split and index (not both)")
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
                raise EpisodeError(f"seed must be an integer in [0, {MAX_SEED}], got {seed!r}")
            return EpisodeSpec(0, "", env_id, level, "", 0, int(seed))
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise EpisodeError(f"index must be an integer >= 0 with split, got {index!r}")
        if split not in ("test", "val"):
            raise EpisodeError(f"split must be 'test' or 'val', got {split!r}")
        try:
            family, task_seed = env_tasks(env_id, split, index + 1, 0)[index]
        except ValueError as exc:
            raise EpisodeError(str(exc)) from None
        return EpisodeSpec(index, f"{env_id}.{family}.{task_seed}", env_id, level, family,
                           task_seed, episode_seed(0, task_seed))

    def _get(self, episode_id: Any) -> _Live:
        if not isinstance(episode_id, str):
            raise EpisodeError("episode_id must be a string returned by start_episode")
        self.evict_idle()
        with self._lock:
            live = self._live.get(episode_id)
            ended = self._ended.get(episode_id)
        if live is not None:
            return live
        if ended is not None:
            raise EpisodeError(f"episode {episode_id} has ended ({ended.reason}); "
                               "start a new one (episode_report still reads it)")
        raise EpisodeError(f"unknown episode {episode_id!r}; start one with start_episode")

    def call(self, episode_id: str, calls: list[dict[str, Any]]) -> StepReply:
        """Run tool calls (in parallel, as one step) on an episode and return the reply."""
        if not isinstance(calls, list) or not calls:
            raise EpisodeError("calls must be a non-empty list of {name, arguments} objects")
        for c in calls:
            if not isinstance(c, Mapping) or not isinstance(c.get("name"), str) or \
                    not isinstance(c.get("arguments", {}), Mapping):
                raise EpisodeError("each call must be an object {name: str, arguments: object}, "
                                   f"got {c!r}"[:300])
            if c["name"] == "answer":
                raise EpisodeError("answer with the answer tool, on its own")
        return self._step(episode_id, [{"name": c["name"], "arguments": dict(c.get("arguments")
                                                                             or {})}
                                       for c in calls])

    def answer(self, episode_id: str, text: Any) -> StepReply:
        """Give the final answer; return the verdict and every metric."""
        if not isinstance(text, str):
            raise EpisodeError("text must be a string")
        return self._step(episode_id, {"name": "answer", "arguments": {"text": text}})

    def _step(self, episode_id: str, action: Any) -> StepReply:
        live = self._get(episode_id)
        with live.lock:
            if episode_id not in self._live:  # ended while this call waited
                return self._step(episode_id, action)
            live.last_used = self.clock()
            try:
                obs, _r, terminated, truncated, info = live.rec.step(action)
            except Exception as exc:  # an env failure: record it, keep serving
                live.rec.fail(exc)
                self._end(live, f"env error: {live.rec.error}", status=None)
                raise EpisodeError(f"the env failed on this call: {type(exc).__name__}: "
                                   f"{exc}") from None
            images, left = encode_images(tuple(obs["image_indices"]), tuple(obs["images"]),
                                         self.limits.max_response_bytes)
            records = info.get("calls") or []
            failed = [r for r in records if not r.get("ok")]
            text = str(obs["text"])
            if left:
                text += (f"\n(images {left} are too large for one response "
                         f"({self.limits.max_response_bytes} bytes): crop them smaller)")
            reply = StepReply(text, images, is_error=bool(failed) or bool(info.get(
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
        with self._lock:
            self._ended[live.episode_id] = _Ended(outcome, reason)
            while len(self._ended) > self.limits.finished_kept:
                self._ended.popitem(last=False)
        self._give_env(live.key, rec.env)
        return outcome

    def report(self, episode_id: Any) -> dict[str, Any]:
        """Return an episode's trace (in progress: the steps so far)."""
        if not isinstance(episode_id, str):
            raise EpisodeError("episode_id must be a string returned by start_episode")
        with self._lock:
            ended = self._ended.get(episode_id)
            live = self._live.get(episode_id)
        if ended is not None and ended.outcome is not None:
            return {**ended.outcome.trace, "ended": ended.reason}
        if live is not None:
            with live.lock:
                return {"status": "in progress", "ended": None, "episode_id": episode_id,
                        "prompt": live.rec.prompt, "steps": list(live.rec.steps)}
        raise EpisodeError(f"unknown episode {episode_id!r} (never started, or forgotten: the "
                           f"server remembers the last {self.limits.finished_kept} ended ones)")

    def live_count(self) -> int:
        """Return the number of episodes in progress."""
        with self._lock:
            return len(self._live)


def verdict(outcome: EpisodeOutcome | None) -> dict[str, Any]:
    """Return the verdict part of a finished episode's reply: answer, correctness, metrics."""
    if outcome is None:
        return {}
    rec = outcome.record
    return {"status": rec["status"], "answer": rec["answer"],
            "answer_correct": rec["answer_correct"], "reward": rec["reward"],
            "metrics": rec["metrics"], "failure_mode": rec["failure_mode"]}
