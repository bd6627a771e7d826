"""The supervised probe the diagnostics share: the classic configs' CNN and a linear head.

``fit_cnn_probe`` trains ``PooledCNN(grid=3)`` (the extractor the classic configs name) plus a
linear head by cross-entropy on ``uint8`` frames, and yields its held-out predictions after each
epoch. Imported by the scripts beside it (run as ``python training/diagnostics/<script>.py``).
"""

from __future__ import annotations

from collections.abc import Iterator

import gymnasium as gym
import numpy as np


def fit_cnn_probe(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, classes: int,
                  epochs: int, batch_size: int = 64) -> Iterator[np.ndarray]:
    """Yield the held-out predicted classes of ``x_test`` after each of ``epochs`` epochs.

    ``x_*`` are ``(n, side, side, 3)`` ``uint8`` frames, ``y_train`` their integer labels in
    ``[0, classes)``. Adam at 1e-3, one torch thread, torch seed 0.
    """
    import torch

    from m3gym.wrappers.extractors import PooledCNN

    torch.manual_seed(0)
    torch.set_num_threads(1)

    def to_tensor(frames: np.ndarray) -> torch.Tensor:
        return torch.tensor(frames).permute(0, 3, 1, 2).float() / 255

    x_tr, x_te, y_tr = to_tensor(x_train), to_tensor(x_test), torch.tensor(y_train)
    space = gym.spaces.Box(0, 255, (3, *x_train.shape[1:3]), np.uint8)
    net = torch.nn.Sequential(PooledCNN(space, 256, grid=3), torch.nn.Linear(256, classes))
    opt = torch.optim.Adam(net.parameters(), 1e-3)
    for _ in range(epochs):
        perm = torch.randperm(len(x_tr))
        for i in range(0, len(x_tr), batch_size):
            batch = perm[i:i + batch_size]
            loss = torch.nn.functional.cross_entropy(net(x_tr[batch]), y_tr[batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            yield net(x_te).argmax(1).numpy()
