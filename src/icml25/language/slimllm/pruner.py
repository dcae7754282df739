"""SlimLLM and its baselines as one sequential, layer-by-layer structured pruner.

Part of our implementation of *SlimLLM: Accurate Structured Pruning for Large Language Models*
(Guo et al., ICML 2025, https://arxiv.org/abs/2505.22689). Official code:
https://github.com/guojialong1/Slimllm.

Implements the whole method as the official ``hf_prune.py`` runs it: the layer-wise pruning ratio,
sequential layer-by-layer processing, attention heads (Pearson-similarity score, the greedy search
of Algorithm 1, regression of ``o_proj``) and FFN channels (feature-space score, regression of
``down_proj``), on any Hugging Face ``LlamaForCausalLM`` (the adapter is the HF module layout:
``q/k/v/o_proj`` and ``gate/up/down_proj`` in ``model.model.layers``). LoRA recovery is left out
(the check compares training-free pruning).

Choices made where the paper and the official code are open:
- The budget is a fraction of *decoder-layer parameters* (``sparsity``). A layer with ratio r_l
  loses round(r_l H) query heads, then as many FFN channels as brings its removed parameters to
  r_l x (its parameters) given the heads (and KV heads) actually removed; so every method removes
  the same number of parameters up to one channel per layer.
- Layer-wise ratios (SlimLLM): the L_p most redundant layers (default round(30/32 L), the official
  default of 30 of 32) share a mean ratio of ``sparsity x L / L_p``; ratios are clipped at 0.9 and
  the excess is redistributed. Baselines use the same ratio in every layer (our choice: the
  layer-wise ratio is part of SlimLLM, the baselines keep the uniform ratio they are defined with).
- Baseline head scores cover a query head's own weights (its W_q rows and W_o columns); K/V rows
  are shared by the group and leave only with the group's last query head.
- Taylor scores come from one backward pass of the calibration LM loss through the *dense* model
  (as LLM-Pruner does); magnitude needs no data; Wanda and SlimLLM read activations of the
  calibration stream produced by the already-pruned earlier layers (sequential processing).
- Regression for attention: x = sum of kept heads' outputs, y = full output, both on the
  layer's current input; for the FFN: x = kept channels' output, y = full FFN output, both on the
  post-pruned-attention stream.
- A layer-wise ratio never removes a layer's last head (its FFN takes the rest of the layer's budget);
  a uniform ratio that would remove every head is an error.
- A failing prune raises before the input model is touched: pruning works on a deep copy.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import Tensor, nn

from icml25.core.progress import ProgressFn
from icml25.core.validate import check_in_range, check_positive
from icml25.nn.params import count_parameters

from .scores import (
    ffn_channel_scores,
    fit_output_regression,
    greedy_head_search,
    head_moments,
    head_scores,
    layer_ratios,
    magnitude_scores,
    taylor_scores,
    wanda_scores,
)
from .surgery import (
    check_supported,
    decoder_param_count,
    head_kv_index,
    prune_attention_heads,
    prune_mlp_channels,
)

__all__ = ["METHODS", "PruneConfig", "PruneReport", "DenseStats", "dense_statistics", "prune_model"]

Method = Literal["slimllm", "magnitude", "wanda", "taylor", "random"]
METHODS: tuple[str, ...] = ("slimllm", "magnitude", "wanda", "taylor", "random")


@dataclass(frozen=True)
class PruneConfig:
    """How to prune. Defaults are SlimLLM's (``alpha`` = 10, clip 0.9, 1 % lowest channels kept).

    Args:
        method: importance criterion: ``slimllm``, ``magnitude``, ``wanda``, ``taylor``, or ``random``
            (uniformly random heads and channels: the no-criterion floor of the check).
        sparsity: fraction of decoder-layer parameters to remove, in (0, 1).
        layerwise: SlimLLM's layer-wise ratio (default: on for slimllm, off for the baselines).
        regression: linear-regression recovery (default: on for slimllm, off for the baselines).
        greedy: SlimLLM's greedy head search (slimllm only).
        num_pruned_layers: L_p; ``None`` = round(30 / 32 x number of layers).
        alpha: softmax temperature of the layer ratio.
        max_layer_ratio: cap on any layer's ratio.
        skip_lowest_frac: SlimLLM keeps the lowest-scored ``skip_lowest_frac`` channels and prunes
            the next ones (official code: 0.01).
        seed: draws the ``random`` method's heads and channels (other methods ignore it).
    """

    method: Method = "slimllm"
    sparsity: float = 0.2
    layerwise: bool | None = None
    regression: bool | None = None
    greedy: bool = True
    num_pruned_layers: int | None = None
    alpha: float = 10.0
    max_layer_ratio: float = 0.9
    skip_lowest_frac: float = 0.01
    seed: int = 0

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        for name in ("sparsity", "max_layer_ratio"):
            check_in_range(
                f"PruneConfig.{name}", getattr(self, name), 0.0, 1.0, low_open=True, high_open=True
            )
        check_in_range("PruneConfig.skip_lowest_frac", self.skip_lowest_frac, 0.0, 0.5, high_open=True)
        if self.num_pruned_layers is not None:
            check_positive("PruneConfig.num_pruned_layers", self.num_pruned_layers, integer=True)

    @property
    def use_layerwise(self) -> bool:
        return self.method == "slimllm" if self.layerwise is None else self.layerwise

    @property
    def use_regression(self) -> bool:
        return self.method == "slimllm" if self.regression is None else self.regression


@dataclass
class PruneReport:
    """What a prune did, per layer and in total."""

    config: PruneConfig
    layer_ratios: list[float]
    heads_kept: list[int]
    kv_heads_kept: list[int]
    channels_kept: list[int]
    params_before: int
    params_after: int
    decoder_params_before: int
    decoder_params_after: int
    attn_mse_before_regression: list[float] = field(default_factory=list)
    attn_mse_after_regression: list[float] = field(default_factory=list)
    ffn_mse_before_regression: list[float] = field(default_factory=list)
    ffn_mse_after_regression: list[float] = field(default_factory=list)
    greedy_gain: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def decoder_sparsity(self) -> float:
        return 1.0 - self.decoder_params_after / self.decoder_params_before


@dataclass(frozen=True)
class DenseStats:
    """Statistics of the dense model on the calibration set, shared by every prune of that model.

    Attributes:
        cos_sims: ``[L]`` mean cosine similarity of each layer's input and output hidden states.
        taylor: per layer ``(head_scores [H], channel_scores [d_ff])`` from |w dL/dw|, or None.
    """

    cos_sims: Tensor
    taylor: list[tuple[Tensor, Tensor]] | None


def _layers(model: Any) -> Any:
    check_supported(model)
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if layers is None or not len(layers):
        raise ValueError("model must be a Llama-style causal LM with model.model.layers")
    return layers


def _check_calib(calib: Tensor, vocab: int) -> Tensor:
    calib = torch.as_tensor(calib)
    if (
        calib.ndim != 2
        or calib.shape[0] < 1
        or calib.shape[1] < 2
        or calib.dtype not in (torch.int32, torch.int64)
    ):
        raise ValueError(
            f"calib must be integer token ids [n_seq, seq_len >= 2], got {tuple(calib.shape)} {calib.dtype}"
        )
    if int(calib.min()) < 0 or int(calib.max()) >= vocab:
        raise ValueError(f"calib token ids must lie in [0, {vocab})")
    return calib.long()


def dense_statistics(model: Any, calib: Tensor, *, taylor: bool = True) -> DenseStats:
    """Per-layer input/output cosine similarity (for the layer-wise ratio) and, optionally, Taylor scores.

    Args:
        model: the dense model (left unchanged; gradients are cleared afterwards).
        calib: ``[n_seq, seq_len]`` calibration token ids.
        taylor: also run one backward pass for the Taylor baseline.
    """
    layers = _layers(model)
    calib = _check_calib(calib, model.config.vocab_size)  # type: ignore[union-attr]
    sims: list[Tensor] = [torch.zeros(()) for _ in layers]
    hooks = []

    def make_hook(i: int) -> Any:
        def hook(module: nn.Module, args: Any, kwargs: Any, output: Any) -> None:
            h_in = args[0] if args else kwargs["hidden_states"]
            h_out = output[0] if isinstance(output, tuple) else output
            sims[i] = (
                torch.nn.functional.cosine_similarity(h_in.double(), h_out.double(), dim=-1).mean().detach()
            )

        return hook

    for i, layer in enumerate(layers):
        hooks.append(layer.register_forward_hook(make_hook(i), with_kwargs=True))
    params = list(model.parameters())
    was_grad = [p.requires_grad for p in params]
    taylor_out: list[tuple[Tensor, Tensor]] | None = None
    try:
        if taylor:
            for p in params:
                p.requires_grad_(True)
            model.zero_grad(set_to_none=True)
            with torch.enable_grad():
                out = model(input_ids=calib, labels=calib)
                out.loss.backward()
            taylor_out = []
            for layer in layers:
                attn, mlp = layer.self_attn, layer.mlp
                h_heads, dh = head_kv_index(attn).numel(), attn.head_dim
                wq, gq = attn.q_proj.weight, attn.q_proj.weight.grad
                wo, go = attn.o_proj.weight, attn.o_proj.weight.grad
                heads = taylor_scores(
                    [
                        (wq.view(h_heads, dh, -1), gq.view(h_heads, dh, -1)),
                        (wo.T.reshape(h_heads, dh, -1), go.T.reshape(h_heads, dh, -1)),
                    ]
                )
                chans = taylor_scores(
                    [
                        (mlp.gate_proj.weight, mlp.gate_proj.weight.grad),
                        (mlp.up_proj.weight, mlp.up_proj.weight.grad),
                        (mlp.down_proj.weight.T, mlp.down_proj.weight.grad.T),
                    ]
                )
                taylor_out.append((heads, chans))
        else:
            with torch.no_grad():
                model(input_ids=calib)
    finally:
        for h in hooks:
            h.remove()
        model.zero_grad(set_to_none=True)
        for p, g in zip(params, was_grad, strict=True):
            p.requires_grad_(g)
    return DenseStats(cos_sims=torch.stack(sims).double(), taylor=taylor_out)


def _select_lowest(scores: Tensor, n_prune: int, skip_lowest: int = 0) -> Tensor:
    """Keep-mask that prunes ``n_prune`` units with the smallest scores, after skipping ``skip_lowest``."""
    order = torch.argsort(scores, stable=True)
    skip = min(skip_lowest, scores.numel() - n_prune - 1) if n_prune else 0
    keep = torch.ones_like(scores, dtype=torch.bool)
    keep[order[max(skip, 0) : max(skip, 0) + n_prune]] = False
    return keep


def _mse(x: Tensor, y: Tensor) -> float:
    return float(((x - y) ** 2).mean())


@torch.no_grad()
def prune_model(
    model: Any,
    calib: Tensor,
    config: PruneConfig,
    *,
    stats: DenseStats | None = None,
    progress: ProgressFn | None = None,
) -> tuple[nn.Module, PruneReport]:
    """Prune a copy of ``model`` (the input is never modified) with ``config`` on ``calib``.

    Args:
        model: a Llama-style causal LM (HF layout).
        calib: ``[n_seq, seq_len]`` calibration token ids.
        config: method, sparsity and switches.
        stats: :func:`dense_statistics` of ``model`` on ``calib`` (computed here if needed and absent).
        progress: called as ``progress(layers_done, layers_total)``.

    Returns:
        ``(pruned_model, report)``; the pruned model is a
        :class:`~icml25.language.slimllm.hf.PrunedLlamaForCausalLM`, so ``save_pretrained`` writes a
        folder that ``AutoModelForCausalLM.from_pretrained`` loads back (after importing
        :mod:`icml25.language.slimllm.hf`, which registers the class).
    """
    t0 = time.perf_counter()
    layers = _layers(model)
    n_layers = len(layers)
    calib = _check_calib(calib, model.config.vocab_size)  # type: ignore[union-attr]
    need_taylor = config.method == "taylor"
    missing = stats is None or (need_taylor and stats.taylor is None)
    if missing and (need_taylor or config.use_layerwise):
        stats = dense_statistics(model, calib, taylor=need_taylor)
    # Layer ratios as fractions of each layer's parameters (all layers have the same shapes here).
    if config.use_layerwise:
        assert stats is not None
        n_sel = config.num_pruned_layers or max(1, round(n_layers * 30 / 32))
        if n_sel > n_layers:
            raise ValueError(f"num_pruned_layers must be at most {n_layers}, got {n_sel}")
        mean_sel = config.sparsity * n_layers / n_sel
        if mean_sel > config.max_layer_ratio:
            raise ValueError(
                f"sparsity {config.sparsity} needs a mean ratio {mean_sel:.3f} over {n_sel} layers, "
                f"above max_layer_ratio {config.max_layer_ratio}"
            )
        ratios = layer_ratios(stats.cos_sims, mean_sel, n_sel, config.alpha, config.max_layer_ratio)
    else:
        ratios = torch.full((n_layers,), config.sparsity, dtype=torch.float64)
    for i, layer in enumerate(layers):  # fail before any work if a uniform ratio would remove every head
        n_heads = head_kv_index(layer.self_attn).numel()
        if not config.use_layerwise and round(float(ratios[i]) * n_heads) >= n_heads:
            raise ValueError(
                f"sparsity {config.sparsity}: layer {i} ratio {float(ratios[i]):.3f} would remove all "
                f"{n_heads} attention heads"
            )

    pruned = copy.deepcopy(model)
    pruned.eval()
    params_before = count_parameters(model, trainable_only=False)
    dec_before = decoder_param_count(model)
    report = PruneReport(
        config=config,
        layer_ratios=[float(r) for r in ratios],
        heads_kept=[],
        kv_heads_kept=[],
        channels_kept=[],
        params_before=params_before,
        params_after=0,
        decoder_params_before=dec_before,
        decoder_params_after=0,
    )
    inner: Any = pruned.model
    h = inner.embed_tokens(calib)  # [B, T, d]
    position_ids = torch.arange(calib.shape[1]).unsqueeze(0)
    pos = inner.rotary_emb(h, position_ids)
    for i, layer in enumerate(inner.layers):
        _prune_layer(layer, h, pos, i, float(ratios[i]), config, stats, report)
        h = _layer_forward(layer, h, pos)
        if progress is not None:
            progress(i + 1, n_layers)
    report.params_after = count_parameters(pruned, trainable_only=False)
    report.decoder_params_after = decoder_param_count(pruned)
    report.seconds = time.perf_counter() - t0
    from .hf import to_pruned_llama  # transformers is loaded: model is a transformers model

    return to_pruned_llama(pruned), report


def _layer_forward(layer: Any, h: Tensor, pos: tuple[Tensor, Tensor]) -> Tensor:
    out = layer(h, position_embeddings=pos, attention_mask=None)
    return out[0] if isinstance(out, tuple) else out


def _prune_layer(
    layer: Any,
    h: Tensor,
    pos: tuple[Tensor, Tensor],
    index: int,
    ratio: float,
    config: PruneConfig,
    stats: DenseStats | None,
    report: PruneReport,
) -> None:
    attn, mlp = layer.self_attn, layer.mlp
    kv = head_kv_index(attn)
    n_heads, dh = kv.numel(), attn.head_dim
    d = attn.o_proj.weight.shape[0]
    layer_params = count_parameters(layer, trainable_only=False)

    # -- attention heads on the layer's current input ------------------------------------------
    x_attn = layer.input_layernorm(h)
    captured: dict[str, Tensor] = {}
    hook = attn.o_proj.register_forward_pre_hook(lambda m, args: captured.__setitem__("ctx", args[0]))
    try:
        attn(hidden_states=x_attn, position_embeddings=pos, attention_mask=None)
    finally:
        hook.remove()
    ctx = captured["ctx"].reshape(-1, n_heads * dh).double()  # [N, H d_h]: input of W_o
    w_o = attn.o_proj.weight.double()  # [d, H d_h]
    head_ctx = ctx.view(-1, n_heads, dh).transpose(0, 1)  # [H, N, d_h]
    head_out = torch.einsum("hnk,dhk->hnd", head_ctx, w_o.view(d, n_heads, dh))  # O_h = X_h W_o^(h)T
    y_attn = head_out.sum(0)  # Y = sum_h O_h
    if attn.o_proj.bias is not None:
        y_attn = y_attn + attn.o_proj.bias.double()
    n_prune_heads = min(round(ratio * n_heads), n_heads - 1)  # a layer-wise ratio never takes the last head
    keep_heads = torch.ones(n_heads, dtype=torch.bool)
    if n_prune_heads:
        if config.method == "slimllm":
            moments = head_moments(head_out)  # [H, H, d] covariances: every S below reads them
            s = head_scores(head_out, moments=moments)  # S(Y, Y - O_i): large = redundant
            keep_heads = _select_lowest(-s, n_prune_heads)
            if config.greedy:
                order = torch.argsort(-s, stable=True)
                keep_heads, trace = greedy_head_search(head_out, keep_heads, order=order, moments=moments)
                report.greedy_gain.append(float(trace[-1] - trace[0]))
        else:
            scores = _baseline_head_scores(config.method, attn, x_attn, ctx, stats, index, config.seed)
            keep_heads = _select_lowest(scores, n_prune_heads)
    x_kept = head_out[keep_heads].sum(0)
    if attn.o_proj.bias is not None:
        x_kept = x_kept + attn.o_proj.bias.double()
    scale = shift = None
    attn_new = x_kept
    if n_prune_heads and config.use_regression:
        scale, shift = fit_output_regression(x_kept, y_attn)
        attn_new = x_kept * scale + shift  # y_j = a_j x_j + b_j
    if n_prune_heads:
        report.attn_mse_before_regression.append(_mse(x_kept, y_attn))
        report.attn_mse_after_regression.append(_mse(attn_new, y_attn))
        prune_attention_heads(layer, keep_heads, scale=scale, shift=shift)
    report.heads_kept.append(int(keep_heads.sum()))
    report.kv_heads_kept.append(int(torch.unique(kv[keep_heads]).numel()))

    # -- FFN channels on the post-pruned-attention stream ---------------------------------------
    h_mid = h + attn_new.view(h.shape).to(h.dtype)
    f_in = layer.post_attention_layernorm(h_mid)
    x_ffn = f_in.reshape(-1, d)
    a = mlp.act_fn(mlp.gate_proj(x_ffn)) * mlp.up_proj(x_ffn)  # [N, d_ff]
    w_d = mlp.down_proj.weight.double()
    y_ffn = a.double() @ w_d.T
    if mlp.down_proj.bias is not None:
        y_ffn = y_ffn + mlp.down_proj.bias.double()
    d_ff = a.shape[1]
    removed_attn = (n_heads - int(keep_heads.sum())) * 2 * d * dh + (
        torch.unique(kv).numel() - report.kv_heads_kept[-1]
    ) * 2 * d * dh
    per_channel = 3 * d
    n_prune_ch = int(round(max(ratio * layer_params - removed_attn, 0.0) / per_channel))
    n_prune_ch = min(n_prune_ch, d_ff - 1)
    if n_prune_ch:
        if config.method == "slimllm":
            scores = ffn_channel_scores(x_ffn, a, mlp.gate_proj.weight, mlp.up_proj.weight, w_d)
            skip = round(config.skip_lowest_frac * d_ff)
        else:
            scores = _baseline_channel_scores(config.method, mlp, x_ffn, a, stats, index, config.seed)
            skip = 0
        keep_ch = _select_lowest(scores, n_prune_ch, skip)
        x_kept_f = a[:, keep_ch].double() @ w_d[:, keep_ch].T
        if mlp.down_proj.bias is not None:
            x_kept_f = x_kept_f + mlp.down_proj.bias.double()
        scale = shift = None
        ffn_new = x_kept_f
        if config.use_regression:
            scale, shift = fit_output_regression(x_kept_f, y_ffn)
            ffn_new = x_kept_f * scale + shift
        report.ffn_mse_before_regression.append(_mse(x_kept_f, y_ffn))
        report.ffn_mse_after_regression.append(_mse(ffn_new, y_ffn))
        prune_mlp_channels(layer, keep_ch, scale=scale, shift=shift)
    report.channels_kept.append(int(layer.mlp.gate_proj.weight.shape[0]))


def _random_scores(n: int, stream: int, seed: int) -> Tensor:
    """Uniform random scores for ``n`` units, one stream per (layer, heads|channels) and seed."""
    gen = torch.Generator().manual_seed(1_000_003 * seed + stream)
    return torch.rand(n, generator=gen, dtype=torch.float64)


def _baseline_head_scores(
    method: str,
    attn: Any,
    x_attn: Tensor,
    ctx: Tensor,
    stats: DenseStats | None,
    index: int,
    seed: int = 0,
) -> Tensor:
    n_heads = head_kv_index(attn).numel()
    dh = attn.head_dim
    wq = attn.q_proj.weight.view(n_heads, dh, -1)  # [H, d_h, d] rows of head h
    wo = attn.o_proj.weight.T.reshape(n_heads, dh, -1)  # [H, d_h, d] columns of head h
    if method == "random":
        return _random_scores(n_heads, 2 * index, seed)
    if method == "magnitude":
        return magnitude_scores([wq, wo])
    if method == "wanda":
        n_in = x_attn.reshape(-1, x_attn.shape[-1]).double().norm(dim=0)  # ||X_j|| of the attention input
        n_ctx = ctx.norm(dim=0).view(n_heads, dh, 1)  # ||X_j|| of W_o's input columns
        return wanda_scores([(wq, n_in), (wo, n_ctx)])
    if stats is None or stats.taylor is None:
        raise ValueError("the taylor method needs dense_statistics(..., taylor=True)")
    return stats.taylor[index][0]


def _baseline_channel_scores(
    method: str,
    mlp: Any,
    x_ffn: Tensor,
    a: Tensor,
    stats: DenseStats | None,
    index: int,
    seed: int = 0,
) -> Tensor:
    wg, wu, wd_t = mlp.gate_proj.weight, mlp.up_proj.weight, mlp.down_proj.weight.T
    if method == "random":
        return _random_scores(wg.shape[0], 2 * index + 1, seed)
    if method == "magnitude":
        return magnitude_scores([wg, wu, wd_t])
    if method == "wanda":
        n_x = x_ffn.double().norm(dim=0)
        n_a = a.double().norm(dim=0).unsqueeze(1)  # [d_ff, 1]: channel j's activation norm
        return wanda_scores([(wg, n_x), (wu, n_x), (wd_t, n_a)])
    if stats is None or stats.taylor is None:
        raise ValueError("the taylor method needs dense_statistics(..., taylor=True)")
    return stats.taylor[index][1]
