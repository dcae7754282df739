"""Causal-effect estimators from higher-order cumulants (proxy and underspecified IV) and baselines.

Part of our implementation of *Causal Effect Identification in lvLiNGAM from Higher-Order
Cumulants* (Tramontano et al., ICML 2025, https://arxiv.org/abs/2506.05202).

Every estimator takes either a data matrix ``(n, p)`` with its columns in the documented order or
a :class:`~.cumulants.Cumulants` object (sample or exact population cumulants); the algebra runs
on cumulants only, so exact population cumulants return the true effect up to round-off.

Implements the estimators that the paper derives from its identification proofs, as released in
``helpers/models.py``:
    * the pairwise root polynomial of ReLVLiNGAM (``get_constraints_for_l_latents``): rows are
      cumulants of the pair (j, i), the polynomial is the cofactor expansion of
      ``det [[1, b, ..., b^(l+1)], A_0, ..., A_l]`` along its first row;
    * marginal cumulants of each root's source and the minimal-L1 permutation matching;
    * CM (proxy without Z -> T edge, l latents), ICM (with the edge, l = 1 closed form, l >= 2
      by residualising with each matched root pair and running CM), cumulant minimisation
      (``ICM.estimate_effect_minimization``), and the underspecified IV estimator;
    * baselines: naive OLS, the cross-moment estimator of Kivva et al. (2023) (``cross_moment``),
      min-norm IV (projection of 0 onto the IV hyperplane).

Choices where the paper's text is unsure: the ICM (l >= 2) consistency offset is the natural
``|r_Y - b r_T|`` (``offset="natural"``); the released code's ``|b r_Y - r_T|`` is available as
``offset="released"``. CM pairs the (Z, Y) and (Z, T) roots by the matched permutation in the
direction the matching defines (the released code indexes it the other way round, identical for
l <= 2 since every permutation of two items is an involution). CM's last step (matching the latent
ratios to the (T, Y) roots) is a known weak point: the released rule matches
``[0, ratio_1..ratio_l]`` to the (T, Y) roots and returns the root matched to the placeholder 0,
which ties (and in population picks the wrong root) whenever a latent ratio lies between 0 and b,
since then ``|b| = |b - ratio| + |ratio|``; on exact population cumulants it misses the effect for
about 4% (l = 1) to 12% (l = 2) of the simulated models. ``match="leftover"`` instead matches the l
latent ratios to l of the l + 1 roots and returns the root left over; it is exact in population but,
in our runs at n = 1e5 with two latents, picks the wrong root far more often than the released rule,
whose |root| penalty favours moderate effects. The released rule stays the default (it is the
paper's estimator); the claim check runs both. The cumulant minimisation runs BFGS on ``x / |x0|``
so that its stopping rule does not depend on units. Roots keep their real parts (``.roots().real``).
Gaussianity: before estimating, each observed variable gets a Jarque-Bera p-value from its sample
cumulants; if every variable looks Gaussian at level ``gaussian_alpha`` the estimator raises
:class:`GaussianNoiseError`; a rank-deficient cumulant block (exactly Gaussian or symmetric sources
in population, too few latents assumed) raises :class:`NotIdentifiableError`. Symmetric noise
(uniform, Laplace) has zero third cumulants, which the one-latent polynomial needs: the effect is
then not identified by it.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from scipy import optimize
from sklearn.base import BaseEstimator

from .cumulants import Cumulants, GaussianNoiseError, check_data, gaussianity_pvalues

__all__ = [
    "MIN_RANK_SNR",
    "FEW_ROWS",
    "MIN_ROWS",
    "TIE_BREAKS",
    "CumulantConditionWarning",
    "CumulantMinimization",
    "NotIdentifiableError",
    "ProxyCumulantEstimator",
    "SmallSampleWarning",
    "UnderspecifiedIVEstimator",
    "block_condition",
    "block_rank_snr",
    "cross_moment_effect",
    "marginal_cumulants",
    "min_dist_perm",
    "min_norm_iv",
    "ols_effect",
    "pair_polynomial_coefficients",
    "pair_root_polynomial",
    "required_order",
]

_DEGENERATE_TOL = 1e-10
TIE_RTOL = 1e-9  # relative tolerance under which two matching costs count as tied
TIE_BREAKS = ("first", "latent", "released")


class NotIdentifiableError(ValueError):
    """The cumulant equations are degenerate for this data/model: the effect is not identified."""


# ----------------------------------------------------------------------------------------------
# the pairwise root polynomial (ReLVLiNGAM's construction, used by every estimator of the paper)
# ----------------------------------------------------------------------------------------------


def _orders(n_latent: int) -> tuple[int, int]:
    """k1 = l + 2, k2 = ceil((sqrt(8l + 17) - 3) / 2) + l + 2 (``calculate_orders_needed``)."""
    k1 = n_latent + 2
    return k1, math.ceil((math.sqrt(8 * n_latent + 17) - 3) / 2) + n_latent + 2


def _row_multisets(n_latent: int) -> list[tuple[str, ...]]:
    """The first l + 1 row multisets over {'', 'j', 'i'} of size k2 - k1, in the released order."""
    k1, k2 = _orders(n_latent)
    rows = list(itertools.combinations_with_replacement(["", "j", "i"], k2 - k1))
    return [tuple(c for c in r if c) for r in rows[: n_latent + 1]]


def required_order(n_latent: int) -> int:
    """Highest cumulant order used by the pair polynomial for ``n_latent`` latents (4 for l = 1)."""
    k1, _ = _orders(n_latent)
    return k1 + max(len(r) for r in _row_multisets(n_latent))


def _as_cumulants(data: np.ndarray | Cumulants, max_order: int) -> Cumulants:
    if isinstance(data, Cumulants):
        if data.max_order < max_order:
            raise ValueError(f"cumulants up to order {max_order} are needed, got up to {data.max_order}")
        return data
    return Cumulants.from_data(data, max_order)


def _cumulant_block(cum: Cumulants, j: int, i: int, n_latent: int) -> np.ndarray:
    """``(l + 1, l + 2)`` block: row = extra multiset, column t = j^(k1 - t) i^t, t = 0..l+1."""
    k1, _ = _orders(n_latent)
    sym = {"j": j, "i": i}
    block = np.empty((n_latent + 1, n_latent + 2))
    for r, row in enumerate(_row_multisets(n_latent)):
        extra = [sym[c] for c in row]
        for t in range(n_latent + 2):
            block[r, t] = cum[(j,) * (k1 - t) + (i,) * t + tuple(extra)]
    return block


def pair_polynomial_coefficients(
    data: np.ndarray | Cumulants, j: int, i: int, n_latent: int = 1
) -> np.ndarray:
    """Coefficients (ascending powers of b, length l + 2) of the root polynomial of pair j -> i.

    Its roots are the direct effect of j on i and one ratio per latent confounder of the pair.
    Coefficient of ``b^m`` is ``(-1)^m det(block without column m)`` (cofactor expansion).
    """
    if n_latent < 1:
        raise ValueError(f"n_latent must be >= 1, got {n_latent}")
    cum = _as_cumulants(data, required_order(n_latent))
    if not (0 <= j < cum.p and 0 <= i < cum.p) or i == j:
        raise ValueError(f"j and i must be distinct indices in [0, {cum.p}), got j={j}, i={i}")
    block = _cumulant_block(cum, j, i, n_latent)
    cols = np.arange(n_latent + 2)
    coef = np.array([(-1) ** m * np.linalg.det(block[:, cols != m]) for m in cols])
    # Hadamard's bound scales the determinant: a tiny ratio means a rank-deficient block
    bound = float(np.prod(np.linalg.norm(block, axis=1)))
    if bound == 0.0 or np.abs(coef).max() <= _DEGENERATE_TOL * bound:
        raise NotIdentifiableError(
            f"the cumulant block of pair ({j} -> {i}) is rank deficient: a Gaussian (or symmetric) "
            f"source, or fewer than {n_latent} latent confounder(s) with non-zero cumulants"
        )
    return coef


def pair_root_polynomial(
    data: np.ndarray | Cumulants, j: int, i: int, n_latent: int = 1, *, first_zero: bool = False
) -> np.ndarray:
    """Real parts of the roots of the pair polynomial, sorted by absolute value (length l + 1).

    Args:
        data: ``(n, p)`` sample or cumulants.
        j, i: the ordered pair (j may cause i).
        n_latent: number of latent confounders of the pair.
        first_zero: force the constant coefficient to 0 (a known source with ratio 0).
    """
    coef = pair_polynomial_coefficients(data, j, i, n_latent)
    if first_zero:
        coef = coef.copy()
        coef[0] = 0.0
    nz = np.flatnonzero(coef)
    coef = coef[: nz[-1] + 1]
    if len(coef) - 1 < n_latent + 1:
        raise NotIdentifiableError(
            f"the root polynomial of pair ({j} -> {i}) has degree {len(coef) - 1} < {n_latent + 1}"
        )
    roots = np.polynomial.Polynomial(coef).roots().real.astype(np.float64)
    return np.array(sorted(roots, key=abs))


def marginal_cumulants(cum: Cumulants, roots: np.ndarray, j: int, i: int) -> np.ndarray:
    """Least-squares ``omega`` with ``sum_s omega_s r_s^t = c_{j^(k-t) i^t}``, t < k = len(roots)."""
    k = len(roots)
    V = np.vander(np.asarray(roots, dtype=float), k, increasing=True).T  # V[t, s] = r_s^t
    y = np.array([cum[(j,) * (k - t) + (i,) * t] for t in range(k)])
    return np.linalg.lstsq(V, y, rcond=None)[0]


def min_dist_perm(
    v1: np.ndarray,
    v2: np.ndarray,
    *,
    tie_rtol: float = TIE_RTOL,
    tie_weights: Sequence[float] | np.ndarray | None = None,
) -> tuple[int, ...]:
    """The permutation ``perm`` minimising ``sum_k |v1[k] - v2[perm[k]]|``, with a stated tie-break.

    The L1 cost ties exactly whenever every ``v1`` lies on one side of every ``v2`` (all assignments
    then cost the same), so in floating point rounding would decide the pick (as in the released
    code, which keeps the first strict minimum). Here every permutation whose cost is within
    ``tie_rtol * (sum|v1| + sum|v2|)`` of the minimum counts as tied; among the tied ones the pick
    is the one with the smallest weighted cost ``sum_k tie_weights[k] |v1[k] - v2[perm[k]]|`` (same
    tolerance), and then the first in ``itertools.permutations`` order. The pick is deterministic
    and does not depend on rounding.

    Args:
        v1, v2: 1-D arrays of equal length.
        tie_rtol: relative tolerance of a tie; ``0.0`` is the released rule exactly (strict float
            comparison, so rounding decides exact ties).
        tie_weights: per-entry weights of ``v1`` for the secondary cost; ``None`` skips it.
    """
    v1, v2 = np.asarray(v1, dtype=float), np.asarray(v2, dtype=float)
    if v1.shape != v2.shape or v1.ndim != 1:
        raise ValueError(f"v1 and v2 must be 1-D of equal length, got {v1.shape} and {v2.shape}")
    if not (math.isfinite(tie_rtol) and tie_rtol >= 0.0):
        raise ValueError(f"tie_rtol must be a finite number >= 0, got {tie_rtol}")
    perms = list(itertools.permutations(range(len(v1))))
    dev = np.abs(v1[None, :] - v2[np.array(perms, dtype=int).reshape(len(perms), len(v1))])
    cost = dev.sum(axis=1)
    if tie_rtol == 0.0:  # the released rule: the first strict minimum in floating point
        return perms[int(np.argmin(cost))]
    tol = tie_rtol * float(np.abs(v1).sum() + np.abs(v2).sum())
    tied = np.flatnonzero(cost <= cost.min() + tol)
    if tie_weights is not None:
        w = np.asarray(tie_weights, dtype=float)
        if w.shape != v1.shape or not np.isfinite(w).all() or (w < 0).any():
            raise ValueError(f"tie_weights must be {v1.shape[0]} finite non-negative numbers, got {w}")
        second = dev[tied] @ w
        tied = tied[second <= second.min() + tol]
    return perms[int(tied[0])]


# ----------------------------------------------------------------------------------------------
# single-proxy estimators (CM, ICM, cumulant minimisation); variables ordered Z = 0, T = 1, Y = 2
# ----------------------------------------------------------------------------------------------


def _tie_rtol(tie_break: str) -> float:
    return 0.0 if tie_break == "released" else TIE_RTOL


def _cm_effect(cum: Cumulants, n_latent: int, match: str = "placeholder", tie_break: str = "first") -> float:
    """CM: proxy without Z -> T edge (``helpers/models.py::CM.estimate_effect``).

    ``tie_break`` (see :class:`ProxyCumulantEstimator`): ``"first"`` takes the first permutation
    among exactly tied assignments, ``"latent"`` breaks a tie of the last matching by how well the
    latent ratios alone match their roots, ``"released"`` leaves it to floating-point rounding as
    the released code.
    """
    rtol = _tie_rtol(tie_break)
    first_zero = n_latent >= 2  # step 1: the Z-noise has ratio 0 in T and Y
    r10 = pair_root_polynomial(cum, 0, 1, n_latent, first_zero=first_zero)
    r20 = pair_root_polynomial(cum, 0, 2, n_latent, first_zero=first_zero)
    r21 = pair_root_polynomial(cum, 1, 2, n_latent)
    # step 2: match latent components of (Z, T) and (Z, Y) by their marginal cumulants
    m10, m20 = marginal_cumulants(cum, r10, 0, 1), marginal_cumulants(cum, r20, 0, 2)
    perm = min_dist_perm(m10[1:], m20[1:], tie_rtol=rtol)
    # step 3: each latent's ratio in the (T, Y) pair is (Z, Y)-root / (Z, T)-root
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = [0.0] + [r20[1 + perm[k]] / r10[1 + k] for k in range(n_latent)]
    if match == "placeholder":  # step 4 as released: the root matched to the placeholder 0
        weights = np.r_[0.0, np.ones(n_latent)] if tie_break == "latent" else None
        perm21 = min_dist_perm(np.array(ratios), r21, tie_rtol=rtol, tie_weights=weights)
        return float(r21[perm21[0]])
    # step 4 (match="leftover"): match the l latent ratios to l of the (T, Y) roots; the leftover root is b_YT
    best, best_cost = math.nan, math.inf
    for k in range(n_latent + 1):
        rest = np.delete(r21, k)
        sub = min_dist_perm(np.array(ratios[1:]), rest, tie_rtol=rtol)
        cost = float(np.abs(np.array(ratios[1:]) - rest[list(sub)]).sum())
        if cost < best_cost:
            best, best_cost = float(r21[k]), cost
    return best


def _ratio_formula(S: np.ndarray, r: float) -> float:
    """b = (cov(T, Y) - r cov(Z, Y)) / (var(T) - r cov(Z, T)): T - r Z is free of the latent."""
    return float((S[1, 2] - r * S[0, 2]) / (S[1, 1] - r * S[0, 1]))


def _icm_effect(
    cum: Cumulants, n_latent: int, offset: str, match: str = "placeholder", tie_break: str = "first"
) -> float:
    """ICM: proxy with Z -> T edge (``helpers/models.py::ICM.estimate_effect``)."""
    r10 = pair_root_polynomial(cum, 0, 1, n_latent)
    r20 = pair_root_polynomial(cum, 0, 2, n_latent)
    m10, m20 = marginal_cumulants(cum, r10, 0, 1), marginal_cumulants(cum, r20, 0, 2)
    perm = min_dist_perm(m10, m20, tie_rtol=_tie_rtol(tie_break))
    pairs = [(float(r10[k]), float(r20[perm[k]])) for k in range(n_latent + 1)]  # (r_T, r_Y) per source
    S = cum.covariance
    if n_latent == 1:
        (t0, y0), (t1, y1) = pairs
        b_if_1_latent = _ratio_formula(S, t1)  # component 1 is the latent, component 0 the Z-noise
        b_if_0_latent = _ratio_formula(S, t0)
        # consistency: the Z-noise component satisfies r_Y = b r_T
        d0, d1 = abs(y0 - b_if_1_latent * t0), abs(y1 - b_if_0_latent * t1)
        return b_if_1_latent if d0 <= d1 else b_if_0_latent
    best, best_off = float("nan"), math.inf
    for r_t, r_y in pairs:
        M = np.array([[1.0, 0.0, 0.0], [-r_t, 1.0, 0.0], [-r_y, 0.0, 1.0]])  # T' = T - r_T Z, Y' = Y - r_Y Z
        try:
            b = _cm_effect(cum.transform(M), n_latent, match, tie_break)
        except (NotIdentifiableError, np.linalg.LinAlgError):
            continue
        off = abs(r_y - b * r_t) if offset == "natural" else abs(b * r_y - r_t)
        if math.isfinite(b) and off < best_off:
            best, best_off = b, off
    if not math.isfinite(best):
        raise NotIdentifiableError("no candidate root pair gave a finite CM estimate")
    return best


def _minimization_effect(cum: Cumulants, x0: float, alpha: float) -> float:
    """Cumulant minimisation (``ICM.estimate_effect_minimization``), third moments of (Z, T, Y)."""
    Z, T, Y = 0, 1, 2

    def E(*ix: int) -> float:
        return cum[ix]

    a = (
        E(Y, Y, Z) * E(Y, T, T),
        -E(T, T, T) * E(Y, Y, Z) - 2 * E(Y, T, Z) * E(Y, T, T),
        E(T, T, Z) * E(Y, T, T) + 2 * E(Y, T, Z) * E(T, T, T),
        -E(T, T, Z) * E(T, T, T),
    )
    b = (
        E(Y, Z, Z) * E(Y, Y, T),
        -E(T, Z, Z) * E(Y, Y, T) - 2 * E(Y, T, T) * E(Y, Z, Z),
        E(Y, Z, Z) * E(T, T, T) + 2 * E(Y, T, T) * E(T, Z, Z),
        -E(T, Z, Z) * E(T, T, T),
    )
    S = cum.covariance

    def objective(v: np.ndarray) -> float:
        x = float(v[0])
        k = np.polyval(a[::-1], x) / np.polyval(b[::-1], x)
        fixed = (S[1, 2] - k * S[0, 2]) / (S[1, 1] - k * S[0, 1])
        return float((x - fixed) ** 2 + alpha * (x - x0) ** 2)

    # BFGS on u = x / |x0| with the objective divided by x0^2: the same minimiser, but the stopping
    # rule no longer depends on the units of T and Y (the released code runs BFGS on x directly)
    scale = abs(x0) if math.isfinite(x0) and x0 != 0.0 else 1.0
    sol = optimize.minimize(lambda u: objective(u * scale) / scale**2, np.array([x0 / scale]), method="BFGS")
    return float(sol.x[0] * scale)


class CumulantConditionWarning(UserWarning):
    """The cumulant system of a pair is ill-conditioned: the estimate may be far off (see ``condition_``)."""


class SmallSampleWarning(UserWarning):
    """Few rows for higher-order cumulants: expect large errors (see the README's error-vs-n table)."""


MIN_ROWS = 100  # below this, sample cumulants of order >= 4 (and the Jarque-Bera check) mean nothing
FEW_ROWS = 1000  # below this, a warning: relative errors of tens of percent are typical (paper, n = 1e3)
MIN_RANK_SNR = 2.0  # warn when a pair block is within this many standard errors of rank deficient
_SNR_FOLDS = 10


def _scaled_block(cum: Cumulants, j: int, i: int, n_latent: int, sd: np.ndarray) -> np.ndarray:
    scale = np.ones(cum.p)
    scale[[j, i]] = sd
    return _cumulant_block(cum.transform(np.diag(1.0 / scale)), j, i, n_latent)


def block_condition(cum: Cumulants, j: int, i: int, n_latent: int) -> float:
    """Condition number of the pair's cumulant block, in standardised units with unit-norm rows.

    The root polynomial's coefficients are the maximal minors of this ``(l + 1, l + 2)`` block; it
    must have full row rank (it is rank deficient when, e.g., the sources loading on j have equal
    ``kappa_4 / kappa_3`` times loading). Returns ``s_max / s_min`` (``inf`` when rank deficient);
    the units of the variables do not change it. On its own it predicts the error only weakly
    (generic models already reach 1e2-1e4); :func:`block_rank_snr` weighs ``s_min`` against its
    sampling noise.
    """
    sd = np.sqrt(np.diag(cum.covariance)[[j, i]])
    if not (np.isfinite(sd).all() and (sd > 0).all()):
        return math.inf
    block = _scaled_block(cum, j, i, n_latent, sd)
    norms = np.linalg.norm(block, axis=1, keepdims=True)
    if not (norms > 0).all():
        return math.inf
    sv = np.linalg.svd(block / norms, compute_uv=False)
    return float(sv[0] / sv[-1]) if sv[-1] > 0 else math.inf


def block_rank_snr(cum: Cumulants, folds: Sequence[Cumulants], j: int, i: int, n_latent: int) -> float:
    """How far the pair's cumulant block is from rank deficient, in units of its sampling noise.

    ``s_min(B) / SE(s_min)`` where ``B`` is the block (standardised variables, unit-norm rows)
    from ``cum``, and the standard error is that of ``u' B v`` (``u, v`` the smallest singular pair,
    the first-order change of ``s_min``) over ``K`` disjoint folds of the rows (``std / sqrt(K)``).
    Below about 2 the data cannot tell the block from a rank-deficient one, so the polynomial's
    roots (and the effect) are unstable.
    """
    sd = np.sqrt(np.diag(cum.covariance)[[j, i]])
    if not (np.isfinite(sd).all() and (sd > 0).all()) or len(folds) < 2:
        return math.nan
    block = _scaled_block(cum, j, i, n_latent, sd)
    norms = np.linalg.norm(block, axis=1, keepdims=True)
    if not (norms > 0).all():
        return 0.0
    U, sv, Vt = np.linalg.svd(block / norms)
    u, v = U[:, -1], Vt[len(sv) - 1]  # the smallest singular pair: d s_min = u' dB v to first order
    fold_s = [float(u @ (_scaled_block(f, j, i, n_latent, sd) / norms) @ v) for f in folds]
    se = float(np.std(fold_s, ddof=1) / math.sqrt(len(folds)))
    return float(sv[-1]) / se if se > 0 else math.inf


class _CumulantEstimator(BaseEstimator):
    """Shared input handling: data or cumulants in, checks, ``effect_`` out, optional bootstrap.

    A scikit-learn ``BaseEstimator``: ``get_params``/``set_params`` and ``clone`` work, so an
    estimator can sit in a grid search or be copied with its settings and without its fit.

    Checks on the input: fewer than ``MIN_ROWS`` rows raise ``ValueError`` (also for sample
    cumulants carrying ``n_samples``); fewer than ``FEW_ROWS`` warn (:class:`SmallSampleWarning`);
    Gaussian-looking data raise :class:`GaussianNoiseError`; after the fit, ``condition_`` is the
    largest condition number of the pair cumulant blocks the estimator uses (:func:`block_condition`)
    and, for a data matrix, ``rank_snr_`` the smallest distance of a block from rank deficiency in
    standard errors (:func:`block_rank_snr`, 10 fixed folds); ``rank_snr_ < min_rank_snr`` warns
    (:class:`CumulantConditionWarning`). For cumulant input ``rank_snr_`` is NaN (no rows).

    Bootstrap (``n_bootstrap > 0``, data matrix input only): the rows are resampled ``n_bootstrap``
    times with ``random_state``, the estimator is re-run on each resample (with the same settings,
    without the Gaussianity check), and ``effect_interval_`` holds the percentile interval at level
    ``confidence`` (``(2,)`` for one effect, ``(k, 2)`` for k effects), ``bootstrap_effects_`` the
    draws (NaN where a resample failed) and ``bootstrap_failures_`` their count. Without it
    ``effect_interval_`` is ``None``.
    """

    n_vars: ClassVar[int]
    variables: ClassVar[tuple[str, ...]]
    assumed_graph: ClassVar[str]

    def __init__(
        self,
        *,
        unbiased: bool = False,
        gaussian_alpha: float = 1e-3,
        n_bootstrap: int = 0,
        confidence: float = 0.95,
        random_state: int | None = None,
        min_rank_snr: float = MIN_RANK_SNR,
    ) -> None:
        self.unbiased = unbiased
        self.gaussian_alpha = gaussian_alpha
        self.n_bootstrap = n_bootstrap
        self.confidence = confidence
        self.random_state = random_state
        self.min_rank_snr = min_rank_snr

    def _order(self) -> int:
        raise NotImplementedError

    def _effect_from(self, cum: Cumulants) -> Any:
        """The effect from (already checked) cumulants; may set fitted attributes."""
        raise NotImplementedError

    def _condition_pairs(self, cum: Cumulants) -> list[tuple[Cumulants, int, int, int]]:
        """The (cumulants, j, i, n_latent) of every pair block the estimator's polynomials use."""
        raise NotImplementedError

    def _check_common_params(self) -> None:
        if not 0.0 < self.gaussian_alpha < 1.0:
            raise ValueError(f"gaussian_alpha must lie in (0, 1), got {self.gaussian_alpha}")
        nb = self.n_bootstrap
        if isinstance(nb, bool) or not isinstance(nb, int | np.integer) or nb < 0 or 0 < nb < 20:
            raise ValueError(f"n_bootstrap must be 0 (off) or an int >= 20, got {nb!r}")
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence must lie in (0, 1), got {self.confidence}")
        if not (math.isfinite(self.min_rank_snr) and self.min_rank_snr >= 0.0):
            raise ValueError(f"min_rank_snr must be a finite number >= 0, got {self.min_rank_snr}")

    def _check_rows(self, n: int | None) -> None:
        if n is None:  # exact population cumulants
            return
        if n < MIN_ROWS:
            raise ValueError(
                f"{n} rows is too few: these estimators use cumulants up to order {max(self._order(), 4)}, "
                f"whose sample values are dominated by noise below {MIN_ROWS} rows (the Gaussianity check "
                f"is meaningless there too); at least {MIN_ROWS} rows are required, and "
                f"{FEW_ROWS}+ recommended"
            )
        if n < FEW_ROWS:
            warnings.warn(
                f"only {n} rows: higher-order sample cumulants are very noisy below {FEW_ROWS} rows and "
                "relative errors of tens of percent are typical; use n_bootstrap to see the spread",
                SmallSampleWarning,
                stacklevel=5,
            )

    def _prepare(self, data: np.ndarray | Cumulants) -> Cumulants:
        self._check_common_params()
        order = max(self._order(), 4)
        if isinstance(data, Cumulants):
            if data.p != self.n_vars:
                raise ValueError(
                    f"expected cumulants of {self.n_vars} variables {self.variables}, got {data.p}"
                )
            if self.n_bootstrap:
                raise ValueError("n_bootstrap needs the data matrix (rows to resample), not cumulants")
            self._check_rows(data.n_samples)
            cum = _as_cumulants(data, order)
        else:
            X = check_data(data, min_samples=1, n_cols=self.n_vars, name="data")
            self._check_rows(len(X))
            cum = Cumulants.from_data(X, order, unbiased=self.unbiased)
        self.gaussian_pvalues_ = gaussianity_pvalues(cum)
        if (self.gaussian_pvalues_ > self.gaussian_alpha).all():
            raise GaussianNoiseError(
                "every variable is consistent with a Gaussian (Jarque-Bera p-values "
                f"{np.round(self.gaussian_pvalues_, 4).tolist()} > {self.gaussian_alpha}): higher-order "
                "cumulants carry no signal and the causal effect is not identifiable"
            )
        return cum

    def _fit_checked(self, data: np.ndarray | Cumulants) -> Any:
        """The shared fit: checks, the effect, the condition diagnostic and the optional bootstrap."""
        cum = self._prepare(data)
        effect = self._effect_from(cum)
        pairs = self._condition_pairs(cum)
        self.condition_ = float(max(block_condition(c, j, i, l) for c, j, i, l in pairs))
        self.rank_snr_ = math.nan
        if not isinstance(data, Cumulants):
            X = np.asarray(data, dtype=float)
            order = np.random.default_rng(0).permutation(len(X))  # fixed: the diagnostic is deterministic
            with np.errstate(all="ignore"):
                folds = [
                    Cumulants.from_data(X[idx], max(self._order(), 4))
                    for idx in np.array_split(order, _SNR_FOLDS)
                ]
                fold_pairs = [self._condition_pairs(f) for f in folds]
                self.rank_snr_ = float(
                    min(
                        block_rank_snr(c, [fp[k][0] for fp in fold_pairs], j, i, l)
                        for k, (c, j, i, l) in enumerate(pairs)
                    )
                )
        if self.rank_snr_ < self.min_rank_snr:
            warnings.warn(
                f"the pair cumulant system is ill-conditioned for this sample: a cumulant block is "
                f"{self.rank_snr_:.2g} standard errors from rank deficient (< {self.min_rank_snr:g}; "
                f"condition number {self.condition_:.3g}), so the polynomial roots and the effect are "
                "unstable (e.g. sources with near-equal cumulant ratios). More rows help; check the "
                "spread with n_bootstrap",
                CumulantConditionWarning,
                stacklevel=3,
            )
        self.effect_interval_ = None
        if self.n_bootstrap:
            self._bootstrap(np.asarray(data, dtype=float))
        return effect

    def _bootstrap(self, X: np.ndarray) -> None:
        rng = np.random.default_rng(self.random_state)
        order = max(self._order(), 4)
        saved = {k: v for k, v in vars(self).items() if k.endswith("_") and not k.startswith("_")}
        draws = []
        for _ in range(int(self.n_bootstrap)):
            rows = rng.integers(0, len(X), size=len(X))
            try:
                with np.errstate(all="ignore"):
                    cum = Cumulants.from_data(X[rows], order, unbiased=self.unbiased)
                    draws.append(np.atleast_1d(np.asarray(self._effect_from(cum), dtype=float)))
            except (ValueError, np.linalg.LinAlgError):  # a degenerate resample
                draws.append(np.full(np.atleast_1d(saved["effect_"]).shape, np.nan))
        for k, v in saved.items():  # _effect_from may overwrite fitted attributes
            setattr(self, k, v)
        B = np.vstack(draws)
        B = np.where(np.isfinite(B), B, np.nan)
        self.bootstrap_effects_ = B[:, 0] if np.ndim(self.effect_) == 0 else B
        self.bootstrap_failures_ = int(np.isnan(B).any(axis=1).sum())
        tail = (1.0 - self.confidence) / 2.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns give NaN bounds
            q = np.nanquantile(B, [tail, 1.0 - tail], axis=0).T  # (k, 2)
        self.effect_interval_ = q[0] if np.ndim(self.effect_) == 0 else q

    def fit(self, data: np.ndarray | Cumulants, y: None = None) -> Any:
        raise NotImplementedError

    def estimate(self, data: np.ndarray | Cumulants) -> Any:
        """Fit and return the effect (``fit(data).effect_``)."""
        return self.fit(data).effect_

    def summary(self) -> str:
        """The graph this estimator assumes, in words."""
        return f"{type(self).__name__}: columns {self.variables}; assumes {self.assumed_graph}"


class ProxyCumulantEstimator(_CumulantEstimator):
    """Effect of T on Y with a single proxy Z of l latent confounders (columns Z, T, Y).

    Args:
        n_latent: number of latent confounders l (each points into Z, T and Y).
        proxy_affects_treatment: allow the edge Z -> T (ICM); otherwise CM.
        refine: ``"minimize"`` adds the cumulant-minimisation step (ICM, l = 1 only).
        offset: consistency offset for ICM with l >= 2 (``"natural"`` or ``"released"``).
        match: CM's last step: ``"placeholder"`` (the released code: the (T, Y) root matched to a
            0 placeholder) or ``"leftover"`` (the root left after matching the latent ratios; exact
            on population cumulants, but much noisier than the released rule at n <= 1e5).
        tie_break: how an exact tie of a matching step is broken (the L1 matching costs of two
            assignments are equal, e.g. whenever every latent ratio lies on one side of every root):
            ``"first"`` (default) takes the first permutation in ``itertools`` order: the released
            rule in exact arithmetic, deterministic and unit-equivariant (it agreed with the released
            float rule on 75 of 80 two-latent models at n = 1e5, with the same median error);
            ``"latent"`` takes, among the tied assignments of CM's last step, the one whose latent
            ratios match their roots best (exact on population cumulants for every model, but at
            n = 1e5 with two latents its median error was 0.93 against 0.34, gamma noise);
            ``"released"`` compares floats strictly as the released code, so rounding decides an
            exact tie (not reproducible across BLAS builds or units). Ties are costs within
            ``TIE_RTOL`` (1e-9) relative.
        alpha: weight of the proximity penalty in the minimisation.
        unbiased: use k-statistics (orders <= 4, i.e. l = 1 only).
        gaussian_alpha: level of the Jarque-Bera Gaussianity check.
        n_bootstrap: row-bootstrap draws for ``effect_interval_`` (0: off; data matrix input only).
        confidence: level of the bootstrap percentile interval.
        random_state: seed of the bootstrap.
        min_rank_snr: warn (:class:`CumulantConditionWarning`) when ``rank_snr_`` falls below it.
    """

    n_vars = 3
    variables = ("Z", "T", "Y")
    assumed_graph = (
        "L_1..L_l -> Z, T, Y; T -> Y; (Z -> T if proxy_affects_treatment); no Z -> Y edge; "
        "no other confounding; non-Gaussian independent noises"
    )

    def __init__(
        self,
        n_latent: int = 1,
        *,
        proxy_affects_treatment: bool = False,
        refine: Literal["minimize"] | None = None,
        offset: Literal["natural", "released"] = "natural",
        match: Literal["placeholder", "leftover"] = "placeholder",
        alpha: float = 1.0,
        unbiased: bool = False,
        gaussian_alpha: float = 1e-3,
        tie_break: Literal["first", "latent", "released"] = "first",
        n_bootstrap: int = 0,
        confidence: float = 0.95,
        random_state: int | None = None,
        min_rank_snr: float = MIN_RANK_SNR,
    ) -> None:
        super().__init__(
            unbiased=unbiased,
            gaussian_alpha=gaussian_alpha,
            n_bootstrap=n_bootstrap,
            confidence=confidence,
            random_state=random_state,
            min_rank_snr=min_rank_snr,
        )
        self.n_latent = n_latent
        self.proxy_affects_treatment = proxy_affects_treatment
        self.refine = refine
        self.offset = offset
        self.match = match
        self.alpha = alpha
        self.tie_break = tie_break

    def _order(self) -> int:
        return required_order(self.n_latent)

    def summary(self) -> str:
        """The graph this configuration assumes, in words."""
        l = self.n_latent
        latents = "L -> Z, T, Y" if l == 1 else f"L1..L{l} -> Z, T, Y"
        edge = "Z -> T -> Y" if self.proxy_affects_treatment else "T -> Y, no Z -> T edge"
        method = "ICM" if self.proxy_affects_treatment else "CM"
        refine = " + cumulant minimisation" if self.refine == "minimize" else ""
        return (
            f"{type(self).__name__} ({method}{refine}, l = {l}): columns (Z, T, Y); assumes {latents}; "
            f"{edge}; no Z -> Y edge; no other confounding; independent non-Gaussian noises"
        )

    def fit(self, data: np.ndarray | Cumulants, y: None = None) -> ProxyCumulantEstimator:
        """Estimate ``effect_`` (and ``cumulant_effect_``, the estimate before refinement).

        ``data`` holds every variable as a column (there is no separate target); ``y`` is accepted
        and ignored, as scikit-learn's unsupervised estimators do, so pipelines can pass one."""
        if not isinstance(self.n_latent, int) or self.n_latent < 1:
            raise ValueError(f"n_latent must be a positive int, got {self.n_latent!r}")
        if self.refine not in (None, "minimize"):
            raise ValueError(f"refine must be None or 'minimize', got {self.refine!r}")
        if self.offset not in ("natural", "released"):
            raise ValueError(f"offset must be 'natural' or 'released', got {self.offset!r}")
        if self.match not in ("leftover", "placeholder"):
            raise ValueError(f"match must be 'leftover' or 'placeholder', got {self.match!r}")
        if self.refine == "minimize" and (self.n_latent != 1 or not self.proxy_affects_treatment):
            raise ValueError("refine='minimize' is defined for the proxy-with-edge graph with n_latent=1")
        if self.tie_break not in TIE_BREAKS:
            raise ValueError(f"tie_break must be one of {TIE_BREAKS}, got {self.tie_break!r}")
        self._fit_checked(data)
        return self

    def _effect_from(self, cum: Cumulants) -> float:
        if self.proxy_affects_treatment:
            b = _icm_effect(cum, self.n_latent, self.offset, self.match, self.tie_break)
        else:
            b = _cm_effect(cum, self.n_latent, self.match, self.tie_break)
        self.cumulant_effect_ = b
        self.effect_ = _minimization_effect(cum, b, self.alpha) if self.refine == "minimize" else b
        return self.effect_

    def _condition_pairs(self, cum: Cumulants) -> list[tuple[Cumulants, int, int, int]]:
        pairs = [(cum, 0, 1, self.n_latent), (cum, 0, 2, self.n_latent)]
        if not self.proxy_affects_treatment:
            pairs.append((cum, 1, 2, self.n_latent))
        return pairs


class CumulantMinimization(ProxyCumulantEstimator):
    """ICM (proxy with Z -> T edge, one latent) refined by cumulant minimisation (columns Z, T, Y)."""

    assumed_graph = "L -> Z, T, Y; Z -> T -> Y; no Z -> Y edge; non-Gaussian independent noises"

    def __init__(
        self,
        *,
        alpha: float = 1.0,
        unbiased: bool = False,
        gaussian_alpha: float = 1e-3,
        n_bootstrap: int = 0,
        confidence: float = 0.95,
        random_state: int | None = None,
        min_rank_snr: float = MIN_RANK_SNR,
    ) -> None:
        super().__init__(
            1,
            proxy_affects_treatment=True,
            refine="minimize",
            alpha=alpha,
            unbiased=unbiased,
            gaussian_alpha=gaussian_alpha,
            n_bootstrap=n_bootstrap,
            confidence=confidence,
            random_state=random_state,
            min_rank_snr=min_rank_snr,
        )


# ----------------------------------------------------------------------------------------------
# underspecified IV (one instrument, two treatments); variables ordered Z = 0, T1 = 1, T2 = 2, Y = 3
# ----------------------------------------------------------------------------------------------


def _project(x: np.ndarray, a: np.ndarray, c: float) -> np.ndarray:
    """Projection of x onto {beta : a . beta = c}: x - a (x . a - c) / (a . a)."""
    return x - a * (float(x @ a) - c) / float(a @ a)


def _iv_regressions(cum: Cumulants) -> np.ndarray:
    S = cum.covariance
    return S[0, :] / S[0, 0]  # step 1: rho_v = cov(v, Z) / var(Z)


class UnderspecifiedIVEstimator(_CumulantEstimator):
    """Effects of T1 and T2 on Y with a single instrument Z (columns Z, T1, T2, Y).

    Args:
        unbiased: use k-statistics for the cumulants.
        gaussian_alpha: level of the Jarque-Bera Gaussianity check.
        n_bootstrap, confidence, random_state, min_rank_snr: as for
            :class:`ProxyCumulantEstimator` (``effect_interval_`` has shape ``(2, 2)``: one
            ``[low, high]`` row per effect).
    """

    n_vars = 4
    variables = ("Z", "T1", "T2", "Y")
    assumed_graph = (
        "Z -> T1, T2; T1, T2 -> Y; latent L2 -> T1, Y and latent L1 -> T2, Y (one latent per "
        "treatment-outcome pair); Z independent of the latents; non-Gaussian independent noises"
    )

    def _order(self) -> int:
        return required_order(1)

    def fit(self, data: np.ndarray | Cumulants, y: None = None) -> UnderspecifiedIVEstimator:
        """Estimate ``effects_`` (shape ``(2,)``; ``effect_`` is the same array); ``y`` is ignored."""
        self._fit_checked(data)
        return self

    def _residual(self, cum: Cumulants) -> Cumulants:
        rho = _iv_regressions(cum)
        return cum.transform(np.eye(4) - np.outer(rho, np.eye(4)[0]))  # v' = v - rho_v Z

    def _condition_pairs(self, cum: Cumulants) -> list[tuple[Cumulants, int, int, int]]:
        res = self._residual(cum)
        return [(res, 1, 3, 1), (res, 2, 3, 1)]

    def _effect_from(self, cum: Cumulants) -> np.ndarray:
        rho = _iv_regressions(cum)
        M = np.eye(4) - np.outer(rho, np.eye(4)[0])  # v' = v - rho_v Z
        res = cum.transform(M)
        r1 = pair_root_polynomial(res, 1, 3, 1)  # step 2: residual pair T1 -> Y, one latent
        r2 = pair_root_polynomial(res, 2, 3, 1)
        combos = [np.array(c) for c in itertools.product(r1, r2)]
        diffs = [abs(rho[1] * c[0] + rho[2] * c[1] - rho[3]) for c in combos]  # step 3: IV equation
        beta = combos[int(np.argmin(diffs))]
        self.roots_ = (r1, r2)
        self.effects_ = _project(beta, rho[1:3], float(rho[3]))  # step 4
        self.effect_ = self.effects_
        return self.effects_


# ----------------------------------------------------------------------------------------------
# baselines
# ----------------------------------------------------------------------------------------------


def ols_effect(data: np.ndarray | Cumulants, treatments: Sequence[int], outcome: int) -> np.ndarray:
    """Least-squares coefficients of ``outcome`` on ``treatments`` (centred): ``S_TT^{-1} S_TY``."""
    S = (
        data.covariance
        if isinstance(data, Cumulants)
        else np.cov(check_data(data, min_samples=3), rowvar=False)
    )
    p = S.shape[0]
    t = list(treatments)
    if not t:
        raise ValueError("treatments must name at least one column")
    for j in t:
        if isinstance(j, bool) or not isinstance(j, int | np.integer) or not 0 <= j < p:
            raise ValueError(f"treatments must be column indices in [0, {p}), got {t}")
    if len(set(t)) != len(t):
        raise ValueError(f"treatments must be distinct, got {t}")
    if isinstance(outcome, bool) or not isinstance(outcome, int | np.integer) or not 0 <= outcome < p:
        raise ValueError(f"outcome must be a column index in [0, {p}), got {outcome!r}")
    if outcome in t:
        raise ValueError(f"outcome {outcome} is also a treatment")
    return np.linalg.solve(S[np.ix_(t, t)], S[t, outcome])


def cross_moment_effect(data: np.ndarray | Cumulants, deg: int = 2) -> float:
    """Cross-moment estimator of Kivva et al. (2023) as in the released ``cross_moment`` (Z, T, Y).

    ``alpha = sign(cov(Z, T)) |(E[T^d Z] - d cov E[T^(d-1)]) / (E[Z^d T] - d cov E[Z^(d-1)])|^(1/(d-1))``,
    effect ``(E[TY] - alpha E[YZ]) / (E[T^2] - alpha E[TZ])``; ``d`` grows while the denominator is 0.
    On cumulants (centred data) ``d`` is 2 or 3, where those moment combinations are cumulants.
    """
    if deg < 2:
        raise ValueError(f"deg must be >= 2, got {deg}")
    if isinstance(data, Cumulants):
        if data.p != 3:
            raise ValueError(f"expected cumulants of (Z, T, Y), got {data.p} variables")

        def diff(a: int, b: int, d: int) -> float:
            if d > 3:
                raise ValueError("cross_moment_effect on cumulants supports deg 2 and 3")
            return data[(a,) * d + (b,)]

        S = data.covariance
    else:
        X = check_data(data, min_samples=deg + 2, n_cols=3, name="data")
        X = X - X.mean(axis=0)
        S = X.T @ X / len(X)

        def diff(a: int, b: int, d: int) -> float:
            xa, xb = X[:, a], X[:, b]
            return float(np.mean(xa**d * xb) - d * S[a, b] * np.mean(xa ** (d - 1)))

    d = deg
    while True:
        ratio = diff(1, 0, d) / diff(0, 1, d)
        alpha = abs(abs(ratio) ** (1.0 / (d - 1))) * np.sign(S[0, 1])
        den = S[1, 1] - alpha * S[1, 0]
        if den != 0 or d >= deg + 1:
            return float((S[1, 2] - alpha * S[2, 0]) / den)
        d += 1


def min_norm_iv(data: np.ndarray | Cumulants) -> np.ndarray:
    """Minimum-norm solution of the IV equation ``rho_T1 b1 + rho_T2 b2 = rho_Y`` (Z, T1, T2, Y)."""
    if isinstance(data, Cumulants):
        if data.p != 4:
            raise ValueError(f"expected cumulants of (Z, T1, T2, Y), got {data.p} variables")
        cum = data
    else:
        X = check_data(data, min_samples=3, n_cols=4, name="data")
        cum = Cumulants.from_data(X, 2)
    rho = _iv_regressions(cum)
    return _project(np.zeros(2), rho[1:3], float(rho[3]))
