"""Tests for icml25.theory.local_glivenko_cantelli (Cohen, Kontorovich, Weiss; ICML 2025; arXiv 2410.02835).

They check the computable objects (sequences, S and T, estimators, exact and Monte Carlo risk, the
testing lower bound) against closed forms, brute-force enumeration and simulation; they verify
numerical consequences only, never the paper's theorems.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from icml25.theory.local_glivenko_cantelli import (
    AddBeta,
    EmpiricalMean,
    IsotonicOrdered,
    PooledTailHybrid,
    Thresholded,
    Zero,
    bayes_error,
    block,
    block_members,
    bound_hypotheses,
    check_counts,
    class_excess,
    complexity_S,
    complexity_T,
    constant,
    exact_sup_risk,
    exp_sqrt_log,
    lgc_upper_bound,
    multiple_testing_bound,
    permutation_family,
    polynomial,
    sample_counts,
    sup_errors,
    sup_risk,
    two_level_complexity,
    worst_case_risk,
)
from icml25.theory.local_glivenko_cantelli.check import (
    BEST,
    CHECK,
    COMPETITORS,
    LOWER,
    OURS,
    ZERO,
    LGCConfig,
    make_estimator,
)

COORDINATEWISE = [EmpiricalMean(), AddBeta(0.5), AddBeta(1.0), Thresholded(1), Thresholded(2)]
# means on a 1e-6 grid, so that 1 - p is exact enough to test the p -> 1 - p symmetry
means_st = st.lists(st.integers(0, 10**6).map(lambda i: i / 1e6), min_size=1, max_size=6)


def brute_force_risk(estimator, p, n) -> float:
    """E sup_j |g(Y_j) - p_j| by enumerating every count vector."""
    g = estimator.count_map(n)
    pmfs = [stats.binom.pmf(np.arange(n + 1), n, pj) for pj in p]
    total = 0.0
    for ks in itertools.product(range(n + 1), repeat=len(p)):
        prob = math.prod(pmfs[j][k] for j, k in enumerate(ks))
        if prob > 0:
            total += prob * max(abs(g[k] - pj) for k, pj in zip(ks, p, strict=True))
    return total


# -- sequences and complexities -----------------------------------------------------------------


def test_sequences_shapes_and_values() -> None:
    p = polynomial(100, 1.0)
    assert p.shape == (100,) and p.dtype == np.float64
    assert p[0] == pytest.approx(0.25) and p[-1] == pytest.approx(0.5 / 101)
    assert (np.diff(p) < 0).all()
    e = exp_sqrt_log(50)
    assert e[0] == pytest.approx(0.5 * math.exp(-math.sqrt(math.log(2))))
    assert (np.diff(e) < 0).all()
    assert (constant(7, 0.3) == 0.3).all()


def test_permutation_family_keeps_the_multiset() -> None:
    p = polynomial(30, 1.0)
    fam = permutation_family(p, 4, rng=0)
    assert len(fam) == 6
    for member in fam[1:-1]:
        np.testing.assert_array_equal(np.sort(member), np.sort(p))
    np.testing.assert_allclose(fam[-1], np.minimum(2 * p, 0.5))
    assert len(permutation_family(p, 0, include_scaled=False)) == 1


def test_complexities_closed_forms() -> None:
    # p_j = 1/2 (j+1)^-1: S is attained at j = 2, T at the last coordinate
    D = 10**6
    p = polynomial(D, 1.0)
    assert complexity_S(p) == pytest.approx(math.log(3) / 6)
    assert complexity_T(p) == pytest.approx(math.log(D + 1) / math.log(2 * (D + 1)))
    c = constant(1000, 0.3)
    assert complexity_S(c) == pytest.approx(0.3 * math.log(1001))
    assert complexity_T(c) == pytest.approx(math.log(1001) / math.log(1 / 0.3))
    # T of the polynomial family tends to 1/a
    assert complexity_T(polynomial(10**6, 2.0)) == pytest.approx(0.5, abs=0.03)
    # zeros contribute nothing; means above 1/2 fold to 1 - p
    assert complexity_T(np.array([0.25, 0.0])) == pytest.approx(math.log(2) / math.log(4))
    assert complexity_S(np.array([0.75])) == pytest.approx(0.25 * math.log(2))
    n = 100
    assert lgc_upper_bound(p, n) == pytest.approx(
        math.sqrt(complexity_S(p) / n) + complexity_T(p) * math.log(n) / n
    )


@settings(max_examples=40, deadline=None)
@given(means_st, st.randoms(use_true_random=False))
def test_complexities_symmetric_and_monotone(p, rnd) -> None:
    arr = np.array(p)
    perm = arr.copy()
    rnd.shuffle(perm)
    for f in (complexity_S, complexity_T):
        assert f(perm) == pytest.approx(f(arr))
        assert f(1.0 - arr) == pytest.approx(f(arr))
        assert f(np.append(arr, 0.1)) >= f(arr) - 1e-12  # more coordinates never lower S or T
    s, t = two_level_complexity(0.05, 0.1, 7)
    h = bound_hypotheses(0.05, 0.1, 7)
    assert (s, t) == pytest.approx((complexity_S(h), complexity_T(h)))


# -- estimators ---------------------------------------------------------------------------------


def test_coordinatewise_estimators_formulas() -> None:
    Y, n = np.array([0, 1, 2, 5, 10]), 10
    np.testing.assert_allclose(EmpiricalMean()(Y, n), Y / n)
    np.testing.assert_allclose(AddBeta(1.0)(Y, n), (Y + 1.0) / 12.0)
    np.testing.assert_allclose(Thresholded(2)(Y, n), np.where(Y >= 2, Y / n, 0.0))
    counts = sample_counts(polynomial(1000), 50, rng=0)
    assert counts.dtype == np.int64 and counts.shape == (1000,)
    assert counts.min() >= 0 and counts.max() <= 50


def naive_pava(y: np.ndarray) -> np.ndarray:
    """Non-increasing least squares by pooling adjacent violators, one pool at a time."""
    blocks = [[float(v), 1] for v in y]
    merged = True
    while merged:
        merged = False
        for i in range(len(blocks) - 1):
            if blocks[i][0] < blocks[i + 1][0] - 1e-15:
                (a, m), (b, k) = blocks[i], blocks[i + 1]
                blocks[i : i + 2] = [[(a * m + b * k) / (m + k), m + k]]
                merged = True
                break
    return np.concatenate([[v] * m for v, m in blocks])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 8), min_size=1, max_size=12))
def test_isotonic_matches_naive_pava(counts) -> None:
    Y = np.array(counts)
    fit = IsotonicOrdered()(Y, 8)
    np.testing.assert_allclose(fit, naive_pava(Y / 8.0), atol=1e-12)
    assert (np.diff(fit) <= 1e-12).all()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=2, max_size=10), st.randoms(use_true_random=False))
def test_coordinatewise_estimators_are_permutation_equivariant(counts, rnd) -> None:
    Y = np.array(counts)
    perm = list(range(Y.size))
    rnd.shuffle(perm)
    for est in COORDINATEWISE:
        np.testing.assert_allclose(est(Y[perm], 9), est(Y, 9)[perm])


def test_pooled_hybrid_pools_constants_only() -> None:
    hybrid = PooledTailHybrid()
    rng = np.random.default_rng(0)
    Y = rng.binomial(20, 0.3, size=20_000)
    level = hybrid.pooled_level(Y, 20)
    assert level is not None and abs(level - 0.3) < 0.01
    np.testing.assert_allclose(hybrid(Y, 20), level)
    Yp = sample_counts(polynomial(20_000), 20, rng=1)
    assert hybrid.pooled_level(Yp, 20) is None
    np.testing.assert_array_equal(hybrid(Yp, 20), Yp / 20)
    # a constant tail but a different head is refused by the constancy test
    Y2 = rng.binomial(100, 0.3, size=20_000)
    assert hybrid.pooled_level(Y2, 100) is not None
    Y2[:5] = 100
    assert hybrid.pooled_level(Y2, 100) is None


# -- risk -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("estimator", COORDINATEWISE, ids=lambda e: repr(e))
def test_exact_risk_equals_brute_force(estimator) -> None:
    p = np.array([0.3, 0.1, 0.5, 0.02, 0.0, 1.0])
    assert exact_sup_risk(estimator, p, 4) == pytest.approx(brute_force_risk(estimator, p, 4), abs=1e-12)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=3), st.integers(1, 5))
def test_exact_risk_equals_brute_force_property(p, n) -> None:
    est = EmpiricalMean()
    assert exact_sup_risk(est, np.array(p), n) == pytest.approx(brute_force_risk(est, p, n), abs=1e-10)


def test_exact_risk_agrees_with_monte_carlo() -> None:
    p = polynomial(2000, 1.0)
    for est, n in ((EmpiricalMean(), 30), (Thresholded(2), 100), (AddBeta(0.5), 10)):
        exact = exact_sup_risk(est, p, n)
        errs = sup_errors([est], p, n, reps=800, rng=1)[0, 0]
        se = errs.std(ddof=1) / math.sqrt(errs.size)
        assert abs(errs.mean() - exact) < 4 * se, (est, exact, errs.mean(), se)
    mc = sup_risk(EmpiricalMean(), p, 30, reps=200, rng=2)
    assert mc.ci_low <= mc.mean <= mc.ci_high


def test_exact_risk_constant_closed_form_and_invariances() -> None:
    n, D, c = 12, 500, 0.3
    # constant: P(sup <= t) = F_1(t)^D, integrated over the jumps of F_1
    errs = np.abs(np.arange(n + 1) / n - c)
    pmf = stats.binom.pmf(np.arange(n + 1), n, c)
    ts = np.sort(np.unique(errs))
    F = np.array([pmf[errs <= t + 1e-15].sum() for t in ts]) ** D
    closed = ts[0] + np.sum(np.diff(ts) * (1 - F[:-1]))
    assert exact_sup_risk(EmpiricalMean(), constant(D, c), n) == pytest.approx(closed, rel=1e-9)
    # permutation invariance, and the EME's risk can only grow with D (nested truncations)
    p = polynomial(3000, 0.5)
    perm = np.random.default_rng(0).permutation(p.size)
    assert exact_sup_risk(EmpiricalMean(), p[perm], 50) == pytest.approx(
        exact_sup_risk(EmpiricalMean(), p, 50)
    )
    risks = [exact_sup_risk(EmpiricalMean(), p[:d], 50) for d in (10, 100, 1000, 3000)]
    assert all(b >= a - 1e-12 for a, b in zip(risks, risks[1:], strict=False))


def test_sup_errors_nested_dims_match_prefix_runs() -> None:
    p = constant(400, 0.3)
    both = sup_errors([EmpiricalMean(), PooledTailHybrid()], p, 20, reps=5, rng=3, dims=(100, 400))
    assert both.shape == (2, 2, 5)
    gen = np.random.default_rng(3)
    for r in range(5):
        Y = gen.binomial(20, p)
        assert both[0, 0, r] == pytest.approx(np.abs(Y[:100] / 20 - 0.3).max())
        assert both[0, 1, r] == pytest.approx(np.abs(Y / 20 - 0.3).max())


def test_worst_case_risk_isotonic_loses_on_permutations() -> None:
    fam = permutation_family(polynomial(2000), 3, rng=0, include_scaled=False)
    iso = worst_case_risk(IsotonicOrdered(), fam, 100, reps=10, rng=0)
    eme = worst_case_risk(EmpiricalMean(), fam, 100)
    assert iso.per_member[0] < eme.risk  # the sorted member: the order helps
    assert iso.risk > eme.risk and iso.member != 0  # a permuted member: the order hurts
    assert eme.per_member == pytest.approx([eme.risk] * 4)


# -- lower bound ----------------------------------------------------------------------------------


def test_bayes_error_matches_simulation_and_special_cases() -> None:
    q, eps, k, n = 0.1, 0.05, 5, 30
    rng = np.random.default_rng(0)
    Y = rng.binomial(n, q, size=(100_000, k))
    Y[:, 0] = rng.binomial(n, q + eps, size=100_000)
    top = Y.max(axis=1, keepdims=True)
    correct = (Y[:, 0] == top[:, 0]) / (top == Y).sum(axis=1)
    assert bayes_error(q, eps, k, n) == pytest.approx(1 - correct.mean(), abs=0.01)
    assert bayes_error(q, eps, 1, n) == 0.0
    errs = [bayes_error(q, eps, kk, n) for kk in (2, 4, 16, 64)]
    assert all(b > a for a, b in zip(errs, errs[1:], strict=False))  # more hypotheses: harder


def test_lower_bound_below_eme_risk_on_its_hypotheses() -> None:
    grid = dict(q_grid=np.geomspace(1e-3, 0.4, 12), eps_grid=np.geomspace(0.1, 4, 10), k_grid=(2, 8, 32, 128))
    for n in (10, 100):
        lb = multiple_testing_bound(n, **grid, s_max=0.2, t_max=1.0)
        assert lb.value > 0
        s, t = two_level_complexity(lb.q, lb.eps, lb.k)
        assert s <= 0.2 and t <= 1.0
        h = bound_hypotheses(lb.q, lb.eps, lb.k)
        assert exact_sup_risk(EmpiricalMean(), h, n) >= lb.value
    assert multiple_testing_bound(10, **grid, s_max=1e-9, t_max=1e-9).value == 0.0


# -- bad input --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: polynomial(0), "D"),
        (lambda: polynomial(10, a=-1.0), "a"),
        (lambda: constant(5, 1.5), "c"),
        (lambda: complexity_S(np.array([0.1, np.nan])), "p"),
        (lambda: complexity_T(np.ones((2, 2)) * 0.1), "p"),
        (lambda: complexity_S(np.array([])), "p"),
        (lambda: complexity_T(np.array(["a"])), "p"),
        (lambda: sample_counts(np.array([0.1, 1.2]), 5), "p"),
        (lambda: sample_counts(np.array([0.1]), 0), "n"),
        (lambda: check_counts(np.array([0, 7]), 5), "Y"),
        (lambda: check_counts(np.array([0.5]), 5), "Y"),
        (lambda: EmpiricalMean()(np.array([1.0, np.inf]), 5), "Y"),
        (lambda: AddBeta(0.0), "beta"),
        (lambda: Thresholded(0), "tau"),
        (lambda: PooledTailHybrid(tail_fraction=1.0), "tail_fraction"),
        (lambda: exact_sup_risk(IsotonicOrdered(), np.array([0.1]), 5), "coordinatewise"),
        (lambda: exact_sup_risk(EmpiricalMean(), np.array([0.1]), 5, tol=0.5), "tol"),
        (lambda: sup_errors([EmpiricalMean()], np.array([0.1]), 5, reps=0), "reps"),
        (lambda: sup_errors([EmpiricalMean()], np.array([0.1, 0.2]), 5, dims=(3,)), "dims"),
        (lambda: bayes_error(0.0, 0.1, 3, 10), "q"),
        (lambda: multiple_testing_bound(10, q_grid=[], eps_grid=[1.0], k_grid=[2]), "q_grid"),
        (lambda: LGCConfig(dims=(10,)), "dims"),
        (lambda: LGCConfig(pathology_reps=0), "pathology_reps"),
    ],
)
def test_bad_input_is_refused(call, match) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_presets_construct_and_full_is_the_large_configuration() -> None:
    full = CHECK.config("full")
    assert full.dims[-1] == 10**6 and full.minimax_dim == 10**6
    small = CHECK.config("small")
    claim = CHECK.claim_for(small)
    assert claim.headline_criterion().name == "minimax/eme_not_beaten"
    assert claim.headline_criterion().paired and set(claim.references) == {ZERO, LOWER}
    assert claim.gates_at("small")
    # an override that drops exponent 1 keeps every criterion measurable (names follow the config)
    cfg = CHECK.config("tiny", {"lgc_exponents": (2.0,)})
    assert all("poly_a1/" not in c.metric for c in CHECK.claim_for(cfg).criteria)


# -- the minimax comparison over one class (issue 43) ----------------------------------------------


def test_every_competitor_differs_from_the_eme() -> None:
    # threshold_1 was the EME itself (a count of 0 already gives 0): a competitor must differ somewhere
    for arm in COMPETITORS:
        est = make_estimator(arm)
        if est.coordinatewise:
            assert not np.allclose(est.count_map(10), EmpiricalMean().count_map(10)), arm


def test_zero_estimator_risk_is_the_largest_mean() -> None:
    p = np.array([0.3, 0.1, 0.05])
    assert exact_sup_risk(Zero(), p, 7) == pytest.approx(0.3)
    np.testing.assert_array_equal(Zero()(np.array([1, 2, 3]), 5), np.zeros(3))


def test_class_membership_of_blocks_and_permutations() -> None:
    q = polynomial(2000)
    s, t = complexity_S(q), complexity_T(q)
    members = block_members(s, t, np.geomspace(1e-4, 0.5, 12), (1, 2, 8, 64, 1024))
    assert members and all(class_excess(block(r, k), s, t) <= 1e-12 for r, k in members)
    # a block the grid leaves out lies outside the class
    assert (0.5, 1024) not in members and class_excess(block(0.5, 1024), s, t) > 0
    rng = np.random.default_rng(0)
    assert class_excess(q[rng.permutation(q.size)], s, t) == pytest.approx(0.0, abs=1e-12)
    # the old family's doubled member min(2q, 1/2) lies outside the class of q (the defect)
    assert class_excess(np.minimum(2 * q, 0.5), s, t) > 0
    # padding zeros and the increasing order keep a block in its class
    assert class_excess(block(0.01, 5, pad=5, increasing=True), s, t) == class_excess(block(0.01, 5), s, t)


def test_tiny_minimax_family_lies_in_one_class_and_meets_adversarial_orderings() -> None:
    config = CHECK.config("tiny")
    metrics = {a: {} for a in (OURS, *COMPETITORS, BEST, ZERO, LOWER)}
    items: dict = {}
    series: dict = {}

    class Ctx:
        def progress(self, *args) -> None:
            pass

    CHECK.begin_run(config)
    CHECK._minimax(config, 0, metrics, items, series, Ctx())
    assert metrics[OURS]["minimax/class_excess"] <= 1e-9  # every member, isotonic's too, in C(S(q), T(q))
    assert metrics[OURS]["minimax/eme_over_lb_hyp_min"] >= 1.0
    ns = config.minimax_sizes
    wc = {a: np.array([metrics[a][f"minimax/wc_n{n}"] for n in ns]) for a in metrics}
    # the lower bound holds for every estimator; the EME's worst case is at least its risk on q
    assert (wc[LOWER] <= wc[OURS]).all()
    assert wc[OURS][0] >= exact_sup_risk(EmpiricalMean(), polynomial(config.minimax_dim), ns[0]) - 1e-12
    # the isotonic fit meets q in increasing order and loses like the zero estimator there
    assert (wc["isotonic"] >= 0.8 * wc[ZERO]).all()
    # the best competitor is the smallest worst case per n, and some competitor wins on some member
    np.testing.assert_allclose(wc[BEST], np.min([wc[a] for a in COMPETITORS], axis=0))
    assert metrics[BEST]["minimax/max_member_gain"] > 0.1
    assert set(items) >= {OURS, BEST, ZERO, LOWER} and items[OURS]["minimax/log_wc"].shape == (len(ns),)
