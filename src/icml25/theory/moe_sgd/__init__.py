"""Mixture of Experts Provably Detect and Learn the Latent Cluster Structure in Gradient-Based Learning.

Kawata, Matsutani, Kinoshita, Nishikawa, Suzuki. ICML 2025. https://arxiv.org/abs/2506.01656
(no official code).

A regression task whose inputs come from C Gaussian clusters: inside cluster c the label is a
single-index function of a cluster direction ``w_c`` plus ``s_c g(w_g . x)`` with signs that sum
to zero, every link with information exponent ``k* > 2``. A single network trained by SGD sees the
pooled task, where the global term cancels at low order; a mixture of experts trained stage by
stage first finds the cluster directions, then routes clusters to consistent experts, then
learns each cluster's task, the global direction included, with ``~d^(k*-1)`` samples.

Implements, in the style of the paper (its architecture, router and schedule were not recovered):
the data model of Sec. 3 (``ClusteredSIMTask``), Hermite coefficients and the information
exponent (``hermite_coeffs``, ``information_exponent``), a vanilla two-layer network and a
mixture of two-layer experts with a softmax top-k router (``TwoLayerNet``, ``MoE``), online
spherical SGD on the correlation loss and the three-stage MoE schedule (``train_vanilla``,
``train_moe_stagewise``, with an oracle-router variant), and the overlap, routing and
sample-complexity measurements (``overlap_report``, ``loglog_slope``). Not implemented: the
theorems' step-size and width schedules, strong-recovery guarantees, the paper's figures' exact
settings.

Usage::

    task = ClusteredSIMTask(64, 2, rho=3.0, k_star=3, signs=(1, -1), noise=0.1, seed=0)
    rng = np.random.default_rng(0)
    moe = MoE(64, n_experts=4, neurons_per_group=4, rng=rng)
    log = train_moe_stagewise(moe, task, schedule=StageSchedule(60_000, 40_000, 150_000),
                              batch=64, lr=per_sample_lr(1.0, 64), rng=rng)
    overlap_report(moe, task, rng=rng).global_overlap          # ~1: w_g recovered
"""

from .hermite import HermiteLink, hermite_coeffs, information_exponent, normalized_hermite
from .measures import (
    OverlapReport,
    evaluate_mse,
    loglog_slope,
    overlap_report,
    overlaps,
    ridge_refit,
    router_alignment,
    routing_confusion,
    routing_purity,
)
from .models import Activation, MoE, TwoLayerNet, random_unit_rows
from .task import ClusteredSIMTask, TaskSample, hermite_correlation
from .train import (
    StageSchedule,
    TrainLog,
    correlation_step,
    oracle_assign,
    per_sample_lr,
    train_moe_stagewise,
    train_vanilla,
)

__all__ = [
    "Activation",
    "ClusteredSIMTask",
    "HermiteLink",
    "MoE",
    "OverlapReport",
    "StageSchedule",
    "TaskSample",
    "TrainLog",
    "TwoLayerNet",
    "correlation_step",
    "evaluate_mse",
    "hermite_coeffs",
    "hermite_correlation",
    "information_exponent",
    "loglog_slope",
    "normalized_hermite",
    "oracle_assign",
    "overlap_report",
    "overlaps",
    "per_sample_lr",
    "random_unit_rows",
    "ridge_refit",
    "router_alignment",
    "routing_confusion",
    "routing_purity",
    "train_moe_stagewise",
    "train_vanilla",
]
