"""Federated node clustering over client subgraphs: FedNCN and the arms it is compared with.

Paper: *Federated Node-Level Clustering Network with Cross-Subgraph Link Mending* (ICML 2025,
https://openreview.net/forum?id=38Nh0TebXZ).

All arms train the same local model (:class:`~.model.GCNAutoencoder` with reconstruction + DEC,
clustered by K-means) for the same number of rounds and local epochs; they differ in what is shared:

* :func:`run_fedncn` (Liu et al., ICML 2025, Algorithms 1-3): per round, every client trains
  locally, clusters with K-means (centres initialised from the server's consensus prototypes after
  round 0), uploads noisy representative rows ``R`` and its denoiser; the server rebuilds
  ``R_tilde``, mends links (:func:`~.mending.mend_links`), trains its GNN generator on ``G_psi`` with
  ``MSE + KL(P||Q)``, and sends back the consensus prototypes ``C_tilde`` and generator weights
  ``theta_gnn``, which initialise the clients' centres and GNNs. The clients never upload edges,
  embeddings or model weights.
* :func:`run_fedavg`: size-weighted FedAvg of the local model (McMahan et al., 2017) with averaged
  cluster centres (aligned once by K-means over all clients' centres); ``prox_mu > 0`` is FedProx
  (Li et al., 2020).
* :func:`run_local`: each client alone; its cluster ids are matched afterwards to global ids by the
  Hungarian method on raw-feature cluster centroids (an evaluation aid, not a federated method).
* :func:`run_centralised`: the model on the whole graph (no links lost), the upper reference.

Every runner returns a :class:`ClusteringRun` whose ``labels`` are global cluster ids of every node.
Simulated in one process: no communication, no privacy accounting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data

from icml25.core.validate import check_fields, check_in_range, check_positive
from icml25.graphs.partition import Partition

from .mending import (
    INTER_RULES,
    ClientSignals,
    mend_links,
    restored_share,
    select_representatives,
    train_denoiser,
)
from .model import INITS, GCNAutoencoder, LocalTrainConfig, kmeans, normalized_adjacency, train_local

__all__ = [
    "FedNCNConfig",
    "ClusteringRun",
    "run_fedncn",
    "run_fedavg",
    "run_local",
    "run_centralised",
    "run_propagated_kmeans",
    "federated_moments",
    "standardize_features",
]

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class FedNCNConfig:
    """Model, schedule and FedNCN's server settings (defaults: the paper's where it gives them).

    Args:
        dims: GNN widths (paper: 500-500-2000-10 on clients and server).
        rounds: communication rounds (paper: 20). local_epochs: local epochs per round (paper: 10).
        lr: Adam rate of the local model and the generator. gamma: DEC weight.
        share: the paper's ``k``, share of each cluster's nodes uploaded (paper: best 5-10%).
        noise_std: Gaussian corruption of the uploaded rows.
        denoiser_epochs, denoiser_lr: fitting the one-layer MLP denoiser.
        server_epochs: generator epochs per round.
        intra_k, inter_k, keep: link mending (see :func:`~.mending.mend_links`).
        cross_links: inter-cluster link mending on (False: the CLM-off ablation).
        share_prototypes: consensus prototypes sent back (False: the GKS-off ablation; the
            generator weights are still sent, clients run their own K-means).
        prox_mu: FedProx weight used by :func:`run_fedavg` when asked for FedProx.
        adj_weight: weight of a graph-autoencoder link loss in the local objective (0 = off, as in
            the paper's reconstruction + DEC objective).
        standardize: z-score the feature columns before training with the column mean and std of
            all nodes, which the clients obtain by summing per-client counts, sums and sums of
            squares (:func:`federated_moments`; True, our choice: on sparse bag-of-words rows the
            4-layer GCN autoencoder learns little in the paper's 200 epochs without it, see the
            README); False feeds the raw rows.
        warmup_rounds: the first rounds train the reconstruction only (no DEC term) and cluster
            with fresh k-means++ (no centres carried over), in every arm alike: DEC's usual
            autoencoder pre-training (Xie et al., 2016), which the paper does not describe (0: off).
        inter_rule, min_kernel: which (client, cluster) groups the server links across clients
            (see :func:`~.mending.mend_links`): ``"mutual"`` (default) links two groups only when
            each is the other's best-scoring group on that client and their kernel is at least
            ``min_kernel``; ``"best_per_client"`` links every group to its best group on every
            other client (this implementation's earlier rule).
        init: weight initialisation of every arm's local model and of FedNCN's generator (see
            :class:`~.model.GCNAutoencoder`): ``"glorot"`` (default, the GCN/DEC convention) or
            ``"torch"`` (PyTorch's ``nn.Linear`` default, this implementation's earlier behaviour).
    """

    dims: tuple[int, ...] = (500, 500, 2000, 10)
    rounds: int = 20
    local_epochs: int = 10
    lr: float = 1e-3
    gamma: float = 1.0
    share: float = 0.05
    noise_std: float = 0.3
    denoiser_epochs: int = 100
    denoiser_lr: float = 1e-2
    server_epochs: int = 10
    intra_k: int = 3
    inter_k: int = 1
    keep: float = 0.5
    cross_links: bool = True
    share_prototypes: bool = True
    prox_mu: float = 0.01
    adj_weight: float = 0.0
    standardize: bool = True
    warmup_rounds: int = 0
    inter_rule: str = "mutual"
    min_kernel: float = 0.0
    init: str = "glorot"

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=("rounds", "local_epochs", "denoiser_epochs", "server_epochs", "intra_k", "inter_k"),
            positive=("lr", "noise_std", "denoiser_lr"),
            non_negative=("gamma", "prox_mu", "warmup_rounds"),
        )
        if not isinstance(self.warmup_rounds, int) or self.warmup_rounds >= self.rounds:
            raise ValueError(
                f"FedNCNConfig.warmup_rounds must be an int below rounds={self.rounds}, "
                f"got {self.warmup_rounds}"
            )
        check_in_range("FedNCNConfig.share", self.share, 0.0, 1.0, low_open=True)
        check_in_range("FedNCNConfig.keep", self.keep, 0.0, 1.0, low_open=True)
        check_in_range("FedNCNConfig.min_kernel", self.min_kernel, -1.0, 1.0)
        if self.init not in INITS:
            raise ValueError(f"FedNCNConfig.init must be one of {INITS}, got {self.init!r}")
        if self.inter_rule not in INTER_RULES:
            raise ValueError(f"FedNCNConfig.inter_rule must be one of {INTER_RULES}, got {self.inter_rule!r}")
        if not self.dims:
            raise ValueError("FedNCNConfig.dims must hold at least one width")
        for i, w in enumerate(self.dims):
            check_positive(f"FedNCNConfig.dims[{i}]", w, integer=True)

    def local(self, **kw: float) -> LocalTrainConfig:
        """The :class:`LocalTrainConfig` of one local update; ``kw`` overrides its fields."""
        base = LocalTrainConfig(
            epochs=self.local_epochs, lr=self.lr, gamma=self.gamma, adj_weight=self.adj_weight
        )
        return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ClusteringRun:
    """Result of one run.

    Attributes:
        labels: ``[n]`` global cluster id of every node of the whole graph.
        history: per-round diagnostics (lists), e.g. FedNCN's ``link_precision``, ``restored_share``,
            ``cross_links``, ``server_nodes`` (those needing true labels only when ``y`` was given).
    """

    labels: np.ndarray
    history: dict[str, list[float]] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------- helpers


def _check_inputs(partition: Partition, num_clusters: int) -> None:
    if not isinstance(partition, Partition):
        raise TypeError(f"partition must be an icml25.graphs.Partition, got {type(partition).__name__}")
    check_positive("num_clusters", num_clusters, integer=True)
    for i, c in enumerate(partition.clients):
        if c.data.x is None:
            raise ValueError(f"partition.clients[{i}] has no node features x")
        if c.num_nodes < num_clusters:
            raise ValueError(
                f"partition.clients[{i}] has {c.num_nodes} nodes, fewer than num_clusters={num_clusters}"
            )


def standardize_features(x: Tensor, mean: Tensor | None = None, std: Tensor | None = None) -> Tensor:
    """Column z-scores ``(x - mean) / std`` (default: the rows' own statistics; constant columns -> 0)."""
    x = x.float()
    mean = x.mean(0) if mean is None else mean
    std = x.std(0, unbiased=False) if std is None else std
    return torch.where(std > 1e-8, (x - mean) / std.clamp_min(1e-8), torch.zeros_like(x))


def federated_moments(xs: list[Tensor]) -> tuple[Tensor, Tensor]:
    """Column mean and std of the union of the clients' rows from their summed statistics only.

    Each client sends ``(n_m, sum_i x_i, sum_i x_i^2)`` per column (secure-aggregation style): the
    union's moments, equal to those of the whole graph's feature matrix.
    """
    n = sum(len(x) for x in xs)
    s1 = torch.stack([x.float().sum(0) for x in xs]).sum(0)
    s2 = torch.stack([x.float().pow(2).sum(0) for x in xs]).sum(0)
    mean = s1 / n
    return mean, (s2 / n - mean.pow(2)).clamp_min(0.0).sqrt()


def _client_tensors(partition: Partition, config: FedNCNConfig) -> list[tuple[Tensor, Tensor, Tensor]]:
    xs = [c.data.x.float() for c in partition.clients]
    if config.standardize:
        mean, std = federated_moments(xs)
        xs = [standardize_features(x, mean, std) for x in xs]
    return [
        (x, normalized_adjacency(c.data.edge_index, c.num_nodes), c.data.edge_index)
        for x, c in zip(xs, partition.clients, strict=True)
    ]


def _embed(model: GCNAutoencoder, x: Tensor, adj: Tensor) -> Tensor:
    with torch.no_grad():
        return model.encode(x, adj)


def _match(own: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Permutation ``perm[own_id] = ref_id`` minimising centre distances (Hungarian)."""
    from scipy.optimize import linear_sum_assignment

    cost = ((own[:, None] - ref[None]) ** 2).sum(-1)
    rows, cols = linear_sum_assignment(cost)
    perm = np.arange(len(own))
    perm[rows] = cols
    return perm


def _align_by_features(partition: Partition, labels: list[np.ndarray], k: int, seed: int) -> np.ndarray:
    """Global labels from per-client ids: Hungarian match of raw-feature cluster centroids."""
    cents, weights = [], []
    for c, lab in zip(partition.clients, labels, strict=True):
        x = c.data.x.numpy()
        cents.append(np.stack([x[lab == j].mean(0) if (lab == j).any() else x.mean(0) for j in range(k)]))
        weights.append(np.bincount(lab, minlength=k).astype(float))
    from sklearn.cluster import KMeans

    stacked = np.concatenate(cents)
    ref = KMeans(k, n_init=10, random_state=seed).fit(stacked, sample_weight=np.concatenate(weights) + 1e-9)
    out = np.empty(partition.assignment.numel(), dtype=np.int64)
    for c, lab, cent in zip(partition.clients, labels, cents, strict=True):
        out[c.node_ids.numpy()] = _match(cent, ref.cluster_centers_)[lab]
    return out


def _scatter(partition: Partition, labels: list[np.ndarray]) -> np.ndarray:
    out = np.empty(partition.assignment.numel(), dtype=np.int64)
    for c, lab in zip(partition.clients, labels, strict=True):
        out[c.node_ids.numpy()] = lab
    return out


def _seeded_model(in_dim: int, dims: tuple[int, ...], seed: int, init: str = "glorot") -> GCNAutoencoder:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return GCNAutoencoder(in_dim, dims, init=init)


# ---------------------------------------------------------------------------------------------- arms


def run_centralised(
    data: Data, num_clusters: int, config: FedNCNConfig, *, seed: int = 0, progress: Progress | None = None
) -> ClusteringRun:
    """The local model on the whole graph for ``rounds x local_epochs`` epochs (K-means each round)."""
    if not isinstance(data, Data) or data.x is None:
        raise TypeError("data must be a torch_geometric Data with node features x")
    check_positive("num_clusters", num_clusters, integer=True)
    x = standardize_features(data.x) if config.standardize else data.x.float()
    adj = normalized_adjacency(data.edge_index, int(data.num_nodes))
    model = _seeded_model(x.shape[1], config.dims, seed, config.init)
    gen = torch.Generator().manual_seed(seed)
    centers: Tensor | None = None
    labels = np.zeros(len(x), dtype=np.int64)
    for r in range(config.rounds):
        if r < config.warmup_rounds:
            centers = None
        train_local(model, x, adj, config.local(), centers=centers, edge_index=data.edge_index, generator=gen)
        if r >= config.warmup_rounds - 1:  # before that the next round restarts from k-means++
            labels, c = kmeans(_embed(model, x, adj), num_clusters, init=centers, seed=seed)
            centers = torch.from_numpy(c)
        if progress:
            progress(r + 1, config.rounds)
    return ClusteringRun(labels)


def run_local(
    partition: Partition,
    num_clusters: int,
    config: FedNCNConfig,
    *,
    seed: int = 0,
    progress: Progress | None = None,
) -> ClusteringRun:
    """Each client trains and clusters alone; ids aligned afterwards by raw-feature centroids."""
    _check_inputs(partition, num_clusters)
    tensors = _client_tensors(partition, config)
    models = [_seeded_model(x.shape[1], config.dims, seed, config.init) for x, _, _ in tensors]
    gen = torch.Generator().manual_seed(seed)
    centers: list[Tensor | None] = [None] * len(tensors)
    labels = [np.zeros(len(x), dtype=np.int64) for x, _, _ in tensors]
    for r in range(config.rounds):
        for i, (model, (x, adj, ei)) in enumerate(zip(models, tensors, strict=True)):
            if r < config.warmup_rounds:
                centers[i] = None
            train_local(model, x, adj, config.local(), centers=centers[i], edge_index=ei, generator=gen)
            if r < config.warmup_rounds - 1:  # the next round restarts from k-means++
                continue
            labels[i], c = kmeans(_embed(model, x, adj), num_clusters, init=centers[i], seed=seed)
            centers[i] = torch.from_numpy(c)
        if progress:
            progress(r + 1, config.rounds)
    return ClusteringRun(_align_by_features(partition, labels, num_clusters, seed))


def run_fedavg(
    partition: Partition,
    num_clusters: int,
    config: FedNCNConfig,
    *,
    prox: bool = False,
    seed: int = 0,
    progress: Progress | None = None,
) -> ClusteringRun:
    """FedAvg (or FedProx with ``prox=True``, weight ``config.prox_mu``) of the local model and centres."""
    _check_inputs(partition, num_clusters)
    tensors = _client_tensors(partition, config)
    sizes = np.array([c.num_nodes for c in partition.clients], dtype=float)
    global_model = _seeded_model(tensors[0][0].shape[1], config.dims, seed, config.init)
    protos: Tensor | None = None
    local_cfg = config.local(prox_mu=config.prox_mu if prox else 0.0)
    gen = torch.Generator().manual_seed(seed)
    labels: list[np.ndarray] = []
    for r in range(config.rounds):
        warm = r < config.warmup_rounds
        states, cents, counts, labels = [], [], [], []
        for x, adj, ei in tensors:
            model = _seeded_model(x.shape[1], config.dims, seed, config.init)
            model.load_state_dict(global_model.state_dict())
            ref = [p.detach().clone() for p in global_model.parameters()]
            train_local(model, x, adj, local_cfg, centers=protos, reference=ref, edge_index=ei, generator=gen)
            states.append(model.state_dict())
            if warm:  # a warm-up round's clustering is discarded: skip its K-means
                continue
            lab, c = kmeans(_embed(model, x, adj), num_clusters, init=protos, seed=seed)
            cents.append(c)
            counts.append(np.bincount(lab, minlength=num_clusters).astype(float))
            labels.append(lab)
        w = sizes / sizes.sum()
        global_model.load_state_dict(
            {k: sum(wi * s[k] for wi, s in zip(w, states, strict=True)) for k in states[0]}
        )
        if warm:  # reconstruction only; ids are aligned after the warm-up
            if progress:
                progress(r + 1, config.rounds)
            continue
        if protos is None:  # align the clients' ids once: K-means over all clients' centres
            stacked = np.concatenate(cents)
            _, ref_c = kmeans(stacked, num_clusters, seed=seed)
            perms = [_match(c, ref_c) for c in cents]
            cents = [c[np.argsort(p)] for c, p in zip(cents, perms, strict=True)]
            counts = [cnt[np.argsort(p)] for cnt, p in zip(counts, perms, strict=True)]
            labels = [p[lab] for p, lab in zip(perms, labels, strict=True)]
        cw = np.stack(counts) + 1e-9
        protos = torch.from_numpy(
            ((np.stack(cents) * cw[:, :, None]).sum(0) / cw.sum(0)[:, None]).astype(np.float32)
        )
        if progress:
            progress(r + 1, config.rounds)
    return ClusteringRun(_scatter(partition, labels))


def run_fedncn(
    partition: Partition,
    num_clusters: int,
    config: FedNCNConfig,
    *,
    y: Tensor | None = None,
    seed: int = 0,
    progress: Progress | None = None,
) -> ClusteringRun:
    """FedNCN (Algorithms 1-3): signals of representative nodes, link mending, GNN generator.

    Args:
        partition: the client subgraphs (:mod:`icml25.graphs.partition`).
        num_clusters: ``K``.
        config: see :class:`FedNCNConfig`.
        y: optional ``[n]`` true classes, used only for the diagnostics ``link_precision`` (share of
            kept cross-client links joining same-class nodes) and its ``base_rate``.
        seed: model initialisation, noise and K-means seed.
    """
    _check_inputs(partition, num_clusters)
    tensors = _client_tensors(partition, config)
    in_dim = tensors[0][0].shape[1]
    k = num_clusters
    server = _seeded_model(in_dim, config.dims, seed + 1, config.init)
    theta: dict[str, Tensor] | None = None
    protos: Tensor | None = None
    gen = torch.Generator().manual_seed(seed)
    client_models = [_seeded_model(in_dim, config.dims, seed, config.init) for _ in tensors]
    history: dict[str, list[float]] = {
        "cross_links": [],
        "candidate_links": [],
        "server_nodes": [],
        "restored_share": [],
        "denoise_mse": [],
    }
    if y is not None:
        history["link_precision"] = []
        history["candidate_precision"] = []
        history["base_rate"] = []
    labels: list[np.ndarray] = []
    aligned = False
    for r in range(config.rounds):
        # ---- clients (Algorithm 1)
        labels, uploads = [], []
        warm = r < config.warmup_rounds
        aligned = not warm and protos is not None and config.share_prototypes
        for model, (x, adj, ei), cl in zip(client_models, tensors, partition.clients, strict=True):
            if theta is not None:
                model.load_state_dict(theta)  # GNN initialised from theta_gnn
            if warm:
                centers: Tensor | None = None
            elif protos is not None and config.share_prototypes:
                centers = protos
            elif r > 0:
                centers = torch.from_numpy(kmeans(_embed(model, x, adj), k, seed=seed)[1])
            else:
                centers = None
            train_local(model, x, adj, config.local(), centers=centers, edge_index=ei, generator=gen)
            z = _embed(model, x, adj)
            lab, c = kmeans(z, k, init=centers, seed=seed)
            labels.append(lab)
            reps = select_representatives(z, lab, torch.from_numpy(c), config.share)
            denoiser, noisy = train_denoiser(
                x[reps], noise_std=config.noise_std, epochs=config.denoiser_epochs, lr=config.denoiser_lr,
                generator=gen,
            )  # fmt: skip
            uploads.append((denoiser, noisy, torch.from_numpy(lab[reps.numpy()]), cl.node_ids[reps], x[reps]))
        # ---- server (Algorithm 2): rebuild, mend, train the generator
        signals = []
        mse = []
        for denoiser, noisy, cluster, ids, clean in uploads:
            with torch.no_grad():
                rebuilt = denoiser(noisy)  # R_tilde = MLP(R; theta_mlp)
            mse.append(float((rebuilt - clean).pow(2).mean()))
            signals.append(ClientSignals(rebuilt, cluster, ids))
        graph = mend_links(
            signals, k, intra_k=config.intra_k, inter_k=config.inter_k, keep=config.keep,
            cross_links=config.cross_links, inter_rule=config.inter_rule, min_kernel=config.min_kernel,
        )  # fmt: skip
        s_adj = normalized_adjacency(graph.edge_index, len(graph.x), graph.edge_weight)
        if theta is not None:
            server.load_state_dict(theta)
        s_centers = None if warm else protos
        if s_centers is None and not warm and len(graph.x) >= k:
            s_centers = torch.from_numpy(kmeans(_embed(server, graph.x, s_adj), k, seed=seed)[1])
        train_local(
            server,
            graph.x,
            s_adj,
            dataclasses.replace(config.local(), epochs=config.server_epochs),
            centers=s_centers,
            edge_index=graph.edge_index,
            generator=gen,
        )
        if len(graph.x) >= k:
            _, c = kmeans(_embed(server, graph.x, s_adj), k, init=s_centers, seed=seed)
            protos = torch.from_numpy(c)  # consensus prototypes C_tilde
        theta = {name: t.detach().clone() for name, t in server.state_dict().items()}
        # ---- diagnostics
        node_group = torch.from_numpy(_scatter(partition, labels)) + partition.assignment * k
        history["cross_links"].append(float(graph.cross_edges.shape[1]))
        history["candidate_links"].append(float(graph.candidate_edges.shape[1]))
        history["server_nodes"].append(float(len(graph.x)))
        history["restored_share"].append(
            restored_share(partition.dropped_edges, node_group, graph.group_links)
        )
        history["denoise_mse"].append(float(np.mean(mse)))
        if y is not None:
            yy = y[graph.node_ids]
            for key, e in (
                ("link_precision", graph.cross_edges),
                ("candidate_precision", graph.candidate_edges),
            ):
                history[key].append(
                    float((yy[e[0]] == yy[e[1]]).float().mean()) if e.numel() else float("nan")
                )
            cnt = torch.bincount(yy).float()
            history["base_rate"].append(float(((cnt / cnt.sum()) ** 2).sum()))
        if progress:
            progress(r + 1, config.rounds)
    if aligned:  # K-means started from the shared prototypes: ids are already global
        return ClusteringRun(_scatter(partition, labels), history)
    return ClusteringRun(_align_by_features(partition, labels, k, seed), history)


def run_propagated_kmeans(
    source: Data | Partition, num_clusters: int, *, hops: int = 2, seed: int = 0
) -> ClusteringRun:
    """No training: K-means on ``A_hat^hops X`` (SGC-style propagated raw features).

    On a whole graph (``Data``) this is what the graph and features give without any learning, a
    positive control for the local model. On a :class:`Partition` every client propagates over its
    own edges and clusters alone; ids are matched afterwards like :func:`run_local` (the floor a
    federated arm must beat to have learned anything from federation or training).
    """
    check_positive("hops", hops, integer=True)

    def propagate(x: Tensor, edge_index: Tensor, n: int) -> Tensor:
        adj = normalized_adjacency(edge_index, n)
        h = x.float()
        for _ in range(hops):
            h = torch.sparse.mm(adj, h)
        return h

    if isinstance(source, Data):
        if source.x is None:
            raise TypeError("data must be a torch_geometric Data with node features x")
        check_positive("num_clusters", num_clusters, integer=True)
        h = propagate(source.x, source.edge_index, int(source.num_nodes))
        return ClusteringRun(kmeans(h, num_clusters, seed=seed)[0])
    _check_inputs(source, num_clusters)
    labels = [
        kmeans(propagate(c.data.x, c.data.edge_index, c.num_nodes), num_clusters, seed=seed)[0]
        for c in source.clients
    ]
    return ClusteringRun(_align_by_features(source, labels, num_clusters, seed))
