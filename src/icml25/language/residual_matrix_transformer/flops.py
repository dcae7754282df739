"""Exact parameter and FLOP counts of the RMT and its transformer twin, after App. A and Table 7 of
*Residual Matrix Transformers: Scaling the Size of the Residual Stream* (Mak & Flanigan, ICML 2025,
https://arxiv.org/abs/2506.22696).

FLOPs are counted the way the paper (following Hoffmann et al. 2022) and
:class:`torch.utils.flop_counter.FlopCounterMode` count them: a matrix product of ``(m × k)`` by
``(k × n)`` costs ``2·m·k·n``; a backward pass costs twice its forward (gradients for the input and
for the weight; attention's four backward products are twice its two forward ones). Attention is
counted over the full ``N × N`` score matrix, which is what the fused causal kernel is charged.
Embedding lookups cost nothing (no matrix product runs). The softmax (3 FLOPs per score, App. A)
is reported separately because FlopCounterMode does not count it.

The per-layer differences are those of App. A.2: the RMT spends ``6·N·D_k·D_v·R`` on Q/K/V
retrieval, ``2·N·D_k·D_v·R`` on the attention store and ``4·N·D_k·D_v·R`` on the feed-forward
adapters where the transformer spends ``8·N·D²`` on its attention projections.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from torch import Tensor, nn

from .model import GPTConfig, RMTConfig

__all__ = [
    "FlopCount",
    "flop_count",
    "flops_per_token",
    "param_count",
    "non_embedding_param_count",
    "paper_param_count",
    "measure_flops",
]


@dataclass(frozen=True)
class FlopCount:
    """Forward matrix-product FLOPs of one sequence of ``seq_len`` tokens, by component.

    Attributes:
        seq_len: N.
        matmul: ``{component: forward FLOPs}`` (every matrix product the forward pass runs).
        softmax: forward softmax FLOPs (3 per attention score), not a matrix product.
    """

    seq_len: int
    matmul: Mapping[str, int]
    softmax: int

    @property
    def forward(self) -> int:
        """Forward matrix-product FLOPs per sequence."""
        return int(sum(self.matmul.values()))

    @property
    def backward(self) -> int:
        """Backward matrix-product FLOPs per sequence (twice the forward)."""
        return 2 * self.forward

    @property
    def training(self) -> int:
        """Forward + backward matrix-product FLOPs per sequence."""
        return self.forward + self.backward

    def per_token(self, *, training: bool = True, include_softmax: bool = False) -> float:
        """FLOPs per token: training (3× forward) or forward only, optionally with the softmax."""
        total = self.training if training else self.forward
        if include_softmax:
            total += self.softmax
        return total / self.seq_len


def _seq_len(cfg: RMTConfig | GPTConfig, seq_len: int | None) -> int:
    n = cfg.n_ctx if seq_len is None else seq_len
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"seq_len must be a positive integer, got {seq_len!r}")
    return n


def flop_count(cfg: RMTConfig | GPTConfig, seq_len: int | None = None) -> FlopCount:
    """The exact forward FLOPs of one sequence (default length ``cfg.n_ctx``) by component."""
    n = _seq_len(cfg, seq_len)
    L, V, F = cfg.n_layers, cfg.vocab_size, cfg.d_ff  # noqa: N806
    if isinstance(cfg, RMTConfig):
        r, k, v = cfg.rank, cfg.d_key, cfg.d_value
        kvr = 2 * n * k * v * r  # one store or one retrieval of R data vectors
        n_store = 2 if cfg.pos == "learned" else 1
        matmul = {
            "embed_store": n_store * kvr,  # Eq. 18-19 (token and position vectors)
            "attn_read": L * 3 * kvr,  # Eq. 22
            "attn_scores": L * 2 * r * n * n * v,  # Q Kᵀ (Eq. 21)
            "attn_values": L * 2 * r * n * n * v,  # softmax(·) V
            "attn_store": L * kvr,  # Eq. 20
            "ff_read": L * kvr,  # Eq. 25
            "ff_core": L * 2 * (2 * n * r * v * F),  # Eq. 24: W1 and W2
            "ff_store": L * kvr,  # Eq. 23
            "unembed_read": kvr,  # Eq. 27
            "unembed": 2 * n * r * v * V,  # Eq. 26
        }
        heads = r
    elif isinstance(cfg, GPTConfig):
        d, h, e = cfg.d_model, cfg.n_heads, cfg.head_dim
        matmul = {
            "attn_qkv": L * 2 * n * d * 3 * d,  # Eq. 9
            "attn_scores": L * 2 * h * n * n * e,
            "attn_values": L * 2 * h * n * n * e,
            "attn_out": L * 2 * n * d * d,  # W_O (Eq. 7)
            "ff_core": L * 2 * (2 * n * d * F),  # Eq. 10
            "unembed": 2 * n * d * V,  # Eq. 11
        }
        heads = h
    else:
        raise TypeError(f"cfg must be an RMTConfig or GPTConfig, got {type(cfg).__name__}")
    return FlopCount(seq_len=n, matmul=matmul, softmax=L * 3 * heads * n * n)


def flops_per_token(
    cfg: RMTConfig | GPTConfig,
    seq_len: int | None = None,
    *,
    training: bool = True,
    include_softmax: bool = False,
) -> float:
    """Matrix-product FLOPs per token, forward + backward (``training``) or forward only."""
    return flop_count(cfg, seq_len).per_token(training=training, include_softmax=include_softmax)


def _norm_params(cfg: RMTConfig | GPTConfig, width: int) -> int:
    return (2 if cfg.norm == "layer" else 1) * width


def param_count(cfg: RMTConfig | GPTConfig) -> dict[str, int]:
    """Exact trainable parameters of the model ``cfg`` builds, split into ``embedding`` (token and
    position tables), ``unembedding`` (the vocabulary projection) and ``non_embedding`` (the rest,
    norms and key vectors included); ``total`` sums them."""
    L, V, N, F = cfg.n_layers, cfg.vocab_size, cfg.n_ctx, cfg.d_ff  # noqa: N806
    learned = cfg.pos == "learned"
    if isinstance(cfg, RMTConfig):
        r, k, v = cfg.rank, cfg.d_key, cfg.d_value
        embedding = r * V * v + (r * N * v if learned else 0)
        unembedding = r * v * V
        norm = _norm_params(cfg, k * v)
        keys = (2 * r if learned else r) * k + L * (4 * r * k + 2 * r * k) + r * k
        non_embedding = keys + L * (2 * norm + 2 * r * v * F) + norm
    elif isinstance(cfg, GPTConfig):
        d = cfg.d_model
        embedding = V * d + (N * d if learned else 0)
        unembedding = d * V
        norm = _norm_params(cfg, d)
        non_embedding = L * (2 * norm + 4 * d * d + 2 * d * F) + norm
    else:
        raise TypeError(f"cfg must be an RMTConfig or GPTConfig, got {type(cfg).__name__}")
    return {
        "embedding": embedding,
        "unembedding": unembedding,
        "non_embedding": non_embedding,
        "total": embedding + unembedding + non_embedding,
    }


def non_embedding_param_count(cfg: RMTConfig | GPTConfig) -> int:
    """Parameters outside the token/position tables and the vocabulary projection."""
    return param_count(cfg)["non_embedding"]


def paper_param_count(cfg: RMTConfig | GPTConfig) -> int:
    """Table 7's closed form (learned positions; norms, the unembedding read vectors and one of the
    two vocabulary matrices left out): RMT ``R(2D_k(3L+1) + D_v(2L·D_FF + V + N))``, transformer
    ``D(L(4HD_h + 2D_FF) + V)``."""
    L, V, N, F = cfg.n_layers, cfg.vocab_size, cfg.n_ctx, cfg.d_ff  # noqa: N806
    if isinstance(cfg, RMTConfig):
        r, k, v = cfg.rank, cfg.d_key, cfg.d_value
        return r * (2 * k * (3 * L + 1) + v * (2 * L * F + V + N))
    if isinstance(cfg, GPTConfig):
        d = cfg.d_model
        return d * (L * (4 * cfg.n_heads * cfg.head_dim + 2 * F) + V)
    raise TypeError(f"cfg must be an RMTConfig or GPTConfig, got {type(cfg).__name__}")


def measure_flops(model: nn.Module, tokens: Tensor, *, backward: bool = True) -> dict[str, int]:
    """FLOPs that :class:`torch.utils.flop_counter.FlopCounterMode` counts for one forward (and
    backward of the summed logits) on ``tokens``.

    Attention runs on the math backend here: FlopCounterMode has no formula for the fused CPU
    flash kernel and would count its products as zero.

    Returns:
        ``{"forward": …, "backward": …, "total": …}`` (backward 0 when ``backward=False``).
    """
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    with sdpa_kernel([SDPBackend.MATH]):
        counter = FlopCounterMode(display=False)
        with counter:
            out = model(tokens)
        forward = int(counter.get_total_flops())
        back = 0
        if backward:
            counter = FlopCounterMode(display=False)
            with counter:
                out.sum().backward()
            back = int(counter.get_total_flops())
    return {"forward": forward, "backward": back, "total": forward + back}
