"""Emergence in non-neural models: grokking modular arithmetic via average gradient outer product.

Mallinar, Beaglehole, Zhu, Radhakrishnan, Pandit, Belkin. ICML 2025 (oral).
https://arxiv.org/abs/2407.20199 · official code https://github.com/nmallinar/rfm-grokking

Grokking (test accuracy jumping from chance to 100% long after the training data are fit) is not
specific to neural networks or gradient descent. A Recursive Feature Machine, which alternates an
exact ridgeless Mahalanobis-kernel regression with the update M ← AGOP^{1/2} of the fitted
predictor, groks modular arithmetic: training loss is zero throughout, test accuracy is flat for
~10 iterations and then jumps to 100%, while the learned features become block-circulant.
Circulant deviation and AGOP alignment reveal the hidden progress; kernels given random circulant
features generalize at once, and quadratic networks learn the same features (NFM ≈ sqrt(AGOP)).

Implements: Algorithm 1 (RFM with Gaussian and quadratic Mahalanobis kernels, centred AGOP,
s = 1/2), the modular-arithmetic data of Sec. 2, the progress measures of Sec. 3 (circulant
deviation with discrete-log reordering, AGOP alignment), random circulant features (Sec. 3,
Fig. 4), the enforced-circulant projection (App. F), and the two-layer quadratic network with its
closed-form AGOP and NFM (Sec. 4, App. D). Left out: Laplace/NTK kernels, polynomial and
multi-task data (App. G), AGOP regularisation (App. H), the FMA construction of Theorem 5.1.

Usage::

    ds = modular_dataset(p=61, op="add", train_frac=0.5, seed=0)
    rfm = RFM(GaussianMahalanobisKernel(2.5), iters=30, op="add")
    rfm.fit(ds.X_train, ds.Y_train, eval_sets={"test": (ds.X_test, ds.Y_test)})
    [r.test_acc for r in rfm.history_]
"""

from .agop import agop, kernel_agop, kernel_predictor_jacobian, psd_matrix_power
from .circulant import (
    block_circulant_matrix,
    enforce_circulant,
    hankel_from_column,
    random_circulant_features,
)
from .data import OPERATIONS, ModularDataset, modular_dataset, modular_pairs
from .kernels import (
    GaussianMahalanobisKernel,
    MahalanobisKernel,
    QuadraticMahalanobisKernel,
    mahalanobis_sq_distances,
)
from .measures import (
    agop_alignment,
    block_circulant_deviation,
    circulant_deviation,
    discrete_log_reorder,
    inverse_discrete_log_reorder,
    pearson_correlation,
    primitive_root,
)
from .network import MLPEpoch, MLPTrainResult, QuadraticMLP, nfm_agop_correlation, train_mlp
from .rfm import RFM, FitMetrics, RFMClassifier, RFMIteration, fit_metrics, solve_kernel_system

__all__ = [
    "RFMClassifier",
    "OPERATIONS",
    "RFM",
    "FitMetrics",
    "GaussianMahalanobisKernel",
    "MLPEpoch",
    "MLPTrainResult",
    "MahalanobisKernel",
    "ModularDataset",
    "QuadraticMLP",
    "QuadraticMahalanobisKernel",
    "RFMIteration",
    "agop",
    "agop_alignment",
    "block_circulant_deviation",
    "block_circulant_matrix",
    "circulant_deviation",
    "discrete_log_reorder",
    "enforce_circulant",
    "fit_metrics",
    "hankel_from_column",
    "inverse_discrete_log_reorder",
    "kernel_agop",
    "kernel_predictor_jacobian",
    "mahalanobis_sq_distances",
    "modular_dataset",
    "modular_pairs",
    "nfm_agop_correlation",
    "pearson_correlation",
    "primitive_root",
    "psd_matrix_power",
    "random_circulant_features",
    "solve_kernel_system",
    "train_mlp",
]
