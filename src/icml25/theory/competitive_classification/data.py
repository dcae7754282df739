"""Users for accuracy markets: a synthetic rings distribution and noisy scikit-learn datasets.

Einav & Rosenfeld, *A Market for Accuracy: Classification under Competition*, ICML 2025
(https://arxiv.org/abs/2502.18052), run experiments "from simple synthetic distributions to noisy
real datasets"; the paper's own datasets could not be read, so these are our stand-ins:

    make_rings      8 Gaussian clusters on a circle with alternating labels and label noise: no linear
                    classifier is right everywhere, so providers can specialise on different clusters
    make_synthetic  rings, two moons, two concentric circles or XOR clusters (2-D, binary, label
                    noise): populations on which a linear model's errors depend on the features, so a
                    best response has users it can win
    market_data     provider pools, a public (unlabelled) query set and evaluation users from a
                    synthetic population or scikit-learn's bundled breast_cancer, digits (even vs odd)
                    and wine

On the noisy real datasets the users that no linear incumbent serves are mostly the injected label
flips, which no classifier can target; there a best response has little to gain (the check reports
them as a robustness cell, and judges the claim on the synthetic populations).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml25.core.validate import check_in_range, check_positive

__all__ = [
    "DATASETS",
    "SYNTHETIC",
    "REAL",
    "MarketData",
    "make_rings",
    "make_synthetic",
    "flip_labels",
    "market_data",
]

#: 2-D binary populations with room for a best response (a linear model's errors depend on x)
SYNTHETIC: tuple[str, ...] = ("rings", "moons", "circles", "xor")
#: noisy scikit-learn datasets (their unserved users are mostly injected label flips)
REAL: tuple[str, ...] = ("breast_cancer", "digits_parity", "wine")
DATASETS: tuple[str, ...] = SYNTHETIC + REAL


def make_rings(
    n: int,
    n_clusters: int = 8,
    radius: float = 3.0,
    sigma: float = 0.35,
    noise: float = 0.1,
    seed: int | np.random.Generator = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` users from ``n_clusters`` Gaussian clusters on a circle, labels alternating 0/1.

    Returns:
        X (n, 2) float64 and y (n,) int64; a fraction ``noise`` of labels is flipped.
    """
    check_positive("n", n, integer=True)
    check_positive("n_clusters", n_clusters, integer=True)
    if n_clusters < 2:
        raise ValueError(f"n_clusters must be >= 2, got {n_clusters}")
    check_positive("radius", radius)
    check_positive("sigma", sigma)
    check_in_range("noise", noise, 0.0, 0.5)
    rng = np.random.default_rng(seed)
    k = rng.integers(0, n_clusters, size=n)
    angle = 2.0 * np.pi * k / n_clusters
    centres = radius * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    X = centres + sigma * rng.standard_normal((n, 2))
    y = (k % 2).astype(np.int64)
    return X, flip_labels(y, noise, rng)


def make_synthetic(
    name: str, n: int, noise: float = 0.1, seed: int | np.random.Generator = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` users of the 2-D binary population ``name`` with a fraction ``noise`` of labels flipped.

    ``rings``: :func:`make_rings`. ``moons``: two interleaving half circles (radius 1, Gaussian jitter
    0.2). ``circles``: two concentric circles (radii 1 and 0.5, jitter 0.1). ``xor``: four Gaussian
    clusters (sd 0.4) at (+-1, +-1), label 1 where the coordinates' signs differ.

    Returns:
        X (n, 2) float64 and y (n,) int64.
    """
    if name not in SYNTHETIC:
        raise ValueError(f"name must be one of {SYNTHETIC}, got {name!r}")
    check_positive("n", n, integer=True)
    check_in_range("noise", noise, 0.0, 0.5)
    rng = np.random.default_rng(seed)
    if name == "rings":
        return make_rings(n, noise=noise, seed=rng)
    y = rng.integers(0, 2, size=n).astype(np.int64)
    if name == "moons":
        t = np.pi * rng.random(n)
        X = np.where(
            (y == 0)[:, None],
            np.stack([np.cos(t), np.sin(t)], axis=1),
            np.stack([1.0 - np.cos(t), 0.5 - np.sin(t)], axis=1),
        )
        X = X + 0.2 * rng.standard_normal((n, 2))
    elif name == "circles":
        t = 2.0 * np.pi * rng.random(n)
        r = np.where(y == 0, 1.0, 0.5)
        X = r[:, None] * np.stack([np.cos(t), np.sin(t)], axis=1) + 0.1 * rng.standard_normal((n, 2))
    else:  # xor
        signs = rng.choice([-1.0, 1.0], size=(n, 2))
        X = signs + 0.4 * rng.standard_normal((n, 2))
        y = (signs[:, 0] != signs[:, 1]).astype(np.int64)
    return X, flip_labels(y, noise, rng)


def flip_labels(y: np.ndarray, noise: float, seed: int | np.random.Generator = 0) -> np.ndarray:
    """Symmetric label noise: each label is replaced, with probability ``noise``, by another class."""
    check_in_range("noise", noise, 0.0, 1.0)
    rng = np.random.default_rng(seed)
    y = np.array(y, dtype=np.int64)
    classes: np.ndarray = np.asarray(np.unique(y))
    if classes.size < 2 or noise == 0.0:
        return y
    flip = rng.random(y.shape[0]) < noise
    shift: np.ndarray = np.asarray(
        rng.integers(1, classes.size, size=y.shape[0])
    )  # a uniformly random *other* class
    pos: np.ndarray = np.asarray(np.searchsorted(classes, y))
    out: np.ndarray = y.copy()
    out[flip] = classes[(pos[flip] + shift[flip]) % classes.size]
    return out


@dataclass(frozen=True)
class MarketData:
    """Users of one market: one labelled pool per provider, unlabelled query users, evaluation users."""

    pools: tuple[tuple[np.ndarray, np.ndarray], ...]
    X_query: np.ndarray
    X_eval: np.ndarray
    y_eval: np.ndarray
    name: str


def _load(name: str) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets

    if name == "breast_cancer":
        X, y = datasets.load_breast_cancer(return_X_y=True)
    elif name == "digits_parity":
        X, y = datasets.load_digits(return_X_y=True)
        y = y % 2
    elif name == "wine":
        X, y = datasets.load_wine(return_X_y=True)
    else:
        raise ValueError(f"name must be one of {DATASETS}, got {name!r}")
    return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.int64)


def market_data(
    name: str,
    n_pools: int,
    *,
    seed: int = 0,
    pool_size: int = 1000,
    eval_size: int = 10_000,
    query_size: int = 200,
    noise: float | None = None,
    eval_fraction: float = 0.4,
    query_fraction: float = 0.1,
    eval_noise: bool = True,
) -> MarketData:
    """Pools for ``n_pools`` providers, a query set and evaluation users from dataset ``name``.

    Synthetic populations (``SYNTHETIC``: rings, moons, circles, xor): i.i.d. draws (``pool_size`` per
    pool, ``query_size`` query users, ``eval_size`` evaluation users; 10% label noise everywhere
    unless ``noise`` is given). Real datasets: a
    ``eval_fraction`` evaluation split; of the rest, ``query_fraction`` becomes the
    query set and the remainder is split evenly into the pools, whose labels get symmetric noise
    (``noise``, default 0.2). With ``eval_noise`` (default) the evaluation users' labels get the same
    noise: noise is then part of the user population, as in ``rings``, and a user's label is what that
    user counts as correct; without it, only the providers' training labels are corrupted. Features are
    standardised with the non-evaluation part's statistics.
    """
    check_positive("n_pools", n_pools, integer=True)
    rng = np.random.default_rng([seed, 7])
    if name in SYNTHETIC:
        lvl = 0.1 if noise is None else noise
        check_positive("pool_size", pool_size, integer=True)
        check_positive("eval_size", eval_size, integer=True)
        check_positive("query_size", query_size, integer=True)
        pools = tuple(make_synthetic(name, pool_size, noise=lvl, seed=rng) for _ in range(n_pools))
        X_query, _ = make_synthetic(name, query_size, noise=lvl, seed=rng)
        X_eval, y_eval = make_synthetic(name, eval_size, noise=lvl, seed=rng)
        return MarketData(pools, X_query, X_eval, y_eval, name)
    lvl = 0.2 if noise is None else noise
    check_in_range("eval_fraction", eval_fraction, 0.0, 1.0, low_open=True, high_open=True)
    check_in_range("query_fraction", query_fraction, 0.0, 1.0, high_open=True)
    X, y = _load(name)
    perm = rng.permutation(X.shape[0])
    n_eval = int(round(eval_fraction * X.shape[0]))
    ev, rest = perm[:n_eval], perm[n_eval:]
    n_query = int(round(query_fraction * rest.size))
    qu, train = rest[:n_query], rest[n_query:]
    if train.size < 4 * n_pools:
        raise ValueError(f"n_pools={n_pools} leaves fewer than 4 users per pool in {name!r}")
    mu, sd = X[rest].mean(axis=0), X[rest].std(axis=0)
    sd[sd == 0] = 1.0
    Z = (X - mu) / sd
    pools = tuple((Z[part], flip_labels(y[part], lvl, rng)) for part in np.array_split(train, n_pools))
    y_eval = flip_labels(y[ev], lvl, rng) if eval_noise else y[ev]
    return MarketData(pools, Z[qu], Z[ev], y_eval, name)
