"""One planned episode, run into the record, trace and thumbnails a run folder keeps."""

import cv2
import numpy as np

import m3gym  # noqa: F401  (registers the env ids)
from m3gym.eval.config import METRIC_KEYS, EvalConfig
from m3gym.eval.outcome import run_episode_outcome, thumbnail_jpeg
from m3gym.eval.plan import plan_episodes


def test_thumbnails_keep_the_aspect_within_the_size() -> None:
    rgb = np.zeros((300, 600, 3), np.uint8)
    rgb[:, :300, 0] = 255  # red left half
    img = cv2.imdecode(np.frombuffer(thumbnail_jpeg(rgb, 120), np.uint8), cv2.IMREAD_COLOR)
    assert img.shape == (60, 120, 3)
    assert img[30, 20, 2] > 200 and img[30, 20, 0] < 60  # still red (BGR on disk)
    gray = np.full((50, 40), 128, np.uint8)
    small = cv2.imdecode(np.frombuffer(thumbnail_jpeg(gray, 256), np.uint8),
                         cv2.IMREAD_UNCHANGED)
    assert small.shape == (50, 40)  # never enlarged


def test_an_oracle_episode_outcome() -> None:
    cfg = EvalConfig(envs=("M3Bench-L1",), agent="oracle", episodes=1, max_thumbs=1)
    spec = plan_episodes(cfg)[0]
    outcome = run_episode_outcome(spec, cfg)
    record, trace = outcome.row, outcome.trace
    assert record["episode_id"] == spec.episode_id and record["status"] == "ok"
    assert record["answer_correct"] is True and set(METRIC_KEYS) <= set(record["metrics"])
    assert "judge" not in record  # no judge checkpoints in a generated task
    assert trace["recreate"]["reset_seed"] == spec.seed
    assert trace["recreate"]["options"] == {"family": spec.family, "task_seed": spec.task_seed}
    assert len(trace["images"]) > 1 and list(outcome.thumbs) == [0]  # max_thumbs
    assert trace["images"][1]["thumb"] is None
