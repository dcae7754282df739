"""PNBA encoders, decoders and objective, after *Neural Representational Consistency Emerges from
Probabilistic Neural-Behavioral Representation Alignment* (Zhu, Song, Ouyang, Yu, Huang; ICML 2025;
https://arxiv.org/abs/2505.04331; official PyTorch code https://github.com/zhuyu-cs/PNBA).

Both modalities are encoded as diagonal Gaussians over a latent grid ``[D, T]``; the neural encoder has
no subject-specific input layer, so an unseen subject is encoded zero-shot. The objective (Sec. 3 of the
paper; ``models/pnba.py`` of the official code) has two parts:

* probabilistic matching: the product-of-Gaussians joint posterior
  ``σ_p² = σ_x²σ_y²/(σ_x²+σ_y²)``, ``μ_p = (μ_x σ_y² + μ_y σ_x²)/(σ_x²+σ_y²)``; the structure-preserving
  terms ``KL(p‖q_x) + KL(p‖q_y)``; the probabilistic matching loss, a sigmoid (binary cross-entropy)
  loss on logits ``-a d_ij + b`` with ``d_ij = ‖μ_y,i − μ_x,j‖² + Σ(σ²_y,i + σ²_x,j)``; and the
  symmetric cross-modal ``KL(q_y‖q_x) + KL(q_x‖q_y)``;
* generative constraints: neural activity (Poisson NLL) and behaviour (squared error) reconstructed
  from a posterior sample and from the other modality's sample.

Deviation (ours, deliberate): the official neural projector runs a 3-wide convolution over the neuron
axis and max-pools to a fixed number of "virtual neurons", which depends on the arbitrary neuron order.
Our default :class:`NeuronSetProjector` (``mode="attention"``) encodes every neuron's time course with a
shared temporal convolution and pools neurons with ``P`` learned attention queries (softmax over
neurons), which is exactly invariant to neuron permutations and accepts any neuron count. The official
style is kept as ``mode="conv_maxpool"``. Encoders/decoders are small 1-D temporal conv stacks, not the
VQGAN-style 2-D networks of the official code, and the neural decoder's per-recording readout is a
learned linear map (the official code interpolates the virtual-neuron axis).

Notation: ``B`` batch, ``N`` neurons (padded), ``T`` time bins, ``C`` per-neuron channels, ``P``
virtual neurons, ``H`` hidden channels, ``D`` latent channels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from icml25.core.validate import check_fields, check_finite_tensor

__all__ = [
    "PNBAConfig",
    "NeuronSetProjector",
    "GaussianHead",
    "NeuralEncoder",
    "BehaviorEncoder",
    "PNBA",
    "PNBALoss",
    "product_of_gaussians",
    "gaussian_kl",
    "prob_match_loss",
    "info_nce",
    "poisson_nll",
]

Objective = Literal["pnba", "nogen", "contrastive", "supervised"]
ProjectorMode = Literal["attention", "conv_maxpool"]


@dataclass(frozen=True)
class PNBAConfig:
    """Sizes and objective.

    Args:
        n_recordings: recordings with a neural readout (training subjects x sessions).
        max_neurons: neuron capacity of each readout (>= the largest training recording).
        T: time bins per trial.
        behavior_dim: behaviour channels (2 for hand velocity).
        latent_dim: ``D``, latent channels per time bin.
        hidden: ``H``.
        channels: ``C``, per-neuron features of the projector.
        n_virtual: ``P``, virtual neurons (attention queries or max-pool bins).
        projector: ``"attention"`` (order invariant, ours) or ``"conv_maxpool"`` (official style).
        objective: ``"pnba"`` (full), ``"nogen"`` (no generative constraints), ``"contrastive"``
            (deterministic means, InfoNCE only) or ``"supervised"`` (the oracle: the neural encoder's
            mean regressed on behaviour through the behaviour decoder, squared error; not an
            alignment method, it shows what the encoder can decode at all).
        logvar_min, logvar_max: soft bounds of the predicted log-variances (numerical safety).
        match_distance: ``"sum"`` (official) or ``"mean"`` over latent elements for ``d_ij`` in the
            matching loss; ``"mean"`` starts the logits near 0 instead of at minus hundreds.
    """

    n_recordings: int
    max_neurons: int
    T: int
    behavior_dim: int = 2
    latent_dim: int = 8
    hidden: int = 32
    channels: int = 8
    n_virtual: int = 16
    projector: ProjectorMode = "attention"
    objective: Objective = "pnba"
    logvar_min: float = -8.0
    logvar_max: float = 4.0
    match_distance: Literal["sum", "mean"] = "sum"

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=("n_recordings", "max_neurons", "T", "behavior_dim", "latent_dim", "hidden"),
        )
        check_fields(self, positive_int=("channels", "n_virtual"))
        if self.projector not in ("attention", "conv_maxpool"):
            raise ValueError(
                f"PNBAConfig.projector must be 'attention' or 'conv_maxpool', got {self.projector!r}"
            )
        if self.objective not in ("pnba", "nogen", "contrastive", "supervised"):
            raise ValueError(
                "PNBAConfig.objective must be 'pnba', 'nogen', 'contrastive' or 'supervised', "
                f"got {self.objective!r}"
            )
        if self.match_distance not in ("sum", "mean"):
            raise ValueError(
                f"PNBAConfig.match_distance must be 'sum' or 'mean', got {self.match_distance!r}"
            )
        if not self.logvar_min < self.logvar_max:
            raise ValueError("PNBAConfig.logvar_min must be below logvar_max")


# ----------------------------------------------------------------------------------------------
# Gaussian algebra and losses
# ----------------------------------------------------------------------------------------------


def product_of_gaussians(
    mu_a: Tensor, logvar_a: Tensor, mu_b: Tensor, logvar_b: Tensor
) -> tuple[Tensor, Tensor]:
    """Joint posterior of two diagonal Gaussians (precision weighting), elementwise.

    ``σ_p² = σ_a²σ_b²/(σ_a²+σ_b²)``, ``μ_p = μ_a σ_b²/(σ_a²+σ_b²) + μ_b σ_a²/(σ_a²+σ_b²)``.

    Returns:
        ``(mu_p, logvar_p)`` with the inputs' (broadcast) shape.
    """
    if mu_a.shape != logvar_a.shape or mu_b.shape != logvar_b.shape:
        raise ValueError(
            f"mu_a/logvar_a and mu_b/logvar_b must match in shape, got {tuple(mu_a.shape)}, "
            f"{tuple(logvar_a.shape)}, {tuple(mu_b.shape)}, {tuple(logvar_b.shape)}"
        )
    # weights σ_b²/(σ_a²+σ_b²) = sigmoid(logvar_b - logvar_a): stable for any log-variances
    w_a = torch.sigmoid(logvar_b - logvar_a)
    mu_p = w_a * mu_a + (1 - w_a) * mu_b
    logvar_p = logvar_a + logvar_b - torch.logaddexp(logvar_a, logvar_b)
    return mu_p, logvar_p


def gaussian_kl(mu_q: Tensor, logvar_q: Tensor, mu_p: Tensor, logvar_p: Tensor) -> Tensor:
    """``KL(N(mu_q, σ_q²) ‖ N(mu_p, σ_p²))`` summed over all but the first (batch) dimension: ``[B]``."""
    kl = 0.5 * (logvar_p - logvar_q + (logvar_q.exp() + (mu_q - mu_p) ** 2) / logvar_p.exp() - 1)
    return kl.flatten(1).sum(1)


def prob_match_loss(
    mu_y: Tensor, var_y: Tensor, mu_x: Tensor, var_x: Tensor, a: Tensor, b: Tensor, *, mean: bool = False
) -> Tensor:
    """Probabilistic matching loss over a batch (summed binary cross-entropy; matched pairs on the diagonal).

    ``d_ij = ‖μ_y,i − μ_x,j‖² + Σ(σ²_y,i + σ²_x,j)`` (expected squared distance of samples),
    logits ``-a d_ij + b``, target ``1[i = j]``.

    Args:
        mu_y, var_y, mu_x, var_x: ``[B, ...]`` (flattened internally).
        a, b: scalars (learnable scale and offset).
        mean: divide ``d_ij`` by the number of latent elements (ours; the official loss sums).
    """
    if mu_y.shape != mu_x.shape or var_y.shape != mu_y.shape or var_x.shape != mu_x.shape:
        raise ValueError("mu_y, var_y, mu_x and var_x must all have the same shape")
    if mu_y.ndim < 2 or mu_y.shape[0] == 0:
        raise ValueError(f"mu_y must be [B, ...] with B >= 1, got shape {tuple(mu_y.shape)}")
    my, mx = mu_y.flatten(1), mu_x.flatten(1)
    d = (my.unsqueeze(1) - mx.unsqueeze(0)).pow(2).sum(-1)  # [B, B]
    d = d + var_y.flatten(1).sum(1)[:, None] + var_x.flatten(1).sum(1)[None, :]
    if mean:
        d = d / my.shape[1]
    logits = -a * d + b
    target = torch.eye(len(my), dtype=logits.dtype, device=logits.device)
    return F.binary_cross_entropy_with_logits(logits, target, reduction="sum")


def info_nce(z_x: Tensor, z_y: Tensor, log_temperature: Tensor) -> Tensor:
    """Symmetric InfoNCE (CLIP/CEBRA-style) between L2-normalised flattened latents, summed over the batch."""
    zx = F.normalize(z_x.flatten(1), dim=-1)
    zy = F.normalize(z_y.flatten(1), dim=-1)
    logits = zy @ zx.T / log_temperature.exp()
    target = torch.arange(len(zx), device=zx.device)
    return F.cross_entropy(logits, target, reduction="sum") + F.cross_entropy(
        logits.T, target, reduction="sum"
    )


def poisson_nll(rate: Tensor, counts: Tensor, mask: Tensor | None = None) -> Tensor:
    """Poisson negative log-likelihood ``Σ(λ − k log λ)`` (up to ``log k!``) per sample: ``[B]``.

    ``mask`` ``[B, N]`` excludes padded neurons.
    """
    if rate.shape != counts.shape:
        raise ValueError(
            f"rate and counts must have the same shape, got {tuple(rate.shape)} and {tuple(counts.shape)}"
        )
    nll = rate - counts * torch.log(rate + 1e-8)
    if mask is not None:
        nll = nll * mask.unsqueeze(-1).to(nll.dtype)
    return nll.flatten(1).sum(1)


# ----------------------------------------------------------------------------------------------
# Modules
# ----------------------------------------------------------------------------------------------


class NeuronSetProjector(nn.Module):
    """Maps ``[B, N, T]`` activity of any neuron count to ``[B, P*C, T]`` "virtual neuron" features.

    ``mode="attention"`` (ours, permutation invariant): one shared temporal conv gives every neuron
    features ``h_n ∈ R^{C×T}`` (one layer: it runs on every neuron of every trial); keys come from a
    coarse (4-bin average) copy of ``h_n``; ``P`` learned queries attend over neurons (softmax over
    ``n``, padding masked) and pool ``Σ_n α_pn h_n``.
    ``mode="conv_maxpool"`` (official style, order dependent): a ``3×3`` conv over the (neuron, time)
    image without neuron padding, then adaptive max-pooling of the neuron axis to ``P`` bins.
    """

    def __init__(
        self, *, T: int, channels: int = 16, n_virtual: int = 16, mode: ProjectorMode = "attention"
    ) -> None:
        super().__init__()
        if mode not in ("attention", "conv_maxpool"):
            raise ValueError(f"mode must be 'attention' or 'conv_maxpool', got {mode!r}")
        self.mode = mode
        self.channels, self.n_virtual = channels, n_virtual
        self.out_channels = channels * n_virtual
        if mode == "attention":
            self.temporal = nn.Conv1d(1, channels, 5, padding=2)
            self.coarse = max(1, T // 4)
            # adaptive average pooling of T bins to ``coarse`` as a [T, coarse] matrix (same windows)
            pool = torch.zeros(T, self.coarse)
            for i in range(self.coarse):
                lo, hi = (i * T) // self.coarse, -((-(i + 1) * T) // self.coarse)
                pool[lo:hi, i] = 1.0 / (hi - lo)
            self.pool: Tensor
            self.register_buffer("pool", pool, persistent=False)
            dk = 32
            self.key = nn.Linear(channels * self.coarse, dk)
            self.queries = nn.Parameter(torch.randn(n_virtual, dk) / math.sqrt(dk))
            self.scale = 1 / math.sqrt(dk)
        else:
            self.conv = nn.Conv2d(1, channels, 3, padding=(0, 1))
            self.norm = nn.GroupNorm(min(8, channels), channels)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        B, N, T = x.shape
        if mask is None:
            mask = torch.ones(B, N, dtype=torch.bool, device=x.device)
        x = torch.log1p(x)  # counts -> compressed scale
        if self.mode == "attention":
            # the shared 5-tap temporal conv as one matmul over the unfolded bins (the same sums as
            # ``self.temporal`` on [B*N, 1, T], without the conv kernels' per-call cost): [B, N, T, C]
            k = self.temporal.kernel_size[0]
            cols = F.pad(x, (k // 2, k // 2)).unfold(-1, k, 1)  # [B, N, T, k]
            h = cols @ self.temporal.weight.reshape(self.channels, k).T
            if self.temporal.bias is not None:
                h = h + self.temporal.bias
            # keys from the coarse (adaptive-average-pooled, channel-major [C, coarse]) copy; pooling and
            # the key map are both linear, so they run as one [T*C -> dk] map on h (no pooled copy)
            dk = self.key.out_features
            w_key = torch.einsum("tk,jck->jtc", self.pool, self.key.weight.reshape(dk, self.channels, -1))
            keys = F.linear(h.reshape(B, N, T * self.channels), w_key.reshape(dk, -1), self.key.bias)
            scores = torch.einsum("pk,bnk->bpn", self.queries, keys) * self.scale
            scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
            alpha = scores.softmax(dim=-1)  # over neurons
            v = torch.bmm(alpha, F.gelu(h).reshape(B, N, T * self.channels))  # [B, P, T*C], contiguous
            return (
                v.reshape(B, self.n_virtual, T, self.channels)
                .transpose(2, 3)
                .reshape(B, self.out_channels, T)
            )
        # conv_maxpool: each distinct neuron count is pooled over its real neurons only
        counts = mask.sum(1)
        out = x.new_empty(B, self.channels, self.n_virtual, T)
        for n in counts.unique().tolist():
            if n < 3:
                raise ValueError(f"x needs at least 3 neurons per trial in conv_maxpool mode, got {n}")
            rows = (counts == n).nonzero().squeeze(1)
            feats = self.conv(x[rows, :n].unsqueeze(1))  # [b, C, n-2, T]
            out[rows] = F.adaptive_max_pool2d(feats, (self.n_virtual, T))
        out = F.leaky_relu(self.norm(out), 0.2)
        return out.permute(0, 2, 1, 3).reshape(B, self.out_channels, T)


class PointwiseConv1d(nn.Conv1d):
    """A kernel-1 ``nn.Conv1d`` (same parameters, initialisation and state dict) computed as a matmul.

    At these sizes the convolution kernels' per-call cost is most of a 1x1 convolution; the matmul
    gives the same map up to float round-off (about 1e-6 relative) at half the cost.
    """

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(in_channels, out_channels, 1)

    def forward(self, x: Tensor) -> Tensor:
        out = torch.matmul(self.weight[:, :, 0], x)
        return out if self.bias is None else out + self.bias[:, None]


class GaussianHead(nn.Module):
    """``[B, H, T] -> (mu, logvar)`` each ``[B, D, T]``; log-variances softly bounded."""

    def __init__(
        self, hidden: int, latent_dim: int, logvar_min: float = -8.0, logvar_max: float = 4.0
    ) -> None:
        super().__init__()
        self.proj = PointwiseConv1d(hidden, 2 * latent_dim)
        self.lo, self.hi = logvar_min, logvar_max

    def forward(self, h: Tensor) -> tuple[Tensor, Tensor]:
        mu, raw = self.proj(h).chunk(2, dim=1)
        logvar = self.lo + (self.hi - self.lo) * torch.sigmoid(raw)
        return mu, logvar


def _conv_stack(c_in: int, hidden: int, c_out: int, kernel: int = 5) -> nn.Sequential:
    pad = kernel // 2
    return nn.Sequential(
        nn.Conv1d(c_in, hidden, kernel, padding=pad),
        nn.GELU(),
        nn.Conv1d(hidden, hidden, kernel, padding=pad),
        nn.GELU(),
        PointwiseConv1d(hidden, c_out),
    )


class NeuralEncoder(nn.Module):
    """Subject-agnostic neural encoder: projector -> temporal convs -> Gaussian head."""

    def __init__(self, cfg: PNBAConfig) -> None:
        super().__init__()
        self.projector = NeuronSetProjector(
            T=cfg.T, channels=cfg.channels, n_virtual=cfg.n_virtual, mode=cfg.projector
        )
        self.trunk = _conv_stack(self.projector.out_channels, cfg.hidden, cfg.hidden, kernel=3)
        self.head = GaussianHead(cfg.hidden, cfg.latent_dim, cfg.logvar_min, cfg.logvar_max)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        return self.head(F.gelu(self.trunk(self.projector(x, mask))))


class BehaviorEncoder(nn.Module):
    """Behaviour encoder ``g_φ``: temporal convs over ``[B, behavior_dim, T]`` -> Gaussian head."""

    def __init__(self, cfg: PNBAConfig) -> None:
        super().__init__()
        self.trunk = _conv_stack(cfg.behavior_dim, cfg.hidden, cfg.hidden)
        self.head = GaussianHead(cfg.hidden, cfg.latent_dim, cfg.logvar_min, cfg.logvar_max)

    def forward(self, y: Tensor) -> tuple[Tensor, Tensor]:
        return self.head(F.gelu(self.trunk(y)))


class NeuralDecoder(nn.Module):
    """Neural decoder ``f_ϑᵈ``: shared trunk, then a per-recording linear readout, rates ``ELU(·)+1``."""

    def __init__(self, cfg: PNBAConfig) -> None:
        super().__init__()
        self.trunk = nn.Sequential(_conv_stack(cfg.latent_dim, cfg.hidden, cfg.hidden), nn.GELU())
        self.weight = nn.Parameter(
            torch.randn(cfg.n_recordings, cfg.max_neurons, cfg.hidden) / math.sqrt(cfg.hidden)
        )
        self.bias = nn.Parameter(torch.full((cfg.n_recordings, cfg.max_neurons), -1.5))

    def forward(self, z: Tensor, recording: Tensor, n_neurons: int) -> Tensor:
        """Rates ``[B, N, T]`` of latents ``z [B, D, T]``; ``z`` may also stack ``S`` samples of the
        same ``B`` trials (``[S*B, D, T]``, sample-major), giving ``[S*B, N, T]`` with the readouts
        gathered once."""
        B = recording.shape[0]
        if z.shape[0] % max(B, 1):
            raise ValueError(f"z holds {z.shape[0]} rows, not a multiple of the {B} recordings given")
        h = self.trunk(z)  # [S*B, H, T]
        w = self.weight[recording, :n_neurons]  # [B, N, H]
        out = (
            torch.matmul(w, h.reshape(-1, *w.shape[:1], *h.shape[1:]))
            + self.bias[recording, :n_neurons, None]
        )
        return (F.elu(out) + 1).reshape(-1, n_neurons, h.shape[-1])


@dataclass(frozen=True)
class PNBALoss:
    """The terms of one batch (each already divided by the batch size); ``total`` is their sum."""

    total: Tensor
    terms: dict[str, float]


class PNBA(nn.Module):
    """Probabilistic neural-behavioural alignment (and its ablations, chosen by ``cfg.objective``).

    ``encode_neural`` needs no subject id (zero-shot); ``decode_behavior`` maps latents to behaviour
    (the paper's neural-decoding path when fed the neural latent).
    """

    def __init__(self, cfg: PNBAConfig) -> None:
        super().__init__()
        if not isinstance(cfg, PNBAConfig):
            raise TypeError(f"cfg must be a PNBAConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        self.neural_encoder = NeuralEncoder(cfg)
        self.behavior_encoder = BehaviorEncoder(cfg)
        if cfg.objective == "pnba":
            self.neural_decoder = NeuralDecoder(cfg)
        if self.has_decoder:
            self.behavior_decoder = _conv_stack(cfg.latent_dim, cfg.hidden, cfg.behavior_dim)
        self.a = nn.Parameter(torch.tensor(1.0))  # matching scale (official init 1)
        self.b = nn.Parameter(torch.tensor(0.0))  # matching offset (official init 0)
        self.log_temperature = nn.Parameter(torch.tensor(math.log(0.1)))  # contrastive arm only

    @property
    def has_decoder(self) -> bool:
        return self.cfg.objective in ("pnba", "supervised")

    def _check_neural(self, spikes: Tensor, mask: Tensor | None) -> None:
        check_finite_tensor("spikes", spikes, ndim=3, floating=True)
        if spikes.shape[-1] != self.cfg.T:
            raise ValueError(f"spikes must have T={self.cfg.T} time bins, got shape {tuple(spikes.shape)}")
        if mask is not None and (mask.shape != spikes.shape[:2] or mask.dtype != torch.bool):
            raise ValueError(f"mask must be a bool tensor of shape {tuple(spikes.shape[:2])}")
        if mask is not None and not bool(mask.any(1).all()):
            raise ValueError("mask must keep at least one neuron per trial")

    def encode_neural(self, spikes: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Zero-shot encoding: ``spikes [B, N, T]`` (any N and neuron order) -> ``(mu, logvar) [B, D, T]``."""
        self._check_neural(spikes, mask)
        return self.neural_encoder(spikes, mask)

    def encode_behavior(self, behavior: Tensor) -> tuple[Tensor, Tensor]:
        """``behavior [B, behavior_dim, T]`` -> ``(mu, logvar) [B, D, T]``."""
        check_finite_tensor("behavior", behavior, ndim=3, floating=True)
        if behavior.shape[1:] != (self.cfg.behavior_dim, self.cfg.T):
            raise ValueError(
                f"behavior must be [B, {self.cfg.behavior_dim}, {self.cfg.T}], got {tuple(behavior.shape)}"
            )
        return self.behavior_encoder(behavior)

    def decode_behavior(self, z: Tensor) -> Tensor:
        """``g_ψᵈ``: latent ``[B, D, T]`` -> behaviour ``[B, behavior_dim, T]`` (full and supervised)."""
        if not self.has_decoder:
            raise ValueError(f"objective={self.cfg.objective!r} trains no behaviour decoder")
        check_finite_tensor("z", z, ndim=3, floating=True)
        return self.behavior_decoder(z)

    def forward(
        self,
        spikes: Tensor,
        behavior: Tensor,
        recording: Tensor,
        mask: Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> PNBALoss:
        """The training objective on one batch (Sec. 2.4 weights: all 1, summed, divided by ``B``).

        Args:
            spikes: ``[B, N, T]`` counts; mask: ``[B, N]`` real neurons; behavior: ``[B, 2, T]``;
            recording: ``[B]`` readout index of each trial; generator: draws the posterior samples.
        """
        self._check_neural(spikes, mask)
        B, N, _ = spikes.shape
        if recording.shape != (B,):
            raise ValueError(f"recording must have shape ({B},), got {tuple(recording.shape)}")
        mu_x, lv_x = self.neural_encoder(spikes, mask)
        obj = self.cfg.objective
        if obj == "supervised":  # the oracle: regress behaviour from the neural mean
            check_finite_tensor("behavior", behavior, ndim=3, floating=True)
            loss = (self.behavior_decoder(mu_x) - behavior).pow(2).sum() / B
            return PNBALoss(loss, {"se_x2y": float(loss.detach())})
        mu_y, lv_y = self.encode_behavior(behavior)
        if obj == "contrastive":
            loss = info_nce(mu_x, mu_y, self.log_temperature) / B
            return PNBALoss(loss, {"infonce": float(loss.detach())})

        def noise(t: Tensor) -> Tensor:
            return torch.randn(t.shape, generator=generator, dtype=t.dtype, device=t.device)

        mu_p, lv_p = product_of_gaussians(mu_x, lv_x, mu_y, lv_y)
        terms: dict[str, Tensor] = {
            "kl_p_x": gaussian_kl(mu_p, lv_p, mu_x, lv_x).sum(),  # structure-preserving KLs
            "kl_p_y": gaussian_kl(mu_p, lv_p, mu_y, lv_y).sum(),
            "match": prob_match_loss(
                mu_y, lv_y.exp(), mu_x, lv_x.exp(), self.a, self.b, mean=self.cfg.match_distance == "mean"
            ),
            "kl_sym": (gaussian_kl(mu_y, lv_y, mu_x, lv_x) + gaussian_kl(mu_x, lv_x, mu_y, lv_y)).sum(),
        }
        if obj == "pnba":  # generative constraints
            z_p = mu_p + (0.5 * lv_p).exp() * noise(mu_p)
            z_x = mu_x + (0.5 * lv_x).exp() * noise(mu_x)
            z_y = mu_y + (0.5 * lv_y).exp() * noise(mu_y)
            # each decoder runs once on both samples stacked (per-trial outputs as two separate calls)
            rates = self.neural_decoder(torch.cat([z_p, z_y]), recording, N)
            terms["poisson_p"] = poisson_nll(rates[:B], spikes, mask).sum()
            terms["poisson_y2x"] = poisson_nll(rates[B:], spikes, mask).sum()
            beh = self.behavior_decoder(torch.cat([z_p, z_x]))
            terms["se_p"] = (beh[:B] - behavior).pow(2).sum()
            terms["se_x2y"] = (beh[B:] - behavior).pow(2).sum()
        total = torch.stack(list(terms.values())).sum() / B
        return PNBALoss(total, {k: float(v.detach()) / B for k, v in terms.items()})
