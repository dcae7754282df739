"""The measurable objects of *On the Statistical Mechanisms of Distributional Compositional
Generalization* (Fu & Zheng, ICML 2025, https://openreview.net/forum?id=37NsgZkyWH).

Operational definitions, in the style of the paper (its exact definitions and theorems are not
public; these are ours, consistent with its abstract and the authors' earlier framework):

* Invariant measure (question 1). For an NFL-symmetric family of rules (every extension of the seen
  labels to the novel combinations, each label equally often), the family-averaged accuracy on novel
  combinations is I(A; S, R) = 1/m for *every* learner A whose predictions depend only on the
  training data: per-rule gains of one learner over another cancel exactly.
* Grid measure. I_grid(A; S) = rho acc_seen(A, n) + (1 - rho) / m: the full-grid accuracy averaged
  over the family, which only data (a larger seen fraction rho, more samples n) can raise.
* Compatibility. Comp(A, R_s) = E_{R ~ R_s}[accuracy of A on held-out *seen* combinations when
  trained, at a large n, on the other seen combinations] (:func:`cell_cross_validation`): how well the
  learner's bias extends the rule from some supporting combinations to others. It uses the training
  combinations only, never a novel cell, so it can predict novel accuracy without measuring it.
  (The literal definition E_R[novel accuracy at n = infinity] is the quantity it would predict.)
* Sensitivity. Sens(A) = E_{R,R'} mean_u 1{A(D_R)(u) != A(D_R')(u)} / E_{R,R'} mean_s 1{R(s) != R'(s)}:
  how much the predictions on novel combinations move when the rule on seen combinations changes.
* Error decomposition. E_U(A, n) = [E_U(A, n) - E_U(A, inf)] (data term) + E_U(A, inf) (composition).

Everything here acts on arrays (predictions, label tables, masks) so that it works with any learner
and any data; :func:`evaluate_on_rules` ties it to the learners of :mod:`.learners`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from icml25.core.validate import check_in_range, check_positive

from .grid import Samples
from .learners import fit_predict_many
from .rules import NFLSymmetricFamily

__all__ = [
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
    "best_constant_accuracy",
    "cell_folds",
    "CellCrossValidation",
    "cell_cross_validation",
]


def _int_array(name: str, x: object, ndim: int) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype.kind not in "iub":
        raise TypeError(f"{name} must hold integer labels, got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    return arr.astype(np.int64)


def accuracy_per_rule(pred: np.ndarray, combos: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Accuracy of predictions against each rule.

    Args:
        pred: ``(N,)`` predictions shared by all rules, or ``(R, N)`` one row per rule.
        combos: ``(N, 2)`` combination of each evaluated input.
        tables: ``(R, K_a, K_b)`` rules.

    Returns:
        ``(R,)`` accuracies.
    """
    tables = _int_array("tables", tables, 3)
    combos = _int_array("combos", combos, 2)
    pred = np.asarray(pred)
    if pred.ndim not in (1, 2):
        raise ValueError(f"pred must be (N,) or (R, N), got shape {pred.shape}")
    pred = _int_array("pred", pred, pred.ndim)
    if pred.shape[-1] != combos.shape[0]:
        raise ValueError(f"pred has {pred.shape[-1]} predictions but combos has {combos.shape[0]} rows")
    if pred.ndim == 2 and pred.shape[0] != tables.shape[0]:
        raise ValueError(f"pred has {pred.shape[0]} rows but tables holds {tables.shape[0]} rules")
    truth = tables[:, combos[:, 0], combos[:, 1]]  # (R, N)
    return (truth == (pred if pred.ndim == 2 else pred[None])).mean(axis=1)


@dataclass(frozen=True)
class InvariantMeasure:
    """Novel-combination accuracy of one trained learner against every rule of an NFL family.

    Attributes:
        value: the family average I (1/m exactly on a balanced family).
        per_rule: ``(E,)`` accuracy against each extension.
        chance: 1/m.
    """

    value: float
    per_rule: np.ndarray
    chance: float

    @property
    def deviation(self) -> float:
        return abs(self.value - self.chance)


def invariant_measure(
    pred_unseen: np.ndarray,
    unseen_combos: np.ndarray,
    family: NFLSymmetricFamily,
    *,
    max_count: int = 4096,
    rng: np.random.Generator | None = None,
) -> InvariantMeasure:
    """I(A; S, R): the accuracy on novel inputs averaged over an NFL-symmetric family.

    A learner trained on the seen labels (the same for every rule of the family) makes one prediction
    per novel input; this scores it against each extension of the seen labels.

    Args:
        pred_unseen: ``(N,)`` predictions on inputs from unseen combinations.
        unseen_combos: ``(N, 2)`` their combinations (all in U).
        family: the extensions (:class:`NFLSymmetricFamily`).
        max_count: enumerate all extensions up to this many, else a balanced design of this size.
        rng: needed when the extensions are not enumerated.
    """
    combos = _int_array("unseen_combos", unseen_combos, 2)
    if family.split.seen[combos[:, 0], combos[:, 1]].any():
        raise ValueError("unseen_combos must only hold combinations outside the seen set")
    tables = family.extensions(max_count=max_count, rng=rng)
    per_rule = accuracy_per_rule(pred_unseen, combos, tables)
    return InvariantMeasure(value=float(per_rule.mean()), per_rule=per_rule, chance=1.0 / family.m)


def grid_measure(acc_seen: float, seen_frac: float, m: int) -> float:
    """I_grid = rho acc_seen + (1 - rho) / m (family-averaged accuracy on the whole grid)."""
    check_in_range("acc_seen", acc_seen, 0.0, 1.0)
    check_in_range("seen_frac", seen_frac, 0.0, 1.0)
    check_positive("m", m, integer=True)
    return float(seen_frac * acc_seen + (1.0 - seen_frac) / m)


def compatibility(acc_unseen_at_inf: Sequence[float] | np.ndarray) -> float:
    """Comp = mean over rules of the novel-combination accuracy at (approximately) n = infinity."""
    acc = np.asarray(acc_unseen_at_inf, dtype=np.float64)
    if acc.ndim != 1 or acc.size == 0:
        raise ValueError(f"acc_unseen_at_inf must be a non-empty 1-D array, got shape {acc.shape}")
    if not np.isfinite(acc).all() or (acc < 0).any() or (acc > 1).any():
        raise ValueError("acc_unseen_at_inf must hold accuracies in [0, 1]")
    return float(acc.mean())


def sensitivity(pred_unseen: np.ndarray, tables: np.ndarray, seen: np.ndarray) -> float:
    """Sens: disagreement of a learner's novel predictions between rules, per unit of disagreement
    of the rules on the seen combinations (averaged over all pairs of rules).

    Args:
        pred_unseen: ``(R, N)`` predictions on the same novel inputs after training on rule r.
        tables: ``(R, K_a, K_b)`` the rules.
        seen: ``(K_a, K_b)`` bool mask of S.

    Returns:
        Sens >= 0; NaN if no two rules differ on S (the ratio is undefined).
    """
    pred = _int_array("pred_unseen", pred_unseen, 2)
    tables = _int_array("tables", tables, 3)
    seen = np.asarray(seen, dtype=bool)
    if pred.shape[0] != tables.shape[0] or pred.shape[0] < 2:
        raise ValueError(
            f"pred_unseen and tables must hold the same number (>= 2) of rules, got {pred.shape[0]} "
            f"and {tables.shape[0]}"
        )
    if seen.shape != tables.shape[1:]:
        raise ValueError(f"seen must have the grid shape {tables.shape[1:]}, got {seen.shape}")
    i, j = np.triu_indices(pred.shape[0], k=1)
    moved = (pred[i] != pred[j]).mean(axis=1).mean()
    on_seen = tables[:, seen]
    changed = (on_seen[i] != on_seen[j]).mean(axis=1).mean()
    return float(moved / changed) if changed > 0 else float("nan")


@dataclass(frozen=True)
class ErrorDecomposition:
    """E_U(n) = data(n) + composition, per sample size.

    Attributes:
        ns: sample sizes per combination.
        total: ``E_U(n)`` novel-combination error at each n.
        data: ``E_U(n) - E_U(inf)``.
        composition: ``E_U(inf)``.
    """

    ns: tuple[int, ...]
    total: tuple[float, ...]
    data: tuple[float, ...]
    composition: float


def error_decomposition(acc_unseen_by_n: Mapping[int, float], acc_unseen_inf: float) -> ErrorDecomposition:
    """Split novel-combination error into the insufficient-data term and the composition term."""
    if not acc_unseen_by_n:
        raise ValueError("acc_unseen_by_n is empty")
    check_in_range("acc_unseen_inf", acc_unseen_inf, 0.0, 1.0)
    ns = tuple(sorted(int(n) for n in acc_unseen_by_n))
    for n in ns:
        check_positive("acc_unseen_by_n key (n)", n, integer=True)
        check_in_range(f"acc_unseen_by_n[{n}]", acc_unseen_by_n[n], 0.0, 1.0)
    comp = 1.0 - float(acc_unseen_inf)
    total = tuple(1.0 - float(acc_unseen_by_n[n]) for n in ns)
    return ErrorDecomposition(ns=ns, total=total, data=tuple(t - comp for t in total), composition=comp)


@dataclass(frozen=True)
class RuleEvaluation:
    """One learner trained once per rule on the same inputs.

    Attributes:
        acc_seen: ``(R,)`` accuracy on held-out inputs from seen combinations.
        acc_unseen: ``(R,)`` accuracy on inputs from novel combinations.
        pred_unseen: ``(R, N_u)`` predictions on the novel inputs.
    """

    acc_seen: np.ndarray
    acc_unseen: np.ndarray
    pred_unseen: np.ndarray


def evaluate_on_rules(
    learner: str,
    train: Samples,
    tables: np.ndarray,
    m: int,
    test_seen: Samples,
    test_unseen: Samples,
    *,
    seed: int = 0,
    **kwargs: object,
) -> RuleEvaluation:
    """Train ``learner`` on ``train`` labelled by each rule and score it on both test sets."""
    tables = _int_array("tables", tables, 3)
    Y = np.stack([train.labels(t) for t in tables])
    pred_s, pred_u = fit_predict_many(
        learner, train.X, Y, train.combos, m, [test_seen.X, test_unseen.X], seed=seed, **kwargs
    )
    return RuleEvaluation(
        acc_seen=accuracy_per_rule(pred_s, test_seen.combos, tables),
        acc_unseen=accuracy_per_rule(pred_u, test_unseen.combos, tables),
        pred_unseen=pred_u,
    )


def best_constant_accuracy(tables: np.ndarray, combos: np.ndarray) -> np.ndarray:
    """Per rule, the accuracy of the best constant label on the inputs ``combos``: the learn-nothing
    level (for multiplication mod 3 the label 0 covers more than half of a grid, far above 1/m).

    Args:
        tables: ``(R, K_a, K_b)`` rules.
        combos: ``(N, 2)`` combination of each evaluated input.

    Returns:
        ``(R,)`` max over labels of the label's frequency among the inputs.
    """
    tables = _int_array("tables", tables, 3)
    combos = _int_array("combos", combos, 2)
    truth = tables[:, combos[:, 0], combos[:, 1]]  # (R, N)
    m = int(tables.max()) + 1
    counts = np.stack([np.bincount(row, minlength=m) for row in truth])
    return counts.max(axis=1) / truth.shape[1]


def cell_folds(seen: np.ndarray, folds: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Held-out masks of seen combinations for cross-validation over combinations.

    Each seen cell is held out in at most one fold; a cell is held out in a fold only if every row and
    every column keeps a training cell there (so every concept stays known). Cells that fit no fold
    are never held out.

    Args:
        seen: ``(K_a, K_b)`` bool mask of S.
        folds: number of folds (>= 2).
        rng: shuffles the cells.

    Returns:
        ``folds`` bool masks of the held-out cells (each a subset of ``seen``; some may be empty).
    """
    seen = np.asarray(seen, dtype=bool)
    if seen.ndim != 2:
        raise ValueError(f"seen must be a (K_a, K_b) mask, got shape {seen.shape}")
    check_positive("folds", folds, integer=True)
    if folds < 2:
        raise ValueError(f"folds must be >= 2, got {folds}")
    held = [np.zeros_like(seen) for _ in range(folds)]
    cells = np.argwhere(seen)
    for ci in rng.permutation(len(cells)):
        a, b = cells[ci]
        for f in (int(ci + j) % folds for j in range(folds)):
            train = seen & ~held[f]
            train[a, b] = False
            if train[a].any() and train[:, b].any():
                held[f][a, b] = True
                break
    return held


@dataclass(frozen=True)
class CellCrossValidation:
    """Compatibility and sensitivity of one learner, from the seen combinations only.

    Attributes:
        acc_heldout: ``(R,)`` accuracy on inputs of held-out seen combinations (pooled over folds).
        sens: sensitivity (:func:`sensitivity`) of the predictions on the query inputs, averaged over
            folds (NaN-free: a fold whose rules agree on its training cells is skipped).
    """

    acc_heldout: np.ndarray
    sens: float


def cell_cross_validation(
    learner: str,
    train: Samples,
    tables: np.ndarray,
    m: int,
    heldout_inputs: Samples,
    queries: np.ndarray,
    folds: Sequence[np.ndarray],
    *,
    seed: int = 0,
    **kwargs: object,
) -> CellCrossValidation:
    """Train ``learner`` per fold on the seen combinations outside the fold and score it on the fold.

    Args:
        learner: a name of :data:`~.learners.LEARNERS`.
        train: samples of the seen combinations.
        tables: ``(R, K_a, K_b)`` rules.
        m: number of labels.
        heldout_inputs: fresh samples of the seen combinations (scored where their cell is held out).
        queries: ``(N_q, 2 d)`` unlabelled inputs (e.g. of novel combinations) for the sensitivity.
        folds: held-out masks (:func:`cell_folds`).
    """
    tables = _int_array("tables", tables, 3)
    correct = np.zeros(tables.shape[0])
    total = 0
    sens: list[float] = []
    for held in folds:
        held = np.asarray(held, dtype=bool)
        if not held.any():
            continue
        keep = ~held[train.combos[:, 0], train.combos[:, 1]]
        sel = held[heldout_inputs.combos[:, 0], heldout_inputs.combos[:, 1]]
        sub = Samples(X=train.X[keep], combos=train.combos[keep])
        Y = np.stack([sub.labels(t) for t in tables])
        pred_h, pred_q = fit_predict_many(
            learner, sub.X, Y, sub.combos, m, [heldout_inputs.X[sel], queries], seed=seed, **kwargs
        )
        correct += accuracy_per_rule(pred_h, heldout_inputs.combos[sel], tables) * int(sel.sum())
        total += int(sel.sum())
        trained = np.zeros(tables.shape[1:], dtype=bool)
        trained[sub.combos[:, 0], sub.combos[:, 1]] = True
        s = sensitivity(pred_q, tables, trained)
        if np.isfinite(s):
            sens.append(s)
    if total == 0:
        raise ValueError("folds hold out no seen combination that has held-out inputs")
    return CellCrossValidation(acc_heldout=correct / total, sens=float(np.mean(sens)) if sens else 0.0)
