"""Learning algorithms compared in the simulations of *On the Statistical Mechanisms of
Distributional Compositional Generalization* (Fu & Zheng, ICML 2025,
https://openreview.net/forum?id=37NsgZkyWH).

Every learner follows one small protocol: ``fit(X, y, combos, m)`` sees inputs ``X`` (``(N, 2 d)``,
the two factor halves side by side), labels ``y`` in Z_m and the combination ``(a, b)`` each training
input was drawn from (the supporting distributions are indexed by their combination), and
``predict(X)`` returns labels for new inputs, whose combinations it is *not* told. The set spans the
inductive biases the compatibility/sensitivity question needs (in the style of the paper; its own
learners are not public):

    logistic      multinomial logistic regression on x: logits additive in x_A and x_B
    factorized    softmax(phi(x_A) + psi(x_B)), phi and psi small MLPs (additive logits)
    mlp           a plain MLP on x
    knn           k-nearest neighbours on x
    concept_rule  decode (a, b) by nearest concept centroid, then fit R = (g(a) + h(b)) mod m on the
                  seen table by constraint propagation (compatible with additive-mod rules only)
    lookup        decode (a, b), memorise the seen table, predict a fixed label on unseen combinations
                  (perfect in-distribution, zero sensitivity on novel combinations)
    majority      the most frequent training label everywhere

The neural learners are trained with Adam through :func:`icml25.nn.fit` for a fixed step budget.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from icml25.core.validate import check_finite_array, check_positive
from icml25.nn import FitConfig, fit

__all__ = [
    "Learner",
    "LogisticLearner",
    "FactorizedLearner",
    "MLPLearner",
    "KNNLearner",
    "ConceptRuleLearner",
    "LookupLearner",
    "MajorityLearner",
    "LEARNERS",
    "make_learner",
    "fit_predict_many",
    "check_training_data",
    "fit_additive_mod",
]


class Learner(Protocol):
    """What the measures need from a learning algorithm."""

    def fit(self, X: np.ndarray, y: np.ndarray, combos: np.ndarray, m: int) -> Learner: ...

    def predict(self, X: np.ndarray) -> np.ndarray: ...


def check_training_data(X: Any, y: Any, combos: Any, m: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate a training set; returns float64 ``X``, int64 ``y`` and ``combos``.

    Raises:
        ValueError: a bad value, naming ``X``, ``y``, ``combos`` or ``m``.
        TypeError: a wrong type, naming the argument.
    """
    check_positive("m", m, integer=True)
    check_finite_array("X", X, ndim=2)
    X = np.asarray(X, dtype=np.float64)
    if X.shape[1] % 2:
        raise ValueError(f"X must have an even number of columns [x_A, x_B], got shape {X.shape}")
    y_arr = np.asarray(y)
    if y_arr.dtype.kind not in "iu":
        raise TypeError(f"y must hold integer labels, got dtype {y_arr.dtype}")
    if y_arr.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) to match X, got {y_arr.shape}")
    if y_arr.min() < 0 or y_arr.max() >= m:
        raise ValueError(f"y must lie in [0, m) = [0, {m}), got range [{y_arr.min()}, {y_arr.max()}]")
    c = np.asarray(combos)
    if c.dtype.kind not in "iu":
        raise TypeError(f"combos must hold integer concept indices, got dtype {c.dtype}")
    if c.shape != (X.shape[0], 2):
        raise ValueError(f"combos must have shape ({X.shape[0]}, 2) to match X, got {c.shape}")
    if c.min() < 0:
        raise ValueError("combos must be non-negative concept indices")
    return X, y_arr.astype(np.int64), c.astype(np.int64)


def _check_predict(X: Any, width: int) -> np.ndarray:
    check_finite_array("X", X, ndim=2)
    X = np.asarray(X, dtype=np.float64)
    if X.shape[1] != width:
        raise ValueError(f"X must have {width} columns (as in fit), got shape {X.shape}")
    return X


def _unfitted(name: str) -> RuntimeError:
    return RuntimeError(f"{name} is not fitted; call fit first")


# ----------------------------------------------------------------------------------------------
# scikit-learn learners
# ----------------------------------------------------------------------------------------------


@dataclass
class LogisticLearner:
    """Multinomial logistic regression on x (L2, inverse strength ``C``)."""

    C: float = 1.0
    max_iter: int = 300

    def fit(self, X: np.ndarray, y: np.ndarray, combos: np.ndarray, m: int) -> LogisticLearner:
        from sklearn.linear_model import LogisticRegression

        X, y, _ = check_training_data(X, y, combos, m)
        self.width_ = X.shape[1]
        self.constant_: int | None = int(y[0]) if np.unique(y).size == 1 else None
        if self.constant_ is None:
            self.model_ = LogisticRegression(C=self.C, max_iter=self.max_iter).fit(X, y)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        if not hasattr(self, "width_"):
            raise _unfitted("LogisticLearner")
        X = _check_predict(X, self.width_)
        if self.constant_ is not None:
            return np.full(X.shape[0], self.constant_, dtype=np.int64)
        return self.model_.predict(X).astype(np.int64)


@dataclass
class KNNLearner:
    """k-nearest-neighbour vote on x (Euclidean)."""

    k: int = 5

    def fit(self, X: np.ndarray, y: np.ndarray, combos: np.ndarray, m: int) -> KNNLearner:
        from sklearn.neighbors import KNeighborsClassifier

        check_positive("k", self.k, integer=True)
        X, y, _ = check_training_data(X, y, combos, m)
        self.width_ = X.shape[1]
        self.model_ = KNeighborsClassifier(n_neighbors=min(self.k, X.shape[0])).fit(X, y)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        if not hasattr(self, "width_"):
            raise _unfitted("KNNLearner")
        return self.model_.predict(_check_predict(X, self.width_)).astype(np.int64)


# ----------------------------------------------------------------------------------------------
# neural learners (torch, trained through icml25.nn.fit)
# ----------------------------------------------------------------------------------------------


class EnsembleLinear(nn.Module):
    """R independent linear maps applied to the same input: ``(R, N, i) -> (R, N, o)``.

    Each member is initialised as ``torch.nn.Linear`` would be (uniform in +-1/sqrt(i)), so an
    ensemble of R members trained on a summed loss is R independent networks trained side by side.
    """

    def __init__(
        self, members: int, d_in: int, d_out: int, *, generator: torch.Generator | None = None
    ) -> None:
        super().__init__()
        bound = 1.0 / float(np.sqrt(d_in))
        w = torch.empty(members, d_in, d_out).uniform_(-bound, bound, generator=generator)
        b = torch.empty(members, 1, d_out).uniform_(-bound, bound, generator=generator)
        self.weight = nn.Parameter(w)
        self.bias = nn.Parameter(b)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)


def _tower(members: int, d_in: int, hidden: int, d_out: int, gen: torch.Generator | None) -> nn.Module:
    """Linear - GELU - Linear - GELU - Linear, one independent copy per member."""
    return nn.Sequential(
        EnsembleLinear(members, d_in, hidden, generator=gen),
        nn.GELU(),
        EnsembleLinear(members, hidden, hidden, generator=gen),
        nn.GELU(),
        EnsembleLinear(members, hidden, d_out, generator=gen),
    )


class FactorizedNet(nn.Module):
    """logits = phi(x_A) + psi(x_B): the additive-logit network, R independent members.

    Input ``(N, 2 d)``; output ``(R, N, m)``.
    """

    def __init__(
        self, dim: int, hidden: int, m: int, members: int = 1, *, generator: torch.Generator | None = None
    ) -> None:
        super().__init__()
        self.dim, self.members = dim, members
        self.phi = _tower(members, dim, hidden, m, generator)
        self.psi = _tower(members, dim, hidden, m, generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xs = x.unsqueeze(0).expand(self.members, -1, -1)
        return self.phi(xs[..., : self.dim]) + self.psi(xs[..., self.dim :])


class PlainNet(nn.Module):
    """A plain MLP on the concatenated input, R independent members: ``(N, w) -> (R, N, m)``."""

    def __init__(
        self, width: int, hidden: int, m: int, members: int = 1, *, generator: torch.Generator | None = None
    ) -> None:
        super().__init__()
        self.members = members
        self.net = _tower(members, width, hidden, m, generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.unsqueeze(0).expand(self.members, -1, -1))


@dataclass
class _TorchLearner:
    hidden: int = 32
    steps: int = 200
    lr: float = 1e-2
    batch_size: int = 512
    seed: int = 0

    def _build(self, width: int, m: int, members: int, gen: torch.Generator) -> nn.Module:
        raise NotImplementedError

    def fit(self, X: np.ndarray, y: np.ndarray, combos: np.ndarray, m: int) -> _TorchLearner:
        return self.fit_many(X, np.asarray(y)[None], combos, m)

    def fit_many(self, X: np.ndarray, Y: np.ndarray, combos: np.ndarray, m: int) -> _TorchLearner:
        """Train one independent network per row of ``Y`` (``(R, N)`` labelings of the same ``X``).

        The R networks share initial seeds' stream, minibatches and step count, never parameters:
        the loss is the sum of the members' mean cross-entropies, so each member's gradient (and its
        Adam update) is exactly that of training it alone on the same batches.
        """
        for name in ("hidden", "steps", "batch_size"):
            check_positive(name, getattr(self, name), integer=True)
        check_positive("lr", self.lr)
        Y = np.asarray(Y)
        if Y.ndim != 2 or Y.shape[0] == 0:
            raise ValueError(f"Y must be a non-empty (R, N) array of labelings, got shape {Y.shape}")
        for r in range(Y.shape[0]):
            check_training_data(X, Y[r], combos, m)
        X = np.asarray(X, dtype=np.float64)
        self.width_ = X.shape[1]
        gen = torch.Generator().manual_seed(self.seed)  # initialisation; fit draws batches itself
        model = self._build(X.shape[1], m, Y.shape[0], gen)
        xt = torch.as_tensor(X, dtype=torch.float32)
        yt = torch.as_tensor(Y.T.astype(np.int64))  # (N, R): rows travel with the inputs
        full = xt.shape[0] <= self.batch_size
        config = FitConfig(
            steps=self.steps,
            batch_size=min(self.batch_size, xt.shape[0]),
            lr=self.lr,
            schedule="constant",
            optimizer="adam",
            sampling="full" if full else "shuffle_drop_last",
        )

        def loss_fn(net: nn.Module, batch: Any, gen: torch.Generator) -> torch.Tensor:
            xb, yb = batch  # (B, w), (B, R)
            logits = net(xb)  # (R, B, m)
            per = nn.functional.cross_entropy(logits.permute(1, 2, 0), yb, reduction="none")  # (B, R)
            return per.mean(0).sum()

        fit(model, loss_fn, (xt, yt), config, seed=self.seed)
        self.model_ = model.eval()
        return self

    def predict_many(self, X: np.ndarray) -> np.ndarray:
        """``(R, N)`` predictions of every member."""
        if not hasattr(self, "width_"):
            raise _unfitted(type(self).__name__)
        X = _check_predict(X, self.width_)
        with torch.no_grad():
            logits = self.model_(torch.as_tensor(X, dtype=torch.float32))
        return logits.argmax(dim=-1).numpy().astype(np.int64)

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.predict_many(X)[0]


@dataclass
class FactorizedLearner(_TorchLearner):
    """softmax(phi(x_A) + psi(x_B)) trained with Adam."""

    def _build(self, width: int, m: int, members: int, gen: torch.Generator) -> nn.Module:
        return FactorizedNet(width // 2, self.hidden, m, members, generator=gen)


@dataclass
class MLPLearner(_TorchLearner):
    """A plain MLP on x trained with Adam."""

    def _build(self, width: int, m: int, members: int, gen: torch.Generator) -> nn.Module:
        return PlainNet(width, self.hidden, m, members, generator=gen)


# ----------------------------------------------------------------------------------------------
# concept-decoding learners
# ----------------------------------------------------------------------------------------------


def fit_additive_mod(table: np.ndarray, known: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """g, h with (g(a) + h(b)) mod m equal to ``table`` on the ``known`` entries, where possible.

    Constraint propagation over the bipartite graph of known combinations: a root of each connected
    component gets 0, every edge fixes the other endpoint; edges that contradict earlier
    assignments (the table is not additive-mod there) are skipped. Concepts in different components
    keep independent offsets (their relative offset is not identifiable from the data).

    Args:
        table: ``(K_a, K_b)`` int labels.
        known: ``(K_a, K_b)`` bool mask of the entries to match.
        m: modulus.

    Returns:
        ``(g (K_a,), h (K_b,))`` int64.
    """
    table = np.asarray(table)
    known = np.asarray(known, dtype=bool)
    if table.shape != known.shape or table.ndim != 2:
        raise ValueError(f"table and known must be equal 2-D shapes, got {table.shape} and {known.shape}")
    k_a, k_b = table.shape
    g = np.full(k_a, -1, dtype=np.int64)
    h = np.full(k_b, -1, dtype=np.int64)
    for start in range(k_a + k_b):
        is_a = start < k_a
        if (g[start] if is_a else h[start - k_a]) >= 0:
            continue
        if is_a:
            g[start] = 0
        else:
            h[start - k_a] = 0
        queue: deque[int] = deque([start])
        while queue:
            node = queue.popleft()
            if node < k_a:
                for b in np.flatnonzero(known[node]).tolist():
                    if h[b] < 0:
                        h[b] = (table[node, b] - g[node]) % m
                        queue.append(k_a + b)
            else:
                col = node - k_a
                for a in np.flatnonzero(known[:, col]).tolist():
                    if g[a] < 0:
                        g[a] = (table[a, col] - h[col]) % m
                        queue.append(a)
    return g, h


class _ConceptDecoder:
    """Nearest-centroid decoding of (a, b) from the two halves of x."""

    def _fit_centroids(self, X: np.ndarray, combos: np.ndarray) -> None:
        d = X.shape[1] // 2
        self.width_ = X.shape[1]
        self.k_a_ = int(combos[:, 0].max()) + 1
        self.k_b_ = int(combos[:, 1].max()) + 1
        self.cent_a_ = np.stack(
            [
                X[combos[:, 0] == a, :d].mean(0) if (combos[:, 0] == a).any() else np.full(d, np.inf)
                for a in range(self.k_a_)
            ]
        )
        self.cent_b_ = np.stack(
            [
                X[combos[:, 1] == b, d:].mean(0) if (combos[:, 1] == b).any() else np.full(d, np.inf)
                for b in range(self.k_b_)
            ]
        )

    def decode(self, X: np.ndarray) -> np.ndarray:
        """``(N, 2)`` nearest-centroid concept indices."""
        if not hasattr(self, "width_"):
            raise _unfitted(type(self).__name__)
        X = _check_predict(X, self.width_)
        d = self.width_ // 2
        da = ((X[:, None, :d] - self.cent_a_[None]) ** 2).sum(-1)
        db = ((X[:, None, d:] - self.cent_b_[None]) ** 2).sum(-1)
        return np.stack([da.argmin(1), db.argmin(1)], axis=1)

    def _seen_table(self, y: np.ndarray, combos: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        counts = np.zeros((self.k_a_, self.k_b_, m), dtype=np.int64)
        np.add.at(counts, (combos[:, 0], combos[:, 1], y), 1)
        known = counts.sum(-1) > 0
        return counts.argmax(-1), known


class ConceptRuleLearner(_ConceptDecoder):
    """Decode concepts, then fit an additive-mod rule to the seen table (:func:`fit_additive_mod`)."""

    def fit(self, X: np.ndarray, y: np.ndarray, combos: np.ndarray, m: int) -> ConceptRuleLearner:
        X, y, combos = check_training_data(X, y, combos, m)
        self._fit_centroids(X, combos)
        table, known = self._seen_table(y, combos, m)
        self.g_, self.h_ = fit_additive_mod(table, known, m)
        self.m_ = m
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        ab = self.decode(X)
        return (self.g_[ab[:, 0]] + self.h_[ab[:, 1]]) % self.m_


class LookupLearner(_ConceptDecoder):
    """Decode concepts; the memorised label on seen combinations, ``default`` on unseen ones."""

    def __init__(self, default: int = 0) -> None:
        self.default = default

    def fit(self, X: np.ndarray, y: np.ndarray, combos: np.ndarray, m: int) -> LookupLearner:
        X, y, combos = check_training_data(X, y, combos, m)
        self._fit_centroids(X, combos)
        self.table_, self.known_ = self._seen_table(y, combos, m)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        ab = self.decode(X)
        seen = self.known_[ab[:, 0], ab[:, 1]]
        return np.where(seen, self.table_[ab[:, 0], ab[:, 1]], self.default).astype(np.int64)


@dataclass
class MajorityLearner:
    """The most frequent training label (smallest label on ties) for every input."""

    def fit(self, X: np.ndarray, y: np.ndarray, combos: np.ndarray, m: int) -> MajorityLearner:
        X, y, _ = check_training_data(X, y, combos, m)
        self.width_ = X.shape[1]
        self.label_ = int(np.bincount(y, minlength=m).argmax())
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        if not hasattr(self, "width_"):
            raise _unfitted("MajorityLearner")
        X = _check_predict(X, self.width_)
        return np.full(X.shape[0], self.label_, dtype=np.int64)


LEARNERS: dict[str, type] = {
    "logistic": LogisticLearner,
    "factorized": FactorizedLearner,
    "mlp": MLPLearner,
    "knn": KNNLearner,
    "concept_rule": ConceptRuleLearner,
    "lookup": LookupLearner,
    "majority": MajorityLearner,
}


def make_learner(name: str, *, seed: int = 0, **kwargs: Any) -> Learner:
    """A fresh learner by name (``LEARNERS``); ``seed`` reaches the neural learners only."""
    if name not in LEARNERS:
        raise ValueError(f"name must be one of {sorted(LEARNERS)}, got {name!r}")
    cls = LEARNERS[name]
    if issubclass(cls, _TorchLearner):
        kwargs = {"seed": seed, **kwargs}
    learner: Learner = cls(**kwargs)
    return learner


def fit_predict_many(
    name: str,
    X: np.ndarray,
    Y: np.ndarray,
    combos: np.ndarray,
    m: int,
    evals: list[np.ndarray],
    *,
    seed: int = 0,
    **kwargs: Any,
) -> list[np.ndarray]:
    """Train learner ``name`` once per labeling in ``Y`` (``(R, N)``) of the same inputs and predict.

    The neural learners train their R copies side by side (:meth:`_TorchLearner.fit_many`, the same
    as R separate fits on the same batches); the others are fitted one labeling at a time.

    Returns:
        one ``(R, N_e)`` int64 prediction array per input array in ``evals``.
    """
    Y = np.asarray(Y)
    if Y.ndim != 2 or Y.shape[0] == 0:
        raise ValueError(f"Y must be a non-empty (R, N) array of labelings, got shape {Y.shape}")
    learner = make_learner(name, seed=seed, **kwargs)
    if isinstance(learner, _TorchLearner):
        learner.fit_many(X, Y, combos, m)
        return [learner.predict_many(E) for E in evals]
    out: list[list[np.ndarray]] = [[] for _ in evals]
    for r in range(Y.shape[0]):
        fitted = make_learner(name, seed=seed, **kwargs).fit(X, Y[r], combos, m)
        for k, E in enumerate(evals):
            out[k].append(fitted.predict(E))
    return [np.stack(p) for p in out]
