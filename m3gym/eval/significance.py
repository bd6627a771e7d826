"""Exact tests of "no better than chance" for success counts over tasks of different chance.

Episode ``i`` succeeds with probability ``p_i`` under the null (e.g. ``1 / len(choices)``); the
number of successes then follows the Poisson-binomial distribution of ``p``. Its upper critical
value at level ``alpha`` is the bound an agent that cannot see the answer must stay under — a
bound derived from the sample, with no slack constant — and :func:`power` says how likely that
bound is to catch a given alternative (e.g. twice chance), so a test can show it is able to fail.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _probabilities(ps: Sequence[float]) -> np.ndarray:
    arr = np.asarray(ps, dtype=float)
    if arr.ndim != 1 or not np.all((arr >= 0) & (arr <= 1)):
        raise ValueError("success probabilities must be a 1-D sequence of values in [0, 1]")
    return arr


def poisson_binomial_pmf(ps: Sequence[float]) -> np.ndarray:
    """Return ``P(S = k)`` for ``k = 0..n``, ``S`` the sum of independent Bernoulli(``ps``)."""
    pmf = np.zeros(1)
    pmf[0] = 1.0
    for p in _probabilities(ps):
        nxt = np.zeros(len(pmf) + 1)
        nxt[:-1] += pmf * (1.0 - p)
        nxt[1:] += pmf * p
        pmf = nxt
    return pmf


def upper_tail(ps: Sequence[float], k: int) -> float:
    """Return ``P(S >= k)`` under the Poisson-binomial distribution of ``ps``."""
    pmf = poisson_binomial_pmf(ps)
    if k <= 0:
        return 1.0
    return float(min(1.0, pmf[k:].sum()))


def critical_count(ps: Sequence[float], alpha: float) -> int:
    """Return the smallest ``k`` with ``P(S >= k) <= alpha``: reject "at most chance" at ``k``.

    Counts ``>= k`` are significantly above the null at level ``alpha`` (exact, one-sided).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    pmf = poisson_binomial_pmf(ps)
    tails = np.cumsum(pmf[::-1])[::-1]  # tails[k] = P(S >= k)
    above = np.nonzero(tails <= alpha)[0]
    return int(above[0]) if len(above) else len(pmf)


def power(null_ps: Sequence[float], alt_ps: Sequence[float], alpha: float) -> float:
    """Return the probability that :func:`critical_count` of ``null_ps`` catches ``alt_ps``."""
    if len(null_ps) != len(alt_ps):
        raise ValueError("null and alternative need one probability per episode each")
    return upper_tail(alt_ps, critical_count(null_ps, alpha))


def binomial_floor(successes: int, n: int, z: float) -> float:
    """Return ``p̂ − z·sqrt(p̂(1 − p̂)/n)``: a floor ``z`` standard errors under a measured rate."""
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n and n > 0, got {successes}/{n}")
    p = successes / n
    return p - z * float(np.sqrt(p * (1.0 - p) / n))
