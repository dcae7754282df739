"""The learned CSBM: a D3PM-style network and learned D-IMF for *Categorical Schrödinger Bridge
Matching* (CSBM; Ksenofontov and Korotin, ICML 2025, arXiv 2502.01416), Sec. 4 and Algorithm 1.

* :class:`EndpointNet` maps ``(x_t, t)`` (``D`` integer coordinates, a time index) to logits of
  ``p_θ(x_0 | x_t)`` per coordinate, shape ``(B, D, S)``, with ``one_hot(x_t)`` added as a residual
  as in the official code. Inputs are rescaled to [-1, 1] and joined with a time embedding.
* :func:`csbm_loss` is the Markovian-projection objective on reciprocal samples: draw ``t`` uniformly
  in ``1..N+1``, ``x_t`` from the reference bridge of a pair ``(x_0, x_{N+1})``, and fit the one-step
  kernel to the D3PM posterior (KL and/or squared error) plus a small cross-entropy on ``x_0``.
* :func:`sample_chain` translates: start at ``x_{N+1}``, step with ``p_θ(x_{t-1} | x_t)``, and take
  the arg-max at the last step.
* :func:`train_dimf` alternates forward (end -> start) and backward (start -> end) networks:
  iteration 1 trains both on the independent coupling (bridge matching); every later iteration
  trains the forward network on ``(y, backward(y))`` pairs (the reciprocal projection of the backward
  process) and then the backward network on ``(x, forward(x))`` pairs.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from icml25.core.validate import check_fields, check_non_negative, check_positive
from icml25.nn import MLP, FitConfig, fit

from .process import CategoricalReference

__all__ = [
    "EndpointNet",
    "NetConfig",
    "LossWeights",
    "DIMFConfig",
    "DIMFResult",
    "csbm_loss",
    "sample_chain",
    "train_markovian_projection",
    "train_dimf",
    "train_bridge_matching",
    "dimf_fit_config",
]


@dataclass(frozen=True)
class NetConfig:
    """Width, number of residual MLP blocks and time-embedding size of :class:`EndpointNet`."""

    hidden: int = 128
    depth: int = 3
    time_dim: int = 16

    def __post_init__(self) -> None:
        check_fields(self, positive_int=("hidden", "depth", "time_dim"))


class EndpointNet(nn.Module):
    """``f_θ(x_t, t) -> (B, D, S)`` logits of ``x_0``: rescaled input + learned time embedding ->
    linear -> ``depth`` residual :class:`icml25.nn.MLP` blocks -> linear, plus ``one_hot(x_t)``."""

    def __init__(self, dim: int, n_states: int, n_times: int, config: NetConfig = NetConfig()) -> None:
        super().__init__()
        check_positive("dim", dim, integer=True)
        check_positive("n_states", n_states, integer=True)
        check_positive("n_times", n_times, integer=True)
        self.dim, self.S, self.n_times = dim, n_states, n_times
        self.time = nn.Embedding(n_times, config.time_dim)
        self.inp = nn.Linear(dim + config.time_dim, config.hidden)
        self.blocks = nn.ModuleList(
            MLP(config.hidden, config.hidden, activation="silu") for _ in range(config.depth)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(config.hidden) for _ in range(config.depth))
        self.out = nn.Linear(config.hidden, dim * n_states)

    def forward(self, x_t: Tensor, t: Tensor) -> Tensor:
        if not isinstance(x_t, Tensor) or x_t.dtype.is_floating_point or x_t.dtype == torch.bool:
            raise TypeError("x_t must be an integer torch.Tensor")
        if x_t.ndim != 2 or x_t.shape[1] != self.dim or x_t.shape[0] == 0:
            raise ValueError(f"x_t must have shape (B>0, {self.dim}), got {tuple(x_t.shape)}")
        if int(x_t.min()) < 0 or int(x_t.max()) >= self.S:
            raise ValueError(f"x_t must lie in [0, {self.S - 1}]")
        if not isinstance(t, Tensor) or t.shape != (x_t.shape[0],):
            raise ValueError(f"t must be a tensor of shape ({x_t.shape[0]},)")
        dtype = self.inp.weight.dtype
        x = x_t.to(dtype) / ((self.S - 1) / 2) - 1.0
        h = self.inp(torch.cat([x, self.time(t.long())], dim=-1))
        for norm, block in zip(self.norms, self.blocks, strict=True):
            h = h + block(norm(h))
        logits = self.out(F.silu(h)).reshape(-1, self.dim, self.S)
        return logits + F.one_hot(x_t.long(), self.S).to(dtype)


@dataclass(frozen=True)
class LossWeights:
    """Weights of the KL, cross-entropy and squared-error terms of the Markovian-projection loss."""

    kl: float = 1.0
    ce: float = 0.001
    mse: float = 0.0

    def __post_init__(self) -> None:
        check_fields(self, non_negative=("kl", "ce", "mse"))
        if self.kl + self.ce + self.mse <= 0:
            raise ValueError("LossWeights: at least one weight must be positive")


def csbm_loss(
    net: EndpointNet,
    ref: CategoricalReference,
    x_start: Tensor,
    x_end: Tensor,
    generator: torch.Generator | None = None,
    weights: LossWeights = LossWeights(),
) -> Tensor:
    """The loss on a batch of integer pairs ``(x_0, x_{N+1})`` (``(B, D)`` each), coordinate-averaged."""
    if x_start.shape != x_end.shape or x_start.ndim != 2:
        raise ValueError(
            f"x_start and x_end must both be (B, D), got {tuple(x_start.shape)}, {tuple(x_end.shape)}"
        )
    b = x_start.shape[0]
    t = torch.randint(1, ref.N + 2, (b,), generator=generator)
    x_t = ref.sample_bridge(x_start, x_end, t, generator)
    logits = net(x_t, t)
    start_probs = torch.softmax(logits, dim=-1)
    p = ref.model_step_probs(x_t, start_probs, t)
    q = ref.posterior_probs(x_t, x_start, t).to(p.dtype)
    loss = logits.new_zeros(())
    if weights.kl > 0:
        kl = (q * (q.clamp_min(1e-20).log() - p.clamp_min(1e-20).log())).sum(-1)
        loss = loss + weights.kl * kl.mean()
    if weights.ce > 0:
        loss = loss + weights.ce * F.cross_entropy(logits.reshape(-1, net.S), x_start.reshape(-1).long())
    if weights.mse > 0:
        loss = loss + weights.mse * ((q - p) ** 2).sum(-1).mean()
    return loss


@torch.no_grad()
def sample_chain(
    net: EndpointNet,
    ref: CategoricalReference,
    x_end: Tensor,
    generator: torch.Generator | None = None,
    batch_size: int = 4096,
) -> Tensor:
    """Translate ``x_{N+1} = x_end`` (``(B, D)`` integers) to ``x_0`` by the learned chain."""
    if not isinstance(x_end, Tensor) or x_end.dtype.is_floating_point or x_end.dtype == torch.bool:
        raise TypeError("x_end must be an integer torch.Tensor")
    if x_end.ndim != 2 or x_end.shape[0] == 0 or x_end.shape[1] != net.dim:
        raise ValueError(f"x_end must have shape (B>0, {net.dim}), got {tuple(x_end.shape)}")
    check_positive("batch_size", batch_size, integer=True)
    was_training = net.training
    net.eval()
    outs = []
    for chunk in x_end.long().split(batch_size):
        x = chunk
        for step in range(ref.N + 1, 0, -1):
            t = torch.full((x.shape[0],), step, dtype=torch.long)
            start_probs = torch.softmax(net(x, t).double(), dim=-1)
            p = ref.model_step_probs(x, start_probs, t)
            if step == 1:
                x = p.argmax(-1)
            else:
                u = torch.rand(p.shape, generator=generator, dtype=torch.float64).clamp(1e-20, 1 - 1e-12)
                x = (p.clamp_min(1e-30).log() - torch.log(-torch.log(u))).argmax(-1)
        outs.append(x)
    net.train(was_training)
    return torch.cat(outs)


def train_markovian_projection(
    net: EndpointNet,
    ref: CategoricalReference,
    x_start: Tensor,
    x_end: Tensor,
    fit_config: FitConfig,
    *,
    seed: int = 0,
    weights: LossWeights = LossWeights(),
    progress: Callable[[int, int], None] | None = None,
) -> list[float]:
    """Fit ``net`` on the reciprocal process of the pairs ``(x_start[i], x_end[i])``; returns the losses."""
    if x_start.shape != x_end.shape or x_start.ndim != 2 or x_start.shape[0] == 0:
        raise ValueError("x_start and x_end must be non-empty (B, D) tensors of the same shape")

    def loss_fn(model: nn.Module, batch: tuple[Tensor, Tensor], gen: torch.Generator) -> Tensor:
        return csbm_loss(model, ref, batch[0], batch[1], gen, weights)  # type: ignore[arg-type]

    hist = fit(net, loss_fn, (x_start.long(), x_end.long()), fit_config, seed=seed, progress=progress)
    return list(hist.train_loss)


@dataclass(frozen=True)
class DIMFConfig:
    """Learned D-IMF (Sec. 4, Algorithm 1): ``iterations`` rounds; ``first_steps`` steps for
    iteration 1 and ``steps`` after; ``n_pairs`` training pairs per projection (independent pairs in
    round 1, model pairs later), drawn once per projection and then batched with replacement.

    ``resample_pairs=True`` runs the official code's behaviour instead: every training step draws a
    fresh batch of ``batch_size`` pairs (data drawn with replacement; in rounds after the first the
    other direction's network translates that batch), so ``n_pairs`` is unused. Default ``False``
    (the fixed pool that produced the recorded results)."""

    iterations: int = 3
    steps: int = 500
    first_steps: int = 1000
    batch_size: int = 256
    lr: float = 1e-3
    n_pairs: int = 4096
    net: NetConfig = NetConfig()
    loss: LossWeights = LossWeights()
    resample_pairs: bool = False

    def __post_init__(self) -> None:
        check_fields(self, positive_int=("iterations", "steps", "first_steps", "batch_size", "n_pairs"))
        check_fields(self, positive=("lr",))
        if not isinstance(self.resample_pairs, bool):
            raise TypeError(f"resample_pairs must be a bool, got {type(self.resample_pairs).__name__}")


@dataclass
class DIMFResult:
    """The two networks after each iteration's training (``forward[l]`` maps end -> start)."""

    forward: list[EndpointNet]
    backward: list[EndpointNet]
    losses: list[list[float]]
    seconds: float = 0.0


def dimf_fit_config(config: DIMFConfig, steps: int) -> FitConfig:
    """The optimiser settings of one projection: AdamW betas (0.95, 0.99), batches drawn with
    replacement from the pool, a short warm-up, ``config``'s batch size and learning rate."""
    return FitConfig(
        steps=steps,
        batch_size=config.batch_size,
        lr=config.lr,
        betas=(0.95, 0.99),
        sampling="replacement",
        warmup_steps=min(50, steps // 10),
    )


def train_bridge_matching(
    ref: CategoricalReference,
    start_data: Tensor,
    end_data: Tensor,
    config: DIMFConfig,
    steps: int,
    *,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> EndpointNet:
    """One forward network (end -> start) fitted for ``steps`` steps on a pool of ``config.n_pairs``
    independent pairs (fresh pairs every step with ``config.resample_pairs``): bridge matching, i.e.
    D-IMF's first round without the backward network."""
    check_positive("steps", steps, integer=True)
    for name, x in (("start_data", start_data), ("end_data", end_data)):
        if not isinstance(x, Tensor) or x.dtype.is_floating_point or x.ndim != 2 or x.shape[0] == 0:
            raise ValueError(f"{name} must be a non-empty (n, D) integer tensor")
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    net = EndpointNet(start_data.shape[1], ref.S, ref.N + 2, config.net)
    if config.resample_pairs:
        _fit_on_fresh_pairs(
            net,
            ref,
            _independent_pairs(start_data, end_data, config.batch_size),
            dimf_fit_config(config, steps),
            seed=seed,
            weights=config.loss,
            progress=progress,
        )
        return _copy(net)
    ys = start_data[torch.randint(0, start_data.shape[0], (config.n_pairs,), generator=gen)]
    xs = end_data[torch.randint(0, end_data.shape[0], (config.n_pairs,), generator=gen)]
    train_markovian_projection(
        net, ref, ys, xs, dimf_fit_config(config, steps), seed=seed, weights=config.loss, progress=progress
    )
    return _copy(net)


PairDraw = Callable[[torch.Generator], tuple[Tensor, Tensor]]


def _independent_pairs(start_data: Tensor, end_data: Tensor, batch: int) -> PairDraw:
    """Draws ``batch`` independent ``(x_0, x_{N+1})`` pairs, each side with replacement."""

    def draw(gen: torch.Generator) -> tuple[Tensor, Tensor]:
        ys = start_data[torch.randint(0, start_data.shape[0], (batch,), generator=gen)]
        xs = end_data[torch.randint(0, end_data.shape[0], (batch,), generator=gen)]
        return ys.long(), xs.long()

    return draw


def _model_pairs(data: Tensor, other: EndpointNet, ref: CategoricalReference, batch: int) -> PairDraw:
    """Draws ``batch`` data points ``x`` and returns ``(x, other(x))``: pairs of the reciprocal
    projection of ``other``'s coupling, the data on the trained network's start side."""

    def draw(gen: torch.Generator) -> tuple[Tensor, Tensor]:
        x = data[torch.randint(0, data.shape[0], (batch,), generator=gen)].long()
        return x, sample_chain(other, ref, x, gen)

    return draw


def _fit_on_fresh_pairs(
    net: EndpointNet,
    ref: CategoricalReference,
    draw: PairDraw,
    fit_config: FitConfig,
    *,
    seed: int,
    weights: LossWeights,
    progress: Callable[[int, int], None] | None = None,
) -> list[float]:
    """The official training loop: each step fits ``net`` on a fresh batch from ``draw``."""

    def loss_fn(model: nn.Module, batch: Tensor, gen: torch.Generator) -> Tensor:
        del batch  # indices of a dummy data set: the pairs come from ``draw``
        x_start, x_end = draw(gen)
        return csbm_loss(model, ref, x_start, x_end, gen, weights)  # type: ignore[arg-type]

    hist = fit(net, loss_fn, fit_config.batch_size, fit_config, seed=seed, progress=progress)
    return list(hist.train_loss)


def train_dimf(
    ref: CategoricalReference,
    start_data: Tensor,
    end_data: Tensor,
    config: DIMFConfig,
    *,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
) -> DIMFResult:
    """Learned D-IMF between ``start_data`` (index 0, the translation target) and ``end_data`` (index
    N+1, the source); both ``(n, D)`` integer tensors. Networks of every iteration are kept (copies)."""
    for name, x in (("start_data", start_data), ("end_data", end_data)):
        if not isinstance(x, Tensor) or x.dtype.is_floating_point or x.dtype == torch.bool:
            raise TypeError(f"{name} must be an integer torch.Tensor")
        if x.ndim != 2 or x.shape[0] == 0:
            raise ValueError(f"{name} must be a non-empty (n, D) tensor, got {tuple(x.shape)}")
    if start_data.shape[1] != end_data.shape[1]:
        raise ValueError("start_data and end_data must have the same number of coordinates")
    check_non_negative("seed", seed, integer=True)
    dim = start_data.shape[1]
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    fwd = EndpointNet(dim, ref.S, ref.N + 2, config.net)
    bwd = EndpointNet(dim, ref.S, ref.N + 2, config.net)
    result = DIMFResult(forward=[], backward=[], losses=[])
    t0 = time.perf_counter()

    def fit_cfg(steps: int) -> FitConfig:
        return dimf_fit_config(config, steps)

    def pick(data: Tensor) -> Tensor:
        return data[torch.randint(0, data.shape[0], (config.n_pairs,), generator=gen)]

    for it in range(config.iterations):
        steps = config.first_steps if it == 0 else config.steps
        cb = (
            None
            if progress is None
            else (lambda d, n, it=it: progress(f"D-IMF iteration {it + 1} forward", d, n))
        )
        if config.resample_pairs:
            draw = (
                _independent_pairs(start_data, end_data, config.batch_size)
                if it == 0
                else _model_pairs(start_data, bwd, ref, config.batch_size)
            )
            loss_f = _fit_on_fresh_pairs(
                fwd, ref, draw, fit_cfg(steps), seed=seed + 7 * it, weights=config.loss, progress=cb
            )
        else:
            if it == 0:
                ys, xs = pick(start_data), pick(end_data)
            else:
                ys = pick(start_data)
                xs = sample_chain(bwd, ref, ys, gen)  # backward maps start -> end
            loss_f = train_markovian_projection(
                fwd, ref, ys, xs, fit_cfg(steps), seed=seed + 7 * it, weights=config.loss, progress=cb
            )
        cb = (
            None
            if progress is None
            else (lambda d, n, it=it: progress(f"D-IMF iteration {it + 1} backward", d, n))
        )
        if config.resample_pairs:
            # the backward network's start is the source side (end_data)
            draw = (
                _independent_pairs(end_data, start_data, config.batch_size)
                if it == 0
                else _model_pairs(end_data, fwd, ref, config.batch_size)
            )
            loss_b = _fit_on_fresh_pairs(
                bwd, ref, draw, fit_cfg(steps), seed=seed + 7 * it + 3, weights=config.loss, progress=cb
            )
        else:
            if it == 0:
                xs2, ys2 = pick(end_data), pick(start_data)
            else:
                xs2 = pick(end_data)
                ys2 = sample_chain(fwd, ref, xs2, gen)
            loss_b = train_markovian_projection(
                bwd, ref, xs2, ys2, fit_cfg(steps), seed=seed + 7 * it + 3, weights=config.loss, progress=cb
            )
        result.forward.append(_copy(fwd))
        result.backward.append(_copy(bwd))
        result.losses.append(loss_f + loss_b)
    result.seconds = time.perf_counter() - t0
    return result


def _copy(net: EndpointNet) -> EndpointNet:
    import copy

    out = copy.deepcopy(net)
    out.eval()
    return out


_ = dataclasses  # keep the import for replace() users of this module
