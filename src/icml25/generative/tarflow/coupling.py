"""The baseline TarFlow is compared with: a RealNVP/Glow-style multi-scale affine coupling flow.

Part of the TarFlow claim check (*Normalizing Flows are Capable Generative Models*, ICML 2025,
https://arxiv.org/abs/2412.06329), which compares TarFlow's likelihood with that of earlier flows,
coupling flows included (the paper's ImageNet 64×64 bits/dim table). The baseline follows Dinh,
Sohl-Dickstein, Bengio, *Density estimation using Real NVP* (ICLR 2017) and Kingma, Dhariwal,
*Glow: generative flow with invertible 1×1 convolutions* (NeurIPS 2018). It is written in-house
(our choice) so that its size can be matched to a TarFlow's (±10% parameters in the claim check).

Architecture (for an input C×H×W, H and W divisible by 2^num_levels):
    level 0 (C×H×W):        ``checkerboard_steps`` × [ActNorm, checkerboard affine coupling],
                            the mask parity alternating (RealNVP);
    level l = 1..num_levels: squeeze 2×2 (space to depth), ``steps_per_level`` ×
                            [ActNorm, invertible 1×1 conv, channel-split affine coupling] (Glow),
                            then, except at the last level, half of the channels are factored out
                            to the N(0, I) prior (multi-scale architecture).
Coupling networks are Glow's conv3×3 → ReLU → conv1×1 → ReLU → conv3×3 (zero-initialised), and
the log-scale is bounded, s = scale_bound · tanh(raw / scale_bound).

``z`` is returned in the input's layout: the factored-out parts and the final output are
flattened, concatenated and reshaped to (B, C, H, W); ``inverse`` undoes exactly that.
ActNorm uses the data-dependent initialisation of Glow on the first forward pass in training
mode; in eval mode it stays as constructed (zero bias, unit scale) until trained.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import torch
import torch.nn.functional as F  # noqa: N812
from einops import rearrange
from torch import Tensor, nn

from icml25.core.validate import check_fields
from icml25.nn.params import match_width

from .model import FlowOutput, gaussian_nll

__all__ = [
    "ActNorm",
    "AffineCoupling",
    "CouplingFlow",
    "CouplingFlowConfig",
    "InvConv1x1",
    "match_coupling_hidden",
    "squeeze",
    "unsqueeze",
]


@dataclass(frozen=True)
class CouplingFlowConfig:
    """A multi-scale coupling flow. ``hidden`` is the coupling-network width."""

    in_channels: int = 1
    img_size: int = 8
    num_levels: int = 2
    checkerboard_steps: int = 2
    steps_per_level: int = 4
    hidden: int = 64
    scale_bound: float = 2.0

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=("in_channels", "img_size", "num_levels", "hidden", "steps_per_level"),
            non_negative_int=("checkerboard_steps",),
            positive=("scale_bound",),
        )
        if self.img_size % (2**self.num_levels):
            raise ValueError(
                f"CouplingFlowConfig.img_size={self.img_size} must be divisible by "
                f"2**num_levels={2**self.num_levels}"
            )

    @property
    def dims(self) -> int:
        return self.in_channels * self.img_size**2


def squeeze(x: Tensor) -> Tensor:
    """(B, C, H, W) → (B, 4C, H/2, W/2)."""
    return rearrange(x, "b c (h p1) (w p2) -> b (c p1 p2) h w", p1=2, p2=2)


def unsqueeze(x: Tensor) -> Tensor:
    """Inverse of :func:`squeeze`."""
    return rearrange(x, "b (c p1 p2) h w -> b c (h p1) (w p2)", p1=2, p2=2)


class ActNorm(nn.Module):
    """y = (x + b) · exp(s) per channel; logdet = H·W·Σ s. Data-dependent init (Glow Sec. 3.1)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(1, channels, 1, 1))
        self.log_scale = nn.Parameter(torch.zeros(1, channels, 1, 1))
        self.register_buffer("initialized", torch.tensor(False))
        self.initialized: Tensor

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        if self.training and not bool(self.initialized):
            with torch.no_grad():  # zero mean, unit variance per channel on the first batch
                mean = x.mean(dim=(0, 2, 3), keepdim=True)
                std = x.std(dim=(0, 2, 3), keepdim=True) if x.shape[0] > 1 else torch.ones_like(mean)
                self.bias.copy_(-mean)
                self.log_scale.copy_(-torch.log(std + 1e-6))
                self.initialized.fill_(True)
        y = (x + self.bias) * torch.exp(self.log_scale)
        logdet = self.log_scale.sum() * x.shape[2] * x.shape[3]
        return y, logdet.expand(x.shape[0])

    def inverse(self, y: Tensor) -> Tensor:
        return y * torch.exp(-self.log_scale) - self.bias


class InvConv1x1(nn.Module):
    """Invertible 1×1 convolution y = W x per pixel; logdet = H·W·log|det W| (Glow Sec. 3.2)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        q, _ = torch.linalg.qr(torch.randn(channels, channels))  # random rotation
        self.weight = nn.Parameter(q)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        y = F.conv2d(x, self.weight[:, :, None, None])
        logdet = torch.linalg.slogdet(self.weight)[1] * x.shape[2] * x.shape[3]
        return y, logdet.expand(x.shape[0])

    def inverse(self, y: Tensor) -> Tensor:
        return F.conv2d(y, torch.linalg.inv(self.weight)[:, :, None, None])


def _coupling_net(c_in: int, c_out: int, hidden: int) -> nn.Sequential:
    net = nn.Sequential(
        nn.Conv2d(c_in, hidden, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(hidden, hidden, 1),
        nn.ReLU(),
        nn.Conv2d(hidden, 2 * c_out, 3, padding=1),
    )
    last = net[-1]
    assert isinstance(last, nn.Conv2d)
    nn.init.zeros_(last.weight)  # coupling starts as the identity
    assert last.bias is not None
    nn.init.zeros_(last.bias)
    return net


class AffineCoupling(nn.Module):
    """Affine coupling: the passive part x_a conditions (s, t); x_b ↦ x_b · exp(s) + t (RealNVP Eq. 4-6).

    ``mask="checkerboard"`` splits pixels by (i + j + parity) mod 2 (the network also sees the mask);
    ``mask="channel"`` splits channels into a first and a second half.
    """

    def __init__(
        self, channels: int, hidden: int, mask: str, parity: int = 0, scale_bound: float = 2.0
    ) -> None:
        super().__init__()
        if mask not in ("checkerboard", "channel"):
            raise ValueError(f"AffineCoupling: mask must be 'checkerboard' or 'channel', got {mask!r}")
        self.mask_type = mask
        self.parity = parity
        self.scale_bound = scale_bound
        if mask == "checkerboard":
            self.net = _coupling_net(channels + 1, channels, hidden)
        else:
            # parity 0: the first half conditions the second; parity 1: the other way round
            self.cut = channels // 2
            c_a = self.cut if parity == 0 else channels - self.cut
            self.net = _coupling_net(c_a, channels - c_a, hidden)

    def _mask(self, x: Tensor) -> Tensor:
        H, W = x.shape[-2:]
        ij = torch.arange(H, device=x.device)[:, None] + torch.arange(W, device=x.device)[None, :]
        return ((ij + self.parity) % 2).to(x.dtype)[None, None]

    def _st(self, h: Tensor) -> tuple[Tensor, Tensor]:
        raw, t = self.net(h).chunk(2, dim=1)
        return self.scale_bound * torch.tanh(raw / self.scale_bound), t

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        if self.mask_type == "checkerboard":
            m = self._mask(x)
            s, t = self._st(torch.cat([x * m, m.expand(x.shape[0], 1, -1, -1)], dim=1))
            s, t = s * (1 - m), t * (1 - m)
            return x * m + (1 - m) * (x * torch.exp(s) + t), s.flatten(1).sum(1)
        lo, hi = x[:, : self.cut], x[:, self.cut :]
        if self.parity == 0:
            s, t = self._st(lo)
            return torch.cat([lo, hi * torch.exp(s) + t], dim=1), s.flatten(1).sum(1)
        s, t = self._st(hi)
        return torch.cat([lo * torch.exp(s) + t, hi], dim=1), s.flatten(1).sum(1)

    def inverse(self, y: Tensor) -> Tensor:
        if self.mask_type == "checkerboard":
            m = self._mask(y)
            s, t = self._st(torch.cat([y * m, m.expand(y.shape[0], 1, -1, -1)], dim=1))
            s, t = s * (1 - m), t * (1 - m)
            return y * m + (1 - m) * ((y - t) * torch.exp(-s))
        lo, hi = y[:, : self.cut], y[:, self.cut :]
        if self.parity == 0:
            s, t = self._st(lo)
            return torch.cat([lo, (hi - t) * torch.exp(-s)], dim=1)
        s, t = self._st(hi)
        return torch.cat([(lo - t) * torch.exp(-s), hi], dim=1)


class CouplingFlow(nn.Module):
    """Multi-scale RealNVP/Glow flow with TarFlow's ``forward``/``nll``/``inverse``/``sample`` API."""

    def __init__(self, config: CouplingFlowConfig) -> None:
        super().__init__()
        c = config
        self.config = config
        self.level0 = nn.ModuleList()
        for k in range(c.checkerboard_steps):
            self.level0.append(ActNorm(c.in_channels))
            self.level0.append(AffineCoupling(c.in_channels, c.hidden, "checkerboard", k % 2, c.scale_bound))
        self.levels = nn.ModuleList()
        ch = c.in_channels
        self.split_channels: list[int] = []
        for level in range(c.num_levels):
            ch = ch * 4
            steps = nn.ModuleList()
            for k in range(c.steps_per_level):
                steps.append(ActNorm(ch))
                steps.append(InvConv1x1(ch))
                steps.append(AffineCoupling(ch, c.hidden, "channel", k % 2, c.scale_bound))
            self.levels.append(steps)
            if level < c.num_levels - 1:
                self.split_channels.append(ch // 2)  # factored out to the prior
                ch = ch - ch // 2

    def _steps(self, level: int) -> list[ActNorm | InvConv1x1 | AffineCoupling]:
        return cast(
            list[ActNorm | InvConv1x1 | AffineCoupling], list(cast(nn.ModuleList, self.levels[level]))
        )

    def _check_x(self, x: Tensor, name: str = "x") -> None:
        c = self.config
        if not isinstance(x, Tensor) or x.ndim != 4:
            raise ValueError(f"CouplingFlow: {name} must be a (B, C, H, W) tensor")
        if x.shape[1] != c.in_channels or tuple(x.shape[2:]) != (c.img_size, c.img_size):
            raise ValueError(
                f"CouplingFlow: {name} has shape {tuple(x.shape[1:])}, expected "
                f"({c.in_channels}, {c.img_size}, {c.img_size})"
            )
        if not x.is_floating_point() or not torch.isfinite(x).all():
            raise ValueError(f"CouplingFlow: {name} must be a finite floating-point tensor")

    def forward(self, x: Tensor, y: Tensor | None = None) -> FlowOutput:
        """x (B, C, H, W) → ``FlowOutput(z (B, C, H, W), logdet (B,))``. The flow is unconditional."""
        self._check_x(x)
        if y is not None:
            raise ValueError("CouplingFlow is unconditional: y must be None")
        logdet = x.new_zeros(x.shape[0])
        h = x
        for layer in self.level0:
            h, ld = layer(h)
            logdet = logdet + ld
        parts: list[Tensor] = []
        for level in range(len(self.levels)):
            h = squeeze(h)
            for layer in self._steps(level):
                h, ld = layer(h)
                logdet = logdet + ld
            if level < len(self.split_channels):
                k = self.split_channels[level]
                parts.append(h[:, :k].flatten(1))
                h = h[:, k:]
        parts.append(h.flatten(1))
        return FlowOutput(torch.cat(parts, dim=1).view_as(x), logdet)

    def prior_log_var(self) -> None:
        """The prior is the standard normal (same interface as :meth:`TarFlow.prior_log_var`)."""
        return None

    def nll(self, x: Tensor, y: Tensor | None = None) -> Tensor:
        """Per-sample negative log-likelihood in nats, (B,)."""
        z, logdet = self(x, y)
        return gaussian_nll(z, logdet)

    def nll_per_dim(self, x: Tensor, y: Tensor | None = None) -> Tensor:
        return self.nll(x, y) / self.config.dims

    @torch.no_grad()
    def inverse(self, z: Tensor, y: Tensor | None = None) -> Tensor:
        """z (B, C, H, W) → x."""
        self._check_x(z, "z")
        if y is not None:
            raise ValueError("CouplingFlow is unconditional: y must be None")
        c = self.config
        B = z.shape[0]
        flat = z.flatten(1)
        # shapes of the factored-out parts and of the final tensor
        shapes: list[tuple[int, int, int]] = []
        ch, side = c.in_channels, c.img_size
        for level in range(c.num_levels):
            ch, side = ch * 4, side // 2
            if level < c.num_levels - 1:
                shapes.append((self.split_channels[level], side, side))
                ch = ch - self.split_channels[level]
        final_shape = (ch, side, side)
        sizes = [a * b * d for a, b, d in shapes] + [final_shape[0] * final_shape[1] * final_shape[2]]
        chunks = list(flat.split(sizes, dim=1))
        h = chunks[-1].reshape(B, *final_shape)
        for level in reversed(range(c.num_levels)):
            if level < len(self.split_channels):
                h = torch.cat([chunks[level].reshape(B, *shapes[level]), h], dim=1)
            for layer in reversed(self._steps(level)):
                h = layer.inverse(h)
            h = unsqueeze(h)
        for layer in reversed(cast(list[ActNorm | AffineCoupling], list(self.level0))):
            h = layer.inverse(h)
        return h

    def sample(
        self,
        n: int,
        y: Tensor | None = None,
        *,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        if n < 1 or temperature <= 0:
            raise ValueError(
                f"CouplingFlow.sample: n must be >= 1 and temperature > 0, got {n}, {temperature}"
            )
        c = self.config
        device = next(self.parameters()).device
        z = torch.randn(n, c.in_channels, c.img_size, c.img_size, generator=generator, device=device)
        return self.inverse(z * temperature, y)


def match_coupling_hidden(
    target_params: int, base: CouplingFlowConfig, *, tolerance: float = 0.1
) -> CouplingFlowConfig:
    """``base`` with the coupling width ``hidden`` whose parameter count is closest to ``target_params``.

    The count grows with ``hidden``; :func:`icml25.nn.params.match_width` bisects on models built on
    the ``meta`` device (no memory, no RNG). Raises ValueError if no width comes within ``tolerance``.
    """
    from dataclasses import replace

    hidden = match_width(
        lambda h: CouplingFlow(replace(base, hidden=h)),
        target_params,
        tolerance=tolerance,
        trainable_only=True,
    )
    return replace(base, hidden=hidden)
