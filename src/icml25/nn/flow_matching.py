"""Conditional flow matching on the linear (rectified) path: the pieces every flow-matching paper shares.

Lipman et al., *Flow Matching for Generative Modeling* (ICLR 2023) and Liu et al., *Flow Straight
and Fast* (ICLR 2023); the ``sigma = 0`` conditional path that ``torchcfm.ConditionalFlowMatcher``
implements. Convention (as in torchcfm): **t = 0 is pure noise, t = 1 is data**, so ``t`` is the
clean fraction of the sample.

* path:      ``x_t = (1 - t) x0 + t x1`` with ``x0 ~ N(0, I)`` and ``x1`` a data sample
  (:func:`linear_path`);
* target:    its velocity ``u_t = d x_t / dt = x1 - x0`` (:func:`target_velocity`);
* loss:      ``E_{t, x0, x1} || f(x_t, t, cond) - (x1 - x0) ||^2`` for any velocity network ``f``
  (:func:`flow_matching_loss`), optionally over a mask of the entries that are generated;
* sampler:   Euler steps of ``dx/dt = f(x, t, cond)`` from ``t = 0`` to ``1``
  (:func:`euler_sample`), with optional clamping of known entries (inpainting-style conditioning);
* times:     :func:`sample_times`, uniform or logit-normal (Esser et al., 2024).

A velocity network is any callable ``f(x_t [B, ...], t [B], cond) -> [B, ...]``; ``cond`` is passed
through untouched (``None``, a tensor or any object the network understands), so graph networks,
transformers and MLPs plug in the same way. Diffusion papers that use another time convention
convert at the call: a DDPM-style noise level ``s`` (1 = noise) is ``t = 1 - s`` here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import torch
from torch import Tensor

from icml25.core.validate import check_finite_tensor, check_positive

__all__ = [
    "VelocityFn",
    "linear_path",
    "target_velocity",
    "sample_times",
    "flow_matching_loss",
    "euler_sample",
]

VelocityFn = Callable[[Tensor, Tensor, Any], Tensor]


def _broadcast_t(t: Tensor, like: Tensor) -> Tensor:
    """``t [B]`` reshaped to ``[B, 1, ..., 1]`` so it broadcasts against ``like [B, ...]``."""
    return t.reshape(t.shape[0], *([1] * (like.ndim - 1))).to(like.dtype)


def _check_times(t: Any, batch: int) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"t must be a torch.Tensor of shape [B], got {type(t).__name__}")
    if t.ndim != 1 or t.shape[0] != batch:
        raise ValueError(f"t must have shape [{batch}] (one time per sample), got {tuple(t.shape)}")
    if not t.is_floating_point():
        raise TypeError(f"t must be a floating-point tensor, got {t.dtype}")
    if not torch.isfinite(t).all() or (t < 0).any() or (t > 1).any():
        raise ValueError("t must lie in [0, 1] (0 = noise, 1 = data)")


def linear_path(x0: Tensor, x1: Tensor, t: Tensor) -> Tensor:
    """The point ``x_t = (1 - t) x0 + t x1`` of the straight path from noise ``x0`` to data ``x1``.

    Args:
        x0: ``[B, ...]`` noise.
        x1: ``[B, ...]`` data, same shape as ``x0``.
        t: ``[B]`` clean fraction in [0, 1].

    Returns:
        ``[B, ...]`` interpolant.
    """
    check_finite_tensor("x0", x0, floating=True)
    check_finite_tensor("x1", x1, floating=True)
    if x0.shape != x1.shape:
        raise ValueError(f"x0 and x1 must have the same shape, got {tuple(x0.shape)} and {tuple(x1.shape)}")
    _check_times(t, x1.shape[0])
    tb = _broadcast_t(t, x1)
    return (1.0 - tb) * x0 + tb * x1


def target_velocity(x0: Tensor, x1: Tensor) -> Tensor:
    """The conditional velocity ``u_t = x1 - x0`` of the linear path (constant in ``t``)."""
    if x0.shape != x1.shape:
        raise ValueError(f"x0 and x1 must have the same shape, got {tuple(x0.shape)} and {tuple(x1.shape)}")
    return x1 - x0


def sample_times(
    n: int,
    *,
    generator: torch.Generator | None = None,
    kind: Literal["uniform", "logit_normal"] = "uniform",
    eps: float = 0.0,
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """Draw ``n`` training times in ``[eps, 1 - eps]``.

    Args:
        n: number of times.
        generator: source of randomness (a private one keeps runs a function of their seed).
        kind: ``"uniform"`` (torchcfm's default) or ``"logit_normal"`` (sigmoid of a standard
            normal: more weight on mid-path times).
        eps: keep away from the endpoints by this much (0 allowed).
        dtype: floating dtype of the result.
    """
    check_positive("n", n, integer=True)
    if not 0.0 <= eps < 0.5:
        raise ValueError(f"eps must lie in [0, 0.5), got {eps!r}")
    if kind == "uniform":
        t = torch.rand(n, generator=generator, dtype=dtype)
    elif kind == "logit_normal":
        t = torch.sigmoid(torch.randn(n, generator=generator, dtype=dtype))
    else:
        raise ValueError(f"kind must be 'uniform' or 'logit_normal', got {kind!r}")
    return eps + (1.0 - 2.0 * eps) * t


def flow_matching_loss(
    velocity: VelocityFn,
    x1: Tensor,
    *,
    cond: Any = None,
    generator: torch.Generator | None = None,
    t: Tensor | None = None,
    x0: Tensor | None = None,
    mask: Tensor | None = None,
    time_kind: Literal["uniform", "logit_normal"] = "uniform",
) -> Tensor:
    """Conditional flow-matching loss ``mean || f(x_t, t, cond) - (x1 - x0) ||^2`` on the linear path.

    Args:
        velocity: the network ``f(x_t [B, ...], t [B], cond) -> [B, ...]``.
        x1: ``[B, ...]`` data batch.
        cond: passed to ``velocity`` unchanged.
        generator: draws ``t`` and ``x0`` when they are not given.
        t: ``[B]`` times (default: :func:`sample_times` of ``time_kind``).
        x0: ``[B, ...]`` noise (default: standard normal).
        mask: ``[B, ...]`` (or broadcastable) weights, 1 where an entry is generated, 0 where it is
            known; the loss is the weighted mean over the generated entries.
        time_kind: distribution of the default ``t``.

    Returns:
        Scalar loss.
    """
    check_finite_tensor("x1", x1, floating=True)
    batch = x1.shape[0]
    # draws come from the generator's device (a CPU generator keeps CPU runs bit-identical) and then
    # move to the batch's device, so a GPU batch with a CPU generator works
    draw_device = generator.device if generator is not None else x1.device
    if t is None:
        t = sample_times(batch, generator=generator, kind=time_kind, dtype=x1.dtype).to(x1.device)
    _check_times(t, batch)
    if x0 is None:
        x0 = torch.randn(x1.shape, generator=generator, dtype=x1.dtype, device=draw_device).to(x1.device)
    x_t = linear_path(x0, x1, t)
    pred = velocity(x_t, t, cond)
    if not isinstance(pred, Tensor) or pred.shape != x1.shape:
        got = tuple(pred.shape) if isinstance(pred, Tensor) else type(pred).__name__
        raise ValueError(f"velocity must return a tensor of shape {tuple(x1.shape)}, got {got}")
    err = (pred - target_velocity(x0, x1)) ** 2
    if mask is None:
        return err.mean()
    weights = torch.broadcast_to(mask.to(err.dtype), err.shape)
    total = weights.sum()
    if total <= 0:
        raise ValueError("mask must select at least one entry")
    return (err * weights).sum() / total


@torch.no_grad()
def euler_sample(
    velocity: VelocityFn,
    x0: Tensor,
    *,
    steps: int,
    cond: Any = None,
    known: Tensor | None = None,
    known_mask: Tensor | None = None,
    noise: Tensor | None = None,
    return_path: bool = False,
) -> Tensor | tuple[Tensor, list[Tensor]]:
    """Integrate ``dx/dt = f(x, t, cond)`` from ``t = 0`` (noise ``x0``) to ``t = 1`` with Euler steps.

    Conditional generation by clamping (the official spatial-transcriptomics tasks): where
    ``known_mask`` is 1 the state is reset at every step to the known entries on the same path,
    ``(1 - t) noise + t known``, so the network always sees consistent context.

    Args:
        velocity: the network ``f(x [B, ...], t [B], cond) -> [B, ...]``.
        x0: ``[B, ...]`` starting noise.
        steps: number of Euler steps (NFE).
        cond: passed to ``velocity`` unchanged.
        known: ``[B, ...]`` known values (used with ``known_mask``).
        known_mask: ``[B, ...]`` 1 where ``known`` is fixed.
        noise: the noise paired with ``known`` (default ``x0``).
        return_path: also return the states at every step.

    Returns:
        ``x1`` ``[B, ...]``, or ``(x1, [x_0, ..., x_steps])`` with ``return_path``.
    """
    check_positive("steps", steps, integer=True)
    check_finite_tensor("x0", x0, floating=True)
    if (known is None) != (known_mask is None):
        raise ValueError("known and known_mask must be given together")
    if known is not None and known.shape != x0.shape:
        raise ValueError(f"known must have the shape of x0 {tuple(x0.shape)}, got {tuple(known.shape)}")
    base = x0 if noise is None else noise
    x = x0.clone()
    path = [x.clone()] if return_path else []
    dt = 1.0 / steps
    for i in range(steps):
        t = torch.full((x.shape[0],), i * dt, dtype=x.dtype)
        if known is not None and known_mask is not None:
            tb = _broadcast_t(t, x)
            m = known_mask.to(x.dtype)
            x = m * ((1 - tb) * base + tb * known) + (1 - m) * x
        x = x + dt * velocity(x, t, cond)
        if return_path:
            path.append(x.clone())
    if known is not None and known_mask is not None:
        m = known_mask.to(x.dtype)
        x = m * known + (1 - m) * x
    return (x, path) if return_path else x
