"""Data for monotone regression: our synthetic targets and two offline tabular sets.

Part of the claim check for *Advancing Constrained Monotonic Neural Networks: Achieving Universal
Approximation Beyond Bounded Activations* (Sartor, Sinigaglia, Susto, ICML 2025,
https://arxiv.org/abs/2505.02537). The paper's own benchmark numbers were not recovered, so the
data are our choice: 1-D targets that probe what each constrained family can represent (the
paper's Figure 1 shows a bounded-activation net failing to follow an unbounded trend that a
ReLU-based one follows), an 8-D target for the init-scale study, and Auto MPG, a standard monotone
benchmark that ships offline.

Our choices: the targets are tanh(3x), min(x, 0), x³/8 and a smoothed staircase with centres
c = (−1.5, −0.5, 0.5, 1.5); 1-D data get 512 noisy training points and 128 noisy validation points,
both uniform on [−2, 2], and are tested on a 1024-point grid against the noiseless target; the 8-D
inputs are uniform on [−1, 1]^8 (where tanh(2x) is not saturated), split 60/20/20 into
train/validation/test, the test targets noiseless. Auto MPG comes from the ``vega-datasets``
package (``cars``, offline), decreasing in displacement, horsepower and weight; diabetes from
scikit-learn, increasing in bmi and bp (our domain assumption, not a label of the data).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .models import parse_monotone

__all__ = [
    "TARGETS_1D",
    "RegressionSplit",
    "TabularDataset",
    "check_declared_directions",
    "load_auto_mpg",
    "load_diabetes_monotone",
    "load_tabular_csv",
    "synthetic_1d",
    "synthetic_8d",
    "target_8d",
    "validate_regression_data",
]

_STAIR_CENTRES = (-1.5, -0.5, 0.5, 1.5)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _staircase(x: np.ndarray) -> np.ndarray:
    return np.sum([_sigmoid(10.0 * (x - c)) for c in _STAIR_CENTRES], axis=0) / 4.0


TARGETS_1D: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "tanh": lambda x: np.tanh(3.0 * x),  # saturates on both sides
    "neg_part": lambda x: np.minimum(x, 0.0),  # concave
    "cubic": lambda x: x**3 / 8.0,
    "staircase": _staircase,  # smoothed staircase, Σ_k sigmoid(10(x − c_k)) / 4
}


def target_8d(X: np.ndarray) -> np.ndarray:
    """f(x) = Σ_i tanh(2 x_i) + softplus(x1 + x2) + min(x3, x4), increasing in every input."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != 8:
        raise ValueError(f"X must have shape (n, 8), got {X.shape}")
    return np.tanh(2.0 * X).sum(axis=1) + np.logaddexp(0.0, X[:, 0] + X[:, 1]) + np.minimum(X[:, 2], X[:, 3])


@dataclass(frozen=True)
class RegressionSplit:
    """Train/validation/test arrays; ``y_test`` is noiseless for synthetic data. X: (n, d), y: (n,)."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    monotone: tuple[int, ...]


def synthetic_1d(
    target: str, *, n: int = 512, n_val: int = 128, n_test: int = 1024, noise: float = 0.01, seed: int = 0
) -> RegressionSplit:
    """The 1-D expressivity task: x ~ U[−2, 2], y = target(x) + N(0, noise²); test on a clean grid."""
    if target not in TARGETS_1D:
        raise ValueError(f"target must be one of {sorted(TARGETS_1D)}, got {target!r}")
    if n < 2 or n_val < 1 or n_test < 2:
        raise ValueError(f"need n >= 2, n_val >= 1, n_test >= 2, got {n}, {n_val}, {n_test}")
    if noise < 0:
        raise ValueError(f"noise must be non-negative, got {noise}")
    rng = np.random.default_rng(seed)
    f = TARGETS_1D[target]
    x_tr, x_va = rng.uniform(-2, 2, size=(n, 1)), rng.uniform(-2, 2, size=(n_val, 1))
    x_te = np.linspace(-2, 2, n_test)[:, None]
    return RegressionSplit(
        X_train=x_tr,
        y_train=f(x_tr[:, 0]) + noise * rng.standard_normal(n),
        X_val=x_va,
        y_val=f(x_va[:, 0]) + noise * rng.standard_normal(n_val),
        X_test=x_te,
        y_test=f(x_te[:, 0]),
        monotone=(1,),
    )


def synthetic_8d(*, n: int = 2000, noise: float = 0.05, seed: int = 0) -> RegressionSplit:
    """The 8-D robustness task: x ~ U[−1, 1]^8, y = :func:`target_8d` + noise; 60/20/20 split."""
    if n < 10:
        raise ValueError(f"n must be at least 10, got {n}")
    if noise < 0:
        raise ValueError(f"noise must be non-negative, got {noise}")
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 8))
    clean = target_8d(X)
    y = clean + noise * rng.standard_normal(n)
    a, b = int(0.6 * n), int(0.8 * n)
    return RegressionSplit(X[:a], y[:a], X[a:b], y[a:b], X[b:], clean[b:], monotone=(1,) * 8)


@dataclass(frozen=True)
class TabularDataset:
    """A regression table: X (n, d) float64, y (n,), directions and column names."""

    X: np.ndarray
    y: np.ndarray
    monotone: tuple[int, ...]
    feature_names: tuple[str, ...]
    target_name: str


def validate_regression_data(
    X: np.ndarray, y: np.ndarray, monotone: Sequence[int] | None = None, *, min_rows: int = 2
) -> None:
    """Raise ValueError on bad shapes, NaN/inf or too few rows; warn on constant or exactly collinear
    columns and on declared directions the data clearly contradict (:func:`check_declared_directions`)."""
    X, y = np.asarray(X), np.asarray(y)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n, d), got shape {X.shape}")
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
    if X.shape[0] < min_rows:
        raise ValueError(f"need at least {min_rows} rows, got {X.shape[0]}")
    if not (np.isfinite(X).all() and np.isfinite(y).all()):
        raise ValueError("X or y contains NaN or inf; drop or impute those rows first")
    constant = [j for j in range(X.shape[1]) if np.ptp(X[:, j]) == 0]
    if constant:
        warnings.warn(f"constant feature column(s) {constant} carry no information", stacklevel=2)
    varying = [j for j in range(X.shape[1]) if j not in constant]
    if len(varying) > 1:
        Z = X[:, varying] - X[:, varying].mean(axis=0)
        Z = Z / np.linalg.norm(Z, axis=0)
        if np.linalg.matrix_rank(Z, tol=1e-8) < len(varying):
            warnings.warn(
                "feature columns are exactly collinear: the model cannot tell their effects apart, and a "
                "monotone constraint on one of them is not identifiable from the data",
                stacklevel=2,
            )
    if monotone is not None:
        check_declared_directions(X, y, parse_monotone(monotone, X.shape[1]))


def _rank(a: np.ndarray) -> np.ndarray:
    order = np.argsort(a, kind="mergesort")
    r = np.empty(len(a))
    r[order] = np.arange(len(a))
    return r


def check_declared_directions(
    X: np.ndarray, y: np.ndarray, monotone: Sequence[int], *, threshold: float = 0.3
) -> list[int]:
    """Warn about features whose marginal Spearman correlation with y opposes the declared direction
    by more than ``threshold`` (a heuristic: a clear contradiction, not a proof). Returns their indices.
    """
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    directions = parse_monotone(monotone, X.shape[1])
    ry = _rank(y)
    flagged = []
    for j, m in enumerate(directions):
        if m == 0 or np.ptp(X[:, j]) == 0 or np.ptp(y) == 0:
            continue
        rho = float(np.corrcoef(_rank(X[:, j]), ry)[0, 1])
        if m * rho < -threshold:
            flagged.append(j)
            word = "increasing" if m > 0 else "decreasing"
            warnings.warn(
                f"feature {j} is declared {word} but its Spearman correlation with y is {rho:+.2f}: "
                "the data clearly contradict the declared direction",
                stacklevel=2,
            )
    return flagged


def load_auto_mpg() -> TabularDataset:
    """Auto MPG from the ``vega-datasets`` package (``cars``, shipped with the package, offline).

    Rows with missing values are dropped (392 remain). Features: cylinders, displacement,
    horsepower, weight, acceleration, model year, and origin one-hot (USA, Europe, Japan).
    Miles per gallon decreases in displacement, horsepower and weight; the rest are free. The
    three origin indicators sum to one (collinear with a bias), which an MLP tolerates.
    """
    try:
        from vega_datasets import data as vega_data
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "load_auto_mpg needs the 'vega-datasets' package: pip install 'icml25[theory]' "
            "(or pip install vega-datasets)"
        ) from err
    with warnings.catch_warnings():  # vega-datasets passes a keyword newer pandas deprecates
        warnings.simplefilter("ignore")
        df = vega_data.cars().dropna(subset=["Miles_per_Gallon", "Horsepower"])
    year = df["Year"].astype("datetime64[ns]").dt.year.to_numpy(dtype=np.float64)
    cols = {
        "Cylinders": df["Cylinders"].to_numpy(dtype=np.float64),
        "Displacement": df["Displacement"].to_numpy(dtype=np.float64),
        "Horsepower": df["Horsepower"].to_numpy(dtype=np.float64),
        "Weight_in_lbs": df["Weight_in_lbs"].to_numpy(dtype=np.float64),
        "Acceleration": df["Acceleration"].to_numpy(dtype=np.float64),
        "Year": year,
    }
    for origin in ("USA", "Europe", "Japan"):
        cols[f"Origin_{origin}"] = (df["Origin"] == origin).to_numpy(dtype=np.float64)
    names = tuple(cols)
    decreasing = {"Displacement", "Horsepower", "Weight_in_lbs"}
    return TabularDataset(
        X=np.column_stack([cols[c] for c in names]),
        y=df["Miles_per_Gallon"].to_numpy(dtype=np.float64),
        monotone=tuple(-1 if c in decreasing else 0 for c in names),
        feature_names=names,
        target_name="Miles_per_Gallon",
    )


def load_diabetes_monotone() -> TabularDataset:
    """scikit-learn's bundled diabetes data; progression increasing in bmi and bp (assumption)."""
    from sklearn.datasets import load_diabetes

    ds = load_diabetes()
    names = tuple(ds.feature_names)
    return TabularDataset(
        X=np.asarray(ds.data, dtype=np.float64),
        y=np.asarray(ds.target, dtype=np.float64),
        monotone=tuple(1 if c in ("bmi", "bp") else 0 for c in names),
        feature_names=names,
        target_name="progression",
    )


def load_tabular_csv(
    path: str | Path,
    *,
    target: str,
    increasing: Sequence[str] = (),
    decreasing: Sequence[str] = (),
) -> TabularDataset:
    """Loader hook for a local numeric CSV with a header (COMPAS, Blog Feedback, ... when available).

    Rows with missing values are dropped; columns not named in ``increasing``/``decreasing`` are free.
    """
    table: Any = np.genfromtxt(Path(path), delimiter=",", names=True, dtype=np.float64)
    names = list(table.dtype.names or ())
    for col in [target, *increasing, *decreasing]:
        if col not in names:
            raise ValueError(f"column {col!r} not in {path} (columns: {names})")
    features = tuple(c for c in names if c != target)
    X = np.column_stack([table[c] for c in features])
    y = np.asarray(table[target], dtype=np.float64)
    keep = np.isfinite(X).all(axis=1) & np.isfinite(y)
    monotone = tuple(1 if c in increasing else -1 if c in decreasing else 0 for c in features)
    return TabularDataset(X[keep], y[keep], monotone, features, target)
