"""Composition rules and rule families for *On the Statistical Mechanisms of Distributional
Compositional Generalization* (Fu & Zheng, ICML 2025, https://openreview.net/forum?id=37NsgZkyWH).

A composition rule here is a labeling R: A x B -> Z_m of the concept grid, stored as a
``(K_a, K_b)`` integer table; it ties the label distributions of different combinations together
and is what makes unseen combinations predictable at all. A :class:`RuleFamily` is a distribution
over such tables (in the style of the paper's structured rules; its exact families are not public):

    additive_mod:m        R(a, b) = (g(a) + h(b)) mod m,  g, h uniform on Z_m
    threshold_additive    R(a, b) = 1[u_a + v_b > 0],       u, v ~ N(0, 1)
    multiplicative_mod:m  R(a, b) = (g(a) h(b)) mod m
    lookup:m              R uniform over all tables (no structure)

:class:`NFLSymmetricFamily` is the family the invariant measure is taken over: for a fixed labeling
of the seen combinations it holds the extensions of that labeling to the unseen ones such that every
unseen label takes every value of Z_m equally often (all m^|U| extensions when few enough, otherwise a
balanced cyclic design with the same property). Averaged over it, any learner's novel-combination
accuracy is exactly 1/m (the first question of the paper, operationalised).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from icml25.core.validate import check_positive

from .grid import Split

__all__ = ["RuleFamily", "NFLSymmetricFamily", "FAMILY_KINDS"]

FAMILY_KINDS = ("additive_mod", "threshold_additive", "multiplicative_mod", "lookup")

Sampler = Callable[[int, int, np.random.Generator], np.ndarray]


def _additive(m: int) -> Sampler:
    def draw(k_a: int, k_b: int, rng: np.random.Generator) -> np.ndarray:
        g, h = rng.integers(0, m, k_a), rng.integers(0, m, k_b)
        return (g[:, None] + h[None, :]) % m

    return draw


def _multiplicative(m: int) -> Sampler:
    def draw(k_a: int, k_b: int, rng: np.random.Generator) -> np.ndarray:
        g, h = rng.integers(0, m, k_a), rng.integers(0, m, k_b)
        return (g[:, None] * h[None, :]) % m

    return draw


def _threshold(k_a: int, k_b: int, rng: np.random.Generator) -> np.ndarray:
    u, v = rng.standard_normal(k_a), rng.standard_normal(k_b)
    return (u[:, None] + v[None, :] > 0).astype(np.int64)


def _lookup(m: int) -> Sampler:
    def draw(k_a: int, k_b: int, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(0, m, (k_a, k_b))

    return draw


@dataclass(frozen=True)
class RuleFamily:
    """A distribution over composition rules (label tables with values in Z_m).

    Build one with :meth:`from_spec` (``"additive_mod:3"``) or the named constructors.
    ``sample`` redraws tables that are constant on the whole grid (they carry no composition).
    """

    kind: str
    m: int

    def __post_init__(self) -> None:
        if self.kind not in FAMILY_KINDS:
            raise ValueError(f"RuleFamily.kind must be one of {FAMILY_KINDS}, got {self.kind!r}")
        check_positive("RuleFamily.m", self.m, integer=True)
        if self.m < 2:
            raise ValueError(f"RuleFamily.m must be >= 2 (labels in Z_m), got {self.m}")
        if self.kind == "threshold_additive" and self.m != 2:
            raise ValueError(f"RuleFamily.m must be 2 for threshold_additive, got {self.m}")

    @classmethod
    def additive_mod(cls, m: int) -> RuleFamily:
        return cls("additive_mod", m)

    @classmethod
    def threshold_additive(cls) -> RuleFamily:
        return cls("threshold_additive", 2)

    @classmethod
    def multiplicative_mod(cls, m: int) -> RuleFamily:
        return cls("multiplicative_mod", m)

    @classmethod
    def lookup(cls, m: int) -> RuleFamily:
        return cls("lookup", m)

    @classmethod
    def from_spec(cls, spec: str) -> RuleFamily:
        """``"kind:m"`` (or ``"threshold_additive"``) to a family."""
        if not isinstance(spec, str):
            raise TypeError(f"spec must be a string like 'additive_mod:3', got {type(spec).__name__}")
        kind, _, m = spec.partition(":")
        if kind == "threshold_additive" and not m:
            return cls.threshold_additive()
        if not m.isdigit():
            raise ValueError(f"spec must look like 'additive_mod:3' or 'threshold_additive', got {spec!r}")
        return cls(kind, int(m))

    @property
    def name(self) -> str:
        return self.kind if self.kind == "threshold_additive" else f"{self.kind}:{self.m}"

    def sample(self, k_a: int, k_b: int, rng: np.random.Generator, *, max_tries: int = 50) -> np.ndarray:
        """One ``(k_a, k_b)`` int64 label table drawn from the family (non-constant when possible)."""
        check_positive("k_a", k_a, integer=True)
        check_positive("k_b", k_b, integer=True)
        draw = {
            "additive_mod": _additive(self.m),
            "threshold_additive": _threshold,
            "multiplicative_mod": _multiplicative(self.m),
            "lookup": _lookup(self.m),
        }[self.kind]
        table = draw(k_a, k_b, rng)
        for _ in range(max_tries):
            if np.unique(table).size > 1:
                break
            table = draw(k_a, k_b, rng)
        return np.asarray(table, dtype=np.int64)

    def sample_many(self, count: int, k_a: int, k_b: int, rng: np.random.Generator) -> np.ndarray:
        """``(count, k_a, k_b)`` independent tables."""
        check_positive("count", count, integer=True)
        return np.stack([self.sample(k_a, k_b, rng) for _ in range(count)])


@dataclass(frozen=True)
class NFLSymmetricFamily:
    """The extensions of one seen labeling to the unseen combinations, balanced over Z_m.

    Args:
        seen_labels: ``(K_a, K_b)`` int table whose entries on ``split.seen`` are the fixed seen
            labels (entries on unseen combinations are ignored).
        split: the supporting / novel split.
        m: number of labels.
    """

    seen_labels: np.ndarray
    split: Split
    m: int

    def __post_init__(self) -> None:
        check_positive("m", self.m, integer=True)
        table = np.asarray(self.seen_labels)
        if table.shape != self.split.seen.shape:
            raise ValueError(
                f"seen_labels must have the grid's shape {self.split.seen.shape}, got {table.shape}"
            )
        if table.dtype.kind not in "iu":
            raise TypeError(f"seen_labels must hold integers, got dtype {table.dtype}")
        seen = table[self.split.seen]
        if seen.size and (seen.min() < 0 or seen.max() >= self.m):
            raise ValueError(f"seen_labels must lie in [0, {self.m}) on the seen combinations")

    @property
    def n_unseen(self) -> int:
        return int((~self.split.seen).sum())

    def is_enumerable(self, max_count: int) -> bool:
        return self.m**self.n_unseen <= max_count

    def extensions(self, *, max_count: int = 4096, rng: np.random.Generator | None = None) -> np.ndarray:
        """``(E, K_a, K_b)`` tables agreeing with ``seen_labels`` on S.

        All m^|U| extensions if that is at most ``max_count``; otherwise ``max_count // m`` random
        offset vectors c in Z_m^|U|, each with its m cyclic shifts c + j (j = 0..m-1), so that every
        unseen entry takes each label exactly E / m times (the family average is still exact).
        """
        check_positive("max_count", max_count, integer=True)
        unseen = ~self.split.seen
        u = self.n_unseen
        base = np.asarray(self.seen_labels, dtype=np.int64).copy()
        if self.m**u <= max_count:
            values = np.array(list(itertools.product(range(self.m), repeat=u)), dtype=np.int64)
        else:
            if rng is None:
                raise ValueError("rng is required when the extensions are too many to enumerate")
            blocks = max(1, max_count // self.m)
            offsets = rng.integers(0, self.m, (blocks, u))
            values = ((offsets[:, None, :] + np.arange(self.m)[None, :, None]) % self.m).reshape(-1, u)
        out = np.repeat(base[None], values.shape[0], axis=0)
        out[:, unseen] = values
        return out
