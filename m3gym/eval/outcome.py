"""One planned episode, run and turned into its run-folder outcome: row, trace, thumbnails.

:func:`run_episode_outcome` runs the episode through the one episode loop
(:func:`m3gym.eval.episode_loop.record_episode`); :func:`assemble_outcome` turns a recorded episode
into the ``episodes.jsonl`` row, the trace and the JPEG thumbnails (the MCP server assembles
its episodes with it too), and :func:`judge_block` scores a records task's judge checkpoints.
"""

from __future__ import annotations

import json
import time
from typing import Any

import cv2
import gymnasium as gym
import numpy as np

from m3gym.eval.agents import build_agent
from m3gym.eval.config import METRIC_KEYS, EpisodeOutcome, EpisodeSpec, EvalConfig
from m3gym.eval.episode_loop import EpisodeRecorder, record_episode
from m3gym.eval.episode_loop import json_safe as _json_safe

_ENV_CACHE: dict[str, gym.Env] = {}


def _env_for(cfg: EvalConfig, env_id: str) -> gym.Env:
    key = json.dumps([env_id, cfg.reward, dict(cfg.env_args)], sort_keys=True, default=str)
    if key not in _ENV_CACHE:
        from m3gym import registration

        _ENV_CACHE[key] = gym.make(registration.resolve_env_id(env_id), reward=cfg.reward,
                                   disable_env_checker=True,
                                   **dict(cfg.env_args))
    return _ENV_CACHE[key]


def thumbnail_jpeg(array: np.ndarray, size: int, quality: int = 80) -> bytes:
    """Return a JPEG (longest side ≤ ``size``) of an RGB or grayscale ``uint8`` image."""
    h, w = array.shape[:2]
    scale = min(1.0, size / max(h, w))
    if scale < 1.0:
        array = cv2.resize(array, (max(1, round(w * scale)), max(1, round(h * scale))),
                           interpolation=cv2.INTER_AREA)
    if array.ndim == 3:
        array = cv2.cvtColor(array, cv2.COLOR_RGB2BGR)
    ok, buf = cv2.imencode(".jpg", array, [cv2.IMWRITE_JPEG_QUALITY, quality])
    return buf.tobytes() if ok else b""


def _image_entries(state: Any, episode_id: str, max_thumbs: int) -> list[dict[str, Any]]:
    out = []
    for entry in state:
        p = entry.provenance
        out.append({
            "index": entry.index, "shape": list(entry.array.shape), "label": entry.label,
            "parent": p.parent, "op": p.op, "args": _json_safe(p.args), "root": p.root,
            "call_id": p.call_id, "photometric": list(p.photometric),
            "affine": np.asarray(p.affine).round(6).tolist(),
            "thumb": f"thumbs/{episode_id}/{entry.index}.jpg" if entry.index < max_thumbs else None,
        })
    return out


def run_episode_outcome(spec: EpisodeSpec, cfg: EvalConfig) -> EpisodeOutcome:
    """Run one planned episode and return its row, trace and thumbnails (never raises)."""
    started = time.perf_counter()
    env = _env_for(cfg, spec.env_id)
    rec = record_episode(env, lambda: build_agent(cfg.agent, spec.seed, cfg.agent_args),
                      seed=spec.seed,
                      options={"family": spec.family, "task_seed": spec.task_seed})
    rec.started = started
    outcome = assemble_outcome(spec, cfg, rec)
    judged = judge_block(env, rec, cfg)
    if judged is not None:  # a records task with judge checkpoints: its own metric, never S/V
        outcome.trace["judge"] = judged
        outcome.row["judge"] = {k: v for k, v in judged.items() if k != "verdicts"}
    return outcome


_JUDGES: dict[tuple[str, str | None], Any] = {}


def judge_block(env: gym.Env, rec: EpisodeRecorder, cfg: EvalConfig) -> dict[str, Any] | None:
    """Return the ``judge`` entry of a finished episode (``None``: no judge checkpoints).

    ``checkpoints`` counts the task's judge checkpoints (``metadata["judge_checkpoints"]`` of a
    records task). Without ``cfg.judge_endpoint`` they are all ``not_judged`` and ``judge`` is
    ``None``; with it they are scored by :func:`m3gym.records.judge.score_env_judges`:
    ``judge`` = passed / judged, ``errors`` the checkpoints whose request failed (counted as not
    passed) and ``verdicts`` each checkpoint's replies (the trace keeps them, the row not).
    An episode that did not end ``ok`` is not judged; a judge that cannot be reached at all
    leaves the checkpoints not judged, with ``error`` set.
    """
    task = rec.task
    cps = list((getattr(task, "metadata", None) or {}).get("judge_checkpoints") or ())
    if task is None or not cps:
        return None
    out: dict[str, Any] = {"judge": None, "checkpoints": len(cps), "judged": 0, "passed": 0,
                           "errors": 0, "not_judged": len(cps)}
    if cfg.judge_endpoint is None or rec.status != "ok":
        return out
    from m3gym.records.judge import openai_judge, score_env_judges

    key = (cfg.judge_endpoint, cfg.judge_model)
    try:
        if key not in _JUDGES:
            _JUDGES[key] = openai_judge(cfg.judge_endpoint, cfg.judge_model)
        report = score_env_judges(env, _JUDGES[key])
    except Exception as exc:  # the judge never fails the episode: its checkpoints stay unjudged
        out["error"] = f"{type(exc).__name__}: {exc}"
        return out
    verdicts = report.as_dict()["checkpoints"]
    out.update(judge=None if report.judge is None else round(report.judge, 6),
               judged=len(report.verdicts), passed=sum(v.passed for v in report.verdicts),
               errors=sum(v.error is not None for v in report.verdicts),
               not_judged=len(cps) - len(report.verdicts), verdicts=verdicts)
    return out


def assemble_outcome(spec: EpisodeSpec, cfg: EvalConfig, rec: EpisodeRecorder) -> EpisodeOutcome:
    """Return the run-folder outcome (row, trace, thumbnails) of a recorded episode."""
    task, base, steps, final, status = rec.task, rec.base, rec.steps, rec.final, rec.status
    error, prompt = rec.error, rec.prompt
    raw_metrics = dict(final.get("metrics") or {})
    metrics = {k: _json_safe(raw_metrics.get(k)) for k in METRIC_KEYS}
    metrics.update({k: _json_safe(v) for k, v in raw_metrics.items() if k not in metrics})
    calls = sum(len(s["calls"]) for s in steps)
    ok = status == "ok"
    row = {
        "episode_id": spec.episode_id, "index": spec.index, "env": spec.env_id,
        "level": task.level if task is not None else spec.level, "family": spec.family,
        "domain": task.domain if task is not None else None,
        "task_id": f"{spec.family}/{spec.task_seed}", "task_seed": spec.task_seed,
        "task_hash": task.content_hash() if task is not None else None,
        "seed": spec.seed, "agent": cfg.agent, "split": cfg.split, "status": status,
        "error": error, "answer": final.get("answer") if ok else None,
        "answer_correct": bool(final.get("answer_correct")) if ok else None,
        "terminated": rec.terminated, "truncated": rec.truncated,
        "reward": round(rec.reward_total, 6),
        "steps": len(steps), "calls": calls if metrics["calls"] is None else metrics["calls"],
        "failure_mode": metrics.get("failure_mode") if ok else None,
        "metrics": metrics if ok else {}, "wall_s": round(rec.wall_s, 3),
    }
    if final.get("code_isolation") is not None:  # code mode: how agent code was isolated
        row["code_isolation"] = final["code_isolation"]
        row["untrusted_reward_terms"] = list(final.get("untrusted_reward_terms") or [])
    images = _image_entries(base.state, spec.episode_id, cfg.max_thumbs) if task else []
    thumbs = {}
    if task is not None:
        for entry in base.state:
            if entry.index < cfg.max_thumbs:
                thumbs[entry.index] = thumbnail_jpeg(entry.array, cfg.thumb_size)
    trace = {
        "episode_id": spec.episode_id, "env": spec.env_id, "family": spec.family,
        "level": row["level"], "task_id": row["task_id"], "task_seed": spec.task_seed,
        "seed": spec.seed, "agent": cfg.agent, "status": status, "error": error,
        "question": task.question if task is not None else None,
        "prompt": prompt,
        "task": _json_safe(task.spec_dict()) if task is not None else None,
        "task_hash": row["task_hash"],
        "answer": row["answer"], "answer_correct": row["answer_correct"],
        "reward": row["reward"], "metrics": metrics,
        "audit": _json_safe(final.get("audit") or {}),
        "steps": steps, "images": images,
        "recreate": {
            "env": spec.env_id, "env_args": _json_safe(dict(cfg.env_args)),
            "reward": cfg.reward, "reset_seed": spec.seed,
            "options": {"family": spec.family, "task_seed": spec.task_seed},
            "ops": [{"step": s["step"], "name": c.get("name"), "arguments": c.get("arguments")}
                    for s in steps for c in s["calls"]],
        },
    }
    return EpisodeOutcome(row, trace, thumbs)
