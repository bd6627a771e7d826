"""Tests of the translation-invariant policy extractor and the config's class resolution."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "training"))

import gymnasium as gym  # noqa: E402
from train_sb3 import resolve_policy_kwargs  # noqa: E402

from m3gym.wrappers.extractors import PooledCNN, PooledCombinedExtractor  # noqa: E402


def test_pooled_cnn_is_translation_invariant() -> None:
    torch.manual_seed(0)
    net = PooledCNN(gym.spaces.Box(0, 255, (3, 64, 64), np.uint8), features_dim=32).eval()
    glyph = torch.rand(3, 12, 12)
    a, b = torch.zeros(1, 3, 64, 64), torch.zeros(1, 3, 64, 64)
    # moved by multiples of the total stride (4), at least one receptive field (16 px) from
    # every border, so every window that sees part of the glyph exists in both frames
    a[:, :, 16:28, 16:28] = glyph
    b[:, :, 32:44, 36:48] = glyph
    with torch.no_grad():
        fa, fb = net(a), net(b)
    assert fa.shape == (1, 32)
    assert torch.allclose(fa, fb, atol=1e-6)


def test_grid_pooling_tells_cells_apart_and_keeps_shifts_inside_a_cell() -> None:
    torch.manual_seed(0)
    net = PooledCNN(gym.spaces.Box(0, 255, (3, 64, 64), np.uint8), features_dim=32,
                    grid=3).eval()
    assert net.linear[0].in_features == 64 * (1 + 9)
    glyph = torch.rand(3, 8, 8)

    def pooled(y: int, x: int) -> torch.Tensor:
        img = torch.zeros(1, 3, 64, 64)
        img[:, :, y:y + 8, x:x + 8] = glyph
        with torch.no_grad():
            fmap = net.cnn(img)
            return torch.cat([net.global_pool(fmap), net.grid_pool(fmap)], dim=1)[0]

    # multiples of the total stride (4), a receptive field (16 px) from every border
    top_left, bottom_right = pooled(16, 16), pooled(40, 40)
    # the global half is the same, the grid half says which cell the glyph is in
    assert torch.allclose(top_left[:64], bottom_right[:64], atol=1e-6)
    assert not torch.allclose(top_left[64:], bottom_right[64:])
    with pytest.raises(ValueError, match="grid"):
        PooledCNN(gym.spaces.Box(0, 255, (3, 64, 64), np.uint8), grid=-1)


def test_combined_extractor_dims_and_forward() -> None:
    space = gym.spaces.Dict({
        "image": gym.spaces.Box(0, 255, (3, 64, 64), np.uint8),  # channel-first, as SB3 passes
        "features": gym.spaces.Box(0.0, 1.0, (7,), np.float32),
    })
    ext = PooledCombinedExtractor(space, cnn_output_dim=16)
    assert ext.features_dim == 16 + 7
    out = ext({"image": torch.rand(2, 3, 64, 64), "features": torch.rand(2, 7)})
    assert out.shape == (2, 23)


def test_resolve_policy_kwargs_imports_classes() -> None:
    kw = resolve_policy_kwargs({
        "features_extractor_class": "m3gym.wrappers.extractors:PooledCombinedExtractor",
        "features_extractor_kwargs": {"cnn_output_dim": 8}, "net_arch": [64]})
    assert kw["features_extractor_class"] is PooledCombinedExtractor
    assert kw["features_extractor_kwargs"] == {"cnn_output_dim": 8} and kw["net_arch"] == [64]
    assert resolve_policy_kwargs({}) is None and resolve_policy_kwargs(None) is None
    with pytest.raises(ValueError, match="module:Name"):
        resolve_policy_kwargs({"features_extractor_class": "no_colon"})


def test_maskable_ppo_builds_with_the_extractor_on_the_classic_env() -> None:
    from sb3_contrib import MaskablePPO

    env = gym.make("M3Bench-Classic-Discrete", obs_size=48, task_pool=2, cache_size=2)
    model = MaskablePPO("MultiInputPolicy", env, n_steps=16, batch_size=16, n_epochs=1,
                        policy_kwargs=resolve_policy_kwargs({
                            "features_extractor_class":
                                "m3gym.wrappers.extractors:PooledCombinedExtractor"}),
                        device="cpu")
    model.learn(32)
    obs, _ = env.reset(seed=0)
    action, _ = model.predict(obs, action_masks=env.get_wrapper_attr("action_masks")())
    assert env.action_space.contains(action)
