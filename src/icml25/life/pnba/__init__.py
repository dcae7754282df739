"""PNBA: Neural Representational Consistency Emerges from Probabilistic Neural-Behavioral
Representation Alignment (ICML 2025).

Yu Zhu, Chunfeng Song, Wanli Ouyang, Shan Yu, Tiejun Huang; https://arxiv.org/abs/2505.04331;
official code https://github.com/zhuyu-cs/PNBA (PyTorch/mmcv, not a dependency).

Neural population activity and behaviour are encoded as Gaussians in one latent space and aligned by
probabilistic matching (product-of-Gaussians posterior, KL terms, a sigmoid matching loss on expected
distances) under generative constraints (both modalities reconstructed from the joint posterior and
across modalities). The neural encoder has no subject-specific input, so unseen subjects are encoded
zero-shot; the paper finds such latents preserved across animals and decodable without alignment.

Implements: the model, objective, its ablations and a supervised oracle (``model.py``; our neural
projector is permutation invariant over neurons, the official conv/max-pool style is an option), a
simulated multi-subject reaching data set whose neurons come from cell types shared across subjects
(``data.py``), training, the preserved-representation statistics, decoding R² and the PCA+CCA
baseline (``evaluation.py``), and the claim check (``check.py``).

    from icml25.life.pnba import PNBA, PNBAConfig, SyntheticPopulationConfig, make_multisubject_reaching
    data = make_multisubject_reaching(SyntheticPopulationConfig(seed=0))
    model = PNBA(PNBAConfig(n_recordings=len(data.train), max_neurons=160, T=40))
    train_pnba(model, data.train, TrainConfig(steps=600))
    mu, logvar = encode_recording(model, data.test[0])   # zero-shot: no subject id, any neuron order
"""

from __future__ import annotations

from .data import (
    MultiSubjectData,
    PaddedRecordings,
    Recording,
    SyntheticPopulationConfig,
    make_multisubject_reaching,
    pad_recordings,
)
from .evaluation import (
    TrainConfig,
    effective_rank,
    encode_recording,
    pca_cca_latents,
    preservation_stats,
    train_pnba,
    velocity_r2,
    velocity_r2_items,
)
from .model import (
    PNBA,
    BehaviorEncoder,
    GaussianHead,
    NeuralEncoder,
    NeuronSetProjector,
    PNBAConfig,
    PNBALoss,
    gaussian_kl,
    info_nce,
    poisson_nll,
    prob_match_loss,
    product_of_gaussians,
)

__all__ = [
    "PNBA",
    "BehaviorEncoder",
    "GaussianHead",
    "MultiSubjectData",
    "NeuralEncoder",
    "NeuronSetProjector",
    "PNBAConfig",
    "PNBALoss",
    "PaddedRecordings",
    "Recording",
    "SyntheticPopulationConfig",
    "TrainConfig",
    "effective_rank",
    "encode_recording",
    "gaussian_kl",
    "info_nce",
    "make_multisubject_reaching",
    "pad_recordings",
    "pca_cca_latents",
    "poisson_nll",
    "preservation_stats",
    "prob_match_loss",
    "product_of_gaussians",
    "train_pnba",
    "velocity_r2",
    "velocity_r2_items",
]
