"""Advancing Constrained Monotonic Neural Networks: Achieving Universal Approximation Beyond
Bounded Activations.

Sartor, Sinigaglia, Susto. ICML 2025. https://arxiv.org/abs/2505.02537 · project page
https://amco-unipd.github.io/monotonic (no official repository identified).

Non-negative-weight MLPs are monotone, but with bounded activations they are hard to train and
with ReLU they represent only convex functions. The paper proves that non-negative MLPs whose
activations saturate on alternating sides are universal monotone approximators, that the
saturation side and the weight sign are interchangeable, and hence that non-positive-weight MLPs
with convex activations (ReLU) are universal. It then proposes a sign-adaptive layer with
unconstrained weights where each connection uses σ or its point reflection σ̃(z) = −σ(−z)
according to the sign of its weight, which removes the reparameterisation and eases initialisation.

Implements: the paper's sign-adaptive formulation, pre-activation z = W⁺σ(h) + W⁻σ(−h) + b and
post-activation z = σ(W⁺h + b) − σ(W⁻h + b), with per-feature directions (increasing /
decreasing / free); the constrained families of its universality theorems (non-negative weights
with alternating saturation, non-positive weights with a convex σ); the baselines (non-negative
weights reparameterised by abs/square/exp/softplus/1+celu with bounded, convex, random-switch or
learnable-switch activations; Sill's min-max network; an unconstrained MLP); an empirical
monotonicity verifier; our synthetic targets, Auto MPG (vega-datasets) and scikit-learn's diabetes
data. Left out: smooth min-max networks, the proofs' explicit four-layer constructions, and the
benchmarks that need downloads (COMPAS, Blog Feedback, Loan, Heart, Chest X-ray:
:func:`load_tabular_csv` takes a local file instead).

Our choices where the paper is open: sign-adaptive init defaults to ``nn.Linear``'s symmetric
uniform (``init="positive"`` gives the Xavier-scaled U(0, 1) of an earlier public implementation of
the formulation); the random switch gives σ̃
to a random half of each layer's neurons; constrained layers initialise their effective weight as
|W₀| with W₀ from ``nn.Linear``'s scheme; NonPositiveMLP uses a non-negative first layer,
non-positive hidden-to-hidden matrices and an output sign of (−1)^(hidden layers − 1).

Usage::

    net = SignAdaptiveMLP([3, 64, 64, 1], activation="relu", monotone=[+1, -1, 0])
    base = ConstrainedMLP([3, 64, 64, 1], activation="sigmoid", weight_param="exp", monotone=[+1, -1, 0])
    fit_regression(net, X_train, y_train, X_val, y_val, steps=2000)
    assert check_monotonicity(net, X_train, [+1, -1, 0]) == 0
"""

from .activations import ACTIVATIONS, PointReflection, SwitchConvexity, get_activation
from .data import (
    TARGETS_1D,
    RegressionSplit,
    TabularDataset,
    check_declared_directions,
    load_auto_mpg,
    load_diabetes_monotone,
    load_tabular_csv,
    synthetic_1d,
    synthetic_8d,
    target_8d,
    validate_regression_data,
)
from .layers import WEIGHT_PARAMS, ConstrainedLinear, SignAdaptiveLinear, SignConstraint, scale_init_
from .models import (
    CONVEXITY_BREAKS,
    ConstrainedMLP,
    MinMaxNetwork,
    MonotoneModel,
    NonPositiveMLP,
    SignAdaptiveMLP,
    UnconstrainedMLP,
    monotone_vector,
    parse_monotone,
)
from .train import FitResult, fit_regression, predict
from .verify import MonotonicityReport, check_monotonicity, monotonicity_report

__all__ = [
    "ACTIVATIONS",
    "CONVEXITY_BREAKS",
    "TARGETS_1D",
    "WEIGHT_PARAMS",
    "ConstrainedLinear",
    "ConstrainedMLP",
    "FitResult",
    "MinMaxNetwork",
    "MonotoneModel",
    "MonotonicityReport",
    "NonPositiveMLP",
    "PointReflection",
    "RegressionSplit",
    "SignAdaptiveLinear",
    "SignAdaptiveMLP",
    "SignConstraint",
    "SwitchConvexity",
    "TabularDataset",
    "UnconstrainedMLP",
    "check_declared_directions",
    "check_monotonicity",
    "fit_regression",
    "get_activation",
    "load_auto_mpg",
    "load_diabetes_monotone",
    "load_tabular_csv",
    "monotone_vector",
    "monotonicity_report",
    "parse_monotone",
    "predict",
    "scale_init_",
    "synthetic_1d",
    "synthetic_8d",
    "target_8d",
    "validate_regression_data",
]
