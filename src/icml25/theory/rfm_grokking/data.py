"""Modular-arithmetic data for *Emergence in non-neural models: grokking modular arithmetic via
average gradient outer product* (Mallinar et al., ICML 2025, https://arxiv.org/abs/2407.20199).

All pairs (a, b) of residues mod a prime p, encoded as the concatenated one-hots e_a ⊕ e_b ∈ R^{2p},
with one-hot targets e_{a∘b} ∈ R^p (Sec. 2 of the paper; `data.py` of the official code). Division
x/y is posed as the pair (x·y mod p, y) with label x, y ≠ 0, so it has p(p−1) examples.

Implements: the four tasks x+y, x−y, x·y, x/y and the random train/test split (first ⌊r·N⌋ of a
random permutation go to training). Left out: the polynomial tasks of the official code.

Notation: p the prime, N the number of pairs, n = ⌊r·N⌋ training pairs, d = 2p input dimension.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OPERATIONS: tuple[str, ...] = ("add", "sub", "mul", "div")


def is_prime(p: int) -> bool:
    """True when ``p`` is a prime number (trial division; p is small here)."""
    if p < 2:
        return False
    if p < 4:
        return True
    if p % 2 == 0:
        return False
    f = 3
    while f * f <= p:
        if p % f == 0:
            return False
        f += 2
    return True


def check_prime(p: object, name: str = "p") -> int:
    """Return ``p`` as an int, or raise ValueError naming ``name`` when it is not a prime."""
    if isinstance(p, bool) or not isinstance(p, int | np.integer):
        raise ValueError(f"{name} must be a prime integer, got {p!r}")
    if not is_prime(int(p)):
        raise ValueError(f"{name} must be a prime number (e.g. 31, 59, 61), got {p}")
    return int(p)


def check_op(op: object) -> str:
    """Return ``op`` or raise ValueError listing the known operations."""
    if op not in OPERATIONS:
        raise ValueError(f"op must be one of {OPERATIONS}, got {op!r}")
    return str(op)


def modular_pairs(p: int, op: str) -> tuple[np.ndarray, np.ndarray]:
    """All input pairs and labels of ``a ∘ b mod p``, in lexicographic order.

    Args:
        p: a prime.
        op: ``"add"``, ``"sub"``, ``"mul"`` or ``"div"``.

    Returns:
        ``(pairs, labels)``: int64 arrays of shape (N, 2) and (N,), N = p² (p(p−1) for ``div``).
        For ``div`` a pair is (x·y mod p, y) and its label is x, so that label = a · b⁻¹ mod p.
    """
    p = check_prime(p)
    op = check_op(op)
    x = np.repeat(np.arange(p, dtype=np.int64), p if op != "div" else p - 1)
    y = np.tile(np.arange(0 if op != "div" else 1, p, dtype=np.int64), p)
    if op == "add":
        a, b, c = x, y, x + y
    elif op == "sub":
        a, b, c = x, y, x - y
    elif op == "mul":
        a, b, c = x, y, x * y
    else:  # div: (x·y mod p, y) -> x, as in the official code
        a, b, c = (x * y) % p, y, x
    return np.stack([a, b], axis=1), np.mod(c, p)


def one_hot_pairs(pairs: np.ndarray, p: int) -> np.ndarray:
    """Encode integer pairs (N, 2) as e_a ⊕ e_b, a float64 array of shape (N, 2p)."""
    pairs = np.asarray(pairs)
    X = np.zeros((pairs.shape[0], 2 * p))
    rows = np.arange(pairs.shape[0])
    X[rows, pairs[:, 0]] = 1.0
    X[rows, p + pairs[:, 1]] = 1.0
    return X


def one_hot_labels(labels: np.ndarray, p: int) -> np.ndarray:
    """Encode integer labels (N,) as one-hot float64 targets of shape (N, p)."""
    labels = np.asarray(labels)
    Y = np.zeros((labels.shape[0], p))
    Y[np.arange(labels.shape[0]), labels] = 1.0
    return Y


@dataclass(frozen=True, eq=False)
class ModularDataset:
    """A train/test split of one modular-arithmetic task.

    Attributes:
        X_train: (n, 2p) float64 one-hot inputs e_a ⊕ e_b.
        Y_train: (n, p) float64 one-hot targets e_{a∘b}.
        X_test: (N − n, 2p).
        Y_test: (N − n, p).
        pairs_train: (n, 2) int64 pairs (a, b) behind ``X_train``.
        labels_train: (n,) int64 labels a∘b mod p.
        pairs_test: (N − n, 2).
        labels_test: (N − n,).
        p: the prime.
        op: the operation.
        train_frac: the requested training fraction r.
    """

    X_train: np.ndarray
    Y_train: np.ndarray
    X_test: np.ndarray
    Y_test: np.ndarray
    pairs_train: np.ndarray
    labels_train: np.ndarray
    pairs_test: np.ndarray
    labels_test: np.ndarray
    p: int
    op: str
    train_frac: float

    @property
    def n_train(self) -> int:
        return int(self.X_train.shape[0])

    @property
    def n_test(self) -> int:
        return int(self.X_test.shape[0])


def modular_dataset(
    p: int, op: str, train_frac: float, seed: int | np.random.Generator = 0
) -> ModularDataset:
    """All pairs of ``a ∘ b mod p``, randomly split into train and test.

    Args:
        p: a prime (the paper uses 61; Fig. 1 uses 59).
        op: ``"add"``, ``"sub"``, ``"mul"`` or ``"div"``.
        train_frac: fraction r in (0, 1) of the N pairs used for training; the first ⌊r·N⌋ pairs
            of a random permutation (0.5 for kernels, 0.3 for networks in the paper's code).
        seed: an int seed or a ``numpy.random.Generator`` for the permutation.

    Returns:
        A :class:`ModularDataset`. The same seed gives the same split.

    Raises:
        ValueError: if ``p`` is not prime, ``op`` is unknown, or ``train_frac`` leaves an empty
            train or test set.
    """
    p = check_prime(p)
    op = check_op(op)
    if isinstance(train_frac, bool) or not isinstance(train_frac, float | int | np.floating):
        raise ValueError(f"train_frac must be a number in (0, 1), got {train_frac!r}")
    if not 0.0 < float(train_frac) < 1.0:
        raise ValueError(f"train_frac must lie in (0, 1), got {train_frac}")
    pairs, labels = modular_pairs(p, op)
    N = pairs.shape[0]
    n = int(np.floor(float(train_frac) * N))
    if n < 1 or n >= N:
        raise ValueError(
            f"train_frac={train_frac} gives {n} training pairs out of {N}; need at least one pair "
            "in both train and test"
        )
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    perm = rng.permutation(N)
    tr, te = perm[:n], perm[n:]
    return ModularDataset(
        X_train=one_hot_pairs(pairs[tr], p),
        Y_train=one_hot_labels(labels[tr], p),
        X_test=one_hot_pairs(pairs[te], p),
        Y_test=one_hot_labels(labels[te], p),
        pairs_train=pairs[tr],
        labels_train=labels[tr],
        pairs_test=pairs[te],
        labels_test=labels[te],
        p=p,
        op=op,
        train_frac=float(train_frac),
    )
