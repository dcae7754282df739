"""The noise-conditioned graph network (NCGN) with Dynamic Message Passing.

Pao-Huang, Black, Qiu, *Geometric Generative Modeling with Noise-Conditioned Graph Networks*,
ICML 2025 (arXiv 2507.09391), Sec. 4 and the official ``src/gnn.py`` (``STAdaptiveGNN``). One
network class serves every arm of the comparison: only the :class:`~.schedule.GraphSchedule` that
builds its graph differs, so parameter counts are identical by construction.

Per layer (h = width; i a coarse node, j a fine node in its cluster; p positions; e = [|p_i - p_j|, t]):

1. aggregate fine -> coarse: ``x_i <- mean_j MLP([A(x_i || x_j) || B(p_i - p_j) || C(e_ij)])``;
2. message passing on the coarse graph: one GCN or GAT layer;
3. spread coarse -> fine: the same message form on the reversed edges, with coarse input
   ``x_i + x_i^prev`` (a residual over the layer);
4. gate: ``g = sigmoid(W [x_j || spread_j])`` (one W shared by all layers, as in the official code),
   ``x_j <- g x_j + (1 - g) spread_j``;
5. ``x_j <- x_j^prev + MLP(GELU(norm(x_j)))``.

Normalisation (``NCGNConfig.norm``): ``"batch"`` (default) is the official structure, PyG ``MLP``
blocks of Linear -> BatchNorm -> ReLU everywhere (input MLPs, message MLPs and the per-layer MLP
with a norm and ReLU after their last Linear too; the output MLP ends in a plain Linear) and a
BatchNorm as the layer norm of step 5 except in the last layer (an identity, as PyG's ``BasicGNN``
gives its last layer). ``"layer"`` is our earlier simplification: Linear-GELU MLPs without norms,
a LayerNorm after each input MLP and as the layer norm. Side by side on identical inputs and
training (``/work/scratch`` comparison, see the README) the official structure learns the structure
between nodes faster (kNN, 600 steps of batch 32: 23 % of the marginals-to-floor gap closed against
15 %), so it is the default.

Shared BatchNorms in eval mode (``NCGNConfig.split_stats``): the official code passes one
``BatchNorm`` instance to each PyG ``MLP``, so the two or three layers of that MLP update one set of
running statistics, each call blending its own batch statistics into it. Training normalises with
batch statistics and is unaffected, but in eval mode (sampling) every layer is normalised with the
blend of all of them. ``split_stats=True`` keeps the shared weight and bias (the same training
computation) and gives every layer its own running statistics; ``False`` is the official blend.

Node inputs are ``[noisy values || fixed node features || t]``; fine nodes and pooled coarse nodes
have separate 3-layer input MLPs, and a 3-layer output MLP gives the velocity per fine node.
Remaining deviation: ``torch.nn.BatchNorm1d`` instead of PyG's ``BatchNorm`` wrapper (the same
layer), and the official ``og_lin`` list's unused final Linear is left out.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor, nn

from icml25.core.validate import check_fields, check_finite_tensor, check_tensor_dtype

from .graph import AdaptiveGraph, build_adaptive_graph
from .schedule import GraphSchedule

__all__ = ["NCGNConfig", "NCGN", "NCGNVelocity", "official_bn_stats"]


@dataclass(frozen=True)
class NCGNConfig:
    """Network sizes.

    Args:
        in_dim: generated (noised) features per node.
        cond_dim: fixed node features (e.g. positions of spatial transcriptomics), 0 for none.
        pos_dim: position dimensions used for relative positions and the graph.
        hidden: width h (official: 32 for ST, 64 for ModelNet).
        layers: number of DMP layers (official: 3).
        conv: coarse-graph convolution, ``"gat"`` or ``"gcn"``.
        heads: GAT heads (averaged, ``concat=False``).
        out_dim: output features (default ``in_dim``: a velocity).
        norm: ``"batch"`` (the official BatchNorm/ReLU MLP blocks) or ``"layer"`` (LayerNorm, plain
            Linear-GELU MLPs); see the module docstring.
        share_norm: with ``norm="batch"``, one BatchNorm per input, per-layer and output MLP shared by
            its layers, as the official code has it (it passes a ``BatchNorm`` instance as PyG's
            ``norm``, so the running statistics of two or three layers mix); ``False`` gives every
            layer its own BatchNorm. The message MLPs have their own BatchNorms either way.
        split_stats: with ``share_norm``, every use of a shared BatchNorm keeps its own running
            statistics while the weight and bias stay one shared pair. Training (batch statistics) is
            then the official computation exactly; only eval mode changes: each layer is normalised
            with its own running mean and variance instead of a blend of the two or three layers
            that the official shared instance accumulates. ``False`` (default): the official blend.
    """

    in_dim: int
    cond_dim: int = 0
    pos_dim: int = 2
    hidden: int = 32
    layers: int = 3
    conv: Literal["gat", "gcn"] = "gat"
    heads: int = 4
    out_dim: int = 0
    norm: Literal["batch", "layer"] = "batch"
    share_norm: bool = True
    split_stats: bool = False

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=("in_dim", "pos_dim", "hidden", "layers", "heads"),
            non_negative_int=("cond_dim", "out_dim"),
        )
        if self.conv not in ("gat", "gcn"):
            raise ValueError(f"NCGNConfig.conv must be 'gat' or 'gcn', got {self.conv!r}")
        if self.norm not in ("batch", "layer"):
            raise ValueError(f"NCGNConfig.norm must be 'batch' or 'layer', got {self.norm!r}")

    @property
    def node_in(self) -> int:
        return self.in_dim + self.cond_dim + 1

    @property
    def output_dim(self) -> int:
        return self.out_dim or self.in_dim


def _mlp(*dims: int) -> nn.Sequential:
    """Linear layers with GELU in between (none after the last)."""
    mods: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:], strict=True)):
        mods.append(nn.Linear(a, b))
        if i < len(dims) - 2:
            mods.append(nn.GELU())
    return nn.Sequential(*mods)


def _tied_batchnorm(first: nn.BatchNorm1d) -> nn.BatchNorm1d:
    """A BatchNorm with its own running statistics and ``first``'s weight and bias (the same tensors)."""
    bn = nn.BatchNorm1d(first.num_features, eps=first.eps, momentum=first.momentum)
    bn.weight = first.weight
    bn.bias = first.bias
    return bn


def _tied_groups(module: nn.Module) -> list[list[nn.BatchNorm1d]]:
    """The BatchNorms of ``module`` that share one weight (``split_stats``), in call order, 2 or more each."""
    groups: dict[int, list[nn.BatchNorm1d]] = {}
    for m in module.modules():  # registration order, which is the call order inside a Sequential
        if isinstance(m, nn.BatchNorm1d) and m.weight is not None:
            groups.setdefault(id(m.weight), []).append(m)
    return [g for g in groups.values() if len(g) > 1]


@contextlib.contextmanager
def official_bn_stats(module: nn.Module) -> Iterator[nn.Module]:
    """Temporarily give each group of tied BatchNorms the running statistics one shared instance holds.

    A diagnostic of ``split_stats``: one shared BatchNorm called by K layers per step, momentum m,
    holds in steady state the blend ``sum_k m (1 - m)^(K-1-k) s_k / (1 - (1 - m)^K)`` of the layers'
    statistics ``s_k`` (about 0.30/0.33/0.37 for K = 3, m = 0.1). Inside the context every BatchNorm
    of a group holds that blend of the group's own running statistics, so eval mode normalises as the
    official network does (to the steady-state approximation); the statistics are restored on exit.
    """
    saved: list[tuple[nn.BatchNorm1d, Tensor, Tensor]] = []
    for group in _tied_groups(module):
        stats: list[tuple[Tensor, Tensor]] = []
        for bn in group:
            if bn.running_mean is None or bn.running_var is None or bn.momentum is None:
                raise ValueError("official_bn_stats needs BatchNorms with running statistics and a momentum")
            saved.append((bn, bn.running_mean.clone(), bn.running_var.clone()))
            stats.append((bn.running_mean, bn.running_var))
        m, k = float(group[0].momentum or 0.0), len(group)
        w = torch.tensor([m * (1 - m) ** (k - 1 - i) for i in range(k)], dtype=stats[0][0].dtype)
        w = (w / w.sum()).to(stats[0][0].device)
        mean = (w[:, None] * torch.stack([s[0] for s in stats])).sum(0)
        var = (w[:, None] * torch.stack([s[1] for s in stats])).sum(0)
        with torch.no_grad():
            for rm, rv in stats:
                rm.copy_(mean)
                rv.copy_(var)
    try:
        yield module
    finally:
        with torch.no_grad():
            for bn, rm0, rv0 in saved:
                assert bn.running_mean is not None and bn.running_var is not None
                bn.running_mean.copy_(rm0)
                bn.running_var.copy_(rv0)


def _bn_mlp(*dims: int, plain_last: bool, shared: bool = False, split_stats: bool = False) -> nn.Sequential:
    """PyG ``MLP(dims, norm=BatchNorm, plain_last=...)``: Linear -> BatchNorm -> ReLU per layer, the last
    layer a plain Linear when ``plain_last``. ``shared``: one BatchNorm module for every layer of the
    block, as PyG does when ``norm`` is given as a module instance (the official input, per-layer and
    output MLPs); the hidden widths must then be equal. ``split_stats`` (with ``shared``): the later
    layers get BatchNorms of their own running statistics whose weight and bias are the first one's
    (:class:`NCGNConfig`); BatchNorm initialisation draws no random numbers, so the initial weights
    are those of the shared block."""
    mods: list[nn.Module] = []
    one = nn.BatchNorm1d(dims[1]) if shared else None
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:], strict=True)):
        mods.append(nn.Linear(a, b))
        if i < len(dims) - 2 or not plain_last:
            if one is None:
                bn = nn.BatchNorm1d(b)
            elif split_stats and i > 0:
                bn = _tied_batchnorm(one)
            else:
                bn = one
            mods.extend([bn, nn.ReLU()])
    return nn.Sequential(*mods)


def _block(
    norm: str, *dims: int, plain_last: bool = False, shared: bool = False, split_stats: bool = False
) -> nn.Sequential:
    """An inner MLP: the official BatchNorm block, or Linear-GELU layers (``"layer"``)."""
    if norm == "batch":
        return _bn_mlp(*dims, plain_last=plain_last, shared=shared, split_stats=split_stats)
    return _mlp(*dims)


def _scatter_mean(src: Tensor, index: Tensor, size: int) -> Tensor:
    out = src.new_zeros(size, src.shape[-1]).index_add_(0, index, src)
    count = src.new_zeros(size).index_add_(0, index, torch.ones_like(index, dtype=src.dtype))
    return out / count.clamp(min=1).unsqueeze(-1)


class _Message(nn.Module):
    """``MLP([A(x_dst || x_src) || B(p_dst - p_src) || C(e)])`` with e = [distance, t]."""

    def __init__(self, h: int, pos_dim: int, norm: str = "layer") -> None:
        super().__init__()
        self.a = nn.Linear(2 * h, h)
        self.b = nn.Linear(pos_dim, h)
        self.c = nn.Linear(2, h)
        self.mlp = _block(norm, 3 * h, h, h)

    def forward(self, x_dst: Tensor, x_src: Tensor, rel: Tensor, t: Tensor) -> Tensor:
        e = torch.stack([rel.norm(dim=-1), t], dim=-1)
        return self.mlp(torch.cat([self.a(torch.cat([x_dst, x_src], -1)), self.b(rel), self.c(e)], -1))


class _DMPLayer(nn.Module):
    def __init__(self, config: NCGNConfig, gate: nn.Linear, *, last: bool = False) -> None:
        super().__init__()
        h = config.hidden
        self.gate = gate  # shared by every layer
        self.aggregate = _Message(h, config.pos_dim, config.norm)
        self.spread = _Message(h, config.pos_dim, config.norm)
        self.conv: nn.Module
        if config.conv == "gat":
            from torch_geometric.nn import GATConv

            self.conv = GATConv(h, h, heads=config.heads, concat=False)
        else:
            from torch_geometric.nn import GCNConv

            self.conv = GCNConv(h, h)
        from torch_geometric.nn import GCNConv as GCNType

        self._gcn_type = GCNType
        self.dense_complete = True  # tests switch it off to compare with the sparse layer
        self.norm: nn.Module
        if config.norm == "layer":
            self.norm = nn.LayerNorm(h)
        else:  # official: PyG BasicGNN norms, BatchNorm except an identity in the last layer
            self.norm = nn.Identity() if last else nn.BatchNorm1d(h)
        self.mlp = _block(config.norm, h, h, h, shared=config.share_norm, split_stats=config.split_stats)

    def _coarse_conv(self, x: Tensor, g: AdaptiveGraph) -> Tensor:
        if self.dense_complete and g.complete and isinstance(self.conv, self._gcn_type):
            # GCN on a complete graph with self-loops: D^-1/2 (A + I) D^-1/2 = J / n, so the layer is
            # the mean of x W over the graph plus the bias (exact; O(n h^2) instead of O(n^2 h))
            xw = self.conv.lin(x)
            return _scatter_mean(xw, g.coarse_batch, g.n_graphs)[g.coarse_batch] + self.conv.bias
        return self.conv(x, g.edge_index)

    def forward(self, x_f: Tensor, x_c: Tensor, g: AdaptiveGraph, t_node: Tensor) -> tuple[Tensor, Tensor]:
        cl = g.cluster
        rel = g.coarse_pos[cl] - g.pos  # p_i - p_j for each fine node j in coarse node i
        # 1. aggregate fine -> coarse (mean over the cluster's members)
        msg = self.aggregate(x_c[cl], x_f, rel, t_node)
        x_c_new = _scatter_mean(msg, cl, x_c.shape[0])
        # 2. message passing on the coarse graph
        x_c_new = self._coarse_conv(x_c_new, g)
        # 3. spread coarse -> fine, with the residual coarse input x_c + x_c^prev
        spread = self.spread(x_f, (x_c_new + x_c)[cl], -rel, t_node)
        # 4. gated update of the fine nodes
        gate = torch.sigmoid(self.gate(torch.cat([x_f, spread], -1)))
        upd = gate * x_f + (1.0 - gate) * spread
        # 5. norm, GELU, MLP, residual
        return x_f + self.mlp(nn.functional.gelu(self.norm(upd))), x_c_new


class NCGN(nn.Module):
    """Noise-conditioned graph network on a prebuilt :class:`AdaptiveGraph`."""

    def __init__(self, config: NCGNConfig) -> None:
        super().__init__()
        if not isinstance(config, NCGNConfig):
            raise TypeError(f"config must be an NCGNConfig, got {type(config).__name__}")
        self.config = config
        h = config.hidden
        self.embed_fine: nn.Module
        self.embed_coarse: nn.Module
        if config.norm == "layer":
            self.embed_fine = nn.Sequential(_mlp(config.node_in, h, h, h), nn.LayerNorm(h))
            self.embed_coarse = nn.Sequential(_mlp(config.node_in, h, h, h), nn.LayerNorm(h))
        else:
            share, split, n_in = config.share_norm, config.split_stats, config.node_in
            self.embed_fine = _bn_mlp(n_in, h, h, h, plain_last=False, shared=share, split_stats=split)
            self.embed_coarse = _bn_mlp(n_in, h, h, h, plain_last=False, shared=share, split_stats=split)
        self.gate = nn.Linear(2 * h, h)
        self.layers = nn.ModuleList(
            _DMPLayer(config, self.gate, last=i == config.layers - 1) for i in range(config.layers)
        )
        self.out = _block(
            config.norm,
            h,
            h,
            h,
            config.output_dim,
            plain_last=True,
            shared=config.share_norm,
            split_stats=config.split_stats,
        )

    def forward(self, node_input: Tensor, graph: AdaptiveGraph) -> Tensor:
        """Per-node outputs.

        Args:
            node_input: ``[B * N, in_dim + cond_dim + 1]`` rows ``[x_t || cond || t]``.
            graph: the batch's :class:`AdaptiveGraph`.

        Returns:
            ``[B * N, out_dim]``.
        """
        check_finite_tensor("node_input", node_input, ndim=2, floating=True)
        if node_input.shape != (graph.n_graphs * graph.n_nodes, self.config.node_in):
            raise ValueError(
                f"node_input must have shape [{graph.n_graphs * graph.n_nodes}, {self.config.node_in}], "
                f"got {tuple(node_input.shape)}"
            )
        t_node = graph.clean_frac.to(node_input.dtype).repeat_interleave(graph.n_nodes)
        x_f = self.embed_fine(node_input)
        x_c = self.embed_coarse(_scatter_mean(node_input, graph.cluster, graph.n_coarse))
        for layer in self.layers:
            x_f, x_c = layer(x_f, x_c, graph, t_node)
        return self.out(x_f)


class NCGNVelocity(nn.Module):
    """A flow-matching velocity ``f(x_t, t, cond)`` that builds its noise-conditioned graph each call.

    Plugs into :func:`icml25.nn.flow_matching.flow_matching_loss` and
    :func:`~icml25.nn.flow_matching.euler_sample` (t = clean fraction tau).

    Args:
        config: network sizes.
        schedule: the graph schedule (DMP or a static baseline); the only difference between arms.
        positions: ``"cond"`` builds the graph on the first ``pos_dim`` columns of the fixed node
            features (spatial transcriptomics, pixels); ``"x"`` on the first ``pos_dim`` columns of
            the noisy sample itself (point clouds).
        graph_seed: seed of the ``random`` schedule's edges.
    """

    def __init__(
        self,
        config: NCGNConfig,
        schedule: GraphSchedule,
        *,
        positions: Literal["cond", "x"] = "cond",
        graph_seed: int = 0,
    ) -> None:
        super().__init__()
        if not isinstance(schedule, GraphSchedule):
            raise TypeError(f"schedule must be a GraphSchedule, got {type(schedule).__name__}")
        if positions not in ("cond", "x"):
            raise ValueError(f"positions must be 'cond' or 'x', got {positions!r}")
        if positions == "cond" and config.cond_dim < config.pos_dim:
            raise ValueError("positions='cond' needs config.cond_dim >= config.pos_dim")
        if positions == "x" and config.in_dim < config.pos_dim:
            raise ValueError("positions='x' needs config.in_dim >= config.pos_dim")
        self.net = NCGN(config)
        self.schedule = schedule
        self.positions = positions
        self.graph_generator = torch.Generator().manual_seed(graph_seed)

    @property
    def config(self) -> NCGNConfig:
        return self.net.config

    def graph(self, x_t: Tensor, t: Tensor, cond: Tensor | None) -> AdaptiveGraph:
        """The graph this velocity uses for ``x_t`` at times ``t``."""
        x_t, cond = self._check(x_t, t, cond)
        return self._graph(x_t, t, cond)

    def _graph(self, x_t: Tensor, t: Tensor, cond: Tensor | None) -> AdaptiveGraph:
        p = self.config.pos_dim
        pos = cond[..., :p] if self.positions == "cond" and cond is not None else x_t[..., :p]
        # the graph is built on the CPU (index bookkeeping) and moved to the sample's device
        g = build_adaptive_graph(
            pos.detach().cpu(), t.detach().cpu(), self.schedule, generator=self.graph_generator
        )
        return g if x_t.device.type == "cpu" else g.to(x_t.device)

    def _check(self, x_t: Any, t: Any, cond: Any) -> tuple[Tensor, Tensor | None]:
        check_finite_tensor("x_t", x_t, ndim=3, floating=True)
        check_tensor_dtype("x_t", x_t, next(self.parameters()).dtype)
        B, N, F = x_t.shape
        if self.config.in_dim != F:
            raise ValueError(
                f"x_t must have {self.config.in_dim} features (last dim), got shape {tuple(x_t.shape)}"
            )
        if not isinstance(t, Tensor) or t.shape != (B,):
            raise ValueError(f"t must be a tensor of shape [{B}]")
        if self.config.cond_dim:
            if not isinstance(cond, Tensor):
                raise TypeError(f"cond must be a tensor [B, N, {self.config.cond_dim}] or [N, ...]")
            if cond.ndim == 2:
                cond = cond.unsqueeze(0).expand(B, -1, -1)
            check_finite_tensor("cond", cond, ndim=3, floating=True)
            if cond.shape != (B, N, self.config.cond_dim):
                raise ValueError(
                    f"cond must have shape [{B}, {N}, {self.config.cond_dim}], got {tuple(cond.shape)}"
                )
            cond = cond.to(x_t.dtype)
        else:
            cond = None
        return x_t, cond

    def forward(self, x_t: Tensor, t: Tensor, cond: Tensor | None = None) -> Tensor:
        """Velocity ``[B, N, in_dim]`` at noisy sample ``x_t [B, N, in_dim]`` and clean fraction ``t [B]``."""
        x_t, cond = self._check(x_t, t, cond)
        B, N, F = x_t.shape
        g = self._graph(x_t, t, cond)
        t = t.to(x_t.device)
        parts = [x_t] + ([cond] if cond is not None else []) + [t.to(x_t.dtype).view(B, 1, 1).expand(B, N, 1)]
        out = self.net(torch.cat(parts, -1).reshape(B * N, -1), g)
        return out.view(B, N, -1)
