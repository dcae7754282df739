"""Importance scores, the greedy head search, the regression recovery and the layer-wise ratio.

Part of our implementation of *SlimLLM: Accurate Structured Pruning for Large Language Models* (Guo
et al., ICML 2025, https://arxiv.org/abs/2505.22689). Implements the method's importance criteria,
the greedy head search (Algorithm 1), the regression recovery and the layer-wise ratio, listed
below with the baselines' element-wise scores.

Notation: N calibration tokens, d hidden size, H query heads of size d_h, d_ff FFN channels.
``head_outputs[h] = X_h W_o^{(h)T}`` is head h's share of the attention output ([H, N, d]); the
full output is ``Y = sum_h head_outputs[h]``. Everything here is pure torch and computes in
float64 (Pearson correlations and least squares on ~10^3 tokens lose digits in float32).

SlimLLM (the paper's method; the official ``LlamaAttention.compress`` / ``LlamaMLP.compress``):
    pearson_similarity     S(A, B) = sum_j |rho(A[:, j], B[:, j])|
    head_scores            S(Y, Y - O_i): large = removing head i changes the output least
    greedy_head_search     Algorithm 1: swap pruned/kept heads while S(Y, sum_K O_h) rises
    ffn_channel_scores     input-side Wanda-like norms + PCA "feature space" output score
    fit_output_regression  per-output-dimension y_j ~ a_j x_j + b_j
    layer_ratios           r_l = R L_p softmax(alpha s)_l over the L_p most redundant layers
Baselines (element scores summed over a head's / channel's weights; small = prune):
    magnitude_scores, wanda_scores, taylor_scores
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = [
    "pearson_similarity",
    "head_moments",
    "head_scores",
    "greedy_head_search",
    "ffn_channel_scores",
    "fit_output_regression",
    "layer_ratios",
    "magnitude_scores",
    "wanda_scores",
    "taylor_scores",
]


def _centred_unit(a: Tensor) -> Tensor:
    """Centre over tokens (dim -2) and divide by the column norm; constant columns become zero."""
    a = a - a.mean(dim=-2, keepdim=True)
    norm = a.norm(dim=-2, keepdim=True)
    return torch.where(norm > 0, a / norm.clamp_min(1e-300), torch.zeros_like(a))


def pearson_similarity(a: Tensor, b: Tensor) -> Tensor:
    """S(A, B) = sum_j |Pearson(A[:, j], B[:, j])| over the N tokens (population statistics).

    Args:
        a: ``[..., N, d]``; b: ``[N, d]`` or broadcastable to ``a``.

    Returns:
        ``[...]``: one similarity per leading index, in [0, d]. A constant column contributes 0.
    """
    if a.shape[-2:] != b.shape[-2:]:
        raise ValueError(
            f"a and b must share the last two dims [N, d], got {tuple(a.shape)} and {tuple(b.shape)}"
        )
    _check_finite("a", a)
    _check_finite("b", b)
    ua, ub = _centred_unit(a.double()), _centred_unit(b.double())
    return (ua * ub).sum(dim=-2).abs().sum(dim=-1)  # Eq. (head importance): sum_j |rho_j|


def _check_finite(name: str, x: Tensor) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if (
        x.device.type != "meta"
        and (x.is_floating_point() or x.is_complex())
        and not bool(torch.isfinite(x.sum()))  # cheap: a finite sum means every entry is finite
        and not bool(torch.isfinite(x).all())  # a non-finite sum may be an overflow: look closer
    ):
        raise ValueError(f"{name} contains NaN or infinite values")


def _check_groups(groups: list, what: str) -> int:
    """The number of units U shared by every block of ``groups`` (non-empty, finite)."""
    if not isinstance(groups, list | tuple) or not groups:
        raise ValueError(f"groups must be a non-empty list of {what}")
    first = groups[0][0] if isinstance(groups[0], tuple | list) else groups[0]
    if not isinstance(first, Tensor) or first.ndim < 1 or first.shape[0] == 0 or first.numel() == 0:
        raise ValueError(
            f"groups must hold non-empty [U, ...] blocks, got {getattr(first, 'shape', first)!r}"
        )
    units = first.shape[0]
    for g in groups:
        for t in g if isinstance(g, tuple | list) else (g,):
            _check_finite("groups", t)
        block = g[0] if isinstance(g, tuple | list) else g
        if block.shape[0] != units:
            raise ValueError(
                f"groups blocks must share their first dim U = {units}, got {tuple(block.shape)}"
            )
    return units


def _check_heads(head_outputs: Tensor) -> None:
    if head_outputs.ndim != 3 or head_outputs.shape[0] < 2:
        raise ValueError(f"head_outputs must be [H >= 2, N, d], got shape {tuple(head_outputs.shape)}")


def _head_moments(head_outputs: Tensor) -> Tensor:
    """``[H, H, d]`` per-column covariance sums G[h, g, j] = sum_n (O_h - mean)(O_g - mean)[n, j].

    The Pearson similarity of any weighted sum of heads with Y = sum_h O_h follows from G alone
    (cov = w^T G_j 1, var = w^T G_j w), so the head score and every greedy swap cost O(H^2 d)
    instead of a pass over the N tokens.
    """
    o = head_outputs.double()
    oc = (o - o.mean(dim=1, keepdim=True)).permute(2, 0, 1)  # [d, H, N]
    return torch.bmm(oc, oc.transpose(1, 2)).permute(1, 2, 0)  # [H, H, d]


def _similarity_from_moments(weights: Tensor, moments: Tensor) -> Tensor:
    """S(sum_h w_h O_h, Y) for each row of ``weights`` ``[M, H]``: sum_j |Pearson| over the tokens.

    A column whose variance is zero up to rounding (below 1e-12 of the column's total head variance)
    contributes 0, as a constant column does in :func:`pearson_similarity`.
    """
    w = weights.double()
    col = moments.sum(dim=1)  # [H, d]: sum_g G[h, g, j]
    cov = w @ col  # [M, d]: cov(x, y)
    var_x = torch.einsum("mh,hgj,mg->mj", w, moments, w)
    var_y = col.sum(dim=0)  # [d]
    scale = torch.diagonal(moments, dim1=0, dim2=1).sum(dim=-1)  # [d]: sum_h var(O_h)
    tiny = 1e-12 * scale
    ok = (var_x > tiny) & (var_y > tiny)
    denom = (var_x.clamp_min(0) * var_y.clamp_min(0)).sqrt().clamp_min(1e-300)
    rho = torch.where(ok, cov / denom, torch.zeros_like(cov))
    return rho.abs().sum(dim=-1)


def head_moments(head_outputs: Tensor) -> Tensor:
    """The ``[H, H, d]`` per-column head covariances that :func:`head_scores` and
    :func:`greedy_head_search` read; pass them to both to compute them once per layer."""
    _check_heads(head_outputs)
    _check_finite("head_outputs", head_outputs)
    return _head_moments(head_outputs)


def head_scores(head_outputs: Tensor, *, moments: Tensor | None = None) -> Tensor:
    """SlimLLM head score S(Y, Y - O_i) for every head; prune the largest.

    Args:
        head_outputs: ``[H, N, d]`` per-head contributions O_h to the attention output.
        moments: :func:`head_moments` of ``head_outputs``, if already computed.

    Returns:
        ``[H]`` float64 scores (the paper's importance is their negative).
    """
    _check_heads(head_outputs)
    moments = head_moments(head_outputs) if moments is None else moments
    n_heads = head_outputs.shape[0]
    weights = 1.0 - torch.eye(n_heads, dtype=torch.float64)  # row i: Y - O_i
    return _similarity_from_moments(weights, moments)


def greedy_head_search(
    head_outputs: Tensor, keep: Tensor, *, order: Tensor | None = None, moments: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """Algorithm 1 (greedy refinement): improve a kept set by single swaps.

    For each pruned head p (in ``order``, default: index order), try replacing each kept head k
    by p; apply the best swap if it raises S* = S(Y, sum_{h in K} O_h). S* never decreases.

    Args:
        head_outputs: ``[H, N, d]``.
        keep: ``[H]`` bool mask of the initial kept set (at least one head kept and one pruned).
        order: pruned heads to try, first to last (heads not pruned at that point are skipped).
        moments: :func:`head_moments` of ``head_outputs``, if already computed.

    Returns:
        ``(keep, trace)``: the final mask and ``[1 + swaps tried]`` values of S* (non-decreasing).
    """
    _check_heads(head_outputs)
    moments = head_moments(head_outputs) if moments is None else moments
    keep = torch.as_tensor(keep, dtype=torch.bool).clone()
    if keep.shape != head_outputs.shape[:1]:
        raise ValueError(
            f"keep must be a bool mask of shape [{head_outputs.shape[0]}], got {tuple(keep.shape)}"
        )
    if not keep.any() or keep.all():
        raise ValueError("keep must keep at least one head and prune at least one")
    best = float(_similarity_from_moments(keep.double().unsqueeze(0), moments)[0])
    trace = [best]
    candidates = order.tolist() if order is not None else torch.nonzero(~keep).flatten().tolist()
    for p in candidates:
        if keep[p]:
            continue
        kept = torch.nonzero(keep).flatten()
        trial = keep.double().unsqueeze(0).repeat(kept.numel(), 1)  # [|K|, H]: swap k -> p
        trial[torch.arange(kept.numel()), kept] = 0.0
        trial[:, p] = 1.0
        values = _similarity_from_moments(trial, moments)
        j = int(values.argmax())
        if float(values[j]) > best:
            best = float(values[j])
            keep[kept[j]] = False
            keep[p] = True
        trace.append(best)
    return keep, torch.tensor(trace, dtype=torch.float64)


def ffn_channel_scores(x: Tensor, a: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor) -> Tensor:
    """SlimLLM's feature-space FFN channel importance; prune the smallest.

    Args:
        x: ``[N, d]`` FFN input. a: ``[N, d_ff]`` intermediate act(X W_g^T) * (X W_u^T).
        w_gate, w_up: ``[d_ff, d]``. w_down: ``[d, d_ff]``.

    Returns:
        ``[d_ff]`` float64 scores I_g + I_u + I_d.
    """
    n, d = x.shape
    d_ff = w_gate.shape[0]
    if (
        a.shape != (n, d_ff)
        or w_up.shape != (d_ff, d)
        or w_gate.shape != (d_ff, d)
        or w_down.shape != (d, d_ff)
    ):
        raise ValueError(
            f"shapes must be x [N, d], a [N, d_ff], w_gate/w_up [d_ff, d], w_down [d, d_ff]; got "
            f"{tuple(x.shape)}, {tuple(a.shape)}, {tuple(w_gate.shape)}, {tuple(w_up.shape)}, "
            f"{tuple(w_down.shape)}"
        )
    x, a = x.double(), a.double()
    wg, wu, wd = w_gate.double(), w_up.double(), w_down.double()
    n_x = x.norm(dim=0)  # [d] column norms of X
    i_g = (wg * n_x).norm(dim=1)  # I_g(j) = ||W_g[j, :] * n_X||
    i_u = (wu * n_x).norm(dim=1)  # I_u(j) = ||W_u[j, :] * n_X||
    y = a @ wd.T  # [N, d] FFN output
    yc = y - y.mean(0, keepdim=True)
    lam, v = torch.linalg.eigh(yc.T @ yc)  # C = V diag(lambda) V^T
    mean_abs = lam.abs().mean()
    w = torch.sigmoid(lam.abs() / mean_abs) if mean_abs > 0 else torch.full_like(lam, 0.5)  # w_k
    p = (wd.T @ v).abs() * w  # [d_ff, d]: P_j = |W_d[:, j]^T V| * w
    i_d = p.norm(dim=1) * a.norm(dim=0)  # I_d(j) = ||P_j|| ||A[:, j]||
    return i_g + i_u + i_d


def fit_output_regression(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """Least squares y_j ~ a_j x_j + b_j for every output dimension j (closed form, float64).

    a_j = cov(x_j, y_j) / var(x_j), b_j = mean(y_j) - a_j mean(x_j); a constant x_j gets a_j = 1.

    Args:
        x, y: ``[N, d]`` (pruned and original outputs on the calibration tokens).

    Returns:
        ``(a, b)``, each ``[d]`` float64.
    """
    if x.ndim != 2 or x.shape != y.shape or x.shape[0] < 2:
        raise ValueError(f"x and y must both be [N >= 2, d], got {tuple(x.shape)} and {tuple(y.shape)}")
    _check_finite("x", x)
    _check_finite("y", y)
    x, y = x.double(), y.double()
    mx, my = x.mean(0), y.mean(0)
    xc, yc = x - mx, y - my
    var = (xc * xc).mean(0)
    cov = (xc * yc).mean(0)
    ok = var > 1e-12 * (y * y).mean(0).clamp_min(1e-300)
    a = torch.where(ok, cov / var.clamp_min(1e-300), torch.ones_like(var))
    b = my - a * mx
    return a, b


def layer_ratios(
    cos_sims: Tensor, ratio: float, num_pruned_layers: int, alpha: float = 10.0, max_ratio: float = 0.9
) -> Tensor:
    """The layer-wise pruning ratios, from the input/output cosine similarity of each layer.

    The ``num_pruned_layers`` layers with the highest similarity get r_l = R L_p softmax(alpha s)_l
    (softmax over those layers), the rest 0. Ratios above ``max_ratio`` are clipped and the excess
    is spread over the others in proportion to their softmax weights, so the selected layers'
    mean stays ``ratio``.

    Returns:
        ``[L]`` float64 ratios.
    """
    s = torch.as_tensor(cos_sims, dtype=torch.float64)
    if s.ndim != 1 or s.numel() < 1 or not torch.isfinite(s).all():
        raise ValueError(f"cos_sims must be a finite 1-D tensor, got shape {tuple(s.shape)}")
    n_layers = s.numel()
    if not 1 <= num_pruned_layers <= n_layers:
        raise ValueError(f"num_pruned_layers must lie in [1, {n_layers}], got {num_pruned_layers}")
    if not 0 < max_ratio < 1:
        raise ValueError(f"max_ratio must lie in (0, 1), got {max_ratio}")
    if not 0 < ratio <= max_ratio:
        raise ValueError(f"ratio must lie in (0, max_ratio={max_ratio}], got {ratio}")
    selected = torch.argsort(s, descending=True, stable=True)[:num_pruned_layers]
    weights = torch.softmax(alpha * s[selected], dim=0)  # softmax(alpha s) over the selected layers
    budget = ratio * num_pruned_layers
    r = torch.zeros(num_pruned_layers, dtype=torch.float64)
    free = torch.ones(num_pruned_layers, dtype=torch.bool)
    for _ in range(num_pruned_layers):  # water-filling: clip, hand the excess to the unclipped
        remaining = budget - float(r[~free].sum())
        r[free] = remaining * weights[free] / weights[free].sum()
        over = free & (r > max_ratio)
        if not over.any():
            break
        r[over] = max_ratio
        free &= ~over
    out = torch.zeros(n_layers, dtype=torch.float64)
    out[selected] = r
    return out


def magnitude_scores(groups: list[Tensor]) -> Tensor:
    """Magnitude baseline: sum over a unit's weight blocks of their Frobenius norms.

    Args:
        groups: blocks ``[U, ...]`` whose first dim indexes the units (heads or channels).
    """
    _check_groups(groups, "weight blocks [U, ...]")
    return sum(
        (g.double().flatten(1).norm(dim=1) for g in groups),
        torch.zeros(groups[0].shape[0], dtype=torch.float64),
    )


def wanda_scores(groups: list[tuple[Tensor, Tensor]]) -> Tensor:
    """Wanda-structured baseline: sum over a unit's elements of |W_ij| ||X_j||.

    Args:
        groups: ``(w, n)`` pairs: ``w`` ``[U, k, m]`` the unit's weights as rows over inputs m and
            ``n`` ``[U, 1, m]`` or ``[m]`` the input feature norms that multiply them.
    """
    _check_groups(groups, "(w, n) pairs")
    total = torch.zeros(groups[0][0].shape[0], dtype=torch.float64)
    for w, n in groups:
        total = total + (w.double().abs() * n.double()).flatten(1).sum(1)
    return total


def taylor_scores(groups: list[tuple[Tensor, Tensor]]) -> Tensor:
    """Taylor / LLM-Pruner-like baseline: sum over a unit's elements of |w dL/dw| (first order).

    Args:
        groups: ``(w, g)`` pairs of equal shape ``[U, ...]``: weights and their loss gradients.
    """
    _check_groups(groups, "(w, g) pairs")
    total = torch.zeros(groups[0][0].shape[0], dtype=torch.float64)
    for w, g in groups:
        total = total + (w.double() * g.double()).abs().flatten(1).sum(1)
    return total
