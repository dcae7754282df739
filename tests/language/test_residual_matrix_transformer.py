"""Tests of the Residual Matrix Transformer, its GPT twin, the exact parameter/FLOP counts, the
byte-level training helpers and the claim-check configuration."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from icml25.language.residual_matrix_transformer import (
    GPT,
    GPTConfig,
    LMTrainConfig,
    ResidualMatrixTransformer,
    RMTConfig,
    bits_per_byte,
    byte_tensor,
    eval_windows,
    flop_count,
    flops_per_token,
    flops_to_reach,
    lecun_normal_,
    lm_loss,
    lm_param_groups,
    measure_flops,
    paper_param_count,
    param_count,
    read,
    train_lm,
    value_at_flops,
    write,
)
from icml25.language.residual_matrix_transformer.check import CHECK, RMTCheckConfig
from icml25.nn.params import count_parameters

TINY = RMTConfig(vocab_size=11, n_ctx=8, n_layers=2, d_key=5, d_value=3, rank=2, d_ff=7)


def _perturb(model: nn.Module, seed: int = 0, scale: float = 0.3) -> nn.Module:
    """Give every parameter (zero-initialised ones included) random values so every path is active."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(scale * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    return model


def _tokens(cfg: RMTConfig | GPTConfig, b: int = 2, n: int | None = None, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, cfg.vocab_size, (b, n or cfg.n_ctx), generator=gen)


# ----------------------------------------------------------------------------------------------
# Storage and retrieval
# ----------------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    rank=st.integers(1, 6), extra=st.integers(0, 6), d_value=st.integers(1, 6), seed=st.integers(0, 10_000)
)
def test_write_then_read_with_orthonormal_keys_recovers_the_data(rank, extra, d_value, seed) -> None:
    gen = torch.Generator().manual_seed(seed)
    d_key = rank + extra
    q, _ = torch.linalg.qr(torch.randn(d_key, rank, generator=gen, dtype=torch.float64))
    keys = q.t()  # (rank, d_key), orthonormal rows
    data = torch.randn(2, 3, rank, d_value, generator=gen, dtype=torch.float64)
    state = write(None, keys, data)
    assert state.shape == (2, 3, d_key, d_value)
    torch.testing.assert_close(read(state, keys), data, atol=1e-12, rtol=0)


def test_write_is_a_sum_of_outer_products_and_adds_to_the_state() -> None:
    gen = torch.Generator().manual_seed(1)
    keys, data = torch.randn(3, 4, generator=gen), torch.randn(3, 2, generator=gen)
    expected = sum(torch.outer(keys[h], data[h]) for h in range(3))
    torch.testing.assert_close(write(None, keys, data), expected)
    base = torch.randn(4, 2, generator=gen)
    torch.testing.assert_close(write(base, keys, data), base + expected)
    torch.testing.assert_close(read(expected, keys)[1], keys[1] @ expected)  # Eq. 13: r ·₁ X = rᵀX


def test_read_write_reject_mismatched_shapes() -> None:
    with pytest.raises(ValueError, match="d_key"):
        read(torch.zeros(2, 4, 3), torch.zeros(2, 5))
    with pytest.raises(ValueError, match="rank"):
        write(None, torch.zeros(2, 4), torch.zeros(3, 3))
    with pytest.raises(ValueError, match="does not match"):
        write(torch.zeros(5, 3), torch.zeros(2, 4), torch.zeros(2, 3))


# ----------------------------------------------------------------------------------------------
# The models
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pos", ["learned", "alibi"])
@pytest.mark.parametrize("norm", ["layer", "rms"])
def test_shapes_dtypes_and_zero_init_logits(pos, norm) -> None:
    rcfg = dataclasses.replace(TINY, pos=pos, norm=norm)
    for model in (ResidualMatrixTransformer(rcfg), GPT(GPTConfig.twin_of(rcfg))):
        x = _tokens(rcfg, n=5)
        logits = model(x)
        assert logits.shape == (2, 5, rcfg.vocab_size) and logits.dtype == torch.float32
        assert logits.abs().max() == 0  # zero-initialised unembedding: uniform prediction at start
    rmt = ResidualMatrixTransformer(rcfg)
    assert rmt.embed(x).shape == (2, 5, rcfg.d_key, rcfg.d_value)
    assert rmt.unembed(rmt.embed(x)).shape == (2, 5, rcfg.vocab_size)


def _naive_rmt(model: ResidualMatrixTransformer, tokens: torch.Tensor) -> torch.Tensor:
    """Eq. (18)-(27) head by head in the paper's (k, v) layout, reading the model's parameters."""
    cfg = model.cfg
    r, n = cfg.rank, tokens.shape[1]
    X = torch.zeros(tokens.shape[0], n, cfg.d_key, cfg.d_value, dtype=torch.float64)
    for h in range(r):  # Eq. 18-19
        X = X + torch.einsum("k,bnv->bnkv", model.emb_write[h], model.tok_emb[tokens][..., h])
        X = X + torch.einsum("k,nv->nkv", model.emb_write[r + h], model.pos_emb[:n, :, h])[None]

    def norm(module: nn.Module, X: torch.Tensor) -> torch.Tensor:  # the norm acts on the (v, k) layout
        return module(X.transpose(-1, -2)).transpose(-1, -2)

    causal = torch.ones(n, n, dtype=torch.bool).tril()
    for i, layer in enumerate(model.layers):
        Xn = norm(layer.attn.norm, X)
        heads = []
        for h in range(r):  # Eq. 21-22
            q = torch.einsum("k,bnkv->bnv", layer.attn.qkv_read[h], Xn)
            k = torch.einsum("k,bnkv->bnv", layer.attn.qkv_read[r + h], Xn)
            v = torch.einsum("k,bnkv->bnv", layer.attn.qkv_read[2 * r + h], Xn)
            s = q @ k.transpose(1, 2) / math.sqrt(cfg.d_value) / (i + 1)
            heads.append(s.masked_fill(~causal, float("-inf")).softmax(-1) @ v)
        X = X + sum(
            torch.einsum("k,bnv->bnkv", layer.attn.out_write[h], heads[h]) for h in range(r)
        )  # Eq. 20
        Xn = norm(layer.ff.norm, X)
        reads = torch.stack([torch.einsum("k,bnkv->bnv", layer.ff.in_read[h], Xn) for h in range(r)], -1)
        approximate = "tanh" if cfg.activation == "gelu_tanh" else "none"
        out = layer.ff.fc2(F.gelu(layer.ff.fc1(reads.flatten(-2)), approximate=approximate))  # Eq. 24-25
        out = out.unflatten(-1, (cfg.d_value, r))
        X = X + sum(
            torch.einsum("k,bnv->bnkv", layer.ff.out_write[h], out[..., h]) for h in range(r)
        )  # Eq. 23
    Xn = norm(model.norm, X)
    reads = torch.stack([torch.einsum("k,bnkv->bnv", model.unembed_read[h], Xn) for h in range(r)], -1)
    return model.unembedding(reads.flatten(-2))  # Eq. 26-27


@pytest.mark.parametrize("activation", ["gelu_tanh", "gelu"])
def test_rmt_matches_a_head_by_head_reference(activation: str) -> None:
    model = _perturb(ResidualMatrixTransformer(dataclasses.replace(TINY, activation=activation)).double())
    x = _tokens(TINY, n=6)
    with torch.no_grad():
        torch.testing.assert_close(model(x), _naive_rmt(model, x))


def test_gelu_is_the_released_codes_tanh_approximation_by_default() -> None:
    """The released code calls ``hax.nn.gelu`` (tanh approximation); exact GELU is an opt-in."""
    assert RMTConfig().activation == "gelu_tanh" and GPTConfig().activation == "gelu_tanh"
    assert GPTConfig.twin_of(dataclasses.replace(TINY, activation="gelu")).activation == "gelu"
    gen = torch.Generator().manual_seed(0)
    h = torch.randn(3, TINY.rank * TINY.d_value, generator=gen)
    outputs = {}
    for act in ("gelu_tanh", "gelu"):
        rmt = _perturb(ResidualMatrixTransformer(dataclasses.replace(TINY, activation=act)))
        ff = rmt.layers[0].ff
        with torch.no_grad():
            pre = ff.fc1(h)
            tanh_gelu = 0.5 * pre * (1 + torch.tanh(math.sqrt(2 / math.pi) * (pre + 0.044715 * pre**3)))
            expected = tanh_gelu if act == "gelu_tanh" else F.gelu(pre)
            # the core of Eq. 24, through the module's own activation
            got = ff.fc2(F.gelu(pre, approximate="tanh" if act == "gelu_tanh" else "none"))
            torch.testing.assert_close(got, ff.fc2(expected), atol=1e-6, rtol=1e-5)
            outputs[act] = rmt(_tokens(TINY, n=6))
        gpt = GPT(GPTConfig.twin_of(dataclasses.replace(TINY, activation=act)))
        mlp_act = gpt.blocks[0].mlp.act
        assert isinstance(mlp_act, nn.GELU) and mlp_act.approximate == (
            "tanh" if act == "gelu_tanh" else "none"
        )
    assert not torch.allclose(outputs["gelu_tanh"], outputs["gelu"], atol=1e-7)  # same weights, other GELU
    with pytest.raises(ValueError, match="activation"):
        RMTConfig(activation="relu")  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["rmt", "gpt"])
@pytest.mark.parametrize("pos", ["learned", "alibi"])
def test_future_tokens_do_not_change_past_logits(kind, pos) -> None:
    cfg = dataclasses.replace(TINY, pos=pos)
    model = _perturb(ResidualMatrixTransformer(cfg) if kind == "rmt" else GPT(GPTConfig.twin_of(cfg)))
    x = _tokens(cfg)
    y = x.clone()
    y[:, 5:] = (y[:, 5:] + 1) % cfg.vocab_size
    with torch.no_grad():
        a, b = model(x), model(y)
    assert torch.equal(a[:, :5], b[:, :5])
    assert not torch.allclose(a[:, 5:], b[:, 5:])


def test_gradients_reach_every_parameter() -> None:
    for model in (ResidualMatrixTransformer(TINY), GPT(GPTConfig.twin_of(TINY))):
        _perturb(model)
        x = _tokens(TINY)
        lm_loss(model(x[:, :-1]), x[:, 1:], 1e-4)[0].backward()
        for name, p in model.named_parameters():
            assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().max() > 0, name


def test_initialisation_follows_the_recipe() -> None:
    cfg = RMTConfig(vocab_size=50, n_ctx=16, n_layers=3, d_key=64, d_value=8, rank=32, d_ff=64, init_std=0.5)
    rmt = ResidualMatrixTransformer(cfg)
    layer = rmt.layers[0]
    assert layer.attn.qkv_read[: cfg.rank].abs().max() == 0  # zero-initialised query read vectors
    assert layer.attn.qkv_read[cfg.rank :].abs().max() > 0
    assert rmt.unembedding.weight.abs().max() == 0
    # fan-in rule: retrievals N(0, σ²/D_k), stores N(0, σ²/R) scaled by 1/√(2L) on the residual branch
    assert layer.attn.qkv_read[cfg.rank :].std().item() == pytest.approx(0.5 / 8, rel=0.1)
    assert layer.ff.out_write.std().item() == pytest.approx(0.5 / math.sqrt(32) / math.sqrt(6), rel=0.1)
    gpt = GPT(GPTConfig.twin_of(cfg))
    d = gpt.cfg.d_model
    assert gpt.blocks[0].attn.qkv.weight[:d].abs().max() == 0
    assert gpt.blocks[0].attn.qkv.weight[d:].abs().max() > 0
    names = [n for n, _ in gpt.named_parameters()]
    assert not any(n.endswith(".bias") and "norm" not in n for n in names)  # no biases outside norms


def test_variance_preserving_store_and_retrieve_at_sigma_one() -> None:
    """App. B: Var(store) = R σ_w² Var(x), Var(retrieve) = D_k σ_w² Var(X); σ_w² = 1/fan_in keeps both."""
    gen = torch.Generator().manual_seed(0)
    rank, d_key = 64, 128
    torch.manual_seed(0)
    w_store, w_read = torch.empty(rank, d_key), torch.empty(rank, d_key)
    lecun_normal_(w_store, rank, 1.0)
    lecun_normal_(w_read, d_key, 1.0)
    data = torch.randn(256, rank, 16, generator=gen)
    stored = write(None, w_store, data)
    assert stored.var().item() == pytest.approx(1.0, rel=0.1)
    state = torch.randn(256, d_key, 16, generator=gen)
    assert read(state, w_read).var().item() == pytest.approx(1.0, rel=0.1)


def test_inverse_layer_scaling_changes_the_model() -> None:
    for kind in ("rmt", "gpt"):
        outs = []
        for flag in (True, False):
            cfg = dataclasses.replace(TINY, inverse_layer_scaling=flag)
            torch.manual_seed(0)
            model = ResidualMatrixTransformer(cfg) if kind == "rmt" else GPT(GPTConfig.twin_of(cfg))
            with torch.no_grad():
                outs.append(_perturb(model)(_tokens(cfg)))
        assert not torch.allclose(*outs), kind


def test_bad_inputs_raise_clear_errors() -> None:
    with pytest.raises(ValueError, match="d_key"):
        RMTConfig(d_key=0)
    with pytest.raises(ValueError, match="norm"):
        RMTConfig(norm="batch")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pos"):
        GPTConfig(pos="rope")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="divisible"):
        GPTConfig(d_model=10, n_heads=3)
    with pytest.raises(ValueError, match="init_std"):
        RMTConfig(init_std=float("nan"))
    model = ResidualMatrixTransformer(TINY)
    with pytest.raises(TypeError, match="integer"):
        model(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="n_ctx"):
        model(torch.zeros(1, TINY.n_ctx + 1, dtype=torch.long))
    with pytest.raises(ValueError, match="token ids"):
        model(torch.full((1, 3), TINY.vocab_size))
    with pytest.raises(ValueError, match="batch, seq"):
        GPT(GPTConfig.twin_of(TINY))(torch.zeros(3, dtype=torch.long))
    with pytest.raises(TypeError, match="RMTConfig"):
        ResidualMatrixTransformer(GPTConfig())  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------
# Parameter and FLOP counts
# ----------------------------------------------------------------------------------------------

_dims = st.integers(1, 6)


@settings(max_examples=25, deadline=None)
@given(
    L=_dims,
    k=_dims,
    v=_dims,
    r=_dims,
    f=_dims,
    pos=st.sampled_from(["learned", "alibi"]),
    norm=st.sampled_from(["layer", "rms"]),
)
def test_closed_form_parameter_counts_match_count_parameters(L, k, v, r, f, pos, norm) -> None:  # noqa: N803
    rcfg = RMTConfig(
        vocab_size=13, n_ctx=9, n_layers=L, d_key=k, d_value=v, rank=r, d_ff=f, pos=pos, norm=norm
    )
    gcfg = GPTConfig.twin_of(rcfg)
    for cfg, cls in ((rcfg, ResidualMatrixTransformer), (gcfg, GPT)):
        with torch.device("meta"):
            model = cls(cfg)  # type: ignore[arg-type]
        assert count_parameters(model) == param_count(cfg)["total"]


def test_paper_table7_parameter_formulas() -> None:
    r = RMTConfig(vocab_size=13, n_ctx=9, n_layers=3, d_key=4, d_value=5, rank=2, d_ff=6)
    c = param_count(r)
    norms = (2 * 3 + 1) * 2 * 4 * 5  # 2L+1 LayerNorms over D_k·D_v with weight and bias
    # Table 7 leaves out the norms, the unembedding's read vectors and one vocabulary matrix
    assert paper_param_count(r) == c["total"] - norms - 2 * 4 - 2 * 5 * 13
    g = GPTConfig.twin_of(r)
    c = param_count(g)
    assert paper_param_count(g) == c["total"] - (2 * 3 + 1) * 2 * 10 - 9 * 10 - 10 * 13
    # the released GPT-2-small configs: 134M RMT (Table 10) and its ~160M transformer twin
    assert param_count(RMTConfig())["total"] == pytest.approx(134e6, rel=0.01)
    assert param_count(GPTConfig())["total"] == pytest.approx(160e6, rel=0.02)
    # the RMT's non-embedding parameters are about a third fewer (Sec. 4.2)
    ratio = param_count(RMTConfig())["non_embedding"] / param_count(GPTConfig())["non_embedding"]
    assert ratio == pytest.approx(2 / 3, abs=0.02)


def test_flop_count_matches_a_hand_count() -> None:
    # V=5, N=3, L=1, D_k=2, D_v=3, R=2, D_FF=4; one store/retrieval of R vectors: 2·N·D_k·D_v·R = 72
    r = RMTConfig(vocab_size=5, n_ctx=3, n_layers=1, d_key=2, d_value=3, rank=2, d_ff=4)
    fc = flop_count(r)
    assert dict(fc.matmul) == {
        "embed_store": 144,  # token and position vectors: 2 stores
        "attn_read": 216,  # Q, K, V: 3 retrievals
        "attn_scores": 108,  # 2·R·N²·D_v
        "attn_values": 108,
        "attn_store": 72,
        "ff_read": 72,
        "ff_core": 288,  # 2 × 2·N·(R·D_v)·D_FF
        "ff_store": 72,
        "unembed_read": 72,
        "unembed": 180,  # 2·N·(R·D_v)·V
    }
    assert fc.forward == 1332 and fc.training == 3 * 1332 and fc.softmax == 3 * 2 * 9
    assert flops_per_token(r) == 1332.0 and flops_per_token(r, training=False) == 444.0
    # the twin: D=6, H=2, D_h=3
    g = flop_count(GPTConfig.twin_of(r))
    assert dict(g.matmul) == {
        "attn_qkv": 648,  # 2·N·D·3D
        "attn_scores": 108,
        "attn_values": 108,
        "attn_out": 216,  # 2·N·D²
        "ff_core": 288,
        "unembed": 180,
    }
    with pytest.raises(ValueError, match="seq_len"):
        flop_count(r, 0)


@pytest.mark.parametrize("pos", ["learned", "alibi"])
def test_flop_count_equals_flop_counter_mode(pos) -> None:
    rcfg = dataclasses.replace(TINY, pos=pos)
    for cfg, cls in ((rcfg, ResidualMatrixTransformer), (GPTConfig.twin_of(rcfg), GPT)):
        model = cls(cfg)  # type: ignore[arg-type]
        for n in (1, 5, cfg.n_ctx):
            measured = measure_flops(model, _tokens(cfg, b=3, n=n))
            fc = flop_count(cfg, n)
            assert measured["forward"] == 3 * fc.forward
            assert measured["backward"] == 3 * fc.backward
            assert measured["total"] == 3 * fc.training


def test_growing_dk_costs_little_at_paper_scale() -> None:
    """Sec. 3.1: at GPT-2 scale a 4x residual stream costs about 1% more parameters and FLOPs."""
    small, big = RMTConfig(d_key=16), RMTConfig(d_key=64)
    assert param_count(big)["total"] / param_count(small)["total"] - 1 < 0.01
    assert flops_per_token(big) / flops_per_token(small) - 1 < 0.1
    gpt_small, gpt_big = GPTConfig(d_model=768), GPTConfig(d_model=3072, n_heads=48)
    assert param_count(gpt_big)["total"] / param_count(gpt_small)["total"] > 3


# ----------------------------------------------------------------------------------------------
# Training helpers
# ----------------------------------------------------------------------------------------------


def test_lm_loss_is_cross_entropy_plus_z_loss() -> None:
    gen = torch.Generator().manual_seed(0)
    logits, targets = torch.randn(2, 4, 7, generator=gen), torch.randint(0, 7, (2, 4), generator=gen)
    ce = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    obj, ce2 = lm_loss(logits, targets, 0.0)
    torch.testing.assert_close(obj, ce) and torch.testing.assert_close(ce2, ce)
    obj, ce2 = lm_loss(logits, targets, 0.5)
    torch.testing.assert_close(ce2, ce)
    torch.testing.assert_close(obj, ce + 0.5 * torch.logsumexp(logits, -1).pow(2).mean())
    with pytest.raises(ValueError, match="targets"):
        lm_loss(logits, targets[:, :2])


@pytest.mark.parametrize("decay", ["independent", "lr_coupled"])
def test_weight_decay_step_matches_the_released_optax_chain(decay: str) -> None:
    """One AdamW step with zero gradients at the peak rate only decays the weights. The released chain
    (``add_decayed_weights(1e-4)`` then the schedule, peak multiplier 1) shrinks them by 1e-4 whatever
    the rate; PyTorch's coupled convention by ``lr × 1e-4`` (100x weaker at lr = 1e-2)."""
    from icml25.language.residual_matrix_transformer import lm_optimizer

    model = _perturb(ResidualMatrixTransformer(TINY))
    cfg = LMTrainConfig(lr=1e-2, weight_decay=1e-4, decay=decay)  # type: ignore[arg-type]
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = lm_optimizer(model, cfg)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    shrink = 1e-4 if decay == "independent" else 1e-2 * 1e-4
    fc1 = dict(model.named_parameters())["layers.0.ff.fc1.weight"]
    torch.testing.assert_close(fc1, before["layers.0.ff.fc1.weight"] * (1 - shrink), atol=0, rtol=1e-6)
    torch.testing.assert_close(model.unembedding.weight, before["unembedding.weight"])  # never decayed
    with pytest.raises(ValueError, match="decay"):
        LMTrainConfig(decay="l2")  # type: ignore[arg-type]


def test_weight_decay_skips_norms_embeddings_and_unembedding() -> None:
    for model in (ResidualMatrixTransformer(TINY), GPT(GPTConfig.twin_of(TINY))):
        decay, no_decay = lm_param_groups(model, 1e-4)
        decayed = {id(p) for p in decay["params"]}
        for name, p in model.named_parameters():
            skip = name.startswith(("tok_emb", "pos_emb", "unembedding.")) or "norm" in name
            assert (id(p) not in decayed) == skip, name
        assert decay["weight_decay"] == 1e-4 and no_decay["weight_decay"] == 0.0


def test_curve_interpolation() -> None:
    flops, bpb = [1e3, 1e4, 1e5], [5.0, 4.0, 3.0]
    assert value_at_flops(flops, bpb, 1e4) == pytest.approx(4.0)
    assert value_at_flops(flops, bpb, math.sqrt(1e3 * 1e4)) == pytest.approx(4.5)  # linear in log-FLOPs
    assert value_at_flops(flops, bpb, 1e6) == 3.0 and math.isnan(value_at_flops(flops, bpb, 10.0))
    assert flops_to_reach(flops, bpb, 3.5) == pytest.approx(math.sqrt(1e4 * 1e5))
    assert flops_to_reach(flops, bpb, 6.0) == 1e3
    assert math.isnan(flops_to_reach(flops, bpb, 2.0))
    with pytest.raises(ValueError, match="increasing"):
        flops_to_reach([2.0, 1.0], [1.0, 0.5], 0.7)
    with pytest.raises(ValueError, match="matching"):
        value_at_flops([1.0], [], 1.0)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.5, 8.0), min_size=2, max_size=8), st.floats(0.5, 8.0))
def test_flops_to_reach_lands_where_the_curve_meets_the_target(values, target) -> None:
    flops = [10.0 ** (i + 1) for i in range(len(values))]
    x = flops_to_reach(flops, values, target)
    if math.isnan(x):
        assert min(values) > target
    else:
        assert value_at_flops(flops, values, x) <= target + 1e-9 or x == flops[0]


def test_byte_helpers_and_their_errors() -> None:
    t = byte_tensor("héllo")
    assert t.dtype == torch.uint8 and t.tolist() == list("héllo".encode())
    assert byte_tensor("abcdef", 3).tolist() == [97, 98, 99]
    with pytest.raises(ValueError, match="empty"):
        byte_tensor("")
    w = eval_windows(torch.arange(20), 4, 8)
    assert w.shape == (2, 5) and w[1, 0] == 4
    with pytest.raises(ValueError, match="window"):
        eval_windows(torch.arange(3), 4, 8)
    with pytest.raises(ValueError, match="steps"):
        LMTrainConfig(steps=0)
    with pytest.raises(ValueError, match="warmup_frac"):
        LMTrainConfig(warmup_frac=1.5)


def test_train_lm_lowers_the_loss_on_stdlib_text() -> None:
    import pathlib
    import sysconfig

    text = (pathlib.Path(sysconfig.get_paths()["stdlib"]) / "functools.py").read_text()
    data = byte_tensor(text)
    cfg = RMTConfig(vocab_size=256, n_ctx=16, n_layers=1, d_key=4, d_value=8, rank=2, d_ff=16)
    model = ResidualMatrixTransformer(cfg)
    tc = LMTrainConfig(steps=30, batch_size=8, seq_len=16, lr=3e-2, eval_every=10, eval_tokens=256)
    hist = train_lm(model, data[:-2000], data[-2000:], tc, seed=0)
    assert hist.steps == (10, 20, 30) and len(hist.flops) == 3
    assert hist.flops[-1] == pytest.approx(30 * 8 * 16 * flops_per_token(cfg, 16))
    assert hist.final_bpb < 0.8 * 8.0  # well below the uniform 8 bits/byte
    with pytest.raises(ValueError, match="seq_len"):
        train_lm(model, data, data, dataclasses.replace(tc, seq_len=64))
    with pytest.raises(ValueError, match="1-D integer"):
        train_lm(model, data.float(), data, tc)


def test_full_scale_models_construct() -> None:
    """The paper's GPT-2-small configs (ctx 512, vocab 50257) build (on the meta device: no memory)."""
    full = CHECK.config("full")
    for cfg, cls in ((full.rmt, ResidualMatrixTransformer), (GPTConfig.twin_of(full.rmt), GPT)):
        with torch.device("meta"):
            model = cls(cfg)  # type: ignore[arg-type]
        assert count_parameters(model) == param_count(cfg)["total"]


@pytest.mark.slow
def test_full_scale_rmt_takes_one_step() -> None:
    """The full-scale RMT (134M parameters) runs one forward, backward and SGD step on real memory."""
    cfg = CHECK.config("full").rmt
    torch.manual_seed(0)
    model = ResidualMatrixTransformer(cfg)
    x = torch.randint(0, cfg.vocab_size, (1, 17))
    loss, ce = lm_loss(model(x[:, :-1]), x[:, 1:], 1e-4)
    assert ce.item() == pytest.approx(math.log(cfg.vocab_size), rel=1e-4)  # zero-init unembedding
    loss.backward()
    before = model.unembedding.weight.detach().abs().sum().item()
    torch.optim.SGD(model.parameters(), lr=1e-2).step()
    assert model.unembedding.weight.abs().sum().item() > before


# ----------------------------------------------------------------------------------------------
# The check's configuration
# ----------------------------------------------------------------------------------------------


def test_check_config_arms_criteria_and_validation() -> None:
    small = CHECK.config("small")
    arms = small.arms()
    assert list(arms) == ["rmt", "gpt", "rmt_dk4", "rmt_small", "gpt_small"]
    assert arms["gpt"] == GPTConfig.twin_of(small.rmt)
    claim = CHECK.claim_for(CHECK.config("small", {"dk_sweep": (8, 128)}))
    names = {c.name for c in claim.criteria}
    assert {"dk_8_to_32", "dk_32_to_128", "fewer_flops_to_match", "equal_flops_lower_bpb"} <= names
    assert "rmt_dk128" in claim.baselines
    assert claim.references == ("unigram", "bigram")
    assert claim.headline_criterion().name == "equal_flops_lower_bpb"
    for c in claim.criteria_at("small"):  # every arm-vs-arm criterion is paired
        assert c.other_arm is None or c.smallest_effect is not None, c.name
    assert {g.name for g in claim.gates_at("small")} >= {"transformer_beats_bigram", "compute_matched"}
    full = CHECK.config("full")
    assert (full.rmt.d_key, full.rmt.d_value, full.rmt.rank, full.rmt.n_layers, full.rmt.d_ff) == (
        32,
        64,
        12,
        12,
        3072,
    )
    assert (full.rmt.n_ctx, full.rmt.vocab_size) == (512, 50257)
    with pytest.raises(ValueError, match="dk_sweep"):
        RMTCheckConfig(dk_sweep=(32,))
    with pytest.raises(ValueError, match="lrs"):
        RMTCheckConfig(lrs=())
    with pytest.raises(ValueError, match="n_ctx"):
        RMTCheckConfig(train=LMTrainConfig(seq_len=128))


def test_medium_preset_constructs_and_takes_one_step() -> None:
    """The GPU preset (small cannot pass its floor gate on 2 cores): every arm builds, is
    compute-matched, and one optimiser step of its recipe runs here on the CPU."""
    from icml25.language.residual_matrix_transformer.check import build_model

    cfg = CHECK.config("medium")
    assert cfg.device == "auto" and cfg.torch_device().type in ("cpu", "cuda")
    assert cfg.rmt.residual_size == 4 * GPTConfig.twin_of(cfg.rmt).d_model
    gen = torch.Generator().manual_seed(0)
    data = torch.randint(0, 256, (4000,), generator=gen, dtype=torch.uint8)
    run = dataclasses.replace(cfg.train, steps=1, batch_size=2, eval_every=0, eval_tokens=256)
    for arm, arm_cfg in cfg.arms().items():
        model = build_model(arm_cfg, 0, "cpu")
        assert count_parameters(model) == param_count(arm_cfg)["total"]
        hist = train_lm(model, data, data, run)
        assert math.isfinite(hist.final_bpb) and hist.steps == (1,)
        assert cfg.arm_steps(arm) >= 1
    with pytest.raises(ValueError, match="device"):
        RMTCheckConfig(device="tpu")


@pytest.mark.parametrize("scale", ["tiny", "small", "medium", "full"])
def test_every_arm_of_a_size_trains_for_the_same_flops(scale: str) -> None:
    """The D_k finding: arms were compared after equal steps, where D_k = 8 costs 18 % fewer FLOPs
    than D_k = 32. Now each arm's steps spend its size's budget (the twin transformer's FLOPs)."""
    cfg = CHECK.config(scale)
    tokens = cfg.train.tokens_per_step
    per_token = {a: flops_per_token(c, cfg.train.seq_len) for a, c in cfg.arms().items()}
    assert cfg.arm_steps("gpt") == cfg.train.steps and cfg.arm_steps("gpt_small") == cfg.train.steps
    for arm in cfg.arms():
        spent = cfg.arm_steps(arm) * tokens * per_token[arm]
        assert abs(spent / cfg.budget(arm) - 1) <= 0.5 / cfg.arm_steps(arm) * 1.0001  # rounding only
    dks = cfg.dk_arms()
    assert cfg.arm_steps(dks[0][1]) > cfg.arm_steps(dks[-1][1])  # a smaller D_k is cheaper: more steps
    assert cfg.arm_steps("rmt", cfg.pilot_steps) == round(
        cfg.budget("rmt") * cfg.pilot_steps / cfg.train.steps / (tokens * per_token["rmt"])
    )


def test_spread_validation_windows_cover_the_whole_split() -> None:
    """The first small run chose every rate on the first 8 KB of the validation split (a file or two,
    where a bigram model scored 3.79 against 3.76 over the split and the ranking of rates flipped);
    ``eval_spread`` takes the same number of windows evenly over the split."""
    from icml25.language.residual_matrix_transformer import spread_windows

    tokens = torch.arange(1000) % 251
    w = spread_windows(tokens, 9, 90)
    assert w.shape == eval_windows(tokens, 9, 90).shape == (10, 10)
    assert w[0, 0].item() == 0 and w[-1, -1].item() == tokens[-1].item()  # first and last offsets
    torch.testing.assert_close(w[:, 1:] - w[:, :-1], torch.ones(10, 9, dtype=torch.long))  # contiguous
    cfg = RMTConfig(vocab_size=256, n_ctx=16, n_layers=1, d_key=4, d_value=4, rank=2, d_ff=8)
    data = byte_tensor("def f(x):\n    return x + 1\n" * 200)
    val = torch.cat([torch.zeros(2000, dtype=torch.uint8), data[:2000]])  # its start is unrepresentative
    run = LMTrainConfig(steps=3, batch_size=4, seq_len=16, eval_every=0, eval_tokens=256, eval_spread=True)
    model = ResidualMatrixTransformer(cfg)
    hist = train_lm(model, data, val, run)
    assert hist.final_bpb == pytest.approx(bits_per_byte(model, spread_windows(val, 16, 256)), rel=1e-6)
    assert hist.final_bpb != pytest.approx(bits_per_byte(model, eval_windows(val, 16, 256)), rel=1e-3)
    with pytest.raises(ValueError, match="fewer than one window"):
        spread_windows(tokens[:5], 9, 90)


def test_ngram_floors_and_window_scores() -> None:
    from icml25.language.residual_matrix_transformer import NgramModel, random_windows, window_bits

    data = byte_tensor("abababababcabababab" * 50)
    uni, bi = NgramModel.fit(data, 1), NgramModel.fit(data, 2)
    assert uni.log_probs.exp().sum().item() == pytest.approx(1.0)
    torch.testing.assert_close(bi.log_probs.exp().sum(1), torch.ones(256, dtype=torch.float64))
    windows = eval_windows(data, 8, 64)
    assert (bi.window_bits(windows) < uni.window_bits(windows)).all()  # the bigram sees the alternation
    a, b = ord("a"), ord("b")
    pairs = list(zip(data[:-1].tolist(), data[1:].tolist(), strict=True))
    c_ab, c_a = pairs.count((a, b)), sum(p == a for p, _ in pairs)
    p_b = (data.tolist().count(b) + 0.5) / (data.numel() + 0.5 * 256)
    expected = (c_ab + 100.0 * p_b) / (c_a + 100.0)  # Dirichlet smoothing toward the unigram, mu = 100
    assert bi.log_probs[a, b].exp().item() == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="order"):
        NgramModel.fit(data, 3)
    gen = torch.Generator().manual_seed(0)
    w0 = random_windows(data, 8, 20, gen)
    w1 = random_windows(data, 8, 20, torch.Generator().manual_seed(1))
    assert w0.shape == (20, 9) and not torch.equal(w0, w1)  # each seed draws its own items
    torch.testing.assert_close(w0, random_windows(data, 8, 20, torch.Generator().manual_seed(0)))
    model = _perturb(ResidualMatrixTransformer(dataclasses.replace(TINY, vocab_size=256, n_ctx=8)))
    per_window = window_bits(model, w0, batch_size=7)
    assert per_window.shape == (20,)
    assert per_window.mean().item() == pytest.approx(bits_per_byte(model, w0), rel=1e-5)


# ---------------------------------------------------------------- the transformers causal-LM interface


def _hf_rmt(pos: str = "learned"):  # type: ignore[no-untyped-def]
    from icml25.language.residual_matrix_transformer.hf import RMTForCausalLM, RMTLMConfig

    torch.manual_seed(0)
    config = RMTLMConfig(
        vocab_size=50, n_ctx=32, n_layers=2, d_key=8, d_value=16, rank=4, d_ff=64,
        zero_init_unembed=False, pos=pos,
    )  # fmt: skip
    return RMTForCausalLM(config).eval()


def _greedy(model, ids: torch.Tensor, steps: int) -> torch.Tensor:  # type: ignore[no-untyped-def]
    for _ in range(steps):  # no cache, no padding: the reference loop
        ids = torch.cat([ids, model.rmt(ids)[:, -1:].argmax(-1)], dim=1)
    return ids


def test_hf_forward_equals_the_model_and_labels_give_the_shifted_loss() -> None:
    model = _hf_rmt()
    ids = torch.randint(0, 50, (2, 7), generator=torch.Generator().manual_seed(1))
    labels = ids.clone()
    labels[0, 3] = -100
    out = model(input_ids=ids, labels=labels)
    torch.testing.assert_close(out.logits, model.rmt(ids))
    keep = labels[:, 1:] != -100
    manual = -torch.log_softmax(out.logits[:, :-1], -1).gather(-1, ids[:, 1:, None])[..., 0][keep].mean()
    torch.testing.assert_close(out.loss, manual)
    with pytest.raises(ValueError, match="attention_mask must be"):
        model(input_ids=ids, attention_mask=torch.ones(2, 3, dtype=torch.long))


@pytest.mark.parametrize("pos", ["learned", "alibi"])
def test_hf_generate_with_cache_and_left_padding_equals_the_uncached_loop(pos: str) -> None:
    model = _hf_rmt(pos)
    ids = torch.randint(1, 50, (2, 6), generator=torch.Generator().manual_seed(2))
    out = model.generate(ids, max_new_tokens=5, do_sample=False, pad_token_id=0)
    assert torch.equal(out, _greedy(model, ids, 5))
    short = ids[1, 2:]  # row 1 two tokens shorter, left-padded
    padded = torch.stack([ids[0], torch.cat([torch.zeros(2, dtype=torch.long), short])])
    mask = (torch.arange(6) >= torch.tensor([[0], [2]])).long()
    out = model.generate(padded, attention_mask=mask, max_new_tokens=5, do_sample=False, pad_token_id=0)
    assert torch.equal(out[0], _greedy(model, ids[:1], 5)[0])
    assert torch.equal(out[1, 2:], _greedy(model, short[None], 5)[0])


def test_hf_save_pretrained_round_trip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from transformers import AutoModelForCausalLM

    from icml25.language.residual_matrix_transformer.hf import RMTForCausalLM

    model = _hf_rmt("alibi")
    model.save_pretrained(tmp_path / "rmt")
    saved = json.loads((tmp_path / "rmt" / "config.json").read_text())
    assert saved["model_type"] == "icml25_rmt" and saved["d_key"] == 8 and saved["pos"] == "alibi"
    again = AutoModelForCausalLM.from_pretrained(tmp_path / "rmt")
    assert isinstance(again, RMTForCausalLM) and again.config.to_rmt() == model.config.to_rmt()
    ids = torch.randint(0, 50, (2, 5), generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(again(input_ids=ids).logits, model(input_ids=ids).logits)


def test_cached_decoding_refuses_positions_past_the_context() -> None:
    from icml25.nn.attention import KVCache

    model = _hf_rmt().rmt
    caches = [KVCache() for _ in model.layers]
    model(torch.zeros(1, 30, dtype=torch.long), caches=caches)
    with pytest.raises(ValueError, match="30 cached \\+ 3 new positions exceed n_ctx=32"):
        model(torch.zeros(1, 3, dtype=torch.long), caches=caches)
    with pytest.raises(ValueError, match="caches: 1 caches for 2 layers"):
        model(torch.zeros(1, 3, dtype=torch.long), caches=caches[:1])
