"""Market dynamics: sequential entry, iterated best response, update timing, equilibrium detection.

Einav & Rosenfeld, *A Market for Accuracy: Classification under Competition*, ICML 2025
(https://arxiv.org/abs/2502.18052). Providers enter one after another; an entrant trains against the
incumbents present at its entry (the first has no competitor and maximises accuracy). Afterwards
providers repeatedly best-respond to each other, every round (``update_every=1``), every q-th round
(``update_every=q``) or never (``update_every=0``, a frozen model). Retraining moves the users each
provider's competitors already serve, so the loop is a repeated-retraining (performative) process; it
stops when no share moves by more than ``tol`` (or no prediction changes) and reports a cycle when a
market state repeats.

At entry a provider chooses its hyperparameter from its ``estimators`` sweep on a validation part of
its own pool, by validation accuracy (``strategy="erm"``, the market-oblivious baseline) or by
validation market share against the incumbents (``strategy="br"``, the competition-aware learner):
the same sweep and the same number of fits for both. In the update rounds that follow, a provider
refits within the model class it chose at entry (``retune=False``, default): its hypothesis class is
fixed, as in the game the paper studies, and only its best response to the others moves. With
``retune=True`` (the behaviour before round 6) every refit re-chooses the hyperparameter on the 25 %
validation split; near-ties there flip the choice from round to round, which makes the best-response
map jump and slowed the dynamics (see the package README).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from icml25.core.tuning import best_on_validation
from icml25.core.validate import check_in_range, check_non_negative, check_positive

from .learners import PROXIES, MarketAwareClassifier, Proxy, check_features, check_labels
from .market import ChoiceRule, as_rule, exact_linear_response, hhi, market_shares, user_welfare

__all__ = ["Provider", "MarketState", "MarketHistory", "AccuracyMarket", "default_estimators"]

Strategy = Literal["erm", "br", "exact"]
Information = Literal["full", "surrogate"]


def default_estimators(Cs: Sequence[float] = (1.0,)) -> dict[str, Any]:
    """A sweep of L2 ``LogisticRegression(C)`` (Newton-Cholesky solver) keyed ``"C=<value>"``."""
    if len(Cs) == 0:
        raise ValueError("Cs must hold at least one value")
    for c in Cs:
        check_positive("Cs", c)
    return {f"C={c:g}": LogisticRegression(C=float(c), solver="newton-cholesky", max_iter=2000) for c in Cs}


class _Constant:
    """A predictor that always outputs one label (a surrogate of a competitor that predicts one class)."""

    def __init__(self, label: int) -> None:
        self.label = label

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.full(X.shape[0], self.label, dtype=np.int64)


class Provider:
    """One service provider: its labelled pool, how it learns and when it updates.

    Args:
        name: label in results.
        X: (n, d) its training users' features.
        y: (n,) their labels.
        strategy: ``"br"`` (competition-aware best response through ``proxy``), ``"erm"`` (accuracy
            maximisation) or ``"exact"`` (the exact empirical best response among 2-D half-planes,
            ``market.exact_linear_response``: a diagnostic of the dynamics, 2-D features only; with
            no competitor it fits like ``"erm"``).
        proxy: the best-response proxy loss (``learners.PROXIES``).
        estimators: the hyperparameter sweep, name -> unfitted scikit-learn classifier (default:
            ``LogisticRegression(C=1)`` only). With more than one, a validation part of the pool
            picks the winner.
        update_every: refit every this many rounds; 0 never refits after entry (frozen).
        information: ``"full"`` sees the competitors' predictions on its own users; ``"surrogate"``
            sees them only on the market's query users and fits surrogate copies there.
        retune: re-choose the hyperparameter from the sweep at every refit of the update rounds
            (True) or keep the one chosen at entry (False, default: a fixed model class).
        val_fraction: share of the pool held out for choosing from the sweep.
        seed: fixes the pool's train/validation split.
    """

    def __init__(
        self,
        name: str,
        X: Any,
        y: Any,
        *,
        strategy: Strategy = "br",
        proxy: Proxy = "weighted_ce",
        estimators: Mapping[str, Any] | None = None,
        update_every: int = 1,
        information: Information = "full",
        val_fraction: float = 0.25,
        seed: int = 0,
        retune: bool = False,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        self.name = name
        self.X = check_features("X", X)
        self.y = check_labels("y", y, self.X.shape[0])
        if strategy not in ("erm", "br", "exact"):
            raise ValueError(f"strategy must be 'erm', 'br' or 'exact', got {strategy!r}")
        if strategy == "exact" and self.X.shape[1] != 2:
            raise ValueError(f"strategy 'exact' searches 2-D half-planes; X has {self.X.shape[1]} features")
        if proxy not in PROXIES:
            raise ValueError(f"proxy must be one of {PROXIES}, got {proxy!r}")
        if information not in ("full", "surrogate"):
            raise ValueError(f"information must be 'full' or 'surrogate', got {information!r}")
        check_non_negative("update_every", update_every, integer=True)
        check_in_range("val_fraction", val_fraction, 0.0, 1.0, low_open=True, high_open=True)
        self.strategy: Strategy = strategy
        self.proxy: Proxy = proxy
        self.estimators = dict(estimators) if estimators is not None else default_estimators()
        if not self.estimators:
            raise ValueError("estimators must hold at least one candidate")
        self.update_every = update_every
        self.information: Information = information
        if not isinstance(retune, bool):
            raise TypeError(f"retune must be a bool, got {type(retune).__name__}")
        self.retune = retune
        n = self.X.shape[0]
        if len(self.estimators) > 1:
            perm = np.random.default_rng([seed, 11]).permutation(n)
            n_val = max(1, int(round(val_fraction * n)))
            if n - n_val < 2:
                raise ValueError(f"X has too few users ({n}) for a validation split")
            self.val_idx, self.train_idx = np.sort(perm[:n_val]), np.sort(perm[n_val:])
        else:
            self.val_idx, self.train_idx = np.arange(0), np.arange(n)
        if np.unique(self.y[self.train_idx]).size < 2:
            raise ValueError(f"provider {name!r}: its training users hold a single class")
        self.model_: Any = None
        self.choice_: str = ""

    def updates_at(self, round_index: int) -> bool:
        """Whether this provider refits in round ``round_index`` (1-based)."""
        return self.update_every > 0 and round_index % self.update_every == 0

    def predict(self, X: np.ndarray) -> np.ndarray:
        if self.model_ is None:
            raise ValueError(f"provider {self.name!r} has not entered a market yet")
        return np.asarray(self.model_.predict(X))


@dataclass(frozen=True)
class MarketState:
    """Outcomes on the market's evaluation users at one moment.

    Attributes:
        names: providers in entry order.
        shares: (K,) market shares mu_j.
        accuracy: (K,) accuracies acc_j.
        welfare: probability that a user's chosen provider is correct for them.
        hhi: concentration sum_j mu_j^2.
        served: fraction of users that at least one provider gets right.
    """

    names: tuple[str, ...]
    shares: np.ndarray
    accuracy: np.ndarray
    welfare: float
    hhi: float
    served: float


@dataclass(frozen=True)
class MarketHistory:
    """The states after entry (index 0) and after each update round, and how the dynamics ended.

    ``rounds`` is the round at which no share moved by more than ``tol`` (or no prediction changed);
    it equals the rounds run when the dynamics neither converged nor cycled. That last round only
    confirms the equilibrium: the market was already at it after round ``rounds - 1``
    (``equilibrium_round``; 0 for a market that starts at an equilibrium).
    """

    states: tuple[MarketState, ...]
    converged: bool
    cycled: bool
    rounds: int

    @property
    def equilibrium_round(self) -> int | None:
        """Update rounds run before the market stood at its equilibrium (None if it did not converge)."""
        return self.rounds - 1 if self.converged else None

    @property
    def final(self) -> MarketState:
        return self.states[-1]

    def share_trajectory(self) -> np.ndarray:
        """(rounds + 1, K) shares over time."""
        return np.stack([s.shares for s in self.states])


class AccuracyMarket:
    """A market of providers competing for the evaluation users under one choice rule.

    Args:
        rule: ``"uniform"`` or ``"abstain"`` (the rules with exact best-response weights).
        X_eval: (m, d) evaluation users whose choices define shares and welfare.
        y_eval: (m,) their labels.
        X_query: (q, d) users on which any provider may query its competitors' predictions (needed
            by providers with ``information="surrogate"``).
    """

    def __init__(
        self,
        rule: ChoiceRule | str,
        X_eval: Any,
        y_eval: Any,
        *,
        X_query: Any | None = None,
    ) -> None:
        self.rule = as_rule(rule)
        if self.rule.kind not in ("uniform", "abstain"):
            raise ValueError(f"rule must be 'uniform' or 'abstain' for best-response dynamics, got {rule!r}")
        self.X_eval = check_features("X_eval", X_eval)
        self.y_eval = check_labels("y_eval", y_eval, self.X_eval.shape[0])
        self.X_query = None if X_query is None else check_features("X_query", X_query)
        self.providers: list[Provider] = []

    # -- fitting ------------------------------------------------------------------------------

    def _competitor_view(self, p: Provider, others: Sequence[Provider]) -> tuple[np.ndarray, np.ndarray]:
        """Competitors' correctness (n, K-1) and probability of the true label (n, K-1) on p's pool."""
        n = p.X.shape[0]
        correct = np.zeros((n, len(others)), dtype=bool)
        proba = np.zeros((n, len(others)))
        for k, o in enumerate(others):
            if p.information == "surrogate":
                if self.X_query is None:
                    raise ValueError("X_query is required by providers with information='surrogate'")
                labels = o.predict(self.X_query)
                if np.unique(labels).size < 2:
                    surrogate: Any = _Constant(int(labels[0]))
                else:
                    surrogate = LogisticRegression(solver="newton-cholesky", max_iter=2000).fit(
                        self.X_query, labels
                    )
                pred = np.asarray(surrogate.predict(p.X))
                correct[:, k] = pred == p.y
                proba[:, k] = correct[:, k]
                continue
            correct[:, k] = o.predict(p.X) == p.y
            if p.proxy == "soft_all":
                pr = np.asarray(o.model_.predict_proba(p.X))
                cls = list(np.asarray(o.model_.classes_))
                col = np.array([cls.index(v) if v in cls else -1 for v in p.y])
                proba[:, k] = np.where(col >= 0, pr[np.arange(n), np.maximum(col, 0)], 0.0)
            else:
                proba[:, k] = correct[:, k]
        return correct, proba

    def _fit(self, p: Provider, others: Sequence[Provider], *, tune: bool = True) -> tuple[Any, str]:
        """The model p deploys against ``others``.

        With ``tune`` (at entry, or every refit when ``p.retune``) it is chosen from p's sweep on p's
        validation users; otherwise p refits the hyperparameter it chose before (``p.choice_``).
        """
        tr, va = p.train_idx, p.val_idx
        Xtr, ytr = p.X[tr], p.y[tr]
        keep = not tune and p.choice_ in p.estimators  # refit the class chosen before ("exact" has none)
        estimators = {p.choice_: p.estimators[p.choice_]} if keep else p.estimators
        if len(estimators) == 1:
            va = va[:0]
        if p.strategy == "erm" or not others:
            runs = {name: clone(est).fit(Xtr, ytr) for name, est in estimators.items()}
            if va.size == 0:
                name = next(iter(runs))
            else:
                name = best_on_validation(runs, lambda m: -float(np.mean(m.predict(p.X[va]) == p.y[va])))
            return runs[name], name
        correct, proba = self._competitor_view(p, others)
        if p.strategy == "exact":
            return exact_linear_response(Xtr, ytr, correct[tr], self.rule), "exact"
        runs = {
            name: MarketAwareClassifier(est, p.proxy, self.rule).fit(
                Xtr, ytr, correct[tr], competitors_proba=proba[tr]
            )
            for name, est in estimators.items()
        }
        if va.size == 0:
            name = next(iter(runs))
        else:

            def val_share(m: MarketAwareClassifier) -> float:
                own = (m.predict(p.X[va]) == p.y[va])[:, None]
                return -float(market_shares(np.hstack([own, correct[va]]), self.rule)[0])

            name = best_on_validation(runs, val_share)
        return runs[name], name

    # -- market events --------------------------------------------------------------------------

    def enter(self, provider: Provider) -> MarketState:
        """``provider`` trains against the incumbents and joins; returns the new market state."""
        if not isinstance(provider, Provider):
            raise TypeError(f"provider must be a Provider, got {type(provider).__name__}")
        if any(p is provider or p.name == provider.name for p in self.providers):
            raise ValueError(f"provider {provider.name!r} is already in the market")
        if provider.X.shape[1] != self.X_eval.shape[1]:
            raise ValueError(
                f"provider {provider.name!r}: X has {provider.X.shape[1]} features, the market's users "
                f"have {self.X_eval.shape[1]}"
            )
        provider.model_, provider.choice_ = self._fit(provider, self.providers)
        self.providers.append(provider)
        return self.evaluate()

    def round(
        self, round_index: int = 1, order: Literal["sequential", "simultaneous"] = "sequential"
    ) -> MarketState:
        """One round of best responses by the providers that update in ``round_index``.

        ``sequential``: in entry order, each responds to the others' current models.
        ``simultaneous``: all respond to the models at the start of the round.
        """
        check_positive("round_index", round_index, integer=True)
        if order not in ("sequential", "simultaneous"):
            raise ValueError(f"order must be 'sequential' or 'simultaneous', got {order!r}")
        if not self.providers:
            raise ValueError("the market has no provider; call enter first")
        movers = [p for p in self.providers if p.updates_at(round_index)]
        if order == "sequential":
            for p in movers:
                p.model_, p.choice_ = self._fit(p, [o for o in self.providers if o is not p], tune=p.retune)
        else:
            new = [self._fit(p, [o for o in self.providers if o is not p], tune=p.retune) for p in movers]
            for p, (model, choice) in zip(movers, new, strict=True):
                p.model_, p.choice_ = model, choice
        return self.evaluate()

    def predictions(self) -> np.ndarray:
        """(m, K) each provider's predictions on the evaluation users."""
        return np.stack([p.predict(self.X_eval) for p in self.providers], axis=1)

    def evaluate(self) -> MarketState:
        """Shares, accuracies, welfare and concentration on the evaluation users."""
        if not self.providers:
            raise ValueError("the market has no provider; call enter first")
        correct = self.predictions() == self.y_eval[:, None]
        shares = market_shares(correct, self.rule)
        return MarketState(
            names=tuple(p.name for p in self.providers),
            shares=shares,
            accuracy=correct.mean(axis=0),
            welfare=user_welfare(correct, self.rule),
            hhi=hhi(shares),
            served=float(correct.any(axis=1).mean()),
        )

    def run(
        self,
        max_rounds: int = 15,
        tol: float = 5e-3,
        order: Literal["sequential", "simultaneous"] = "sequential",
    ) -> MarketHistory:
        """Best-response rounds until no share moves by > ``tol``, a state repeats, or ``max_rounds`` pass."""
        check_non_negative("max_rounds", max_rounds, integer=True)
        check_positive("tol", tol)
        states = [self.evaluate()]
        preds = self.predictions()
        seen = {preds.tobytes(): 0}
        for r in range(1, max_rounds + 1):
            state = self.round(r, order)
            new_preds = self.predictions()
            states.append(state)
            moved = float(np.abs(state.shares - states[-2].shares).max())
            if moved < tol or np.array_equal(new_preds, preds):
                return MarketHistory(tuple(states), converged=True, cycled=False, rounds=r)
            key = new_preds.tobytes()
            if key in seen:
                return MarketHistory(tuple(states), converged=False, cycled=True, rounds=r)
            seen[key] = r
            preds = new_preds
        return MarketHistory(tuple(states), converged=False, cycled=False, rounds=max_rounds)
