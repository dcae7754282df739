"""A Market for Accuracy: Classification under Competition.

Ohad Einav, Nir Rosenfeld. ICML 2025. https://arxiv.org/abs/2502.18052 (no public code found).

Several providers offer classifiers to one population; each user goes to a provider that is correct
for them, so providers compete for market share through accuracy. Given its competitors, a provider's
share is a weighted accuracy whose weights favour users that competitors get wrong, so accuracy alone
is the wrong target; the paper learns best responses through proxy losses and studies entry timing,
updates, welfare and the convergence of best-response dynamics.

Implements: the market model with documented choice rules (``market``: uniform, abstain, softmax,
loyal), market share, user welfare and concentration, the closed-form best-response weights (our
derivation for the uniform and abstain rules), the competition-aware learner with three proxy losses
(``learners``), sequential entry and iterated best response with update timing, equilibrium and cycle
detection (``dynamics``), the exact best half-plane response on given users (``best_linear_response``,
a positive control; ``exact_linear_response``, the exact empirical best response as a classifier), and
the rings, moons, circles, XOR and noisy scikit-learn user populations (``data``). The paper's exact
choice rule, proxy loss, theorems and datasets could not be read: ours are reconstructions named as
such.

Usage::

    data = market_data("rings", n_pools=3, seed=0)
    market = AccuracyMarket("uniform", data.X_eval, data.y_eval)
    for j, (X, y) in enumerate(data.pools):
        market.enter(Provider(f"p{j}", X, y, strategy="br"))
    history = market.run(max_rounds=15, tol=5e-3)
    history.final.shares, history.final.welfare, history.equilibrium_round
"""

from .data import DATASETS, REAL, SYNTHETIC, MarketData, flip_labels, make_rings, make_synthetic, market_data
from .dynamics import AccuracyMarket, MarketHistory, MarketState, Provider, default_estimators
from .learners import PROXIES, MarketAwareClassifier
from .market import (
    RULES,
    ChoiceRule,
    HalfPlane,
    best_linear_response,
    best_response_weights,
    exact_linear_response,
    finite_best_response,
    hhi,
    market_shares,
    share_offset,
    user_welfare,
)

__all__ = [
    "DATASETS",
    "PROXIES",
    "REAL",
    "RULES",
    "SYNTHETIC",
    "AccuracyMarket",
    "ChoiceRule",
    "HalfPlane",
    "MarketAwareClassifier",
    "MarketData",
    "MarketHistory",
    "MarketState",
    "Provider",
    "best_linear_response",
    "best_response_weights",
    "default_estimators",
    "exact_linear_response",
    "finite_best_response",
    "flip_labels",
    "hhi",
    "make_rings",
    "make_synthetic",
    "market_data",
    "market_shares",
    "share_offset",
    "user_welfare",
]
