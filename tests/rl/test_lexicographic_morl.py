"""Unit tests for icml25.rl.lexicographic_morl (Xue et al., ICML 2025, OpenReview RTHTyTsRT3)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.rl.lexicographic_morl import (
    LLRL,
    LSVIUCB,
    ArmSpec,
    LexGreedyLSVI,
    LinearMOMDP,
    LinearRegressionState,
    UniformAgent,
    confidence_radius,
    evaluate_policy,
    lae_tolerances,
    lexicographic_action_elimination,
    lexicographic_optimal_policy,
    loglog_slope,
    make_lex_tabular_mdp,
    misspecify,
    one_hot_features,
    run_regret_batch,
    run_regret_experiment,
    tradeoff_lambda,
)


def _lex_better(u: np.ndarray, v: np.ndarray, tol: float = 1e-9) -> bool:
    for a, b in zip(u, v, strict=True):
        if a > b + tol:
            return True
        if a < b - tol:
            return False
    return False


@pytest.mark.parametrize(("S", "A", "H", "seed"), [(2, 2, 2, 0), (2, 3, 2, 1), (3, 2, 2, 2), (2, 2, 3, 3)])
def test_lexicographic_dp_matches_brute_force(S: int, A: int, H: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    # coarse rewards and transitions make exact objective-1 ties common
    R = rng.integers(0, 3, size=(2, S, A)) / 2.0
    P = rng.integers(0, 2, size=(S, A, S)).astype(float)
    P[P.sum(2) == 0, 0] = 1.0
    P /= P.sum(2, keepdims=True)
    pi, V, _ = lexicographic_optimal_policy(P, R, H)
    best = None
    for flat in itertools.product(range(A), repeat=H * S):
        v = evaluate_policy(P, R, H, np.array(flat).reshape(H, S))
        for x in range(S):  # the DP policy is lexicographically optimal from every start state
            assert not _lex_better(v[:, x], V[:, 0, x])
        if best is None or _lex_better(v[:, 0], best):
            best = v[:, 0]
    assert best is not None
    np.testing.assert_allclose(best, V[:, 0, 0], atol=1e-9)
    np.testing.assert_allclose(evaluate_policy(P, R, H, pi)[:, 0], V[:, 0, 0], atol=1e-12)


@pytest.mark.parametrize("m", [2, 3])
def test_generator_has_designed_optimum_ties_and_tradeoff(m: int) -> None:
    mdp = make_lex_tabular_mdp(S=6, H=5, m=m, seed=4)
    pi, V, Q = lexicographic_optimal_policy(mdp.P, mdp.R, mdp.H)
    assert np.all(pi == (1 if m == 2 else 4))
    assert np.array_equal(Q[0][..., 0], Q[0][..., 1])  # exact objective-1 ties
    np.testing.assert_allclose(Q[0][..., 1] - Q[0][..., 2], 0.2, atol=1e-12)  # the gap
    assert np.all(Q[0][..., 1] - Q[0][..., 3] >= 0.05)  # action 3 dominated
    assert tradeoff_lambda(Q, pi) == pytest.approx(2.0)
    assert mdp.dim == 6 * mdp.n_actions and mdp.misspecification == 0.0


def test_tradeoff_lambda_infinite_when_gain_comes_for_free() -> None:
    Q = np.zeros((2, 1, 1, 2))
    Q[1, 0, 0, 1] = 0.5  # action 1 better on objective 2 with no loss on objective 1, but pi* = 0
    assert tradeoff_lambda(Q, np.zeros((1, 1), dtype=int)) == float("inf")


def test_evaluate_policy_matches_monte_carlo_for_a_stochastic_policy() -> None:
    mdp = make_lex_tabular_mdp(S=3, H=3, seed=0)
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(mdp.n_actions), size=(3, 3))
    V = evaluate_policy(mdp.P, mdp.R, mdp.H, probs)[:, 0]
    n = 6000
    total = np.zeros(2)
    for _ in range(n):
        x = 0
        for h in range(3):
            a = rng.choice(mdp.n_actions, p=probs[h, x])
            r, x = mdp.step(h, x, a, rng)
            total += r
    se = np.sqrt(3 * 0.25 * 3 / n)
    assert np.all(np.abs(total / n - V) < 4 * se)


# ---------------------------------------------------------------- LAE


def test_lae_tolerances_are_two_plus_four_lambda_powers() -> None:
    np.testing.assert_allclose(lae_tolerances(3, 2.0), [2.0, 10.0, 26.0])
    np.testing.assert_allclose(lae_tolerances(2, 0.5), [2.0, 4.0])
    beta, C = 1.5, 0.1
    q = np.array([[1.0, 0.0], [1.0 - 2 * beta * C + 1e-9, 5.0], [1.0 - 2 * beta * C - 1e-9, 9.0]])
    keep = lexicographic_action_elimination(q, np.ones(3, dtype=bool), 2.0, beta, C)
    # objective 1 keeps actions 0 and 1 (gap just inside 2 beta C); objective 2 then compares 0 and 1:
    # 5 - 0 = 5 > 10 beta C = 1.5, so only action 1 survives
    assert keep.tolist() == [False, True, False]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 6),
    st.floats(0.0, 5.0),
    st.floats(0.1, 3.0),
    st.floats(0.01, 1.0),
    st.integers(0, 100_000),
)
def test_lae_keeps_the_lexicographic_optimum_under_assumption_1(
    A: int, lam: float, beta: float, C: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    star = int(rng.integers(A))
    q1 = rng.random(A)
    q1[rng.random(A) < 0.3] = 1.0  # exact ties with the optimum
    q1[star] = 1.0
    loss = q1[star] - q1
    q2 = np.where(loss > 0, 0.5 + lam * loss * rng.random(A), 0.5 - rng.random(A))  # Assumption 1
    q2[star] = 0.5
    q = np.stack([q1, q2], axis=1)
    noisy = q + rng.uniform(-beta * C, beta * C, size=q.shape)  # |Q_hat - Q| <= beta C
    keep = lexicographic_action_elimination(noisy, np.ones(A, dtype=bool), lam, beta, C)
    assert keep[star]


def test_lae_rejects_mismatched_shapes() -> None:
    with pytest.raises(ValueError, match="q_hat"):
        lexicographic_action_elimination(np.zeros((3, 2)), np.ones(4, dtype=bool), 1.0, 1.0, 0.1)


# ---------------------------------------------------------------- regression and agents


def test_sherman_morrison_matches_inverse_and_batch_matches_sequential() -> None:
    rng = np.random.default_rng(0)
    H, d, m, S = 3, 5, 2, 4
    seq, bat = LinearRegressionState(H, d, m, S), LinearRegressionState(H, d, m, S)
    grams = np.repeat(np.eye(d)[None], H, axis=0)
    for _ in range(20):
        phis = rng.normal(size=(H, d)) / 3
        rs = rng.random((H, m))
        nxt = rng.integers(S, size=H)
        for h in range(H):
            seq.add(h, phis[h], rs[h], int(nxt[h]))
            grams[h] += np.outer(phis[h], phis[h])
        bat.add_batch(np.arange(H), phis, rs, nxt)
    for h in range(H):
        np.testing.assert_allclose(seq.U_inv[h], np.linalg.inv(grams[h]), atol=1e-10)
        np.testing.assert_allclose(seq.logdet[h], np.linalg.slogdet(grams[h])[1], atol=1e-10)
    for a, b in ((seq.U_inv, bat.U_inv), (seq.b, bat.b), (seq.M, bat.M)):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_llrl_last_step_weights_are_ridge_regression() -> None:
    mdp = make_lex_tabular_mdp(S=3, H=2, seed=1)
    agent = LLRL(mdp.phi, H=2, m=2, K=50, lam=2.0, rng=np.random.default_rng(0))
    run_regret_experiment(mdp, agent, K=30, rng=np.random.default_rng(0))
    # rebuild the step-2 regression from scratch: w = (I + Phi^T Phi)^-1 Phi^T r
    Phi, Rw = [], []
    agent2 = LLRL(mdp.phi, H=2, m=2, K=50, lam=2.0, rng=np.random.default_rng(0))
    orig = agent2.observe

    def spy(h: int, x: int, a: int, r: np.ndarray, x_next: int) -> None:
        if h == 1:
            Phi.append(mdp.phi[x, a])
            Rw.append(r)
        orig(h, x, a, r, x_next)

    agent2.observe = spy  # type: ignore[method-assign]
    run_regret_experiment(mdp, agent2, K=30, rng=np.random.default_rng(0))
    F, Y = np.array(Phi), np.array(Rw)
    w = np.linalg.solve(np.eye(mdp.dim) + F.T @ F, F.T @ Y)
    np.testing.assert_allclose(agent2.W[1], w, atol=1e-10)
    np.testing.assert_allclose(agent.W, agent2.W, atol=1e-12)


@pytest.mark.parametrize("kind", ["llrl", "llrl_doubling", "obj1", "scalarised", "lex_greedy", "uniform"])
def test_agents_run_and_are_reproducible(kind: str) -> None:
    mdp = make_lex_tabular_mdp(S=3, H=3, seed=2)
    beta = confidence_radius(mdp.dim, 3, 100, 0.05, 0.003)

    def build(seed: int):  # noqa: ANN202
        rng = np.random.default_rng(seed)
        kw = dict(H=3, m=2, K=100)
        if kind.startswith("llrl"):
            return LLRL(mdp.phi, lam=2.0, refit="doubling" if "doubling" in kind else "every", rng=rng, **kw)
        if kind in ("obj1", "scalarised"):
            w = (1.0, 0.0) if kind == "obj1" else (1.0, 1.0)
            return LSVIUCB(mdp.phi, weights=w, beta=beta, rng=rng, **kw)
        if kind == "lex_greedy":
            return LexGreedyLSVI(mdp.phi, beta=beta, rng=rng, **kw)
        return UniformAgent(mdp.phi, 3, 2, 100, rng)

    a = run_regret_experiment(mdp, build(0), K=100, rng=np.random.default_rng(1))
    b = run_regret_experiment(mdp, build(0), K=100, rng=np.random.default_rng(1))
    assert a.regret.shape == (2, 100)
    np.testing.assert_array_equal(a.regret, b.regret)
    assert np.all(np.diff(a.regret[0]) >= -1e-12)  # objective-1 regret never decreases
    pol = build(0).episode_policy()
    np.testing.assert_allclose(pol.sum(2), 1.0)


# ---------------------------------------------------------------- environments and helpers


def test_misspecification_is_zero_at_full_rank_and_positive_at_low_rank() -> None:
    mdp = make_lex_tabular_mdp(S=4, H=3, seed=0)
    full = misspecify(mdp, d=mdp.n_states * mdp.n_actions, seed=0)
    low = misspecify(mdp, d=4, seed=0)
    assert full.misspecification < 1e-8 and low.misspecification > 0.05
    assert np.allclose(np.linalg.norm(low.phi, axis=2), 1.0)


def test_gymnasium_episode_env() -> None:
    env = make_lex_tabular_mdp(S=3, H=3, seed=0).to_env()
    x, info = env.reset(seed=0)
    assert x == 0 and info["h"] == 0
    done = False
    steps = 0
    while not done:
        x, r, done, trunc, info = env.step(1)
        steps += 1
        assert info["rewards"].shape == (2,) and r == info["rewards"][0] and not trunc
    assert steps == 3
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_loglog_slope_of_known_curves() -> None:
    k = np.arange(1, 1001, dtype=float)
    assert loglog_slope(3 * k) == pytest.approx(1.0, abs=1e-6)
    assert loglog_slope(np.sqrt(k)) == pytest.approx(0.5, abs=1e-6)
    assert loglog_slope(-k) == 0.0


def test_bad_inputs_raise_clear_errors() -> None:
    mdp = make_lex_tabular_mdp(S=3, H=2, seed=0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        LinearMOMDP(P=mdp.P, R=mdp.R * 2, phi=mdp.phi, H=2)
    with pytest.raises(ValueError, match="sum to one"):
        LinearMOMDP(P=mdp.P * 0.5, R=mdp.R, phi=mdp.phi, H=2)
    with pytest.raises(ValueError, match="phi"):
        LinearMOMDP(P=mdp.P, R=mdp.R, phi=mdp.phi[:, :2], H=2)
    with pytest.raises(ValueError, match=r"\|\|phi"):
        LinearMOMDP(P=mdp.P, R=mdp.R, phi=2 * one_hot_features(3, 4), H=2)
    agent = LLRL(mdp.phi, H=2, m=2, K=10, lam=1.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="reward vector"):
        agent.observe(0, 0, 0, np.zeros(3), 0)
    with pytest.raises(ValueError, match="phi"):
        LLRL(np.zeros((3, 4)), H=2, m=2, K=10, lam=1.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="lam"):
        LLRL(mdp.phi, H=2, m=2, K=10, lam=-1.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="lam0"):
        make_lex_tabular_mdp(lam0=5.0)
    with pytest.raises(ValueError, match="d must"):
        misspecify(mdp, d=100)
    with pytest.raises(ValueError, match="R must"):
        lexicographic_optimal_policy(mdp.P, mdp.R[:, :2], 2)
    with pytest.raises(ValueError, match="pi_probs"):
        evaluate_policy(mdp.P, mdp.R, 2, np.zeros((2, 3, 5)))
    with pytest.raises(ValueError, match="disagree"):
        run_regret_experiment(
            mdp, UniformAgent(mdp.phi, 3, 2, 10, np.random.default_rng(0)), K=5, rng=np.random.default_rng(0)
        )


def test_full_preset_constructs_and_runs_one_short_step(tmp_path) -> None:  # noqa: ANN001
    from icml25.core.check import RunContext
    from icml25.core.progress import NullReporter
    from icml25.rl.lexicographic_morl.check import CHECK

    assert CHECK.config("full").K == 200_000
    assert CHECK.config("small").K == 40_000  # issue 29: ten times the first small run's K
    short = CHECK.config("full", {"K": 12})
    ctx = RunContext(slug=CHECK.slug, scale="full", run_dir=tmp_path, reporter=NullReporter())
    outcome = CHECK.run_seed(short, 0, ctx)
    assert outcome.metrics["llrl"]["lambda_star"] == pytest.approx(2.0)
    assert {"llrl_m3", "llrl_misspec", "lsvi_obj1"} <= set(outcome.metrics)
    # the in-run comparison with the per-agent path: same regret, and a timing
    assert outcome.metrics["llrl"]["naive_vs_batched_max_abs_diff"] <= 1e-9
    assert outcome.metrics["llrl"]["speedup"] > 0


def test_figures_are_drawn_with_every_variant() -> None:
    from icml25.rl.lexicographic_morl.check import CHECK

    result = CHECK.run(
        "tiny",
        seeds=[0, 1],
        overrides={"run_m3": True, "run_misspec": True, "K": 20, "speedup_episodes": 0},
    )
    assert [f.file for f in result.figures] == [
        "regret_curves.png",
        "lambda_and_misspec.png",
        "calibration.png",
        "variants.png",
    ]


def test_config_errors_name_the_field() -> None:
    from icml25.rl.lexicographic_morl.check import LexConfig

    with pytest.raises(ValueError, match=r"LexConfig\.S must lie in \[2, inf\]"):
        LexConfig(S=1)
    with pytest.raises(ValueError, match=r"LexConfig\.K"):
        LexConfig(K=5)
    with pytest.raises(ValueError, match=r"LexConfig\.H must be a positive integer"):
        LexConfig(H=0)
    with pytest.raises(ValueError, match=r"LexConfig\.delta"):
        LexConfig(delta=1.0)
    with pytest.raises(ValueError, match=r"LexConfig\.c_beta_grid\[1\]"):
        LexConfig(c_beta_grid=(0.5, 0.0))
    with pytest.raises(ValueError, match=r"LexConfig\.c_beta must be a finite number > 0"):
        LexConfig(c_beta=0.0)
    with pytest.raises(ValueError, match=r"c_beta_grid must hold"):
        LexConfig(c_beta_grid=())
    with pytest.raises(ValueError, match=r"LinearMOMDP\.x1"):
        mdp = make_lex_tabular_mdp(S=3, H=2, seed=0)
        LinearMOMDP(P=mdp.P, R=mdp.R, phi=mdp.phi, H=2, x1=3)


def test_small_criteria_are_measured_under_size_overrides(tmp_path) -> None:  # noqa: ANN001
    from icml25.core.check import RunContext
    from icml25.core.claims import evaluate_criterion, summarize_metrics
    from icml25.core.progress import NullReporter
    from icml25.rl.lexicographic_morl.check import CHECK

    config = CHECK.config("small", {"S": 3, "H": 3, "K": 12})
    ctx = RunContext(slug=CHECK.slug, scale="small", run_dir=tmp_path, reporter=NullReporter())
    metrics = summarize_metrics([CHECK.run_seed(config, 0, ctx).metrics])
    claim = CHECK.claim_for(config)
    assert claim == CHECK.claim  # no criterion depends on the preset's sizes
    results = [evaluate_criterion(c, metrics) for c in (*claim.criteria, *claim.gates)]
    assert all("not measured" not in r.reason for r in results), [r.reason for r in results]


# ---------------------------------------------------------------- issue 42: c_beta fixed before the run


def test_select_c_beta_takes_the_lowest_validation_slope_then_breaks_ties() -> None:
    from icml25.rl.lexicographic_morl.check import select_c_beta

    grid = (0.001, 0.002, 0.004)
    assert select_c_beta(grid, [0.9, 0.5, 0.7], [1.0, 9.0, 0.0]) == 0.002
    # equal slopes: lower total regret wins, then the smaller c_beta
    assert select_c_beta(grid, [0.5, 0.5, 0.7], [3.0, 2.0, 0.0]) == 0.002
    assert select_c_beta(grid, [0.5, 0.5, 0.5], [2.0, 2.0, 2.0]) == 0.001
    with pytest.raises(ValueError, match="one equal"):
        select_c_beta(grid, [0.5], [1.0])


def _tiny_config(**kw: Any) -> Any:
    from icml25.rl.lexicographic_morl.check import CHECK

    base = {"K": 60, "speedup_episodes": 0, "run_misspec": True}
    return CHECK.config("tiny", {**base, **kw})


def test_judged_arm_uses_the_calibration_instance_value_on_every_seed(tmp_path) -> None:  # noqa: ANN001
    """Before issue 42 the headline took, per judged seed, the c_beta with the best test slope."""
    from icml25.core.check import RunContext
    from icml25.core.progress import NullReporter
    from icml25.rl.lexicographic_morl.check import (
        CHECK,
        TUNED,
        LexicographicMORLCheck,
        calibrate,
        select_c_beta,
    )

    config = _tiny_config()
    cal = calibrate(config)
    assert cal.seed == config.calibration_seed and set(cal.chosen) == set(TUNED)
    for kind in TUNED:  # each learner's value is the rule's choice on its own validation row
        row = cal.table[kind]
        assert cal.chosen[kind] == select_c_beta(row["c_beta"], row["max_slope"], row["total_regret"])
        assert cal.chosen[kind] in config.c_beta_grid
    check = LexicographicMORLCheck()
    ctx = RunContext(slug=CHECK.slug, scale="tiny", run_dir=tmp_path, reporter=NullReporter())
    for seed in (0, 1):
        m = check.run_seed(config, seed, ctx).metrics
        assert "best_sweep_max_slope" not in m["llrl"]
        assert not {"llrl_beta_half", "llrl_beta_double"} & set(m)  # no per-seed sweep arms
        for arm in ("llrl", "llrl_4lam", "llrl_misspec"):
            assert m[arm]["c_beta"] == cal.chosen["llrl"]
        for kind in ("lsvi_obj1", "lsvi_scalarised", "lex_greedy"):
            assert m[kind]["c_beta"] == cal.chosen[kind]
        assert m["llrl"]["max_slope"] == max(m["llrl"]["slope1"], m["llrl"]["slope2"])
        assert m["uniform"]["min_slope"] == min(m["uniform"]["slope1"], m["uniform"]["slope2"])
    # a fixed c_beta skips the calibration and is given to every learner
    fixed = _tiny_config(c_beta=0.002)
    assert calibrate(fixed).chosen == dict.fromkeys(TUNED, 0.002) and calibrate(fixed).table == {}
    m = check.run_seed(fixed, 0, ctx).metrics
    assert {m[a]["c_beta"] for a in ("llrl", "lsvi_obj1", "lsvi_scalarised", "lex_greedy")} == {0.002}


def test_run_seed_refuses_the_calibration_seed(tmp_path) -> None:  # noqa: ANN001
    from icml25.core.check import RunContext
    from icml25.core.progress import NullReporter
    from icml25.rl.lexicographic_morl.check import CHECK

    config = _tiny_config(calibration_seed=3)
    ctx = RunContext(slug=CHECK.slug, scale="tiny", run_dir=tmp_path, reporter=NullReporter())
    with pytest.raises(ValueError, match="calibration seed"):
        CHECK.run_seed(config, 3, ctx)


def test_claim_judges_one_arm_with_references_gates_and_paired_intervals() -> None:
    from icml25.rl.lexicographic_morl.check import CHECK

    claim = CHECK.claim_for(CHECK.config("small"))
    assert claim.references == ("uniform",)
    assert {g.name for g in claim.gates_at("small")} == {"floor_is_linear", "ties_matter"}
    head = claim.headline_criterion()
    assert head.arm == "llrl" and head.metric == "max_slope" and head.paired
    for c in claim.criteria_at("small"):
        assert c.other_arm is None or (c.smallest_effect is not None and c.effect_source)
        assert "best_sweep" not in c.metric
    assert any(c.arm == "llrl_misspec" for c in claim.criteria_at("small"))
    assert not {"llrl_m3", "lsvi_obj1_m3"} & set(claim.arms)  # not run at small, so not declared
    assert {"llrl_m3", "lsvi_obj1_m3"} <= set(CHECK.claim_for(CHECK.config("full")).arms)
    assert CHECK.config("small").c_beta is None  # calibrated, never the judged seeds' best
    assert CHECK.config("small").calibration_seed not in range(CHECK.default_seeds["small"])


# ---------------------------------------------------------------- the vectorised runner


def _batch_arms(S: int = 3, H: int = 3, K: int = 80) -> tuple[list[tuple[Any, LinearMOMDP]], list[ArmSpec]]:
    """Every kind of agent, with m = 2 and m = 3 and misspecified (d = 4) features, naive and batched."""
    mdp = make_lex_tabular_mdp(S, H, 2, seed=1)
    mdp3 = make_lex_tabular_mdp(S, H, 3, seed=1)
    mis = misspecify(mdp, 4, seed=1)
    beta = 0.3
    rng = np.random.default_rng(0)
    naive: list[tuple[Any, LinearMOMDP]] = [
        (LLRL(mdp.phi, H=H, m=2, K=K, lam=2.0, beta=beta, rng=rng), mdp),
        (LLRL(mdp.phi, H=H, m=2, K=K, lam=8.0, beta=2 * beta, rng=rng), mdp),
        (LSVIUCB(mdp.phi, H=H, m=2, K=K, weights=[1.0, 0.0], beta=beta, rng=rng), mdp),
        (LSVIUCB(mdp.phi, H=H, m=2, K=K, weights=[1.0, 1.0], beta=beta, rng=rng), mdp),
        (LexGreedyLSVI(mdp.phi, H=H, m=2, K=K, beta=beta, rng=rng), mdp),
        (UniformAgent(mdp.phi, H, 2, K, rng), mdp),
        (LLRL(mdp3.phi, H=H, m=3, K=K, lam=2.0, beta=beta, rng=rng), mdp3),
        (LexGreedyLSVI(mdp3.phi, H=H, m=3, K=K, beta=beta, rng=rng), mdp3),
        (LSVIUCB(mdp3.phi, H=H, m=3, K=K, weights=[1.0, 0.5, 0.0], beta=beta, rng=rng), mdp3),
        (LLRL(mis.phi, H=H, m=2, K=K, lam=2.0, beta=beta, rng=rng), mis),
    ]
    specs = [
        ArmSpec("llrl", mdp, beta=beta, lam=2.0),
        ArmSpec("llrl", mdp, beta=2 * beta, lam=8.0),
        ArmSpec("lsvi", mdp, beta=beta, weights=(1.0, 0.0)),
        ArmSpec("lsvi", mdp, beta=beta, weights=(1.0, 1.0)),
        ArmSpec("lex_greedy", mdp, beta=beta),
        ArmSpec("uniform", mdp),
        ArmSpec("llrl", mdp3, beta=beta, lam=2.0),
        ArmSpec("lex_greedy", mdp3, beta=beta),
        ArmSpec("lsvi", mdp3, beta=beta, weights=(1.0, 0.5, 0.0)),
        ArmSpec("llrl", mis, beta=beta, lam=2.0),
    ]
    return naive, specs


def test_batched_runner_equals_the_per_agent_path() -> None:
    K = 80
    naive, specs = _batch_arms(K=K)
    # shuffled order: the runner groups kinds internally but must answer in the caller's order
    perm = [3, 0, 9, 5, 1, 7, 2, 8, 4, 6]
    batch = run_regret_batch([specs[i] for i in perm], K=K, env_seed=[7, 999])
    for j, i in enumerate(perm):
        agent, env = naive[i]
        ref = run_regret_experiment(env, agent, K=K, rng=np.random.default_rng([7, 999]))
        assert batch[j].regret.shape == ref.regret.shape == (env.n_objectives, K)
        np.testing.assert_allclose(batch[j].regret, ref.regret, rtol=0, atol=1e-9)
        np.testing.assert_allclose(batch[j].v_star, ref.v_star, atol=1e-12)


def test_batched_prefix_is_the_start_of_the_full_run() -> None:
    _, specs = _batch_arms(K=50)
    full = run_regret_batch(specs, K=50, env_seed=3)
    part = run_regret_batch(specs, K=50, env_seed=3, episodes=20)
    for f, p in zip(full, part, strict=True):
        assert p.regret.shape[1] == 20
        np.testing.assert_array_equal(p.regret, f.regret[:, :20])


def test_batched_sherman_morrison_widths_match_a_direct_inverse() -> None:
    # after K episodes an agent's widths equal ||phi||_{U^-1} with U = I + sum phi phi^T built directly
    mdp = misspecify(make_lex_tabular_mdp(3, 2, 2, seed=4), 4, seed=4)
    agent = LLRL(mdp.phi, H=2, m=2, K=30, lam=2.0, beta=0.3, rng=np.random.default_rng(0))
    run_regret_experiment(mdp, agent, K=30, rng=np.random.default_rng(5))
    for h in range(2):
        U = np.linalg.inv(agent.stats.U_inv[h])
        F = mdp.phi.reshape(-1, mdp.dim)
        direct = np.sqrt(np.einsum("nd,de,ne->n", F, np.linalg.inv(U), F)).reshape(3, 4)
        np.testing.assert_allclose(agent.widths()[h], direct, atol=1e-10)


def test_batched_runner_rejects_bad_input() -> None:
    mdp = make_lex_tabular_mdp(3, 2, 2, seed=0)
    other = make_lex_tabular_mdp(4, 2, 2, seed=0)
    ok = ArmSpec("llrl", mdp, beta=0.5, lam=1.0)
    with pytest.raises(ValueError, match="kind"):
        ArmSpec("sarsa", mdp)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="beta"):
        ArmSpec("llrl", mdp, beta=0.0)
    with pytest.raises(ValueError, match="beta"):
        ArmSpec("lsvi", mdp, beta=float("nan"), weights=(1.0, 0.0))
    with pytest.raises(ValueError, match="weights"):
        ArmSpec("lsvi", mdp, beta=0.5, weights=(1.0,))
    with pytest.raises(ValueError, match="weights"):
        ArmSpec("lsvi", mdp, beta=0.5)
    with pytest.raises(ValueError, match="lam"):
        ArmSpec("llrl", mdp, beta=0.5, lam=-1.0)
    with pytest.raises(ValueError, match="arms"):
        run_regret_batch([], K=10, env_seed=0)
    with pytest.raises(TypeError, match=r"arms\[1\]"):
        run_regret_batch([ok, "llrl"], K=10, env_seed=0)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="K must be a positive integer"):
        run_regret_batch([ok], K=0, env_seed=0)
    with pytest.raises(ValueError, match="episodes"):
        run_regret_batch([ok], K=10, env_seed=0, episodes=11)
    with pytest.raises(ValueError, match=r"arms\[1\] has \(S, H\)"):
        run_regret_batch([ok, ArmSpec("uniform", other)], K=10, env_seed=0)
