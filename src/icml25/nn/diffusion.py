"""Denoising diffusion pieces shared by the papers: schedules, forward processes, losses, samplers, EMA, UNet.

Ho et al., *Denoising Diffusion Probabilistic Models* (NeurIPS 2020) and Song et al., *Denoising
Diffusion Implicit Models* (ICLR 2021); cosine schedule from Nichol & Dhariwal, *Improved DDPM* (2021).
Time convention: integer steps ``t in {0, ..., T-1}``, **larger t = noisier** (as in diffusers).

* schedules:  :func:`beta_schedule` (``"linear"``, ``"cosine"``) and :func:`alphas_cumprod`; the
  ``linear`` and ``cosine`` betas equal diffusers' ``DDPMScheduler(beta_schedule="linear" |
  "squaredcos_cap_v2").betas`` (a test pins it); :class:`NoiseSchedule` holds both;
* noise:      :func:`sample_noise` draws unit-variance Gaussian or Laplace noise (Laplace scale
  ``1/sqrt 2`` unless ``laplace_scale`` sets another, by inverse CDF so any ``torch.Generator``
  works). diffusers' schedulers only ever draw Gaussian noise: the Laplace family is ours
  (L-Diffusion, ICML 2025, uses it);
* forward:    :func:`q_sample`, ``x_t = sqrt(ab_t) x0 + sqrt(1 - ab_t) n`` (variance preserving,
  ``form="vp"``), or the additive form ``x_t = x0 + sqrt(1 - ab_t) n`` (``form="additive"``);
* loss:       :func:`ddpm_loss`, epsilon prediction with L2 (Gaussian ML) or L1 (Laplace ML);
* samplers:   :func:`ddim_step` / :func:`ddim_sample` (deterministic DDIM, ``eta = 0``; one step
  equals ``DDIMScheduler.step`` with ``set_alpha_to_one=True``); :func:`flow_euler_sample` is the
  flow-matching Euler sampler of :mod:`icml25.nn.flow_matching` with a back-propagatable option.
  Both samplers take ``differentiable=True`` to keep the autograd graph (plain torch ops);
* :class:`EMA` of parameters; :class:`SmallUNet`, a small UNet with a sinusoidal time embedding
  (:class:`icml25.nn.embeddings.TimestepEmbedder`) and an optional class or vector condition.

A noise-prediction network is any callable ``eps(x_t [B, ...], t [B] long, cond) -> [B, ...]``.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from icml25.core.validate import check_finite_tensor, check_positive
from icml25.nn.embeddings import TimestepEmbedder
from icml25.nn.flow_matching import VelocityFn, euler_sample

__all__ = [
    "NoiseFamily",
    "EpsFn",
    "beta_schedule",
    "alphas_cumprod",
    "NoiseSchedule",
    "sample_noise",
    "q_sample",
    "predict_x0",
    "ddpm_loss",
    "ddim_step",
    "ddim_sample",
    "flow_euler_sample",
    "EMA",
    "SmallUNet",
]

NoiseFamily = Literal["gaussian", "laplace"]
ScheduleKind = Literal["linear", "cosine"]
EpsFn = Callable[[Tensor, Tensor, Any], Tensor]
_FAMILIES = ("gaussian", "laplace")


def beta_schedule(
    kind: ScheduleKind, T: int, *, beta_start: float = 1e-4, beta_end: float = 0.02, max_beta: float = 0.999
) -> Tensor:
    """``[T]`` float32 betas: ``"linear"`` (DDPM, ``beta_start`` to ``beta_end``) or ``"cosine"``.

    Cosine: ``beta_i = min(1 - abar((i+1)/T) / abar(i/T), max_beta)`` with
    ``abar(s) = cos²((s + 0.008)/1.008 · π/2)`` (Nichol & Dhariwal eq. 17; diffusers'
    ``squaredcos_cap_v2``).
    """
    check_positive("T", T, integer=True)
    if kind == "linear":
        if not 0 < beta_start <= beta_end < 1:
            raise ValueError(f"need 0 < beta_start <= beta_end < 1, got {beta_start}, {beta_end}")
        return torch.linspace(beta_start, beta_end, T, dtype=torch.float32)
    if kind == "cosine":

        def abar(s: float) -> float:
            return math.cos((s + 0.008) / 1.008 * math.pi / 2) ** 2

        betas = [min(1 - abar((i + 1) / T) / abar(i / T), max_beta) for i in range(T)]
        return torch.tensor(betas, dtype=torch.float32)
    raise ValueError(f"kind must be 'linear' or 'cosine', got {kind!r}")


def alphas_cumprod(betas: Tensor) -> Tensor:
    """``abar_t = prod_{s <= t} (1 - beta_s)``."""
    check_finite_tensor("betas", betas, ndim=1, floating=True)
    if (betas <= 0).any() or (betas >= 1).any():
        raise ValueError("betas must lie in (0, 1)")
    return torch.cumprod(1.0 - betas, dim=0)


@dataclass(frozen=True)
class NoiseSchedule:
    """A discrete schedule of ``T`` steps; ``betas`` and ``alphas_cumprod`` are float32 ``[T]``."""

    kind: ScheduleKind = "cosine"
    T: int = 1000
    betas: Tensor = field(init=False, repr=False, compare=False)
    alphas_cumprod: Tensor = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        betas = beta_schedule(self.kind, self.T)
        object.__setattr__(self, "betas", betas)
        object.__setattr__(self, "alphas_cumprod", alphas_cumprod(betas))

    def abar(self, t: Tensor) -> Tensor:
        """``abar_t`` for integer steps ``t [B]``."""
        _check_steps(t, self.T)
        return self.alphas_cumprod.to(t.device)[t.long()]


def _check_steps(t: Any, T: int) -> None:
    if not isinstance(t, Tensor) or t.ndim != 1:
        raise ValueError(f"t must be a 1-D tensor of integer steps, got {getattr(t, 'shape', type(t))}")
    if t.is_floating_point() or t.is_complex():
        raise TypeError(f"t must hold integer steps, got {t.dtype}")
    if t.numel() == 0 or (t < 0).any() or (t >= T).any():
        raise ValueError(f"t must be non-empty with steps in [0, {T - 1}]")


def _bcast(v: Tensor, like: Tensor) -> Tensor:
    return v.reshape(v.shape[0], *([1] * (like.ndim - 1))).to(like.dtype)


def sample_noise(
    shape: Sequence[int],
    family: NoiseFamily = "gaussian",
    *,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
    laplace_scale: float | None = None,
) -> Tensor:
    """Zero-mean unit-variance noise: ``N(0, 1)`` or ``Laplace(0, 1/sqrt 2)`` (variance ``2 b² = 1``).

    Laplace draws use the inverse CDF ``-b sign(u) log(1 - 2|u|)``, ``u ~ U(-1/2, 1/2)``.
    ``laplace_scale`` sets ``b`` for the Laplace family instead (``None``: ``1/sqrt 2``, unit
    variance). The official L-Diffusion code adds ``Laplace(0, sqrt(1 - ab_t))`` noise, i.e. ``b = 1``
    before the ``sqrt(1 - ab_t)`` factor of :func:`q_sample` (variance 2); the same uniforms are drawn
    either way, so the two differ by the factor ``b sqrt 2`` only.
    """
    shape = tuple(int(s) for s in shape)
    if not shape or any(s <= 0 for s in shape):
        raise ValueError(f"shape must be non-empty with positive sizes, got {shape}")
    if laplace_scale is not None:
        check_positive("laplace_scale", laplace_scale)
        if family != "laplace":
            raise ValueError(f"laplace_scale applies to the Laplace family only, got family={family!r}")
    if family == "gaussian":
        return torch.randn(shape, generator=generator, dtype=dtype, device=device)
    if family == "laplace":
        b = 1 / math.sqrt(2) if laplace_scale is None else float(laplace_scale)
        u = torch.rand(shape, generator=generator, dtype=dtype, device=device) - 0.5
        tiny = torch.finfo(dtype).tiny
        return -b * torch.sign(u) * torch.log((1 - 2 * u.abs()).clamp_min(tiny))
    raise ValueError(f"family must be one of {_FAMILIES}, got {family!r}")


def q_sample(
    x0: Tensor,
    t: Tensor,
    schedule: NoiseSchedule,
    noise: Tensor,
    *,
    form: Literal["vp", "additive"] = "vp",
) -> Tensor:
    """The forward process ``q(x_t | x0)`` with the given ``noise`` (any family; unit variance unless
    drawn with another ``laplace_scale``).

    ``form="vp"``: ``sqrt(ab_t) x0 + sqrt(1 - ab_t) noise``; ``form="additive"``:
    ``x0 + sqrt(1 - ab_t) noise`` (no signal scaling, as the later L-Diffusion code does).
    """
    check_finite_tensor("x0", x0, floating=True)
    check_finite_tensor("noise", noise, floating=True)
    if noise.shape != x0.shape:
        raise ValueError(f"noise must have x0's shape {tuple(x0.shape)}, got {tuple(noise.shape)}")
    if t.ndim != 1 or t.shape[0] != x0.shape[0]:
        raise ValueError(f"t must have shape [{x0.shape[0]}], got {tuple(t.shape)}")
    ab = _bcast(schedule.abar(t), x0)
    if form == "vp":
        return ab.sqrt() * x0 + (1 - ab).sqrt() * noise
    if form == "additive":
        return x0 + (1 - ab).sqrt() * noise
    raise ValueError(f"form must be 'vp' or 'additive', got {form!r}")


def predict_x0(
    x_t: Tensor, eps: Tensor, t: Tensor, schedule: NoiseSchedule, *, form: Literal["vp", "additive"] = "vp"
) -> Tensor:
    """Invert :func:`q_sample` for ``x0`` given a noise estimate ``eps``."""
    ab = _bcast(schedule.abar(t), x_t)
    if form == "vp":
        return (x_t - (1 - ab).sqrt() * eps) / ab.sqrt()
    if form == "additive":
        return x_t - (1 - ab).sqrt() * eps
    raise ValueError(f"form must be 'vp' or 'additive', got {form!r}")


def ddpm_loss(
    eps_fn: EpsFn,
    x0: Tensor,
    schedule: NoiseSchedule,
    *,
    family: NoiseFamily = "gaussian",
    norm: Literal["l2", "l1"] | None = None,
    cond: Any = None,
    form: Literal["vp", "additive"] = "vp",
    generator: torch.Generator | None = None,
    laplace_scale: float | None = None,
) -> Tensor:
    """Epsilon-prediction loss ``E_{t, n} |eps(x_t, t) - n|^p`` with uniform ``t`` (Ho et al. eq. 14).

    ``norm`` defaults to the maximum-likelihood choice for the noise family: ``"l2"`` for Gaussian,
    ``"l1"`` for Laplace. ``laplace_scale``: the Laplace noise's scale ``b`` (see :func:`sample_noise`;
    ``None`` is unit variance).
    """
    check_finite_tensor("x0", x0, floating=True)
    norm = norm or ("l1" if family == "laplace" else "l2")
    t = torch.randint(0, schedule.T, (x0.shape[0],), generator=generator, device=x0.device)
    noise = sample_noise(
        x0.shape, family, generator=generator, dtype=x0.dtype, device=x0.device, laplace_scale=laplace_scale
    )
    pred = eps_fn(q_sample(x0, t, schedule, noise, form=form), t, cond)
    if norm == "l2":
        return F.mse_loss(pred, noise)
    if norm == "l1":
        return F.l1_loss(pred, noise)
    raise ValueError(f"norm must be 'l2' or 'l1', got {norm!r}")


def ddim_step(x_t: Tensor, eps: Tensor, t: int, t_prev: int, schedule: NoiseSchedule) -> Tensor:
    """One deterministic DDIM step ``t -> t_prev`` (``t_prev < 0`` means the clean end, ``abar = 1``).

    ``x_prev = sqrt(ab_prev) x0_hat + sqrt(1 - ab_prev) eps`` with
    ``x0_hat = (x_t - sqrt(1 - ab_t) eps) / sqrt(ab_t)`` (Song et al. eq. 12, ``sigma = 0``).
    """
    if not 0 <= t < schedule.T or t_prev >= t:
        raise ValueError(f"need 0 <= t < T and t_prev < t, got t={t}, t_prev={t_prev}")
    ab = schedule.alphas_cumprod[t].to(x_t.dtype)
    ab_prev = schedule.alphas_cumprod[t_prev].to(x_t.dtype) if t_prev >= 0 else x_t.new_tensor(1.0)
    x0_hat = (x_t - (1 - ab).sqrt() * eps) / ab.sqrt()
    return ab_prev.sqrt() * x0_hat + (1 - ab_prev).sqrt() * eps


def ddim_sample(
    eps_fn: EpsFn,
    x_T: Tensor,
    schedule: NoiseSchedule,
    *,
    steps: int,
    cond: Any = None,
    differentiable: bool = False,
    return_path: bool = False,
) -> Tensor | tuple[Tensor, list[Tensor]]:
    """Deterministic DDIM from ``x_T`` over ``steps`` evenly spaced steps (diffusers' ``"leading"``
    spacing ``t_k = k T/steps``). ``differentiable=True`` keeps the autograd graph through every step
    (for rewards or losses on samples); otherwise it runs under ``torch.no_grad``."""
    check_positive("steps", steps, integer=True)
    check_finite_tensor("x_T", x_T, floating=True)
    if steps > schedule.T:
        raise ValueError(f"steps must be <= T={schedule.T}, got {steps}")
    stride = schedule.T // steps
    times = [k * stride for k in range(steps)][::-1]
    ctx = contextlib.nullcontext() if differentiable else torch.no_grad()
    x = x_T
    path = [x]
    with ctx:
        for i, t in enumerate(times):
            t_prev = times[i + 1] if i + 1 < len(times) else -1
            tt = torch.full((x.shape[0],), t, dtype=torch.long, device=x.device)
            x = ddim_step(x, eps_fn(x, tt, cond), t, t_prev, schedule)
            path.append(x)
    return (x, path) if return_path else x


def flow_euler_sample(
    velocity: VelocityFn, x0: Tensor, *, steps: int, cond: Any = None, differentiable: bool = False
) -> Tensor:
    """Flow-matching Euler sampler (t = 0 noise to t = 1 data): :func:`icml25.nn.flow_matching.euler_sample`,
    with ``differentiable=True`` running the same code with autograd enabled."""
    if not differentiable:
        out = euler_sample(velocity, x0, steps=steps, cond=cond)
    else:
        with torch.enable_grad():
            out = euler_sample.__wrapped__(velocity, x0, steps=steps, cond=cond)  # type: ignore[attr-defined]
    assert isinstance(out, Tensor)
    return out


class EMA:
    """Exponential moving average of a module's floating-point parameters and buffers.

    ``shadow <- decay · shadow + (1 - decay) · param`` after each :meth:`update`; :meth:`copy_to`
    writes the averages into a module, :meth:`swapped` temporarily (for evaluation).

    ``warmup=True`` uses ``min(decay, (1 + k) / (10 + k))`` at the ``k``-th update (1-based), the
    warm-up of diffusers' ``EMAModel``: over a few hundred steps a fixed decay such as 0.99 would keep
    a visible share of the starting (e.g. random) weights in the average.

    :meth:`update` runs the rule as two ``torch._foreach`` calls over all averaged tensors (the same
    arithmetic per tensor, ``shadow * decay`` then ``+ (1 - decay) * value``, so the averages are
    bit-identical to a per-tensor loop). ``module_keeps_tensors=True`` also looks the live tensors of
    the module given here up once instead of through ``state_dict()`` at every update, which saves
    Python time per step for modules with many entries; the module must then keep its tensors (updated
    in place, as optimisers and BatchNorm do; not re-assigned). Another module passed to :meth:`update`
    is looked up through its ``state_dict()``.
    """

    def __init__(
        self,
        module: nn.Module,
        decay: float = 0.999,
        *,
        warmup: bool = False,
        module_keeps_tensors: bool = False,
    ) -> None:
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"decay must lie in [0, 1), got {decay}")
        self.decay = float(decay)
        self.warmup = bool(warmup)
        self.num_updates = 0
        state = module.state_dict()
        self.shadow = {k: v.detach().clone() for k, v in state.items() if v.is_floating_point()}
        self._avg = list(self.shadow.values())
        self._live_of: tuple[int, list[Tensor]] | None = None
        if module_keeps_tensors:
            self._live_of = (id(module), [state[k].detach() for k in self.shadow])

    def current_decay(self) -> float:
        """The decay the next :meth:`update` applies."""
        if not self.warmup:
            return self.decay
        k = self.num_updates + 1
        return min(self.decay, (1 + k) / (10 + k))

    @torch.no_grad()
    def update(self, module: nn.Module) -> None:
        decay = self.current_decay()
        self.num_updates += 1
        if self._live_of is not None and self._live_of[0] == id(module):
            live = self._live_of[1]
        else:
            state = module.state_dict()
            missing = [k for k in self.shadow if k not in state]
            if missing:
                raise ValueError(f"module lacks the averaged entries {missing[:3]} (of {len(missing)})")
            live = [state[k].detach() for k in self.shadow]
        torch._foreach_mul_(self._avg, decay)
        torch._foreach_add_(self._avg, live, alpha=1 - decay)

    @torch.no_grad()
    def copy_to(self, module: nn.Module) -> None:
        state = module.state_dict()
        for k, v in self.shadow.items():
            state[k].copy_(v)

    @contextlib.contextmanager
    def swapped(self, module: nn.Module) -> Iterator[nn.Module]:
        backup = {k: v.detach().clone() for k, v in module.state_dict().items() if k in self.shadow}
        self.copy_to(module)
        try:
            yield module
        finally:
            with torch.no_grad():
                state = module.state_dict()
                for k, v in backup.items():
                    state[k].copy_(v)


class _ResBlock(nn.Module):
    def __init__(self, cin: int, cout: int, emb_dim: int | None, groups: int) -> None:
        super().__init__()
        self.norm1 = nn.GroupNorm(math.gcd(groups, cin), cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.norm2 = nn.GroupNorm(math.gcd(groups, cout), cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.emb = nn.Linear(emb_dim, cout) if emb_dim else None
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x: Tensor, emb: Tensor | None) -> Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        if self.emb is not None and emb is not None:
            h = h + self.emb(F.silu(emb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return self.skip(x) + h


class SmallUNet(nn.Module):
    """A small UNet ``(x [B, C, H, W], t [B] | None, cond) -> [B, out_channels, H, W]``.

    One residual block per level, average-pool down and nearest up, skip concatenation. ``time=True``
    adds a sinusoidal time embedding to every block; ``n_classes`` (integer labels ``[B]``) or
    ``cond_dim`` (vectors ``[B, cond_dim]``) adds a condition to it. ``H`` and ``W`` must be divisible
    by ``2^(len(channels) - 1)``. With ``time=False`` it is a plain segmentation UNet.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        channels: Sequence[int] = (32, 64),
        *,
        time: bool = True,
        n_classes: int | None = None,
        cond_dim: int | None = None,
        groups: int = 8,
    ) -> None:
        super().__init__()
        check_positive("in_channels", in_channels, integer=True)
        check_positive("out_channels", out_channels, integer=True)
        chans = [int(c) for c in channels]
        if not chans or any(c <= 0 for c in chans):
            raise ValueError(f"channels must be non-empty positive ints, got {channels}")
        emb_dim = 4 * chans[0] if (time or n_classes or cond_dim) else None
        self.time_embed = TimestepEmbedder(emb_dim, freq_dim=64) if (time and emb_dim) else None
        self.class_embed = nn.Embedding(n_classes, emb_dim) if (n_classes and emb_dim) else None
        self.cond_embed = nn.Linear(cond_dim, emb_dim) if (cond_dim and emb_dim) else None
        self.emb_dim = emb_dim
        self.stem = nn.Conv2d(in_channels, chans[0], 3, padding=1)
        self.down = nn.ModuleList()
        prev = chans[0]
        for c in chans:
            self.down.append(_ResBlock(prev, c, emb_dim, groups))
            prev = c
        self.mid = _ResBlock(prev, prev, emb_dim, groups)
        self.up = nn.ModuleList()
        for c in reversed(chans):
            self.up.append(_ResBlock(prev + c, c, emb_dim, groups))
            prev = c
        self.out = nn.Sequential(
            nn.GroupNorm(math.gcd(groups, prev), prev), nn.SiLU(), nn.Conv2d(prev, out_channels, 1)
        )
        self.levels = len(chans)

    def forward(self, x: Tensor, t: Tensor | None = None, cond: Any = None) -> Tensor:
        if x.ndim != 4:
            raise ValueError(f"x must be [B, C, H, W], got {tuple(x.shape)}")
        div = 2 ** (self.levels - 1)
        if x.shape[-1] % div or x.shape[-2] % div:
            raise ValueError(f"x's height and width must be divisible by {div}, got {tuple(x.shape[-2:])}")
        emb: Tensor | None = None
        if self.time_embed is not None:
            if t is None:
                raise ValueError("t is required by a time-conditioned SmallUNet")
            emb = self.time_embed(t)
        if cond is not None and (self.class_embed is not None or self.cond_embed is not None):
            c = self.class_embed(cond.long()) if self.class_embed is not None else self.cond_embed(cond)  # type: ignore[misc]
            emb = c if emb is None else emb + c
        h = self.stem(x)
        skips = []
        for i, block in enumerate(self.down):
            h = block(h, emb)
            skips.append(h)
            if i < self.levels - 1:
                h = F.avg_pool2d(h, 2)
        h = self.mid(h, emb)
        for i, block in enumerate(self.up):
            s = skips.pop()
            if h.shape[-1] != s.shape[-1]:
                h = F.interpolate(h, size=s.shape[-2:], mode="nearest")
            h = block(torch.cat([h, s], dim=1), emb)
            del i
        return self.out(h)
