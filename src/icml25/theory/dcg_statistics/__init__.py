"""On the Statistical Mechanisms of Distributional Compositional Generalization.

Jingwen Fu, Nanning Zheng. ICML 2025 (PMLR 267:17909-17927).
https://openreview.net/forum?id=37NsgZkyWH · no official code.

Distributional compositional generalization (DCG): learn from the distributions of some
combinations of concepts (the supporting set S) and predict on unseen combinations (U). The paper
asks (1) whether a method that helps on one DCG problem carries over to others, answering with an
invariant measure on which all methods coincide, so only data improves without trade-offs, and
(2) which statistical properties reveal the ability to compose, answering compatibility and
sensitivity between the learner and the composition rule, once the effect of too little data is
separated out.

The paper's full text was not available to us: this package implements the statistical setting and
operational definitions *in the style of* the paper and of the authors' earlier framework ("A
General Theory for Compositional Generalization", arXiv 2405.11743), not its exact theorems.

Implements: concept grids and supporting/novel splits (:mod:`.grid`); composition-rule families and
the NFL-symmetric family (:mod:`.rules`); seven learners with different inductive biases
(:mod:`.learners`); the invariant measure, the grid measure, compatibility and sensitivity by
cross-validation over the seen combinations, the best-constant level and the data/composition error
decomposition (:mod:`.measures`).

Usage::

    grid = ConceptGrid(k_a=5, k_b=5, dim=8, noise=0.3, seed=0)
    rng = np.random.default_rng(0)
    split = make_split(5, 5, 0.6, rng=rng)
    fam = RuleFamily.from_spec("additive_mod:3")
    tables = fam.sample_many(4, 5, 5, rng)
    train = grid.sample(split.seen_combos, 100, rng)
    test_s, test_u = grid.sample(split.seen_combos, 50, rng), grid.sample(split.unseen_combos, 50, rng)
    ev = evaluate_on_rules("concept_rule", train, tables, fam.m, test_s, test_u)
    ev.acc_unseen.mean()  # novel accuracy: what compatibility and sensitivity should predict
    # compatibility and sensitivity from the seen combinations alone (no novel label is read)
    cv = cell_cross_validation("concept_rule", train, tables, fam.m, test_s, test_u.X,
                               cell_folds(split.seen, 3, rng))
    compatibility(cv.acc_heldout), cv.sens
"""

from .grid import ConceptGrid, Samples, Split, make_split
from .learners import (
    LEARNERS,
    ConceptRuleLearner,
    FactorizedLearner,
    KNNLearner,
    Learner,
    LogisticLearner,
    LookupLearner,
    MajorityLearner,
    MLPLearner,
    check_training_data,
    fit_additive_mod,
    fit_predict_many,
    make_learner,
)
from .measures import (
    CellCrossValidation,
    ErrorDecomposition,
    InvariantMeasure,
    RuleEvaluation,
    accuracy_per_rule,
    best_constant_accuracy,
    cell_cross_validation,
    cell_folds,
    compatibility,
    error_decomposition,
    evaluate_on_rules,
    grid_measure,
    invariant_measure,
    sensitivity,
)
from .rules import FAMILY_KINDS, NFLSymmetricFamily, RuleFamily

__all__ = [
    "CellCrossValidation",
    "best_constant_accuracy",
    "cell_cross_validation",
    "cell_folds",
    "ConceptGrid",
    "Samples",
    "Split",
    "make_split",
    "RuleFamily",
    "NFLSymmetricFamily",
    "FAMILY_KINDS",
    "Learner",
    "LogisticLearner",
    "FactorizedLearner",
    "MLPLearner",
    "KNNLearner",
    "ConceptRuleLearner",
    "LookupLearner",
    "MajorityLearner",
    "LEARNERS",
    "make_learner",
    "fit_predict_many",
    "fit_additive_mod",
    "check_training_data",
    "InvariantMeasure",
    "RuleEvaluation",
    "ErrorDecomposition",
    "accuracy_per_rule",
    "invariant_measure",
    "grid_measure",
    "compatibility",
    "sensitivity",
    "error_decomposition",
    "evaluate_on_rules",
]
