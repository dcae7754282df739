"""Attributed graphs made in code (no download), as :class:`torch_geometric.data.Data`.

* :func:`make_attributed_sbm`: an attributed stochastic block model whose edge homophily (share of
  edges inside a class), mean degree and feature signal (class "topic words" over a background
  rate, CiteSeer-like sparse binary bag-of-words) are set directly.
* :func:`networkx_to_data` / :func:`karate_club_data`: networkx graphs (including its bundled ones)
  with node labels taken from a node attribute.

Every ``Data`` here has ``x`` (float32, ``[n, d]``), ``edge_index`` (int64, ``[2, 2m]``: each
undirected edge stored in both directions, no self-loops, no duplicates) and ``y`` (int64, ``[n]``).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
import torch
from torch_geometric.data import Data

from icml25.core.validate import check_in_range, check_positive

__all__ = ["make_attributed_sbm", "networkx_to_data", "karate_club_data", "undirected_edge_index"]


def undirected_edge_index(pairs: np.ndarray | torch.Tensor, num_nodes: int) -> torch.Tensor:
    """``[2, m]`` node pairs -> ``[2, 2m']`` int64 edge index, symmetric, without loops or duplicates.

    Args:
        pairs: ``[2, m]`` integer node ids in ``[0, num_nodes)`` (any direction, repeats allowed).
        num_nodes: number of nodes.
    """
    check_positive("num_nodes", num_nodes, integer=True)
    p = torch.as_tensor(np.asarray(pairs), dtype=torch.long)
    if p.ndim != 2 or p.shape[0] != 2:
        raise ValueError(f"pairs must have shape [2, m], got {tuple(p.shape)}")
    if p.numel() and (int(p.min()) < 0 or int(p.max()) >= num_nodes):
        raise ValueError(
            f"pairs must hold node ids in [0, {num_nodes}), got range [{int(p.min())}, {int(p.max())}]"
        )
    p = p[:, p[0] != p[1]]
    lo, hi = torch.minimum(p[0], p[1]), torch.maximum(p[0], p[1])
    key = torch.unique(lo * num_nodes + hi)
    lo, hi = key // num_nodes, key % num_nodes
    return torch.stack([torch.cat([lo, hi]), torch.cat([hi, lo])])


def _block_pairs(rng: np.random.Generator, a: np.ndarray, b: np.ndarray | None, p: float) -> np.ndarray:
    """Independent Bernoulli(p) edges between node sets ``a`` and ``b`` (inside ``a`` if ``b`` is None)."""
    if b is None:
        total = len(a) * (len(a) - 1) // 2
        count = rng.binomial(total, min(p, 1.0)) if total else 0
        flat = rng.choice(total, size=count, replace=False) if count else np.zeros(0, dtype=np.int64)
        # decode the flat index of the strict upper triangle row by row
        rows = np.arange(len(a))
        starts = rows * (2 * len(a) - rows - 1) // 2
        i = np.searchsorted(starts, flat, side="right") - 1
        j = flat - starts[i] + i + 1
        return np.stack([a[i], a[j]])
    total = len(a) * len(b)
    count = rng.binomial(total, min(p, 1.0)) if total else 0
    flat = rng.choice(total, size=count, replace=False) if count else np.zeros(0, dtype=np.int64)
    return np.stack([a[flat // len(b)], b[flat % len(b)]])


def make_attributed_sbm(
    n: int = 3000,
    num_classes: int = 6,
    num_features: int = 500,
    *,
    avg_degree: float = 8.0,
    homophily: float = 0.75,
    topic_words: int = 40,
    p_topic: float = 0.08,
    p_background: float = 0.01,
    class_concentration: float | None = 5.0,
    communities_per_class: int = 1,
    community_share: float | None = None,
    seed: int = 0,
) -> Data:
    """An attributed stochastic block model with set homophily, degree and feature signal.

    Class sizes follow Dirichlet(``class_concentration``) proportions (equal sizes if None, every
    class at least 2 nodes). Edges are independent with probability ``p_in`` inside a class and
    ``p_out`` between classes, chosen so that the expected mean degree is ``avg_degree`` and the
    expected share of intra-class edges is ``homophily``. Features are binary "words": every word is
    on with probability ``p_background``; each class owns ``topic_words`` words (disjoint blocks,
    wrapping around if ``num_classes * topic_words > num_features``) that are on with ``p_topic``.

    With ``communities_per_class > 1`` every class is cut into that many near-equal planted
    communities, as in citation graphs, whose Louvain communities are smaller than their classes:
    a share ``community_share`` of the expected edges lies inside a community, ``homophily -
    community_share`` between two communities of the same class and ``1 - homophily`` between
    classes (each block with independent edges). With one community per class (the default) the
    graph is the class-level SBM above, draw for draw.

    Args:
        n: nodes; num_classes: classes (>= 2); num_features: feature dimension.
        avg_degree: expected mean degree (> 0). homophily: expected edge homophily in [0, 1].
        topic_words, p_topic, p_background: the feature signal (``p_topic`` = ``p_background`` makes
            features uninformative).
        class_concentration: Dirichlet concentration of the class proportions, or None for equal.
        communities_per_class: planted communities inside every class (>= 1).
        community_share: expected share of edges inside a community, in ``[0, homophily]``
            (default ``homophily``: no edges between two communities of one class).
        seed: seed of the generator (the global RNGs are not touched).

    Returns:
        ``Data(x [n, d] float32, edge_index [2, 2m] int64, y [n] int64)`` plus the realised
        ``homophily`` (float) as an attribute, and with ``communities_per_class > 1`` the planted
        ``community`` ``[n]`` int64 of every node (communities ``c * communities_per_class + j``).
    """
    check_positive("n", n, integer=True)
    check_positive("num_classes", num_classes, integer=True)
    check_positive("num_features", num_features, integer=True)
    check_positive("avg_degree", avg_degree)
    check_in_range("homophily", homophily, 0.0, 1.0)
    check_positive("topic_words", topic_words, integer=True)
    check_in_range("p_topic", p_topic, 0.0, 1.0)
    check_in_range("p_background", p_background, 0.0, 1.0)
    if num_classes < 2:
        raise ValueError(f"num_classes must be >= 2, got {num_classes}")
    check_positive("communities_per_class", communities_per_class, integer=True)
    share = homophily if community_share is None else community_share
    check_in_range("community_share", share, 0.0, homophily)
    floor = 2 * communities_per_class
    if n < floor * num_classes:
        raise ValueError(
            f"n must be at least 2 * num_classes * communities_per_class = {floor * num_classes}, got {n}"
        )
    if class_concentration is not None:
        check_positive("class_concentration", class_concentration)
    rng = np.random.default_rng(seed)

    if class_concentration is None:
        props = np.full(num_classes, 1.0 / num_classes)
    else:
        props = rng.dirichlet(np.full(num_classes, float(class_concentration)))
    sizes = np.maximum(floor, np.floor(props * n).astype(int))
    sizes[np.argmax(sizes)] += n - sizes.sum()
    if sizes.min() < floor:
        raise ValueError(f"class_concentration too small for n: a class got fewer than {floor} nodes")
    y = rng.permutation(np.repeat(np.arange(num_classes), sizes))
    members = [np.flatnonzero(y == c) for c in range(num_classes)]
    # planted communities: every class cut into near-equal parts (one part: the class itself)
    parts = [part for idx in members for part in np.array_split(idx, communities_per_class)]
    part_class = np.repeat(np.arange(num_classes), communities_per_class)

    pairs_part = float(sum(len(q) * (len(q) - 1) / 2 for q in parts))
    pairs_class = float(sum(s * (s - 1) / 2 for s in sizes)) - pairs_part
    pairs_out = n * (n - 1) / 2 - pairs_part - pairs_class
    edges = n * avg_degree / 2
    p_part = min(1.0, share * edges / max(pairs_part, 1.0))
    p_class = min(1.0, (homophily - share) * edges / max(pairs_class, 1.0))
    p_out = min(1.0, (1 - homophily) * edges / max(pairs_out, 1.0))
    blocks = []
    for a in range(len(parts)):
        blocks.append(_block_pairs(rng, parts[a], None, p_part))
        for b in range(a + 1, len(parts)):
            p = p_class if part_class[a] == part_class[b] else p_out
            blocks.append(_block_pairs(rng, parts[a], parts[b], p))
    edge_index = undirected_edge_index(np.concatenate(blocks, axis=1), n)

    x = rng.random((n, num_features)) < p_background
    for c in range(num_classes):
        words = (np.arange(topic_words) + c * topic_words) % num_features
        x[np.ix_(members[c], words)] |= rng.random((len(members[c]), topic_words)) < p_topic
    data = Data(
        x=torch.from_numpy(x.astype(np.float32)),
        edge_index=edge_index,
        y=torch.from_numpy(y.astype(np.int64)),
    )
    if communities_per_class > 1:
        community = np.empty(n, dtype=np.int64)
        for k, part in enumerate(parts):
            community[part] = k
        data.community = torch.from_numpy(community)
    src, dst = edge_index
    data.homophily = float((data.y[src] == data.y[dst]).float().mean()) if src.numel() else float("nan")
    return data


def networkx_to_data(graph: Any, *, label_attr: str | None = None, feature_attr: str | None = None) -> Data:
    """A networkx graph as ``Data``; nodes are numbered in ``graph.nodes`` order.

    Args:
        graph: a ``networkx.Graph`` (directed graphs are symmetrised).
        label_attr: node attribute holding the class (any hashable; mapped to 0..C-1 in sorted
            order of first appearance); None gives no ``y``.
        feature_attr: node attribute holding a feature vector; None gives one-hot node identity.
    """
    import networkx as nx

    if not isinstance(graph, nx.Graph):
        raise TypeError(f"graph must be a networkx.Graph, got {type(graph).__name__}")
    nodes = list(graph.nodes)
    if not nodes:
        raise ValueError("graph is empty (no nodes)")
    index = {v: i for i, v in enumerate(nodes)}
    pairs = np.array([[index[u], index[v]] for u, v in graph.edges], dtype=np.int64).reshape(-1, 2).T
    n = len(nodes)
    edge_index = undirected_edge_index(pairs, n)
    if feature_attr is None:
        x = torch.eye(n)
    else:
        try:
            x = torch.tensor(np.array([graph.nodes[v][feature_attr] for v in nodes], dtype=np.float32))
        except KeyError as err:
            raise ValueError(f"feature_attr {feature_attr!r} missing on node {err}") from err
        if x.ndim == 1:
            x = x[:, None]
    data = Data(x=x, edge_index=edge_index)
    if label_attr is not None:
        try:
            raw: list[Hashable] = [graph.nodes[v][label_attr] for v in nodes]
        except KeyError as err:
            raise ValueError(f"label_attr {label_attr!r} missing on node {err}") from err
        classes = {c: i for i, c in enumerate(dict.fromkeys(raw))}
        data.y = torch.tensor([classes[c] for c in raw], dtype=torch.long)
    return data


def karate_club_data() -> Data:
    """Zachary's karate club (networkx's bundled copy): 34 nodes, 2 classes (``club``), one-hot ``x``."""
    import networkx as nx

    return networkx_to_data(nx.karate_club_graph(), label_attr="club")
