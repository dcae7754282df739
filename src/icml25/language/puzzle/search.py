"""Scores, measured costs and the architecture search of *Puzzle: Distillation-Based NAS for
Inference-Optimized LLMs* (Bercovich et al., ICML 2025, arXiv 2411.19146).

* Replace-one-block scores (Section 3.3): swap a single sub-block variant into the parent, keep all
  else, and measure the mean per-token KL(parent || modified) of next-token distributions on held-out
  windows. The parent variant scores 0; attention and FFN scores are treated as additive.
* Measured costs (Section 3.3): wall-clock latency of each sub-block variant on this machine for a
  fixed input ``[B, T, d]`` (median of repeated runs under ``torch.inference_mode``), plus its
  parameter count; the model's cost is the sum over chosen blocks plus a constant (embedding, final
  norm, LM head) measured the same way.
* Mixed-integer program (Section 3.4): binary ``x[g, j]`` picks variant ``j`` of sub-block ``g``;
  minimise ``sum score * x`` subject to ``sum_j x[g, j] = 1`` per sub-block and
  ``sum cost_m * x <= budget_m`` per resource ``m``; solved with HiGHS via ``scipy.optimize.milp``.
* Baselines at the same budget: uniform shrinking (one attention and one FFN variant for every layer),
  greedy (from the parent, repeatedly take the swap with the least score increase per unit of cost
  saved), depth pruning (drop whole layers with the smallest replace-one-layer score).
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from icml25.core.validate import check_finite_array, check_finite_tensor, check_positive

from .blocks import (
    ATTENTION,
    BlockLibrary,
    SubBlock,
    _check_choice,
    _check_ids,
    _parent_blocks,
    causal_mask,
    collect_subblock_io,
    rotary,
)

__all__ = [
    "kl_to_parent",
    "ChoiceEvaluation",
    "evaluate_choices",
    "replace_one_scores",
    "time_call",
    "measure_costs",
    "solve_mip",
    "brute_force",
    "greedy_choice",
    "uniform_choice",
    "depth_choice",
    "choice_to_groups",
    "groups_to_choice",
]


def kl_to_parent(parent_logits: Tensor, child_logits: Tensor) -> float:
    """Mean over positions of KL(softmax(parent) || softmax(child)) in nats."""
    check_finite_tensor("parent_logits", parent_logits, floating=True)
    check_finite_tensor("child_logits", child_logits, floating=True)
    if parent_logits.shape != child_logits.shape:
        raise ValueError(f"logit shapes differ: {tuple(parent_logits.shape)} vs {tuple(child_logits.shape)}")
    lp = torch.log_softmax(parent_logits.float(), -1)
    lc = torch.log_softmax(child_logits.float(), -1)
    return float((lp.exp() * (lp - lc)).sum(-1).mean())


@torch.inference_mode()
def replace_one_scores(model: Any, library: BlockLibrary, ids: Tensor) -> tuple[np.ndarray, np.ndarray]:
    """KL to the parent when only one sub-block variant is swapped in (Section 3.3).

    Returns ``(attention_scores [L, A], ffn_scores [L, F])``; column 0 (the parent) is 0.
    Runs the parent sub-blocks after the swapped one from cached parent activations; the variants of
    one sub-block run that suffix together, stacked along the batch axis (one larger batch instead of
    one pass per variant: the same arithmetic, fewer and larger matrix products).
    """
    states = collect_subblock_io(model, ids)
    pa, pf = _parent_blocks(model)
    chain: list[SubBlock] = [b for pair in zip(pa, pf, strict=True) for b in pair]
    pe = rotary(model, states[0])
    mask = causal_mask(states[0].shape[1], states[0].dtype)
    n = states[0].shape[0]
    parent_logits = model.lm_head(model.model.norm(states[-1]))
    out = []
    for kind, rows in ((ATTENTION, library.attention), ("ffn", library.ffn)):
        sc = np.zeros((library.n_layers, len(rows[0])))
        for i, row in enumerate(rows):
            s = 2 * i + (0 if kind == ATTENTION else 1)
            if len(row) < 2:
                continue
            h = torch.cat([b(states[s], pe, mask) for b in row[1:]])  # [(J-1) * B, T, d]
            pe_j = (pe[0].repeat(len(row) - 1, 1, 1), pe[1].repeat(len(row) - 1, 1, 1))
            for nxt in chain[s + 1 :]:
                h = nxt(h, pe_j, mask)
            for j in range(1, len(row)):
                hj = h[(j - 1) * n : j * n]
                sc[i, j] = max(kl_to_parent(parent_logits, model.lm_head(model.model.norm(hj))), 0.0)
        out.append(sc)
    return out[0], out[1]


@dataclass(frozen=True)
class ChoiceEvaluation:
    """Per-window quality of several children on the same windows (see :func:`evaluate_choices`).

    Attributes:
        nll: ``[C, N]`` summed next-token negative log-likelihood (nats) of child ``c`` on window ``n``
            (positions ``1..T-1`` predicted from their prefixes).
        kl: ``[C, N]`` mean over the ``T`` positions of KL(parent || child) of next-token distributions.
        parent_nll: ``[N]`` the parent's summed negative log-likelihood on each window.
        blocks_run: sub-block evaluations per window that the shared-prefix evaluation ran, against
            ``naive_blocks`` for running every child (and the parent) separately.
    """

    nll: np.ndarray
    kl: np.ndarray
    parent_nll: np.ndarray
    blocks_run: int
    naive_blocks: int


@torch.inference_mode()
def evaluate_choices(
    model: Any,
    library: BlockLibrary,
    choices: Sequence[Sequence[tuple[int, int]]],
    ids: Tensor,
    *,
    chunk: int = 8,
) -> ChoiceEvaluation:
    """Held-out quality of several children of one parent, sharing the computation they have in common.

    Each child is the parent with, per layer ``i``, attention variant ``choices[c][i][0]`` and FFN
    variant ``choices[c][i][1]`` of ``library`` (Section 3.1; the same model that
    :func:`~icml25.language.puzzle.blocks.assemble_child` builds). The sub-blocks are run in order as
    a prefix tree over the children and the parent: two children that agree on sub-blocks ``0..s``
    share one residual stream up to ``s``, and a ``noop`` sub-block costs nothing. Windows run in
    chunks of ``chunk`` so that only one chunk's logits are ever held; the parent's next-token
    distribution of each chunk is computed once and compared with every child's (the KL of Section
    3.3, here on held-out windows).

    Args:
        model: the parent the library was built from.
        library: its block library.
        choices: one ``[(attention, ffn)] * L`` per child; duplicates are evaluated once.
        ids: ``[N, T]`` token windows, ``T >= 2``.
        chunk: windows per forward pass.

    Returns:
        :class:`ChoiceEvaluation` with per-window NLL and KL for every child, in the order given.
    """
    _check_ids("ids", ids)
    if ids.shape[1] < 2:
        raise ValueError(f"ids must have at least 2 positions per window, got shape {tuple(ids.shape)}")
    check_positive("chunk", chunk, integer=True)
    if len(choices) == 0:
        raise ValueError("choices must hold at least one child")
    for c in choices:
        _check_choice(library, c)
    n_layers = library.n_layers
    # the parent is route 0; child c is route c + 1
    routes = [[0] * (2 * n_layers)] + [choice_to_groups(c) for c in choices]
    rows = [library.attention, library.ffn]
    # prefix-tree classes per level, computed once (they do not depend on the windows)
    plan: list[list[tuple[int, int, int]]] = []  # per level: (new class, parent class, variant)
    member = [0] * len(routes)  # class of each route at the current level
    blocks_run = 0
    for s in range(2 * n_layers):
        keys: dict[tuple[int, int], int] = {}
        level = []
        for r, route in enumerate(routes):
            key = (member[r], route[s])
            if key not in keys:
                keys[key] = len(keys)
                level.append((keys[key], key[0], key[1]))
                blocks_run += int(rows[s % 2][s // 2][key[1]].module is not None)
            member[r] = keys[key]
        plan.append(level)
    naive = sum(
        int(rows[s % 2][s // 2][route[s]].module is not None) for route in routes for s in range(2 * n_layers)
    )
    final = member
    n_cls = max(final) + 1
    nll = np.zeros((len(routes), ids.shape[0]))
    kl = np.zeros((len(routes), ids.shape[0]))
    for start in range(0, ids.shape[0], chunk):
        x = ids[start : start + chunk]
        h0 = model.model.embed_tokens(x)
        pe = rotary(model, h0)
        mask = causal_mask(x.shape[1], h0.dtype)
        states = {0: h0}
        for s, level in enumerate(plan):
            states = {new: rows[s % 2][s // 2][v](states[old], pe, mask) for new, old, v in level}
        target = x[:, 1:]
        # the parent's next-token distribution of this chunk, computed once for every child's KL
        lp_parent = torch.log_softmax(model.lm_head(model.model.norm(states[final[0]])).float(), -1)
        p_parent = lp_parent.exp()
        for k in range(n_cls):
            lp = (
                lp_parent
                if k == final[0]
                else torch.log_softmax(model.lm_head(model.model.norm(states[k])).float(), -1)
            )
            tok = -lp[:, :-1].gather(-1, target[..., None])[..., 0].sum(-1).double().numpy()
            div = (p_parent * (lp_parent - lp)).sum(-1).mean(-1).double().numpy()
            for r in range(len(routes)):
                if final[r] == k:
                    nll[r, start : start + x.shape[0]] = tok
                    kl[r, start : start + x.shape[0]] = div
            del lp
        del states, lp_parent, p_parent
    return ChoiceEvaluation(
        nll=nll[1:], kl=kl[1:], parent_nll=nll[0], blocks_run=blocks_run, naive_blocks=naive
    )


def time_call(fn: Any, reps: int = 10, warmup: int = 2) -> float:
    """Median wall-clock milliseconds of ``fn()`` over ``reps`` runs after ``warmup`` runs."""
    check_positive("reps", reps, integer=True)
    with torch.inference_mode():
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def measure_costs(
    model: Any,
    library: BlockLibrary,
    *,
    batch: int = 1,
    seq: int = 128,
    reps: int = 10,
    per_layer: bool = False,
) -> dict[str, Any]:
    """Measured latency (ms) and parameters of every variant, plus the constant head/embedding time.

    All layers of a Llama share shapes, so by default each variant type is timed once (on layer 0's
    module) and the time reused for every layer; ``per_layer=True`` times every layer's block.

    Returns a dict with ``attention_ms``/``ffn_ms`` ``[L, n]``, ``attention_params``/``ffn_params``
    ``[L, n]`` and ``const_ms`` (embedding lookup + final norm + LM head on ``[batch, seq]``).
    """
    check_positive("batch", batch, integer=True)
    check_positive("seq", seq, integer=True)
    d = model.config.hidden_size
    gen = torch.Generator().manual_seed(0)
    h = torch.randn(batch, seq, d, generator=gen)
    pe = rotary(model, h)
    mask = causal_mask(seq, h.dtype)
    out: dict[str, Any] = {}
    for kind, rows in ((ATTENTION, library.attention), ("ffn", library.ffn)):
        ms = np.zeros((library.n_layers, len(rows[0])))
        params = np.zeros_like(ms)
        for j in range(len(rows[0])):
            cached: float | None = None
            for i in range(library.n_layers):
                b = rows[i][j]
                params[i, j] = sum(p.numel() for p in b.module.parameters()) if b.module is not None else 0
                if b.module is None:
                    ms[i, j] = 0.0
                    continue
                if cached is None or per_layer:
                    cached = time_call(lambda b=b: b(h, pe, mask), reps=reps)
                ms[i, j] = cached
        out[f"{kind}_ms"] = ms
        out[f"{kind}_params"] = params
    ids = torch.randint(0, model.config.vocab_size, (batch, seq), generator=gen)
    out["const_ms"] = time_call(
        lambda: model.lm_head(model.model.norm(model.model.embed_tokens(ids))), reps=reps
    )
    return out


def _check_groups(scores: Sequence[np.ndarray | Sequence[float]], name: str) -> list[np.ndarray]:
    if len(scores) == 0:
        raise ValueError(f"{name} must hold at least one group")
    arrs = []
    for g, s in enumerate(scores):
        check_finite_array(f"{name}[{g}]", s, ndim=1)
        a = np.asarray(s, dtype=float)
        arrs.append(a)
    return arrs


def choice_to_groups(choice: Sequence[tuple[int, int]]) -> list[int]:
    """``[(a0, f0), (a1, f1), ...] -> [a0, f0, a1, f1, ...]`` (group order of the MIP)."""
    return [int(x) for pair in choice for x in pair]


def groups_to_choice(groups: Sequence[int]) -> list[tuple[int, int]]:
    """Inverse of :func:`choice_to_groups`."""
    if len(groups) % 2:
        raise ValueError(f"groups must have even length (attention, ffn per layer), got {len(groups)}")
    return [(int(groups[k]), int(groups[k + 1])) for k in range(0, len(groups), 2)]


def solve_mip(
    scores: Sequence[Sequence[float]],
    costs: Sequence[Sequence[Sequence[float]]],
    budgets: Sequence[float],
    *,
    time_limit: float = 60.0,
) -> list[int]:
    """One variant per group minimising the summed score under per-resource budgets (Section 3.4).

    Args:
        scores: ``scores[g][j]``, the damage of variant ``j`` in group ``g`` (lower is better).
        costs: ``costs[m][g][j]``, resource ``m`` of that variant.
        budgets: ``budgets[m]``, the upper bound on ``sum_g costs[m][g][choice[g]]``.
        time_limit: HiGHS time limit in seconds.

    Returns:
        ``choice[g]``, the chosen variant index per group.

    Raises:
        ValueError: if the program is infeasible or inputs are malformed.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    sc = _check_groups(scores, "scores")
    if len(costs) != len(budgets) or not budgets:
        raise ValueError(
            f"costs and budgets need the same non-zero length, got {len(costs)} and {len(budgets)}"
        )
    cs = []
    for m, cm in enumerate(costs):
        arr = _check_groups(cm, f"costs[{m}]")
        if [len(a) for a in arr] != [len(a) for a in sc]:
            raise ValueError(f"costs[{m}] must have the same group sizes as scores")
        cs.append(np.concatenate(arr))
    b = np.asarray(budgets, dtype=float)
    check_finite_array("budgets", b, ndim=1)
    c = np.concatenate(sc)
    n = c.size
    rows = []
    start = 0
    for a in sc:
        r = np.zeros(n)
        r[start : start + a.size] = 1.0
        rows.append(r)
        start += a.size
    constraints = [LinearConstraint(np.array(rows), 1.0, 1.0), LinearConstraint(np.array(cs), -np.inf, b)]
    res = milp(
        c,
        constraints=constraints,
        integrality=np.ones(n),
        bounds=Bounds(0, 1),
        options={"time_limit": time_limit},
    )
    if res.x is None:
        raise ValueError(f"the MIP has no feasible solution under budgets {b.tolist()}: {res.message}")
    x = np.round(res.x).astype(int)
    out, start = [], 0
    for a in sc:
        out.append(int(np.argmax(x[start : start + a.size])))
        start += a.size
    used = np.array([sum(cs_m[k] for k in _flat_index(sc, out)) for cs_m in cs])
    if np.any(used > b + 1e-6 * np.maximum(1.0, np.abs(b))):
        raise ValueError(f"MIP solution violates budgets: used {used.tolist()} > {b.tolist()}")
    return out


def _flat_index(groups: Sequence[np.ndarray], choice: Sequence[int]) -> list[int]:
    offs = np.cumsum([0] + [g.size for g in groups[:-1]])
    return [int(o + j) for o, j in zip(offs, choice, strict=True)]


def brute_force(
    scores: Sequence[Sequence[float]], costs: Sequence[Sequence[Sequence[float]]], budgets: Sequence[float]
) -> tuple[list[int], float]:
    """Exhaustive search for the same program as :func:`solve_mip` (for testing small instances)."""
    sc = _check_groups(scores, "scores")
    best: tuple[list[int], float] | None = None
    for combo in itertools.product(*(range(a.size) for a in sc)):
        if all(
            sum(float(np.asarray(cm[g])[j]) for g, j in enumerate(combo)) <= bm + 1e-9
            for cm, bm in zip(costs, budgets, strict=True)
        ):
            val = sum(float(sc[g][j]) for g, j in enumerate(combo))
            if best is None or val < best[1]:
                best = (list(combo), val)
    if best is None:
        raise ValueError("no feasible choice under the budgets")
    return best


def greedy_choice(
    scores: Sequence[Sequence[float]], costs: Sequence[Sequence[float]], budget: float
) -> list[int]:
    """Budget-constrained greedy: from the parent (variant 0 everywhere), repeatedly apply the single
    swap with the smallest score increase per unit of cost saved, until the total cost fits."""
    sc = _check_groups(scores, "scores")
    cs = _check_groups(costs, "costs")
    choice = [0] * len(sc)
    total = sum(float(c[0]) for c in cs)
    while total > budget + 1e-12:
        best: tuple[float, int, int] | None = None
        for g, (s, c) in enumerate(zip(sc, cs, strict=True)):
            for j in range(s.size):
                saved = float(c[choice[g]] - c[j])
                if saved <= 0:
                    continue
                ratio = max(float(s[j] - s[choice[g]]), 0.0) / saved
                if best is None or ratio < best[0]:
                    best = (ratio, g, j)
        if best is None:
            raise ValueError(f"greedy cannot reach budget {budget}: no swap lowers the cost further")
        _, g, j = best
        total -= float(cs[g][choice[g]] - cs[g][j])
        choice[g] = j
    return choice


def random_choice(costs: Sequence[Sequence[float]], budget: float, rng: np.random.Generator) -> list[int]:
    """A random feasible child, the search-free reference: from the parent (variant 0 everywhere),
    repeatedly swap one randomly drawn group to a randomly drawn strictly cheaper variant until the
    total cost fits ``budget``. Uses the costs only, never the scores."""
    cs = _check_groups(costs, "costs")
    choice = [0] * len(cs)
    total = sum(float(c[0]) for c in cs)
    while total > budget + 1e-12:
        options = [(g, j) for g, c in enumerate(cs) for j in range(c.size) if float(c[choice[g]] - c[j]) > 0]
        if not options:
            raise ValueError(f"random choice cannot reach budget {budget}: no swap lowers the cost further")
        g, j = options[int(rng.integers(len(options)))]
        total -= float(cs[g][choice[g]] - cs[g][j])
        choice[g] = j
    return choice


def uniform_choice(
    attn_scores: np.ndarray,
    ffn_scores: np.ndarray,
    attn_cost: np.ndarray,
    ffn_cost: np.ndarray,
    budget: float,
) -> list[tuple[int, int]]:
    """The same (attention, FFN) variant in every layer: the lowest summed score among uniform
    settings whose summed cost fits ``budget`` (arrays ``[L, n]``)."""
    best: tuple[float, int, int] | None = None
    for a in range(attn_scores.shape[1]):
        for f in range(ffn_scores.shape[1]):
            cost = float(attn_cost[:, a].sum() + ffn_cost[:, f].sum())
            if cost > budget + 1e-12:
                continue
            val = float(attn_scores[:, a].sum() + ffn_scores[:, f].sum())
            if best is None or val < best[0]:
                best = (val, a, f)
    if best is None:
        raise ValueError(f"no uniform setting fits budget {budget}")
    return [(best[1], best[2])] * attn_scores.shape[0]


def depth_choice(
    attn_scores: np.ndarray,
    ffn_scores: np.ndarray,
    attn_cost: np.ndarray,
    ffn_cost: np.ndarray,
    budget: float,
    noop: tuple[int, int],
) -> list[tuple[int, int]]:
    """Depth pruning: remove whole layers (both sub-blocks set to ``noop``) in order of the smallest
    replace-one-layer score (sum of the two no-op scores) until the summed cost fits ``budget``."""
    a0, f0 = noop
    order = np.argsort(attn_scores[:, a0] + ffn_scores[:, f0], kind="stable")
    choice = [(0, 0)] * attn_scores.shape[0]
    total = float(attn_cost[:, 0].sum() + ffn_cost[:, 0].sum())
    for i in order:
        if total <= budget + 1e-12:
            break
        total -= float(attn_cost[i, 0] - attn_cost[i, a0] + ffn_cost[i, 0] - ffn_cost[i, f0])
        choice[int(i)] = (a0, f0)
    if total > budget + 1e-12:
        raise ValueError(f"depth pruning cannot reach budget {budget}")
    return choice
