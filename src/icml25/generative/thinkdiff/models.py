"""Small stand-ins for the frozen models of ThinkDiff, trained here in the toy world.

*I Think, Therefore I Diffuse: Enabling Multimodal In-Context Reasoning in Diffusion Models*
(ThinkDiff; Mi et al.; ICML 2025; arXiv:2502.10458).

The paper freezes Qwen2-VL (the VLM), flan-T5-XXL (the encoder-decoder LLM whose encoder conditions
FLUX) and FLUX.1-dev (the diffusion decoder), and judges CoBSAT images with LLaVA. None of these can
run here, so each has a small counterpart with the same role and interface:

    TinyVLM           decoder-only transformer over [text tokens ; linear patch tokens]; its final-norm
                      hidden states of generated tokens are the features ThinkDiff aligns (Sec. 3.2)
    TinyT5            encoder-decoder; the encoder ends in an RMSNorm (T5LayerNorm) whose gain initialises
                      the aligner's norm; the decoder reads any cross-attention memory (Sec. 3.2, Eq. 1)
    TinyFlowDecoder   rectified-flow image generator conditioned on TinyT5-encoder-space prompt embeddings
                      (the FLUX role), with classifier-free guidance
    AttributeJudge    CNN classifier of (shape, colour, background), CoBSAT's judge role

Notation: b batch, n / m sequence lengths, d width, P patches per image.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F  # noqa: N812
from einops import rearrange
from torch import Tensor, nn

from icml25.core.validate import check_finite_tensor, check_positive
from icml25.nn.attention import MultiheadAttention, scaled_dot_product_attention
from icml25.nn.blocks import MLP, RMSNorm, TransformerBlock
from icml25.nn.diffusion import SmallUNet
from icml25.nn.embeddings import patchify
from icml25.nn.flow_matching import euler_sample, flow_matching_loss

__all__ = [
    "CrossAttention",
    "TinyT5Config",
    "TinyT5",
    "TinyVLMConfig",
    "TinyVLM",
    "VLMInputs",
    "Generation",
    "TinyFlowDecoderConfig",
    "TinyFlowDecoder",
    "AttributeJudge",
]


def _check_ids(name: str, ids: Tensor, vocab: int) -> None:
    if not isinstance(ids, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(ids).__name__}")
    if ids.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"{name} must be an integer tensor of token ids, got {ids.dtype}")
    if ids.ndim != 2 or ids.numel() == 0:
        raise ValueError(f"{name} must be a non-empty (batch, length) tensor, got shape {tuple(ids.shape)}")
    if int(ids.min()) < 0 or int(ids.max()) >= vocab:
        raise ValueError(f"{name} holds ids outside [0, {vocab})")


def _check_memory(memory: Tensor, mask: Tensor | None, d: int, name: str = "memory") -> None:
    check_finite_tensor(name, memory, ndim=3, floating=True)
    if memory.shape[-1] != d:
        raise ValueError(f"{name} must be (batch, tokens, {d}), got {tuple(memory.shape)}")
    if mask is not None and (mask.shape != memory.shape[:2] or mask.dtype != torch.bool):
        raise ValueError(f"the mask of {name} must be a bool tensor of shape {tuple(memory.shape[:2])}")


class CrossAttention(nn.Module):
    """Multi-head attention of queries ``x (b, n, d)`` to a memory ``(b, m, d_mem)`` with a key mask."""

    def __init__(self, dim: int, num_heads: int, mem_dim: int | None = None) -> None:
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"dim={dim} must be divisible by num_heads={num_heads}")
        self.h = num_heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(mem_dim or dim, 2 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: Tensor, memory: Tensor, memory_mask: Tensor | None = None) -> Tensor:
        q = rearrange(self.q(x), "b n (h e) -> b h n e", h=self.h)
        k, v = rearrange(self.kv(memory), "b m (t h e) -> t b h m e", t=2, h=self.h)
        out = scaled_dot_product_attention(q, k, v, key_padding_mask=memory_mask)
        return self.proj(rearrange(out, "b h n e -> b n (h e)"))


# ----------------------------------------------------------------------------------------------
# TinyT5: encoder-decoder LLM
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TinyT5Config:
    """Sizes of :class:`TinyT5` (the paper's flan-T5-XXL: 24+24 layers, d = 4096)."""

    vocab_size: int
    d_model: int = 96
    num_heads: int = 4
    enc_layers: int = 2
    dec_layers: int = 2
    max_len: int = 64

    def __post_init__(self) -> None:
        for f in ("vocab_size", "d_model", "num_heads", "enc_layers", "dec_layers", "max_len"):
            check_positive(f"TinyT5Config.{f}", getattr(self, f), integer=True)


class _DecoderLayer(nn.Module):
    def __init__(self, d: int, h: int) -> None:
        super().__init__()
        self.norm_s = RMSNorm(d)
        self.self_attn = MultiheadAttention(d, h)
        self.norm_x = RMSNorm(d)
        self.cross = CrossAttention(d, h)
        self.norm_ff = RMSNorm(d)
        self.ff = MLP(d, 4 * d)

    def forward(self, x: Tensor, memory: Tensor, memory_mask: Tensor | None) -> Tensor:
        x = x + self.self_attn(self.norm_s(x), causal=True)
        x = x + self.cross(self.norm_x(x), memory, memory_mask)
        return x + self.ff(self.norm_ff(x))


class TinyT5(nn.Module):
    """A T5-style encoder-decoder: the encoder's final RMSNorm output is the text-prompt space.

    ``encode`` gives the encoder outputs (what a FLUX-style decoder is conditioned on);
    ``loss``/``generate`` run the decoder on any memory (``encoder_outputs=`` in transformers).
    """

    def __init__(self, config: TinyT5Config) -> None:
        super().__init__()
        self.config = config
        d, h = config.d_model, config.num_heads
        self.embed = nn.Embedding(config.vocab_size, d)
        self.pos = nn.Embedding(config.max_len, d)
        self.encoder = nn.ModuleList([TransformerBlock(d, h, norm="rms") for _ in range(config.enc_layers)])
        self.encoder_norm = RMSNorm(d)
        self.decoder = nn.ModuleList([_DecoderLayer(d, h) for _ in range(config.dec_layers)])
        self.decoder_norm = RMSNorm(d)
        self.head = nn.Linear(d, config.vocab_size, bias=False)
        self.pad_id, self.bos_id, self.eos_id = 0, 1, 2

    @property
    def d_model(self) -> int:
        return self.config.d_model

    @property
    def encoder_norm_weight(self) -> Tensor:
        """The gain of the encoder's final RMSNorm (``layer_norm_reinit_weight_with_language_encoder``)."""
        assert self.encoder_norm.weight is not None
        return self.encoder_norm.weight.detach().clone()

    def _embed(self, ids: Tensor) -> Tensor:
        if ids.shape[1] > self.config.max_len:
            raise ValueError(f"sequence length {ids.shape[1]} exceeds max_len={self.config.max_len}")
        return self.embed(ids) + self.pos(torch.arange(ids.shape[1]))

    def encode(self, ids: Tensor, mask: Tensor | None = None) -> Tensor:
        """Encoder outputs ``(b, n, d)`` of token ids ``(b, n)`` (``mask`` True = real token)."""
        _check_ids("ids", ids, self.config.vocab_size)
        mask = ids != self.pad_id if mask is None else mask
        x = self._embed(ids)
        for block in self.encoder:
            x = block(x, key_padding_mask=mask)
        return self.encoder_norm(x)

    def decoder_logits(self, memory: Tensor, memory_mask: Tensor | None, dec_in: Tensor) -> Tensor:
        """Next-token logits ``(b, t, V)`` of the decoder reading ``memory (b, m, d)``."""
        x = self._embed(dec_in)
        for layer in self.decoder:
            x = layer(x, memory, memory_mask)
        return self.head(self.decoder_norm(x))

    def loss(self, memory: Tensor, memory_mask: Tensor | None, targets: Tensor) -> Tensor:
        """Token cross-entropy of ``targets (b, t)`` (-100 = ignored) given ``memory`` (Eq. 1's L_CE)."""
        _check_memory(memory, memory_mask, self.d_model)
        if targets.ndim != 2 or targets.shape[0] != memory.shape[0]:
            raise ValueError(f"targets must be (batch={memory.shape[0]}, length), got {tuple(targets.shape)}")
        shifted = targets[:, :-1].clamp_min(0).masked_fill(targets[:, :-1] < 0, self.pad_id)
        dec_in = torch.cat([torch.full_like(targets[:, :1], self.bos_id), shifted], dim=1)
        logits = self.decoder_logits(memory, memory_mask, dec_in)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)

    @torch.no_grad()
    def generate(self, memory: Tensor, memory_mask: Tensor | None = None, max_new_tokens: int = 12) -> Tensor:
        """Greedy decoding ``(b, <= max_new_tokens)`` from ``memory``."""
        _check_memory(memory, memory_mask, self.d_model)
        out = torch.full((memory.shape[0], 1), self.bos_id, dtype=torch.long)
        for _ in range(max_new_tokens):
            nxt = self.decoder_logits(memory, memory_mask, out)[:, -1].argmax(-1, keepdim=True)
            out = torch.cat([out, nxt], dim=1)
            if bool((out == self.eos_id).any(1).all()):
                break
        return out[:, 1:]


# ----------------------------------------------------------------------------------------------
# TinyVLM: decoder-only vision-language model
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TinyVLMConfig:
    """Sizes of :class:`TinyVLM` (the paper's Qwen2-VL-7B: 28 layers, d = 3584)."""

    vocab_size: int
    d_model: int = 128
    num_heads: int = 4
    layers: int = 4
    image_size: int = 16
    patch: int = 4
    max_len: int = 128

    def __post_init__(self) -> None:
        for f in ("vocab_size", "d_model", "num_heads", "layers", "image_size", "patch", "max_len"):
            check_positive(f"TinyVLMConfig.{f}", getattr(self, f), integer=True)
        if self.image_size % self.patch:
            raise ValueError(
                f"TinyVLMConfig.image_size={self.image_size} must be a multiple of patch={self.patch}"
            )

    @property
    def patches(self) -> int:
        return (self.image_size // self.patch) ** 2


@dataclass(frozen=True)
class VLMInputs:
    """A VLM prompt: token ids with ``P`` placeholder ids per image, and the images in order.

    Attributes:
        ids: ``(b, n)`` token ids (all prompts in a batch have one length).
        images: ``(b, k, 3, H, W)`` images filling the k placeholder groups of each row.
    """

    ids: Tensor
    images: Tensor


@dataclass(frozen=True)
class Generation:
    """Greedy generations: per example the new token ids, their features and the decoded text.

    ``features[i][j]`` is the final-norm hidden state at the position that emitted token ``j`` (the
    convention of transformers' ``generate(output_hidden_states=True)``).
    """

    tokens: list[list[int]]
    features: list[Tensor]
    texts: list[str]
    eos_id: int | None = None


def _nucleus_sample(
    logits: Tensor, temperature: float, top_p: float, generator: torch.Generator | None
) -> Tensor:
    """One token per row from ``softmax(logits / temperature)`` restricted to its top-``top_p`` mass."""
    probs = torch.softmax(logits / temperature, dim=-1)
    sorted_p, order = probs.sort(dim=-1, descending=True)
    keep = sorted_p.cumsum(-1) - sorted_p < top_p  # the smallest prefix reaching top_p (always >= 1 token)
    sorted_p = sorted_p * keep
    pick = torch.multinomial(sorted_p / sorted_p.sum(-1, keepdim=True), 1, generator=generator)
    return order.gather(-1, pick)[:, 0]


class TinyVLM(nn.Module):
    """Causal transformer over text tokens and linear patch tokens (the VLM role)."""

    def __init__(self, config: TinyVLMConfig, *, img_id: int = 3, eos_id: int = 2) -> None:
        super().__init__()
        self.config = config
        d = config.d_model
        self.embed = nn.Embedding(config.vocab_size, d)
        self.patch_embed = nn.Linear(3 * config.patch**2, d)
        self.patch_pos = nn.Parameter(torch.zeros(config.patches, d))
        self.pos = nn.Embedding(config.max_len, d)
        self.blocks = nn.ModuleList(
            [TransformerBlock(d, config.num_heads, norm="rms") for _ in range(config.layers)]
        )
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, config.vocab_size, bias=False)
        self.img_id, self.eos_id = img_id, eos_id
        nn.init.normal_(self.patch_pos, std=0.02)

    @property
    def d_model(self) -> int:
        return self.config.d_model

    def check_inputs(self, inputs: VLMInputs) -> None:
        c = self.config
        _check_ids("inputs.ids", inputs.ids, c.vocab_size)
        check_finite_tensor("inputs.images", inputs.images, ndim=5, floating=True)
        b, k = inputs.images.shape[:2]
        if b != inputs.ids.shape[0] or inputs.images.shape[2:] != (3, c.image_size, c.image_size):
            raise ValueError(
                f"inputs.images must be (batch={inputs.ids.shape[0]}, k, 3, {c.image_size}, {c.image_size}), "
                f"got {tuple(inputs.images.shape)}"
            )
        n_img = (inputs.ids == self.img_id).sum(1)
        if bool((n_img != k * c.patches).any()):
            raise ValueError(f"every row of inputs.ids must hold {k} x {c.patches} image placeholders")

    def hidden(self, inputs: VLMInputs) -> Tensor:
        """Final-norm hidden states ``(b, n, d)`` of a prompt (causal)."""
        ids, images = inputs.ids, inputs.images
        if ids.shape[1] > self.config.max_len:
            raise ValueError(f"prompt length {ids.shape[1]} exceeds max_len={self.config.max_len}")
        x = self.embed(ids)
        if images.shape[1] > 0:
            patches = patchify(images.flatten(0, 1), self.config.patch)  # (b k, P, 3 p p)
            tok = self.patch_embed(patches) + self.patch_pos
            tok = tok.reshape(ids.shape[0], -1, x.shape[-1])  # (b, k P, d)
            where = ids == self.img_id
            x = x.masked_scatter(where[..., None], tok.reshape(-1, x.shape[-1]))
        x = x + self.pos(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = block(x, causal=True)
        return self.norm(x)

    def forward(self, inputs: VLMInputs) -> Tensor:
        """Next-token logits ``(b, n, V)``."""
        return self.head(self.hidden(inputs))

    @torch.no_grad()
    def generate(  # type: ignore[no-untyped-def]
        self,
        inputs: VLMInputs,
        max_new_tokens: int = 10,
        decode=None,
        *,
        temperature: float = 0.0,
        top_p: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> Generation:
        """Generation with the features of every generated token (up to and including ``<eos>``).

        Args:
            inputs: the prompts.
            max_new_tokens: generation budget.
            decode: ``decode(ids) -> str`` for the texts (default: the ids joined by spaces).
            temperature: 0 is greedy; above 0, nucleus sampling at this temperature (the official
                feature extraction samples with vLLM at temperature 0.6, top_p 0.9).
            top_p: nucleus mass kept when sampling.
            generator: draws the sampled tokens.
        """
        self.check_inputs(inputs)
        check_positive("max_new_tokens", max_new_tokens, integer=True)
        if not (temperature >= 0 and 0 < top_p <= 1):
            raise ValueError(f"need temperature >= 0 and 0 < top_p <= 1, got {temperature} and {top_p}")
        ids, feats = inputs.ids, []
        new: list[Tensor] = []
        for _ in range(max_new_tokens):
            h = self.hidden(VLMInputs(ids, inputs.images))[:, -1]
            logits = self.head(h)
            logits[:, self.img_id] = float("-inf")  # an image placeholder is never a valid answer token
            nxt = (
                logits.argmax(-1)
                if temperature == 0
                else _nucleus_sample(logits, temperature, top_p, generator)
            )
            feats.append(h)
            new.append(nxt)
            ids = torch.cat([ids, nxt[:, None]], dim=1)
            if bool((torch.stack(new, 1) == self.eos_id).any(1).all()):
                break
        tok = torch.stack(new, 1)
        fe = torch.stack(feats, 1)
        tokens, features = [], []
        for i in range(tok.shape[0]):
            row = tok[i].tolist()
            n = row.index(self.eos_id) + 1 if self.eos_id in row else len(row)
            tokens.append(row[:n])
            features.append(fe[i, :n])
        texts = [decode(t) if decode is not None else " ".join(map(str, t)) for t in tokens]
        return Generation(tokens, features, texts, self.eos_id)


# ----------------------------------------------------------------------------------------------
# Flow-matching image decoder conditioned on prompt embeddings
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TinyFlowDecoderConfig:
    """Sizes of :class:`TinyFlowDecoder` (FLUX.1-dev's role)."""

    text_dim: int = 96
    channels: tuple[int, ...] = (32, 64)
    queries: int = 4
    num_heads: int = 4
    cond_dim: int = 128
    image_size: int = 16

    def __post_init__(self) -> None:
        for f in ("text_dim", "queries", "num_heads", "cond_dim", "image_size"):
            check_positive(f"TinyFlowDecoderConfig.{f}", getattr(self, f), integer=True)


class TinyFlowDecoder(nn.Module):
    """Rectified-flow generator ``x_0 ~ N(0, I) -> image`` conditioned on prompt embeddings ``(b, m, d)``.

    The prompt tokens are read by ``queries`` learned queries through masked cross-attention, pooled
    into one vector and added to the UNet's time embedding (:class:`icml25.nn.SmallUNet`). A learned
    null vector replaces it for the unconditional branch of classifier-free guidance. Images live in
    [0, 1]; the flow runs on ``2 x - 1`` (t = 0 noise, t = 1 data).
    """

    def __init__(self, config: TinyFlowDecoderConfig) -> None:
        super().__init__()
        self.config = config
        c = config
        self.queries = nn.Parameter(torch.randn(c.queries, c.text_dim) / math.sqrt(c.text_dim))
        self.read = CrossAttention(c.text_dim, c.num_heads)
        self.pool = nn.Sequential(
            RMSNorm(c.queries * c.text_dim), nn.Linear(c.queries * c.text_dim, c.cond_dim)
        )
        self.null = nn.Parameter(torch.zeros(c.cond_dim))
        self.unet = SmallUNet(3, 3, c.channels, cond_dim=c.cond_dim)

    def condition(self, embeds: Tensor, mask: Tensor | None = None) -> Tensor:
        """Pooled condition ``(b, cond_dim)`` of prompt embeddings ``(b, m, text_dim)``."""
        _check_memory(embeds, mask, self.config.text_dim, "embeds")
        q = self.queries.expand(embeds.shape[0], -1, -1)
        return self.pool(self.read(q, embeds, mask).flatten(1))

    def velocity(self, x: Tensor, t: Tensor, cond: Tensor) -> Tensor:
        return self.unet(x, t, cond)

    def loss(
        self,
        images: Tensor,
        embeds: Tensor,
        mask: Tensor | None,
        generator: torch.Generator | None = None,
        p_uncond: float = 0.1,
    ) -> Tensor:
        """Flow-matching loss on ``images (b, 3, H, W)`` with caption dropout ``p_uncond``."""
        check_finite_tensor("images", images, ndim=4, floating=True)
        cond = self.condition(embeds, mask)
        if p_uncond > 0:
            drop = torch.rand(cond.shape[0], generator=generator) < p_uncond
            cond = torch.where(drop[:, None], self.null.expand_as(cond), cond)
        return flow_matching_loss(self.velocity, 2 * images - 1, cond=cond, generator=generator)

    @torch.no_grad()
    def sample(
        self,
        embeds: Tensor,
        mask: Tensor | None = None,
        *,
        steps: int = 20,
        cfg: float = 2.0,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Euler sampling with classifier-free guidance ``v_u + cfg (v_c - v_u)``; images ``(b, 3, H, W)``."""
        check_positive("steps", steps, integer=True)
        cond = self.condition(embeds, mask)
        b, s = cond.shape[0], self.config.image_size
        null = self.null.expand_as(cond)

        def guided(x: Tensor, t: Tensor, c: Tensor) -> Tensor:
            if cfg == 1.0:
                return self.velocity(x, t, c)
            v = self.velocity(torch.cat([x, x]), torch.cat([t, t]), torch.cat([c, null]))
            vc, vu = v.chunk(2)
            return vu + cfg * (vc - vu)

        x0 = torch.randn(b, 3, s, s, generator=generator)
        x1 = euler_sample(guided, x0, steps=steps, cond=cond)
        assert isinstance(x1, Tensor)
        return ((x1 + 1) / 2).clamp(0, 1)


# ----------------------------------------------------------------------------------------------
# Attribute judge
# ----------------------------------------------------------------------------------------------


class AttributeJudge(nn.Module):
    """CNN classifier of (shape, colour, background) from an image (the CoBSAT judge's role)."""

    def __init__(self, n_shapes: int, n_colours: int, n_backgrounds: int, width: int = 32) -> None:
        super().__init__()
        for name, v in (("n_shapes", n_shapes), ("n_colours", n_colours), ("n_backgrounds", n_backgrounds)):
            check_positive(name, v, integer=True)
        self.sizes = (n_shapes, n_colours, n_backgrounds)
        self.net = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1),
            nn.GELU(),
            nn.Conv2d(width, 2 * width, 3, padding=1, stride=2),
            nn.GELU(),
            nn.Conv2d(2 * width, 2 * width, 3, padding=1, stride=2),
            nn.GELU(),
            nn.AdaptiveAvgPool2d(2),
            nn.Flatten(),
        )
        self.head = nn.Linear(8 * width, sum(self.sizes))

    def forward(self, images: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Logits for shape, colour and background of ``images (b, 3, H, W)``."""
        check_finite_tensor("images", images, ndim=4, floating=True)
        out = self.head(self.net(images))
        a, b, _ = self.sizes
        return out[:, :a], out[:, a : a + b], out[:, a + b :]

    @torch.no_grad()
    def predict(self, images: Tensor) -> Tensor:
        """``(b, 3)`` predicted (shape, colour, background) indices."""
        return torch.stack([logit.argmax(-1) for logit in self(images)], dim=1)
