"""Tests of ECON (icml25.agents.econ): games, NashConv, networks, rewards, RL, LLM pipeline, check."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.agents.econ import (
    BeliefEncoder,
    BeliefNetwork,
    DecodingStrategy,
    DynamicRewardWeights,
    ECONConfig,
    ECONMixer,
    ECONTrainer,
    EmpiricalGame,
    IndependentLearners,
    ResponsePool,
    RewardModel,
    bayesian_nash_conv,
    bne_refine_beliefs,
    build_response_pool,
    chain_of_thought,
    deviation_payoffs,
    embed_texts,
    expected_payoffs,
    majority_vote,
    make_arithmetic_problems,
    multi_agent_debate,
    nash_conv,
    parse_answer,
    pure_nash_equilibria,
    self_consistency,
    strategy_grid,
    support_enumeration,
)
from icml25.agents.econ.check import CHECK
from icml25.agents.econ.simulate import simulated_chat_model

torch.set_num_threads(1)

# -- games ------------------------------------------------------------------------------------------


def _bimatrix(a: list[list[float]], b: list[list[float]]) -> np.ndarray:
    return np.stack([np.array(a, float), np.array(b, float)], axis=-1)


PD = _bimatrix([[3, 0], [5, 1]], [[3, 5], [0, 1]])  # action 1 = defect
PENNIES = _bimatrix([[1, -1], [-1, 1]], [[-1, 1], [1, -1]])
BOS = _bimatrix([[2, 0], [0, 1]], [[1, 0], [0, 2]])


def test_prisoners_dilemma_unique_pure_equilibrium() -> None:
    assert pure_nash_equilibria(PD) == [(1, 1)]
    eqs = support_enumeration(PD)
    assert len(eqs) == 1 and np.allclose(eqs[0][0], [0, 1]) and np.allclose(eqs[0][1], [0, 1])
    assert nash_conv(PD, [np.array([1.0, 0]), np.array([1.0, 0])]) == pytest.approx(4.0)  # each gains 2


def test_matching_pennies_mixed_equilibrium_exact() -> None:
    assert pure_nash_equilibria(PENNIES) == []
    (x, y), *rest = support_enumeration(PENNIES)
    assert not rest and np.allclose(x, [0.5, 0.5]) and np.allclose(y, [0.5, 0.5])
    assert nash_conv(PENNIES, [x, y]) == pytest.approx(0.0, abs=1e-12)


def test_battle_of_sexes_three_equilibria() -> None:
    eqs = support_enumeration(BOS)
    assert len(eqs) == 3
    mixed = [e for e in eqs if (e[0] > 0).all()]
    assert len(mixed) == 1
    assert np.allclose(mixed[0][0], [2 / 3, 1 / 3]) and np.allclose(mixed[0][1], [1 / 3, 2 / 3])
    assert sorted(pure_nash_equilibria(BOS)) == [(0, 0), (1, 1)]


def test_rock_paper_scissors_uniform() -> None:
    a = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]], float)
    game = np.stack([a, -a], -1)
    eqs = support_enumeration(game)
    assert len(eqs) == 1 and np.allclose(eqs[0][0], 1 / 3) and np.allclose(eqs[0][1], 1 / 3)


def _naive_nash_conv(payoffs: np.ndarray, profile: list[np.ndarray]) -> float:
    n = payoffs.ndim - 1
    shape = payoffs.shape[:-1]
    total = 0.0
    for i in range(n):
        current, best = 0.0, -np.inf
        for dev in range(shape[i]):
            val = 0.0
            for joint in itertools.product(*(range(s) for s in shape)):
                if joint[i] != dev:
                    continue
                val += np.prod([profile[j][joint[j]] for j in range(n) if j != i]) * payoffs[(*joint, i)]
            best = max(best, val)
            current += profile[i][dev] * val
        total += best - current
    return total


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 3), st.integers(2, 3), st.integers(0, 10_000))
def test_nash_conv_matches_naive_and_is_non_negative(n: int, a: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    pay = rng.normal(size=(a,) * n + (n,))
    prof = [rng.dirichlet(np.ones(a)) for _ in range(n)]
    value = nash_conv(pay, prof)
    assert value >= -1e-12
    assert value == pytest.approx(_naive_nash_conv(pay, prof), abs=1e-9)
    devs = deviation_payoffs(pay, prof)
    assert np.allclose(expected_payoffs(pay, prof), [d @ p for d, p in zip(devs, prof, strict=True)])
    for eq in pure_nash_equilibria(pay):  # a pure equilibrium has zero NashConv
        onehot = [np.eye(a)[k] for k in eq]
        assert nash_conv(pay, onehot) == pytest.approx(0.0, abs=1e-12)


def test_bayesian_nash_conv_is_type_weighted_mean() -> None:
    pay = np.stack([PD, PENNIES])
    prof = np.array([[[0.5, 0.5], [0.5, 0.5]], [[1.0, 0.0], [1.0, 0.0]]])
    want = 0.25 * nash_conv(PD, list(prof[0])) + 0.75 * nash_conv(PENNIES, list(prof[1]))
    assert bayesian_nash_conv(pay, prof, np.array([0.25, 0.75])) == pytest.approx(want)


def test_game_inputs_rejected() -> None:
    with pytest.raises(ValueError, match="one payoff per player"):
        nash_conv(np.zeros((2, 2, 3)), [np.ones(2) / 2] * 2)
    with pytest.raises(ValueError, match="probability"):
        nash_conv(PD, [np.array([0.7, 0.7]), np.array([0.5, 0.5])])
    with pytest.raises(ValueError, match="finite"):
        nash_conv(np.full((2, 2, 2), np.nan), [np.ones(2) / 2] * 2)
    with pytest.raises(TypeError, match="numeric"):
        pure_nash_equilibria(np.array([["a", "b"]]))


# -- problems and parsing -----------------------------------------------------------------------------


def test_problems_seeded_and_answers_recomputed() -> None:
    a, b = make_arithmetic_problems(30, seed=3), make_arithmetic_problems(30, seed=3)
    assert a == b and a != make_arithmetic_problems(30, seed=4)
    import re

    for p in a:  # recompute the answer from the text
        total = int(re.search(r"has (\d+)", p.question).group(1))  # type: ignore[union-attr]
        for sentence in p.question.split("Then ")[1:]:
            if "buys" in sentence:
                total += int(re.search(r"buys (\d+)", sentence).group(1))  # type: ignore[union-attr]
            elif "gives" in sentence:
                total -= int(re.search(r"gives (\d+)", sentence).group(1))  # type: ignore[union-attr]
            elif "doubles" in sentence:
                total *= 2
        assert total == p.answer and total > 0


def test_parse_answer() -> None:
    assert parse_answer("so 3 + 4 = 7, \\boxed{7}") == 7.0
    assert parse_answer("\\boxed{1,200} then 5") == 1200.0
    assert parse_answer("first 3 then 12.5") == 12.5
    assert parse_answer("no number") is None
    with pytest.raises(TypeError):
        parse_answer(3)  # type: ignore[arg-type]


def test_majority_vote_ties_and_weights() -> None:
    assert majority_vote([1.0, 2.0, 2.0]) == 2.0
    assert majority_vote([3.0, 1.0]) == 3.0  # tie -> first given
    assert majority_vote([1.0, 2.0, 2.0], [0.8, 0.1, 0.1]) == 1.0
    assert majority_vote([None, None]) is None


# -- networks -------------------------------------------------------------------------------------------


def test_network_shapes_and_validation() -> None:
    torch.manual_seed(0)
    net = BeliefNetwork(16, 4, belief_dim=8, hidden=12)
    b, q, logits = net(torch.randn(5, 16), torch.randn(5, 16))
    assert b.shape == (5, 8) and q.shape == (5, 4) and logits.shape == (5, 4)
    enc = BeliefEncoder(8, 6, heads=2)
    e = enc(torch.randn(5, 3, 8))
    assert e.shape == (5, 6)
    mixer = ECONMixer(3, 6, 3, 16)
    q_tot, proj = mixer(torch.randn(5, 3), e, torch.rand(5, 3, 3))
    assert q_tot.shape == (5,) and proj.shape == (5, 3, 16)
    with pytest.raises(ValueError, match="obs"):
        net(torch.randn(5, 15))
    with pytest.raises(ValueError, match="finite"):
        net(torch.full((2, 16), float("nan")))
    with pytest.raises(TypeError, match="floating"):
        net(torch.ones(2, 16, dtype=torch.long))
    with pytest.raises(ValueError, match="n_actions"):
        BeliefNetwork(16, 0)


def test_mixer_is_monotonic_in_agent_values() -> None:
    torch.manual_seed(1)
    mixer = ECONMixer(4, 8, 3, 5)
    q = torch.randn(16, 4, requires_grad=True)
    q_tot, _ = mixer(q, torch.randn(16, 8), torch.rand(16, 4, 3))
    (grad,) = torch.autograd.grad(q_tot.sum(), q)
    assert (grad >= 0).all()


def test_bne_refinement_rule() -> None:
    b = torch.randn(2, 3, 4)
    out, rounds = bne_refine_beliefs(b, step=0.1, iters=1)
    unit = torch.nn.functional.normalize(b, dim=-1)
    w = torch.softmax(unit @ unit.transpose(1, 2), -1) * (1 - torch.eye(3))
    assert rounds == 1 and torch.allclose(out, b + 0.1 * w @ b)
    single, _ = bne_refine_beliefs(torch.randn(1, 1, 4))  # one agent has nobody to align with
    _, r_small = bne_refine_beliefs(torch.full((1, 2, 4), 1e-4), iters=5, tol=0.01)
    assert single.shape == (1, 1, 4) and r_small == 1


# -- rewards --------------------------------------------------------------------------------------------


def test_reward_components_by_hand() -> None:
    emb = np.eye(3, dtype=np.float32)[:, :3]
    rm = RewardModel()
    parts = rm.components(
        [5.0, 5.0, 2.0], emb, np.array([1.0, 0.5, 0.0]), np.array([1.0, 0.0, 1.0]), 5.0, emb[0], 5.0
    )
    assert parts.ts == 1.0
    assert np.allclose(parts.al, [0.6 + 0.25 + 0.15, 0.6 + 0.075, 0.0])
    assert np.allclose(parts.cc, [0.3 + 0.2 + 0.2 + 0.2, 0.3 + 0.2, 0.2 + 0.2])
    assert np.allclose(rm(parts), parts.stacked() @ np.array([0.3, 0.5, 0.2]))
    with pytest.raises(ValueError, match="weights"):
        RewardModel((1.0, -1.0, 0.5))
    dyn = DynamicRewardWeights()
    comp = torch.rand(8, 3, 3)
    first = dyn.update(comp, torch.ones(8, 3))
    for _ in range(50):
        last = dyn.update(comp, torch.ones(8, 3))
    assert last < first and np.isclose(dyn.weights.sum(), 1.0)


def test_embed_texts() -> None:
    e = embed_texts(["two apples", "two apples", ""], 32)
    assert (
        e.shape == (3, 32)
        and np.allclose(e[0], e[1])
        and np.isclose(np.linalg.norm(e[0]), 1)
        and not e[2].any()
    )
    with pytest.raises(ValueError, match="non-empty"):
        embed_texts([], 8)


# -- LLM pipeline ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sim() -> tuple[list, ResponsePool]:
    problems = make_arithmetic_problems(14, seed=0)
    model = simulated_chat_model(problems)
    return problems, build_response_pool(model, problems, strategy_grid(), n_agents=3, max_tokens=32)


def test_pool_shapes_and_executor_isolation(sim: tuple[list, ResponsePool]) -> None:
    problems, pool = sim
    assert pool.answers.shape == (14, 4, 3) and pool.embeddings.shape == (14, 4, 3, 256)
    model = simulated_chat_model(problems)
    build_response_pool(model, problems[:2], strategy_grid(), n_agents=2)
    executor_calls = [
        c for c in model.calls if "Problem:" in c[-1]["content"] and "In one or two" not in c[-1]["content"]
    ]
    assert executor_calls and all("Agent" not in c[-1]["content"] for c in executor_calls)
    assert any("Strategy:" in c[-1]["content"] for c in executor_calls)


def test_baselines_run_with_budget(sim: tuple[list, ResponsePool]) -> None:
    problems, _ = sim
    model = simulated_chat_model(problems)
    qs = [p.question for p in problems[:4]]
    for res in (
        chain_of_thought(model, qs, max_tokens=64),
        self_consistency(model, qs, k=3, max_tokens=16),
        multi_agent_debate(model, qs, agents=2, rounds=2, max_tokens=16),
    ):
        assert len(res.answers) == 4 and (res.generated_tokens > 0).all() and (res.prompt_tokens > 0).all()
    debate_calls = [c for c in model.calls if "Other agents answered" in c[-1]["content"]]
    assert len(debate_calls) == 4 * 2


def test_decoding_strategy_validation() -> None:
    with pytest.raises(ValueError, match="style"):
        DecodingStrategy("shout", 0.5)
    with pytest.raises(ValueError, match="temperature"):
        DecodingStrategy("cot", 0.0)
    with pytest.raises(ValueError, match="non-empty"):
        strategy_grid(temperatures=())


# -- RL ---------------------------------------------------------------------------------------------------


def _toy_pool(n_q: int = 6) -> ResponsePool:
    """Two agents, two strategies: strategy 1 always answers correctly, strategy 0 never."""
    problems = make_arithmetic_problems(n_q, seed=1)
    grid = strategy_grid(styles=("cot",), temperatures=(0.3, 1.0))
    truth = np.array([p.answer for p in problems], float)
    answers = np.zeros((n_q, 2, 2))
    answers[:, 1, :] = truth[:, None]
    answers[:, 0, :] = truth[:, None] + np.array([1, 2])
    texts = [[[f"\\boxed{{{answers[q, a, i]:g}}}" for i in range(2)] for a in range(2)] for q in range(n_q)]
    flat = [t for x in texts for y in x for t in y]
    return ResponsePool(
        problems=problems,
        grid=grid,
        strategies=["plan"] * n_q,
        strategy_tokens=np.ones(n_q),
        texts=texts,
        answers=answers,
        tokens=np.full((n_q, 2, 2), 5),
        embeddings=embed_texts(flat, 32).reshape(n_q, 2, 2, 32),
        formats=np.ones((n_q, 2, 2)),
        reasoning=np.zeros((n_q, 2, 2)),
        obs=embed_texts([p.question for p in problems], 32),
    )


@pytest.mark.parametrize("cls", [ECONTrainer, IndependentLearners])
def test_training_finds_the_dominant_strategy(cls: type[ECONTrainer]) -> None:
    game = EmpiricalGame(_toy_pool())
    tr = cls(
        game,
        ECONConfig(belief_dim=16, hidden=32, group_dim=16, steps=120, batch_size=8, eval_every=40, lr=3e-3),
        seed=0,
    )
    log = tr.fit(range(6))
    dec = tr.decide(range(6))
    assert (dec.actions == 1).all()
    assert log.nash_conv[-1] < log.nash_conv[0] and log.nash_conv[-1] < 0.05
    assert np.mean(log.regret[-20:]) < np.mean(log.regret[:20])
    assert tr.nash_conv(range(6)) == pytest.approx(log.nash_conv[-1], abs=1e-6)


def test_empirical_game_matches_reward_model() -> None:
    pool = _toy_pool(2)
    game = EmpiricalGame(pool)
    pay = game.payoffs(0, RewardModel().weights)
    assert pay.shape == (2, 2, 2)
    assert game.team[0][game.joint_index(np.array([1, 1]))] == 1.0 and game.oracle(0) == 1.0
    assert game.team[0][game.joint_index(np.array([0, 0]))] == 0.0
    # both playing the correct strategy is an equilibrium of the shaped game
    assert (1, 1) in pure_nash_equilibria(pay)


def test_full_preset_one_update(sim: tuple[list, ResponsePool]) -> None:
    """The paper-scale networks construct and take one update (the full run itself needs the LLM)."""
    full = CHECK.config("full")
    _, pool = sim
    cfg = ECONConfig(
        belief_dim=full.belief_dim, hidden=full.hidden, group_dim=full.group_dim, steps=1, batch_size=16
    )
    tr = ECONTrainer(EmpiricalGame(pool, range(10)), cfg, seed=0)
    log = tr.fit(range(10))
    assert len(log.loss) == 1 and np.isfinite(log.loss[0]) and full.executor_tokens == 400


# -- the check --------------------------------------------------------------------------------------------


def _mixed_pool(n_q: int = 4) -> ResponsePool:
    """Three agents, two strategies; agent 0 answers correctly under strategy 1, the others never."""
    problems = make_arithmetic_problems(n_q, seed=2)
    grid = strategy_grid(styles=("cot",), temperatures=(0.3, 1.0))
    truth = np.array([p.answer for p in problems], float)
    answers = truth[:, None, None] + np.array([1.0, 2.0, 3.0])[None, None, :] * np.ones((n_q, 2, 3))
    answers[:, 1, 0] = truth
    texts = [[[f"\\boxed{{{answers[q, a, i]:g}}}" for i in range(3)] for a in range(2)] for q in range(n_q)]
    flat = [t for x in texts for y in x for t in y]
    return ResponsePool(
        problems=problems,
        grid=grid,
        strategies=["plan"] * n_q,
        strategy_tokens=np.ones(n_q),
        texts=texts,
        answers=answers,
        tokens=np.full((n_q, 2, 3), 5),
        embeddings=embed_texts(flat, 32).reshape(n_q, 2, 3, 32),
        formats=np.ones((n_q, 2, 3)),
        reasoning=np.zeros((n_q, 2, 3)),
        obs=embed_texts([p.question for p in problems], 32),
    )


def _rewards_seen(team_reward: bool) -> torch.Tensor:
    game = EmpiricalGame(_mixed_pool())
    cfg = ECONConfig(
        belief_dim=8, hidden=16, group_dim=8, heads=2, steps=1, batch_size=4, team_reward=team_reward
    )
    tr = ECONTrainer(game, cfg, seed=0)
    qs = np.arange(4)
    act = np.tile(np.array([1, 0, 0]), (4, 1))
    comp, _, ce, correct = tr._rewards(qs, act)
    obs = torch.tensor(game.pool.obs[qs])
    out = tr.system(obs, torch.zeros(4, 3, 32))
    _, r = tr._loss(out, torch.tensor(act), comp, ce, correct)
    return r.detach()


def test_team_reward_is_one_reward_for_all_agents() -> None:
    """Official code: one team reward per step (a common-payoff game); per-agent shaping is the flag."""
    assert ECONConfig().team_reward
    r_team = _rewards_seen(True)
    assert torch.allclose(r_team, r_team[:, :1].expand_as(r_team))
    r_own = _rewards_seen(False)
    assert not torch.allclose(r_own, r_own[:, :1].expand_as(r_own))  # agent 0 (correct) earns more
    assert torch.allclose(r_team[:, 0], r_own.mean(1))


def test_nash_conv_on_the_common_payoff() -> None:
    """Both learners' NashConv is measured on the commitment's correctness, not on ECON's shaping."""
    game = EmpiricalGame(_mixed_pool())
    common = game.common_payoffs(0)
    assert common.shape == (2, 2, 2, 3)
    assert np.array_equal(common[..., 0], common[..., 2])
    assert np.array_equal(common[..., 1].ravel(), game.team[0])
    cfg = ECONConfig(belief_dim=8, hidden=16, group_dim=8, heads=2, steps=1, batch_size=4)
    for cls in (ECONTrainer, IndependentLearners):
        tr = cls(game, cfg, seed=1)
        dec = tr.decide(range(4))
        pay = np.stack([game.common_payoffs(q) for q in range(4)])
        prof = dec.profiles.astype(np.float64)
        prof = prof / prof.sum(-1, keepdims=True)
        assert tr.nash_conv(range(4)) == pytest.approx(bayesian_nash_conv(pay, prof), abs=1e-9)


def test_small_design() -> None:
    """Issue 39: >= 60 test questions per seed, equal N, debate at its usual settings for tokens."""
    small = CHECK.config("small")
    assert small.n_test >= 60 and small.sc_samples == small.n_agents
    assert (small.usual_debate_agents, small.usual_debate_rounds) == (3, 2)
    claim = CHECK.claim_for(small)
    tokens = next(c for c in claim.criteria if c.name == "fewer_tokens_than_debate")
    assert tokens.other_arm == "llm_debate_usual" and tokens.paired
    assert all(c.paired for c in claim.criteria_at("small") if c.other_arm is not None)
    assert claim.references and claim.gates_at("small")
    gate = next(g for g in claim.gates if g.name == "llm_solves_task")
    assert gate.guards == ("llm_beats_self_consistency",)
    assert CHECK.claim_for(CHECK.config("small", {"llm_model": None})).baselines[0] == "econ_vote"


def test_check_tiny() -> None:
    result = CHECK.run("tiny", seeds=[0, 1])
    m = result.metrics
    for arm in ("econ", "econ_vote", "independent", "cot", "self_consistency", "debate", "debate_usual"):
        assert 0.0 <= m[arm]["accuracy"].mean <= 1.0
        assert 0.0 <= m["llm_" + arm]["accuracy"].mean <= 1.0
    for arm in ("random_profile", "oracle_profile"):
        assert 0.0 <= m[arm]["accuracy"].mean <= m["oracle_profile"]["accuracy"].mean + 1e-12
    assert m["econ"]["nash_conv"].mean >= 0 and m["independent"]["nash_conv"].mean >= 0
    assert all(
        m[a]["generated_tokens"].mean <= CHECK.config("tiny").budget
        for a in ("econ", "cot", "self_consistency", "debate")
    )
    # debate at its usual settings (3 agents x 2 rounds) reads and writes more than the squeezed one
    assert m["llm_debate_usual"]["total_tokens"].mean > m["llm_debate"]["total_tokens"].mean
    # the mechanism path draws fresh test questions and reruns the baselines per seed
    acc = m["self_consistency"]["accuracy"].values
    tok = m["self_consistency"]["total_tokens"].values
    assert len(acc) == 2 and (acc[0] != acc[1] or tok[0] != tok[1])
    assert m["llm_self_consistency"]["accuracy"].values[0] == m["llm_self_consistency"]["accuracy"].values[1]
    with pytest.raises(ValueError, match="n_val"):
        CHECK.config("tiny", {"n_val": 20})
