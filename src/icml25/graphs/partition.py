"""Splitting one graph into client subgraphs for subgraph-federated learning.

Each client keeps the subgraph induced by its nodes; every edge between two clients is lost and is
listed in :attr:`Partition.dropped_edges` (so that link-mending methods can be scored).

* :func:`louvain_partition`: the FedTAD protocol (Zhu et al., IJCAI 2024, ``util/base_data_util.py``
  of github.com/zyl24/FedTAD) with networkx's Louvain: communities larger than ``n/M - delta`` are
  cut into chunks, then communities are dealt out largest first to clients in turn, skipping a
  client that would exceed ``n/M + delta`` nodes. Clients become label-skewed.
* :func:`metis_style_partition`: balanced min-cut parts by recursive bisection: a breadth-first
  "graph growing" initial split (as METIS's initial partitioning does) refined by Kernighan-Lin swaps
  (networkx). METIS-*style*: no multilevel coarsening, and it is not the METIS library.
* :func:`random_partition`: nodes dealt uniformly at random (a stress test: most edges are lost).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch_geometric.data import Data

from icml25.core.validate import check_non_negative, check_positive

__all__ = [
    "ClientSubgraph",
    "Partition",
    "split_by_assignment",
    "louvain_partition",
    "metis_style_partition",
    "random_partition",
]


@dataclass(frozen=True)
class ClientSubgraph:
    """One client's induced subgraph.

    Attributes:
        data: ``Data`` with local ``x``, ``edge_index`` (local ids) and ``y`` where the graph has it.
        node_ids: ``[n_m]`` int64 global ids of the local nodes (local id ``i`` is global ``node_ids[i]``).
    """

    data: Data
    node_ids: torch.Tensor

    @property
    def num_nodes(self) -> int:
        return int(self.node_ids.numel())


@dataclass(frozen=True)
class Partition:
    """Client subgraphs of one graph and the links the split destroyed.

    Attributes:
        clients: the client subgraphs.
        assignment: ``[n]`` int64 client of every global node.
        dropped_edges: ``[2, m_drop]`` int64 global ids of the destroyed undirected edges (``u < v``).
        num_edges: undirected edges of the whole graph.
    """

    clients: tuple[ClientSubgraph, ...]
    assignment: torch.Tensor
    dropped_edges: torch.Tensor
    num_edges: int

    @property
    def num_clients(self) -> int:
        return len(self.clients)

    @property
    def dropped_fraction(self) -> float:
        """Share of the graph's undirected edges that run between clients."""
        return self.dropped_edges.shape[1] / self.num_edges if self.num_edges else 0.0


def _check_data(data: Data) -> int:
    if not isinstance(data, Data):
        raise TypeError(f"data must be a torch_geometric.data.Data, got {type(data).__name__}")
    n = data.num_nodes
    if n is None or n < 1:
        raise ValueError("data has no nodes")
    ei = data.edge_index
    if ei is None or ei.ndim != 2 or ei.shape[0] != 2:
        raise ValueError(
            f"data.edge_index must have shape [2, m], got {None if ei is None else tuple(ei.shape)}"
        )
    if ei.dtype != torch.long:
        raise TypeError(f"data.edge_index must be int64, got {ei.dtype}")
    return int(n)


def split_by_assignment(data: Data, assignment: torch.Tensor | np.ndarray | Sequence[int]) -> Partition:
    """Induced subgraphs of ``data`` for a given node -> client assignment.

    Args:
        data: the whole graph (``x``, ``edge_index``, optional ``y`` and other node tensors are cut).
        assignment: ``[n]`` client id of every node, ids ``0..M-1`` each used at least once.
    """
    n = _check_data(data)
    a = torch.as_tensor(np.asarray(assignment), dtype=torch.long)
    if a.shape != (n,):
        raise ValueError(f"assignment must have shape [{n}], got {tuple(a.shape)}")
    num_clients = int(a.max()) + 1
    if int(a.min()) < 0 or torch.unique(a).numel() != num_clients:
        raise ValueError("assignment must use every client id 0..M-1 at least once")
    src, dst = data.edge_index
    und = src < dst
    m_total = int(und.sum())
    cross = und & (a[src] != a[dst])
    dropped = torch.stack([src[cross], dst[cross]])
    clients = []
    local = torch.full((n,), -1, dtype=torch.long)
    for c in range(num_clients):
        ids = torch.nonzero(a == c).flatten()
        local[ids] = torch.arange(ids.numel())
        keep = (a[src] == c) & (a[dst] == c)
        sub = Data(edge_index=torch.stack([local[src[keep]], local[dst[keep]]]), num_nodes=ids.numel())
        for key in ("x", "y"):
            if getattr(data, key, None) is not None:
                sub[key] = data[key][ids]
        clients.append(ClientSubgraph(sub, ids))
    return Partition(tuple(clients), a, dropped, m_total)


def _nx_graph(data: Data):  # noqa: ANN202 - networkx has no stubs
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(range(int(data.num_nodes)))
    src, dst = data.edge_index
    g.add_edges_from(zip(src.tolist(), dst.tolist(), strict=True))
    return g


def louvain_partition(data: Data, num_clients: int, *, delta: int = 20, seed: int = 0) -> Partition:
    """FedTAD's Louvain split (label-skewed clients of near-equal size).

    Args:
        data: the whole graph.
        num_clients: clients ``M`` (``1 <= M <= n``).
        delta: size slack: communities above ``n/M - delta`` are chunked, clients may hold up to
            ``n/M + delta`` nodes.
        seed: Louvain's seed.
    """
    import networkx as nx

    n = _check_data(data)
    check_positive("num_clients", num_clients, integer=True)
    check_non_negative("delta", delta, integer=True)
    if num_clients > n:
        raise ValueError(f"num_clients must be <= the number of nodes {n}, got {num_clients}")
    communities = [sorted(c) for c in nx.community.louvain_communities(_nx_graph(data), seed=seed)]
    cap = n / num_clients
    chunk = max(1, int(cap - delta))
    parts: list[list[int]] = []
    for com in communities:
        parts.extend(com[i : i + chunk] for i in range(0, len(com), chunk))
    parts.sort(key=len, reverse=True)
    assignment = np.full(n, -1, dtype=np.int64)
    sizes = np.zeros(num_clients, dtype=np.int64)
    turn = 0
    for part in parts:
        for step in range(num_clients):  # round robin, skipping clients that would overflow
            c = (turn + step) % num_clients
            if sizes[c] + len(part) <= cap + delta:
                break
        else:
            c = int(np.argmin(sizes))  # nobody has room: the smallest client takes it
        assignment[part] = c
        sizes[c] += len(part)
        turn = (c + 1) % num_clients
    empty = np.flatnonzero(sizes == 0)
    for c in empty.tolist():  # tiny graphs: give an empty client a node of the largest one
        donor = int(np.argmax(sizes))
        node = int(np.flatnonzero(assignment == donor)[0])
        assignment[node] = c
        sizes[donor] -= 1
        sizes[c] += 1
    return split_by_assignment(data, assignment)


def _bisect(graph, nodes: list[int], share: float, seed: int) -> tuple[list[int], list[int]]:  # noqa: ANN001
    """Split ``nodes`` into parts of ``share`` and ``1 - share`` of its size with a small cut."""
    import networkx as nx

    sub = graph.subgraph(nodes)
    order: list[int] = []
    seen: set[int] = set()
    rng = np.random.default_rng(seed)
    # breadth-first graph growing from a low-degree node of each component, largest component first
    for comp in sorted(nx.connected_components(sub), key=len, reverse=True):
        comp_nodes = sorted(comp)
        degs = np.array([sub.degree(v) for v in comp_nodes])
        start = comp_nodes[int(rng.choice(np.flatnonzero(degs == degs.min())))]
        for v in nx.bfs_tree(sub, start):
            if v not in seen:
                seen.add(v)
                order.append(v)
    n_left = int(round(share * len(order)))
    n_left = min(max(n_left, 1), len(order) - 1)
    left, right = set(order[:n_left]), set(order[n_left:])
    if sub.number_of_edges():
        a, b = nx.community.kernighan_lin_bisection(sub, partition=(left, right), max_iter=10, seed=seed)
        # swaps keep the two sizes; networkx may return the sides in either order
        left, right = (a, b) if len(a) == n_left else (b, a)
    return sorted(left), sorted(right)


def metis_style_partition(data: Data, num_clients: int, *, seed: int = 0) -> Partition:
    """Balanced parts with few cut edges by recursive graph-growing + Kernighan-Lin bisection.

    Parts differ in size by at most one node per bisection level. METIS-style, not METIS: there is
    no multilevel coarsening, so cuts are larger than METIS's on big graphs.

    Args:
        data: the whole graph.
        num_clients: parts ``M`` (``1 <= M <= n``).
        seed: seed of the start-node choice and of the Kernighan-Lin tie breaks.
    """
    n = _check_data(data)
    check_positive("num_clients", num_clients, integer=True)
    if num_clients > n:
        raise ValueError(f"num_clients must be <= the number of nodes {n}, got {num_clients}")
    graph = _nx_graph(data)
    assignment = np.zeros(n, dtype=np.int64)
    next_id = [0]

    def recurse(nodes: list[int], parts: int, depth_seed: int) -> None:
        if parts == 1:
            assignment[nodes] = next_id[0]
            next_id[0] += 1
            return
        left_parts = parts // 2
        left, right = _bisect(graph, nodes, left_parts / parts, depth_seed)
        recurse(left, left_parts, depth_seed * 2 + 1)
        recurse(right, parts - left_parts, depth_seed * 2 + 2)

    recurse(list(range(n)), num_clients, seed)
    return split_by_assignment(data, assignment)


def random_partition(data: Data, num_clients: int, *, seed: int = 0) -> Partition:
    """Nodes dealt to ``num_clients`` clients uniformly at random (sizes differ by at most one)."""
    n = _check_data(data)
    check_positive("num_clients", num_clients, integer=True)
    if num_clients > n:
        raise ValueError(f"num_clients must be <= the number of nodes {n}, got {num_clients}")
    rng = np.random.default_rng(seed)
    assignment = np.empty(n, dtype=np.int64)
    assignment[rng.permutation(n)] = np.arange(n) % num_clients
    return split_by_assignment(data, assignment)
