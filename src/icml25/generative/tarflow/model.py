"""TarFlow: a stack of causal-Transformer autoregressive affine flow blocks over image patches.

Zhai, Zhang, Nakkiran, Berthelot, Gu, Zheng, Chen, Bautista, Jaitly, Susskind. *Normalizing Flows are
Capable Generative Models*, ICML 2025 (oral). https://arxiv.org/abs/2412.06329 · official code
https://github.com/apple/ml-tarflow (``transformer_flow.py``, whose names this module follows).

Notation (einops letters):
    b  batch          n  tokens (patches), N = (H/P)(W/P)
    d  token size, d = C·P²             k  transformer width Ch
    h  attention heads (Ch / head_dim)  e  head dim

One flow block (``MetaBlock``), forward x → z, Sec. 3 / Eq. (4)-(6) of the paper:
    u = π_b(patchify(x));  (a_t, μ_t) = f_θ(u_{<t})  (causal Transformer, outputs shifted right);
    z_t = (u_t − μ_t) ⊙ exp(−a_t);  log|det ∂z/∂u| = −Σ_t Σ_i a_{t,i}.
Blocks alternate π_b between identity and a flip of the token order (``alternate=False`` keeps
every block in the same direction, the ablation). The model density is
p(x) = N(z; 0, I)·|det ∂z/∂x|, so NLL = ½‖z‖² + (D/2)·log 2π − Σ_b logdet_b (Eq. 7).
Sampling inverts the blocks in reverse order, token by token (x_t = z_t ⊙ exp(a_t) + μ_t), with a
key/value cache so each step costs one token's worth of Transformer compute.

Our choices, where the paper leaves room or where this module departs from the official code:
    * ``logdet`` is the per-sample *sum* in nats (the official code returns a per-dimension mean);
      ``nll`` / ``nll_per_dim`` make the two explicit.
    * ``z`` is returned in image layout (B, C, H, W) (un-patchified), so ``inverse`` takes what
      ``forward`` returns; the official code keeps the token layout.
    * The last linear layer of each block is zero-initialised in weight *and* bias, so the flow is
      exactly the identity at initialisation (the official code zeroes the weight only).
    * Guidance on an unconditional model is only meaningful with the attention-temperature
      branch; ``guidance > 0`` with ``attn_temp == 1`` on an unconditional model raises.
    * Annealed guidance uses w_t = (t+1)/(N−1)·w for the step that produces token t+1.
    * The volume-preserving variant (``nvp=False``) sets a = 0 and learns a diagonal prior variance
      per token and channel by an EMA (rate 0.1) of E[z²] in training mode; ``inverse`` stays the
      exact inverse of ``forward`` and ``sample_prior`` draws from N(0, diag(var)).
    * With guidance, the unguided branch uses the null (mean) class embedding *and* ``attn_temp``;
      for an unconditional model only the temperature differs.
    * Input checks: shape, channel count and finiteness here; the [−1, 1] / integer-level range is
      checked where data enter (``dequantize``, ``noise_augment``, ``bits_per_dim``, ``train_flow``),
      because noise-augmented training inputs legitimately leave [−1, 1].
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple, cast

import torch
from torch import Tensor, nn

from icml25.core.validate import check_fields
from icml25.nn.attention import KVCache
from icml25.nn.blocks import TransformerBlock
from icml25.nn.checkpoint import PretrainedMixin, load_checkpoint, save_checkpoint
from icml25.nn.embeddings import patchify, unpatchify

__all__ = [
    "FlowOutput",
    "TarFlow",
    "TarFlowConfig",
    "patchify",
    "unpatchify",
    "gaussian_nll",
]

GuideWhat = Literal["ab", "a", "b"]
LOG_2PI = math.log(2 * math.pi)


class FlowOutput(NamedTuple):
    """``z`` in the input's layout and ``logdet`` = log|det ∂z/∂x| per sample (nats, summed)."""

    z: Tensor
    logdet: Tensor


@dataclass(frozen=True)
class TarFlowConfig:
    """A TarFlow P-Ch-T-K model. Defaults are the paper's ImageNet-64 likelihood model 2-768-8-8.

    Args:
        in_channels: image channels C.
        img_size: image height = width (must be divisible by ``patch_size``).
        patch_size: P; tokens are P×P patches, N = (img_size/P)², d = C·P².
        channels: Transformer width Ch (a multiple of ``head_dim``).
        num_blocks: T flow blocks.
        layers_per_block: K Transformer layers per block.
        head_dim: attention head size (64 in the paper).
        mlp_ratio: MLP expansion (4).
        nvp: affine (True, default) or volume-preserving (False) blocks.
        num_classes: 0 for an unconditional model, else the number of class labels.
        alternate: flip the token order in every other block (the paper); False is the ablation.
    """

    in_channels: int = 3
    img_size: int = 64
    patch_size: int = 2
    channels: int = 768
    num_blocks: int = 8
    layers_per_block: int = 8
    head_dim: int = 64
    mlp_ratio: int = 4
    nvp: bool = True
    num_classes: int = 0
    alternate: bool = True

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=(
                "in_channels",
                "img_size",
                "patch_size",
                "channels",
                "num_blocks",
                "head_dim",
                "mlp_ratio",
            ),
            non_negative_int=("layers_per_block", "num_classes"),
        )
        if self.img_size % self.patch_size:
            raise ValueError(
                f"TarFlowConfig.img_size={self.img_size} is not divisible by patch_size={self.patch_size}"
            )
        if self.channels % self.head_dim:
            raise ValueError(
                f"TarFlowConfig.channels={self.channels} must be a multiple of head_dim={self.head_dim}"
            )
        if self.num_tokens < 2:
            raise ValueError("TarFlowConfig needs at least 2 patches (img_size / patch_size >= 2)")

    @property
    def num_tokens(self) -> int:
        return (self.img_size // self.patch_size) ** 2

    @property
    def token_dim(self) -> int:
        return self.in_channels * self.patch_size**2

    @property
    def dims(self) -> int:
        return self.in_channels * self.img_size**2


def gaussian_nll(z: Tensor, logdet: Tensor, log_var: Tensor | None = None) -> Tensor:
    """Per-sample NLL in nats under a diagonal Gaussian prior: ½Σ(z²/σ² + log 2πσ²) − logdet (Eq. 7)."""
    z = z.flatten(1)
    if log_var is None:
        prior = 0.5 * (z.pow(2).sum(1) + z.shape[1] * LOG_2PI)
    else:
        lv = log_var.flatten().to(z)
        prior = 0.5 * ((z.pow(2) * torch.exp(-lv)).sum(1) + (lv + LOG_2PI).sum())
    return prior - logdet


class MetaBlock(nn.Module):
    """One autoregressive affine flow block over the token sequence (Sec. 3, Eq. 4-6).

    The steps, in the order of the official ``MetaBlock.forward`` and numbered for the inline comments:
    (1) permute the tokens by π_b; (2) project them to width Ch and add the positional (and class)
    embeddings, which follow π_b; (3) run the causal Transformer layers; (4) project to (a, μ);
    (5) shift right by one token; (6) z = (u − μ)·exp(−a); (7) log-det = −Σ a.
    """

    def __init__(self, config: TarFlowConfig, flip: bool) -> None:
        super().__init__()
        c = config
        self.flip = flip
        self.nvp = c.nvp
        self.token_dim = c.token_dim
        self.proj_in = nn.Linear(c.token_dim, c.channels)
        self.pos_embed = nn.Parameter(torch.randn(c.num_tokens, c.channels) * 1e-2)
        self.class_embed = (
            nn.Parameter(torch.randn(c.num_classes, c.channels) * 1e-2) if c.num_classes > 0 else None
        )
        # pre-LN causal Transformer layers: x + Attn(LN(x)), x + MLP(LN(x)) (GELU, mlp_ratio)
        self.layers = nn.ModuleList(
            TransformerBlock(c.channels, head_dim=c.head_dim, mlp_ratio=c.mlp_ratio)
            for _ in range(c.layers_per_block)
        )
        self.proj_out = nn.Linear(c.channels, 2 * c.token_dim if c.nvp else c.token_dim)
        nn.init.zeros_(self.proj_out.weight)  # the flow starts as the identity
        nn.init.zeros_(self.proj_out.bias)

    def permute(self, u: Tensor, dim: int = 1) -> Tensor:
        """π_b: identity or reversal of the token order (its own inverse)."""
        return u.flip(dim) if self.flip else u

    def cond_embedding(self, y: Tensor | None, batch: int) -> Tensor | None:
        """Class embedding per sample, (B, 1, Ch); y = -1 (or y None) is the mean (null) embedding."""
        if self.class_embed is None:
            return None
        null = self.class_embed.mean(0)
        if y is None:
            return null.expand(batch, 1, -1)
        emb = self.class_embed[y.clamp(min=0)]
        emb = torch.where((y < 0)[:, None], null[None], emb)
        return emb[:, None, :]

    def _split(self, o: Tensor) -> tuple[Tensor, Tensor]:
        if self.nvp:
            a, mu = o.chunk(2, dim=-1)
            return a, mu
        return torch.zeros_like(o), o

    def params(self, u: Tensor, cond: Tensor | None, attn_temp: float = 1.0) -> tuple[Tensor, Tensor]:
        """(a, μ) for every token of the (already permuted) sequence ``u``, shifted right by one."""
        h = self.proj_in(u) + self.permute(self.pos_embed, dim=0)  # step 2: embeddings follow π_b
        if cond is not None:
            h = h + cond
        for layer in self.layers:
            h = layer(h, causal=True, temperature=attn_temp)  # τ divides the logits (Sec. 3.3)
        o = self.proj_out(h)
        o = torch.cat([torch.zeros_like(o[:, :1]), o[:, :-1]], dim=1)  # step 5: token t sees only < t
        return self._split(o)

    def forward(self, u: Tensor, cond: Tensor | None) -> tuple[Tensor, Tensor]:
        """u (B, N, d) → z (B, N, d), logdet (B,) in nats."""
        u = self.permute(u)
        a, mu = self.params(u, cond)
        z = (u - mu) * torch.exp(-a)  # step 6 (Eq. 5)
        logdet = -a.flatten(1).sum(1)  # step 7 (Eq. 6)
        return self.permute(z), logdet

    def _step(
        self, tok: Tensor, t: int, cond: Tensor | None, caches: list[KVCache], attn_temp: float
    ) -> Tensor:
        """Transformer output for one token at (permuted) position t, extending the KV caches."""
        h = self.proj_in(tok) + self.permute(self.pos_embed, dim=0)[t]
        if cond is not None:
            h = h + cond
        for layer, cache in zip(self.layers, caches, strict=True):
            h = layer(h, causal=True, temperature=attn_temp, cache=cache)
        return self.proj_out(h)

    def reverse(
        self,
        z: Tensor,
        cond: Tensor | None,
        *,
        cond_u: Tensor | None = None,
        guidance: float = 0.0,
        guide_what: GuideWhat = "ab",
        attn_temp: float = 1.0,
        annealed: bool = False,
        use_cache: bool = True,
    ) -> Tensor:
        """Invert the block token by token. With ``guidance`` w > 0, each step also predicts (a_u, μ_u)
        with ``cond_u`` (null class) and ``attn_temp``, and uses a + w(a − a_u), μ + w(μ − μ_u).
        """
        z = self.permute(z)
        N = z.shape[1]
        guided = guidance != 0.0
        xs = [z[:, 0]]  # token 0 passes through unchanged
        caches = [KVCache() for _ in self.layers]
        caches_u = [KVCache() for _ in self.layers]
        for t in range(N - 1):
            if use_cache:
                a, mu = self._split(self._step(xs[t][:, None], t, cond, caches, 1.0))
            else:  # naive reference: rerun the whole prefix (O(N²) per block)
                a, mu = self._next_from_prefix(torch.stack(xs, dim=1), cond, 1.0)
            if guided:
                if use_cache:
                    a_u, mu_u = self._split(self._step(xs[t][:, None], t, cond_u, caches_u, attn_temp))
                else:
                    a_u, mu_u = self._next_from_prefix(torch.stack(xs, dim=1), cond_u, attn_temp)
                w = guidance * (t + 1) / (N - 1) if annealed else guidance
                if "a" in guide_what:
                    a = a + w * (a - a_u)
                if "b" in guide_what:
                    mu = mu + w * (mu - mu_u)
            xs.append(z[:, t + 1] * torch.exp(a[:, 0]) + mu[:, 0])  # inverse of step 6
        return self.permute(torch.stack(xs, dim=1))

    def _next_from_prefix(
        self, prefix: Tensor, cond: Tensor | None, attn_temp: float
    ) -> tuple[Tensor, Tensor]:
        """Uncached: run the Transformer over the whole prefix and take its last (unshifted) output."""
        t = prefix.shape[1]
        h = self.proj_in(prefix) + self.permute(self.pos_embed, dim=0)[:t]
        if cond is not None:
            h = h + cond
        for layer in self.layers:
            h = layer(h, causal=True, temperature=attn_temp)
        return self._split(self.proj_out(h[:, -1:]))


# ------------------------------------------------------------------------------------------------
# The model
# ------------------------------------------------------------------------------------------------


class TarFlow(nn.Module, PretrainedMixin):
    """Transformer autoregressive flow (Algorithm: forward = teacher-forced pass, inverse = sampling).

    ``save_pretrained(folder)`` / ``TarFlow.from_pretrained(folder)`` use the diffusers folder layout
    (``config.json`` + ``diffusion_pytorch_model.safetensors``); ``save`` / ``load`` keep everything
    in one safetensors file. Sampling takes a ``torch.Generator`` for reproducible draws.

    Usage::

        model = TarFlow(TarFlowConfig(in_channels=1, img_size=8, patch_size=2, channels=64,
                                      num_blocks=4, layers_per_block=1, head_dim=32))
        z, logdet = model(x)                 # x in [-1, 1] (plus dequantisation/noise)
        nll = model.nll(x)                   # (B,) nats
        xs = model.sample(16, generator=torch.Generator().manual_seed(0))
    """

    config_class = TarFlowConfig
    weights_name = "diffusion_pytorch_model.safetensors"

    def __init__(self, config: TarFlowConfig) -> None:
        super().__init__()
        self.config = config
        self.blocks = nn.ModuleList(
            MetaBlock(config, flip=config.alternate and b % 2 == 1) for b in range(config.num_blocks)
        )
        # VP variant: learned diagonal prior variance per token and channel (EMA of E[z²])
        self.register_buffer("var", torch.ones(config.num_tokens, config.token_dim))
        self.var: Tensor

    def _blocks(self) -> list[MetaBlock]:
        return cast(list[MetaBlock], list(self.blocks))

    # -- persistence ------------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write weights and config to one safetensors file (atomic, :func:`icml25.nn.save_checkpoint`)."""
        return save_checkpoint(path, self, config=self.config)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, device: str | torch.device = "cpu") -> TarFlow:
        """Rebuild a model written by :meth:`save` on ``device``, in eval mode, in its saved dtype."""
        ckpt = load_checkpoint(path)
        if ckpt.config is None:
            raise ValueError(f"path: {path} holds no TarFlow config (was it written by TarFlow.save?)")
        model = cls(TarFlowConfig(**ckpt.config))
        dtypes = {t.dtype for t in ckpt.state_dict.values() if t.is_floating_point()}
        if len(dtypes) == 1:
            model = model.to(dtypes.pop())
        model.load_state_dict(ckpt.state_dict)
        return model.to(torch.device(device)).eval()

    # -- checks -----------------------------------------------------------------------------------

    def _check_x(self, x: Tensor, name: str = "x") -> None:
        c = self.config
        if not isinstance(x, Tensor) or x.ndim != 4:
            raise ValueError(f"TarFlow: {name} must be a (B, C, H, W) tensor, got {getattr(x, 'shape', x)!r}")
        if x.shape[1] != c.in_channels:
            hint = ""
            if x.shape[-1] == c.in_channels and tuple(x.shape[1:3]) == (c.img_size, c.img_size):
                hint = f"; it looks channels-last (B, H, W, C): pass {name}.permute(0, 3, 1, 2)"
            raise ValueError(
                f"TarFlow: {name} has {x.shape[1]} channels, the model expects {c.in_channels}{hint}"
            )
        if tuple(x.shape[2:]) != (c.img_size, c.img_size):
            raise ValueError(
                f"TarFlow: {name} is {x.shape[2]}x{x.shape[3]}, the model expects {c.img_size}x{c.img_size}"
            )
        param = next(self.parameters(), None)
        if param is not None and x.dtype != param.dtype:
            raise TypeError(
                f"TarFlow: {name} has dtype {x.dtype}, the model's parameters are {param.dtype} "
                f"(convert with {name}.to({param.dtype}) or the model with .to({x.dtype}))"
            )
        if not x.is_floating_point():
            raise ValueError(f"TarFlow: {name} must be floating point (dequantise integer images first)")
        if not torch.isfinite(x).all():
            raise ValueError(f"TarFlow: {name} contains NaN or infinite values")

    def _check_y(self, y: Tensor | None, batch: int) -> None:
        if y is None:
            return
        if self.config.num_classes == 0:
            raise ValueError("TarFlow: y given but the model is unconditional (num_classes=0)")
        if y.shape != (batch,) or y.dtype not in (torch.int64, torch.int32):
            raise ValueError(
                f"TarFlow: y must be an integer tensor of shape ({batch},), got {tuple(y.shape)}"
            )
        if (y < -1).any() or (y >= self.config.num_classes).any():
            raise ValueError(
                f"TarFlow: labels must lie in [-1, {self.config.num_classes - 1}] (-1 = dropped)"
            )

    # -- density ----------------------------------------------------------------------------------

    def forward(self, x: Tensor, y: Tensor | None = None) -> FlowOutput:
        """x (B, C, H, W) → ``FlowOutput(z (B, C, H, W), logdet (B,))``."""
        self._check_x(x)
        self._check_y(y, x.shape[0])
        c = self.config
        u = patchify(x, c.patch_size)
        logdet = u.new_zeros(u.shape[0])
        for block in self._blocks():
            u, ld = block(u, block.cond_embedding(y, u.shape[0]))
            logdet = logdet + ld
        if not c.nvp and self.training:
            with torch.no_grad():
                self.var.lerp_(u.detach().pow(2).mean(0), 0.1)
        return FlowOutput(unpatchify(u, c.patch_size, c.in_channels, c.img_size), logdet)

    def prior_log_var(self) -> Tensor | None:
        """log σ² of the prior in image layout (VP variant), None for the standard normal."""
        if self.config.nvp:
            return None
        c = self.config
        return unpatchify(self.var.log()[None], c.patch_size, c.in_channels, c.img_size)[0]

    def nll(self, x: Tensor, y: Tensor | None = None) -> Tensor:
        """Per-sample negative log-likelihood in nats, (B,)."""
        z, logdet = self(x, y)
        return gaussian_nll(z, logdet, self.prior_log_var())

    def nll_per_dim(self, x: Tensor, y: Tensor | None = None) -> Tensor:
        """Per-sample NLL divided by D = C·H·W (the official training loss up to a constant)."""
        return self.nll(x, y) / self.config.dims

    # -- inverse and sampling ---------------------------------------------------------------------

    @torch.no_grad()
    def inverse(
        self,
        z: Tensor,
        y: Tensor | None = None,
        *,
        guidance: float = 0.0,
        guide_what: GuideWhat = "ab",
        attn_temp: float = 1.0,
        annealed: bool = False,
        use_cache: bool = True,
    ) -> Tensor:
        """z (B, C, H, W) → x, by sequential inversion of the blocks in reverse order.

        Args:
            z: latents in image layout.
            y: class labels (B,) for a conditional model (-1 or None = null class).
            guidance: w ≥ 0 (Sec. 3.3). Conditional models guide against the null class;
                unconditional models need ``attn_temp != 1`` (the tempered-attention branch).
            guide_what: ``"ab"`` both scale and shift, ``"a"`` only scale, ``"b"`` only shift.
            attn_temp: attention temperature τ of the unguided branch.
            annealed: ramp w linearly over the token index.
            use_cache: KV-cached inversion (default) or the naive O(N²) reference.
        """
        self._check_x(z, "z")
        self._check_y(y, z.shape[0])
        c = self.config
        if guidance < 0 or not math.isfinite(guidance):
            raise ValueError(f"TarFlow.inverse: guidance must be a finite weight >= 0, got {guidance}")
        if attn_temp <= 0:
            raise ValueError(f"TarFlow.inverse: attn_temp must be > 0, got {attn_temp}")
        if guide_what not in ("ab", "a", "b"):
            raise ValueError(f"TarFlow.inverse: guide_what must be 'ab', 'a' or 'b', got {guide_what!r}")
        if guidance > 0 and c.num_classes == 0 and attn_temp == 1.0:
            raise ValueError(
                "TarFlow.inverse: guidance > 0 on an unconditional model (num_classes=0) needs "
                "attn_temp != 1 (attention-temperature guidance); use a class-conditional model "
                "for class guidance"
            )
        u = patchify(z, c.patch_size)
        B = u.shape[0]
        for block in reversed(self._blocks()):
            cond = block.cond_embedding(y, B)
            cond_u = block.cond_embedding(None, B)
            u = block.reverse(
                u,
                cond,
                cond_u=cond_u,
                guidance=guidance,
                guide_what=guide_what,
                attn_temp=attn_temp,
                annealed=annealed,
                use_cache=use_cache,
            )
        return unpatchify(u, c.patch_size, c.in_channels, c.img_size)

    def sample_prior(
        self, n: int, *, temperature: float = 1.0, generator: torch.Generator | None = None
    ) -> Tensor:
        """z ~ N(0, temperature² Σ) in image layout, (n, C, H, W); Σ = I, or the learned variance (VP)."""
        if n < 1 or temperature <= 0:
            raise ValueError(f"TarFlow.sample: n must be >= 1 and temperature > 0, got {n}, {temperature}")
        c = self.config
        param = next(self.parameters())
        # draw where the generator lives (a CPU generator also seeds a model on a GPU), then move
        where = param.device if generator is None else generator.device
        z = torch.randn(n, c.in_channels, c.img_size, c.img_size, generator=generator, device=where)
        z = z.to(device=param.device, dtype=param.dtype)
        log_var = self.prior_log_var()
        if log_var is not None:
            z = z * torch.exp(0.5 * log_var)
        return z * temperature

    def sample(
        self,
        n: int,
        y: Tensor | None = None,
        *,
        temperature: float = 1.0,
        guidance: float = 0.0,
        guide_what: GuideWhat = "ab",
        attn_temp: float = 1.0,
        annealed: bool = False,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Draw n samples (n, C, H, W); see :meth:`inverse` for the guidance arguments."""
        z = self.sample_prior(n, temperature=temperature, generator=generator)
        return self.inverse(
            z, y, guidance=guidance, guide_what=guide_what, attn_temp=attn_temp, annealed=annealed
        )
