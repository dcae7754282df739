"""FedNCN-style federated node clustering with cross-subgraph link mending (ICML 2025).

Jingxin Liu, Renda Han, Wenxuan Tu, Haotian Wang, Junlong Wu, Jieren Cheng, *Federated Node-Level
Clustering Network with Cross-Subgraph Link Mending*, ICML 2025 (PMLR 267:38540-38556),
https://openreview.net/forum?id=38Nh0TebXZ. No official code exists; this is a reconstruction from
the paper's description (equations and Algorithms 1-3 as summarised from its full text), so we call
it FedNCN-style.

One attributed graph is split across clients (the split destroys the links between them) and no
labels exist. Each client trains a GNN and clusters with K-means, then uploads only noisy copies of
its most prototypical rows plus a one-layer denoiser. The server rebuilds those rows, mends links
(cosine edges inside each client's clusters, a cosine graph kernel between clusters of different
clients, N-Cut contribution pruning), trains a GNN generator with feature reconstruction + DEC on
the mended graph, and returns consensus prototypes and its GNN weights to initialise the clients.

Implements: the local model (``model.py``), representative selection, the denoiser, link mending
and the restored-link score (``mending.py``), FedNCN and the FedAvg / FedProx / local-only /
centralised arms on the same local model (``federated.py``); the claim check is ``check.py``.

    from icml25.graphs import make_attributed_sbm, louvain_partition, clustering_metrics
    from icml25.graphs.fedncn import FedNCNConfig, run_fedncn
    data = make_attributed_sbm(3000, 6, 500, homophily=0.75, seed=0)
    part = louvain_partition(data, 5, seed=0)
    run = run_fedncn(part, 6, FedNCNConfig(dims=(256, 256, 512, 10)), y=data.y, seed=0)
    clustering_metrics(data.y, run.labels)      # {"acc", "nmi", "ari", "f1"}
"""

from __future__ import annotations

from .federated import (
    ClusteringRun,
    FedNCNConfig,
    federated_moments,
    run_centralised,
    run_fedavg,
    run_fedncn,
    run_local,
    run_propagated_kmeans,
    standardize_features,
)
from .mending import (
    ClientSignals,
    MendedGraph,
    mend_links,
    restored_share,
    select_representatives,
    train_denoiser,
)
from .model import (
    GCNAutoencoder,
    LocalTrainConfig,
    kmeans,
    normalized_adjacency,
    student_t_assignment,
    target_distribution,
    train_local,
)

__all__ = [
    "ClientSignals",
    "ClusteringRun",
    "FedNCNConfig",
    "GCNAutoencoder",
    "LocalTrainConfig",
    "MendedGraph",
    "kmeans",
    "mend_links",
    "normalized_adjacency",
    "restored_share",
    "run_centralised",
    "run_fedavg",
    "run_fedncn",
    "run_local",
    "run_propagated_kmeans",
    "federated_moments",
    "standardize_features",
    "select_representatives",
    "student_t_assignment",
    "target_distribution",
    "train_denoiser",
    "train_local",
]
