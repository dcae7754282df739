"""Noise-conditioned graph networks with Dynamic Message Passing (DMP).

Pao-Huang, Black, Qiu, *Geometric Generative Modeling with Noise-Conditioned Graph Networks*,
ICML 2025 (arXiv 2507.09391; official code https://github.com/peterpaohuang/ncgn).

A flow-matching generator of spatial graphs whose message-passing graph depends on the noise level:
at high noise the nodes are pooled into a few coarse voxel clusters joined by long-range kNN, and
as the sample becomes clean the resolution grows to one node per cluster with local kNN, keeping
the edge budget ``k N`` fixed (Sec. 4). The same network with a noise-independent graph (static
kNN, fully connected, random long-range edges) is the baseline.

Implements: the exp/linear/log/relu schedules of ``n(tau)`` and ``k(tau)`` (:mod:`.schedule`), voxel
coarsening and coarse kNN (:mod:`.graph`), the aggregate / coarse-conv / spread / gate layer
(:mod:`.model`), the Turing spatio-temporal generator, primitive point clouds and digit pixel
graphs (:mod:`.data`), W1 and Chamfer set metrics (:mod:`.metrics`). Flow matching itself is
:mod:`icml25.nn.flow_matching`. Not implemented: DDPM training, the DiT-DMP image transformer,
the conditional ST tasks' evaluation.
"""

from .data import (
    PRIMITIVES,
    STData,
    digit_pixel_graphs,
    minmax_per_time,
    primitive_point_clouds,
    standardise_per_node,
    turing_st_dataset,
)
from .graph import AdaptiveGraph, build_adaptive_graph, coarse_edge_lengths, knn_edges, voxel_cluster
from .metrics import (
    ChamferMetrics,
    chamfer_distances,
    chamfer_metrics,
    covariance_error,
    energy_distance,
    w1_flattened,
    w1_matched_costs,
)
from .model import NCGN, NCGNConfig, NCGNVelocity
from .schedule import (
    GraphSchedule,
    exp_schedule,
    linear_schedule,
    log_schedule,
    relu_schedule,
)

__all__ = [
    "PRIMITIVES",
    "STData",
    "digit_pixel_graphs",
    "minmax_per_time",
    "primitive_point_clouds",
    "standardise_per_node",
    "turing_st_dataset",
    "AdaptiveGraph",
    "build_adaptive_graph",
    "coarse_edge_lengths",
    "knn_edges",
    "voxel_cluster",
    "ChamferMetrics",
    "chamfer_distances",
    "chamfer_metrics",
    "w1_flattened",
    "w1_matched_costs",
    "energy_distance",
    "covariance_error",
    "NCGN",
    "NCGNConfig",
    "NCGNVelocity",
    "GraphSchedule",
    "exp_schedule",
    "linear_schedule",
    "log_schedule",
    "relu_schedule",
]
