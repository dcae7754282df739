"""Causal Effect Identification in lvLiNGAM from Higher-Order Cumulants.

Tramontano, Kivva, Salehkaleybar, Drton, Kiyavash. ICML 2025.
https://arxiv.org/abs/2506.05202 · official code https://github.com/danieletramontano/CEId-from-Moments

In linear non-Gaussian structural equation models with hidden confounders (lvLiNGAM), causal
effects that covariances cannot identify are generically identified by higher-order cumulants in
two settings: a single proxy Z of the latent confounder(s) of T and Y (even when Z -> T), and an
underspecified instrumental-variable problem (one instrument, two treatments). Each proof gives a
closed-form estimator: the roots of a pairwise polynomial whose coefficients are cumulants, with
the right root picked by matching marginal cumulants and covariance (IV) equations.

Implements: the paper's cumulant construction (set partitions without singletons, streamed
moments, optional unbiased k-statistics up to order 4), the ReLVLiNGAM pair polynomial and
marginal cumulants, the proxy estimators CM (no Z -> T edge, l latents) and ICM (Z -> T edge,
l = 1 closed form and l >= 2), the cumulant-minimisation refinement, the underspecified IV
estimator, the baselines (naive OLS, cross-moment of Kivva et al. 2023, min-norm IV), and the
simulator of the paper's experiments (gamma, beta, lognormal, exponential, uniform, Laplace
noises; Gaussian only to test refusal). Left out: ReLVLiNGAM causal discovery, GRICA, the
real-data (Card-Krueger) replication and the unfinished multi-instrument class of the released
code. Choices where the paper's text is unsure are listed in ``estimators``'s docstring.

Usage::

    graph = proxy_graph(1, proxy_affects_treatment=True)
    model = random_model(graph, "gamma", rng=0)
    X = model.sample(100_000, np.random.default_rng(1))          # columns Z, T, Y
    ProxyCumulantEstimator(1, proxy_affects_treatment=True).fit(X).effect_
    model.effect(1, 2)                                            # the truth
"""

from .cumulants import (
    Cumulants,
    GaussianNoiseError,
    check_data,
    gaussianity_pvalues,
    sample_cumulant,
    sample_moments,
    set_partitions_no_singletons,
)
from .estimators import (
    CumulantConditionWarning,
    CumulantMinimization,
    NotIdentifiableError,
    ProxyCumulantEstimator,
    SmallSampleWarning,
    UnderspecifiedIVEstimator,
    block_condition,
    cross_moment_effect,
    marginal_cumulants,
    min_dist_perm,
    min_norm_iv,
    ols_effect,
    pair_polynomial_coefficients,
    pair_root_polynomial,
    required_order,
)
from .simulate import (
    NOISE_KINDS,
    LvLingamGraph,
    LvLingamModel,
    NoiseSpec,
    iv_graph,
    proxy_graph,
    random_model,
    simulate_lvlingam,
)

__all__ = [
    "NOISE_KINDS",
    "CumulantConditionWarning",
    "CumulantMinimization",
    "Cumulants",
    "GaussianNoiseError",
    "LvLingamGraph",
    "LvLingamModel",
    "NoiseSpec",
    "NotIdentifiableError",
    "ProxyCumulantEstimator",
    "SmallSampleWarning",
    "UnderspecifiedIVEstimator",
    "block_condition",
    "check_data",
    "cross_moment_effect",
    "gaussianity_pvalues",
    "iv_graph",
    "marginal_cumulants",
    "min_dist_perm",
    "min_norm_iv",
    "ols_effect",
    "pair_polynomial_coefficients",
    "pair_root_polynomial",
    "proxy_graph",
    "random_model",
    "required_order",
    "sample_cumulant",
    "sample_moments",
    "set_partitions_no_singletons",
    "simulate_lvlingam",
]
