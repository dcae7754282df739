"""Recursive Feature Machine (RFM) of *Emergence in non-neural models: grokking modular arithmetic
via average gradient outer product* (Mallinar et al., ICML 2025, https://arxiv.org/abs/2407.20199).

RFM alternates an exact kernel regression with a Mahalanobis kernel k_{M_t} and a feature update
M_{t+1} = G_t^s, G_t the AGOP of the fitted predictor over the training inputs. On modular
arithmetic the training loss is zero at every iteration while test accuracy stays at chance for
~10 iterations and then jumps to 100%: grokking without a neural network or gradient descent.

Implements: Algorithm 1 with M_0 = I (or a given M_0), ridgeless (default) or ridge solve in
float64, centred AGOP (the official code's ``centering=True``), s = 1/2, and per-iteration records
of train/test MSE, accuracy, MSE of the correct-class output, tr(M_t), circulant deviation and
AGOP alignment with the final M (Sec. 3). An optional projection of M_{t+1} gives the
enforced-circulant RFM of App. F.

Iteration t of the history describes the model fitted with M_t; t = 0 is the fixed-kernel
baseline M_0 = I. ``iters`` solves are made; the AGOP after the last solve is not computed.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.metrics import r2_score
from sklearn.utils import Tags
from sklearn.utils.validation import check_is_fitted, validate_data

from icml25.core.validate import check_float_convertible

from .agop import kernel_agop, psd_matrix_power
from .data import OPERATIONS
from .kernels import GaussianMahalanobisKernel, MahalanobisKernel
from .measures import agop_alignment, block_circulant_deviation


@dataclass(frozen=True)
class FitMetrics:
    """Square-loss metrics of a predictor on one labelled set.

    Attributes:
        mse: mean over samples and outputs of (f(x) − y)².
        acc: fraction with argmax f(x) = argmax y; NaN for a single output, which is a regression
            target (read ``r2``).
        correct_mse: mean over samples of (f_{y}(x) − 1)², the MSE of the correct-class output
            (the MSE itself for a single output).
        r2: coefficient of determination, averaged uniformly over outputs (scikit-learn's ``r2_score``).
    """

    mse: float
    acc: float
    correct_mse: float
    r2: float = float("nan")


@dataclass(frozen=True)
class RFMIteration:
    """One RFM iteration: the model fitted with feature matrix M_t.

    Attributes:
        iteration: t (0 is the fixed kernel M_0).
        train: metrics on the training set.
        evals: metrics on each named evaluation set.
        trace_M: tr(M_t).
        circulant_deviation: D of M_t's bottom-left block (NaN if the block is zero or no ``op``).
        agop_alignment: ρ(M_t, M_final), filled in when ``fit`` ends (NaN inside callbacks).
        seconds: wall time of the iteration (solve, evaluation, AGOP).
    """

    iteration: int
    train: FitMetrics
    evals: Mapping[str, FitMetrics] = field(default_factory=dict)
    trace_M: float = float("nan")  # noqa: N815 (the paper's symbol)
    circulant_deviation: float = float("nan")
    agop_alignment: float = float("nan")
    seconds: float = float("nan")

    @property
    def train_mse(self) -> float:
        return self.train.mse

    @property
    def train_acc(self) -> float:
        return self.train.acc

    @property
    def test_mse(self) -> float:
        return self.evals["test"].mse if "test" in self.evals else float("nan")

    @property
    def test_acc(self) -> float:
        return self.evals["test"].acc if "test" in self.evals else float("nan")


def fit_metrics(pred: np.ndarray, Y: np.ndarray) -> FitMetrics:
    """MSE, accuracy and correct-output MSE of predictions ``pred`` against targets ``Y`` (n, c)."""
    mse = float(np.mean((pred - Y) ** 2))
    if Y.shape[1] > 1:
        labels = Y.argmax(axis=1)
        acc = float(np.mean(pred.argmax(axis=1) == labels))
        correct = pred[np.arange(len(labels)), labels]
        correct_mse = float(np.mean((correct - Y[np.arange(len(labels)), labels]) ** 2))
    else:
        acc = float("nan")
        correct_mse = mse
    r2 = float(r2_score(Y, pred)) if len(Y) > 1 else float("nan")
    return FitMetrics(mse=mse, acc=acc, correct_mse=correct_mse, r2=r2)


def solve_kernel_system(K: np.ndarray, Y: np.ndarray, ridge: float = 0.0) -> np.ndarray:
    """α = (K + ridge·I)⁻¹ Y in float64 (Alg. 1, kernel regression).

    Tries a Cholesky solve (``assume_a='pos'``), then a symmetric indefinite one, then least
    squares if K is numerically singular.

    Args:
        K: (n, n) symmetric Gram matrix.
        Y: (n, c) targets.
        ridge: λ ≥ 0.

    Returns:
        (n, c) coefficients α.
    """
    A = K + ridge * np.eye(K.shape[0]) if ridge else K
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
        for assume_a in ("pos", "sym"):
            try:
                return scipy.linalg.solve(A, Y, assume_a=assume_a, check_finite=False)
            except (np.linalg.LinAlgError, ValueError):
                continue
    return scipy.linalg.lstsq(A, Y, check_finite=False)[0]


def _warn_if_unreliable(fitted: np.ndarray, Y: np.ndarray, iteration: int) -> None:
    """Warn where a kernel solve came back numerically meaningless. For a PSD Gram matrix and any
    ridge >= 0 the training residual Y - K(K + ridge I)^-1 Y is never longer than Y, so a fit worse
    than predicting 0 (or a non-finite one) means the solve failed, typically a numerically singular
    ridgeless Gram matrix; the AGOP of such coefficients is noise and the next M with it."""
    residual = float(np.sum((fitted - Y) ** 2))
    scale = float(np.sum(Y**2))
    if not np.isfinite(residual) or residual > 1.01 * scale + 1e-12:
        warnings.warn(
            f"RFM iteration {iteration}: the kernel solve is numerically unreliable (squared training "
            f"residual {residual:.3g} exceeds that of predicting 0, {scale:.3g}); the Gram matrix is "
            "numerically singular: set ridge > 0 (e.g. 1e-6)",
            RuntimeWarning,
            stacklevel=2,
        )


def _as_2d(name: str, a: object) -> np.ndarray:
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim == 1 and name.startswith("Y"):
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


class RFM(RegressorMixin, BaseEstimator):
    """Recursive Feature Machine with a Mahalanobis kernel (Algorithm 1).

    A scikit-learn regressor: hyperparameters are stored unchanged by ``__init__`` (so
    ``get_params``/``set_params``/``clone`` work) and checked in :meth:`fit`; ``score`` is R² (for
    one-hot classification targets read ``history_`` or :func:`fit_metrics` for accuracy); a 1-D
    target gives 1-D predictions. It works in ``cross_val_score``, grid searches and pipelines.

    Args:
        kernel: a :class:`MahalanobisKernel`; default Gaussian with L = 2.5.
        iters: number T of kernel solves (M_0, ..., M_{T−1}); the paper's code uses 50.
        ridge: λ ≥ 0 added to the Gram matrix (0: ridgeless, the paper's default).
        agop_power: s in M_{t+1} = G_t^s (1/2 in the paper).
        center_grads: centre the Jacobians across training points before the AGOP.
        M0: initial feature matrix (d, d); None means the identity.
        op: the modular task (``"add"``, ...) for the circulant-deviation measure of the
            bottom-left block (reordered by discrete log for mul/div); None skips it.
        project: optional map applied to each new M_{t+1}, e.g.
            ``lambda M: enforce_circulant(M, "add")`` for App. F.

    Attributes (after ``fit``):
        M_: (d, d) feature matrix of the last solve.
        alpha_: (n, c) coefficients of the last solve.
        X_fit_: (n, d) training inputs (the kernel centres).
        history_: list of :class:`RFMIteration`, one per solve.
        Ms_: list of the feature matrices M_0..M_{T−1} used.
    """

    def __init__(
        self,
        kernel: MahalanobisKernel | None = None,
        iters: int = 30,
        ridge: float = 0.0,
        agop_power: float = 0.5,
        center_grads: bool = True,
        M0: np.ndarray | None = None,
        op: str | None = None,
        project: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> None:
        self.kernel = kernel
        self.iters = iters
        self.ridge = ridge
        self.agop_power = agop_power
        self.center_grads = center_grads
        self.M0 = M0
        self.op = op
        self.project = project

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True  # one-hot targets are fitted jointly (Alg. 1)
        return tags

    def _check_params(self, d: int) -> tuple[MahalanobisKernel, np.ndarray]:
        kernel = GaussianMahalanobisKernel() if self.kernel is None else self.kernel
        if not (
            callable(getattr(kernel, "matrix", None))
            and callable(getattr(kernel, "gradient_coefficients", None))
        ):
            raise ValueError("kernel must provide matrix(X, Z, M) and gradient_coefficients(X, Z, M, K)")
        if isinstance(self.iters, bool) or not isinstance(self.iters, int | np.integer) or self.iters < 1:
            raise ValueError(f"iters must be a positive integer, got {self.iters!r}")
        if not (np.isfinite(self.ridge) and self.ridge >= 0):
            raise ValueError(f"ridge must be a finite number >= 0, got {self.ridge}")
        if not (np.isfinite(self.agop_power) and self.agop_power > 0):
            raise ValueError(f"agop_power must be a positive number, got {self.agop_power}")
        if self.op is not None and self.op not in OPERATIONS:
            raise ValueError(f"op must be None or one of {OPERATIONS}, got {self.op!r}")
        if self.op is not None and d % 2:
            raise ValueError(f"op is set, so inputs must be e_a ⊕ e_b with even dimension 2p, got d={d}")
        if self.M0 is None:
            M = np.eye(d)
        else:
            M = np.asarray(self.M0, dtype=np.float64)
            if M.shape != (d, d):
                raise ValueError(f"M0 must have shape (d, d) = ({d}, {d}), got {M.shape}")
            if not np.allclose(M, M.T, atol=1e-10 * max(1.0, float(np.abs(M).max()))):
                raise ValueError("M0 must be symmetric")
        return kernel, M

    def fit(
        self,
        X: np.ndarray,
        Y: np.ndarray,
        eval_sets: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
        callback: Callable[[RFMIteration, np.ndarray], None] | None = None,
    ) -> RFM:
        """Run T iterations of RFM on (X, Y).

        Args:
            X: (n, d) training inputs.
            Y: (n, c) training targets (one-hot for classification).
            eval_sets: named held-out sets ``{"test": (X_te, Y_te)}`` evaluated at every iteration;
                the name ``"test"`` backs :attr:`RFMIteration.test_acc`.
            callback: called after each iteration with the record and M_t.

        Returns:
            self, with ``M_``, ``alpha_``, ``history_`` and ``Ms_`` set.
        """
        check_float_convertible("X", X)
        check_float_convertible("Y", Y)
        n_x, n_y = _n_rows(X), _n_rows(Y)
        if n_x is not None and n_y is not None and n_x != n_y:
            raise ValueError(f"X and Y must have the same number of rows, got {n_x} and {n_y}")
        X, Y = validate_data(self, X, Y, multi_output=True, y_numeric=True, dtype=np.float64)
        self.single_output_ = Y.ndim == 1
        Y = Y[:, None] if Y.ndim == 1 else Y
        n, d = X.shape
        kernel, M = self._check_params(d)
        evals: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name, pair in (eval_sets or {}).items():
            if not (isinstance(pair, tuple | list) and len(pair) == 2):
                raise ValueError(f"eval_sets[{name!r}] must be a pair (X, Y)")
            Xe, Ye = _as_2d(f"eval_sets[{name!r}] X", pair[0]), _as_2d(f"Y of eval_sets[{name!r}]", pair[1])
            if Xe.shape[1] != d or Ye.shape[1] != Y.shape[1] or Xe.shape[0] != Ye.shape[0]:
                raise ValueError(
                    f"eval_sets[{name!r}] must have shapes (m, {d}) and (m, {Y.shape[1]}), "
                    f"got {Xe.shape} and {Ye.shape}"
                )
            evals[name] = (Xe, Ye)

        history: list[RFMIteration] = []
        Ms: list[np.ndarray] = []
        alpha = np.zeros((n, Y.shape[1]))
        for t in range(int(self.iters)):
            start = time.perf_counter()
            # Alg. 1 (kernel regression): alpha = (K_M(X, X) + ridge I)^{-1} Y
            K = kernel.matrix(X, X, M)
            alpha = solve_kernel_system(K, Y, float(self.ridge))
            fitted = K @ alpha
            _warn_if_unreliable(fitted, Y, t)
            train = fit_metrics(fitted, Y)
            ev = {name: fit_metrics(kernel.matrix(Xe, X, M) @ alpha, Ye) for name, (Xe, Ye) in evals.items()}
            Ms.append(M)
            record_M = M
            if t + 1 < self.iters:
                # Alg. 1 (feature update): M_{t+1} = AGOP(f_t)^s
                G = kernel_agop(kernel, X, X, alpha, M, center=bool(self.center_grads), K=K)
                M = psd_matrix_power(G, float(self.agop_power))
                if self.project is not None:
                    M = np.asarray(self.project(M), dtype=np.float64)
            del K
            rec = RFMIteration(
                iteration=t,
                train=train,
                evals=ev,
                trace_M=float(np.trace(record_M)),
                circulant_deviation=(
                    block_circulant_deviation(record_M, self.op) if self.op is not None else float("nan")
                ),
                seconds=time.perf_counter() - start,
            )
            history.append(rec)
            if callback is not None:
                callback(rec, record_M)

        self.M_ = Ms[-1]
        self.alpha_ = alpha
        self.X_fit_ = X
        self.kernel_ = kernel
        self.Ms_ = Ms
        # Sec. 3: AGOP alignment with the final feature matrix (a-posteriori measure)
        self.history_ = [
            replace(r, agop_alignment=agop_alignment(Mt, self.M_)) for r, Mt in zip(history, Ms, strict=True)
        ]
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """f(x) = K_M(x, X_fit) α for the rows of X: (m, c), or (m,) when fitted on a 1-D target."""
        check_is_fitted(self, "alpha_", msg="RFM is not fitted; call fit(X, Y) first")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        pred = self.kernel_.matrix(X, self.X_fit_, self.M_) @ self.alpha_
        return pred[:, 0] if self.single_output_ else pred


class RFMClassifier(ClassifierMixin, RFM):
    """RFM on class labels: the one-hot regression of Algorithm 1 (how the paper fits its modular
    tasks), predicting the class with the largest output.

    Same hyperparameters as :class:`RFM`. ``fit(X, y)`` takes 1-D labels of any type (``classes_``
    keeps their order), ``score`` is accuracy, ``decision_function`` the (m, c) kernel outputs.
    ``predict_proba`` is those outputs clipped at 0 and normalised per row (uniform where all are
    0): a ranking-preserving normalisation for tools that need probabilities, not a calibrated
    probability model (the paper's predictor is a ridgeless kernel regression).
    """

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = False
        return tags

    def _one_hot(self, y: object, name: str) -> np.ndarray:
        labels = np.asarray(y)
        if labels.ndim != 1:
            raise ValueError(f"{name} must be 1-D class labels, got shape {labels.shape}")
        unknown = ~np.isin(labels, self.classes_)
        if unknown.any():
            unseen = sorted(set(labels[unknown].tolist()))[:5]
            raise ValueError(f"{name} holds labels not seen in fit: {unseen}")
        return (labels[:, None] == self.classes_[None, :]).astype(np.float64)

    def fit(  # type: ignore[override]
        self,
        X: np.ndarray,
        y: np.ndarray,
        eval_sets: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
        callback: Callable[[RFMIteration, np.ndarray], None] | None = None,
    ) -> RFMClassifier:
        """Fit on labels ``y`` (n,); ``eval_sets`` hold ``(X, labels)`` pairs."""
        from sklearn.utils.multiclass import check_classification_targets

        labels = np.asarray(y)
        if labels.ndim != 1:
            raise ValueError(f"y must be 1-D class labels, got shape {labels.shape}")
        check_classification_targets(labels)
        self.classes_ = np.unique(labels)
        if self.classes_.size < 2:
            raise ValueError("y must contain at least 2 classes")
        evals = {
            name: (X_eval, self._one_hot(y_eval, f"eval_sets[{name!r}] labels"))
            for name, (X_eval, y_eval) in (eval_sets or {}).items()
        }
        super().fit(X, self._one_hot(labels, "y"), eval_sets=evals, callback=callback)
        return self

    def _outputs(self, X: np.ndarray) -> np.ndarray:
        return super().predict(X)  # (m, c): checks the fit first

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """The kernel outputs (m, c), one column per class of ``classes_``; for two classes, as
        scikit-learn's binary classifiers give it, the (m,) margin of ``classes_[1]`` over ``classes_[0]``."""
        out = self._outputs(X)
        return out[:, 1] - out[:, 0] if out.shape[1] == 2 else out

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The class with the largest output."""
        out = self._outputs(X)
        return self.classes_[np.argmax(out, axis=1)]

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Outputs clipped at 0 and normalised per row (see the class docstring)."""
        scores = np.clip(self._outputs(X), 0.0, None)
        totals = scores.sum(axis=1, keepdims=True)
        uniform = np.full_like(scores, 1.0 / scores.shape[1])
        return np.where(totals > 0, scores / np.where(totals > 0, totals, 1.0), uniform)


def _n_rows(a: object) -> int | None:
    shape = getattr(a, "shape", None)
    if shape is None:
        try:
            return len(a)  # type: ignore[arg-type]
        except TypeError:
            return None
    return int(shape[0]) if len(shape) else None
