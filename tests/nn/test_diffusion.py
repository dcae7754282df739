"""Tests for icml25.nn.diffusion: schedules and DDIM against diffusers, Laplace noise, losses, EMA, UNet."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.nn.diffusion import (
    EMA,
    NoiseSchedule,
    SmallUNet,
    alphas_cumprod,
    beta_schedule,
    ddim_sample,
    ddim_step,
    ddpm_loss,
    flow_euler_sample,
    predict_x0,
    q_sample,
    sample_noise,
)


@pytest.mark.parametrize(("kind", "name"), [("linear", "linear"), ("cosine", "squaredcos_cap_v2")])
def test_schedule_equals_diffusers(kind, name) -> None:
    diffusers = pytest.importorskip("diffusers")
    ref = diffusers.DDPMScheduler(num_train_timesteps=1000, beta_schedule=name)
    ours = NoiseSchedule(kind, 1000)
    torch.testing.assert_close(ours.betas, ref.betas.float(), rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(ours.alphas_cumprod, ref.alphas_cumprod.float(), rtol=1e-4, atol=1e-7)


def test_ddim_step_equals_diffusers() -> None:
    diffusers = pytest.importorskip("diffusers")
    ref = diffusers.DDIMScheduler(
        num_train_timesteps=1000, beta_schedule="squaredcos_cap_v2", set_alpha_to_one=True, clip_sample=False
    )
    ref.set_timesteps(10)
    sched = NoiseSchedule("cosine", 1000)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 4, 4, generator=g)
    eps = torch.randn(2, 3, 4, 4, generator=g)
    ts = [int(v) for v in ref.timesteps]
    for t, t_prev in [(ts[0], ts[1]), (ts[-1], -1)]:
        want = ref.step(eps, t, x, eta=0.0).prev_sample
        torch.testing.assert_close(ddim_step(x, eps, t, t_prev, sched), want, rtol=1e-4, atol=1e-5)


def test_ddim_sample_with_oracle_eps_recovers_x0() -> None:
    sched = NoiseSchedule("cosine", 1000)
    x0 = torch.randn(3, 2, 4, 4)
    noise = torch.randn_like(x0)
    xT = q_sample(x0, torch.full((3,), 999), sched, noise)

    def oracle(x, t, cond):  # the eps that is consistent with x0 at every step
        ab = sched.alphas_cumprod[t].reshape(-1, 1, 1, 1)
        return (x - ab.sqrt() * x0) / (1 - ab).sqrt()

    out = ddim_sample(oracle, xT, sched, steps=10)
    torch.testing.assert_close(out, x0, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("family", ["gaussian", "laplace"])
def test_noise_is_unit_variance_and_laplace_is_laplace(family) -> None:
    x = sample_noise((100_000,), family, generator=torch.Generator().manual_seed(1))
    assert abs(float(x.mean())) < 0.02
    assert abs(float(x.var()) - 1.0) < 0.03
    kurt = float(((x - x.mean()) ** 4).mean() / x.var() ** 2)
    assert abs(kurt - (6.0 if family == "laplace" else 3.0)) < 0.5  # Laplace excess kurtosis 3
    if family == "laplace":  # mean |x| = b = 1/sqrt 2
        assert abs(float(x.abs().mean()) - 1 / math.sqrt(2)) < 0.01


def test_laplace_scale_sets_b_on_the_same_uniforms() -> None:
    """The official L-Diffusion noise is Laplace(0, 1) before the sqrt(1 - ab_t) factor (variance 2):
    ``laplace_scale=1`` draws it from the same uniforms as the unit-variance default, sqrt 2 times wider."""
    default = sample_noise((50_000,), "laplace", generator=torch.Generator().manual_seed(3))
    official = sample_noise(
        (50_000,), "laplace", generator=torch.Generator().manual_seed(3), laplace_scale=1.0
    )
    torch.testing.assert_close(official, default * math.sqrt(2), rtol=1e-6, atol=1e-6)
    assert abs(float(official.var()) - 2.0) < 0.08
    assert abs(float(official.abs().mean()) - 1.0) < 0.02  # mean |x| = b
    explicit = sample_noise(
        (64,), "laplace", generator=torch.Generator().manual_seed(4), laplace_scale=1 / math.sqrt(2)
    )
    assert torch.equal(explicit, sample_noise((64,), "laplace", generator=torch.Generator().manual_seed(4)))
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="laplace_scale"):
            sample_noise((2,), "laplace", laplace_scale=bad)
    with pytest.raises(ValueError, match="laplace_scale"):
        sample_noise((2,), "gaussian", laplace_scale=1.0)


def test_ddpm_loss_passes_the_laplace_scale() -> None:
    x0 = torch.zeros(256, 4)
    sched = NoiseSchedule("linear", 10)

    def zero(x, t, c):  # predicts no noise: the L1 loss is E|n| = b
        return torch.zeros_like(x)

    unit = ddpm_loss(zero, x0, sched, family="laplace", generator=torch.Generator().manual_seed(0))
    wide = ddpm_loss(
        zero, x0, sched, family="laplace", generator=torch.Generator().manual_seed(0), laplace_scale=1.0
    )
    torch.testing.assert_close(wide, unit * math.sqrt(2), rtol=1e-5, atol=1e-6)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 999), st.sampled_from(["vp", "additive"]))
def test_predict_x0_inverts_q_sample(t, form) -> None:
    sched = NoiseSchedule("linear", 1000)
    x0 = torch.randn(2, 5, dtype=torch.float64)
    n = torch.randn(2, 5, dtype=torch.float64)
    tt = torch.full((2,), t)
    xt = q_sample(x0, tt, sched, n, form=form)
    torch.testing.assert_close(predict_x0(xt, n, tt, sched, form=form), x0, rtol=1e-3, atol=1e-3)


def test_ddpm_loss_zero_for_oracle_and_norm_default() -> None:
    sched = NoiseSchedule("cosine", 100)
    x0 = torch.zeros(4, 1, 4, 4)

    # with x0 = 0 and vp form, x_t = sqrt(1-ab) n, so eps = x_t / sqrt(1-ab) is exact
    def oracle(x, t, cond):
        return x / (1 - sched.alphas_cumprod[t]).sqrt().reshape(-1, 1, 1, 1)

    for fam in ("gaussian", "laplace"):
        assert float(ddpm_loss(oracle, x0, sched, family=fam)) < 1e-5
    zero = lambda x, t, c: torch.zeros_like(x)  # noqa: E731
    g = torch.Generator().manual_seed(0)
    l1 = ddpm_loss(zero, torch.zeros(64, 1, 8, 8), sched, family="laplace", generator=g)
    assert abs(float(l1) - 1 / math.sqrt(2)) < 0.05  # E|n| for unit-variance Laplace


def test_unet_shapes_conditions_and_differentiable_sampling() -> None:
    torch.manual_seed(0)
    net = SmallUNet(3, 3, (8, 16), n_classes=4)
    x = torch.randn(2, 3, 8, 8)
    out = net(x, torch.tensor([0, 5]), torch.tensor([1, 3]))
    assert out.shape == x.shape
    sched = NoiseSchedule("cosine", 50)
    y = ddim_sample(
        lambda a, t, c: net(a, t, c), x, sched, steps=3, cond=torch.tensor([1, 2]), differentiable=True
    )
    assert isinstance(y, torch.Tensor)
    y.square().mean().backward()
    assert net.stem.weight.grad is not None and net.stem.weight.grad.abs().sum() > 0
    with torch.no_grad():
        y2 = ddim_sample(lambda a, t, c: net(a, t, c), x, sched, steps=3, cond=torch.tensor([1, 2]))
    assert not y2.requires_grad
    seg = SmallUNet(5, 2, (8, 16), time=False, cond_dim=3)
    assert seg(torch.randn(1, 5, 8, 8), None, torch.randn(1, 3)).shape == (1, 2, 8, 8)
    with pytest.raises(ValueError, match="divisible"):
        net(torch.randn(1, 3, 7, 7), torch.tensor([0]))


def test_flow_euler_differentiable() -> None:
    w = torch.tensor(2.0, requires_grad=True)
    x1 = flow_euler_sample(
        lambda x, t, c: w * torch.ones_like(x), torch.zeros(3), steps=4, differentiable=True
    )
    x1.sum().backward()
    assert float(w.grad) == pytest.approx(3.0)
    assert not flow_euler_sample(
        lambda x, t, c: w * torch.ones_like(x), torch.zeros(3), steps=4
    ).requires_grad


def test_ema_tracks_and_swaps() -> None:
    lin = torch.nn.Linear(2, 1)
    ema = EMA(lin, decay=0.5)
    start = lin.weight.detach().clone()
    with torch.no_grad():
        lin.weight.add_(2.0)
    ema.update(lin)
    with ema.swapped(lin):
        torch.testing.assert_close(lin.weight, start + 1.0)
    torch.testing.assert_close(lin.weight, start + 2.0)


def test_ema_warmup_follows_the_diffusers_schedule() -> None:
    lin = torch.nn.Linear(1, 1, bias=False)
    ema = EMA(lin, decay=0.99, warmup=True)
    shadow = float(lin.weight)
    for k in range(1, 40):
        with torch.no_grad():
            lin.weight.fill_(float(k))
        d = min(0.99, (1 + k) / (10 + k))
        assert ema.current_decay() == d
        ema.update(lin)
        shadow = d * shadow + (1 - d) * k
    assert abs(float(ema.shadow["weight"]) - shadow) < 1e-4
    assert EMA(lin, decay=0.99).current_decay() == 0.99


def _per_tensor_ema(shadow: dict[str, torch.Tensor], module: torch.nn.Module, decay: float) -> None:
    # the update as a per-tensor loop (the implementation before the foreach one)
    for k, v in module.state_dict().items():
        if k in shadow:
            shadow[k].mul_(decay).add_(v.detach(), alpha=1 - decay)


@pytest.mark.parametrize("keeps", [False, True])
@pytest.mark.parametrize("warmup", [False, True])
def test_ema_foreach_update_is_the_per_tensor_loop_bit_for_bit(keeps: bool, warmup: bool) -> None:
    gen = torch.Generator().manual_seed(0)
    shared_norm = torch.nn.BatchNorm1d(4)  # one tensor under several state_dict keys
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), shared_norm, torch.nn.Linear(4, 4), shared_norm)
    ema = EMA(model, decay=0.9, warmup=warmup, module_keeps_tensors=keeps)
    ref = {k: v.detach().clone() for k, v in model.state_dict().items() if v.is_floating_point()}
    model.train()
    for _ in range(7):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn(p.shape, generator=gen))
            model(torch.randn(8, 3, generator=gen))  # moves the BatchNorm statistics in place
        _per_tensor_ema(ref, model, ema.current_decay())
        ema.update(model)
    assert ref.keys() == ema.shadow.keys()
    assert all(torch.equal(ref[k], ema.shadow[k]) for k in ref)
    other = torch.nn.Sequential(torch.nn.Linear(3, 4), shared_norm, torch.nn.Linear(4, 4), shared_norm)
    _per_tensor_ema(ref, other, ema.current_decay())  # another module: looked up through its state_dict
    ema.update(other)
    assert all(torch.equal(ref[k], ema.shadow[k]) for k in ref)
    with pytest.raises(ValueError, match="lacks"):
        ema.update(torch.nn.Linear(3, 4))


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="T"):
        beta_schedule("linear", 0)
    with pytest.raises(ValueError, match="kind"):
        beta_schedule("sigmoid", 10)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="betas"):
        alphas_cumprod(torch.tensor([0.5, 1.5]))
    with pytest.raises(ValueError, match="family"):
        sample_noise((2,), "cauchy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shape"):
        sample_noise((0, 2))
    s = NoiseSchedule("linear", 10)
    with pytest.raises(ValueError, match="NaN"):
        q_sample(torch.tensor([[float("nan")]]), torch.tensor([1]), s, torch.zeros(1, 1))
    with pytest.raises(TypeError, match="integer"):
        q_sample(torch.zeros(1, 1), torch.tensor([1.0]), s, torch.zeros(1, 1))
    with pytest.raises(ValueError, match="steps"):
        q_sample(torch.zeros(1, 1), torch.tensor([10]), s, torch.zeros(1, 1))
    with pytest.raises(ValueError, match="decay"):
        EMA(torch.nn.Linear(1, 1), decay=1.0)
    with pytest.raises(ValueError, match="channels"):
        SmallUNet(3, 3, ())
