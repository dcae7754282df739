"""SLOGAN: Sparse Causal Discovery with Generative Intervention for Unsupervised Graph Domain Adaptation
(ICML 2025).

Junyu Luo, Yuhao Tang, Yiwei Fu, Xiao Luo, Zhizhuo Kou, Zhiping Xiao, Wei Ju, Wentao Zhang, Ming Zhang;
https://arxiv.org/abs/2507.07621; no official code released.

Graph classifiers trained on a labelled source domain degrade on a shifted, unlabelled target domain.
SLOGAN splits a graph embedding into a causal latent (which alone feeds the classifier and is kept
informative of the label by a mutual-information bound) and a variational spurious latent (kept
uninformative of the label), reconstructs embeddings from the two with a generator and demands that
swapping in a target graph's spurious latent leaves a source embedding unchanged (generative
intervention), and self-trains on target pseudo-labels under category-adaptive thresholds. This is a
SLOGAN-style reconstruction from the paper's method description; the docstrings say which pieces are
proposals where the description is silent.

Implements: the model and losses (``model.py``), training of SLOGAN and of the ERM, DANN and
self-training baselines (``train.py``), and synthetic UGDA benchmarks with a known causal motif and a
controlled spurious base graph, plus the density split (``data.py``).

    from icml25.graphs.slogan import (SLOGAN, SloganConfig, N_FEATURES, make_spurious_motif_domains,
                                      train_uda, evaluate)
    source, target = make_spurious_motif_domains(seed=0)
    model = SLOGAN(SloganConfig(in_dim=N_FEATURES, n_classes=3))
    train_uda(model, source, target, "slogan")
    evaluate(model, target)["accuracy"]
"""

from __future__ import annotations

from .data import (
    BASE_TYPES,
    MOTIFS,
    N_FEATURES,
    MotifDomainConfig,
    density_split,
    edge_density,
    make_density_pool,
    make_motif_graph,
    make_spurious_motif_domains,
)
from .model import (
    SLOGAN,
    AdaptiveThreshold,
    DomainDiscriminator,
    GraphEncoder,
    SloganConfig,
    SloganOutput,
    covariance_gap,
    dv_bound,
    gaussian_kl,
    grad_reverse,
)
from .train import METHODS, UDAHistory, UDATrainConfig, augment, evaluate, predict_proba, train_uda

__all__ = [
    "BASE_TYPES",
    "METHODS",
    "MOTIFS",
    "N_FEATURES",
    "SLOGAN",
    "AdaptiveThreshold",
    "DomainDiscriminator",
    "GraphEncoder",
    "MotifDomainConfig",
    "SloganConfig",
    "SloganOutput",
    "UDAHistory",
    "UDATrainConfig",
    "augment",
    "covariance_gap",
    "density_split",
    "dv_bound",
    "edge_density",
    "evaluate",
    "gaussian_kl",
    "grad_reverse",
    "make_density_pool",
    "make_motif_graph",
    "make_spurious_motif_domains",
    "predict_proba",
    "train_uda",
]
