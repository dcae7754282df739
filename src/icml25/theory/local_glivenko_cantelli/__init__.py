"""The Empirical Mean is Minimax Optimal for Local Glivenko-Cantelli.

Doron Cohen, Aryeh Kontorovich, Roi Weiss. ICML 2025. https://arxiv.org/abs/2410.02835
(no official code).

Local Glivenko-Cantelli (LGC) asks for sup-norm estimation of the mean vector p of a product
Bernoulli measure on {0,1}^N from n draws, with rates that depend on p. The empirical mean (EME)
is consistent exactly on the LGC class T(p) < infinity, with risk of order sqrt(S(p)/n) +
T(p) log(n)/n. The paper shows that no estimator that avoids infinite-dimensional pathologies
learns a larger class or attains a faster worst-case rate over decaying, symmetric families (the
EME is minimax rate-optimal), while pathology-exploiting estimators do learn strictly larger
classes (e.g. LGC plus the constant sequences).

A theory paper: this package makes its objects computable so that their numerical consequences
can be measured; a simulation is evidence, never a proof. Implements: truncated mean sequences
and symmetric permutation families (``sequences``), S, T and the LGC rate bound
(``complexity``), the EME and the competitors (add-beta, thresholded, isotonic, a pooled-tail
hybrid in the style of the paper's pathological learners; ``estimators``), the sup-norm risk
exactly for coordinatewise estimators and by Monte Carlo (``risk``), and a testing-based
numerical minimax lower bound in the style of the paper's lower-bound arguments
(``lower_bound``). Not implemented: the paper's formal definitions of pathology, decay and
symmetry (our proxies are named in ``estimators`` and ``sequences``) and its proofs.

Usage::

    p = polynomial(10**5, a=1.0)
    Y = sample_counts(p, 100, rng=0)                  # Y_j ~ Bin(100, p_j)
    complexity_S(p), complexity_T(p), lgc_upper_bound(p, 100)
    EmpiricalMean()(Y, 100)                           # Y / n
    exact_sup_risk(EmpiricalMean(), p, 100)           # E sup_j |Y_j/n - p_j|
    sup_risk(IsotonicOrdered(), p, 100, reps=50, rng=0)
"""

from .complexity import complexity_S, complexity_T, folded_sorted, lgc_upper_bound
from .estimators import (
    AddBeta,
    EmpiricalMean,
    Estimator,
    IsotonicOrdered,
    PooledTailHybrid,
    Thresholded,
    Zero,
    check_counts,
    sample_counts,
)
from .lower_bound import (
    LowerBound,
    bayes_error,
    bound_hypotheses,
    multiple_testing_bound,
    two_level_complexity,
)
from .minimax import block, block_members, class_excess, in_class
from .risk import (
    RiskEstimate,
    WorstCase,
    bootstrap_mean_ci,
    exact_sup_risk,
    sup_error,
    sup_errors,
    sup_risk,
    worst_case_risk,
)
from .sequences import check_means, constant, exp_sqrt_log, permutation_family, polynomial

__all__ = [
    "AddBeta",
    "EmpiricalMean",
    "Estimator",
    "IsotonicOrdered",
    "LowerBound",
    "PooledTailHybrid",
    "RiskEstimate",
    "Thresholded",
    "Zero",
    "block",
    "block_members",
    "class_excess",
    "in_class",
    "WorstCase",
    "bayes_error",
    "bootstrap_mean_ci",
    "check_counts",
    "check_means",
    "complexity_S",
    "complexity_T",
    "constant",
    "exact_sup_risk",
    "exp_sqrt_log",
    "folded_sorted",
    "lgc_upper_bound",
    "permutation_family",
    "polynomial",
    "sample_counts",
    "sup_error",
    "sup_errors",
    "sup_risk",
    "bound_hypotheses",
    "multiple_testing_bound",
    "two_level_complexity",
    "worst_case_risk",
]
