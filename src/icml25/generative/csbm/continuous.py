"""A learned continuous-space Schrödinger bridge, the baseline of *Categorical Schrödinger Bridge
Matching* (CSBM; Ksenofontov and Korotin, ICML 2025, arXiv 2502.01416).

The paper compares CSBM with continuous-space SB solvers (ASBM, which runs D-IMF in R^D with a
Gaussian reference and learns each Markovian projection adversarially). Our stand-in runs the same
Iterative Markovian Fitting in R^D with a Brownian-motion reference of variance ``sigma^2`` on
``[0, 1]`` and learns each Markovian projection by drift matching (DSBM, Shi et al. 2023):

* the reference bridge between ``x_src`` (time 0) and ``x_tgt`` (time 1) is
  ``x_s = (1-s) x_src + s x_tgt + sigma sqrt(s(1-s)) z``;
* the forward network fits the bridge drift towards the target, ``(x_tgt - x_s) / (1-s)``, the
  backward network the drift towards the source, ``(x_src - x_s) / s`` (squared error);
* sampling runs Euler-Maruyama with ``n_sample_steps`` steps and noise ``sigma``;
* round 1 trains both networks on independent pairs (bridge matching); every later round trains the
  forward network on ``(backward(y), y)`` pairs and then the backward network on ``(x, forward(x))``.

The networks have the same body as :class:`~icml25.generative.csbm.model.EndpointNet` (input, time
embedding, residual MLP blocks), so an equal :class:`~icml25.generative.csbm.model.NetConfig`, number
of rounds, steps, batch size and learning-rate sweep give both methods the same budget.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from icml25.core.validate import check_finite_array, check_non_negative, check_positive
from icml25.nn import MLP, FitConfig, fit

from .model import DIMFConfig, NetConfig, dimf_fit_config
from .process import CategoricalReference

__all__ = [
    "DriftNet",
    "ContinuousDIMFResult",
    "bridge_drift_loss",
    "sample_sde",
    "train_continuous_dimf",
    "train_continuous_bm",
    "reference_sigma",
]

_EDGE = 1e-3  # times are drawn in [_EDGE, 1 - _EDGE]: the bridge drift is singular at the ends


class DriftNet(nn.Module):
    """``v_θ(x_s, s) -> (B, D)`` drift: input + time features -> linear -> residual MLP blocks -> linear."""

    def __init__(self, dim: int, config: NetConfig | None = None) -> None:
        super().__init__()
        check_positive("dim", dim, integer=True)
        config = NetConfig() if config is None else config
        self.dim = dim
        self.time_dim = config.time_dim
        self.inp = nn.Linear(dim + config.time_dim, config.hidden)
        self.blocks = nn.ModuleList(
            MLP(config.hidden, config.hidden, activation="silu") for _ in range(config.depth)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(config.hidden) for _ in range(config.depth))
        self.out = nn.Linear(config.hidden, dim)
        freqs = torch.arange(1, config.time_dim // 2 + 1, dtype=torch.float32) * math.pi
        self.register_buffer("freqs", freqs, persistent=False)

    def _time(self, s: Tensor) -> Tensor:
        ang = s[:, None].float() * self.freqs[None, :]  # type: ignore[index]
        feats = torch.cat([ang.sin(), ang.cos()], dim=-1)
        if feats.shape[1] < self.time_dim:  # odd time_dim: pad with s itself
            feats = torch.cat([feats, s[:, None].float()], dim=-1)
        return feats

    def forward(self, x: Tensor, s: Tensor) -> Tensor:
        if not isinstance(x, Tensor) or not x.is_floating_point():
            raise TypeError("x must be a floating-point torch.Tensor")
        if x.ndim != 2 or x.shape[1] != self.dim or x.shape[0] == 0:
            raise ValueError(f"x must have shape (B>0, {self.dim}), got {tuple(x.shape)}")
        if not isinstance(s, Tensor) or s.shape != (x.shape[0],):
            raise ValueError(f"s must be a tensor of shape ({x.shape[0]},)")
        h = self.inp(torch.cat([x.float(), self._time(s)], dim=-1))
        for norm, block in zip(self.norms, self.blocks, strict=True):
            h = h + block(norm(h))
        return self.out(F.silu(h))


def bridge_drift_loss(
    net: DriftNet,
    x_src: Tensor,
    x_tgt: Tensor,
    sigma: float,
    direction: str,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Squared error of ``net`` against the Brownian-bridge drift on a batch of pairs ``(B, D)``.

    ``direction="forward"`` fits the drift towards ``x_tgt`` (time 1), ``"backward"`` towards ``x_src``
    (time 0; the backward network is evaluated at ``1 - s`` so that both run time forwards)."""
    if x_src.shape != x_tgt.shape or x_src.ndim != 2:
        raise ValueError("x_src and x_tgt must both be (B, D) tensors of the same shape")
    if direction not in ("forward", "backward"):
        raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")
    b = x_src.shape[0]
    s = _EDGE + (1 - 2 * _EDGE) * torch.rand(b, generator=generator, dtype=torch.float64)
    z = torch.randn(x_src.shape, generator=generator, dtype=torch.float64)
    a, c = x_src.double(), x_tgt.double()
    xs = (1 - s)[:, None] * a + s[:, None] * c + sigma * (s * (1 - s)).sqrt()[:, None] * z
    if direction == "forward":
        target = (c - xs) / (1 - s)[:, None]
        pred = net(xs.float(), s.float())
    else:
        target = (a - xs) / s[:, None]
        pred = net(xs.float(), (1 - s).float())
    return ((pred - target.float()) ** 2).sum(-1).mean()


@torch.no_grad()
def sample_sde(
    net: DriftNet, x: Tensor, sigma: float, n_steps: int, generator: torch.Generator | None = None
) -> Tensor:
    """Euler-Maruyama from ``x`` at time 0 to time 1 with drift ``net`` and noise ``sigma``; the last
    step is deterministic (no noise), as in DSBM's sampler."""
    check_finite_array("x", x, ndim=2)
    check_positive("n_steps", n_steps, integer=True)
    check_non_negative("sigma", sigma)
    was_training = net.training
    net.eval()
    h = 1.0 / n_steps
    y = x.float().clone()
    for k in range(n_steps):
        s = torch.full((y.shape[0],), k * h)
        y = y + h * net(y, s)
        if k < n_steps - 1:
            y = y + sigma * math.sqrt(h) * torch.randn(y.shape, generator=generator)
    net.train(was_training)
    return y.double()


@dataclass
class ContinuousDIMFResult:
    """Forward (source -> target) and backward networks after each round."""

    forward: list[DriftNet]
    backward: list[DriftNet]
    losses: list[list[float]]
    sigma: float
    n_sample_steps: int
    seconds: float = 0.0

    def translate(self, x: Tensor, generator: torch.Generator | None = None, round_: int = -1) -> Tensor:
        """Map source points ``(n, D)`` to the target side with round ``round_``'s forward network."""
        return sample_sde(self.forward[round_], x, self.sigma, self.n_sample_steps, generator)


def train_continuous_dimf(
    source: Tensor,
    target: Tensor,
    config: DIMFConfig,
    sigma: float,
    *,
    n_sample_steps: int = 50,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
) -> ContinuousDIMFResult:
    """Continuous D-IMF (DSBM) between ``source`` (time 0) and ``target`` (time 1), real ``(n, D)``.

    Uses ``config``'s rounds, steps, batch size, learning rate, pool size ``n_pairs`` (or fresh pairs
    every step with ``config.resample_pairs``, as the official CSBM loop) and network size; its loss
    weights do not apply (the loss is drift matching)."""
    check_finite_array("source", source, ndim=2)
    check_finite_array("target", target, ndim=2)
    if source.shape[1] != target.shape[1]:
        raise ValueError("source and target must have the same number of coordinates")
    check_positive("sigma", sigma)
    check_non_negative("seed", seed, integer=True)
    dim = source.shape[1]
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    fwd, bwd = DriftNet(dim, config.net), DriftNet(dim, config.net)
    result = ContinuousDIMFResult(
        forward=[], backward=[], losses=[], sigma=sigma, n_sample_steps=n_sample_steps
    )
    t0 = time.perf_counter()
    src, tgt = source.double(), target.double()

    def fit_cfg(steps: int) -> FitConfig:
        return dimf_fit_config(config, steps)

    def pick(data: Tensor) -> Tensor:
        return data[torch.randint(0, data.shape[0], (config.n_pairs,), generator=gen)]

    def train(
        net: DriftNet, a: Tensor, c: Tensor, direction: str, steps: int, s: int, task: str
    ) -> list[float]:
        def loss_fn(model: nn.Module, batch: tuple[Tensor, Tensor], g: torch.Generator) -> Tensor:
            return bridge_drift_loss(model, batch[0], batch[1], sigma, direction, g)  # type: ignore[arg-type]

        cb = None if progress is None else (lambda d, n: progress(task, d, n))
        return list(fit(net, loss_fn, (a, c), fit_cfg(steps), seed=s, progress=cb).train_loss)

    def train_fresh(
        net: DriftNet, draw: Callable[[torch.Generator], tuple[Tensor, Tensor]], steps: int, s: int, task: str
    ) -> list[float]:
        # config.resample_pairs: a fresh batch of pairs every step (the official CSBM loop)
        def loss_fn(model: nn.Module, batch: Tensor, g: torch.Generator) -> Tensor:
            del batch
            a, c = draw(g)
            return bridge_drift_loss(model, a, c, sigma, "forward", g)  # type: ignore[arg-type]

        cb = None if progress is None else (lambda d, n: progress(task, d, n))
        return list(fit(net, loss_fn, config.batch_size, fit_cfg(steps), seed=s, progress=cb).train_loss)

    def batch_of(data: Tensor, g: torch.Generator) -> Tensor:
        return data[torch.randint(0, data.shape[0], (config.batch_size,), generator=g)]

    def fresh_pairs(
        it: int, start: Tensor, end: Tensor, other: DriftNet
    ) -> Callable[[torch.Generator], tuple[Tensor, Tensor]]:
        """Pairs (start side, end side) for one network: independent in round 1, later the other
        direction's network ``other`` run from fresh end-side samples."""

        def draw(g: torch.Generator) -> tuple[Tensor, Tensor]:
            if it == 0:
                return batch_of(start, g), batch_of(end, g)
            c = batch_of(end, g)
            return sample_sde(other, c, sigma, n_sample_steps, g), c

        return draw

    for it in range(config.iterations):
        steps = config.first_steps if it == 0 else config.steps
        if config.resample_pairs:
            loss_f = train_fresh(
                fwd,
                fresh_pairs(it, src, tgt, bwd),
                steps,
                seed + 7 * it,
                f"continuous round {it + 1} forward",
            )
            loss_b = train_fresh(
                bwd,
                fresh_pairs(it, tgt, src, fwd),
                steps,
                seed + 7 * it + 3,
                f"continuous round {it + 1} backward",
            )
            result.forward.append(_frozen(fwd))
            result.backward.append(_frozen(bwd))
            result.losses.append(loss_f + loss_b)
            continue
        if it == 0:
            a, c = pick(src), pick(tgt)
        else:
            c = pick(tgt)
            a = sample_sde(bwd, c, sigma, n_sample_steps, gen)  # backward maps target -> source
        loss_f = train(fwd, a, c, "forward", steps, seed + 7 * it, f"continuous round {it + 1} forward")
        if it == 0:
            a2, c2 = pick(src), pick(tgt)
        else:
            a2 = pick(src)
            c2 = sample_sde(fwd, a2, sigma, n_sample_steps, gen)
        # the backward network runs target -> source: its "source" is the target side
        loss_b = train(
            bwd, c2, a2, "forward", steps, seed + 7 * it + 3, f"continuous round {it + 1} backward"
        )
        result.forward.append(_frozen(fwd))
        result.backward.append(_frozen(bwd))
        result.losses.append(loss_f + loss_b)
    result.seconds = time.perf_counter() - t0
    return result


def train_continuous_bm(
    source: Tensor,
    target: Tensor,
    config: DIMFConfig,
    sigma: float,
    steps: int,
    *,
    seed: int = 0,
) -> DriftNet:
    """One forward drift network fitted for ``steps`` steps on independent pairs (a pool of
    ``config.n_pairs``, or fresh pairs every step with ``config.resample_pairs``; continuous bridge
    matching, the first round of :func:`train_continuous_dimf` without the backward network)."""
    check_finite_array("source", source, ndim=2)
    check_finite_array("target", target, ndim=2)
    check_positive("steps", steps, integer=True)
    check_positive("sigma", sigma)
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    net = DriftNet(source.shape[1], config.net)
    if config.resample_pairs:
        src, tgt = source.double(), target.double()

        def fresh_loss(model: nn.Module, batch: Tensor, g: torch.Generator) -> Tensor:
            del batch  # fresh independent pairs every step
            a = src[torch.randint(0, src.shape[0], (config.batch_size,), generator=g)]
            c = tgt[torch.randint(0, tgt.shape[0], (config.batch_size,), generator=g)]
            return bridge_drift_loss(model, a, c, sigma, "forward", g)  # type: ignore[arg-type]

        fit(net, fresh_loss, config.batch_size, dimf_fit_config(config, steps), seed=seed)
        return _frozen(net)
    a = source.double()[torch.randint(0, source.shape[0], (config.n_pairs,), generator=gen)]
    c = target.double()[torch.randint(0, target.shape[0], (config.n_pairs,), generator=gen)]

    def loss_fn(model: nn.Module, batch: tuple[Tensor, Tensor], g: torch.Generator) -> Tensor:
        return bridge_drift_loss(model, batch[0], batch[1], sigma, "forward", g)  # type: ignore[arg-type]

    fit(net, loss_fn, (a, c), dimf_fit_config(config, steps), seed=seed)
    return _frozen(net)


def reference_sigma(ref: CategoricalReference, bin_width: float) -> float:
    """The Brownian-motion ``sigma`` whose variance over ``[0, 1]`` equals the categorical reference's
    end-to-end variance ``Var(x_{N+1} | x_0)`` for a start in the middle of the grid, in units where
    neighbouring states are ``bin_width`` apart (so both references spread mass equally far)."""
    check_positive("bin_width", bin_width)
    row = ref.Qbar[ref.N + 1][ref.S // 2]
    states = torch.arange(ref.S, dtype=torch.float64)
    mean = float((row * states).sum())
    var = float((row * (states - mean) ** 2).sum())
    return math.sqrt(var) * bin_width


def _frozen(net: DriftNet) -> DriftNet:
    out = copy.deepcopy(net)
    out.eval()
    return out
