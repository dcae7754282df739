"""Concept grids, supporting/novel splits and samples for *On the Statistical Mechanisms of
Distributional Compositional Generalization* (Fu & Zheng, ICML 2025,
https://openreview.net/forum?id=37NsgZkyWH).

The statistical setting of distributional compositional generalization (DCG), in the style of the
authors' framework (the paper's exact construction is not public): concept sets A = {0..K_a-1} and
B = {0..K_b-1}; every combination (a, b) in E = A x B has its own distribution P_{a,b} over inputs;
training sees the *supporting* combinations S, evaluation the *novel* ones U = E \\ S.

Our generator: fixed concept embeddings e_a, e_b ~ N(0, I_d / d) and a sample of P_{a,b} is
x = [e_a + sigma xi_1, e_b + sigma xi_2] with xi ~ N(0, I_d). Labels are attached separately by a
composition rule (:mod:`.rules`), so one set of inputs serves every rule. The generator is
pluggable: learners and measures only need ``(X, combos)`` arrays, which a user can make from their
own data.

Notation: K_a, K_b concept counts, d embedding dimension, n samples per combination, rho = |S|/|E|.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml25.core.validate import check_fields, check_in_range, check_positive

__all__ = ["ConceptGrid", "Split", "make_split", "Samples"]


@dataclass(frozen=True)
class Samples:
    """Inputs drawn from the distributions of some combinations.

    Attributes:
        X: ``(N, 2 d)`` float64 inputs ``[x_A, x_B]``.
        combos: ``(N, 2)`` int64 concept indices ``(a, b)`` each input was drawn from.
    """

    X: np.ndarray
    combos: np.ndarray

    def labels(self, table: np.ndarray) -> np.ndarray:
        """``(N,)`` labels ``R(a, b)`` of every sample under the rule ``table`` (``(K_a, K_b)``)."""
        return np.asarray(table)[self.combos[:, 0], self.combos[:, 1]]

    def __len__(self) -> int:
        return int(self.X.shape[0])


@dataclass(frozen=True)
class ConceptGrid:
    """K_a x K_b concepts with Gaussian embeddings; ``sample`` draws x ~ P_{a,b}.

    Args:
        k_a: number of concepts of the first factor (>= 2).
        k_b: number of concepts of the second factor (>= 2).
        dim: embedding dimension d of each factor.
        noise: within-concept noise sigma (0 gives noise-free inputs).
        seed: seed of the embeddings.
    """

    k_a: int = 5
    k_b: int = 5
    dim: int = 8
    noise: float = 0.3
    seed: int = 0

    def __post_init__(self) -> None:
        check_fields(
            self, positive_int=("k_a", "k_b", "dim"), non_negative=("noise",), non_negative_int=("seed",)
        )
        if self.k_a < 2 or self.k_b < 2:
            raise ValueError(f"ConceptGrid.k_a and k_b must be >= 2, got {self.k_a}, {self.k_b}")

    @property
    def shape(self) -> tuple[int, int]:
        return (self.k_a, self.k_b)

    def embeddings(self) -> tuple[np.ndarray, np.ndarray]:
        """``(e_A (K_a, d), e_B (K_b, d))``, entries ~ N(0, 1/d), fixed by ``seed``."""
        rng = np.random.default_rng(self.seed)
        scale = 1.0 / np.sqrt(self.dim)
        return rng.normal(0, scale, (self.k_a, self.dim)), rng.normal(0, scale, (self.k_b, self.dim))

    def sample(self, combos: np.ndarray, n_per_combo: int, rng: np.random.Generator) -> Samples:
        """``n_per_combo`` inputs from each combination in ``combos`` (``(c, 2)`` ints).

        Args:
            combos: the combinations to draw from, e.g. ``split.seen_combos``.
            n_per_combo: samples per combination (> 0).
            rng: the generator to draw the noise from.

        Returns:
            :class:`Samples` with ``c * n_per_combo`` rows, grouped by combination.
        """
        check_positive("n_per_combo", n_per_combo, integer=True)
        combos = np.asarray(combos)
        if combos.ndim != 2 or combos.shape[1] != 2 or combos.shape[0] == 0:
            raise ValueError(f"combos must be a non-empty (c, 2) array, got shape {combos.shape}")
        if combos.dtype.kind not in "iu":
            raise TypeError(f"combos must hold integers, got dtype {combos.dtype}")
        if (combos < 0).any() or (combos[:, 0] >= self.k_a).any() or (combos[:, 1] >= self.k_b).any():
            raise ValueError(f"combos must lie in [0, {self.k_a}) x [0, {self.k_b})")
        e_a, e_b = self.embeddings()
        rep = np.repeat(combos.astype(np.int64), n_per_combo, axis=0)
        noise = self.noise * rng.standard_normal((rep.shape[0], 2 * self.dim))
        X = np.concatenate([e_a[rep[:, 0]], e_b[rep[:, 1]]], axis=1) + noise
        return Samples(X=X, combos=rep)


@dataclass(frozen=True)
class Split:
    """Supporting (seen) and novel (unseen) combinations of a grid.

    Attributes:
        seen: ``(K_a, K_b)`` bool mask of S.
    """

    seen: np.ndarray

    @property
    def seen_combos(self) -> np.ndarray:
        """``(|S|, 2)`` indices of S in row-major order."""
        return np.argwhere(self.seen)

    @property
    def unseen_combos(self) -> np.ndarray:
        """``(|U|, 2)`` indices of U = E \\ S in row-major order."""
        return np.argwhere(~self.seen)

    @property
    def seen_frac(self) -> float:
        return float(self.seen.mean())


def make_split(
    k_a: int, k_b: int, seen_frac: float, *, rng: np.random.Generator, coverage: bool = True
) -> Split:
    """A random split of the K_a x K_b grid with ``round(seen_frac |E|)`` seen combinations.

    With ``coverage`` every concept a and every concept b appears in at least one seen combination
    (a random cover of max(K_a, K_b) pairs first, then uniformly drawn extra pairs), so every
    concept is known and only its combinations are novel. At least one combination stays unseen.

    Raises:
        ValueError: ``seen_frac`` outside (0, 1), or too small for coverage.
    """
    check_positive("k_a", k_a, integer=True)
    check_positive("k_b", k_b, integer=True)
    check_in_range("seen_frac", seen_frac, 0.0, 1.0, low_open=True, high_open=True)
    total = k_a * k_b
    count = int(round(seen_frac * total))
    need = max(k_a, k_b) if coverage else 1
    if count < need or count >= total:
        raise ValueError(
            f"seen_frac={seen_frac} gives {count} seen combinations of {total}; need between {need} "
            f"and {total - 1}" + (" for coverage" if coverage else "")
        )
    mask = np.zeros((k_a, k_b), dtype=bool)
    if coverage:
        pa, pb = rng.permutation(k_a), rng.permutation(k_b)
        for i in range(max(k_a, k_b)):
            mask[pa[i % k_a], pb[i % k_b]] = True
    rest = np.flatnonzero(~mask.ravel())
    extra = rng.choice(rest, size=count - int(mask.sum()), replace=False)
    mask.ravel()[extra] = True
    return Split(seen=mask)
