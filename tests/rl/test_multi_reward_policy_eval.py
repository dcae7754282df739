"""Unit tests for icml25.rl.multi_reward_policy_eval (Russo & Pacchiano, ICML 2025, arXiv 2502.02516)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.rl.mdp import (
    TabularEnv,
    TabularMDP,
    evaluate_policy,
    policy_transition_matrix,
    stationary_allocation,
    value_iteration,
)
from icml25.rl.multi_reward_policy_eval import (
    BoxRewardSet,
    FiniteRewardSet,
    GVFExplorerAgent,
    MRNaSPE,
    NoisyPolicyAgent,
    PolytopeRewardSet,
    bound_constant,
    canonical_rewards,
    characteristic_time_ub,
    double_chain,
    effective_bound,
    empirical_transitions,
    forked_riverswim,
    make_env,
    make_problem,
    max_estimation_error,
    n_arms,
    navigation_residual,
    riverswim,
    run_pe_experiment,
    solve_allocation,
    stopping_statistic,
    stopping_threshold,
    value_deviation_bound,
)


def _random_mdp(rng: np.random.Generator, S: int, A: int) -> np.ndarray:
    return rng.dirichlet(np.ones(S), size=(S, A))


# ---------------------------------------------------------------- exact evaluation


def test_evaluate_policy_matches_neumann_series_and_monte_carlo() -> None:
    rng = np.random.default_rng(0)
    S, A, gamma = 4, 2, 0.6
    P = _random_mdp(rng, S, A)
    pi = rng.integers(A, size=S)
    r = rng.random(S)
    V = evaluate_policy(P, pi, r, gamma)
    P_pi = policy_transition_matrix(P, pi)
    series = sum(gamma**k * np.linalg.matrix_power(P_pi, k) @ r for k in range(200))
    np.testing.assert_allclose(V, series, atol=1e-10)
    # Monte Carlo from state 0: 4000 trajectories of 40 steps (gamma^40 ~ 1e-9)
    n, T = 4000, 40
    s = np.zeros(n, dtype=int)
    ret = np.zeros(n)
    cum = np.cumsum(P_pi, axis=1)
    for t in range(T):
        ret += gamma**t * r[s]
        s = np.minimum((rng.random(n)[:, None] > cum[s]).sum(axis=1), S - 1)
    se = ret.std() / math.sqrt(n)
    assert abs(ret.mean() - V[0]) < 5 * se


def test_value_iteration_policy_is_greedy_and_evaluates_to_optimum() -> None:
    rng = np.random.default_rng(1)
    P = _random_mdp(rng, 5, 3)
    R = rng.random((5, 3))
    V, pi = value_iteration(P, R, 0.8)
    V_pi = evaluate_policy(P, pi, R[np.arange(5), pi], 0.8)
    np.testing.assert_allclose(V, V_pi, atol=1e-8)
    for pi_other in itertools.product(range(3), repeat=5):  # brute force over all 243 policies
        p = np.array(pi_other)
        assert np.all(evaluate_policy(P, p, R[np.arange(5), p], 0.8) <= V + 1e-8)


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 6), st.integers(1, 3), st.integers(0, 10_000))
def test_stationary_allocation_satisfies_navigation_constraints(S: int, A: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    P = _random_mdp(rng, S, A)
    beh = rng.dirichlet(np.ones(A), size=S)
    omega = stationary_allocation(P, beh)
    assert navigation_residual(P, omega) < 1e-10
    np.testing.assert_allclose(omega / omega.sum(1, keepdims=True), beh, atol=1e-10)


# ---------------------------------------------------------------- environments


@pytest.mark.parametrize(
    ("mdp", "S", "A"),
    [(riverswim(10), 10, 2), (forked_riverswim(5), 9, 3), (double_chain(4), 9, 2), (n_arms(6), 7, 6)],
)
def test_environments_are_valid_and_communicating(mdp: TabularMDP, S: int, A: int) -> None:
    assert mdp.P.shape == (S, A, S)
    np.testing.assert_allclose(mdp.P.sum(2), 1.0)
    # uniform behaviour reaches every state: stationary distribution strictly positive
    omega = mdp.stationary_allocation(np.full((S, A), 1.0 / A))
    assert omega.sum(1).min() > 1e-6


def test_riverswim_transitions_follow_the_repo() -> None:
    P = riverswim(5).P
    assert P[2, 1, 3] == pytest.approx(0.3) and P[2, 1, 2] == pytest.approx(0.6)
    assert P[2, 1, 1] == pytest.approx(0.1) and P[2, 0, 1] == 1.0
    assert P[4, 1, 4] == pytest.approx(0.3) and P[0, 1, 1] == pytest.approx(0.3)


def test_gymnasium_env_api_and_runner() -> None:
    env = riverswim(5).to_env()
    s, info = env.reset(seed=0)
    assert s == 0 and info == {}
    out = env.step(1)
    assert len(out) == 5 and out[2] is False and 0 <= out[0] < 5
    with pytest.raises(ValueError, match="action"):
        env.step(7)
    mdp = riverswim(5)
    prob = make_problem(mdp, "single_rewardfree", rng=np.random.default_rng(0), env_name="riverswim")
    agent = NoisyPolicyAgent(5, 2, prob.policies, prob.reward_sets, rng=np.random.default_rng(0))
    run = run_pe_experiment(env, agent, horizon=300, eval_every=100, rng=np.random.default_rng(0))
    assert run.steps.tolist() == [100, 200, 300] and agent.counts_sa.sum() == 300


# ---------------------------------------------------------------- reward sets and the bound


def test_box_closed_form_matches_two_lps_and_vertex_enumeration() -> None:
    rng = np.random.default_rng(2)
    S = 4
    C = rng.normal(size=(6, S))
    box = BoxRewardSet(S).max_abs(C)
    lp = PolytopeRewardSet(G=np.zeros((1, S)), h=np.array([-1.0])).max_abs(C)  # no extra constraint
    verts = np.array(list(itertools.product([0.0, 1.0], repeat=S)))
    brute = np.abs(C @ verts.T).max(1)
    np.testing.assert_allclose(box, brute, atol=1e-12)
    np.testing.assert_allclose(lp, brute, atol=1e-8)


def test_finite_set_max_abs_and_polytope_constraint_binds() -> None:
    C = np.array([[1.0, -2.0, 0.5]])
    R = FiniteRewardSet(np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]))
    assert R.max_abs(C)[0] == pytest.approx(1.5)
    # r_0 + r_1 + r_2 <= 1 on the box: max |c^T r| = 2 (r = e_1)
    poly = PolytopeRewardSet(G=np.ones((1, 3)), h=np.array([-1.0]))
    assert poly.max_abs(C)[0] == pytest.approx(2.0)


def _naive_A(P: np.ndarray, pi: np.ndarray, rewards: np.ndarray, gamma: float) -> np.ndarray:
    S = P.shape[0]
    G = np.linalg.inv(np.eye(S) - gamma * P[np.arange(S), pi])
    out = np.zeros(S)
    for s in range(S):
        K = np.eye(S) - np.outer(np.ones(S), P[s, pi[s]])  # K_s = I - 1 P(.|s,pi(s))^T
        rho = K @ G @ rewards.T  # value deviations (S, n_rewards)
        out[s] = np.abs(rho).max() ** 2
    return out


def test_value_deviation_bound_matches_naive_definition() -> None:
    rng = np.random.default_rng(3)
    P = _random_mdp(rng, 5, 2)
    pi = rng.integers(2, size=5)
    R = rng.random((3, 5))
    got = value_deviation_bound(P, pi, FiniteRewardSet(R), 0.9)
    np.testing.assert_allclose(got, _naive_A(P, pi, R, 0.9), rtol=1e-10)
    # the box set is the max over its 2^S vertices
    verts = np.array(list(itertools.product([0.0, 1.0], repeat=5)))
    got_box = value_deviation_bound(P, pi, BoxRewardSet(5), 0.9)
    np.testing.assert_allclose(got_box, _naive_A(P, pi, verts, 0.9), rtol=1e-10)


def test_allocation_single_action_mdp_is_the_stationary_distribution() -> None:
    rng = np.random.default_rng(4)
    P = _random_mdp(rng, 4, 1)
    A_eff = np.array([[1.0], [2.0], [0.5], [3.0]])
    alloc = solve_allocation(P, A_eff, 0.9, 0.1)
    mu = stationary_allocation(P, np.ones((4, 1)))
    np.testing.assert_allclose(alloc.omega, mu, atol=1e-8)
    assert alloc.value == pytest.approx(bound_constant(0.9, 0.1) * np.max(A_eff / mu), rel=1e-7)


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 5), st.integers(2, 3), st.integers(0, 10_000))
def test_allocation_is_feasible_and_beats_every_behaviour_policy(S: int, A: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    P = _random_mdp(rng, S, A)
    policies = [rng.integers(A, size=S) for _ in range(2)]
    sets = [FiniteRewardSet(rng.random((2, S))), BoxRewardSet(S)]
    A_eff = effective_bound(P, policies, sets, 0.9)
    alloc = solve_allocation(P, A_eff, 0.9, 0.1)
    assert navigation_residual(P, alloc.omega) < 1e-8
    assert characteristic_time_ub(alloc.omega, A_eff, 0.9, 0.1) == pytest.approx(alloc.value, rel=1e-6)
    for _ in range(20):
        beh = rng.dirichlet(np.ones(A), size=S)
        assert characteristic_time_ub(stationary_allocation(P, beh), A_eff, 0.9, 0.1) >= alloc.value * (
            1 - 1e-7
        )


def test_effective_bound_takes_the_max_over_policies_sharing_a_pair() -> None:
    rng = np.random.default_rng(5)
    P = _random_mdp(rng, 4, 2)
    pi = np.array([0, 1, 0, 1])
    rs1, rs2 = canonical_rewards(4, [0]), canonical_rewards(4, [3])
    A1 = value_deviation_bound(P, pi, rs1, 0.9)
    A2 = value_deviation_bound(P, pi, rs2, 0.9)
    A_eff = effective_bound(P, [pi, pi], [rs1, rs2], 0.9)
    np.testing.assert_allclose(A_eff[np.arange(4), pi], np.maximum(A1, A2))
    assert np.all(A_eff[np.arange(4), 1 - pi] == 0)


# ---------------------------------------------------------------- estimates and stopping


def test_estimates_converge_as_counts_grow() -> None:
    mdp = double_chain(3)
    prob = make_problem(mdp, "multi_finite", rng=np.random.default_rng(0))
    errs = []
    for n in (10, 100, 10_000):
        counts = np.round(mdp.P * n)
        P_hat = empirical_transitions(counts)
        errs.append(max_estimation_error(mdp.P, P_hat, prob.policies, prob.reward_sets, 0.9))
    assert errs[0] > errs[1] > errs[2] and errs[2] < 0.01


def test_stopping_threshold_monotone_and_statistic_closed_form() -> None:
    N = np.array([[10.0, 0.0], [5.0, 7.0], [1.0, 2.0]])
    thr = [stopping_threshold(N, d) for d in (0.01, 0.05, 0.2, 0.5)]
    assert all(a > b for a, b in itertools.pairwise(thr))
    assert stopping_threshold(N + 1, 0.1) > stopping_threshold(N, 0.1)
    A_eff = np.array([[1.0, 0.0], [2.0, 0.5], [0.0, 0.0]])
    Z = stopping_statistic(N, A_eff, 0.9, 0.1)
    need = A_eff > 0
    assert pytest.approx(np.min(N[need] / A_eff[need]) / bound_constant(0.9, 0.1)) == Z
    assert stopping_statistic(np.zeros((3, 2)), A_eff, 0.9, 0.1) == 0.0


def test_stopping_rule_fires_with_enough_well_allocated_samples() -> None:
    mdp = riverswim(4)
    prob = make_problem(mdp, "single_rewardfree", rng=np.random.default_rng(0), env_name="riverswim")
    agent = MRNaSPE(4, 2, prob.policies, prob.reward_sets, eps=0.5, delta=0.1, rng=np.random.default_rng(0))
    A_eff = effective_bound(mdp.P, prob.policies, prob.reward_sets, 0.9)
    omega = solve_allocation(mdp.P, A_eff, 0.9, 0.5).omega
    for scale, fires in ((1e3, False), (1e9, True)):
        agent._n_sas = np.round(omega[:, :, None] * mdp.P * scale).astype(np.int64)  # counts ∝ omega* P
        agent._n_sa = agent._n_sas.sum(2).tolist()
        assert agent.should_stop() is fires


# ---------------------------------------------------------------- agents


def test_oracle_agent_tracks_its_allocation_and_mrnas_moves_towards_omega_star() -> None:
    mdp = riverswim(5)
    prob = make_problem(mdp, "multi_finite", rng=np.random.default_rng(1), env_name="riverswim")
    A_eff = effective_bound(mdp.P, prob.policies, prob.reward_sets, 0.9)
    omega = solve_allocation(mdp.P, A_eff, 0.9, 0.1).omega
    kw = dict(rng=np.random.default_rng(0))
    oracle = MRNaSPE(5, 2, prob.policies, prob.reward_sets, fixed_omega=omega, **kw)
    run = run_pe_experiment(
        mdp, oracle, horizon=20_000, eval_every=5_000, rng=np.random.default_rng(1), omega_ref=omega
    )
    assert run.alloc_l1[-1] < 0.1
    mr = MRNaSPE(5, 2, prob.policies, prob.reward_sets, rng=np.random.default_rng(2), update_every=500)
    run = run_pe_experiment(
        mdp, mr, horizon=20_000, eval_every=1_000, rng=np.random.default_rng(1), omega_ref=omega
    )
    assert mr.n_updates == 40 and run.alloc_l1[-1] < run.alloc_l1[0]


@pytest.mark.parametrize("make", ["mr", "mr_cond", "uniform", "visitation", "gvf"])
def test_agents_act_validly_and_are_reproducible(make: str) -> None:
    mdp = forked_riverswim(4)
    S, A = mdp.n_states, mdp.n_actions
    prob = make_problem(mdp, "multi_finite", rng=np.random.default_rng(0))

    def build(seed: int):  # noqa: ANN202
        kw = dict(rng=np.random.default_rng(seed))
        if make.startswith("mr"):
            return MRNaSPE(
                S, A, prob.policies, prob.reward_sets, update_every=100, conditional=make == "mr_cond", **kw
            )
        if make == "gvf":
            return GVFExplorerAgent(S, A, prob.policies, prob.reward_sets, update_every=100, **kw)
        return NoisyPolicyAgent(S, A, prob.policies, prob.reward_sets, kind=make, **kw)

    runs = [
        run_pe_experiment(mdp, build(3), horizon=1_000, eval_every=500, rng=np.random.default_rng(4))
        for _ in range(2)
    ]
    np.testing.assert_array_equal(runs[0].final_counts, runs[1].final_counts)
    np.testing.assert_array_equal(runs[0].max_error, runs[1].max_error)
    assert runs[0].final_counts.sum() == 1_000 and np.all(np.isfinite(runs[0].max_error))
    est = build(0).estimates()
    assert len(est) == 3 and all(e.shape == (S, 1) for e in est)


def test_noisy_mix_counts_target_policies_like_the_repo() -> None:
    # hand-computed: at state 0 two of three policies take action 0, one takes action 1;
    # at state 1 all three take action 2; at state 2 they take 0, 1, 2.
    pols = [np.array([0, 2, 0]), np.array([0, 2, 1]), np.array([1, 2, 2])]
    sets = [BoxRewardSet(3)] * 3

    def agent(**kw):  # noqa: ANN202
        return NoisyPolicyAgent(3, 3, pols, sets, rng=np.random.default_rng(0), **kw)

    third = 1.0 / 3.0
    count = np.array([[2 * third, third, 0.0], [0.0, 0.0, 1.0], [third, third, third]])
    uniform = np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [third, third, third]])
    np.testing.assert_allclose(agent().behaviour_without_noise(), count)  # the default is the repo's
    np.testing.assert_allclose(agent(mix="count").behaviour_without_noise(), count)
    np.testing.assert_allclose(agent(mix="uniform").behaviour_without_noise(), uniform)
    # with 30 % uniform noise: 0.7 * 2/3 + 0.1 = 0.5667 on action 0 at state 0 (uniform mix: 0.45)
    beh = agent(noise=0.3).stationary_behaviour()
    np.testing.assert_allclose(beh[0], [0.7 * 2 * third + 0.1, 0.7 * third + 0.1, 0.1])
    # act() samples from exactly that distribution
    a = agent(noise=0.3)
    draws = np.bincount([a.act(0) for _ in range(20_000)], minlength=3) / 20_000
    np.testing.assert_allclose(draws, beh[0], atol=0.015)
    with pytest.raises(ValueError, match="mix"):
        agent(mix="weighted")


# ---------------------------------------------------------------- bad input


def test_bad_inputs_raise_clear_errors() -> None:
    P = riverswim(4).P.copy()
    bad = P.copy()
    bad[0, 0, 0] = 0.5
    with pytest.raises(ValueError, match="sum to one"):
        TabularMDP(bad)
    with pytest.raises(ValueError, match="shape"):
        TabularMDP(P[:, :, :3])
    with pytest.raises(ValueError, match="gamma"):
        evaluate_policy(P, np.zeros(4, dtype=int), np.ones(4), 1.0)
    with pytest.raises(ValueError, match="shape"):
        evaluate_policy(P, np.zeros(3, dtype=int), np.ones(4), 0.9)
    with pytest.raises(ValueError, match="actions"):
        evaluate_policy(P, np.array([0, 1, 2, 0]), np.ones(4), 0.9)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        FiniteRewardSet(np.array([[0.0, 1.5, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="states"):
        value_deviation_bound(P, np.zeros(4, dtype=int), BoxRewardSet(5), 0.9)
    with pytest.raises(ValueError, match="A_eff"):
        solve_allocation(P, np.ones((3, 2)), 0.9, 0.1)
    with pytest.raises(ValueError, match="delta"):
        stopping_threshold(np.ones((4, 2)), 1.5)
    with pytest.raises(ValueError, match="unknown environment"):
        make_env("gridworld")
    with pytest.raises(ValueError, match="policies"):
        MRNaSPE(4, 2, [np.zeros(5, dtype=int)], [BoxRewardSet(4)], rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="rewards"):
        TabularEnv(P, rewards=np.ones((4, 3)))


# ---------------------------------------------------------------- the claim check


def test_full_preset_constructs_and_runs_one_short_step(tmp_path) -> None:  # noqa: ANN001
    from icml25.core.check import RunContext
    from icml25.core.progress import NullReporter
    from icml25.rl.multi_reward_policy_eval.check import CHECK

    full = CHECK.config("full")
    assert full.horizon == 1_000_000 and len(full.cells()) == 12
    short = CHECK.config("full", {"horizon": 200, "eval_every": 200, "stop_demo": False})
    ctx = RunContext(slug=CHECK.slug, scale="full", run_dir=tmp_path, reporter=NullReporter())
    outcome = CHECK.run_seed(short, 0, ctx)  # figures are left out to keep the test fast
    assert 0.0 <= outcome.metrics["mr_nas"]["cells_won_frac"] <= 1.0
    assert len([k for k in outcome.metrics["mr_nas"] if k.endswith("/final_err")]) == 12


def test_figures_are_drawn_for_every_cell_and_the_stopping_demo() -> None:
    from icml25.rl.multi_reward_policy_eval.check import CHECK

    overrides = {"horizon": 400, "eval_every": 200, "stop_demo": True, "regimes": ("multi_finite",)}
    result = CHECK.run("tiny", seeds=[0, 1], overrides=overrides)
    assert [f.file for f in result.figures] == [
        "error_vs_steps.png",
        "allocation_tracking.png",
        "stopping_rule.png",
    ]


def test_config_errors_name_the_field() -> None:
    from icml25.rl.multi_reward_policy_eval.check import MRPEConfig

    with pytest.raises(ValueError, match=r"MRPEConfig\.eval_every must be a positive integer"):
        MRPEConfig(eval_every=0)
    with pytest.raises(ValueError, match=r"MRPEConfig\.gamma must lie in \[0, 1\)"):
        MRPEConfig(gamma=1.0)
    with pytest.raises(ValueError, match=r"MRPEConfig\.delta"):
        MRPEConfig(delta=0.0)
    with pytest.raises(ValueError, match=r"MRPEConfig\.horizon"):
        MRPEConfig(horizon=100, eval_every=200)
    with pytest.raises(ValueError, match=r"MRPEConfig\.noisy_mix"):
        MRPEConfig(noisy_mix="weighted")
    with pytest.raises(ValueError, match=r"MRPEConfig\.log_effect"):
        MRPEConfig(log_effect=0.0)
    with pytest.raises(ValueError, match=r"BoxRewardSet\.n_states"):
        BoxRewardSet(0)
    with pytest.raises(ValueError, match=r"TabularMDP\.initial_state"):
        TabularMDP(riverswim(4).P, initial_state=4)


def test_claim_for_follows_the_cells_and_gamma(tmp_path) -> None:  # noqa: ANN001
    from icml25.core.check import RunContext
    from icml25.core.claims import evaluate_criterion, summarize_metrics
    from icml25.core.progress import NullReporter
    from icml25.rl.multi_reward_policy_eval.check import CHECK

    assert CHECK.claim_for(CHECK.config("small")) == CHECK.claim
    cell_names = [c.name for c in CHECK.claim.criteria if c.name.startswith("cell_")]
    assert len(cell_names) == 3 * 2 + 3 * 3  # GVFExplorer runs in the three finite-reward cells only
    assert "lowest_error_in_most_cells" not in {c.name for c in CHECK.claim.criteria}
    config = CHECK.config(
        "small",
        {
            "envs": ("riverswim:4",),
            "horizon": 400,
            "eval_every": 200,
            "stop_demo": False,
            "gamma": 0.5,
            "log_effect": 0.3,
        },
    )
    claim = CHECK.claim_for(config)
    by_name = {c.name: c for c in claim.criteria}
    cell = by_name["cell_riverswim_multi_finite_vs_gvf_explorer"]
    assert (
        cell.paired and cell.smallest_effect == 0.3 and cell.metric == "riverswim/multi_finite/log_final_err"
    )
    assert by_name["below_noisy_uniform"].smallest_effect == 0.3
    assert "cell_riverswim_single_rewardfree_vs_gvf_explorer" not in by_name
    assert claim.role_of(cell.name) == "supporting"
    assert by_name["tiny_errors_finite"].threshold == pytest.approx(math.log(2.0))
    ctx = RunContext(slug=CHECK.slug, scale="small", run_dir=tmp_path, reporter=NullReporter())
    metrics = summarize_metrics([CHECK.run_seed(config, 0, ctx).metrics])
    results = [evaluate_criterion(c, metrics) for c in claim.criteria]
    assert all("not measured" not in r.reason for r in results), [r.reason for r in results]


def test_multi_policy_draws_are_without_replacement_as_the_official_setup_rewards() -> None:
    """The official setup_rewards draws the three rewarded (state, action) pairs and the three
    canonical reward states with replace=False; distinct_draws=False keeps the independent draws."""
    mdp = riverswim(5)

    def states(distinct: bool, seed: int) -> list[int]:
        prob = make_problem(mdp, "multi_finite", rng=np.random.default_rng(seed), distinct_draws=distinct)
        return [int(np.argmax(rs.rewards[0])) for rs in prob.reward_sets]  # type: ignore[attr-defined]

    assert all(len(set(states(True, s))) == 3 for s in range(200))
    assert any(len(set(states(False, s))) < 3 for s in range(200))  # coincidences under the old rule
    from types import SimpleNamespace

    two_states = SimpleNamespace(n_states=2, n_actions=2)  # three distinct canonical rewards cannot exist
    with pytest.raises(ValueError, match="distinct_draws"):
        make_problem(two_states, "multi_finite", rng=np.random.default_rng(0))  # type: ignore[arg-type]
