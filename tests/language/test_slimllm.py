"""SlimLLM on a small random Llama with grouped-query attention (no model file needed)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import LlamaForCausalLM

from icml25.language.slimllm import (
    METHODS,
    PruneConfig,
    PrunedAttention,
    calibration_windows,
    decoder_param_count,
    dense_statistics,
    ffn_channel_scores,
    fit_output_regression,
    greedy_head_search,
    head_scores,
    layer_ratios,
    load_pruned,
    pearson_similarity,
    prune_attention_heads,
    prune_model,
    save_pruned,
    save_pruned_model,
)
from icml25.llm import tiny_random_llama


def _model(seed: int = 0, layers: int = 3) -> LlamaForCausalLM:
    return tiny_random_llama(
        vocab_size=64,
        intermediate_size=96,
        num_hidden_layers=layers,
        max_position_embeddings=64,
        seed=seed,
        init_std=0.3,
    )


@pytest.fixture(scope="module")
def model() -> LlamaForCausalLM:
    return _model()


@pytest.fixture(scope="module")
def calib() -> torch.Tensor:
    return torch.randint(0, 64, (4, 24), generator=torch.Generator().manual_seed(1))


X = torch.randint(0, 64, (2, 12), generator=torch.Generator().manual_seed(2))


# -- scores against naive references ------------------------------------------------------------


def _naive_s(a: np.ndarray, b: np.ndarray) -> float:
    total = 0.0
    for j in range(a.shape[1]):
        if a[:, j].std() == 0 or b[:, j].std() == 0:
            continue
        total += abs(np.corrcoef(a[:, j], b[:, j])[0, 1])
    return total


def test_pearson_similarity_matches_numpy() -> None:
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(50, 6, generator=g), torch.randn(50, 6, generator=g)
    a[:, 2] = 1.0  # constant column contributes 0
    assert float(pearson_similarity(a, b)) == pytest.approx(_naive_s(a.numpy(), b.numpy()), rel=1e-9)
    assert float(pearson_similarity(b, b)) == pytest.approx(6.0)
    with pytest.raises(ValueError, match="last two dims"):
        pearson_similarity(a, b[:, :3])


def test_head_scores_match_definition() -> None:
    o = torch.randn(5, 40, 6, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    y = o.sum(0)
    expected = [_naive_s((y - o[i]).numpy(), y.numpy()) for i in range(5)]
    np.testing.assert_allclose(head_scores(o).numpy(), expected, rtol=1e-9)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n_heads=st.integers(3, 7), n_keep=st.integers(1, 2))
def test_greedy_search_never_lowers_s(seed: int, n_heads: int, n_keep: int) -> None:
    o = torch.randn(n_heads, 30, 4, generator=torch.Generator().manual_seed(seed))
    keep = torch.zeros(n_heads, dtype=torch.bool)
    keep[:n_keep] = True
    new_keep, trace = greedy_head_search(o, keep)
    assert int(new_keep.sum()) == n_keep
    assert torch.all(trace[1:] >= trace[:-1])
    assert float(pearson_similarity(o[new_keep].sum(0), o.sum(0))) == pytest.approx(float(trace[-1]))


def test_ffn_channel_scores_match_loop() -> None:
    g = torch.Generator().manual_seed(4)
    n, d, dff = 40, 6, 10
    x, wg, wu, wd = (
        torch.randn(n, d, generator=g),
        torch.randn(dff, d, generator=g),
        torch.randn(dff, d, generator=g),
        torch.randn(d, dff, generator=g),
    )
    a = torch.nn.functional.silu(x @ wg.T) * (x @ wu.T)
    xs, as_, wgs, wus, wds = (t.double().numpy() for t in (x, a, wg, wu, wd))
    nx = np.linalg.norm(xs, axis=0)
    y = as_ @ wds.T
    yc = y - y.mean(0)
    lam, v = np.linalg.eigh(yc.T @ yc)
    w = 1 / (1 + np.exp(-np.abs(lam) / np.abs(lam).mean()))
    expected = []
    for j in range(dff):
        i_g = np.linalg.norm(wgs[j] * nx)
        i_u = np.linalg.norm(wus[j] * nx)
        p = np.abs(wds[:, j] @ v) * w
        expected.append(i_g + i_u + np.linalg.norm(p) * np.linalg.norm(as_[:, j]))
    np.testing.assert_allclose(ffn_channel_scores(x, a, wg, wu, wd).numpy(), expected, rtol=1e-8)
    with pytest.raises(ValueError, match="shapes"):
        ffn_channel_scores(x, a[:, :3], wg, wu, wd)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_regression_matches_polyfit_and_lowers_error(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(30, 4, generator=g)
    y = 0.7 * x + 0.3 * torch.randn(30, 4, generator=g) + 1.0
    a, b = fit_output_regression(x, y)
    for j in range(4):
        slope, intercept = np.polyfit(x[:, j].double().numpy(), y[:, j].double().numpy(), 1)
        assert float(a[j]) == pytest.approx(slope, rel=1e-7, abs=1e-9)
        assert float(b[j]) == pytest.approx(intercept, rel=1e-7, abs=1e-9)
    fitted = x.double() * a + b
    assert float(((fitted - y) ** 2).mean()) <= float(((x - y) ** 2).mean()) + 1e-12


def test_regression_constant_input_and_bad_shapes() -> None:
    a, b = fit_output_regression(torch.ones(10, 2), torch.arange(20.0).view(10, 2))
    assert torch.equal(a, torch.ones(2, dtype=torch.float64))
    with pytest.raises(ValueError, match="x and y"):
        fit_output_regression(torch.ones(10, 2), torch.ones(10, 3))


@settings(max_examples=40, deadline=None)
@given(
    sims=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=12),
    ratio=st.floats(0.05, 0.85),
    frac=st.floats(0.3, 1.0),
    alpha=st.floats(0.0, 30.0),
)
def test_layer_ratios_average_to_target(sims: list[float], ratio: float, frac: float, alpha: float) -> None:
    n_sel = max(1, round(frac * len(sims)))
    r = layer_ratios(torch.tensor(sims), ratio, n_sel, alpha, 0.9)
    selected = r > 0
    assert int(selected.sum()) <= n_sel
    assert float(r.sum()) / n_sel == pytest.approx(ratio, rel=1e-9)
    assert float(r.max()) <= 0.9 + 1e-12


def test_layer_ratios_prune_most_redundant_layers_hardest() -> None:
    r = layer_ratios(torch.tensor([0.5, 0.9, 0.7, 0.95]), 0.3, 3, alpha=10.0)
    assert float(r[0]) == 0.0 and float(r[3]) > float(r[1]) > float(r[2]) > 0
    with pytest.raises(ValueError, match="ratio"):
        layer_ratios(torch.tensor([0.5, 0.9]), 1.0, 2)
    with pytest.raises(ValueError, match="num_pruned_layers"):
        layer_ratios(torch.tensor([0.5, 0.9]), 0.2, 3)


# -- surgery ------------------------------------------------------------------------------------


def test_pruned_attention_keeping_all_heads_is_exact() -> None:
    m = _model(layers=1)
    ref = m(input_ids=X).logits
    prune_attention_heads(m.model.layers[0], torch.ones(4, dtype=torch.bool))
    assert isinstance(m.model.layers[0].self_attn, PrunedAttention)
    torch.testing.assert_close(m(input_ids=X).logits, ref, rtol=1e-5, atol=1e-5)


def test_removing_a_whole_kv_group_removes_its_kv_head() -> None:
    m = _model(layers=1)
    attn = prune_attention_heads(m.model.layers[0], torch.tensor([True, True, False, False]))
    assert attn.kv_index.tolist() == [0, 0]
    assert attn.k_proj.weight.shape == (8, 32) and attn.q_proj.weight.shape == (16, 32)
    attn = prune_attention_heads(_model(layers=1).model.layers[0], torch.tensor([True, False, False, True]))
    assert attn.kv_index.tolist() == [0, 1] and attn.k_proj.weight.shape == (16, 32)
    with pytest.raises(ValueError, match="every attention head"):
        prune_attention_heads(m.model.layers[0], torch.zeros(2, dtype=torch.bool))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("sparsity", [0.2, 0.4])
def test_prune_removes_requested_fraction(
    model: LlamaForCausalLM, calib: torch.Tensor, method: str, sparsity: float
) -> None:
    before = {k: v.clone() for k, v in model.state_dict().items()}
    pruned, report = prune_model(model, calib, PruneConfig(method=method, sparsity=sparsity))  # type: ignore[arg-type]
    assert report.decoder_sparsity == pytest.approx(sparsity, abs=0.03)
    assert decoder_param_count(pruned) == report.decoder_params_after < decoder_param_count(model)
    for k, v in model.state_dict().items():  # the input model is untouched
        assert torch.equal(v, before[k])
    logits = pruned(input_ids=X).logits
    assert logits.shape == (2, 12, 64) and torch.isfinite(logits).all()
    for layer, heads, chans in zip(pruned.model.layers, report.heads_kept, report.channels_kept, strict=True):
        assert layer.self_attn.o_proj.weight.shape[1] == heads * 8
        assert layer.mlp.down_proj.weight.shape[1] == chans == layer.mlp.up_proj.weight.shape[0]


def test_regression_lowers_reconstruction_error(model: LlamaForCausalLM, calib: torch.Tensor) -> None:
    _, report = prune_model(model, calib, PruneConfig(method="magnitude", sparsity=0.4, regression=True))
    pairs = [
        *zip(report.attn_mse_after_regression, report.attn_mse_before_regression, strict=True),
        *zip(report.ffn_mse_after_regression, report.ffn_mse_before_regression, strict=True),
    ]
    assert pairs and all(after <= before * (1 + 1e-9) for after, before in pairs)


def test_slimllm_layer_ratios_and_greedy(model: LlamaForCausalLM, calib: torch.Tensor) -> None:
    stats = dense_statistics(model, calib, taylor=False)
    _, report = prune_model(model, calib, PruneConfig(sparsity=0.3, num_pruned_layers=2), stats=stats)
    ratios = torch.tensor(report.layer_ratios)
    assert int((ratios > 0).sum()) == 2 and float(ratios.sum()) == pytest.approx(0.3 * 3)
    assert all(g >= 0 for g in report.greedy_gain)
    assert all(p.grad is None for p in model.parameters())


def test_save_reload_and_generate(model: LlamaForCausalLM, calib: torch.Tensor, tmp_path: Path) -> None:
    pruned, _ = prune_model(model, calib, PruneConfig(sparsity=0.4))
    path = save_pruned(pruned, tmp_path / "pruned.safetensors")
    assert path.stat().st_size < save_pruned(model, tmp_path / "dense.safetensors").stat().st_size
    again = load_pruned(path)
    torch.testing.assert_close(again(input_ids=X).logits, pruned(input_ids=X).logits)
    out = again.generate(X[:1, :4], max_new_tokens=5, do_sample=False, pad_token_id=0)
    ids = X[:1, :4]
    for _ in range(5):  # generation with the KV cache equals the uncached greedy loop
        ids = torch.cat([ids, again(input_ids=ids).logits[:, -1:].argmax(-1)], dim=1)
    assert torch.equal(out, ids)
    with pytest.raises(ValueError, match="save_pruned"):
        from safetensors.torch import save_file

        save_file({"a": torch.zeros(1)}, str(tmp_path / "other.safetensors"))
        load_pruned(tmp_path / "other.safetensors")


def _word_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["the", "a", "of", "to", "and", "in", "is", "it"]
    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(words)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="[UNK]")


def test_pruned_folder_loads_through_load_causal_lm(
    model: LlamaForCausalLM, calib: torch.Tensor, tmp_path: Path
) -> None:
    from icml25.llm import load_causal_lm

    pruned, _ = prune_model(model, calib, PruneConfig(sparsity=0.4))
    folder = save_pruned_model(pruned, _word_tokenizer(), tmp_path / "pruned")
    again, tokenizer = load_causal_lm(str(folder))
    torch.testing.assert_close(again(input_ids=X).logits, pruned(input_ids=X).logits)
    assert tokenizer("the a of")["input_ids"] == [1, 2, 3]
    with pytest.raises(TypeError, match="tokenizer"):
        save_pruned_model(pruned, None, tmp_path / "no_tokenizer")


def test_calibration_windows_are_seeded_and_shared_out() -> None:
    texts = ["abcdefghij" * 20, "0123456789" * 20]
    a = calibration_windows(texts, None, 5, 8, seed=3)
    assert a.shape == (5, 8) and a.dtype == torch.long
    assert torch.equal(a, calibration_windows(texts, None, 5, 8, seed=3))
    assert all(int(w[0]) >= ord("a") for w in a[:2]) and all(int(w[0]) < ord("a") for w in a[2:])
    with pytest.raises(ValueError, match="window_len"):
        calibration_windows(texts, None, 2, 0)
    with pytest.raises(ValueError, match=r"texts\[1\]"):
        calibration_windows(["x" * 100, "short"], None, 2, 8)


# -- bad input ----------------------------------------------------------------------------------


def test_bad_config_and_input(model: LlamaForCausalLM, calib: torch.Tensor) -> None:
    for bad in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="sparsity"):
            PruneConfig(sparsity=bad)
    with pytest.raises(ValueError, match="method"):
        PruneConfig(method="obs")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="calib"):
        prune_model(model, calib[0], PruneConfig())
    with pytest.raises(ValueError, match="calib"):
        prune_model(model, calib + 100, PruneConfig())


def test_ratio_removing_every_head_fails_cleanly(model: LlamaForCausalLM, calib: torch.Tensor) -> None:
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ValueError, match="all 4 attention heads"):
        prune_model(model, calib, PruneConfig(method="magnitude", sparsity=0.9))
    with pytest.raises(ValueError, match="max_layer_ratio"):
        prune_model(model, calib, PruneConfig(sparsity=0.85, num_pruned_layers=1))
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    assert all(type(layer.self_attn).__name__ == "LlamaAttention" for layer in model.model.layers)


# -- the claim check ----------------------------------------------------------------------------


def test_full_preset_constructs_and_runs_one_shortened_step() -> None:
    from icml25.core.check import RunContext
    from icml25.core.progress import NullReporter
    from icml25.language.slimllm.check import ARM_CONFIGS, CHECK

    full = CHECK.config("full")
    assert full.n_calib == 32 and full.calib_len == 128 and full.sparsities == (0.2, 0.5)
    assert set(full.arms) == set(ARM_CONFIGS)
    short = dataclasses.replace(
        full,
        model="random-tiny",
        sparsities=(0.2,),
        calib_len=16,
        eval_window=32,
        eval_windows=2,
        throughput_reps=1,
        code_chars=1_000_000,
    )
    ctx = RunContext(slug="slimllm", scale="full", run_dir=Path("."), reporter=NullReporter())
    outcome = CHECK.run_seed(short, 0, ctx)
    claim = CHECK.claim_for(full)
    assert set(outcome.metrics) == set(claim.arms)
    assert outcome.metrics["slimllm"]["sparsity_20"] == pytest.approx(0.2, abs=0.05)
    assert all(rows["nll_20"].shape == (4,) for rows in outcome.items.values())


def test_config_errors_name_the_field() -> None:
    from icml25.language.slimllm.check import SlimLLMCheckConfig

    with pytest.raises(ValueError, match=r"PruneConfig\.sparsity must lie in \(0, 1\)"):
        PruneConfig(sparsity=1.0)
    with pytest.raises(ValueError, match=r"PruneConfig\.skip_lowest_frac must lie in \[0, 0\.5\)"):
        PruneConfig(skip_lowest_frac=0.5)
    with pytest.raises(ValueError, match=r"PruneConfig\.num_pruned_layers must be a positive integer"):
        PruneConfig(num_pruned_layers=0)
    with pytest.raises(ValueError, match=r"SlimLLMCheckConfig\.sparsities\[1\] must lie in \(0, 1\)"):
        SlimLLMCheckConfig(sparsities=(0.2, 1.2))
    with pytest.raises(ValueError, match=r"SlimLLMCheckConfig\.sparsities must differ in whole percent"):
        SlimLLMCheckConfig(sparsities=(0.2, 0.201))
    with pytest.raises(ValueError, match=r"SlimLLMCheckConfig\.eval_batch must be a positive integer"):
        SlimLLMCheckConfig(eval_batch=0)
    with pytest.raises(ValueError, match=r"SlimLLMCheckConfig\.eval_windows must be an integer >= 0"):
        SlimLLMCheckConfig(eval_windows=-1)


def test_claim_for_follows_the_sparsities_and_arms() -> None:
    from icml25.language.slimllm.check import CHECK, LOG_EFFECT

    small = CHECK.claim_for(CHECK.config("small"))
    assert small == CHECK.claim and small.headline == "beats_taylor_lw_reg_20"
    paired = {c.name: c for c in small.criteria_at("small")}
    assert set(paired) == {
        "beats_taylor_lw_reg_20",
        "beats_wanda_lw_reg_20",
        "beats_taylor_20",
        "layer_ratio_helps_20",
    }
    assert all(c.smallest_effect == LOG_EFFECT and c.metric == "nll_20" for c in paired.values())
    assert {g.name for g in small.gates_at("small")} == {"pruning_has_room", "comparator_works"}
    assert set(small.references) == {"dense", "random_lw_reg"}
    assert "random_lw_reg" not in small.baselines and "wanda" not in small.baselines  # not run at small
    tiny = {c.name: c for c in CHECK.claim_for(CHECK.config("tiny")).criteria_at("tiny")}
    assert tiny["tiny_budget"].metric == "sparsity_20" and tiny["tiny_budget"].threshold == 0.17
    other = CHECK.claim_for(CHECK.config("small", {"sparsities": (0.3,)}))
    assert other.headline == "beats_taylor_lw_reg_30"
    assert {c.metric for c in other.criteria_at("small")} == {"nll_30"}
    full = CHECK.claim_for(CHECK.config("full"))
    assert "beats_magnitude_50" in {c.name for c in full.criteria_at("full")}


def test_small_check_follows_the_verdict_protocol() -> None:
    """References, a small-scale gate, a paired headline, a smallest effect on every paired criterion."""
    from icml25.language.slimllm.check import CHECK

    claim = CHECK.claim_for(CHECK.config("small"))
    assert claim.references and claim.gates_at("small")
    assert claim.role_of(claim.headline_criterion().name) == "headline"
    assert claim.headline_criterion().other_arm == "taylor_lw_reg"
    assert all(c.smallest_effect for c in claim.criteria_at("small") if c.other_arm is not None)
    assert CHECK.default_seeds["small"] >= claim.min_seeds >= 3


def test_sparsity_override_yields_criteria_the_check_measures() -> None:
    from icml25.core.check import RunContext
    from icml25.core.claims import evaluate_criterion, summarize_metrics
    from icml25.core.progress import NullReporter
    from icml25.language.slimllm.check import CHECK, SMALL_ARMS

    config = CHECK.config("tiny", {"sparsities": (0.3,), "arms": SMALL_ARMS, "eval_windows": 2})
    ctx = RunContext(slug="slimllm", scale="tiny", run_dir=Path("."), reporter=NullReporter())
    outcome = CHECK.run_seed(config, 0, ctx)
    per_seed = {a: dict(m) for a, m in outcome.metrics.items()}
    for arm, rows in outcome.items.items():
        per_seed[arm].update({k: float(np.mean(v)) for k, v in rows.items()})
    metrics = summarize_metrics([per_seed])
    claim = CHECK.claim_for(config)
    results = [evaluate_criterion(c, metrics, items=None) for c in (*claim.criteria, *claim.gates)]
    assert len(results) == 8 and all("not measured" not in r.reason for r in results), [
        r.reason for r in results
    ]
    # the gate metrics are what their names say, from the per-window losses
    dense, rand, base = (outcome.items[a]["nll_30"] for a in ("dense", "random_lw_reg", "taylor_lw_reg"))
    gap = float((rand - dense).mean())
    assert outcome.metrics["random_lw_reg"]["gap_to_dense_30"] == pytest.approx(gap)
    closed = outcome.metrics["taylor_lw_reg"]["gap_closed_30"]
    assert closed == (pytest.approx(1 - float((base - dense).mean()) / gap) if gap > 0 else 0.0)
    # every arm is scored on the same windows: 2 English then 2 Python
    assert {rows["nll_30"].shape for rows in outcome.items.values()} == {(4,)}


def test_check_config_refuses_arms_it_cannot_judge() -> None:
    from icml25.language.slimllm.check import SlimLLMCheckConfig

    with pytest.raises(ValueError, match="unknown arms"):
        SlimLLMCheckConfig(arms=("slimllm", "taylor_lw_reg", "random_lw_reg", "obs"))
    with pytest.raises(ValueError, match=r"must include \['random_lw_reg'\]"):
        SlimLLMCheckConfig(arms=("slimllm", "taylor_lw_reg"))


# -- the same layer ratio for every method, the random floor, per-window evaluation --------------


def test_baselines_get_slimllms_layer_ratios_when_offered(
    model: LlamaForCausalLM, calib: torch.Tensor
) -> None:
    stats = dense_statistics(model, calib, taylor=True)
    cfg = PruneConfig(sparsity=0.3, num_pruned_layers=2)
    _, ours = prune_model(model, calib, cfg, stats=stats)
    for method in ("taylor", "wanda", "magnitude", "random"):
        offered = dataclasses.replace(cfg, method=method, layerwise=True, regression=True)
        _, report = prune_model(model, calib, offered, stats=stats)  # type: ignore[arg-type]
        assert report.layer_ratios == ours.layer_ratios
        assert report.decoder_sparsity == pytest.approx(ours.decoder_sparsity, abs=0.02)
        assert report.ffn_mse_after_regression  # the regression ran
        _, uniform = prune_model(model, calib, dataclasses.replace(cfg, method=method), stats=stats)  # type: ignore[arg-type]
        assert (
            len(set(uniform.layer_ratios)) == 1
        )  # the default stays the uniform ratio they are defined with


def test_random_pruning_is_seeded(model: LlamaForCausalLM, calib: torch.Tensor) -> None:
    def kept(seed: int) -> list[torch.Tensor]:
        pruned, _ = prune_model(model, calib, PruneConfig(method="random", sparsity=0.4, seed=seed))
        return [layer.mlp.gate_proj.weight for layer in pruned.model.layers]

    a, b, c = kept(0), kept(0), kept(1)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(a, c, strict=True))


def test_draw_windows_are_disjoint_seeded_chunks() -> None:
    from icml25.language.slimllm.evaluation import draw_windows

    ids = torch.arange(1000)
    w = draw_windows(ids, 50, 6, seed=3)
    assert w.shape == (6, 50) and torch.equal(w, draw_windows(ids, 50, 6, seed=3))
    assert torch.all(w[:, 0] % 50 == 0) and torch.all(w[:, 1:] - w[:, :-1] == 1)  # whole aligned chunks
    assert len(set(w[:, 0].tolist())) == 6 and torch.all(w[1:, 0] > w[:-1, 0])  # distinct, in text order
    assert not torch.equal(w, draw_windows(ids, 50, 6, seed=4))
    with pytest.raises(ValueError, match="fewer than n_windows"):
        draw_windows(ids, 50, 21, seed=0)


def test_window_nll_matches_a_direct_loss(model: LlamaForCausalLM) -> None:
    from icml25.language.slimllm.evaluation import window_nll

    w = torch.randint(0, 64, (5, 10), generator=torch.Generator().manual_seed(7))
    got = window_nll(model, w, batch_size=2)
    with torch.no_grad():
        for i in range(5):
            loss = model(input_ids=w[i : i + 1], labels=w[i : i + 1]).loss  # HF: mean over tokens 2..T
            assert float(got[i]) == pytest.approx(float(loss), rel=1e-5)
    torch.testing.assert_close(window_nll(model, w, batch_size=5), got)
    with pytest.raises(ValueError, match="windows must be"):
        window_nll(model, w[:, :1])


def test_check_refuses_an_endpoint_with_a_reason() -> None:
    from icml25.language.slimllm.check import CHECK

    with pytest.raises(ValueError, match="needs the weights"):
        CHECK.config("tiny", {"model": "openai:gpt-x"})


def test_save_pretrained_loads_back_with_transformers(
    model: LlamaForCausalLM, calib: torch.Tensor, tmp_path: Path
) -> None:
    """A layer-wise pruned model (each layer its own sizes) round-trips through transformers."""
    import json

    from transformers import AutoConfig, AutoModelForCausalLM

    from icml25.language.slimllm.hf import PrunedLlamaForCausalLM

    pruned, report = prune_model(model, calib, PruneConfig(sparsity=0.3, num_pruned_layers=2))
    assert isinstance(pruned, PrunedLlamaForCausalLM) and type(model) is LlamaForCausalLM
    assert len(set(report.channels_kept)) > 1  # the layers really differ in size
    pruned.save_pretrained(tmp_path / "pruned")
    saved = json.loads((tmp_path / "pruned" / "config.json").read_text())
    assert saved["model_type"] == "icml25_pruned_llama"
    assert [layer["d_ff"] for layer in saved["pruned_layers"]] == report.channels_kept
    assert type(AutoConfig.from_pretrained(tmp_path / "pruned")).__name__ == "PrunedLlamaConfig"
    again = AutoModelForCausalLM.from_pretrained(tmp_path / "pruned")
    assert isinstance(again, PrunedLlamaForCausalLM)
    torch.testing.assert_close(again(input_ids=X).logits, pruned(input_ids=X).logits)
    out = again.generate(X[:1, :4], max_new_tokens=4, do_sample=False, pad_token_id=0)
    assert torch.equal(out, pruned.generate(X[:1, :4], max_new_tokens=4, do_sample=False, pad_token_id=0))
    reloaded = load_pruned(save_pruned(again, tmp_path / "one_file.safetensors"))
    assert isinstance(reloaded, PrunedLlamaForCausalLM)  # the one-file format also saves_pretrained
    torch.testing.assert_close(reloaded(input_ids=X).logits, pruned(input_ids=X).logits)


def test_other_architectures_are_refused_in_one_line(calib: torch.Tensor) -> None:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    qwen = Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=64,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=64,
        )
    )
    with pytest.raises(ValueError, match="Llama-architecture.*got model_type 'qwen2'"):
        prune_model(qwen, calib, PruneConfig(sparsity=0.2))
    with pytest.raises(ValueError, match="model_type 'qwen2'"):
        dense_statistics(qwen, calib)
    from transformers import MistralConfig, MistralForCausalLM

    mistral = MistralForCausalLM(
        MistralConfig(
            vocab_size=64,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=64,
        )
    )
    with pytest.raises(ValueError, match="Llama-architecture.*got model_type 'mistral'"):
        prune_model(mistral, calib, PruneConfig(sparsity=0.2))


def _naive_greedy(o: torch.Tensor, keep: torch.Tensor, order: list[int]) -> tuple[torch.Tensor, float]:
    """Algorithm 1 with every swap scored by a full pass over the tokens (the pre-speed-up code)."""
    keep = keep.clone()
    y = o.sum(0)
    best = float(pearson_similarity(o[keep].sum(0), y))
    for p in order:
        if keep[p]:
            continue
        kept = torch.nonzero(keep).flatten()
        trial = o[keep].sum(0).unsqueeze(0) - o[kept] + o[p].unsqueeze(0)
        values = pearson_similarity(trial, y)
        j = int(values.argmax())
        if float(values[j]) > best:
            best = float(values[j])
            keep[kept[j]] = False
            keep[p] = True
    return keep, best


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n_heads=st.integers(3, 9), n_keep=st.integers(1, 6))
def test_greedy_search_from_moments_matches_the_token_pass(seed: int, n_heads: int, n_keep: int) -> None:
    g = torch.Generator().manual_seed(seed)
    o = torch.randn(n_heads, 40, 5, generator=g, dtype=torch.float64) * torch.rand(n_heads, 1, 1, generator=g)
    keep = torch.zeros(n_heads, dtype=torch.bool)
    keep[: min(n_keep, n_heads - 1)] = True
    order = torch.randperm(n_heads, generator=g)
    fast, trace = greedy_head_search(o, keep, order=order)
    slow, best = _naive_greedy(o, keep, order.tolist())
    assert torch.equal(fast, slow)
    assert float(trace[-1]) == pytest.approx(best, rel=1e-9)


def test_head_scores_handle_constant_columns() -> None:
    o = torch.randn(4, 30, 3, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    o[:, :, 1] = 2.0  # every head constant in column 1: it contributes 0, as in pearson_similarity
    y = o.sum(0)
    expected = [float(pearson_similarity(y - o[i], y)) for i in range(4)]
    np.testing.assert_allclose(head_scores(o).numpy(), expected, rtol=1e-9)
