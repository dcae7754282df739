"""FedNCN's clustering signals and the server's cross-subgraph link mending.

Paper: *Federated Node-Level Clustering Network with Cross-Subgraph Link Mending* (ICML 2025,
https://openreview.net/forum?id=38Nh0TebXZ).

Client side (Liu et al., ICML 2025, Sec. 3 "local model learning"): in every K-means cluster the
``k`` share of nodes closest to the prototype under ``f_d(z_i, c_j) = ||z_i - c_j||^2`` forms the
sample matrix ``B`` (:func:`select_representatives`); ``R = B + Gaussian noise`` is uploaded with a
one-layer MLP denoiser trained to map ``R -> B`` with ``L_mlp = ||B - MLP(R)||^2 / (n k O)``
(:func:`train_denoiser`). The server rebuilds ``R_tilde = MLP(R)``.

Server side (Sec. 3 "link mending"; :func:`mend_links`):
1. intra-cluster mending: inside each (client, cluster) group, each node is linked to its
   ``intra_k`` most cosine-similar group members;
2. inter-cluster mending: a graph kernel ``s_ij = GK(G_i, G_j)`` scores pairs of groups from
   different clients; the default, as in the paper, is the cosine kernel (here: cosine of the groups'
   mean rows); only high-affinity pairs are linked: by default two groups that are each other's
   best-scoring group on the other's client (mutual best match, optionally above a kernel floor);
   node links between two linked groups join each node to its ``inter_k`` most cosine-similar
   nodes there;
3. improved N-Cut refinement: each added cross-client edge gets the contribution
   ``Con(a_ij) = a_ij / assoc(V_1, V) + a_ij / assoc(V_2, V)`` (``assoc`` = total edge weight at a
   group's nodes); only the top ``keep`` share by contribution is kept, giving ``G_psi``.

Which rows ``B`` holds is our reading: raw feature rows of the representative nodes (the server's
generator shares the clients' GNN architecture and sends its weights back, so its input must be the
clients' feature space). The kernel-level details (mean pooling, the mutual-best-match rule, ``intra_k``,
``inter_k``, ``keep``) are our choices; the paper fixes only the formulas above.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from icml25.core.validate import check_finite_tensor, check_in_range, check_positive

__all__ = [
    "INTER_RULES",
    "ClientSignals",
    "MendedGraph",
    "select_representatives",
    "train_denoiser",
    "mend_links",
    "restored_share",
]


INTER_RULES = ("mutual", "best_per_client")


def select_representatives(z: Tensor, labels: Tensor | np.ndarray, centers: Tensor, share: float) -> Tensor:
    """Indices of the ``share`` of each cluster's nodes nearest its centre (>= 1 per non-empty cluster).

    Args:
        z: ``[n, d']`` embeddings; labels: ``[n]`` cluster ids in ``[0, K)``; centers: ``[K, d']``.
        share: the paper's ``k`` as a fraction in (0, 1].

    Returns:
        ``[n_rep]`` int64 indices, grouped by cluster, nearest first.
    """
    check_finite_tensor("z", z, ndim=2, floating=True)
    check_in_range("share", share, 0.0, 1.0, low_open=True)
    lab = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    if lab.shape != (z.shape[0],):
        raise ValueError(f"labels must have shape [{z.shape[0]}], got {tuple(lab.shape)}")
    if centers.ndim != 2 or centers.shape[1] != z.shape[1]:
        raise ValueError(f"centers must have shape [K, {z.shape[1]}], got {tuple(centers.shape)}")
    out = []
    for c in range(centers.shape[0]):
        members = torch.nonzero(lab == c).flatten()
        if members.numel() == 0:
            continue
        d2 = (z[members] - centers[c]).pow(2).sum(1)  # f_d(z_i, c_j)
        take = max(1, int(np.ceil(share * members.numel())))
        out.append(members[torch.argsort(d2)[:take]])
    return torch.cat(out) if out else torch.zeros(0, dtype=torch.long)


def train_denoiser(
    b: Tensor,
    *,
    noise_std: float,
    epochs: int = 100,
    lr: float = 1e-2,
    generator: torch.Generator | None = None,
) -> tuple[nn.Linear, Tensor]:
    """Corrupt ``B`` with Gaussian noise and fit the one-layer MLP denoiser ``R -> B``.

    Args:
        b: ``[n_rep, d]`` representative rows.
        noise_std: standard deviation of the Gaussian corruption (> 0).
        epochs, lr: full-batch Adam steps and rate for ``L_mlp = ||B - MLP(R)||^2 / (n k O)`` (a mean).
        generator: randomness of the noise and of the layer's initialisation.

    Returns:
        The denoiser (``nn.Linear(d, d)``) and the uploaded noisy rows ``R`` (``[n_rep, d]``).
    """
    check_finite_tensor("b", b, ndim=2, floating=True)
    check_positive("noise_std", noise_std)
    check_positive("epochs", epochs, integer=True)
    check_positive("lr", lr)
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    r = b + noise_std * torch.randn(b.shape, generator=g)
    mlp = nn.Linear(b.shape[1], b.shape[1])
    with torch.no_grad():
        bound = 1 / np.sqrt(b.shape[1])
        mlp.weight.uniform_(-bound, bound, generator=g)
        mlp.bias.uniform_(-bound, bound, generator=g)
    opt = torch.optim.Adam(mlp.parameters(), lr=lr)
    for _ in range(epochs):
        opt.zero_grad()
        loss = (mlp(r) - b).pow(2).mean()
        loss.backward()
        opt.step()
    return mlp, r.detach()


@dataclass(frozen=True)
class ClientSignals:
    """What the server holds for one client after rebuilding: ``R_tilde`` rows and their groups.

    Attributes:
        rows: ``[n_rep, d]`` rebuilt rows ``R_tilde = MLP(R)``.
        cluster: ``[n_rep]`` int64 local cluster id of each row (in ``[0, K)``).
        node_ids: ``[n_rep]`` int64 pseudonymous ids (here: global node ids, used only for scoring).
    """

    rows: Tensor
    cluster: Tensor
    node_ids: Tensor


@dataclass(frozen=True)
class MendedGraph:
    """The server graph ``G_psi`` on all uploaded rows (stacked in client order).

    Attributes:
        x: ``[N_o, d]`` rows ``R_tilde``.
        edge_index: ``[2, E]`` symmetric, server-local ids. edge_weight: ``[E]`` cosine affinities.
        client, group: ``[N_o]`` client and (client, cluster) group id of each row.
        node_ids: ``[N_o]`` global ids of the rows.
        cross_edges: ``[2, E_x]`` the kept cross-client links (server-local ids, one direction).
        candidate_edges: ``[2, E_c]`` all cross-client candidates before N-Cut pruning.
        group_links: ``[2, G_l]`` linked (group, group) pairs after pruning (groups joined by a kept edge).
    """

    x: Tensor
    edge_index: Tensor
    edge_weight: Tensor
    client: Tensor
    group: Tensor
    node_ids: Tensor
    cross_edges: Tensor
    candidate_edges: Tensor
    group_links: Tensor
    num_clusters: int


def _topk_cos(a: Tensor, b: Tensor, k: int, *, same: bool) -> tuple[Tensor, Tensor, Tensor]:
    """Each row of ``a`` to its ``k`` most cosine-similar rows of ``b``: (rows, cols, similarity)."""
    sim = F.normalize(a, dim=1) @ F.normalize(b, dim=1).T
    if same:
        sim.fill_diagonal_(-2.0)
    k = min(k, b.shape[0] - (1 if same else 0))
    if k <= 0:
        empty = torch.zeros(0, dtype=torch.long)
        return empty, empty, torch.zeros(0)
    val, col = sim.topk(k, dim=1)
    row = torch.arange(a.shape[0]).repeat_interleave(k)
    return row, col.flatten(), val.flatten()


def _symmetric(src: Tensor, dst: Tensor, w: Tensor, n: int) -> tuple[Tensor, Tensor, Tensor]:
    """Both directions of every pair, duplicates merged (largest weight kept)."""
    s, d, ww = torch.cat([src, dst]), torch.cat([dst, src]), torch.cat([w, w])
    key, inv = torch.unique(s * n + d, return_inverse=True)
    weight = torch.zeros(key.numel()).scatter_reduce(0, inv, ww, reduce="amax", include_self=False)
    return key // n, key % n, weight


def mend_links(
    signals: Sequence[ClientSignals],
    num_clusters: int,
    *,
    intra_k: int = 3,
    inter_k: int = 1,
    keep: float = 0.5,
    cross_links: bool = True,
    inter_rule: str = "mutual",
    min_kernel: float = 0.0,
) -> MendedGraph:
    """Intra-cluster cosine edges, kernel-linked groups across clients, N-Cut contribution pruning.

    Args:
        signals: one :class:`ClientSignals` per client.
        num_clusters: ``K`` (group id = ``client * K + cluster``).
        intra_k: cosine neighbours per node inside its group.
        inter_k: cosine neighbours per node in each linked group of another client.
        keep: share of cross-client candidates kept by contribution (1 keeps all: no N-Cut pruning).
        cross_links: False drops inter-cluster mending (the "no link mending" ablation).
        inter_rule: which group pairs of different clients are linked. ``"mutual"`` (default): two
            groups whose kernel is at least ``min_kernel`` and each of which is the other's
            best-scoring group on the other's client (the paper links "high-affinity" subgraphs;
            a group with no such partner is left unlinked). ``"best_per_client"``: every group to
            its best group on every other client, whatever the score (this implementation's earlier
            rule; with label-skewed clients most such pairs join different classes).
        min_kernel: the kernel floor of ``"mutual"`` (cosine of the groups' mean rows, in [-1, 1]).
    """
    if not signals:
        raise ValueError("signals must hold at least one client")
    check_positive("num_clusters", num_clusters, integer=True)
    check_positive("intra_k", intra_k, integer=True)
    check_positive("inter_k", inter_k, integer=True)
    check_in_range("keep", keep, 0.0, 1.0, low_open=True)
    check_in_range("min_kernel", min_kernel, -1.0, 1.0)
    if inter_rule not in INTER_RULES:
        raise ValueError(f"inter_rule must be one of {INTER_RULES}, got {inter_rule!r}")
    for i, s in enumerate(signals):
        check_finite_tensor(f"signals[{i}].rows", s.rows, ndim=2, floating=True)
        if s.cluster.shape != (s.rows.shape[0],) or s.node_ids.shape != (s.rows.shape[0],):
            raise ValueError(f"signals[{i}]: cluster and node_ids must have shape [{s.rows.shape[0]}]")
    x = torch.cat([s.rows for s in signals])
    client = torch.cat([torch.full((len(s.rows),), i, dtype=torch.long) for i, s in enumerate(signals)])
    group = client * num_clusters + torch.cat([s.cluster.long() for s in signals])
    node_ids = torch.cat([s.node_ids.long() for s in signals])

    # 1. intra-cluster mending: cosine kNN inside each (client, cluster) group
    src, dst, w = [], [], []
    members = {int(g): torch.nonzero(group == g).flatten() for g in torch.unique(group)}
    for idx in members.values():
        r, c, v = _topk_cos(x[idx], x[idx], intra_k, same=True)
        src.append(idx[r])
        dst.append(idx[c])
        w.append(v.clamp_min(0.0))
    intra = _symmetric(torch.cat(src), torch.cat(dst), torch.cat(w), len(x))

    # 2. inter-cluster mending: cosine kernel between groups, best group on every other client
    cand_src, cand_dst, cand_w = (
        [torch.zeros(0, dtype=torch.long)],
        [torch.zeros(0, dtype=torch.long)],
        [torch.zeros(0)],
    )
    gids = sorted(members)
    if cross_links and len(signals) > 1:
        pooled = F.normalize(torch.stack([x[members[g]].mean(0) for g in gids]), dim=1)
        kernel = pooled @ pooled.T  # s_ij = GK(G_i, G_j), cosine kernel
        g_client = torch.tensor([g // num_clusters for g in gids])
        best: dict[tuple[int, int], int] = {}  # (group, other client) -> its best group there
        for a in range(len(gids)):
            for m in range(len(signals)):
                if m == int(g_client[a]):
                    continue
                others = torch.nonzero(g_client == m).flatten()
                if others.numel():
                    best[a, m] = int(others[kernel[a, others].argmax()])
        pairs = set()
        for (a, _m), b in best.items():
            mutual = best.get((b, int(g_client[a]))) == a and float(kernel[a, b]) >= min_kernel
            if inter_rule == "best_per_client" or mutual:
                pairs.add((min(a, b), max(a, b)))
        for a, b in sorted(pairs):
            ia, ib = members[gids[a]], members[gids[b]]
            for p, q in ((ia, ib), (ib, ia)):
                r, c, v = _topk_cos(x[p], x[q], inter_k, same=False)
                cand_src.append(p[r])
                cand_dst.append(q[c])
                cand_w.append(v.clamp_min(0.0))
    cs, cd, cw = torch.cat(cand_src), torch.cat(cand_dst), torch.cat(cand_w)
    if cs.numel():  # one direction per undirected candidate
        lo, hi = torch.minimum(cs, cd), torch.maximum(cs, cd)
        key, inv = torch.unique(lo * len(x) + hi, return_inverse=True)
        wmax = torch.zeros(key.numel()).scatter_reduce(0, inv, cw, reduce="amax", include_self=False)
        cs, cd, cw = key // len(x), key % len(x), wmax
    candidates = torch.stack([cs, cd])

    # 3. improved N-Cut refinement: Con(a_ij) = a_ij / assoc(V_1, V) + a_ij / assoc(V_2, V)
    if cs.numel():
        n_groups = int(group.max()) + 1
        assoc = torch.zeros(n_groups)
        # assoc(V_g, V): weight of the unpruned graph's edges at the group's nodes (each edge at both ends)
        for end, w_ in ((intra[0], intra[2]), (cs, cw), (cd, cw)):
            assoc.index_add_(0, group[end], w_)
        assoc = assoc.clamp_min(1e-12)
        con = cw / assoc[group[cs]] + cw / assoc[group[cd]]
        n_keep = max(1, int(round(keep * cs.numel())))
        top = torch.argsort(con, descending=True)[:n_keep]
        top = torch.sort(top).values
        cs, cd, cw = cs[top], cd[top], cw[top]
    cross = torch.stack([cs, cd])
    links = (
        torch.unique(
            torch.stack([torch.minimum(group[cs], group[cd]), torch.maximum(group[cs], group[cd])]), dim=1
        )
        if cs.numel()
        else torch.zeros(2, 0, dtype=torch.long)
    )

    a_src, a_dst, weight = _symmetric(
        torch.cat([intra[0], cs]), torch.cat([intra[1], cd]), torch.cat([intra[2], cw]), len(x)
    )
    edge_index = torch.stack([a_src, a_dst])
    return MendedGraph(
        x=x,
        edge_index=edge_index,
        edge_weight=weight,
        client=client,
        group=group,
        node_ids=node_ids,
        cross_edges=cross,
        candidate_edges=candidates,
        group_links=links,
        num_clusters=num_clusters,
    )


def restored_share(dropped_edges: Tensor, node_group: Tensor, group_links: Tensor) -> float:
    """Share of destroyed links whose endpoint groups the mended graph links.

    A destroyed link ``(u, v)`` counts as restored when the server graph holds a cross-client link
    between ``u``'s (client, cluster) group and ``v``'s. Groups of all nodes come from the clients'
    cluster assignments, so every destroyed link is scored, not only those between uploaded rows.

    Args:
        dropped_edges: ``[2, m_drop]`` global ids (:attr:`icml25.graphs.Partition.dropped_edges`).
        node_group: ``[n]`` group id ``client * K + cluster`` of every global node.
        group_links: ``[2, G_l]`` linked group pairs (:attr:`MendedGraph.group_links`).
    """
    if dropped_edges.ndim != 2 or dropped_edges.shape[0] != 2:
        raise ValueError(f"dropped_edges must have shape [2, m], got {tuple(dropped_edges.shape)}")
    if dropped_edges.shape[1] == 0:
        return float("nan")
    if group_links.numel() == 0:
        return 0.0
    gu, gv = node_group[dropped_edges[0]], node_group[dropped_edges[1]]
    n_groups = int(max(int(node_group.max()), int(group_links.max()))) + 1
    linked = torch.zeros(n_groups, n_groups, dtype=torch.bool)
    linked[group_links[0], group_links[1]] = True
    linked[group_links[1], group_links[0]] = True
    return float(linked[gu, gv].float().mean())
