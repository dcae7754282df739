"""The estimator-shaped classes pass scikit-learn's own estimator checks, or a stated subset.

Each class runs ``sklearn.utils.estimator_checks.check_estimator``; a check that cannot apply is
listed below with its reason (``expected_failed_checks``), so a new failure, or a listed check that
starts to pass, shows up here.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_estimator

from icml25.theory.competitive_classification.learners import MarketAwareClassifier
from icml25.theory.lvlingam_cumulants import ProxyCumulantEstimator, UnderspecifiedIVEstimator
from icml25.theory.rfm_grokking import RFM

#: The cumulant estimators' columns are the variables of one causal graph (3 or 4 of them, in a
#: fixed order), they refuse fewer than 100 rows (fourth-order cumulants are noise below that) and
#: Gaussian data (the effect is not identifiable): scikit-learn's generic data (2 to 5 Gaussian
#: columns, 1 to 30 rows) cannot be fitted, so these checks never reach what they test.
GRAPH_DATA = "needs the graph's own columns, at least 100 rows and non-Gaussian data"
CUMULANT_SKIPS = {
    name: GRAPH_DATA
    for name in (
        "check_fit_score_takes_y",
        "check_estimators_overwrite_params",
        "check_dont_overwrite_parameters",
        "check_estimators_fit_returns_self",
        "check_readonly_memmap_input",
        "check_n_features_in_after_fitting",
        "check_positive_only_tag_during_fit",
        "check_estimators_dtypes",
        "check_complex_data",
        "check_dtype_object",
        "check_estimators_empty_data_messages",
        "check_pipeline_consistency",
        "check_estimators_nan_inf",
        "check_estimator_sparse_tag",
        "check_estimator_sparse_array",
        "check_estimator_sparse_matrix",
        "check_estimators_pickle",
        "check_f_contiguous_array_estimator",
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
        "check_fit2d_1sample",
        "check_fit2d_1feature",
        "check_dict_unchanged",
        "check_fit_idempotent",
        "check_fit_check_is_fitted",
        "check_n_features_in",
        "check_fit2d_predict1d",
    )
}


#: MarketAwareClassifier refuses these inputs with its own one-line errors (the project's bad-input
#: battery names the argument), which do not use scikit-learn's exact wording; its labels are the
#: integer class ids of the market model (users choose providers by correctness on them), so string
#: and continuous targets are refused rather than encoded.
OWN_MESSAGES = "refused with the project's own one-line error naming the argument, not sklearn's wording"
INTEGER_LABELS = "labels are integer class ids of the market model; strings/continuous targets are refused"
MARKET_SKIPS = {
    "check_complex_data": OWN_MESSAGES,
    "check_dtype_object": OWN_MESSAGES,
    "check_estimators_empty_data_messages": OWN_MESSAGES,
    "check_estimator_sparse_tag": OWN_MESSAGES,
    "check_estimator_sparse_array": OWN_MESSAGES,
    "check_estimator_sparse_matrix": OWN_MESSAGES,
    "check_fit2d_1sample": OWN_MESSAGES,
    "check_fit2d_predict1d": OWN_MESSAGES,
    "check_supervised_y_2d": OWN_MESSAGES,
    "check_classifiers_classes": INTEGER_LABELS,
    "check_classifiers_regression_target": INTEGER_LABELS,
    "check_requires_y_none": INTEGER_LABELS,
}


def _failed(estimator, expected: dict[str, str]) -> list[str]:  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(estimator, expected_failed_checks=expected, on_fail=None)
    return sorted({r["check_name"] for r in results if r["status"] == "failed"})


def test_rfm_passes_every_estimator_check() -> None:
    assert _failed(RFM(iters=2), {}) == []


def test_market_aware_classifier_passes_all_but_the_stated_checks() -> None:
    assert _failed(MarketAwareClassifier(), MARKET_SKIPS) == []
    with pytest.raises(ValueError, match="not fitted"):  # NotFittedError is a ValueError
        MarketAwareClassifier().predict(np.zeros((2, 2)))


@pytest.mark.parametrize("estimator", [ProxyCumulantEstimator(), UnderspecifiedIVEstimator()], ids=type)
def test_cumulant_estimators_pass_the_checks_their_data_allows(estimator) -> None:  # type: ignore[no-untyped-def]
    assert _failed(estimator, CUMULANT_SKIPS) == []
    copy = clone(estimator.set_params(n_bootstrap=5, random_state=3))
    assert copy.get_params() == estimator.get_params() and not hasattr(copy, "effect_")


def test_cumulant_estimators_take_and_ignore_y() -> None:
    rng = np.random.default_rng(0)
    n = 5000
    latent, e_t, e_y, e_p = (rng.gamma(k, size=n) - k for k in (0.5, 2.0, 4.0, 1.0))  # distinct shapes
    treatment = latent + e_t
    proxy = latent + e_p
    outcome = 0.7 * treatment + latent + e_y
    data = np.column_stack([proxy, treatment, outcome])  # the columns Z, T, Y
    est = ProxyCumulantEstimator()
    a = est.fit(data).effect_
    b = clone(est).fit(data, np.zeros(n)).effect_
    assert a == b
