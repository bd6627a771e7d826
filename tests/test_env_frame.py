"""Render modes: a constant ``rgb_array`` frame shape on every id (``RecordVideo`` records it)
and a deterministic ``ansi`` description that shows only what the agent has seen."""

from __future__ import annotations

import importlib.util

import gymnasium as gym
import numpy as np
import pytest

import m3gym
from m3gym.env_frame import FRAME_SHAPE, compose_frame, frame_indices
from m3gym.wrappers import discrete_env_ids

ALL_IDS = sorted(set(m3gym.env_ids()) | set(discrete_env_ids()))
STEPS = 8  # more new images than a frame has tiles (6): the frame must not grow


def registered_m3gym_ids() -> list[str]:
    """Every id in Gymnasium's registry whose entry point is m3gym's."""
    return sorted(k for k, spec in gym.registry.items()
                  if str(spec.entry_point).startswith("m3gym"))


def scripted_action(env_id: str, env: gym.Env, k: int) -> object:
    """A crop of Image 0 (a new image per step), or a sampled action on the discrete ids."""
    if "Discrete" in env_id:
        return env.action_space.sample()
    return {"name": "crop", "arguments": {"image_index": 0,
                                          "bbox_2d": [60 * k, 0, 60 * k + 400, 500]}}


def run_episode(env_id: str, env: gym.Env, seed: int = 0) -> list[np.ndarray]:
    """Reset, take up to ``STEPS`` steps, answer (base ids); return every rendered frame."""
    env.reset(seed=seed)
    env.action_space.seed(seed)
    frames = [env.render()]
    for k in range(STEPS):
        _, _, terminated, truncated, _ = env.step(scripted_action(env_id, env, k))
        frames.append(env.render())
        if terminated or truncated:
            return frames
    if "Discrete" not in env_id:
        env.step({"name": "answer", "arguments": {"text": "x"}})
        frames.append(env.render())
    return frames


# Taken at import, before any test registers ids of its own (e.g. test_curriculum's toy family).
REGISTERED_AT_IMPORT = registered_m3gym_ids()


def test_the_id_list_covers_the_registry():
    assert ALL_IDS == REGISTERED_AT_IMPORT


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_rgb_frames_keep_one_shape_for_the_whole_episode(env_id):
    env = gym.make(env_id, render_mode="rgb_array")
    assert env.metadata["render_frame_shape"] == FRAME_SHAPE
    assert "ansi" in env.metadata["render_modes"]
    frames = run_episode(env_id, env)
    assert len(frames) >= 3
    for frame in frames:
        assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8
        assert frame.shape == FRAME_SHAPE
    assert frames[0].std() > 0  # Image 0 is drawn
    if "Discrete" not in env_id:
        assert not np.array_equal(frames[0], frames[2])  # new images appear
    env.close()


@pytest.mark.skipif(importlib.util.find_spec("moviepy") is None,
                    reason="RecordVideo needs moviepy (pip install -e \".[video]\")")
@pytest.mark.parametrize("env_id", ALL_IDS)
def test_record_video_records_an_episode(env_id, tmp_path):
    from gymnasium.wrappers import RecordVideo

    env = RecordVideo(gym.make(env_id, render_mode="rgb_array"), str(tmp_path / "videos"),
                      episode_trigger=lambda _: True, disable_logger=True)
    run_episode(env_id, env)
    env.close()
    videos = list((tmp_path / "videos").glob("*.mp4"))
    assert len(videos) == 1 and videos[0].stat().st_size > 1000


def test_frame_shows_image_zero_and_the_latest_images():
    assert frame_indices(0) == []
    assert frame_indices(3) == [0, 1, 2]
    assert frame_indices(6) == [0, 1, 2, 3, 4, 5]
    assert frame_indices(10) == [0, 5, 6, 7, 8, 9]
    with pytest.raises(ValueError, match="slots"):
        frame_indices(3, slots=0)


def test_compose_frame_fits_any_view_and_refuses_too_many_tiles():
    tiles = [np.full((768, 300, 3), 200, np.uint8), np.full((40, 96), 90, np.uint8)]
    frame = compose_frame(tiles, ["0 input", "1 grayscale<0"], "status")
    assert frame.shape == FRAME_SHAPE
    # a tall view is fitted to the tile's height; a small grey one is enlarged to the tile
    assert (frame[60:288, :100] == 200).all() and (frame[60:288, 101:256] == 32).all()
    assert (frame[60:138, 260:500] == 90).all() and (frame[140:288, 260:500] == 32).all()
    with pytest.raises(ValueError, match="at most 6 tiles"):
        compose_frame([tiles[0]] * 7, ["x"] * 7, "")


def test_render_before_reset_and_unknown_mode():
    env = m3gym.M3BenchEnv(family="tiny_text", render_mode="rgb_array")
    assert env.render().shape == FRAME_SHAPE
    assert "reset" in m3gym.M3BenchEnv(family="tiny_text", render_mode="ansi").render()
    assert m3gym.M3BenchEnv(family="tiny_text").render() is None
    with pytest.raises(ValueError, match="render_mode"):
        m3gym.M3BenchEnv(family="tiny_text", render_mode="human")


def test_ansi_describes_the_state():
    env = gym.make("M3Bench-TinyText-v4", render_mode="ansi", show_choices=True)
    obs, info = env.reset(seed=3)
    task = env.unwrapped.task
    text = env.render()
    assert isinstance(text, str) and " ".join(task.question.split()) in text
    assert "step 0/15" in text and "calls 0/15" in text and "running" in text
    h, w = task.images[0].shape[:2]
    assert f"#0 {w}x{h}" in text and "input" in text
    if task.choices:
        assert "Choices: " + " | ".join(task.choices) in text
    env.step([{"name": "crop", "arguments": {"image_index": 0, "bbox_2d": [0, 0, 500, 500],
                                             "zoom_scale": 2.0}},
              {"name": "rotate", "arguments": {"image_index": 7, "angle": 90}}])
    text = env.render()
    assert "#1 " in text and "crop of #0" in text and '"zoom_scale": 2.0' in text
    assert "Last step (1):" in text and "image_index 7 does not exist" in text
    assert "step 1/15" in text and "calls 2/15" in text
    env.step({"name": "answer", "arguments": {"text": "my guess"}})
    text = env.render()
    assert "answered" in text and "Answer: my guess" in text


def test_ansi_is_deterministic_per_seed():
    texts = []
    for _ in range(2):
        env = gym.make("M3Bench-L2-v4", render_mode="ansi")
        env.reset(seed=5)
        env.step({"name": "grayscale", "arguments": {"image_index": 0}})
        texts.append(env.render())
    assert texts[0] == texts[1]


@pytest.mark.parametrize("family", ["tiny_text", "receipt_total", "clock_reading", "code_lookup"])
def test_ansi_never_shows_an_answer_the_observation_does_not(family):
    for seed in range(4):
        env = m3gym.M3BenchEnv(family=family, render_mode="ansi")
        obs, info = env.reset(seed=seed)
        seen = obs["text"] + " ".join(info["choices"] or [])
        answer = str(env.task.answer.value)
        if answer not in seen:
            assert answer not in env.render()
