"""Regularised continual robust training (Dai, Cianfarani, Bhagoji, Sehwag, Mittal; ICML 2025;
arXiv 2502.04248).

Threat models as composable modules (l_inf and l_2 PGD, a per-pixel flow, a monotone intensity map,
a held-out affine warp), a gradient-free random-search attack, adversarial training and continual
fine-tuning on newly arrived attacks, the adversarial logit-distance regulariser (ALR) and a
uniform-noise one (UR), and union/average robust accuracy.
"""

from .attacks import (
    L2PGD,
    AffineWarp,
    LinfPGD,
    NoAttack,
    ReColor1D,
    SpatialFlow,
    ThreatModel,
    attack,
    square_attack,
)
from .data import SmallCNN, load_digits_tensors
from .regularizers import AdversarialLogitReg, UniformNoiseReg, logit_distance
from .training import (
    AttackSampler,
    PassCounter,
    StageConfig,
    average_accuracy,
    calibrate_eps,
    continual_robust_training,
    robust_eval,
    train_stage,
    union_accuracy,
)

__all__ = [
    "AdversarialLogitReg",
    "AffineWarp",
    "AttackSampler",
    "L2PGD",
    "LinfPGD",
    "NoAttack",
    "PassCounter",
    "ReColor1D",
    "SmallCNN",
    "SpatialFlow",
    "StageConfig",
    "ThreatModel",
    "UniformNoiseReg",
    "attack",
    "average_accuracy",
    "calibrate_eps",
    "continual_robust_training",
    "load_digits_tensors",
    "logit_distance",
    "robust_eval",
    "square_attack",
    "train_stage",
    "union_accuracy",
]
