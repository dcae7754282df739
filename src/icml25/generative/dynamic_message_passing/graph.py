"""Noise-conditioned graphs: voxel coarsening, coarse kNN and the batched adaptive graph.

Pao-Huang, Black, Qiu (ICML 2025, arXiv 2507.09391), Sec. 4 and the official ``src/dataset.py``.
For each sample at clean fraction ``tau`` the :class:`~.schedule.GraphSchedule` asks for
``n_clusters`` coarse nodes and ``k`` neighbours. :func:`voxel_cluster` splits the bounding box of
the sample's positions into ``floor(n_clusters^(1/d))`` voxels per axis; every occupied voxel is a
coarse node (so there can be fewer than requested) placed at its members' mean. Coarse nodes are
joined by kNN with ``k`` clipped to ``n_coarse - 1`` (:func:`knn_edges`). A request for ``N``
clusters is the identity (every node its own cluster), so at ``tau = 1`` the DMP graph is the
full-resolution kNN graph.

Notation: B graphs of N nodes each, d position dimensions, M coarse nodes in the batch (contiguous
per graph), E coarse edges. Edges are ``[2, E]`` rows ``(source j, target i)``: a message from j
to i. Batches are dense (every graph has N nodes); ragged batches are not supported. kNN is
``torch.cdist`` + ``topk`` per graph on padded blocks (no torch-cluster needed).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import Tensor

from icml25.core.validate import check_finite_tensor

from .schedule import GraphSchedule

__all__ = ["AdaptiveGraph", "voxel_cluster", "knn_edges", "build_adaptive_graph", "coarse_edge_lengths"]


@dataclass(frozen=True)
class AdaptiveGraph:
    """One batch of noise-conditioned graphs.

    Attributes:
        n_graphs: B.
        n_nodes: N per graph.
        pos: ``[B * N, d]`` fine positions (flattened).
        cluster: ``[B * N]`` global coarse id of each fine node.
        coarse_pos: ``[M, d]`` coarse positions (member means).
        coarse_batch: ``[M]`` graph of each coarse node.
        edge_index: ``[2, E]`` coarse edges (source, target).
        clusters_per_graph: ``[B]`` coarse nodes per graph.
        k_per_graph: ``[B]`` neighbours per coarse node actually used.
        clean_frac: ``[B]`` tau of each graph.
        complete: every coarse graph is complete (``k = n_coarse - 1`` in every graph), which lets a
            GCN layer take its exact dense form (a mean over the graph).
    """

    n_graphs: int
    n_nodes: int
    pos: Tensor
    cluster: Tensor
    coarse_pos: Tensor
    coarse_batch: Tensor
    edge_index: Tensor
    clusters_per_graph: Tensor
    k_per_graph: Tensor
    clean_frac: Tensor
    complete: bool = False

    @property
    def n_coarse(self) -> int:
        return int(self.coarse_pos.shape[0])

    def to(self, device: torch.device | str) -> AdaptiveGraph:
        """The same graph with every tensor on ``device`` (graphs are built on the CPU)."""
        moved = {
            f.name: getattr(self, f.name).to(device)
            for f in dataclasses.fields(self)
            if isinstance(getattr(self, f.name), Tensor)
        }
        return dataclasses.replace(self, **moved)

    def edges_per_graph(self) -> Tensor:
        """``[B]`` coarse-graph edges (messages per conv layer) of each graph."""
        return torch.bincount(self.coarse_batch[self.edge_index[1]], minlength=self.n_graphs)

    def messages_per_graph(self) -> Tensor:
        """``[B]`` messages of one network layer: fine->coarse (N) + coarse edges + coarse->fine (N)."""
        return self.edges_per_graph() + 2 * self.n_nodes


def _check_pos(pos: Tensor) -> None:
    check_finite_tensor("pos", pos, ndim=3, floating=True)
    if pos.shape[1] < 1 or pos.shape[2] < 1:
        raise ValueError(f"pos must have shape [B, N, d] with N, d >= 1, got {tuple(pos.shape)}")


def _check_counts(name: str, counts: Tensor, batch: int) -> None:
    if not isinstance(counts, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape [{batch}], got {type(counts).__name__}")
    if counts.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"{name} must be an integer tensor, got {counts.dtype}")
    if counts.shape != (batch,):
        raise ValueError(f"{name} must have shape [{batch}], got {tuple(counts.shape)}")
    if (counts < 1).any():
        raise ValueError(f"{name} must be >= 1 everywhere, got min {int(counts.min())}")


def voxel_cluster(pos: Tensor, n_clusters: Tensor) -> tuple[Tensor, Tensor]:
    """Voxel clustering of each graph into at most ``n_clusters[b]`` contiguous clusters.

    Args:
        pos: ``[B, N, d]`` positions.
        n_clusters: ``[B]`` requested clusters; ``>= N`` gives the identity clustering.

    Returns:
        ``(cluster [B, N] global ids, contiguous and grouped by graph, counts [B] clusters per graph)``.
    """
    _check_pos(pos)
    B, N, d = pos.shape
    _check_counts("n_clusters", n_clusters, B)
    req = n_clusters.to(torch.int64)
    per_axis = torch.floor(req.to(torch.float64) ** (1.0 / d) + 1e-9).clamp(min=1).to(torch.int64)  # [B]
    lo = pos.amin(dim=1, keepdim=True)
    span = (pos.amax(dim=1, keepdim=True) - lo).clamp(min=1e-12)
    v = per_axis.view(B, 1, 1).to(pos.dtype)
    cell = torch.floor((pos - lo) / span * v).to(torch.int64)
    cell = torch.minimum(cell.clamp(min=0), per_axis.view(B, 1, 1) - 1)  # [B, N, d]
    strides = per_axis.view(B, 1, 1) ** torch.arange(d).view(1, 1, d)
    voxel = (cell * strides).sum(dim=-1)  # [B, N]
    identity = (req >= N).view(B, 1)
    local = torch.where(identity, torch.arange(N).view(1, N), voxel)
    width = int(max(int((per_axis**d).max()), N))
    key = torch.arange(B).view(B, 1) * width + local
    _, cluster = torch.unique(key.reshape(-1), sorted=True, return_inverse=True)
    cluster = cluster.view(B, N)
    graph_of = torch.arange(B).repeat_interleave(N)
    owner = torch.zeros(int(cluster.max()) + 1, dtype=torch.int64)
    owner[cluster.reshape(-1)] = graph_of  # the graph of each cluster
    counts = torch.bincount(owner, minlength=B)
    return cluster, counts


def knn_edges(
    pos: Tensor,
    counts: Tensor,
    k: Tensor,
    *,
    random: bool = False,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """kNN (or uniformly random) edges inside each graph of a batch of contiguous node blocks.

    Args:
        pos: ``[M, d]`` node positions, graph by graph (``counts[b]`` nodes each).
        counts: ``[B]`` nodes per graph.
        k: ``[B]`` neighbours per node, clipped to ``counts[b] - 1``.
        random: pick the k neighbours uniformly at random instead of nearest (self excluded).
        generator: source of the random choice.

    Returns:
        ``(edge_index [2, E] (neighbour -> node), k_used [B])``.
    """
    check_finite_tensor("pos", pos, ndim=2, floating=True)
    B = counts.shape[0]
    _check_counts("counts", counts, B)
    _check_counts("k", k, B)
    if int(counts.sum()) != pos.shape[0]:
        raise ValueError(f"counts must sum to the {pos.shape[0]} rows of pos, got {int(counts.sum())}")
    k_used = torch.minimum(k.to(torch.int64), counts - 1)
    kmax = int(k_used.max())
    if kmax <= 0:
        return torch.zeros(2, 0, dtype=torch.int64), k_used
    mmax = int(counts.max())
    offsets = torch.cumsum(counts, 0) - counts
    graph = torch.arange(B).repeat_interleave(counts)
    local = torch.arange(pos.shape[0]) - offsets[graph]
    padded = pos.new_zeros(B, mmax, pos.shape[1])
    padded[graph, local] = pos
    valid = torch.arange(mmax).view(1, mmax) < counts.view(B, 1)  # [B, mmax]
    if random:
        score = torch.rand(B, mmax, mmax, generator=generator, dtype=pos.dtype)
    else:
        score = torch.cdist(padded, padded)
    blocked = ~valid.view(B, 1, mmax) | torch.eye(mmax, dtype=torch.bool).view(1, mmax, mmax)
    score = score.masked_fill(blocked, float("inf"))
    nbr = torch.topk(score, kmax, dim=-1, largest=False).indices  # [B, mmax, kmax]
    keep = valid.view(B, mmax, 1) & (torch.arange(kmax).view(1, 1, kmax) < k_used.view(B, 1, 1))
    target = (offsets.view(B, 1, 1) + torch.arange(mmax).view(1, mmax, 1)).expand(B, mmax, kmax)
    source = offsets.view(B, 1, 1) + nbr
    return torch.stack([source[keep], target[keep]]), k_used


def build_adaptive_graph(
    pos: Tensor,
    clean_frac: Tensor,
    schedule: GraphSchedule,
    *,
    generator: torch.Generator | None = None,
) -> AdaptiveGraph:
    """The noise-conditioned graph of every sample in a batch (Sec. 4, DMP).

    Args:
        pos: ``[B, N, d]`` node positions the graph is built on (the noisy positions for point
            clouds, the fixed positions for spatial transcriptomics).
        clean_frac: ``[B]`` tau in [0, 1] (1 = clean data).
        schedule: the :class:`GraphSchedule` (an adaptive DMP kind or a static baseline).
        generator: randomness of the ``random`` kind.

    Returns:
        :class:`AdaptiveGraph`.
    """
    _check_pos(pos)
    B, N, d = pos.shape
    if not isinstance(schedule, GraphSchedule):
        raise TypeError(f"schedule must be a GraphSchedule, got {type(schedule).__name__}")
    if clean_frac.shape != (B,):
        raise ValueError(f"clean_frac must have shape [{B}], got {tuple(clean_frac.shape)}")
    n_req, k_req = schedule.resolution(clean_frac, N)
    flat = pos.reshape(B * N, d)
    if schedule.adaptive:
        cluster, counts = voxel_cluster(pos, n_req)
        cluster = cluster.reshape(-1)
        M = int(counts.sum())
        size = torch.zeros(M, dtype=pos.dtype).index_add_(0, cluster, torch.ones(B * N, dtype=pos.dtype))
        coarse_pos = torch.zeros(M, d, dtype=pos.dtype).index_add_(0, cluster, flat) / size.unsqueeze(1)
    else:
        cluster = torch.arange(B * N)
        counts = torch.full((B,), N, dtype=torch.int64)
        coarse_pos = flat
    edge_index, k_used = knn_edges(
        coarse_pos.detach(), counts, k_req, random=schedule.kind == "random", generator=generator
    )
    return AdaptiveGraph(
        n_graphs=B,
        n_nodes=N,
        pos=flat,
        cluster=cluster,
        coarse_pos=coarse_pos,
        coarse_batch=torch.arange(B).repeat_interleave(counts),
        edge_index=edge_index,
        clusters_per_graph=counts,
        k_per_graph=k_used,
        clean_frac=clean_frac,
        complete=bool((k_used == counts - 1).all()),
    )


def coarse_edge_lengths(graph: AdaptiveGraph) -> Tensor:
    """``[B]`` mean Euclidean length of the coarse edges of each graph: the message range."""
    src, dst = graph.edge_index
    length = (graph.coarse_pos[src] - graph.coarse_pos[dst]).norm(dim=-1)
    per = torch.zeros(graph.n_graphs, dtype=length.dtype).index_add_(0, graph.coarse_batch[dst], length)
    return per / graph.edges_per_graph().clamp(min=1).to(length.dtype)
