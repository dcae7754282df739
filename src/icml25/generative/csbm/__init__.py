"""Categorical Schrödinger Bridge Matching (CSBM; Ksenofontov and Korotin, ICML 2025, arXiv 2502.01416).

Categorical reference processes (:mod:`.process`), exact tabular D-IMF and the static SB
(:mod:`.dimf`), the learned D3PM-style network and learned D-IMF (:mod:`.model`), the learned
continuous-space bridge used as the baseline (:mod:`.continuous`), and the toy / digits data and
metrics (:mod:`.data`).
"""

from .continuous import (
    ContinuousDIMFResult,
    DriftNet,
    reference_sigma,
    sample_sde,
    train_continuous_bm,
    train_continuous_dimf,
)
from .data import (
    dequantise,
    digits_pair,
    energy_distance,
    energy_item_scores,
    entropic_ot_translate,
    gaussian_to_swiss_roll,
    quantise,
    sb_conditional_2d,
    sb_conditional_loglik,
    sb_conditional_logliks,
)
from .dimf import DIMFTrace, coupling_kl, markovian_projection, sinkhorn_coupling, tabular_dimf
from .model import (
    DIMFConfig,
    DIMFResult,
    EndpointNet,
    LossWeights,
    NetConfig,
    csbm_loss,
    sample_chain,
    train_bridge_matching,
    train_dimf,
    train_markovian_projection,
)
from .process import CategoricalReference, ReferenceConfig, one_step_matrix

__all__ = [
    "ContinuousDIMFResult",
    "DriftNet",
    "reference_sigma",
    "sample_sde",
    "train_continuous_bm",
    "train_continuous_dimf",
    "energy_item_scores",
    "sb_conditional_logliks",
    "train_bridge_matching",
    "CategoricalReference",
    "ReferenceConfig",
    "one_step_matrix",
    "DIMFTrace",
    "coupling_kl",
    "markovian_projection",
    "sinkhorn_coupling",
    "tabular_dimf",
    "DIMFConfig",
    "DIMFResult",
    "EndpointNet",
    "LossWeights",
    "NetConfig",
    "csbm_loss",
    "sample_chain",
    "train_dimf",
    "train_markovian_projection",
    "dequantise",
    "digits_pair",
    "energy_distance",
    "entropic_ot_translate",
    "gaussian_to_swiss_roll",
    "quantise",
    "sb_conditional_2d",
    "sb_conditional_loglik",
]
