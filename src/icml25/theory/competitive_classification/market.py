"""The accuracy market: how users choose among providers, market shares, welfare, best-response weights.

Einav & Rosenfeld, *A Market for Accuracy: Classification under Competition*, ICML 2025
(https://arxiv.org/abs/2502.18052). K providers deploy classifiers h_1..h_K to one population of
users (x, y). A user goes to a provider whose prediction is correct for them; provider j's utility
is its market share mu_j = E_D[P(s(x, y) = j)], with s the selected provider (Sec. 2 of the paper).

The paper's exact choice rule and its treatment of users whom nobody serves could not be read, so
the rules here are documented reconstructions (``ChoiceRule.kind``):

    uniform   uniform among the correct providers; if none is correct, uniform over all K
    abstain   uniform among the correct providers; if none is correct, the user takes no provider
    softmax   P(s = j) proportional to exp(p_j(y | x) / tau): confidence-driven, needs probabilities
    loyal     a user keeps their current provider while it is correct, else moves uniformly to a
              correct one; if none is correct they stay (or, with no provider yet, pick uniformly)

Notation (arrays): n users, K providers. ``correct`` (n, K) bool is c_j(x, y) = 1{h_j(x) = y};
n_{-j} = sum_{k != j} c_k counts the competitors that are right on a user.

Best response (our derivation, exact for ``uniform`` and ``abstain``): the share is linear in c_j,

    mu_j = E[w_j c_j] + E[b_j],  w_j = 1/(1 + n_{-j}) - 1{n_{-j} = 0}/K,  b_j = 1{n_{-j} = 0}/K  (uniform)
                                 w_j = 1/(1 + n_{-j}),                    b_j = 0                  (abstain)

so maximising share given the competitors is maximising a weighted accuracy whose weights are large
on users that no competitor serves. With K = 2 under ``uniform`` the weights are constant (1/2) and
share maximisation is accuracy maximisation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from icml25.core.validate import check_finite_array, check_numeric_array, check_positive

__all__ = [
    "RULES",
    "ChoiceRule",
    "as_rule",
    "check_correct",
    "market_shares",
    "user_welfare",
    "hhi",
    "best_response_weights",
    "share_offset",
    "finite_best_response",
    "best_linear_response",
    "exact_linear_response",
    "HalfPlane",
]

RuleKind = Literal["uniform", "abstain", "softmax", "loyal"]
RULES: tuple[str, ...] = ("uniform", "abstain", "softmax", "loyal")


def check_correct(
    name: str, correct: Any, *, n_columns: int | None = None, min_columns: int = 1
) -> np.ndarray:
    """``correct`` as a 2-D bool array (users x providers); 0/1 numbers are accepted.

    Raises:
        TypeError: non-numeric dtype.
        ValueError: not 2-D, empty, non-finite, entries other than 0/1, wrong number of columns.
    """
    arr = check_numeric_array(name, correct)
    arr = np.asarray(arr)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D (n_users, n_providers) array, got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] < min_columns:
        raise ValueError(f"{name} is empty or has too few provider columns (shape {arr.shape})")
    if arr.dtype != bool:
        check_finite_array(name, arr, ndim=2)
        if not np.isin(arr, (0, 1)).all():
            raise ValueError(f"{name} must hold only 0/1 (correct or not)")
        arr = arr.astype(bool)
    if n_columns is not None and arr.shape[1] != n_columns:
        raise ValueError(f"{name} must have {n_columns} provider columns, got {arr.shape[1]}")
    return arr


@dataclass(frozen=True)
class ChoiceRule:
    """How a user picks a provider from the providers' correctness on them (see the module docstring).

    Args:
        kind: ``"uniform"`` (default), ``"abstain"``, ``"softmax"`` or ``"loyal"``.
        tau: temperature of the ``softmax`` rule (> 0).
    """

    kind: RuleKind = "uniform"
    tau: float = 0.1

    def __post_init__(self) -> None:
        if self.kind not in RULES:
            raise ValueError(f"ChoiceRule.kind must be one of {RULES}, got {self.kind!r}")
        check_positive("ChoiceRule.tau", self.tau)

    def selection_probs(
        self,
        correct: Any,
        proba_true: Any | None = None,
        current: Any | None = None,
    ) -> np.ndarray:
        """P(s(x, y) = j) for every user and provider.

        Args:
            correct: (n, K) bool, c_j for each user.
            proba_true: (n, K) provider j's probability of the user's true label (``softmax`` only).
            current: (n,) int, each user's current provider, -1 for none (``loyal`` only).

        Returns:
            (n, K) float64; rows sum to 1, or to 0 for users nobody serves under ``abstain``.
        """
        c = check_correct("correct", correct)
        n, K = c.shape
        cf = c.astype(np.float64)
        n_right = cf.sum(axis=1, keepdims=True)
        among_correct = np.divide(cf, n_right, out=np.zeros_like(cf), where=n_right > 0)
        if self.kind == "uniform":
            return np.where(n_right > 0, among_correct, 1.0 / K)
        if self.kind == "abstain":
            return among_correct
        if self.kind == "softmax":
            if proba_true is None:
                raise ValueError("proba_true is required by the softmax choice rule")
            p = check_numeric_array("proba_true", proba_true)
            p = np.asarray(p, dtype=np.float64)
            if p.shape != (n, K):
                raise ValueError(f"proba_true must have shape {(n, K)}, got {p.shape}")
            check_finite_array("proba_true", p, ndim=2)
            z = p / self.tau
            z = np.exp(z - z.max(axis=1, keepdims=True))
            return z / z.sum(axis=1, keepdims=True)
        # loyal
        if current is None:
            cur = np.full(n, -1, dtype=np.int64)
        else:
            cur_arr = check_numeric_array("current", current)
            cur = np.asarray(cur_arr)
            if cur.shape != (n,):
                raise ValueError(f"current must have shape {(n,)}, got {cur.shape}")
            if cur.dtype.kind not in "iu":
                raise TypeError(f"current must hold integer provider indices, got dtype {cur.dtype}")
            if ((cur < -1) | (cur >= K)).any():
                raise ValueError(f"current must hold provider indices in [-1, {K - 1}]")
        out = np.where(n_right > 0, among_correct, 1.0 / K)
        has = cur >= 0
        rows = np.flatnonzero(has)
        keep = np.zeros(n, dtype=bool)
        keep[rows] = c[rows, cur[rows]] | (n_right[rows, 0] == 0)  # stays while right, or nobody is right
        stay = np.zeros((n, K))
        stay[rows[keep[rows]], cur[rows[keep[rows]]]] = 1.0
        return np.where(keep[:, None], stay, out)


def as_rule(rule: ChoiceRule | str) -> ChoiceRule:
    """A :class:`ChoiceRule` from itself or its kind name."""
    if isinstance(rule, ChoiceRule):
        return rule
    if isinstance(rule, str):
        return ChoiceRule(rule)  # type: ignore[arg-type]
    raise TypeError(f"rule must be a ChoiceRule or one of {RULES}, got {type(rule).__name__}")


def market_shares(
    correct: Any,
    rule: ChoiceRule | str = "uniform",
    *,
    proba_true: Any | None = None,
    current: Any | None = None,
) -> np.ndarray:
    """Market shares mu_j = mean over users of P(s = j); shape (K,), summing to at most 1.

    They sum to exactly 1 except under ``abstain``, where the users nobody serves are lost.
    """
    return as_rule(rule).selection_probs(correct, proba_true, current).mean(axis=0)


def user_welfare(
    correct: Any,
    rule: ChoiceRule | str = "uniform",
    *,
    proba_true: Any | None = None,
    current: Any | None = None,
) -> float:
    """Consumer welfare: the probability that a user's chosen provider is correct for them.

    Under ``uniform``, ``abstain`` and ``loyal`` this is the fraction of users that at least one
    provider serves correctly, P(n >= 1).
    """
    c = check_correct("correct", correct)
    probs = as_rule(rule).selection_probs(c, proba_true, current)
    return float((probs * c).sum(axis=1).mean())


def hhi(shares: Any) -> float:
    """Herfindahl-Hirschman concentration sum_j mu_j^2 of a share vector."""
    s = check_numeric_array("shares", shares)
    s = np.asarray(s, dtype=np.float64)
    check_finite_array("shares", s, ndim=1)
    return float((s**2).sum())


def _n_others(correct_others: Any, n_providers: int) -> np.ndarray:
    check_positive("n_providers", n_providers, integer=True)
    if n_providers < 2:
        raise ValueError(f"n_providers must be >= 2 (a market has competitors), got {n_providers}")
    co = check_numeric_array("correct_others", correct_others)
    co = np.asarray(co, dtype=np.float64)
    if co.ndim != 2:
        raise ValueError(f"correct_others must be a 2-D (n_users, K - 1) array, got shape {co.shape}")
    if co.shape[0] == 0:
        raise ValueError(f"correct_others is empty (shape {co.shape})")
    if co.shape[1] != n_providers - 1:
        raise ValueError(
            f"correct_others must have n_providers - 1 = {n_providers - 1} columns, got {co.shape[1]}"
        )
    check_finite_array("correct_others", co, ndim=2)
    if ((co < 0) | (co > 1)).any():
        raise ValueError(
            "correct_others must lie in [0, 1] (0/1 correctness or probabilities of correctness)"
        )
    return co


def best_response_weights(
    correct_others: Any, n_providers: int, rule: ChoiceRule | str = "uniform"
) -> np.ndarray:
    """Per-user weights w_j of the share-maximising (best-response) objective mu_j = E[w_j c_j] + const.

    ``correct_others`` (n, K - 1) holds the competitors' correctness on provider j's users. Entries
    may also be probabilities of correctness (the ``soft_all`` proxy); the counts then become
    expectations under independent competitors: E[1/(1 + n_{-j})] is replaced by 1/(1 + E n_{-j})
    (a plug-in, exact for 0/1 input) and P(n_{-j} = 0) by prod_k (1 - p_k).

    Exact for the ``uniform`` and ``abstain`` rules; the other rules have no closed form here.

    Returns:
        (n,) float64 weights in (0, 1].
    """
    r = as_rule(rule)
    co = _n_others(correct_others, n_providers)
    if r.kind not in ("uniform", "abstain"):
        raise ValueError(
            f"rule: closed-form best-response weights exist for 'uniform' and 'abstain', not {r.kind!r}"
        )
    n_minus = co.sum(axis=1)
    w = 1.0 / (1.0 + n_minus)
    if r.kind == "uniform":
        w = w - np.prod(1.0 - co, axis=1) / n_providers
    return w


def share_offset(correct_others: Any, n_providers: int, rule: ChoiceRule | str = "uniform") -> float:
    """The part of mu_j that does not depend on h_j: E[1{n_{-j} = 0}] / K (uniform) or 0 (abstain)."""
    r = as_rule(rule)
    co = _n_others(correct_others, n_providers)
    if r.kind not in ("uniform", "abstain"):
        raise ValueError(
            f"rule: closed-form best-response weights exist for 'uniform' and 'abstain', not {r.kind!r}"
        )
    if r.kind == "abstain":
        return 0.0
    return float(np.prod(1.0 - co, axis=1).mean() / n_providers)


def finite_best_response(
    candidates_correct: Any, correct_others: Any, rule: ChoiceRule | str = "uniform"
) -> int:
    """Index of the share-maximising candidate among a finite set, through the weighted accuracy.

    Args:
        candidates_correct: (H, n) bool, candidate h's correctness on each of n users.
        correct_others: (n, K - 1) bool, the competitors' correctness on the same users.
        rule: ``"uniform"`` or ``"abstain"``.

    Returns:
        The first candidate maximising mean(w * c_h) (hence maximising the share).
    """
    cand = check_correct("candidates_correct", candidates_correct)
    co = check_correct("correct_others", correct_others)
    if cand.shape[1] != co.shape[0]:
        raise ValueError(f"candidates_correct has {cand.shape[1]} users but correct_others has {co.shape[0]}")
    w = best_response_weights(co, co.shape[1] + 1, rule)
    return int(np.argmax(cand.astype(np.float64) @ w))


@dataclass(frozen=True)
class HalfPlane:
    """The 2-D linear classifier ``x -> hi if x . direction > threshold else lo`` (a constant when
    ``hi == lo``); returned by :func:`exact_linear_response`."""

    direction: np.ndarray
    threshold: float
    hi: Any
    lo: Any

    def predict(self, X: Any) -> np.ndarray:
        Xa = np.asarray(X, dtype=np.float64)
        if Xa.ndim != 2 or Xa.shape[1] != 2:
            raise ValueError(f"X must be an (n, 2) array, got shape {Xa.shape}")
        return np.where(Xa @ self.direction > self.threshold, self.hi, self.lo)


def _check_oracle_inputs(
    X: Any, y: Any, correct_others: Any, n_angles: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    Xa = check_numeric_array("X", X)
    Xa = np.asarray(Xa, dtype=np.float64)
    if Xa.ndim != 2 or Xa.shape[1] != 2:
        raise ValueError(f"X must be an (n, 2) array (the oracle searches 2-D half-planes), got {Xa.shape}")
    check_finite_array("X", Xa, ndim=2)
    ya = np.asarray(check_numeric_array("y", y))
    if ya.shape != (Xa.shape[0],):
        raise ValueError(f"y must have shape {(Xa.shape[0],)}, got {ya.shape}")
    classes = np.unique(ya)
    if classes.size > 2:
        raise ValueError(f"y must be binary for the linear oracle, got classes {classes.tolist()}")
    co = check_correct("correct_others", correct_others)
    if co.shape[0] != Xa.shape[0]:
        raise ValueError(f"correct_others has {co.shape[0]} users but X has {Xa.shape[0]}")
    check_positive("n_angles", n_angles, integer=True)
    return Xa, ya, classes, co


def _best_half_plane(
    Xa: np.ndarray, ya: np.ndarray, classes: np.ndarray, w: np.ndarray, n_angles: int
) -> tuple[float, HalfPlane]:
    """The half-plane (or constant) maximising sum_i w_i 1{h(x_i) = y_i}, and that weighted score."""
    labels = (classes[0], classes[-1]) if classes.size == 2 else (classes[0], classes[0] + 1)
    is_hi = ya == labels[1]
    w_hi, w_lo = np.where(is_hi, w, 0.0), np.where(is_hi, 0.0, w)
    zero = np.zeros(2)
    # constants: everyone predicted labels[0] or labels[1]
    best_score, best = float(w_lo.sum()), HalfPlane(zero, 0.0, labels[0], labels[0])
    if w_hi.sum() > best_score:
        best_score, best = float(w_hi.sum()), HalfPlane(zero, 0.0, labels[1], labels[1])
    theta = np.pi * np.arange(n_angles) / n_angles
    U = np.stack([np.cos(theta), np.sin(theta)])  # (2, A)
    proj = Xa @ U  # (n, A)
    order = np.argsort(proj, axis=0, kind="stable")
    ps = np.take_along_axis(proj, order, axis=0)
    for a_lo, a_hi_w, hi_label in ((w_lo, w_hi, labels[1]), (w_hi, w_lo, labels[0])):
        # predict the other label below the threshold and hi_label above: score for a cut after k users
        below = np.cumsum(a_lo[order], axis=0)  # users predicted "other" that are right
        above = a_hi_w.sum() - np.cumsum(a_hi_w[order], axis=0)
        score = below + above  # (n, A): cut after sorted position k
        valid = np.ones_like(score, dtype=bool)
        valid[:-1] = ps[1:] > ps[:-1]  # a threshold exists only between distinct projections
        valid[-1] = False  # cutting after everyone is a constant, handled above
        score = np.where(valid, score, -np.inf)
        k, a = np.unravel_index(int(np.argmax(score)), score.shape)
        if score[k, a] > best_score + 1e-12:
            best_score = float(score[k, a])
            other = labels[0] if hi_label == labels[1] else labels[1]
            best = HalfPlane(U[:, a].copy(), float(0.5 * (ps[k, a] + ps[k + 1, a])), hi_label, other)
    return best_score, best


def best_linear_response(
    X: Any,
    y: Any,
    correct_others: Any,
    rule: ChoiceRule | str = "uniform",
    *,
    n_angles: int = 360,
) -> tuple[np.ndarray, float]:
    """The share-maximising 2-D linear classifier on the users themselves: an oracle best response.

    Searches every half-plane ``1{x . u(theta) > t}`` with either labelling, for ``n_angles``
    directions theta evenly spaced in [0, pi) and *every* threshold t (each gap between sorted
    projections), plus the two constant classifiers, and maximises the weighted accuracy
    ``sum_i w_i c_i`` of :func:`best_response_weights` on the given users. Fitted and scored on the
    same users, it is a ceiling for what any linear learner's share can reach there (exact up to
    the angle grid); the check uses it as a positive control, never as a baseline.

    Args:
        X: (n, 2) features.
        y: (n,) binary labels.
        correct_others: (n, K - 1) bool, the competitors' correctness on these users.
        rule: ``"uniform"`` or ``"abstain"``.
        n_angles: directions searched (>= 1).

    Returns:
        The oracle's (n,) predictions and its market share on these users.
    """
    Xa, ya, classes, co = _check_oracle_inputs(X, y, correct_others, n_angles)
    K = co.shape[1] + 1
    w = best_response_weights(co, K, rule)
    offset = share_offset(co, K, rule)
    best_score, plane = _best_half_plane(Xa, ya, classes, w, n_angles)
    share = best_score / ya.shape[0] + offset
    return np.asarray(plane.predict(Xa), dtype=ya.dtype), float(share)


def exact_linear_response(
    X: Any,
    y: Any,
    correct_others: Any,
    rule: ChoiceRule | str = "uniform",
    *,
    n_angles: int = 180,
) -> HalfPlane:
    """The exact empirical best response among 2-D half-planes: the search of
    :func:`best_linear_response` run on a provider's *training* users, returned as a classifier.

    Unlike the proxy losses it maximises the empirical share itself (exact up to the angle grid;
    ties go to the first maximiser, so it is deterministic). The check uses it as a diagnostic of
    the dynamics: best-response rounds with exact best responses, beside those with the proxy.
    """
    Xa, ya, classes, co = _check_oracle_inputs(X, y, correct_others, n_angles)
    w = best_response_weights(co, co.shape[1] + 1, rule)
    return _best_half_plane(Xa, ya, classes, w, n_angles)[1]
