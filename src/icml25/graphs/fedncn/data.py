"""A graph whose Louvain communities are smaller than its classes, as in citation graphs.

Used by the claim check of *Federated Node-Level Clustering Network with Cross-Subgraph Link
Mending* (FedNCN; ICML 2025, https://openreview.net/forum?id=38Nh0TebXZ).

FedTAD's Louvain split (:func:`icml25.graphs.louvain_partition`) deals whole Louvain communities
to clients. On real graphs (CiteSeer, PubMed, Amazon) Louvain finds dozens of communities, each
mostly one class, and every client receives several of them: clients are label-skewed but hold
several classes. On a plain class-level SBM (:func:`icml25.graphs.make_attributed_sbm`) Louvain
finds the classes themselves and every client holds one or two classes. This generator plants
``communities_per_class`` communities inside every class so that the split behaves as on the
paper's graphs.
"""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data

from icml25.core.validate import check_in_range, check_positive

__all__ = ["make_community_sbm"]


def _pairs(rng: np.random.Generator, a: np.ndarray, b: np.ndarray | None, p: float) -> np.ndarray:
    """Independent Bernoulli(p) pairs inside ``a`` (b None, i < j) or between ``a`` and ``b``."""
    if b is None:
        i, j = np.triu_indices(len(a), k=1)
        keep = rng.random(len(i)) < p
        return np.stack([a[i[keep]], a[j[keep]]])
    mask = rng.random((len(a), len(b))) < p
    i, j = np.nonzero(mask)
    return np.stack([a[i], b[j]])


def make_community_sbm(
    n: int = 1200,
    num_classes: int = 6,
    num_features: int = 300,
    *,
    communities_per_class: int = 4,
    avg_degree: float = 8.0,
    homophily: float = 0.75,
    community_share: float = 0.55,
    topic_words: int = 40,
    p_topic: float = 0.08,
    p_background: float = 0.01,
    class_concentration: float | None = 5.0,
    seed: int = 0,
) -> Data:
    """An attributed SBM with ``communities_per_class`` planted communities inside every class.

    Class sizes follow Dirichlet(``class_concentration``) proportions (equal if None); every class
    is cut into ``communities_per_class`` near-equal communities. Of the expected edges, a share
    ``community_share`` lies inside a community, ``homophily - community_share`` between two
    communities of the same class and ``1 - homophily`` between classes (edge homophily
    ``homophily``), each block with independent edges. Features are the class topics of
    :func:`icml25.graphs.make_attributed_sbm` (binary words on with ``p_background``; each class
    owns ``topic_words`` words on with ``p_topic``).

    Returns:
        ``Data(x [n, d] float32, edge_index [2, 2m] int64, y [n] int64)`` with ``community`` ``[n]``
        (the planted community of every node) and the realised ``homophily``.
    """
    check_positive("n", n, integer=True)
    check_positive("num_features", num_features, integer=True)
    check_positive("communities_per_class", communities_per_class, integer=True)
    check_positive("avg_degree", avg_degree)
    check_positive("topic_words", topic_words, integer=True)
    check_in_range("homophily", homophily, 0.0, 1.0)
    check_in_range("community_share", community_share, 0.0, homophily)
    check_in_range("p_topic", p_topic, 0.0, 1.0)
    check_in_range("p_background", p_background, 0.0, 1.0)
    if not isinstance(num_classes, int) or num_classes < 2:
        raise ValueError(f"num_classes must be an int >= 2, got {num_classes}")
    if n < 2 * num_classes * communities_per_class:
        raise ValueError(
            f"n must be at least 2 * num_classes * communities_per_class = "
            f"{2 * num_classes * communities_per_class}, got {n}"
        )
    rng = np.random.default_rng(seed)
    if class_concentration is None:
        props = np.full(num_classes, 1.0 / num_classes)
    else:
        check_positive("class_concentration", class_concentration)
        props = rng.dirichlet(np.full(num_classes, float(class_concentration)))
    floor = 2 * communities_per_class
    sizes = np.maximum(floor, np.floor(props * n).astype(int))
    sizes[np.argmax(sizes)] += n - sizes.sum()
    if sizes.min() < floor:
        raise ValueError("class_concentration too small for n: a class got too few nodes")
    y = rng.permutation(np.repeat(np.arange(num_classes), sizes))
    community = np.empty(n, dtype=np.int64)
    members = []
    for c in range(num_classes):
        idx = np.flatnonzero(y == c)
        for j, part in enumerate(np.array_split(idx, communities_per_class)):
            community[part] = c * communities_per_class + j
            members.append(part)
    com_class = np.repeat(np.arange(num_classes), communities_per_class)
    com_sizes = np.array([len(m) for m in members], dtype=float)
    pairs_com = float((com_sizes * (com_sizes - 1) / 2).sum())
    pairs_class = float(sum(s * (s - 1) / 2 for s in sizes)) - pairs_com
    pairs_out = n * (n - 1) / 2 - pairs_com - pairs_class
    edges = n * avg_degree / 2
    p_com = min(1.0, community_share * edges / max(pairs_com, 1.0))
    p_class = min(1.0, (homophily - community_share) * edges / max(pairs_class, 1.0))
    p_out = min(1.0, (1 - homophily) * edges / max(pairs_out, 1.0))
    blocks = []
    for a in range(len(members)):
        blocks.append(_pairs(rng, members[a], None, p_com))
        for b in range(a + 1, len(members)):
            p = p_class if com_class[a] == com_class[b] else p_out
            blocks.append(_pairs(rng, members[a], members[b], p))
    pairs = np.concatenate(blocks, axis=1)
    both = np.concatenate([pairs, pairs[::-1]], axis=1)
    edge_index = torch.from_numpy(np.unique(both, axis=1).astype(np.int64))

    x = rng.random((n, num_features)) < p_background
    for c in range(num_classes):
        rows = np.flatnonzero(y == c)
        words = (np.arange(topic_words) + c * topic_words) % num_features
        x[np.ix_(rows, words)] |= rng.random((len(rows), topic_words)) < p_topic
    data = Data(
        x=torch.from_numpy(x.astype(np.float32)),
        edge_index=edge_index,
        y=torch.from_numpy(y.astype(np.int64)),
    )
    data.community = torch.from_numpy(community)
    src, dst = edge_index
    data.homophily = float((data.y[src] == data.y[dst]).float().mean()) if src.numel() else float("nan")
    return data
