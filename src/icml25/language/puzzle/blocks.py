"""Block library and blockwise local distillation for *Puzzle: Distillation-Based NAS for
Inference-Optimized LLMs* (Bercovich et al., ICML 2025, arXiv 2411.19146).

Every decoder layer of a Llama-style parent is split into two sub-blocks that each add a delta to
the residual stream: attention, ``h + attn(norm_a(h))``, and FFN, ``h + mlp(norm_f(h))`` (Section 3
of the paper). Each sub-block gets a menu of cheaper replacements (Section 3.1):

* attention: the parent; grouped-query attention with fewer KV heads (``kv<k>``); a single linear
  map ``d -> d`` (``linear``); nothing (``noop``, the residual passes through);
* FFN: the parent width; narrower intermediate widths (``ffn<w>``); a linear map; nothing.

Blockwise local distillation (BLD, Section 3.2) trains each replacement alone to reproduce the parent
sub-block's output from the parent sub-block's own input (teacher forcing on cached parent
activations), with the normalised MSE ``||y_hat - y||^2 / ||y||^2``; attention and FFN variants are
trained independently (decoupled BLD). Initialisations (our choice where the paper is silent):
narrower FFN keeps the parent channels with the largest mean ``|act(x W_g) * (x W_u)|``; fewer KV
heads average the K and V projections inside each new group; a linear replacement is the least-squares
fit of the sub-block's delta on its normalised input; ``noop`` has no parameters.

:func:`assemble_child` turns one choice per layer into a real ``LlamaForCausalLM`` (a deep copy of
the parent with its decoder layers swapped for :class:`PuzzleDecoderLayer`) that runs and generates
with the usual Hugging Face API.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from icml25.core.validate import check_finite_tensor, check_positive

__all__ = [
    "Variant",
    "SubBlock",
    "BlockLibrary",
    "LinearAttention",
    "PuzzleDecoderLayer",
    "parent_dims",
    "causal_mask",
    "rotary",
    "collect_subblock_io",
    "normalized_mse",
    "kv_reduced_attention",
    "ffn_channel_importance",
    "width_reduced_mlp",
    "least_squares_linear",
    "distill_subblock",
    "build_library",
    "assemble_child",
    "run_subblocks",
    "subblock_params",
]

ATTENTION = "attention"
FFN = "ffn"


@dataclass(frozen=True)
class Variant:
    """One replacement option for a sub-block.

    Args:
        kind: ``"attention"`` or ``"ffn"``.
        op: ``"parent"``, ``"kv"`` (attention with ``size`` KV heads), ``"width"`` (FFN with
            ``size`` intermediate channels), ``"linear"`` or ``"noop"``.
        size: KV heads or FFN width for ``kv`` / ``width``; ``None`` otherwise.
    """

    kind: str
    op: str
    size: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in (ATTENTION, FFN):
            raise ValueError(f"Variant.kind must be 'attention' or 'ffn', got {self.kind!r}")
        allowed = (
            ("parent", "kv", "linear", "noop")
            if self.kind == ATTENTION
            else ("parent", "width", "linear", "noop")
        )
        if self.op not in allowed:
            raise ValueError(f"Variant.op for {self.kind} must be one of {allowed}, got {self.op!r}")
        if self.op in ("kv", "width"):
            if self.size is None:
                raise ValueError(f"Variant.size is required for op={self.op!r}")
            check_positive("Variant.size", self.size, integer=True)
        elif self.size is not None:
            raise ValueError(f"Variant.size must be None for op={self.op!r}, got {self.size}")

    @property
    def name(self) -> str:
        if self.op == "kv":
            return f"kv{self.size}"
        if self.op == "width":
            return f"ffn{self.size}"
        return self.op if self.kind == ATTENTION else f"ffn_{self.op}"


class LinearAttention(nn.Module):
    """An attention replacement ``x -> x W^T`` (no mixing over positions).

    It keeps the attention module's call signature and return value ``(out, None)``. When a KV cache
    is passed it stores a one-scalar-per-token placeholder for its layer, so that the cache still
    reports the right sequence length during generation (layer 0 may be replaced).
    """

    def __init__(self, weight: Tensor, layer_idx: int) -> None:
        super().__init__()
        self.proj = nn.Linear(weight.shape[1], weight.shape[0], bias=False)
        with torch.no_grad():
            self.proj.weight.copy_(weight)
        self.layer_idx = layer_idx

    def forward(self, hidden_states: Tensor, cache: Any = None, **kwargs: Any) -> tuple[Tensor, None]:
        cache = cache if cache is not None else kwargs.get("past_key_values")
        if cache is not None:
            _placeholder_cache_update(cache, hidden_states, self.layer_idx)
        return self.proj(hidden_states), None


def _placeholder_cache_update(cache: Any, hidden: Tensor, layer_idx: int) -> None:
    b, t = hidden.shape[:2]
    z = hidden.new_zeros(b, 1, t, 1)
    cache.update(z, z, layer_idx)


class PuzzleDecoderLayer(nn.Module):
    """A heterogeneous decoder layer: an optional attention and an optional FFN sub-block.

    ``attn is None`` / ``mlp is None`` are the ``noop`` variants (their norms are dropped too). The
    forward signature follows ``LlamaDecoderLayer`` so ``LlamaModel`` can run it unchanged.
    """

    def __init__(
        self,
        attn_norm: nn.Module | None,
        attn: nn.Module | None,
        mlp_norm: nn.Module | None,
        mlp: nn.Module | None,
        layer_idx: int,
    ) -> None:
        super().__init__()
        self.input_layernorm = attn_norm
        self.self_attn = attn
        self.post_attention_layernorm = mlp_norm
        self.mlp = mlp
        self.layer_idx = layer_idx

    def forward(
        self,
        hidden_states: Tensor,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        cache: Any = None,
        use_cache: bool | None = False,
        position_embeddings: tuple[Tensor, Tensor] | None = None,
        **kwargs: Any,
    ) -> Tensor:
        cache = cache if cache is not None else kwargs.pop("past_key_values", None)
        kwargs.pop("past_key_values", None)
        h = hidden_states
        if self.self_attn is not None and self.input_layernorm is not None:
            out, _ = self.self_attn(
                hidden_states=self.input_layernorm(h),
                attention_mask=attention_mask,
                position_ids=position_ids,
                cache=cache,
                use_cache=use_cache,
                position_embeddings=position_embeddings,
                **kwargs,
            )
            h = h + out
        elif cache is not None:
            _placeholder_cache_update(cache, h, self.layer_idx)
        if self.mlp is not None and self.post_attention_layernorm is not None:
            h = h + self.mlp(self.post_attention_layernorm(h))
        return h


@dataclass
class SubBlock:
    """One (trained) variant of one sub-block: ``h -> h + module(norm(h))``; ``module=None`` is noop."""

    variant: Variant
    layer: int
    norm: nn.Module | None
    module: nn.Module | None
    val_nmse: float = 0.0
    lr: float = 0.0

    def delta(self, h: Tensor, position_embeddings: tuple[Tensor, Tensor], mask: Tensor) -> Tensor:
        """The sub-block's addition to the residual stream ``h`` ``[B, T, d]``."""
        if self.module is None or self.norm is None:
            return torch.zeros_like(h)
        x = self.norm(h)
        if self.variant.kind == FFN:
            return self.module(x)
        out, _ = self.module(hidden_states=x, position_embeddings=position_embeddings, attention_mask=mask)
        return out

    def __call__(self, h: Tensor, position_embeddings: tuple[Tensor, Tensor], mask: Tensor) -> Tensor:
        return h + self.delta(h, position_embeddings, mask)


@dataclass
class BlockLibrary:
    """Trained variants per layer: ``attention[i][j]`` and ``ffn[i][j]``; index 0 is the parent."""

    attention: list[list[SubBlock]]
    ffn: list[list[SubBlock]]
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def n_layers(self) -> int:
        return len(self.attention)

    def names(self, kind: str) -> list[str]:
        rows = self.attention if kind == ATTENTION else self.ffn
        return [b.variant.name for b in rows[0]]


def parent_dims(model: Any) -> dict[str, int]:
    """Hidden size, heads, KV heads, head dim, FFN width and layer count of a Llama-style model."""
    cfg = model.config
    heads = int(cfg.num_attention_heads)
    return {
        "hidden": int(cfg.hidden_size),
        "heads": heads,
        "kv_heads": int(getattr(cfg, "num_key_value_heads", None) or heads),
        "head_dim": int(getattr(cfg, "head_dim", None) or cfg.hidden_size // heads),
        "ffn": int(cfg.intermediate_size),
        "layers": int(cfg.num_hidden_layers),
    }


def causal_mask(t: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """Additive causal mask ``[1, 1, t, t]`` (0 on and below the diagonal, a large negative above)."""
    check_positive("t", t, integer=True)
    m = torch.full((t, t), torch.finfo(dtype).min, dtype=dtype).triu(1)
    return m[None, None]


def rotary(model: Any, h: Tensor) -> tuple[Tensor, Tensor]:
    """The parent's rotary ``(cos, sin)`` for positions ``0..T-1`` of ``h`` ``[B, T, d]``."""
    pos = torch.arange(h.shape[1])[None].expand(h.shape[0], -1)
    cos, sin = model.model.rotary_emb(h, pos)
    return cos, sin


def _parent_blocks(model: Any) -> tuple[list[SubBlock], list[SubBlock]]:
    attn, ffn = [], []
    for i, layer in enumerate(model.model.layers):
        attn.append(SubBlock(Variant(ATTENTION, "parent"), i, layer.input_layernorm, layer.self_attn))
        ffn.append(SubBlock(Variant(FFN, "parent"), i, layer.post_attention_layernorm, layer.mlp))
    return attn, ffn


def _check_ids(name: str, ids: Any) -> None:
    if not isinstance(ids, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(ids).__name__}")
    if ids.ndim != 2 or ids.numel() == 0:
        raise ValueError(f"{name} must be a non-empty [B, T] tensor, got shape {tuple(ids.shape)}")
    if ids.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"{name} must hold integer token ids, got {ids.dtype}")


def run_subblocks(model: Any, h: Tensor, blocks: Sequence[SubBlock], *, logits: bool = True) -> Tensor:
    """Run ``blocks`` in order on the residual stream ``h`` ``[B, T, d]``; optionally the LM head.

    Used for teacher-forced activations and replace-one-block scoring. Equals the Hugging Face
    forward pass when ``blocks`` are the parent's sub-blocks (tested).
    """
    pe = rotary(model, h)
    mask = causal_mask(h.shape[1], h.dtype)
    for b in blocks:
        h = b(h, pe, mask)
    if not logits:
        return h
    return model.lm_head(model.model.norm(h))


@torch.no_grad()
def collect_subblock_io(model: Any, ids: Tensor) -> list[Tensor]:
    """Residual stream entering each of the ``2L`` parent sub-blocks, plus the final one: ``2L+1``
    tensors ``[B, T, d]`` (entry ``2i`` feeds layer ``i``'s attention, ``2i+1`` its FFN)."""
    _check_ids("ids", ids)
    h = model.model.embed_tokens(ids)
    pe = rotary(model, h)
    mask = causal_mask(h.shape[1], h.dtype)
    attn, ffn = _parent_blocks(model)
    states = [h]
    for a, f in zip(attn, ffn, strict=True):
        h = a(h, pe, mask)
        states.append(h)
        h = f(h, pe, mask)
        states.append(h)
    return states


def normalized_mse(pred: Tensor, target: Tensor) -> Tensor:
    """``||pred - target||^2 / ||target||^2`` (the BLD loss of Section 3.2)."""
    check_finite_tensor("pred", pred, floating=True)
    check_finite_tensor("target", target, floating=True)
    if pred.shape != target.shape:
        raise ValueError(f"pred shape {tuple(pred.shape)} != target shape {tuple(target.shape)}")
    return (pred - target).pow(2).sum() / target.pow(2).sum().clamp_min(1e-12)


def kv_reduced_attention(attn: Any, kv_heads: int, parent_kv: int, heads: int) -> nn.Module:
    """A copy of a Llama attention with ``kv_heads`` KV heads, K/V projections averaged per group."""
    check_positive("kv_heads", kv_heads, integer=True)
    if parent_kv % kv_heads or kv_heads > parent_kv:
        raise ValueError(f"kv_heads must divide the parent's {parent_kv} KV heads, got {kv_heads}")
    new = copy.deepcopy(attn)
    r = parent_kv // kv_heads
    for name in ("k_proj", "v_proj"):
        lin = getattr(new, name)
        w = lin.weight.data  # [parent_kv * hd, d]
        hd = w.shape[0] // parent_kv
        w2 = w.view(kv_heads, r, hd, w.shape[1]).mean(1).reshape(kv_heads * hd, w.shape[1])
        repl = nn.Linear(w.shape[1], w2.shape[0], bias=lin.bias is not None)
        with torch.no_grad():
            repl.weight.copy_(w2)
            if lin.bias is not None:
                repl.bias.copy_(lin.bias.data.view(kv_heads, r, hd).mean(1).reshape(-1))
        setattr(new, name, repl)
    new.num_key_value_groups = heads // kv_heads
    return new


@torch.no_grad()
def ffn_channel_importance(mlp: Any, x: Tensor) -> Tensor:
    """Mean ``|act(x W_g) * (x W_u)|`` per intermediate channel over tokens of ``x`` ``[..., d]``."""
    check_finite_tensor("x", x, floating=True)
    inner = mlp.act_fn(mlp.gate_proj(x)) * mlp.up_proj(x)
    return inner.abs().reshape(-1, inner.shape[-1]).mean(0)


def width_reduced_mlp(mlp: Any, keep: Tensor) -> nn.Module:
    """A copy of a gated MLP keeping intermediate channels ``keep`` (1-D long indices)."""
    if not isinstance(keep, Tensor) or keep.dtype not in (torch.int32, torch.int64):
        raise TypeError("keep must be an integer index tensor")
    if keep.ndim != 1 or keep.numel() == 0:
        raise ValueError(f"keep must be a non-empty 1-D index tensor, got shape {tuple(keep.shape)}")
    new = copy.deepcopy(mlp)
    d = mlp.gate_proj.weight.shape[1]
    w = keep.numel()
    for name in ("gate_proj", "up_proj"):
        src = getattr(mlp, name)
        lin = nn.Linear(d, w, bias=src.bias is not None)
        with torch.no_grad():
            lin.weight.copy_(src.weight[keep])
            if src.bias is not None:
                lin.bias.copy_(src.bias[keep])
        setattr(new, name, lin)
    src = mlp.down_proj
    lin = nn.Linear(w, d, bias=src.bias is not None)
    with torch.no_grad():
        lin.weight.copy_(src.weight[:, keep])
        if src.bias is not None:
            lin.bias.copy_(src.bias)
    new.down_proj = lin
    if hasattr(new, "intermediate_size"):
        new.intermediate_size = w
    return new


def least_squares_linear(x: Tensor, y: Tensor, ridge: float = 1e-4) -> Tensor:
    """``W`` ``[d_out, d_in]`` minimising ``||x W^T - y||^2 + ridge * tr(x^T x)/d * ||W||^2``."""
    check_finite_tensor("x", x, floating=True)
    check_finite_tensor("y", y, floating=True)
    if x.ndim < 2 or y.ndim < 2:
        raise ValueError(
            f"x and y must be at least 2-D [..., features], got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    x2 = x.reshape(-1, x.shape[-1]).double()
    y2 = y.reshape(-1, y.shape[-1]).double()
    if x2.shape[0] != y2.shape[0] or x2.shape[0] == 0:
        raise ValueError(
            f"x and y need the same non-zero number of rows, got {x2.shape[0]} and {y2.shape[0]}"
        )
    g = x2.T @ x2
    g += torch.eye(g.shape[0], dtype=g.dtype) * (ridge * g.diagonal().mean().clamp_min(1e-12))
    w = torch.linalg.solve(g, x2.T @ y2)  # [d_in, d_out]
    return w.T.to(x.dtype).contiguous()


def distill_subblock(
    block: SubBlock,
    model: Any,
    train_in: Tensor,
    train_out: Tensor,
    val_in: Tensor,
    val_out: Tensor,
    *,
    steps: int,
    lrs: Sequence[float],
    batch: int = 4,
    seed: int = 0,
) -> SubBlock:
    """Blockwise local distillation of one variant (Section 3.2) with an lr sweep chosen on validation.

    Trains ``block.module`` with Adam on the normalised MSE between its output given the parent
    sub-block input ``train_in`` ``[N, T, d]`` and the parent sub-block output ``train_out``, for
    ``steps`` steps per learning rate in ``lrs``; keeps whichever of {the initialisation, each lr}
    has the lowest normalised MSE on ``(val_in, val_out)``. Returns the block (updated in place).
    """
    check_positive("steps", steps, integer=True) if steps else None
    for name, t in (
        ("train_in", train_in),
        ("train_out", train_out),
        ("val_in", val_in),
        ("val_out", val_out),
    ):
        check_finite_tensor(name, t, ndim=3, floating=True)
    if block.module is None:
        return block
    pe_tr = rotary(model, train_in[:batch])
    mask = causal_mask(train_in.shape[1], train_in.dtype)

    def val_loss(b: SubBlock) -> float:
        with torch.no_grad():
            pe = rotary(model, val_in)
            return float(normalized_mse(b(val_in, pe, mask), val_out))

    from icml25.core.tuning import best_on_validation

    candidates: dict[float, tuple[dict[str, Tensor], float]] = {
        0.0: ({k: v.clone() for k, v in block.module.state_dict().items()}, val_loss(block))
    }
    init = candidates[0.0][0]
    for lr in lrs if steps else ():
        block.module.load_state_dict(init)
        params = [p for p in block.module.parameters()]
        for p in params:
            p.requires_grad_(True)
        opt = torch.optim.Adam(params, lr=lr)
        gen = torch.Generator().manual_seed(seed)
        with torch.enable_grad():
            for _ in range(steps):
                idx = torch.randint(0, train_in.shape[0], (min(batch, train_in.shape[0]),), generator=gen)
                pe = (pe_tr[0][: idx.numel()], pe_tr[1][: idx.numel()])
                loss = normalized_mse(block(train_in[idx], pe, mask), train_out[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
        for p in params:
            p.requires_grad_(False)
        candidates[float(lr)] = (
            {k: v.clone() for k, v in block.module.state_dict().items()},
            val_loss(block),
        )
    best = best_on_validation(candidates, lambda c: c[1])
    block.module.load_state_dict(candidates[best][0])
    block.val_nmse = candidates[best][1]
    block.lr = best
    return block


def build_library(
    model: Any,
    calib_ids: Tensor,
    val_ids: Tensor,
    attention_variants: Sequence[Variant],
    ffn_variants: Sequence[Variant],
    *,
    steps: int = 20,
    lrs: Sequence[float] = (1e-4, 1e-3),
    batch: int = 4,
    seed: int = 0,
    progress: Any = None,
) -> BlockLibrary:
    """Build and distil the block library for every layer of a Llama-style ``model``.

    Args:
        model: the parent (``LlamaForCausalLM`` or any model with ``model.layers`` of Llama layers).
        calib_ids, val_ids: ``[N, T]`` token windows for BLD training and lr selection.
        attention_variants, ffn_variants: the non-parent options (the parent is always index 0).
        steps, lrs, batch: BLD Adam steps per lr, the lr sweep, windows per step.
        seed: drives the minibatch order.
        progress: optional ``progress(done, total)``.
    """
    _check_ids("calib_ids", calib_ids)
    _check_ids("val_ids", val_ids)
    for v in attention_variants:
        if not isinstance(v, Variant) or v.kind != ATTENTION or v.op == "parent":
            raise ValueError(f"attention_variants must be non-parent attention Variants, got {v!r}")
    for v in ffn_variants:
        if not isinstance(v, Variant) or v.kind != FFN or v.op == "parent":
            raise ValueError(f"ffn_variants must be non-parent FFN Variants, got {v!r}")
    dims = parent_dims(model)
    for v in attention_variants:
        if v.op == "kv" and (v.size is None or dims["kv_heads"] % v.size or v.size >= dims["kv_heads"]):
            raise ValueError(
                f"attention variant {v.name}: KV heads must divide {dims['kv_heads']} and be fewer"
            )
    for v in ffn_variants:
        if v.op == "width" and (v.size is None or v.size >= dims["ffn"]):
            raise ValueError(f"ffn variant {v.name}: width must be below the parent's {dims['ffn']}")
    for p in model.parameters():
        p.requires_grad_(False)
    tr = collect_subblock_io(model, calib_ids)
    va = collect_subblock_io(model, val_ids)
    pa, pf = _parent_blocks(model)
    attention: list[list[SubBlock]] = []
    ffn: list[list[SubBlock]] = []
    total = dims["layers"] * (len(attention_variants) + len(ffn_variants))
    done = 0
    for i in range(dims["layers"]):
        row_a = [pa[i]]
        a_in, a_out, va_in, va_out = tr[2 * i], tr[2 * i + 1], va[2 * i], va[2 * i + 1]
        for v in attention_variants:
            if v.op == "noop":
                b = SubBlock(v, i, None, None)
                b.val_nmse = float(normalized_mse(va_in, va_out))
            elif v.op == "linear":
                x = pa[i].norm(a_in)  # type: ignore[misc]
                w = least_squares_linear(x, a_out - a_in)
                b = SubBlock(v, i, pa[i].norm, LinearAttention(w, i))
                b = distill_subblock(b, model, a_in, a_out, va_in, va_out, steps=0, lrs=(), batch=batch)
            else:
                mod = kv_reduced_attention(pa[i].module, int(v.size or 1), dims["kv_heads"], dims["heads"])  # type: ignore[arg-type]
                b = SubBlock(v, i, pa[i].norm, mod)
                b = distill_subblock(
                    b, model, a_in, a_out, va_in, va_out, steps=steps, lrs=lrs, batch=batch, seed=seed + i
                )
            row_a.append(b)
            done += 1
            if progress is not None:
                progress(done, total)
        attention.append(row_a)
        row_f = [pf[i]]
        f_in, f_out, vf_in, vf_out = tr[2 * i + 1], tr[2 * i + 2], va[2 * i + 1], va[2 * i + 2]
        with torch.no_grad():
            x = pf[i].norm(f_in)  # type: ignore[misc]
            imp = ffn_channel_importance(pf[i].module, x)
        for v in ffn_variants:
            if v.op == "noop":
                b = SubBlock(v, i, None, None)
                b.val_nmse = float(normalized_mse(vf_in, vf_out))
            elif v.op == "linear":
                w = least_squares_linear(x, f_out - f_in)
                lin = nn.Linear(w.shape[1], w.shape[0], bias=False)
                with torch.no_grad():
                    lin.weight.copy_(w)
                b = SubBlock(v, i, pf[i].norm, lin)
                b = distill_subblock(b, model, f_in, f_out, vf_in, vf_out, steps=0, lrs=(), batch=batch)
            else:
                keep = torch.sort(torch.topk(imp, int(v.size or 1)).indices).values
                b = SubBlock(v, i, pf[i].norm, width_reduced_mlp(pf[i].module, keep))  # type: ignore[arg-type]
                b = distill_subblock(
                    b, model, f_in, f_out, vf_in, vf_out, steps=steps, lrs=lrs, batch=batch, seed=seed + i
                )
            row_f.append(b)
            done += 1
            if progress is not None:
                progress(done, total)
        ffn.append(row_f)
    return BlockLibrary(attention, ffn, info={"steps": steps, "lrs": list(lrs), "dims": dims})


def _check_choice(library: BlockLibrary, choice: Sequence[tuple[int, int]]) -> None:
    if len(choice) != library.n_layers:
        raise ValueError(
            f"choice must have one (attention, ffn) pair per layer ({library.n_layers}), got {len(choice)}"
        )
    for i, pair in enumerate(choice):
        a, f = pair
        if not (0 <= a < len(library.attention[i]) and 0 <= f < len(library.ffn[i])):
            raise ValueError(f"choice[{i}] = {pair} is out of range for the library")


def assemble_child(
    model: Any, library: BlockLibrary, choice: Sequence[tuple[int, int]], *, share_weights: bool = False
) -> Any:
    """A deep copy of ``model`` whose layer ``i`` uses variants ``choice[i] = (attention, ffn)``.

    The result is a Hugging Face causal LM, so ``model(input_ids=...)`` and ``generate`` work; its
    layers are :class:`PuzzleDecoderLayer`. A ``LlamaForCausalLM`` parent gives a
    :class:`~icml25.language.puzzle.hf.PuzzleLlamaForCausalLM` (a ``LlamaForCausalLM`` subclass whose
    config records each layer's variants), so ``child.save_pretrained(folder)`` loads back with
    ``AutoModelForCausalLM.from_pretrained(folder)`` once :mod:`icml25.language.puzzle.hf` is imported.

    ``share_weights=True`` copies the modules but not their parameters: the child's tensors are the
    parent's and the library's own (no extra memory; for timing or evaluating many children at
    once). Training or editing such a child changes the parent and the library.
    """
    _check_choice(library, choice)
    memo_src = [*model.parameters()]
    for rows in (library.attention, library.ffn):
        for i, (a, f) in enumerate(choice):
            b = rows[i][a if rows is library.attention else f]
            for mod in (b.norm, b.module):
                if mod is not None:
                    memo_src.extend(mod.parameters())

    def clone(obj: Any) -> Any:
        # a memo that maps every parameter to itself makes deepcopy share the tensors
        return copy.deepcopy(obj, {id(p): p for p in memo_src} if share_weights else None)

    layers = nn.ModuleList()
    for i, (a, f) in enumerate(choice):
        ab, fb = library.attention[i][a], library.ffn[i][f]
        layers.append(
            PuzzleDecoderLayer(
                clone(ab.norm) if ab.module is not None else None,
                clone(ab.module),
                clone(fb.norm) if fb.module is not None else None,
                clone(fb.module),
                i,
            )
        )
    old = model.model.layers
    model.model.layers = nn.ModuleList()
    try:
        child = clone(model)
    finally:
        model.model.layers = old
    child.model.layers = layers
    child.eval()
    if type(child).__name__ in ("LlamaForCausalLM", "PuzzleLlamaForCausalLM"):
        from .hf import to_puzzle_llama  # transformers is loaded: the parent is a transformers model

        variants = [
            (library.attention[i][a].variant, library.ffn[i][f].variant) for i, (a, f) in enumerate(choice)
        ]
        return to_puzzle_llama(child, variants)
    return child


def _param_count(module: nn.Module | None) -> int:
    return 0 if module is None else sum(p.numel() for p in module.parameters())


def subblock_params(block: SubBlock) -> int:
    """Parameters of a sub-block variant (its norm included)."""
    if block.module is None:
        return 0
    return _param_count(block.module) + _param_count(block.norm)
