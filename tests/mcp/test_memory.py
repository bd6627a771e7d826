"""An MCP server's memory: a pooled env keeps no episode's images; freed memory goes back."""

import sys

import gymnasium as gym

import m3gym  # noqa: F401  (registers the env ids)
from m3gym.mcp.memory import image_bytes, release_episode_images, release_memory


def test_a_released_env_holds_no_images_and_resets_again() -> None:
    env = gym.make("M3Bench-L2", disable_env_checker=True)
    env.reset(seed=4)
    held = image_bytes(env)
    assert held > 0
    release_episode_images(env)
    assert image_bytes(env) == 0 and env.unwrapped.task is None
    obs, _ = env.reset(seed=4)  # reset rebuilds what it needs
    assert image_bytes(env) == held and len(obs["image_indices"]) >= 1


def test_release_memory_says_whether_it_could() -> None:
    done = release_memory()
    assert isinstance(done, bool)
    if sys.platform.startswith("linux"):
        import ctypes.util

        assert done == bool(ctypes.util.find_library("c"))
