"""Tests for icml25.theory.competitive_classification (Einav & Rosenfeld; ICML 2025; arXiv 2502.18052).

The market quantities are checked against brute force on tiny markets: selection probabilities
against the rules' definitions, the closed-form best-response weights against the share computed
with the provider's correctness switched on and off, the weighted-accuracy best response against an
exhaustive search over a finite hypothesis class; plus properties (shares sum to at most 1, welfare
is the served fraction) and the dynamics' bookkeeping (entry, frozen providers, convergence).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression

from icml25.theory.competitive_classification import (
    SYNTHETIC,
    AccuracyMarket,
    ChoiceRule,
    MarketAwareClassifier,
    Provider,
    best_linear_response,
    best_response_weights,
    default_estimators,
    exact_linear_response,
    finite_best_response,
    flip_labels,
    hhi,
    make_rings,
    make_synthetic,
    market_data,
    market_shares,
    share_offset,
    user_welfare,
)
from icml25.theory.competitive_classification.check import CHECK, MarketConfig

correct_st = (
    st.integers(1, 6)
    .flatmap(lambda K: st.lists(st.lists(st.booleans(), min_size=K, max_size=K), min_size=1, max_size=12))
    .map(lambda rows: np.array(rows, dtype=bool))
)


def brute_probs(correct: np.ndarray, kind: str, current: np.ndarray | None = None) -> np.ndarray:
    """P(s = j) user by user from the rules' verbal definitions."""
    n, K = correct.shape
    out = np.zeros((n, K))
    for i in range(n):
        right = [j for j in range(K) if correct[i, j]]
        stays = kind == "loyal" and current is not None and current[i] >= 0
        if stays and (correct[i, current[i]] or not right):
            out[i, current[i]] = 1.0
            continue
        if right:
            for j in right:
                out[i, j] = 1.0 / len(right)
        elif kind in ("uniform", "loyal"):
            out[i, :] = 1.0 / K
    return out


# -- the market model -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["uniform", "abstain", "loyal"])
def test_selection_probs_match_the_rules(kind: str) -> None:
    rng = np.random.default_rng(0)
    c = rng.random((40, 4)) < 0.4
    current = rng.integers(-1, 4, size=40) if kind == "loyal" else None
    probs = ChoiceRule(kind).selection_probs(c, current=current)
    assert probs.shape == (40, 4) and probs.dtype == np.float64
    np.testing.assert_allclose(probs, brute_probs(c, kind, current))


def test_softmax_rule_and_welfare() -> None:
    c = np.array([[1, 0], [0, 0]], dtype=bool)
    p = np.array([[0.9, 0.2], [0.4, 0.4]])
    probs = ChoiceRule("softmax", tau=0.5).selection_probs(c, proba_true=p)
    e = np.exp(np.array([0.9, 0.2]) / 0.5)
    np.testing.assert_allclose(probs[0], e / e.sum())
    np.testing.assert_allclose(probs[1], [0.5, 0.5])
    assert user_welfare(c, ChoiceRule("softmax", tau=0.5), proba_true=p) == pytest.approx(probs[0, 0] / 2)
    with pytest.raises(ValueError, match="proba_true"):
        market_shares(c, "softmax")


@settings(max_examples=60, deadline=None)
@given(correct_st)
def test_shares_sum_to_at_most_one_and_welfare_is_the_served_fraction(c: np.ndarray) -> None:
    served = c.any(axis=1).mean()
    for kind in ("uniform", "abstain", "loyal"):
        s = market_shares(c, kind)
        assert (s >= 0).all() and s.sum() <= 1 + 1e-12
        assert user_welfare(c, kind) == pytest.approx(served)
    assert market_shares(c, "uniform").sum() == pytest.approx(1.0)
    assert market_shares(c, "abstain").sum() == pytest.approx(served)
    s = market_shares(c, "uniform")
    assert hhi(s) == pytest.approx(float((s**2).sum())) and 1 / c.shape[1] - 1e-12 <= hhi(s) <= 1 + 1e-12


@settings(max_examples=60, deadline=None)
@given(correct_st.filter(lambda c: c.shape[1] >= 2), st.sampled_from(["uniform", "abstain"]))
def test_best_response_weights_match_brute_force(c: np.ndarray, kind: str) -> None:
    """mu_j = mean(w_j c_j) + offset, with w_j = P(s=j | c_j=1) - P(s=j | c_j=0) user by user."""
    K = c.shape[1]
    for j in range(K):
        others = np.delete(c, j, axis=1)
        on, off = c.copy(), c.copy()
        on[:, j], off[:, j] = True, False
        p_on = ChoiceRule(kind).selection_probs(on)[:, j]
        p_off = ChoiceRule(kind).selection_probs(off)[:, j]
        w = best_response_weights(others, K, kind)
        np.testing.assert_allclose(w, p_on - p_off, atol=1e-12)
        assert share_offset(others, K, kind) == pytest.approx(p_off.mean())
        assert market_shares(c, kind)[j] == pytest.approx(
            (w * c[:, j]).mean() + share_offset(others, K, kind)
        )
        assert (w > 0).all() and (w <= 1).all()


def test_two_providers_under_uniform_have_constant_weights() -> None:
    c_other = np.array([[0], [1], [1], [0]], dtype=bool)
    np.testing.assert_allclose(best_response_weights(c_other, 2, "uniform"), 0.5)
    assert not np.allclose(best_response_weights(c_other, 2, "abstain"), 0.5)  # abstain is not constant
    assert not np.allclose(best_response_weights(np.c_[c_other, ~c_other], 3, "uniform"), 1 / 3)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["uniform", "abstain"]), st.integers(2, 4))
def test_finite_best_response_is_the_exhaustive_share_maximiser(seed: int, kind: str, K: int) -> None:
    """Threshold classifiers on a line: argmax of weighted accuracy == argmax of the brute-force share."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.random(9))
    y = rng.integers(0, 2, 9)
    thresholds = np.r_[-0.1, (x[:-1] + x[1:]) / 2, 1.1]
    cands = np.array(
        [((x > t).astype(int) == y) for t in thresholds] + [((x <= t).astype(int) == y) for t in thresholds]
    )
    others = cands[rng.integers(0, len(cands), K - 1)].T
    brute = [market_shares(np.c_[h, others], kind)[0] for h in cands]
    best = finite_best_response(cands, others, kind)
    assert brute[best] == pytest.approx(max(brute))


# -- the learner --------------------------------------------------------------------------------------


def test_best_response_entrant_wins_more_training_share_than_erm() -> None:
    X, y = make_rings(600, seed=1)
    inc = [LogisticRegression(solver="newton-cholesky").fit(*make_rings(300, seed=s)) for s in (2, 3)]
    others = np.stack([m.predict(X) == y for m in inc], axis=1)
    erm = LogisticRegression(solver="newton-cholesky").fit(X, y)
    br = MarketAwareClassifier(rule="uniform").fit(X, y, others)
    share = {
        name: market_shares(np.c_[model.predict(X) == y, others], "uniform")[0]
        for name, model in (("erm", erm), ("br", br))
    }
    assert share["br"] >= share["erm"]
    assert br.weights_.shape == (600,) and br.weights_.mean() == pytest.approx(1.0)


def test_best_response_equals_erm_for_two_providers_under_uniform() -> None:
    X, y = make_rings(400, seed=4)
    other = (LogisticRegression(solver="newton-cholesky").fit(*make_rings(200, seed=5)).predict(X) == y)[
        :, None
    ]
    br = MarketAwareClassifier(rule="uniform").fit(X, y, other)
    erm = LogisticRegression(solver="newton-cholesky", max_iter=2000).fit(X, y)
    np.testing.assert_allclose(br.estimator_.coef_, erm.coef_, atol=1e-10)
    np.testing.assert_array_equal(br.predict(X), erm.predict(X))


def _torch_soft_share(X, y, w, coef, icpt, classes, C, T, lr, steps):  # noqa: ANN001, ANN202
    """The soft-share ascent as first written, with torch autograd and torch.optim.Adam."""
    import torch

    W = torch.tensor(coef, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(icpt, dtype=torch.float64, requires_grad=True)
    Xt = torch.as_tensor(X, dtype=torch.float64)
    idx = torch.as_tensor(np.searchsorted(classes, y), dtype=torch.long)
    wt = torch.as_tensor(w, dtype=torch.float64)
    opt = torch.optim.Adam([W, b], lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        p = torch.softmax((Xt @ W.T + b) / T, dim=1)
        loss = -(wt * p.gather(1, idx[:, None]).squeeze(1)).mean() + (W**2).sum() / (2.0 * C * X.shape[0])
        loss.backward()
        opt.step()
    return W.detach().numpy(), b.detach().numpy()


@pytest.mark.parametrize("n_classes", [2, 3])
def test_soft_share_ascent_matches_torch_adam(n_classes: int) -> None:
    """The closed-form gradient and numpy Adam give torch autograd + torch.optim.Adam's iterates."""
    rng = np.random.default_rng(n_classes)
    X = rng.normal(size=(120, 3))
    y = rng.integers(0, n_classes, size=120)
    co = rng.random((120, 2)) < 0.5
    model = MarketAwareClassifier(
        LogisticRegression(C=0.7, max_iter=2000), proxy="soft_share", temperature=0.5, steps=60, lr=0.05
    ).fit(X, y, co)
    est = model.estimator_
    coef, icpt = np.asarray(est.coef_), np.asarray(est.intercept_)
    if coef.shape[0] == 1:
        coef, icpt = np.vstack([np.zeros_like(coef), coef]), np.concatenate([[0.0], icpt])
    W, b = _torch_soft_share(X, y, model.weights_, coef, icpt, model.classes_, 0.7, 0.5, 0.05, 60)
    assert np.abs(W - coef).max() > 1e-3  # the ascent moved
    np.testing.assert_allclose(model.coef_, W, atol=1e-10, rtol=0)
    np.testing.assert_allclose(model.intercept_, b, atol=1e-10, rtol=0)


@pytest.mark.parametrize("proxy", ["soft_share", "soft_all"])
def test_soft_proxies_raise_the_smooth_share(proxy: str) -> None:
    data = market_data("wine", 3, seed=0)
    X, y = data.pools[0]
    comp = [LogisticRegression(solver="newton-cholesky").fit(*data.pools[k]) for k in (1, 2)]
    correct = np.stack([m.predict(X) == y for m in comp], axis=1)
    proba = np.stack([m.predict_proba(X)[np.arange(len(y)), y] for m in comp], axis=1)
    clf = MarketAwareClassifier(proxy=proxy, steps=60).fit(X, y, correct, competitors_proba=proba)
    p = clf.predict_proba(X)
    assert p.shape == (len(y), 3) and np.allclose(p.sum(axis=1), 1.0)
    assert set(np.unique(clf.predict(X))) <= set(clf.classes_)
    w = clf.weights_
    start = (w * clf.estimator_.predict_proba(X)[np.arange(len(y)), y]).mean()
    assert (w * p[np.arange(len(y)), y]).mean() >= start - 1e-9  # the proxy objective went up (T = 1)


# -- dynamics ---------------------------------------------------------------------------------------


def _market(rule: str = "uniform", K: int = 3, **kw) -> tuple[AccuracyMarket, list[Provider]]:
    data = market_data("rings", K, seed=0, pool_size=200, eval_size=1000, query_size=80)
    market = AccuracyMarket(rule, data.X_eval, data.y_eval, X_query=data.X_query)
    provs = [Provider(f"p{j}", *data.pools[j], seed=j, **kw) for j in range(K)]
    return market, provs


def test_entry_and_dynamics_bookkeeping() -> None:
    market, provs = _market(estimators=default_estimators((0.1, 1.0)))
    state = market.enter(provs[0])
    assert state.shares == pytest.approx([1.0]) and state.names == ("p0",)
    for p in provs[1:]:
        market.enter(p)
    hist = market.run(max_rounds=6, tol=5e-3)
    traj = hist.share_trajectory()
    assert traj.shape == (hist.rounds + 1, 3) and np.allclose(traj.sum(axis=1), 1.0)
    assert hist.converged != hist.cycled or not hist.converged
    assert 0.0 <= hist.final.welfare <= 1.0 and hist.final.welfare == pytest.approx(hist.final.served)
    assert all(p.choice_ in ("C=0.1", "C=1") for p in provs)
    with pytest.raises(ValueError, match="already"):
        market.enter(provs[0])


def test_frozen_provider_never_changes_and_all_frozen_converges_at_once() -> None:
    market, provs = _market(update_every=0)
    for p in provs:
        market.enter(p)
    before = market.predictions().copy()
    models = [p.model_ for p in provs]
    hist = market.run(max_rounds=5)
    assert hist.converged and hist.rounds == 1
    assert all(p.model_ is m for p, m in zip(provs, models, strict=True))
    np.testing.assert_array_equal(market.predictions(), before)


def test_erm_market_is_a_fixed_point_and_simultaneous_order_runs() -> None:
    market, provs = _market(strategy="erm")
    for p in provs:
        market.enter(p)
    assert market.run(max_rounds=3).rounds == 1
    market, provs = _market(rule="abstain")
    for p in provs:
        market.enter(p)
    hist = market.run(max_rounds=3, order="simultaneous")
    assert hist.final.shares.sum() <= 1.0 + 1e-12


def _choices_by_round(retune: bool | None) -> tuple[list[str], list[list[str]]]:
    kw = {} if retune is None else {"retune": retune}
    market, provs = _market(rule="abstain", estimators=default_estimators((0.1, 1.0, 10.0)), **kw)
    for p in provs:
        market.enter(p)
    entry = [p.choice_ for p in provs]
    rounds = []
    for r in range(1, 5):
        market.round(r)
        rounds.append([p.choice_ for p in provs])
    return entry, rounds


def test_best_response_rounds_keep_the_model_class_chosen_at_entry() -> None:
    # round-6 defect: every refit re-chose C on the 25 % validation split, and near-ties flipped the
    # choice from round to round (here p1 jumps to C=10 in round 2 and back), so the best-response map
    # jumped and the dynamics converged slowly. By default a provider now keeps its entry choice.
    entry, rounds = _choices_by_round(None)
    assert all(r == entry for r in rounds)
    entry, rounds = _choices_by_round(True)  # the old behaviour stays available behind retune=True
    assert any(r != entry for r in rounds)
    with pytest.raises(TypeError, match="retune"):
        Provider("p", np.zeros((4, 2)), np.array([0, 1, 0, 1]), retune=1)  # type: ignore[arg-type]


def test_equilibrium_round_does_not_count_the_confirming_round() -> None:
    # a market that starts at an equilibrium needs 0 update rounds to reach it; round 1 only confirms it
    market, provs = _market(update_every=0)
    for p in provs:
        market.enter(p)
    hist = market.run(max_rounds=5)
    assert (hist.rounds, hist.equilibrium_round) == (1, 0)
    market, provs = _market(estimators=default_estimators((0.1, 1.0)))
    for p in provs:
        market.enter(p)
    hist = market.run(max_rounds=1, tol=1e-12)
    assert hist.converged or hist.equilibrium_round is None


def test_check_config_passes_retune_to_the_providers() -> None:
    from icml25.theory.competitive_classification.check import _data, _provider

    config = CHECK.presets["tiny"]
    data = _data(config, "rings", 3, 0)
    assert _provider(config, data, 0, 0, arm="br").retune is False
    retuned = dataclasses.replace(config, retune=True)
    assert _provider(retuned, data, 0, 0, arm="br").retune is True


def test_exact_linear_response_is_the_oracle_search_as_a_classifier() -> None:
    data = market_data("rings", 3, seed=1, pool_size=300, eval_size=500)
    X, y = data.pools[2]
    others = np.stack([LogisticRegression().fit(*data.pools[j]).predict(X) == y for j in range(2)], axis=1)
    for rule in ("uniform", "abstain"):
        plane = exact_linear_response(X, y, others, rule, n_angles=90)
        pred, share = best_linear_response(X, y, others, rule, n_angles=90)
        np.testing.assert_array_equal(plane.predict(X), pred)
        own = plane.predict(X) == y
        assert market_shares(np.column_stack([own, others]), rule)[0] == pytest.approx(share)
        # it maximises the empirical share, so the weighted-CE proxy cannot beat it on these users
        br = MarketAwareClassifier(rule=rule).fit(X, y, others)
        br_share = market_shares(np.column_stack([br.predict(X) == y, others]), rule)[0]
        assert share >= br_share - 1e-12
    with pytest.raises(ValueError, match="2-D"):
        Provider("p", np.zeros((4, 3)), np.array([0, 1, 0, 1]), strategy="exact")


def test_exact_best_response_dynamics_reach_an_equilibrium() -> None:
    market, provs = _market(strategy="exact")
    for p in provs:
        market.enter(p)
    assert [p.choice_ for p in provs][1:] == ["exact", "exact"]
    hist = market.run(max_rounds=10)
    assert hist.converged and hist.equilibrium_round is not None and hist.equilibrium_round <= 5


def test_surrogate_information_needs_query_users() -> None:
    data = market_data("rings", 2, seed=0, pool_size=150, eval_size=300)
    market = AccuracyMarket("uniform", data.X_eval, data.y_eval)
    market.enter(Provider("a", *data.pools[0]))
    with pytest.raises(ValueError, match="X_query"):
        market.enter(Provider("b", *data.pools[1], information="surrogate"))


# -- data -----------------------------------------------------------------------------------------------


def test_rings_and_market_data() -> None:
    X, y = make_rings(4000, noise=0.0, seed=0)
    assert X.shape == (4000, 2) and y.dtype == np.int64 and set(np.unique(y)) == {0, 1}
    angle = np.round(np.arctan2(X[:, 1], X[:, 0]) / (np.pi / 4)) % 8
    assert np.mean((angle % 2) == y) > 0.99  # alternating labels around the circle
    yn = flip_labels(y, 0.1, seed=1)
    assert 0.08 < np.mean(yn != y) < 0.12
    d = market_data("digits_parity", 4, seed=0)
    assert len(d.pools) == 4 and d.X_eval.shape[1] == 64 and d.X_query.shape[0] > 0
    clean = market_data("wine", 3, seed=0, eval_noise=False)
    noisy = market_data("wine", 3, seed=0)
    assert np.mean(clean.y_eval != noisy.y_eval) > 0.05


@pytest.mark.parametrize("name", SYNTHETIC)
def test_synthetic_populations(name: str) -> None:
    X, y = make_synthetic(name, 3000, noise=0.0, seed=1)
    assert X.shape == (3000, 2) and y.dtype == np.int64 and set(np.unique(y)) == {0, 1}
    assert 0.4 < y.mean() < 0.6
    _, y_noisy = make_synthetic(name, 3000, noise=0.2, seed=1)
    assert 0.15 < np.mean(y_noisy != y) < 0.25  # the same users, a fifth of the labels flipped
    if name == "xor":
        assert np.mean(y == (np.sign(X[:, 0]) != np.sign(X[:, 1]))) > 0.95
    if name == "circles":
        assert np.mean(y == (np.hypot(X[:, 0], X[:, 1]) < 0.75)) > 0.95
    d = market_data(name, 3, seed=0, pool_size=50, eval_size=80, query_size=10)
    assert [p[0].shape for p in d.pools] == [(50, 2)] * 3 and d.X_eval.shape == (80, 2)


# -- the linear oracle (the check's positive control) ---------------------------------------------------


def _all_half_planes_share(X: np.ndarray, y: np.ndarray, others: np.ndarray, rule: str) -> float:
    """Max share over every half-plane classifier, by brute force over the arrangement's cells.

    Two users swap order along a direction only where it is perpendicular to their difference; one
    direction strictly between each pair of consecutive critical angles, every threshold between
    consecutive projections and both labellings (plus the constants) cover every linear dichotomy.
    """
    n = X.shape[0]
    crit = []
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = X[j] - X[i]
            crit.append((np.arctan2(dy, dx) + np.pi / 2) % np.pi)
    crit = np.sort(np.array(crit))
    mids = (crit + np.roll(crit, -1) + np.where(np.arange(crit.size) == crit.size - 1, np.pi, 0.0)) / 2
    best = max(market_shares(np.column_stack([y == c, others]), rule)[0] for c in (0, 1))
    for t in mids:
        proj = X @ np.array([np.cos(t), np.sin(t)])
        ps = np.sort(proj)
        for cut in (ps[:-1] + ps[1:]) / 2:
            for hi in (0, 1):
                pred = np.where(proj > cut, hi, 1 - hi)
                best = max(best, market_shares(np.column_stack([pred == y, others]), rule)[0])
    return float(best)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("rule", ["uniform", "abstain"])
def test_best_linear_response_is_the_best_half_plane(seed: int, rule: str) -> None:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(9, 2))
    y = rng.integers(0, 2, size=9)
    others = rng.random((9, 2)) < 0.5
    exact = _all_half_planes_share(X, y, others, rule)
    pred, share = best_linear_response(X, y, others, rule, n_angles=20_000)
    assert share == pytest.approx(exact, abs=1e-12)
    # the reported share is the market share of the returned predictions
    assert share == pytest.approx(market_shares(np.column_stack([pred == y, others]), rule)[0], abs=1e-12)
    # a coarse grid never claims more than the exact optimum
    assert best_linear_response(X, y, others, rule, n_angles=4)[1] <= exact + 1e-12


def test_best_linear_response_beats_every_fitted_linear_entrant() -> None:
    data = market_data("xor", 3, seed=0, pool_size=300, eval_size=1500)
    market = AccuracyMarket("abstain", data.X_eval, data.y_eval)
    for j in range(2):
        market.enter(Provider(f"p{j}", *data.pools[j], strategy="erm"))
    others = market.predictions() == data.y_eval[:, None]
    _, oracle = best_linear_response(data.X_eval, data.y_eval, others, "abstain", n_angles=90)
    for strategy in ("erm", "br"):
        m = AccuracyMarket("abstain", data.X_eval, data.y_eval)
        m.providers = list(market.providers)
        assert m.enter(Provider("e", *data.pools[2], strategy=strategy)).shares[-1] <= oracle + 1e-12
    with pytest.raises(ValueError, match="binary"):
        best_linear_response(data.X_eval, np.arange(1500) % 3, others)
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        best_linear_response(np.ones((4, 3)), [0, 1, 0, 1], np.ones((4, 1), dtype=bool))


def test_the_claim_is_judged_where_a_best_response_has_room() -> None:
    """Finding: most headline cells were noisy real datasets where only injected label flips are left
    unserved, and no gate said so. The headline is now on 2-D populations with room, gated by the
    best-linear control, paired, and E3 (whose direction the paper does not state) is not judged."""
    config = CHECK.config("small")
    claim = CHECK.claim_for(config)
    assert set(config.datasets) <= set(SYNTHETIC) and set(config.robust_datasets).isdisjoint(SYNTHETIC)
    assert set(claim.references) == {"constant", "best_linear"} and claim.controls == ("best_linear",)
    assert {g.name for g in claim.gates_at("small")} == {"room", "erm_learns"}
    head = claim.headline_criterion()
    assert head.name == "e1/share_gain" and head.other_arm == "erm" and head.smallest_effect == 0.03
    assert not any(c.metric.startswith("e3/") for c in claim.criteria)
    for c in claim.criteria_at("small"):
        assert c.other_arm is None or c.smallest_effect is not None
    with pytest.raises(ValueError, match="datasets"):
        MarketConfig(datasets=("wine",))


# -- bad input and the check ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: market_shares(np.ones(3, dtype=bool)), "correct"),
        (lambda: market_shares(np.array([[0.5, 1.0]])), "correct"),
        (lambda: market_shares(np.zeros((0, 2), dtype=bool)), "correct"),
        (lambda: market_shares(np.array([["a", "b"]])), "correct"),
        (lambda: ChoiceRule("random"), "kind"),
        (lambda: ChoiceRule("softmax", tau=0.0), "tau"),
        (lambda: best_response_weights(np.ones((3, 2)), 2), "n_providers"),
        (lambda: best_response_weights(np.ones((3, 1)), 1), "n_providers"),
        (lambda: best_response_weights(np.ones((3, 1)), 2, "softmax"), "rule"),
        (
            lambda: MarketAwareClassifier(proxy="hinge").fit(np.ones((4, 2)), [0, 1, 0, 1], np.ones((4, 1))),
            "proxy",
        ),
        (lambda: MarketAwareClassifier().fit(np.full((4, 2), np.nan), [0, 1, 0, 1], np.ones((4, 1))), "X"),
        (lambda: MarketAwareClassifier().fit(np.ones((4, 2)), [0, 1, 0], np.ones((4, 1))), "y"),
        (
            lambda: MarketAwareClassifier().fit(np.ones((4, 2)), [0, 1, 0, 1], np.ones((3, 1))),
            "competitors_correct",
        ),
        (lambda: MarketAwareClassifier().predict(np.ones((2, 2))), "not fitted"),
        (lambda: Provider("a", np.ones((5, 2)), [0, 1, 0, 1, 0], update_every=-1), "update_every"),
        (lambda: AccuracyMarket("softmax", np.ones((3, 2)), [0, 1, 0]), "rule"),
        (lambda: make_rings(0), "n"),
        (lambda: market_data("mnist", 3), "name"),
        (lambda: MarketConfig(ks=(2,)), "ks"),
        (lambda: MarketConfig(Cs=()), "Cs"),
    ],
)
def test_bad_input_is_refused(call, match) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_presets_and_tiny_check() -> None:
    full = CHECK.config("full")
    assert full.pool_size == 1000 and 8 in full.ks and CHECK.default_seeds["small"] >= 3
    small_claim = CHECK.claim_for(CHECK.config("small"))
    assert {c.name for c in small_claim.criteria_at("small")} >= {"e1/share_gain", "e2/welfare", "e2/fast"}
    result = CHECK.run("tiny")
    assert str(result.verdict) == "inconclusive"
    assert all(c.passed for c in result.criteria), result.criteria
    assert result.figures and result.metrics["br"]["k2/max_abs_gain"].max == 0.0
    m = result.metrics
    # the references are measured beside the arms: the oracle bounds every linear entrant
    for arm in ("br", "erm", "constant"):
        assert m[arm]["e1/share"].mean <= m["best_linear"]["e1/share"].mean + 1e-12
    assert m["best_linear"]["e1/room"].mean >= 0.0 and "robust/mean_gain" in m["br"]


def test_full_preset_runs_one_step() -> None:
    """The full configuration constructs its markets and one best-response round runs here."""
    cfg = CHECK.config("full")
    data = market_data("rings", max(cfg.ks), seed=0, pool_size=cfg.pool_size, eval_size=cfg.eval_size)
    market = AccuracyMarket("uniform", data.X_eval, data.y_eval)
    for j, pool in enumerate(data.pools):
        market.enter(Provider(f"p{j}", *pool, estimators=default_estimators(cfg.Cs), seed=j))
    state = market.round(1)
    assert state.shares.shape == (max(cfg.ks),) and state.shares.sum() == pytest.approx(1.0)


def test_market_aware_classifier_is_a_scikit_learn_classifier() -> None:
    from sklearn.base import clone, is_classifier

    from icml25.theory.competitive_classification import MarketAwareClassifier

    model = MarketAwareClassifier(proxy="soft_share", temperature=0.5, steps=5)
    copy = clone(model)  # raised TypeError before: no get_params
    assert is_classifier(copy) and copy.get_params()["temperature"] == 0.5 and copy is not model
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] > 0).astype(int)
    fitted = copy.fit(X, y, np.zeros((60, 1), dtype=bool))
    assert 0.0 <= fitted.score(X, y) <= 1.0  # ClassifierMixin: accuracy
    assert not hasattr(clone(fitted), "estimator_")  # a clone carries the settings, not the fit
