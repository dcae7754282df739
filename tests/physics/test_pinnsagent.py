"""Tests for PINNsAgent (arXiv 2501.12053): PDE references, trainer, PGKR, memory tree, searches."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.llm.chat import GenerationConfig, ScriptedChatModel
from icml25.physics.pinnsagent import (
    DEFAULT_CONFIG,
    PDE_SUITE,
    PGKR,
    AgentSearch,
    Evaluator,
    KBRow,
    KnowledgeBase,
    MemoryTree,
    ParamStats,
    PINNNet,
    SearchSpace,
    build_knowledge_base,
    burgers_reference,
    config_key,
    cosine,
    encode_labels,
    encode_text,
    parameter_stats,
    parse_proposal,
    planner_prompt,
    random_search,
    run_agents,
    tpe_search,
    train_pinn,
)
from icml25.physics.pinnsagent.check import CHECK

torch.set_num_threads(1)
SPACE = SearchSpace(max_width=16)


def test_suite_has_six_plus_pdes_with_valid_labels_and_boxes() -> None:
    assert len(PDE_SUITE) >= 6
    families = {p.labels["family"] for p in PDE_SUITE.values()}
    assert {"burgers", "poisson", "heat", "wave", "advection", "reaction_diffusion"} <= families
    for p in PDE_SUITE.values():
        g = p.test_grid(5)
        assert g.shape == (5**p.dim, p.dim)
        assert torch.isfinite(p.exact(g)).all()


@pytest.mark.parametrize("name", ["heat1d", "heat2d", "wave1d", "advection1d"])
def test_homogeneous_pdes_have_zero_manufactured_source(name: str) -> None:
    """The closed forms solve the homogeneous PDEs: N[u_exact] is zero up to float32 rounding."""
    p = PDE_SUITE[name]
    x = p.scale(torch.rand(200, p.dim, generator=torch.Generator().manual_seed(0)))
    scale = p.exact(x).abs().max()
    assert p.source(x).abs().max() < 1e-3 * max(1.0, float(scale)) * 100


def test_burgers_reference_initial_condition_and_pde_residual() -> None:
    x = np.linspace(-0.9, 0.9, 7)
    assert np.allclose(burgers_reference(x, np.zeros_like(x), 0.05 / math.pi), -np.sin(np.pi * x))
    # finite-difference residual of u_t + u u_x - nu u_xx at interior points is small
    nu, h, k = 0.05 / math.pi, 1e-3, 1e-3
    xs, ts = np.array([-0.5, 0.2, 0.6]), np.array([0.3, 0.5, 0.2])

    def u(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return burgers_reference(a, b, nu, n_nodes=200)

    ut = (u(xs, ts + k) - u(xs, ts - k)) / (2 * k)
    ux = (u(xs + h, ts) - u(xs - h, ts)) / (2 * h)
    uxx = (u(xs + h, ts) - 2 * u(xs, ts) + u(xs - h, ts)) / h**2
    assert np.abs(ut + u(xs, ts) * ux - nu * uxx).max() < 1e-3
    # the boundary values stay zero
    assert np.abs(burgers_reference(np.array([-1.0, 1.0]), np.array([0.7, 0.7]), nu)).max() < 1e-8


def test_boundary_points_lie_on_faces_excluding_final_time() -> None:
    p = PDE_SUITE["heat1d"]
    g = torch.Generator().manual_seed(1)
    xb = p.boundary_points(torch.rand(300, 2, generator=g), g)
    lo, hi = torch.tensor(p.lower), torch.tensor(p.upper)
    on_face = ((xb - lo).abs() < 1e-7) | ((xb - hi).abs() < 1e-7)
    assert on_face.any(1).all()
    assert not ((xb[:, 1] - hi[1]).abs() < 1e-7).any()


def test_search_space_snap_sample_and_size() -> None:
    sp = SearchSpace()
    assert sp.snap("lr", 0.0011) == 1e-3 and sp.snap("lr", "0.05") == 3e-2
    assert sp.snap("activation", " Tanh ") == "tanh" and sp.snap("activation", "swish") is None
    assert sp.snap("nope", 1) is None and sp.snap("width", "abc") is None
    assert sp.size() == math.prod(len(v) for v in sp.values.values())
    cfg = sp.sample(np.random.default_rng(0))
    assert sp.contains(cfg) and sp.contains(sp.default())
    assert max(SPACE.values["width"]) == 16


def test_pinnnet_shapes_and_adaptive_activation_parameters() -> None:
    for net, extra in (("fnn", 0), ("laaf", 3), ("gaaf", 1)):
        m = PINNNet((0.0, 0.0), (1.0, 1.0), width=8, depth=3, net=net)
        base = sum(p.numel() for p in PINNNet((0.0, 0.0), (1.0, 1.0), width=8, depth=3).parameters())
        assert sum(p.numel() for p in m.parameters()) == base + extra
        assert m(torch.rand(5, 2)).shape == (5, 1)
    z = PINNNet((0.0,), (1.0,), width=4, depth=2, initializer="zeros")
    assert torch.equal(z(torch.rand(3, 1)), torch.zeros(3, 1))


def test_train_pinn_is_deterministic_and_learns() -> None:
    p = PDE_SUITE["poisson2d"]
    cfg = dict(DEFAULT_CONFIG, width=16, n_domain=128, n_boundary=32, lr=1e-2)
    a = train_pinn(p, cfg, steps=60, seed=3, space=SPACE)
    b = train_pinn(p, cfg, steps=60, seed=3, space=SPACE)
    assert a.l2rel == b.l2rel and a.mse == b.mse
    short = train_pinn(p, cfg, steps=2, seed=3, space=SPACE)
    assert a.l2rel < short.l2rel
    with pytest.raises(ValueError, match="search space"):
        train_pinn(p, dict(cfg, width=7), steps=2, space=SPACE)
    with pytest.raises(ValueError, match="missing"):
        train_pinn(p, {"width": 8}, steps=2)


def test_wave_initial_velocity_and_sobol_paths_run() -> None:
    cfg = dict(DEFAULT_CONFIG, width=8, n_domain=64, n_boundary=16, sampling="sobol", net="laaf")
    r = train_pinn(PDE_SUITE["wave1d"], cfg, steps=3, space=SPACE)
    assert math.isfinite(r.l2rel) and r.seconds > 0


def _kb() -> KnowledgeBase:
    kb = KnowledgeBase()
    rng = np.random.default_rng(0)
    for name in ("poisson1d", "poisson2d", "heat1d", "wave1d", "burgers1d"):
        for _ in range(4):
            cfg = SPACE.sample(rng)
            kb.add(KBRow(name, cfg, float(10 ** rng.uniform(-3, 0.5))))
    return kb


def test_pgkr_leave_one_out_and_nearest_neighbour() -> None:
    kb = _kb()
    pgkr = PGKR(PDE_SUITE)
    loo = kb.without("poisson2d")
    assert not loo.of("poisson2d") and len(loo.rows) == 16
    sims = pgkr.similarities(PDE_SUITE["poisson2d"], loo)
    assert sims[0][0] == "poisson1d"  # same family and type
    assert all(name != "poisson2d" for name, _ in sims)
    hits = pgkr.retrieve(PDE_SUITE["poisson2d"], loo, k=2, max_l2=10.0)
    assert [h.pde for h in hits][0] == "poisson1d" and hits[0].best == loo.best("poisson1d")
    text = PGKR(PDE_SUITE, encoder="text").similarities(PDE_SUITE["heat1d"], kb.without("heat1d"))
    assert len(text) == 4


def test_cosine_matches_naive_reference_and_label_weights() -> None:
    a, b = encode_labels(PDE_SUITE["heat1d"]), encode_labels(PDE_SUITE["burgers1d"])
    naive = sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(
        sum(x * x for x in a) * sum(y * y for y in b)
    )
    assert cosine(a, b) == pytest.approx(naive)
    assert encode_labels(PDE_SUITE["heat1d"]).sum() == pytest.approx(2 + 2 + 8)
    e = encode_text("heat equation")
    assert np.linalg.norm(e) == pytest.approx(1.0) and np.array_equal(e, encode_text("heat equation"))


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.floats(-5, 5), min_size=3, max_size=3).filter(lambda v: np.linalg.norm(v) > 1e-3),
    st.lists(st.floats(-5, 5), min_size=3, max_size=3).filter(lambda v: np.linalg.norm(v) > 1e-3),
)
def test_cosine_symmetric_bounded(a: list[float], b: list[float]) -> None:
    c = cosine(np.array(a), np.array(b))
    assert -1 - 1e-9 <= c <= 1 + 1e-9 and c == pytest.approx(cosine(np.array(b), np.array(a)))


def test_parameter_stats_ranges() -> None:
    stats = parameter_stats(_kb(), SPACE)
    assert set(stats.scores) == set(SPACE.params)
    assert all(0.0 <= s <= 1.0 for s in stats.scores.values())
    assert all(0 < r < 1 for vals in stats.success.values() for r in vals.values())
    empty = parameter_stats(KnowledgeBase(), SPACE)
    assert all(s == 0.5 for s in empty.scores.values())


def test_parse_proposal_json_aliases_pairs_and_junk() -> None:
    cfg = SPACE.default()
    assert parse_proposal('Sure! {"lr": 0.01, "activation": "sin"}', SPACE, cfg) == {
        "lr": 1e-2,
        "activation": "sin",
    }
    assert parse_proposal('{"learning_rate": 0.1}', SPACE, cfg) == {"lr": 3e-2}
    assert parse_proposal("set depth: 5 and width = 8", SPACE, cfg) == {"depth": 5, "width": 8}
    assert parse_proposal('{"activation": "tanh"}', SPACE, cfg) == {}  # unchanged
    assert parse_proposal("no idea", SPACE, cfg) == {}
    with pytest.raises(TypeError, match="text"):
        parse_proposal(None, SPACE, cfg)  # type: ignore[arg-type]


def test_memory_tree_puct_widening_and_backup() -> None:
    stats = ParamStats(
        dict.fromkeys(SPACE.params, 0.5), {p: dict.fromkeys(v, 0.5) for p, v in SPACE.values.items()}
    )
    tree = MemoryTree(SPACE.default(), stats, c=1.0)
    tree.backup(tree.root, 0.5)
    assert tree.select() is tree.root  # one visit allows one child
    a = tree.expand(tree.root, {"lr": 1e-2})
    tree.backup(a, 1.0)
    assert tree.select() is tree.root  # two visits allow two children
    b = tree.expand(tree.root, {"depth": 5})
    tree.backup(b, -1.0)
    assert tree.root.visits == 3 and tree.root.total == pytest.approx(0.5)
    # PUCT against the formula: Q + c * prior/sum(prior) * sqrt(ln(N+1)/n)
    expect = 1.0 + 0.5 * math.sqrt(math.log(4) / 1)
    assert tree.score(tree.root, a) == pytest.approx(expect)
    assert tree.select() is a  # a has the higher score and no children yet
    assert a.path_params() == {"lr"}


def test_agent_search_with_llm_and_scripted_and_loo_guard() -> None:
    ev = Evaluator(PDE_SUITE, SPACE, steps=5)
    kb = build_knowledge_base(["poisson1d", "heat1d"], SPACE, ev, per_pde=2, seed=0)
    target = PDE_SUITE["poisson2d"]
    stats = parameter_stats(kb, SPACE)
    hits = PGKR(PDE_SUITE).retrieve(target, kb, max_l2=100.0)
    llm = ScriptedChatModel(lambda m, c, i: '{"depth": 5}' if "bc_weight" in m[-1]["content"] else "x")
    agent = AgentSearch(
        target, kb, SPACE, stats, hits, budget=3, proposer="llm", rng=np.random.default_rng(0)
    )
    ctrl = AgentSearch(
        target, kb, SPACE, stats, hits, budget=3, proposer="scripted", rng=np.random.default_rng(0)
    )

    def generate(convs: list[list[dict[str, str]]]) -> list[str]:
        return [r[0] for r in llm.generate(convs, GenerationConfig())]

    run_agents([agent, ctrl], ev, generate)
    assert len(agent.trace.results) == 3 and len(ctrl.trace.results) == 3
    assert agent.trace.llm_calls == 2 and ctrl.trace.llm_calls == 0
    assert agent.trace.llm_valid >= 1  # the first {"depth": 5} is new
    assert agent.trace.configs[1]["depth"] == 5
    assert len({config_key(c) for c in agent.trace.configs}) == 3  # no repeats
    assert agent.trace.configs[0] == SPACE.snap_config(hits[0].best.config)  # PGKR warm start
    with pytest.raises(ValueError, match="leave-one-out"):
        AgentSearch(
            PDE_SUITE["heat1d"],
            kb,
            SPACE,
            stats,
            hits,
            budget=2,
            proposer="llm",
            rng=np.random.default_rng(0),
        )
    conv = planner_prompt(target, SPACE, SPACE.default(), hits, stats, [])
    assert conv[-1]["role"] == "user" and "Poisson" in conv[-1]["content"]


def test_random_and_tpe_spend_the_budget_on_distinct_configs() -> None:
    ev = Evaluator(PDE_SUITE, SPACE, steps=3)
    r = random_search("heat1d", SPACE, ev, budget=4, rng=np.random.default_rng(0))
    t = tpe_search("heat1d", SPACE, ev, budget=4, seed=0)
    assert len(r.results) == len(t.results) == 4
    assert len({config_key(c) for c in r.configs}) == 4
    assert all(SPACE.contains(c) for c in t.configs)
    assert r.best_log_l2() == min(x.log_l2 for x in r.results)


def test_check_presets_and_full_scale_one_step() -> None:
    small, full = CHECK.config("small"), CHECK.config("full")
    assert len(small.pdes) >= 6 and small.budget == 5
    assert CHECK.claim.min_seeds >= 3
    space = SearchSpace(max_width=full.max_width)
    cfg = dict(DEFAULT_CONFIG, width=max(space.values["width"]), depth=5, n_domain=512, n_boundary=128)
    for name in full.pdes:
        assert math.isfinite(train_pinn(PDE_SUITE[name], cfg, steps=1, space=space).train_loss)


def test_bad_inputs() -> None:
    net = PINNNet((0.0, 0.0), (1.0, 1.0), width=4, depth=2)
    with pytest.raises(ValueError, match="x"):
        net(torch.rand(3, 3))
    with pytest.raises(ValueError, match="x"):
        net(torch.full((3, 2), float("nan")))
    with pytest.raises(TypeError, match="x"):
        net(torch.rand(3, 2, dtype=torch.float64))
    with pytest.raises(ValueError, match="width"):
        PINNNet((0.0,), (1.0,), width=0, depth=2)
    with pytest.raises(ValueError, match="steps"):
        train_pinn(PDE_SUITE["heat1d"], DEFAULT_CONFIG, steps=0)
    with pytest.raises(ValueError, match="x"):
        burgers_reference(np.array([np.nan]), np.array([0.1]), 0.1)
    with pytest.raises(ValueError, match="a"):
        cosine(np.zeros(0), np.zeros(0))
    with pytest.raises(ValueError, match="k"):
        _kb().topk("heat1d", 0)
    with pytest.raises(ValueError, match="encoder"):
        PGKR(PDE_SUITE, encoder="bert")


def test_tiny_check_runs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from icml25.core.results import ResultStore

    result = CHECK.run("tiny", store=ResultStore(tmp_path))
    assert result.verdict.kind.value == "inconclusive"
    assert result.seeds == (0,)
    reused, computed = result.series["0"]["prompt_tokens_reused_computed"]
    assert computed > 0 and reused > 0  # the planner prompts went through the prefix-reusing backend


# --- issue 39: the release's continuous scoring, a shared knowledge base, the protocol --------------


def test_continuous_score_matches_the_release_formula() -> None:
    from scipy.stats import spearmanr

    from icml25.physics.pinnsagent.knowledge import continuous_score

    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    logs = np.array([-3.0, -2.5, -2.0, -1.0, 0.0, 0.5, 0.7])
    # the release: sorted[:n//3] (2 runs) against sorted[-n//3:] (ceil(7/3) = 3 runs)
    gap = abs(np.mean([0.0, 0.5, 0.7]) - np.mean([-3.0, -2.5]))
    assert continuous_score(x, logs) == pytest.approx(gap * (1 + abs(spearmanr(x, logs)[0])))
    assert continuous_score(x[:5], logs[:5]) == 0.0  # fewer than 6 runs
    assert continuous_score(np.ones(6), logs[:6]) == pytest.approx(
        abs(np.mean(logs[4:6]) - np.mean(logs[:2]))
    )  # constant values: rho counts 0


def test_continuous_parameters_use_the_continuous_formula_by_default() -> None:
    from icml25.physics.pinnsagent.knowledge import CONTINUOUS_PARAMS, exploration_scores

    rng = np.random.default_rng(0)
    rows = []
    for _ in range(30):
        cfg = SPACE.sample(rng)
        # error falls smoothly with the learning rate; the activation adds noise only
        err = 10 ** (-3 * np.log10(cfg["lr"]) / 4 - 4 + 0.3 * rng.standard_normal())
        rows.append(KBRow("heat1d", cfg, float(err)))
    kb = KnowledgeBase(rows)
    official = exploration_scores(rows, SPACE.params, "official")
    categorical = exploration_scores(rows, SPACE.params, "categorical")
    assert official != categorical
    assert {"lr", "width", "depth", "n_domain", "n_boundary"} <= set(CONTINUOUS_PARAMS)
    assert max(official, key=lambda p: official[p]) == "lr"
    assert parameter_stats(kb, SPACE).scores == pytest.approx(official)  # the default is the release's
    assert parameter_stats(kb, SPACE, scoring="categorical").scores == pytest.approx(categorical)
    with pytest.raises(ValueError, match="scoring"):
        parameter_stats(kb, SPACE, scoring="bayes")


def test_exploration_scores_skip_diverged_runs_and_non_numeric_values() -> None:
    from icml25.physics.pinnsagent.knowledge import exploration_scores

    rng = np.random.default_rng(1)
    rows = [KBRow("heat1d", SPACE.sample(rng), float(10 ** rng.uniform(-3, 0))) for _ in range(12)]
    base = exploration_scores(rows, SPACE.params)
    bad = [*rows, KBRow("heat1d", SPACE.sample(rng), math.inf), KBRow("heat1d", SPACE.sample(rng), math.nan)]
    assert exploration_scores(bad, SPACE.params) == pytest.approx(base)
    odd = dict(SPACE.sample(rng), lr="['Burgers1D']")  # a shifted CSV cell, as in the release's data
    assert math.isfinite(exploration_scores([*rows, KBRow("heat1d", odd, 0.1)], SPACE.params)["lr"])
    assert all(v == 1.0 for v in exploration_scores(bad[-2:], SPACE.params).values())


def test_knowledge_base_is_built_once_and_shared_by_the_seeds(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from icml25.core.check import RunContext
    from icml25.core.progress import NullReporter
    from icml25.physics.pinnsagent.check import _knowledge_base

    cfg = dataclasses.replace(CHECK.config("tiny"), model="")
    assert _knowledge_base(cfg) is _knowledge_base(cfg)
    ctx = RunContext(slug=CHECK.slug, scale="tiny", run_dir=tmp_path, reporter=NullReporter())
    a, b = CHECK.run_seed(cfg, 0, ctx), CHECK.run_seed(cfg, 1, ctx)
    assert a.metrics["kb_best"] == b.metrics["kb_best"]
    assert a.metrics["default_config"] == b.metrics["default_config"]
    n = len(cfg.pdes)
    for arm, rows in a.items.items():
        assert rows["best_log_l2"].shape == (n,), arm
    assert "pinnsagent_llm" not in a.metrics  # model="" skips the LLM arm


def test_claim_follows_the_protocol() -> None:
    claim = CHECK.claim_for(CHECK.config("small"))
    assert set(claim.references) == {"default_config", "kb_best"}
    assert {g.name for g in claim.gates_at("small")} == {"search_has_headroom", "llm_replies_parse"}
    head = claim.headline_criterion()
    assert (head.arm, head.other_arm, head.smallest_effect) == ("pinnsagent", "random", 0.2)
    for c in claim.criteria_at("small"):
        assert c.other_arm is None or c.smallest_effect is not None
    llm_gate = next(g for g in claim.gates if g.name == "llm_replies_parse")
    assert llm_gate.guards == ("llm_beats_random",)
    small = CHECK.config("small")
    assert small.kb_per_pde >= 40 and small.scoring == "official"
    assert max(small.space().values["n_domain"]) <= small.max_points


# --- round 5: about ten target PDEs, and planner replies that parse ----------------------------------


def test_poissonnd_source_matches_the_closed_form_and_grid_is_capped() -> None:
    p = PDE_SUITE["poissonnd"]
    assert p.dim == 5 and p.labels["dimension"] == "nd"
    x = p.scale(torch.rand(64, 5, generator=torch.Generator().manual_seed(0)))
    expect = (math.pi**2 / 4) * torch.sin(0.5 * math.pi * x).sum(1)
    assert torch.allclose(p.source(x), expect, atol=1e-4)
    # 41 points per axis would be 41**5 = 116M points: the grid shrinks to at most 41**3 points
    assert p.test_grid(41).shape == (9**5, 5)
    assert PDE_SUITE["poisson2d"].test_grid(41).shape == (41**2, 2)  # low dimension unchanged
    assert PDE_SUITE["heat2d"].test_grid(41).shape == (41**3, 3)


def test_small_preset_has_about_ten_target_pdes_with_close_neighbours() -> None:
    small = CHECK.config("small")
    assert len(small.pdes) >= 10
    assert {"helmholtz2d", "poissonnd", "heat2d"} <= set(small.pdes)
    rows = [KBRow(p, DEFAULT_CONFIG, 0.1) for p in small.pdes]
    pgkr = PGKR(PDE_SUITE)
    for target, neighbour_family in (("heat2d", "heat"), ("poissonnd", "poisson")):
        loo = KnowledgeBase(rows).without(target)
        hit = pgkr.retrieve(PDE_SUITE[target], loo, k=1)[0]
        assert PDE_SUITE[hit.pde].labels["family"] == neighbour_family


def test_planner_prompt_shows_configurations_as_pairs_not_json() -> None:
    """SmolLM2 copied the JSON starting configuration back unchanged: configurations in the prompt
    are name=value pairs, and only the in-context answers are JSON (one changed parameter each)."""
    from icml25.physics.pinnsagent import config_text

    cfg = SPACE.default()
    ev_hist = [(cfg, train_pinn(PDE_SUITE["heat1d"], cfg, steps=1, space=SPACE))]
    stats = parameter_stats(KnowledgeBase(), SPACE)
    conv = planner_prompt(PDE_SUITE["heat1d"], SPACE, cfg, [], stats, ev_hist)
    last = conv[-1]["content"]
    assert '"net"' not in last and "{" not in last
    assert config_text(cfg) in last and "net=fnn" in last and "bc_weight=10" in last
    answers = [m["content"] for m in conv if m["role"] == "assistant"]
    assert len(answers) == 2
    import json

    assert all(len(json.loads(a)) == 1 for a in answers)


def test_close_json_restores_the_stop_brace() -> None:
    from icml25.physics.pinnsagent import close_json

    assert close_json('{"lr": 0.01') == '{"lr": 0.01}'
    assert close_json('{"lr": 0.01}') == '{"lr": 0.01}'
    assert close_json("no object") == "no object"
    cfg = SPACE.default()
    assert parse_proposal(close_json('{"activation": "sin"'), SPACE, cfg) == {"activation": "sin"}
    # a nested opener still yields the usable pair
    assert parse_proposal(close_json('{"net": {"activation": "sin"'), SPACE, cfg) == {"activation": "sin"}
    with pytest.raises(TypeError, match="reply"):
        close_json(None)  # type: ignore[arg-type]


# --- issue 45 (speed): derivatives propagated forward, equal to nested autograd ---------------------

_NETS = (
    ("fnn", "tanh"),
    ("laaf", "sin"),
    ("gaaf", "silu"),
    ("fnn", "gelu"),
    ("laaf", "sigmoid"),
    ("fnn", "elu"),
    ("gaaf", "gaussian"),
    ("fnn", "relu"),
)


@pytest.mark.parametrize("name", sorted({a for _, a in _NETS}))
def test_activation_jet_matches_autograd_derivatives(name: str) -> None:
    from icml25.physics.pinnsagent.pinn import activation, activation_jet

    z = torch.linspace(-3.0, 3.0, 100, dtype=torch.float64).requires_grad_(True)  # no point at 0
    a = activation(name, z)
    (d1,) = torch.autograd.grad(a.sum(), z, create_graph=True)
    d2 = torch.autograd.grad(d1.sum(), z, allow_unused=True)[0] if d1.requires_grad else None
    ja, j1, j2 = activation_jet(name, z.detach())
    assert torch.allclose(ja, a.detach(), rtol=1e-12, atol=1e-12)
    assert torch.allclose(j1, d1.detach(), rtol=1e-9, atol=1e-9)
    want = torch.zeros_like(z) if d2 is None else d2
    assert torch.allclose(torch.zeros_like(z) if j2 is None else j2, want, rtol=1e-9, atol=1e-9)


def _grads(loss: torch.Tensor, params: list[torch.nn.Parameter]) -> list[torch.Tensor]:
    gs = torch.autograd.grad(loss, params, allow_unused=True)
    return [torch.zeros_like(p) if g is None else g for p, g in zip(params, gs, strict=True)]


@pytest.mark.parametrize("name", sorted(PDE_SUITE))
def test_jet_residual_and_its_gradients_match_nested_autograd(name: str) -> None:
    from icml25.physics.pinnsagent.pdes import DiffOperator, grad
    from icml25.physics.pinnsagent.pinn import jet_forward

    pde = PDE_SUITE[name]
    op = pde.operator
    assert isinstance(op, DiffOperator) and 0 <= op.n_second <= pde.dim
    x = pde.scale(torch.rand(48, pde.dim, generator=torch.Generator().manual_seed(1)))
    for k, (net, act) in enumerate(_NETS):
        model = PINNNet(
            pde.lower,
            pde.upper,
            width=8,
            depth=3,
            activation=act,
            net=net,
            initializer="glorot_uniform",
            generator=torch.Generator().manual_seed(k),
        )
        params = list(model.parameters())
        xr = x.clone().requires_grad_(True)
        u_ref = model(xr)
        ref = op(u_ref, xr)
        du_ref = grad(model(xr), xr)
        u, du, d2u = jet_forward(model, x, op.n_second)
        got = op.jet(u, du, d2u)
        scale = float(ref.detach().abs().max()) + 1e-3
        assert torch.allclose(got, ref, rtol=1e-4, atol=1e-5 * scale), (net, act)
        assert torch.allclose(u, u_ref[:, 0], rtol=1e-5, atol=1e-6), (net, act)
        assert torch.allclose(du, du_ref, rtol=1e-4, atol=1e-5 * (float(du_ref.detach().abs().max()) + 1e-3))
        # the parameter gradients of a residual loss are the same (third-order terms included)
        g_ref = _grads(ref.pow(2).mean() + u_ref.pow(2).mean(), params)
        g_jet = _grads(got.pow(2).mean() + u.pow(2).mean(), params)
        top = max(float(g.abs().max()) for g in g_ref) + 1e-6
        for a, b in zip(g_jet, g_ref, strict=True):
            assert torch.allclose(a, b, rtol=1e-3, atol=1e-4 * top), (net, act)


def test_jet_trainer_matches_the_autograd_trainer_and_plain_operators_fall_back() -> None:
    cfg = dict(DEFAULT_CONFIG, width=16, n_domain=128, n_boundary=32, lr=1e-3)
    for name in ("poisson2d", "wave1d", "burgers1d", "poissonnd"):
        a = train_pinn(PDE_SUITE[name], cfg, steps=30, space=SPACE)
        b = train_pinn(PDE_SUITE[name], cfg, steps=30, space=SPACE, derivatives="autograd")
        assert a.l2rel == pytest.approx(b.l2rel, rel=1e-3), name
        assert a.train_loss == pytest.approx(b.train_loss, rel=1e-3), name
    # a PDE whose operator is a plain function trains by nested autograd: the earlier trainer exactly
    pde = PDE_SUITE["poisson2d"]
    plain = dataclasses.replace(pde, operator=pde.operator.fn)  # type: ignore[attr-defined]
    c = train_pinn(plain, cfg, steps=20, space=SPACE)
    d = train_pinn(pde, cfg, steps=20, space=SPACE, derivatives="autograd")
    assert c.l2rel == d.l2rel and c.train_loss == d.train_loss
    with pytest.raises(ValueError, match="derivatives"):
        train_pinn(pde, cfg, steps=1, space=SPACE, derivatives="forward")


def test_jet_trainer_takes_no_nested_autograd_call_per_step(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = torch.autograd.grad

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch.autograd, "grad", counting)
    cfg = dict(DEFAULT_CONFIG, width=8, n_domain=64, n_boundary=16)
    counts = {}
    for mode in ("jet", "autograd"):
        for steps in (2, 6):
            calls.clear()
            train_pinn(PDE_SUITE["heat2d"], cfg, steps=steps, space=SPACE, derivatives=mode)
            counts[mode, steps] = len(calls)
    assert counts["jet", 2] == counts["jet", 6]  # the manufactured source only, once per training
    assert counts["autograd", 6] - counts["autograd", 2] == 4 * 3  # u_x, u_xx, u_yy in every step


def test_derivative_options_are_validated() -> None:
    from icml25.physics.pinnsagent.check import PINNsAgentCheckConfig
    from icml25.physics.pinnsagent.pdes import DiffOperator
    from icml25.physics.pinnsagent.pinn import jet_forward

    assert CHECK.config("small").derivatives == "jet"
    with pytest.raises(ValueError, match="derivatives"):
        PINNsAgentCheckConfig(derivatives="finite")
    with pytest.raises(ValueError, match="derivatives"):
        Evaluator(PDE_SUITE, SPACE, steps=1, derivatives="finite")
    with pytest.raises(ValueError, match="n_second"):
        DiffOperator(PDE_SUITE["heat1d"].operator, lambda u, du, d2u: u, -1)
    with pytest.raises(ValueError, match="n_second"):
        jet_forward(PINNNet((0.0,), (1.0,), width=4, depth=2), torch.rand(3, 1), 2)
    with pytest.raises(ValueError, match="second derivatives"):
        PDE_SUITE["heat1d"].operator.jet(torch.zeros(2), torch.zeros(2, 2), None)  # type: ignore[attr-defined]
