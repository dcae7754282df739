"""Learning a best response to competitors: the competition-aware objective and its proxy losses.

Einav & Rosenfeld, *A Market for Accuracy: Classification under Competition*, ICML 2025
(https://arxiv.org/abs/2502.18052). A provider that maximises market share given its competitors
maximises the weighted accuracy E[w_j c_j] of ``market.best_response_weights``: users whom no
competitor serves weigh most. The 0/1 objective is intractable, so the paper trains through proxy
losses. Its exact proxy could not be read; ``MarketAwareClassifier.proxy`` offers three documented
reconstructions:

    weighted_ce  cross-entropy re-weighted by w_j (any estimator whose fit takes sample_weight)
    soft_share   maximise sum_i w_i softmax(f(x_i) / T)_{y_i}, a smooth surrogate of sum_i w_i c_j(x_i),
                 for a linear softmax model, started from the weighted_ce solution (full-batch Adam)
    soft_all     soft_share with the competitors' correctness also softened to their probability of the
                 true label (needs the competitors' scores)

Assumption (information sharing): the learner sees its competitors' correctness (or scores) on its
own training users. ``dynamics.Provider(information="surrogate")`` drops it in favour of surrogate
copies of the competitors fitted to queried predictions.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression

from icml25.core.validate import check_finite_array, check_numeric_array, check_positive

from .market import ChoiceRule, as_rule, best_response_weights, check_correct

__all__ = ["PROXIES", "MarketAwareClassifier", "check_features", "check_labels"]

Proxy = Literal["weighted_ce", "soft_share", "soft_all"]
PROXIES: tuple[str, ...] = ("weighted_ce", "soft_share", "soft_all")


def check_features(name: str, X: Any) -> np.ndarray:
    """``X`` as a finite float64 (n, d) array with n >= 1, d >= 1."""
    arr = check_numeric_array(name, X)
    arr = np.asarray(arr, dtype=np.float64)
    check_finite_array(name, arr, ndim=2)
    if arr.shape[1] == 0:
        raise ValueError(f"{name} has no feature columns (shape {arr.shape})")
    return arr


def check_labels(name: str, y: Any, n: int) -> np.ndarray:
    """``y`` as a 1-D integer label array of length ``n``."""
    arr = check_numeric_array(name, y)
    arr = np.asarray(arr)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} must have {n} labels (one per row of X), got {arr.shape[0]}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    check_finite_array(name, arr, ndim=1)
    if arr.dtype.kind == "f":
        if not np.equal(np.round(arr), arr).all():
            raise ValueError(f"{name} must hold integer class labels")
        arr = arr.astype(np.int64)
    return arr.astype(np.int64)


class MarketAwareClassifier(ClassifierMixin, BaseEstimator):
    """A classifier trained as a best response to its competitors (the competition-aware learner).

    A scikit-learn classifier (``get_params``, ``clone``, ``score`` as accuracy); ``fit`` takes the
    competitors' correctness as a third argument (without it: no competitor, plain ERM).

    Args:
        base_estimator: a scikit-learn classifier whose ``fit`` accepts ``sample_weight``
            (default: L2 ``LogisticRegression(C=1.0)``, Newton-Cholesky solver). The soft proxies need
            a ``LogisticRegression``: they refine its linear softmax model by full-batch Adam.
        proxy: ``"weighted_ce"`` (default), ``"soft_share"`` or ``"soft_all"`` (module docstring).
        rule: the users' choice rule, ``"uniform"`` or ``"abstain"`` (the rules with exact weights).
        temperature: T of the soft proxies (> 0).
        steps: Adam steps of the soft proxies.
        lr: Adam learning rate of the soft proxies.

    Attributes (after ``fit``): ``estimator_`` (the fitted weighted estimator), ``weights_`` (the
    normalised per-user weights used), ``classes_``, and for soft proxies ``coef_``/``intercept_``
    of the refined linear model.
    """

    def __init__(
        self,
        base_estimator: Any | None = None,
        proxy: Proxy = "weighted_ce",
        rule: ChoiceRule | str = "uniform",
        *,
        temperature: float = 1.0,
        steps: int = 200,
        lr: float = 0.05,
    ) -> None:
        self.base_estimator = base_estimator
        self.proxy = proxy
        self.rule = rule
        self.temperature = temperature
        self.steps = steps
        self.lr = lr

    def _check_settings(self) -> None:
        if self.proxy not in PROXIES:
            raise ValueError(f"proxy must be one of {PROXIES}, got {self.proxy!r}")
        if as_rule(self.rule).kind not in ("uniform", "abstain"):
            raise ValueError(f"rule must be 'uniform' or 'abstain' for best responses, got {self.rule!r}")
        check_positive("temperature", self.temperature)
        check_positive("steps", self.steps, integer=True)
        check_positive("lr", self.lr)

    def _weights(self, n: int, competitors_correct: Any | None, competitors_proba: Any | None) -> np.ndarray:
        rule = as_rule(self.rule)
        if self.proxy == "soft_all":
            if competitors_proba is None:
                raise ValueError("competitors_proba is required by the soft_all proxy")
            source = check_numeric_array("competitors_proba", competitors_proba)
            source = np.asarray(source, dtype=np.float64)
            if source.ndim != 2:
                raise ValueError(f"competitors_proba must be 2-D (n_users, K - 1), got shape {source.shape}")
            name = "competitors_proba"
        else:
            if competitors_correct is None:
                return np.ones(n)  # no competitor given: share maximisation is accuracy maximisation
            cc = check_numeric_array("competitors_correct", competitors_correct)
            cc = np.asarray(cc)
            if cc.ndim == 2 and cc.shape[1] == 0:
                return np.ones(n)  # no competitor: share maximisation is accuracy maximisation
            source = check_correct("competitors_correct", cc).astype(np.float64)
            name = "competitors_correct"
        if source.shape[0] != n:
            raise ValueError(f"{name} must have one row per row of X ({n}), got {source.shape[0]}")
        if source.shape[1] == 0:
            return np.ones(n)
        return best_response_weights(source, source.shape[1] + 1, rule)

    def fit(
        self,
        X: Any,
        y: Any,
        competitors_correct: Any | None = None,
        *,
        competitors_proba: Any | None = None,
    ) -> MarketAwareClassifier:
        """Fit the best response on users (X, y).

        Args:
            X: (n, d) features.
            y: (n,) integer labels.
            competitors_correct: (n, K - 1) bool, each competitor's correctness on these users;
                ``None`` or 0 columns: no competitor, plain accuracy maximisation (so scikit-learn's
                generic tools, which pass only X and y, fit the monopoly case).
            competitors_proba: (n, K - 1) each competitor's probability of the true label
                (``soft_all`` only).
        """
        self._check_settings()
        X = check_features("X", X)
        y = check_labels("y", y, X.shape[0])
        self.n_features_in_ = X.shape[1]
        if np.unique(y).size < 2:
            raise ValueError("y must contain at least two classes")
        w = self._weights(X.shape[0], competitors_correct, competitors_proba)
        w = w / w.mean()  # mean 1: the regulariser has the same strength as in unweighted ERM
        self.weights_ = w
        base = (
            self.base_estimator
            if self.base_estimator is not None
            else LogisticRegression(solver="newton-cholesky", max_iter=2000)
        )
        if self.proxy != "weighted_ce" and not isinstance(base, LogisticRegression):
            raise ValueError("base_estimator must be a LogisticRegression for the soft proxies")
        self.estimator_ = clone(base).fit(X, y, sample_weight=w)
        self.classes_ = np.asarray(self.estimator_.classes_)
        if self.proxy != "weighted_ce":
            self._refine_soft(X, y, w)
        return self

    def _refine_soft(self, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> None:
        """Soft proxy: ascend mean_i w_i softmax(f(x_i)/T)_{y_i} - ||W||^2 / (2 C n) from weighted_ce."""
        est = self.estimator_
        coef, icpt = np.asarray(est.coef_), np.asarray(est.intercept_)
        if coef.shape[0] == 1:  # binary: logits (0, x.w + b)
            coef = np.vstack([np.zeros_like(coef), coef])
            icpt = np.concatenate([[0.0], icpt])
        # full-batch Adam from the weighted_ce fit: deterministic, no sampling. The gradient is in
        # closed form and Adam is torch.optim.Adam's update (defaults), in numpy: the same iterates as
        # the torch autograd loop (tested to 1e-10) at a small fraction of its per-step overhead.
        W, b = coef.astype(np.float64).copy(), icpt.astype(np.float64).copy()
        idx = np.searchsorted(self.classes_, y)
        C = float(getattr(est, "C", 1.0))
        n = X.shape[0]
        T = float(self.temperature)
        rows = np.arange(n)
        beta1, beta2, eps = 0.9, 0.999, 1e-8
        mW, vW, mb, vb = np.zeros_like(W), np.zeros_like(W), np.zeros_like(b), np.zeros_like(b)
        for t in range(1, self.steps + 1):
            z = (X @ W.T + b) / T
            z -= z.max(axis=1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(axis=1, keepdims=True)
            py = p[rows, idx]
            # d/dz_k of -(1/n) sum_i w_i p_{i,y_i} is -(w_i p_{i,y_i} / (n T)) (1{k = y_i} - p_{ik})
            dz = p * py[:, None]
            dz[rows, idx] -= py
            dz *= (w / (n * T))[:, None]
            gW = dz.T @ X + W / (C * n)
            gb = dz.sum(axis=0)
            bc1, bc2 = 1.0 - beta1**t, 1.0 - beta2**t
            for param, g, m, v in ((W, gW, mW, vW), (b, gb, mb, vb)):
                m *= beta1
                m += (1.0 - beta1) * g
                v *= beta2
                v += (1.0 - beta2) * g * g
                param -= (self.lr / bc1) * m / (np.sqrt(v) / np.sqrt(bc2) + eps)
        self.coef_ = W.copy()
        self.intercept_ = b.copy()

    def _check_fitted(self) -> None:
        from sklearn.exceptions import NotFittedError  # a ValueError, as scikit-learn raises it

        if not hasattr(self, "estimator_"):
            raise NotFittedError("this MarketAwareClassifier is not fitted yet; call fit first")

    def _check_width(self, X: np.ndarray) -> np.ndarray:
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but MarketAwareClassifier is expecting "
                f"{self.n_features_in_} features as input"
            )
        return X

    def predict_proba(self, X: Any) -> np.ndarray:
        """(n, n_classes) class probabilities, columns in ``classes_`` order."""
        self._check_fitted()
        X = self._check_width(check_features("X", X))
        if self.proxy == "weighted_ce":
            return np.asarray(self.estimator_.predict_proba(X))
        z = X @ self.coef_.T + self.intercept_
        z = np.exp(z - z.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)

    def predict(self, X: Any) -> np.ndarray:
        """(n,) predicted labels."""
        self._check_fitted()
        if self.proxy == "weighted_ce":
            return np.asarray(self.estimator_.predict(self._check_width(check_features("X", X))))
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
