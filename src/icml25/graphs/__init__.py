"""Papers of the `graphs` domain (one subpackage per paper) and their shared substrate.

The substrate needs no download: attributed stochastic block models and networkx graphs as
``torch_geometric.data.Data`` (:mod:`.generators`), client partitions for subgraph-federated learning
with the destroyed links listed (:mod:`.partition`), clustering metrics (:mod:`.metrics`), and readers
for a user's local copy of Planetoid (CiteSeer, PubMed) and Amazon files (:mod:`.loaders`).
"""

from __future__ import annotations

from .generators import karate_club_data, make_attributed_sbm, networkx_to_data, undirected_edge_index
from .loaders import load_amazon_npz, load_planetoid
from .metrics import cluster_accuracy, clustering_metrics, edge_homophily, hungarian_match
from .partition import (
    ClientSubgraph,
    Partition,
    louvain_partition,
    metis_style_partition,
    random_partition,
    split_by_assignment,
)

__all__ = [
    "ClientSubgraph",
    "Partition",
    "cluster_accuracy",
    "clustering_metrics",
    "edge_homophily",
    "hungarian_match",
    "karate_club_data",
    "load_amazon_npz",
    "load_planetoid",
    "louvain_partition",
    "make_attributed_sbm",
    "metis_style_partition",
    "networkx_to_data",
    "random_partition",
    "split_by_assignment",
    "undirected_edge_index",
]
