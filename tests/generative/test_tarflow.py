"""Unit tests for icml25.generative.tarflow (TarFlow, Zhai et al., ICML 2025, arXiv 2412.06329)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor

from icml25.generative.tarflow import (
    ActNorm,
    CouplingFlow,
    CouplingFlowConfig,
    TarFlow,
    TarFlowConfig,
    TrainConfig,
    TrainResult,
    bayes_classify,
    bits_per_dim,
    denoise,
    dequantize,
    load_digits_dataset,
    match_coupling_hidden,
    noise_augment,
    patchify,
    squeeze,
    to_integer_images,
    to_unit_range,
    train_flow,
    unpatchify,
    unsqueeze,
)
from icml25.nn.params import count_parameters

torch.set_num_threads(1)


def _tarflow(**kw: object) -> TarFlow:
    base: dict[str, object] = dict(
        in_channels=1, img_size=4, patch_size=2, channels=16, num_blocks=2, layers_per_block=1, head_dim=8
    )
    base.update(kw)
    torch.manual_seed(0)
    model = TarFlow(TarFlowConfig(**base))  # type: ignore[arg-type]
    _randomize(model)
    return model.double().eval()


def _randomize(model: torch.nn.Module, scale: float = 0.3) -> None:
    """Give the zero-initialised output layers random weights so the flow is not the identity."""
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "proj_out" in name or name.endswith(("4.weight", "4.bias")):
                p.copy_(scale * torch.randn(p.shape, generator=gen))


def _coupling(**kw: object) -> CouplingFlow:
    base: dict[str, object] = dict(in_channels=1, img_size=4, num_levels=2, steps_per_level=2, hidden=8)
    base.update(kw)
    torch.manual_seed(0)
    model = CouplingFlow(CouplingFlowConfig(**base)).double()  # type: ignore[arg-type]
    _randomize(model)
    model.train()
    model(torch.randn(16, model.config.in_channels, model.config.img_size, model.config.img_size).double())
    return model.eval()  # ActNorm now holds a data-dependent (non-trivial) initialisation


def _x(model: TarFlow | CouplingFlow, n: int = 3, seed: int = 0) -> Tensor:
    c = model.config
    gen = torch.Generator().manual_seed(seed)
    return (torch.rand(n, c.in_channels, c.img_size, c.img_size, generator=gen) * 2 - 1).double()


# ---------------------------------------------------------------- patchify


@settings(max_examples=20, deadline=None)
@given(c=st.integers(1, 3), p=st.sampled_from([1, 2, 4]), k=st.integers(1, 3))
def test_patchify_round_trip_and_token_layout(c: int, p: int, k: int) -> None:
    size = p * k
    x = torch.randn(2, c, size, size)
    u = patchify(x, p)
    assert u.shape == (2, k * k, c * p * p)
    torch.testing.assert_close(unpatchify(u, p, c, size), x)
    # matches F.unfold's layout: token t = row-major patch, features (c, p1, p2)
    ref = torch.nn.functional.unfold(x, kernel_size=p, stride=p).transpose(1, 2)
    torch.testing.assert_close(u, ref)


def test_squeeze_round_trip() -> None:
    x = torch.randn(2, 3, 8, 8)
    assert squeeze(x).shape == (2, 12, 4, 4)
    torch.testing.assert_close(unsqueeze(squeeze(x)), x)


# ---------------------------------------------------------------- invertibility and log-det


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"nvp": False},
        {"alternate": False},
        {"num_classes": 3},
        {"patch_size": 1, "num_blocks": 3},
        {"in_channels": 3, "layers_per_block": 2},
    ],
)
def test_tarflow_invertible(kw: dict[str, object]) -> None:
    model = _tarflow(**kw)
    x = _x(model)
    y = torch.tensor([0, 2, -1]) if kw.get("num_classes") else None
    z, logdet = model(x, y)
    assert z.shape == x.shape and logdet.shape == (3,)
    assert not torch.allclose(z, x)  # the randomised flow is not the identity
    assert (model.inverse(z, y) - x).abs().max() < 1e-5


def test_coupling_invertible() -> None:
    for kw in ({}, {"in_channels": 3, "img_size": 8, "checkerboard_steps": 3, "num_levels": 3}):
        model = _coupling(**kw)
        x = _x(model)
        z, _ = model(x)
        assert not torch.allclose(z, x)
        assert (model.inverse(z) - x).abs().max() < 1e-5


def _autograd_logdet(model: TarFlow | CouplingFlow, x: Tensor) -> Tensor:
    out = []
    for xi in x:
        J = torch.autograd.functional.jacobian(lambda v: model(v[None])[0].flatten(), xi)
        out.append(torch.linalg.slogdet(J.reshape(xi.numel(), xi.numel()))[1])
    return torch.stack(out)


@pytest.mark.parametrize("kw", [{}, {"patch_size": 1, "num_blocks": 3}, {"num_classes": 2}])
def test_tarflow_logdet_matches_autograd_jacobian(kw: dict[str, object]) -> None:
    model = _tarflow(**kw)  # D = 16
    x = _x(model, n=2)
    _, logdet = model(x)
    torch.testing.assert_close(logdet, _autograd_logdet(model, x), atol=1e-8, rtol=1e-8)


def test_coupling_logdet_matches_autograd_jacobian() -> None:
    model = _coupling()  # D = 16: checkerboard, squeeze, 1x1 conv, channel coupling, split, squeeze
    x = _x(model, n=2)
    _, logdet = model(x)
    torch.testing.assert_close(logdet, _autograd_logdet(model, x), atol=1e-8, rtol=1e-8)


def test_identity_at_initialisation() -> None:
    torch.manual_seed(0)
    model = TarFlow(
        TarFlowConfig(in_channels=1, img_size=4, patch_size=2, channels=16, num_blocks=2, head_dim=8)
    )
    x = torch.randn(2, 1, 4, 4)
    z, logdet = model(x)
    torch.testing.assert_close(z, x)
    torch.testing.assert_close(logdet, torch.zeros(2))


# ---------------------------------------------------------------- causality


def test_causal_mask_is_causal() -> None:
    """Perturbing patch j leaves z of earlier patches unchanged (identity block) / later ones (flipped)."""
    for flip_block in (False, True):
        torch.manual_seed(0)
        cfg = TarFlowConfig(
            in_channels=1, img_size=4, patch_size=1, channels=16, num_blocks=2, layers_per_block=2, head_dim=8
        )
        model = TarFlow(cfg).double().eval()
        _randomize(model)
        block = model.blocks[1 if flip_block else 0]
        u = torch.randn(2, 16, 1).double()
        j = 7
        u2 = u.clone()
        u2[:, j] += 1.0
        z1, _ = block(u, None)
        z2, _ = block(u2, None)
        changed = (z1 - z2).abs().amax(dim=(0, 2)) > 1e-12
        before, after = changed[:j], changed[j + 1 :]
        if flip_block:  # reversed order: token j conditions only tokens with a smaller index
            assert not after.any() and before.any()
        else:
            assert not before.any() and after.any()
        assert changed[j]


def test_no_flip_leaves_first_patch_untransformed() -> None:
    model = _tarflow(alternate=False, num_blocks=3)
    x = _x(model)
    z, _ = model(x)
    torch.testing.assert_close(patchify(z, 2)[:, 0], patchify(x, 2)[:, 0])
    z_alt, _ = _tarflow(num_blocks=3)(x)
    assert not torch.allclose(patchify(z_alt, 2)[:, 0], patchify(x, 2)[:, 0])


# ---------------------------------------------------------------- sampling, KV cache, guidance


@pytest.mark.parametrize(
    "kw, y, inv",
    [
        ({}, None, {}),
        ({"nvp": False}, None, {}),
        ({}, None, {"guidance": 1.5, "attn_temp": 0.7}),
        ({"num_classes": 3}, [0, 1, -1], {"guidance": 2.0}),
        ({"num_classes": 3}, [2, 2, 0], {"guidance": 1.0, "annealed": True, "guide_what": "a"}),
        ({"num_classes": 3}, [1, 0, 0], {"guidance": 1.0, "guide_what": "b"}),
    ],
)
def test_kv_cached_inversion_equals_uncached(kw: dict[str, object], y: list[int] | None, inv: dict) -> None:
    model = _tarflow(layers_per_block=2, **kw)
    z = _x(model, seed=3)
    labels = None if y is None else torch.tensor(y)
    cached = model.inverse(z, labels, use_cache=True, **inv)
    assert torch.isfinite(cached).all()
    naive = model.inverse(z, labels, use_cache=False, **inv)
    torch.testing.assert_close(cached, naive, atol=1e-10, rtol=1e-10)


def test_guidance_zero_is_plain_inverse_and_positive_changes_samples() -> None:
    model = _tarflow(num_classes=3)
    y = torch.tensor([0, 1, 2])
    z = model(_x(model), y).z
    assert torch.isfinite(model.inverse(z, y)).all()
    torch.testing.assert_close(model.inverse(z, y, guidance=0.0), model.inverse(z, y))
    assert not torch.allclose(model.inverse(z, y, guidance=2.0), model.inverse(z, y))


def test_sample_shapes_and_temperature() -> None:
    model = _tarflow().float()
    _randomize(model, scale=0.05)  # mild weights: sampling a random deep flow can overflow
    g = torch.Generator().manual_seed(0)
    xs = model.sample(5, generator=g)
    assert xs.shape == (5, 1, 4, 4) and torch.isfinite(xs).all()
    z0 = model.sample_prior(4000, temperature=0.5, generator=torch.Generator().manual_seed(1))
    assert abs(float(z0.std()) - 0.5) < 0.02


def test_vp_variant_learns_prior_variance() -> None:
    model = _tarflow(nvp=False).float().train()
    x = 3.0 * torch.randn(64, 1, 4, 4)
    for _ in range(30):
        model(x)
    assert model.var.min() > 4.0  # EMA of E[z²] with a = 0 (z = x − μ, μ small)
    model.eval()
    z, logdet = model(x)
    torch.testing.assert_close(logdet, torch.zeros(64))  # volume preserving
    lv = model.prior_log_var()
    assert lv is not None
    expected = 0.5 * ((z.flatten(1) ** 2) / lv.exp().flatten() + lv.flatten() + math.log(2 * math.pi)).sum(1)
    torch.testing.assert_close(model.nll(x), expected)
    torch.testing.assert_close(model.inverse(z), x, atol=1e-4, rtol=1e-4)  # exact inverse of forward
    zs = model.sample_prior(2000, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(zs.var(0), lv.exp(), rtol=0.15, atol=0.0)  # draws use the learned variance


# ---------------------------------------------------------------- likelihood accounting


class _Uniform:
    """The uniform density on [-1, 1]^D: NLL = D·log 2."""

    def nll(self, x: Tensor, y: Tensor | None = None) -> Tensor:
        return torch.full((x.shape[0],), x[0].numel() * math.log(2.0))


def test_bits_per_dim_of_the_uniform_density_is_log2_levels() -> None:
    x = torch.randint(0, 17, (5, 1, 8, 8))
    bpd = bits_per_dim(_Uniform(), x, num_levels=17)
    torch.testing.assert_close(bpd, torch.full((5,), math.log2(17)))
    x256 = torch.randint(0, 256, (3, 3, 4, 4))
    torch.testing.assert_close(bits_per_dim(_Uniform(), x256, num_levels=256), torch.full((3,), 8.0))


def test_bits_per_dim_of_the_standard_normal_matches_formula() -> None:
    torch.manual_seed(0)
    model = TarFlow(
        TarFlowConfig(in_channels=1, img_size=4, patch_size=2, channels=16, num_blocks=1, head_dim=8)
    )
    x = torch.randint(0, 17, (4, 1, 4, 4))
    bpd = bits_per_dim(model, x, num_levels=17, n_dequant=2, generator=torch.Generator().manual_seed(5))
    g = torch.Generator().manual_seed(5)
    ys = [dequantize(x, 17, generator=g) for _ in range(2)]
    nll = sum(0.5 * (y.flatten(1) ** 2).sum(1) + 8 * math.log(2 * math.pi) for y in ys) / 2
    expected = (nll / 16 + math.log(17 / 2)) / math.log(2)
    torch.testing.assert_close(bpd, expected)


def test_dequantize_stays_in_bins() -> None:
    x = torch.arange(17).reshape(1, 1, 1, 17).expand(50, 1, 1, 17)
    y = dequantize(x, 17, generator=torch.Generator().manual_seed(0))
    assert y.min() >= -1 and y.max() < 1
    torch.testing.assert_close(torch.floor((y + 1) * 17 / 2).long(), x)


def test_samples_go_back_to_integer_images() -> None:
    x = torch.arange(17).reshape(1, 1, 1, 17).expand(50, 1, 1, 17)
    y = dequantize(x, 17, generator=torch.Generator().manual_seed(0))
    back = to_integer_images(y, 17)
    assert back.dtype == torch.uint8 and torch.equal(back.long(), x)
    assert torch.equal(to_integer_images(to_unit_range(x, 17), 17).long(), x)
    assert to_integer_images(torch.tensor([-3.0, 0.0, 3.0]), 4).tolist() == [0, 2, 3]  # clipped
    with pytest.raises(ValueError, match="num_levels"):
        to_integer_images(y, 1)
    with pytest.raises(ValueError, match="NaN"):
        to_integer_images(torch.tensor([float("nan")]), 4)


def test_save_and_load_round_trip(tmp_path) -> None:
    model = _tarflow()
    _randomize(model)
    path = model.save(tmp_path / "flow.safetensors")
    again = TarFlow.load(path, device="cpu")
    assert again.config == model.config and not again.training
    x = _x(model)
    torch.testing.assert_close(again.nll(x), model.eval().nll(x))
    a = again.sample(2, temperature=0.5, generator=torch.Generator().manual_seed(0))
    b = model.sample(2, temperature=0.5, generator=torch.Generator().manual_seed(0))
    assert a.dtype == torch.float64
    torch.testing.assert_close(a, b, equal_nan=True)  # random weights may overflow; identically


def test_channels_last_images_get_a_hint() -> None:
    model = _tarflow()
    c = model.config
    x = torch.zeros(2, c.img_size, c.img_size, c.in_channels)
    if c.in_channels == c.img_size:  # the hint would be ambiguous
        pytest.skip("square channel count")
    with pytest.raises(ValueError, match=r"channels-last.*permute\(0, 3, 1, 2\)"):
        model.nll(x)


def test_denoise_is_tweedie_for_a_gaussian() -> None:
    torch.manual_seed(0)  # identity flow: p = N(0, I), score = -x, so x̂ = (1 - σ²)x
    model = TarFlow(
        TarFlowConfig(in_channels=1, img_size=4, patch_size=2, channels=16, num_blocks=1, head_dim=8)
    )
    x = torch.randn(3, 1, 4, 4)
    torch.testing.assert_close(denoise(model, x, 0.3), (1 - 0.09) * x)


def test_bayes_classify_picks_the_most_likely_class() -> None:
    class Toy:
        def nll(self, x: Tensor, y: Tensor | None = None) -> Tensor:
            assert y is not None
            return (x.flatten(1).mean(1) - y.float()).abs()

    x = torch.tensor([0.0, 2.0, 1.1]).reshape(3, 1, 1, 1).expand(3, 1, 2, 2)
    assert bayes_classify(Toy(), x, 3).tolist() == [0, 2, 1]


# ---------------------------------------------------------------- baseline size, training, data


def test_coupling_matched_within_ten_percent() -> None:
    torch.manual_seed(0)
    n = count_parameters(
        TarFlow(
            TarFlowConfig(
                in_channels=1, img_size=8, channels=64, num_blocks=4, layers_per_block=1, head_dim=32
            )
        )
    )
    cfg = match_coupling_hidden(n, CouplingFlowConfig())
    m = count_parameters(CouplingFlow(cfg))
    assert abs(m - n) <= 0.1 * n


def test_actnorm_data_dependent_init() -> None:
    layer = ActNorm(3).train()
    x = 2 + 5 * torch.randn(32, 3, 4, 4)
    y, logdet = layer(x)
    torch.testing.assert_close(y.mean(dim=(0, 2, 3)), torch.zeros(3), atol=1e-5, rtol=0)
    torch.testing.assert_close(y.std(dim=(0, 2, 3)), torch.ones(3), atol=1e-4, rtol=0)
    torch.testing.assert_close(layer.inverse(y), x, atol=1e-4, rtol=1e-5)
    assert logdet.shape == (32,)


def test_lr_schedule_warmup_and_cosine() -> None:
    c = TrainConfig(steps=100, lr=1e-3, min_lr=1e-6, warmup_steps=10)
    lrs = [c.fit_config().lr_at(s) for s in range(100)]
    assert lrs[0] < 2e-4 and lrs[9] == pytest.approx(1e-3)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:], strict=False))
    assert lrs[-1] < 1e-5


def test_training_lowers_the_loss_and_keeps_the_best_state() -> None:
    data = load_digits_dataset()
    torch.manual_seed(0)
    model = TarFlow(
        TarFlowConfig(in_channels=1, img_size=8, channels=32, num_blocks=2, layers_per_block=1, head_dim=16)
    )
    res = train_flow(
        model,
        data.x_train[:128],
        num_levels=17,
        config=TrainConfig(steps=20, batch_size=32, warmup_steps=2, eval_every=5),
        seed=0,
        x_val=data.x_val,
    )
    assert np.mean(res.train_bpd[-5:]) < np.mean(res.train_bpd[:5])
    assert res.best_val_bpd == min(res.val_bpd) and res.best_step in res.val_steps


def test_digits_split_is_fixed_and_in_range() -> None:
    a, b = load_digits_dataset(), load_digits_dataset()
    assert (len(a.x_train), len(a.x_val), len(a.x_test)) == (1293, 144, 360)
    assert a.x_train.shape[1:] == (1, 8, 8) and a.x_train.dtype == torch.int64
    assert int(a.x_train.min()) == 0 and int(a.x_train.max()) == 16
    assert torch.equal(a.x_test, b.x_test) and torch.equal(a.y_train, b.y_train)


# ---------------------------------------------------------------- bad input


def test_bad_inputs_raise_clear_errors() -> None:
    with pytest.raises(ValueError, match="not divisible by patch_size"):
        TarFlowConfig(img_size=10, patch_size=4)
    with pytest.raises(ValueError, match="not divisible by patch_size"):
        patchify(torch.zeros(1, 1, 6, 6), 4)
    with pytest.raises(ValueError, match="multiple of head_dim"):
        TarFlowConfig(channels=100, head_dim=64)
    model = _tarflow()
    with pytest.raises(ValueError, match="channels"):
        model(torch.zeros(2, 3, 4, 4).double())
    with pytest.raises(ValueError, match="expects 4x4"):
        model(torch.zeros(2, 1, 8, 8).double())
    with pytest.raises(ValueError, match="NaN"):
        model(torch.full((1, 1, 4, 4), float("nan")).double())
    with pytest.raises(ValueError, match="unconditional"):
        model.inverse(torch.zeros(1, 1, 4, 4).double(), guidance=1.0)
    with pytest.raises(ValueError, match="unconditional"):
        model(torch.zeros(1, 1, 4, 4).double(), torch.tensor([0]))
    cond = _tarflow(num_classes=3)
    with pytest.raises(ValueError, match="labels must lie"):
        cond(torch.zeros(1, 1, 4, 4).double(), torch.tensor([3]))
    with pytest.raises(ValueError, match=r"\[0, 16\]"):
        bits_per_dim(model, torch.full((1, 1, 4, 4), 17), num_levels=17)
    with pytest.raises(ValueError, match=r"\[0, 16\]"):
        dequantize(torch.full((1, 1, 4, 4), -1), 17)
    with pytest.raises(ValueError, match="integer"):
        dequantize(torch.full((1, 1, 4, 4), 0.5), 17)
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        noise_augment(torch.full((1, 1, 4, 4), 2.0), 0.1)
    with pytest.raises(ValueError, match="divisible"):
        CouplingFlowConfig(img_size=6, num_levels=2)
    with pytest.raises(ValueError, match="expected"):
        _coupling()(torch.zeros(1, 2, 4, 4).double())
    with pytest.raises(ValueError, match="unconditional"):
        _coupling()(torch.zeros(1, 1, 4, 4).double(), torch.tensor([0]))


# ---------------------------------------------------------------- presets


def test_paper_imagenet64_config_constructs() -> None:
    config = TarFlowConfig()  # 2-768-8-8, the ImageNet-64 likelihood model
    assert (config.patch_size, config.channels, config.num_blocks, config.layers_per_block) == (2, 768, 8, 8)
    with torch.device("meta"):
        model = TarFlow(config)
    assert count_parameters(model) > 4e8
    assert config.num_tokens == 1024 and config.token_dim == 12


def test_full_preset_constructs_and_runs_one_step() -> None:
    from icml25.generative.tarflow.check import CHECK

    config = CHECK.config("full")
    assert config.channels == 128 and config.layers_per_block == 4 and config.head_dim == 64
    assert config.ablation and config.max_shift == 1
    result = CHECK.run(
        "full",
        seeds=[0],
        overrides={
            "steps": 1,
            "lrs": (1e-3,),  # one rate: the sweep is tested at tiny
            "cond_steps": 1,
            "n_train": 16,
            "n_few": 32,
            "n_mid": 64,
            "n_test": 8,
            "batch_size": 16,
            "n_dequant": 1,
            "eval_every": 1,
            "samples_per_class": 1,
            "guidance_weights": (0.0, 1.0),
        },
    )
    m = result.metrics
    assert set(m) >= {"tarflow", "coupling", "tarflow_noflip", "tarflow_few", "coupling_few", "uniform"}
    n_tf, n_cp = m["tarflow"]["params"].mean, m["coupling"]["params"].mean
    assert abs(n_cp - n_tf) <= 0.1 * n_tf and n_tf > 1e6
    assert math.isfinite(m["tarflow"]["test_bpd"].mean) and math.isfinite(
        m["tarflow_noflip"]["test_bpd"].mean
    )
    assert {c.name for c in result.criteria} == {"beats_coupling", "flip_helps", "lead_shrinks"} | GATES


# ---------------------------------------------------------------- the check's design (issues 29 and 41)

GATES = {
    "params_matched",
    "tarflow_learns",
    "coupling_learns",
    "tarflow_not_overfit",
    "coupling_not_overfit",
    "tarflow_few_learns",
    "coupling_few_learns",
}


def _trained(best_val: float):
    from icml25.generative.tarflow.check import Trained

    res = TrainResult((1,), (3.0,), (1,), (best_val,), 1, best_val, 0.0)
    return Trained(model=_tarflow(), result=res, lr=1e-3, seconds=0.0)


def test_choose_lr_takes_the_lowest_validation_and_never_a_diverged_rate() -> None:
    from icml25.generative.tarflow.check import choose_lr

    assert choose_lr({1e-3: _trained(2.5), 2e-3: _trained(2.4), 4e-3: _trained(2.6)}) == 2e-3
    assert (
        choose_lr({1e-3: _trained(2.5), 2e-3: _trained(float("nan")), 4e-3: _trained(float("inf"))}) == 1e-3
    )
    assert choose_lr({1e-3: _trained(2.5), 2e-3: _trained(2.5)}) == 1e-3  # a tie: the first


def _res(vals: list[float]) -> TrainResult:
    steps = tuple(range(1, 101))
    val_steps = tuple(range(10, 101, 10))
    return TrainResult(steps, (0.0,) * 100, val_steps, tuple(vals), 0, min(vals), 0.0)


def test_val_gain_last_quarter_measures_the_late_improvement() -> None:
    from icml25.generative.tarflow.check import _val_gain_last_quarter

    # best up to step 75 (the first 7 evaluations) is 3.0; the final best 2.5
    assert _val_gain_last_quarter(_res([5, 4, 3.5, 3.2, 3.1, 3.05, 3.0, 2.9, 2.6, 2.5])) == pytest.approx(0.5)
    assert _val_gain_last_quarter(_res([5, 4, 3, 2, 2, 2, 2, 2.1, 2.2, 2.3])) == 0.0  # flat: no gain


def test_val_rise_measures_overfitting_after_the_best_step() -> None:
    from icml25.generative.tarflow.check import val_rise

    assert val_rise(_res([5, 4, 3, 2, 2, 2, 2, 2.1, 2.2, 2.3])) == pytest.approx(0.3)  # overfits
    assert val_rise(_res([5, 4, 3.5, 3.2, 3.1, 3.05, 3.0, 2.9, 2.6, 2.5])) == 0.0  # still improving


@pytest.mark.parametrize("lrs", [(), (0.0,), (-1e-3,), (float("nan"),), (1e-3, 1e-3)])
def test_check_config_rejects_bad_learning_rate_grids(lrs: tuple[float, ...]) -> None:
    from icml25.generative.tarflow.check import TarFlowCheckConfig

    with pytest.raises(ValueError, match="lrs"):
        TarFlowCheckConfig(lrs=lrs)


@pytest.mark.parametrize("bad", [{"max_shift": 4}, {"max_shift": -1}, {"n_few": 0}])
def test_check_config_rejects_bad_data_settings(bad: dict[str, int]) -> None:
    from icml25.generative.tarflow.check import TarFlowCheckConfig

    with pytest.raises(ValueError, match=next(iter(bad))):
        TarFlowCheckConfig(**bad)  # type: ignore[arg-type]


def test_shift_family_translates_with_zero_fill() -> None:
    from icml25.generative.tarflow import shift_family

    x = torch.arange(1, 2 * 16 + 1).reshape(2, 1, 4, 4)  # no zeros: the fill is visible
    fam = shift_family(x, 1)
    assert fam.shape == (18, 1, 4, 4)
    assert torch.equal(fam[4], x[0]) and torch.equal(fam[9 + 4], x[1])  # the centre is the image
    down_right = fam[8]  # (dy, dx) = (1, 1)
    assert torch.equal(down_right[0, 1:, 1:], x[0, 0, :-1, :-1])
    assert int(down_right[0, 0].abs().sum()) == 0 and int(down_right[0, :, 0].abs().sum()) == 0
    up_left = fam[0]  # (dy, dx) = (-1, -1)
    assert torch.equal(up_left[0, :-1, :-1], x[0, 0, 1:, 1:]) and int(up_left[0, -1].abs().sum()) == 0
    assert torch.equal(shift_family(x, 0), x)
    with pytest.raises(ValueError, match="max_shift"):
        shift_family(x, 4)
    with pytest.raises(ValueError, match="x_int"):
        shift_family(x[0], 1)


def test_small_preset_compares_on_nine_times_the_data_with_the_few_image_arms_beside() -> None:
    """Issue 41: the headline arms train on the translated family (9 x 1293 images), the _few arms
    on 1293 of them; validation and test come from the same family, built from other digits."""
    from icml25.generative.tarflow.check import CHECK, check_data

    config = CHECK.config("small")
    data = check_data(config)
    assert len(data.x_train) == 9 * 1293 and len(data.x_few) == 1293
    assert len(data.x_val) == 144 and len(data.x_test) == 9 * 360 and data.per_item == 9
    digits = load_digits_dataset()
    # every few image is one of the training translates; each test item's centre is its test digit
    train_rows = {tuple(r.flatten().tolist()) for r in data.x_train}
    assert all(tuple(r.flatten().tolist()) in train_rows for r in data.x_few)
    assert torch.equal(data.x_test.reshape(360, 9, 1, 8, 8)[:, 4], digits.x_test)
    assert check_data(config) is data  # fixed for every seed and arm


@pytest.mark.parametrize("kind", ["tarflow", "coupling"])
def test_a_training_run_is_the_same_in_a_worker(kind: str) -> None:
    """The runs the workers train are pure functions of (config, kind, subset, lr, seed): the weights a
    worker sends back, loaded into a fresh model, equal a run trained here at the workers' one thread
    (at another thread count the kernels round differently), and the caller's RNG is left alone."""
    from icml25.generative.tarflow.check import CHECK, _from_worker, _train, _train_in_worker

    config = dataclasses.replace(CHECK.config("tiny"), steps=4, eval_every=2)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        here = _train(config, kind, "few", 1e-3, 3)
        sent = _train_in_worker(config, kind, "few", 1e-3, 3)
        torch.manual_seed(123)
        before = torch.rand(3)
        torch.manual_seed(123)
        there = _from_worker(config, kind, sent)
        assert torch.equal(torch.rand(3), before)
    finally:
        torch.set_num_threads(threads)
    assert there.result.train_bpd == here.result.train_bpd
    for (name, a), (_, b) in zip(
        here.model.state_dict().items(), there.model.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name


def test_workers_must_be_positive() -> None:
    from icml25.generative.tarflow.check import TarFlowCheckConfig

    with pytest.raises(ValueError, match="workers"):
        TarFlowCheckConfig(workers=0)


def test_a_one_thread_budget_starts_no_workers(monkeypatch) -> None:
    """In the main job's one-thread slots the runs train in the check's process (same numbers at the
    same one thread), so a slot stays one core."""
    from icml25.generative.tarflow.check import CHECK, _Runs

    monkeypatch.setenv("ICML25_THREADS", "1")
    runs = _Runs()
    job = ("tarflow", "few", 1e-3, 0)
    runs.submit(CHECK.config("small"), [job])  # small asks for 2 workers
    assert runs.pool is not None and not runs.pool.active and not runs.pool.queued(job)
    assert runs.pool._pool is None  # no process was started


def test_three_training_set_sizes_are_nested_draws_from_the_family() -> None:
    """Round 6 of issue 41: a third size between the two, from the same fixed draw, so the 1293 images
    of the _few arms are within the 3879 of the _mid arms, which are within all 11,637."""
    from icml25.generative.tarflow.check import CHECK, check_data

    config = CHECK.config("small")
    data = check_data(config)
    assert config.subsets == ("all", "mid", "few")
    assert len(data.subset("all")) == 11_637 and len(data.subset("mid")) == 3 * 1293
    assert torch.equal(data.subset("few"), data.subset("mid")[:1293])
    assert {"tarflow_mid", "coupling_mid"} <= set(config.arms)
    no_mid = dataclasses.replace(config, n_mid=0)
    assert no_mid.subsets == ("all", "few") and "tarflow_mid" not in no_mid.arms
    with pytest.raises(ValueError, match="subset"):
        data.subset("most")


def test_warm_up_is_one_epoch_of_the_arms_own_data_as_the_official_recipe() -> None:
    """The official train.py warms up for len(data_loader) steps (one epoch, drop_last batches); the
    earlier protocols used 10 steps for every size. The fused AdamW flag reaches the optimiser."""
    from icml25.generative.tarflow.check import CHECK

    config = CHECK.config("small")
    assert config.warmup_for(11_637) == 181 and config.warmup_for(1293) == 20
    assert config.train(8e-3, n_images=11_637).warmup_steps == 181
    assert config.warmup_for(10**6) == config.steps // 2  # never more than half the budget
    legacy = dataclasses.replace(config, warmup_epochs=0.0)
    assert legacy.warmup_for(11_637) == legacy.warmup_steps == 10
    assert config.train(8e-3).fit_config().fused is True
    assert TrainConfig().fit_config().fused is False
    with pytest.raises(ValueError, match="warmup_epochs"):
        dataclasses.replace(config, warmup_epochs=-1.0)


def test_lead_by_size_is_the_paired_difference_per_size(tmp_path) -> None:
    from icml25.core.check import SeedOutcome
    from icml25.generative.tarflow.check import CHECK, PAIRS, lead_by_size

    config = CHECK.config("small")
    rng = np.random.default_rng(0)
    shift = {"all": 0.1, "mid": 0.05, "few": 0.0}

    def outcome() -> SeedOutcome:
        items, metrics = {}, {}
        for subset, (tf, cp) in PAIRS.items():
            base = rng.normal(2.2, 0.3, size=50)
            items[tf] = {"test_bpd": base + shift[subset]}
            items[cp] = {"test_bpd": base}
            metrics[tf] = {"n_train_images": 100.0}
        return SeedOutcome(metrics=metrics, items=items)

    outcomes = [outcome(), outcome()]
    rows = lead_by_size(config, outcomes)
    assert [r["subset"] for r in rows] == ["all", "mid", "few"]
    for r in rows:  # the item noise cancels in the pairing: a point interval at the true shift
        assert r["lead"] == pytest.approx(shift[r["subset"]])
        assert r["low"] == pytest.approx(shift[r["subset"]]) and r["high"] == pytest.approx(
            shift[r["subset"]]
        )

    class Ctx:
        def __init__(self) -> None:
            self.saved: dict[str, str] = {}
            self.logged: list[str] = []

        def log(self, message: str) -> None:
            self.logged.append(message)

        def save_figure(self, fig, name: str, caption: str) -> None:  # type: ignore[no-untyped-def]
            import matplotlib.pyplot as plt

            fig.savefig(tmp_path / f"{name}.png")
            plt.close(fig)
            self.saved[name] = caption

    ctx = Ctx()
    CHECK._lead_figure(config, outcomes, ctx)  # type: ignore[arg-type]
    assert "all (100 images): +0.100 [+0.100, +0.100]" in ctx.saved["lead_by_size"]
    assert ctx.logged and "few (100 images): +0.000" in ctx.logged[0]


def by_name_guards(claim) -> dict[str, tuple[str, ...]]:  # type: ignore[no-untyped-def]
    return {g.name: g.guards for g in claim.gates if g.guards}


def test_small_preset_is_the_fair_protocol() -> None:
    from icml25.generative.tarflow.check import CHECK

    config = CHECK.config("small")
    assert config.layers_per_block == 4 and len(config.lrs) >= 2 and config.sweep_seed == 0
    assert config.steps == 800 and not config.ablation
    claim = CHECK.claim_for(config)
    assert claim.headline == "beats_coupling" and claim.references == ("uniform", "untrained")
    assert {g.name for g in claim.gates_at("small")} == GATES
    assert {c.name for c in claim.criteria_at("small")} == {"beats_coupling", "lead_shrinks"}
    shrinks = next(c for c in claim.criteria if c.name == "lead_shrinks")
    assert (shrinks.arm, shrinks.other_arm, shrinks.metric, shrinks.op) == (
        "tarflow",
        "tarflow_few",
        "lead",
        "<",
    )
    assert shrinks.smallest_effect == 0.02 and shrinks.effect_source
    # a diverged _few run would fake a shrinking lead: its own gates set lead_shrinks aside
    assert by_name_guards(claim) == {
        "tarflow_few_learns": ("lead_shrinks",),
        "coupling_few_learns": ("lead_shrinks",),
    }
    head = claim.headline_criterion()
    assert (head.arm, head.other_arm, head.op, head.paired) == ("tarflow", "coupling", "<", True)
    assert head.smallest_effect == 0.02 and head.effect_source
    by_name = {g.name: g for g in claim.gates}
    assert by_name["params_matched"].threshold == 0.10
    assert by_name["coupling_not_overfit"].threshold == 0.01


def test_check_follows_the_verdict_protocol() -> None:
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "_contract", Path(__file__).resolve().parents[1] / "test_contract.py"
    )
    assert spec is not None and spec.loader is not None
    contract = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(contract)
    paper = next(p for p in contract.IMPLEMENTED if p.slug == "tarflow")
    assert contract._protocol_gaps(paper) == []


def test_tiny_run_reuses_the_sweep_pairs_items_and_measures_the_references() -> None:
    from icml25.generative.tarflow.check import ARM_SPECS, CHECK, PAIRS, check_data

    config = CHECK.config("tiny")
    result = CHECK.run("tiny", seeds=[0], overrides={"conditional": False})
    sweep = result.series["0"]["sweep"]
    for arm in config.arms:
        kind, subset = ARM_SPECS[arm]
        lr = result.metrics[arm]["lr"].mean
        assert lr in config.lrs
        vals = {float(k): v for k, v in sweep[kind].items()}
        assert vals[lr] == min(vals.values())  # the lowest validation bits/dim of the sweep
        if subset == "all":  # seed 0 of an all-data arm is its sweep run
            assert result.metrics[arm]["best_val_bpd"].mean == pytest.approx(vals[lr])
    data = check_data(config)
    assert result.metrics["tarflow"]["n_train_images"].mean == len(data.x_train) == 9 * 64
    assert result.metrics["tarflow_few"]["n_train_images"].mean == 128
    assert result.metrics["coupling_mid"]["n_train_images"].mean == 256
    for tf_arm, cp_arm in PAIRS.values():  # the lead at each size is the paired difference
        lead = result.metrics[tf_arm]["lead"].mean
        assert lead == pytest.approx(
            result.metrics[tf_arm]["test_bpd"].mean - result.metrics[cp_arm]["test_bpd"].mean
        )
    assert result.metrics["tarflow"]["lead_mid"].mean == pytest.approx(
        result.metrics["tarflow_mid"]["lead"].mean
    )
    assert result.metrics["uniform"]["test_bpd"].mean == pytest.approx(math.log2(17))
    # the identity flow under a standard normal prior is worse than the uniform floor on [-1, 1]
    assert result.metrics["untrained"]["test_bpd"].mean > math.log2(17)
    tf = result.metrics["tarflow"]
    assert tf["lead_shrink"].mean == pytest.approx(tf["lead_few"].mean - tf["lead_large"].mean)
    assert result.metrics["coupling"]["param_gap"].mean <= 0.1
    assert {"val_rise", "val_margin", "val_gain_last_quarter"} <= set(tf)


def test_save_pretrained_round_trip_in_the_diffusers_layout(tmp_path) -> None:
    import json

    from safetensors.torch import load_file

    model = _tarflow()
    _randomize(model)
    folder = model.save_pretrained(tmp_path / "flow")
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "diffusion_pytorch_model.safetensors"]
    config = json.loads((folder / "config.json").read_text())
    assert config["_class_name"] == "TarFlow" and config["channels"] == model.config.channels
    plain = load_file(str(folder / "diffusion_pytorch_model.safetensors"))  # readable without icml25
    assert plain.keys() == model.state_dict().keys()
    again = TarFlow.from_pretrained(folder)
    assert again.config == model.config and not again.training
    x = _x(model)
    torch.testing.assert_close(again.nll(x), model.eval().nll(x))
    a = again.sample(2, temperature=0.5, generator=torch.Generator().manual_seed(0))
    b = model.sample(2, temperature=0.5, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(a, b, equal_nan=True)
    assert next(again.parameters()).dtype == torch.float64  # the saved dtype by default
    single = TarFlow.from_pretrained(folder, torch_dtype=torch.float32)
    assert next(single.parameters()).dtype == torch.float32


def test_from_pretrained_names_what_is_wrong(tmp_path) -> None:
    import json

    with pytest.raises(FileNotFoundError, match="pretrained_model_name_or_path.*nothing is downloaded"):
        TarFlow.from_pretrained(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no config.json"):
        TarFlow.from_pretrained(tmp_path / "empty")
    folder = _tarflow().save_pretrained(tmp_path / "flow")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "_class_name": "UNet2DModel"}))
    with pytest.raises(ValueError, match="holds a UNet2DModel, not a TarFlow"):
        TarFlow.from_pretrained(folder)
    (folder / "config.json").write_text(json.dumps({**config, "depth": 3}))
    with pytest.raises(ValueError, match=r"\['depth'\] are not fields of TarFlowConfig"):
        TarFlow.from_pretrained(folder)
    with pytest.raises(ValueError, match="torch_dtype"):
        (folder / "config.json").write_text(json.dumps(config))
        TarFlow.from_pretrained(folder, torch_dtype=torch.int64)


def test_figures_draw_when_a_diverged_run_stopped_early(tmp_path) -> None:
    """A run whose loss went non-finite stops early, so its curves are shorter than the other seed's;
    the figures use the common prefix instead of failing (the second small run of issue 41 lost its
    figures this way)."""
    from icml25.core.check import SeedOutcome
    from icml25.generative.tarflow.check import CHECK

    config = CHECK.config("small")

    def outcome(n_steps: int) -> SeedOutcome:
        curve = {
            "steps": list(range(1, n_steps + 1)),
            "train_bpd": [3.0] * n_steps,
            "val_steps": list(range(20, n_steps + 1, 20)),
            "val_bpd": [2.5] * (n_steps // 20),
        }
        return SeedOutcome(
            metrics={},
            series={
                "curves": {arm: curve for arm in config.arms},
                "samples": {arm: np.zeros((10, 64)).tolist() for arm in config.arms},
            },
        )

    class Ctx:
        def __init__(self) -> None:
            self.saved: list[str] = []

        def save_figure(self, fig, name: str, caption: str) -> None:  # type: ignore[no-untyped-def]
            import matplotlib.pyplot as plt

            fig.savefig(tmp_path / f"{name}.png")
            plt.close(fig)
            self.saved.append(name)

    ctx = Ctx()
    CHECK.make_figures(config, [outcome(800), outcome(40)], ctx)  # type: ignore[arg-type]
    assert ctx.saved == ["training_curves", "samples"]
