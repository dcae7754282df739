"""Unit tests for icml25.theory.rfm_grokking (Mallinar et al., ICML 2025, arXiv 2407.20199)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import circulant
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import r2_score
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from icml25.theory.rfm_grokking import (
    OPERATIONS,
    RFM,
    GaussianMahalanobisKernel,
    QuadraticMahalanobisKernel,
    QuadraticMLP,
    agop,
    agop_alignment,
    block_circulant_deviation,
    circulant_deviation,
    discrete_log_reorder,
    enforce_circulant,
    fit_metrics,
    hankel_from_column,
    inverse_discrete_log_reorder,
    kernel_agop,
    kernel_predictor_jacobian,
    modular_dataset,
    nfm_agop_correlation,
    pearson_correlation,
    primitive_root,
    psd_matrix_power,
    random_circulant_features,
    train_mlp,
)

torch.set_num_threads(1)


def _random_psd(rng: np.random.Generator, d: int) -> np.ndarray:
    A = rng.normal(size=(d, d))
    return A @ A.T / d + 0.1 * np.eye(d)


# ---------------------------------------------------------------- data


@pytest.mark.parametrize("op", OPERATIONS)
def test_dataset_sizes_labels_and_split(op: str) -> None:
    p = 7
    ds = modular_dataset(p, op, 0.5, seed=3)
    N = p * (p - 1) if op == "div" else p * p
    assert ds.n_train + ds.n_test == N
    assert ds.n_train == int(np.floor(0.5 * N))
    assert ds.X_train.shape == (ds.n_train, 2 * p) and ds.Y_train.shape == (ds.n_train, p)
    assert ds.X_train.dtype == np.float64
    # one-hot structure and decoding
    for X, Y, pairs, labels in (
        (ds.X_train, ds.Y_train, ds.pairs_train, ds.labels_train),
        (ds.X_test, ds.Y_test, ds.pairs_test, ds.labels_test),
    ):
        np.testing.assert_array_equal(X[:, :p].argmax(1), pairs[:, 0])
        np.testing.assert_array_equal(X[:, p:].argmax(1), pairs[:, 1])
        np.testing.assert_array_equal(X.sum(1), 2.0)
        np.testing.assert_array_equal(Y.argmax(1), labels)
        a, b = pairs[:, 0], pairs[:, 1]
        expected = {
            "add": (a + b) % p,
            "sub": (a - b) % p,
            "mul": (a * b) % p,
            "div": None,
        }[op]
        if op == "div":
            assert np.all(b != 0)
            np.testing.assert_array_equal((labels * b) % p, a)  # label = a / b
        else:
            np.testing.assert_array_equal(labels, expected)
    # disjoint and complete
    tr = {tuple(x) for x in ds.pairs_train}
    te = {tuple(x) for x in ds.pairs_test}
    assert not tr & te
    assert len(tr | te) == N


def test_dataset_deterministic_per_seed() -> None:
    a = modular_dataset(11, "add", 0.3, seed=5)
    b = modular_dataset(11, "add", 0.3, seed=5)
    c = modular_dataset(11, "add", 0.3, seed=6)
    np.testing.assert_array_equal(a.pairs_train, b.pairs_train)
    assert not np.array_equal(a.pairs_train, c.pairs_train)
    g = modular_dataset(11, "add", 0.3, seed=np.random.default_rng(5))
    np.testing.assert_array_equal(a.pairs_train, g.pairs_train)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"p": 9, "op": "add", "train_frac": 0.5}, "p"),
        ({"p": 1, "op": "add", "train_frac": 0.5}, "p"),
        ({"p": 7.0, "op": "add", "train_frac": 0.5}, "p"),
        ({"p": 7, "op": "pow", "train_frac": 0.5}, "op"),
        ({"p": 7, "op": "add", "train_frac": 0.0}, "train_frac"),
        ({"p": 7, "op": "add", "train_frac": 1.0}, "train_frac"),
        ({"p": 7, "op": "add", "train_frac": 0.01}, "train_frac"),
    ],
)
def test_dataset_bad_inputs(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        modular_dataset(**kwargs, seed=0)


# ---------------------------------------------------------------- measures


@settings(max_examples=25, deadline=None)
@given(
    p=st.integers(2, 15),
    seed=st.integers(0, 2**31 - 1),
    scale=st.floats(1e-3, 1e3),
)
def test_circulant_deviation_exact_structures(p: int, seed: int, scale: float) -> None:
    col = np.random.default_rng(seed).normal(size=p)
    C = circulant(col)
    H = hankel_from_column(col)
    assert circulant_deviation(C) == pytest.approx(0.0, abs=1e-12)
    assert circulant_deviation(C, allow_hankel=False) == pytest.approx(0.0, abs=1e-12)
    assert circulant_deviation(H) == pytest.approx(0.0, abs=1e-12)
    assert circulant_deviation(scale * C) == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(p=st.integers(3, 15), seed=st.integers(0, 2**31 - 1), scale=st.floats(1e-3, 1e3))
def test_circulant_deviation_random_positive_and_scale_invariant(p: int, seed: int, scale: float) -> None:
    B = np.random.default_rng(seed).normal(size=(p, p))
    D = circulant_deviation(B)
    assert 0.0 < D <= 1.0
    assert circulant_deviation(scale * B) == pytest.approx(D, rel=1e-9)
    assert circulant_deviation(-B) == pytest.approx(D, rel=1e-9)
    assert circulant_deviation(B, allow_hankel=False) >= D


def test_circulant_deviation_hankel_needs_allow_hankel() -> None:
    H = hankel_from_column(np.arange(7.0))
    assert circulant_deviation(H, allow_hankel=False) > 0.1
    assert circulant_deviation(H, allow_hankel=True) == pytest.approx(0.0, abs=1e-12)


def test_circulant_deviation_reference_loop() -> None:
    # Direct transcription of the definition: shift row l by l places, sum column variances.
    B = np.random.default_rng(0).normal(size=(5, 5))
    p = 5
    S = np.array([[B[ell, (j + ell) % p] for j in range(p)] for ell in range(p)])
    ref = sum(float(np.sum((S[:, j] - S[:, j].mean()) ** 2)) for j in range(p)) / float(np.sum(B**2))
    assert circulant_deviation(B, allow_hankel=False) == pytest.approx(ref, rel=1e-12)


def test_circulant_deviation_bad_input_and_zero() -> None:
    with pytest.raises(ValueError, match="block"):
        circulant_deviation(np.zeros((3, 4)))
    assert np.isnan(circulant_deviation(np.zeros((3, 3))))


@pytest.mark.parametrize("p", [5, 7, 11, 13, 61])
def test_primitive_root_is_smallest_generator(p: int) -> None:
    g = primitive_root(p)
    assert sorted(pow(g, i, p) for i in range(p - 1)) == list(range(1, p))
    for h in range(2, g):
        assert len({pow(h, i, p) for i in range(p - 1)}) < p - 1
    assert primitive_root(7) == 3 and primitive_root(11) == 2


def test_primitive_root_bad_input() -> None:
    with pytest.raises(ValueError, match="p"):
        primitive_root(12)


@pytest.mark.parametrize("p", [5, 7, 13])
def test_discrete_log_reorder_turns_multiplicative_circulant_into_circulant(p: int) -> None:
    rng = np.random.default_rng(p)
    f = rng.normal(size=p)
    B = f[np.multiply.outer(np.arange(p), np.arange(p)) % p]  # B[a, b] = f(a·b mod p)
    # B depends on a·b: Hankel in log order; a/b-structure (B[a, b] = f(a·b⁻¹)) is circulant.
    inv = np.array([0] + [pow(int(b), p - 2, p) for b in range(1, p)])
    Bdiv = f[(np.arange(p)[:, None] * inv[None, :]) % p]
    assert circulant_deviation(Bdiv[1:, 1:], allow_hankel=False) > 1e-3
    R = discrete_log_reorder(Bdiv, p)
    assert R.shape == (p - 1, p - 1)
    assert circulant_deviation(R, allow_hankel=False) == pytest.approx(0.0, abs=1e-12)
    assert circulant_deviation(discrete_log_reorder(B, p)) == pytest.approx(0.0, abs=1e-12)
    # inverse restores all entries off residue 0
    back = inverse_discrete_log_reorder(R, p)
    np.testing.assert_array_equal(back[1:, 1:], Bdiv[1:, 1:])
    np.testing.assert_array_equal(back[0], 0.0)


def test_discrete_log_reorder_bad_shape() -> None:
    with pytest.raises(ValueError, match="matrix"):
        discrete_log_reorder(np.zeros((4, 4)), 5)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), scale=st.floats(1e-3, 1e3))
def test_agop_alignment_properties(seed: int, scale: float) -> None:
    rng = np.random.default_rng(seed)
    A, B = _random_psd(rng, 6), _random_psd(rng, 6)
    assert agop_alignment(A, A) == pytest.approx(1.0)
    assert agop_alignment(scale * A, B) == pytest.approx(agop_alignment(A, B))
    assert agop_alignment(A, -A) == pytest.approx(-1.0)
    assert -1.0 <= agop_alignment(A, B) <= 1.0


def test_agop_alignment_bad_shapes() -> None:
    with pytest.raises(ValueError, match="M_t and M_star"):
        agop_alignment(np.eye(3), np.eye(4))


def test_pearson_correlation() -> None:
    a = np.random.default_rng(0).normal(size=(4, 4))
    assert pearson_correlation(a, 3 * a + 1) == pytest.approx(1.0)
    assert pearson_correlation(a, -a) == pytest.approx(-1.0)


# ---------------------------------------------------------------- AGOP vs autograd


def _torch_predictor(kernel: object, Z: np.ndarray, alpha: np.ndarray, M: np.ndarray):
    Zt, at, Mt = (torch.tensor(a, dtype=torch.float64) for a in (Z, alpha, M))

    def f(x: torch.Tensor) -> torch.Tensor:  # x: (d,) -> (c,)
        if isinstance(kernel, GaussianMahalanobisKernel):
            diff = x[None, :] - Zt
            k = torch.exp(-torch.einsum("jd,de,je->j", diff, Mt, diff) / (2 * kernel.bandwidth**2))
        else:
            k = kernel.scale * (Zt @ (Mt @ x)) ** 2
        return k @ at

    return f


@pytest.mark.parametrize("kernel", [GaussianMahalanobisKernel(1.3), QuadraticMahalanobisKernel(3.0)])
@pytest.mark.parametrize("center", [False, True])
def test_kernel_agop_matches_autograd(kernel: object, center: bool) -> None:
    rng = np.random.default_rng(0)
    m, n, d, c = 9, 7, 5, 3
    X, Z = rng.normal(size=(m, d)), rng.normal(size=(n, d))
    alpha, M = rng.normal(size=(n, c)), _random_psd(rng, d)
    f = _torch_predictor(kernel, Z, alpha, M)
    J_auto = torch.func.vmap(torch.func.jacrev(f))(torch.tensor(X)).numpy()  # (m, c, d)
    J = kernel_predictor_jacobian(kernel, X, Z, alpha, M)
    np.testing.assert_allclose(J, J_auto, rtol=1e-10, atol=1e-12)
    G_ref = agop(J_auto, center=center)
    G = kernel_agop(kernel, X, Z, alpha, M, center=center)
    np.testing.assert_allclose(G, G_ref, rtol=1e-9, atol=1e-12)
    # naive per-sample loop agrees with the vectorised agop()
    Jc = J_auto - J_auto.mean(0) if center else J_auto
    naive = sum(Jc[i].T @ Jc[i] for i in range(m)) / m
    np.testing.assert_allclose(G_ref, naive, rtol=1e-12)


def test_kernel_agop_on_training_points_with_precomputed_K() -> None:
    ds = modular_dataset(5, "add", 0.6, seed=0)
    kernel = GaussianMahalanobisKernel(2.5)
    rng = np.random.default_rng(1)
    M = _random_psd(rng, 10)
    K = kernel.matrix(ds.X_train, ds.X_train, M)
    alpha = np.linalg.solve(K, ds.Y_train)
    J = kernel_predictor_jacobian(kernel, ds.X_train, ds.X_train, alpha, M)
    np.testing.assert_allclose(
        kernel_agop(kernel, ds.X_train, ds.X_train, alpha, M, center=True, K=K),
        agop(J, center=True),
        rtol=1e-9,
        atol=1e-13,
    )


def test_gaussian_jacobian_finite_differences() -> None:
    rng = np.random.default_rng(2)
    X, Z = rng.normal(size=(3, 4)), rng.normal(size=(6, 4))
    alpha, M = rng.normal(size=(6, 2)), _random_psd(rng, 4)
    kernel = GaussianMahalanobisKernel(2.5)
    J = kernel_predictor_jacobian(kernel, X, Z, alpha, M)
    eps = 1e-6
    for k in range(4):
        e = np.zeros(4)
        e[k] = eps
        fd = (kernel.matrix(X + e, Z, M) - kernel.matrix(X - e, Z, M)) @ alpha / (2 * eps)
        np.testing.assert_allclose(J[:, :, k], fd, rtol=1e-6, atol=1e-9)


def test_psd_matrix_power_clips_negative_eigenvalues() -> None:
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    G = Q @ np.diag([4.0, 1.0, 0.25, 0.0, -1e-3]) @ Q.T
    R = psd_matrix_power(G, 0.5)
    np.testing.assert_allclose(R, R.T)
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(R)), [0, 0, 0.5, 1.0, 2.0], atol=1e-7)


def test_kernels_reject_bad_hyperparameters() -> None:
    with pytest.raises(ValueError, match="bandwidth"):
        GaussianMahalanobisKernel(0.0)
    with pytest.raises(ValueError, match="scale"):
        QuadraticMahalanobisKernel(-1.0)


# ---------------------------------------------------------------- RFM


@pytest.mark.parametrize("kernel", [GaussianMahalanobisKernel(2.5), QuadraticMahalanobisKernel()])
def test_rfm_interpolates_and_keeps_M_symmetric_psd(kernel: object) -> None:
    ds = modular_dataset(11, "add", 0.5, seed=0)
    seen: list[np.ndarray] = []
    rfm = RFM(kernel, iters=4, op="add").fit(
        ds.X_train,
        ds.Y_train,
        eval_sets={"test": (ds.X_test, ds.Y_test)},
        callback=lambda rec, M: seen.append(M),
    )
    assert len(rfm.history_) == 4 and len(seen) == 4
    for rec, M in zip(rfm.history_, rfm.Ms_, strict=True):
        assert rec.train_mse < 1e-8
        assert rec.train_acc == 1.0
        np.testing.assert_allclose(M, M.T, atol=1e-12)
        assert np.linalg.eigvalsh(M).min() > -1e-10
        assert rec.trace_M == pytest.approx(np.trace(M))
        assert 0.0 <= rec.test_acc <= 1.0
    assert np.isnan(rfm.history_[0].circulant_deviation)  # M_0 = I has a zero off-diagonal block
    assert np.isfinite(rfm.history_[1].circulant_deviation)
    assert rfm.history_[-1].agop_alignment == pytest.approx(1.0)
    np.testing.assert_allclose(rfm.predict(ds.X_train), ds.Y_train, atol=1e-5)
    np.testing.assert_allclose(rfm.M_, rfm.Ms_[-1])


def test_rfm_first_update_is_sqrt_of_centered_agop() -> None:
    ds = modular_dataset(7, "mul", 0.5, seed=1)
    kernel = GaussianMahalanobisKernel(2.5)
    rfm = RFM(kernel, iters=2, center_grads=True).fit(ds.X_train, ds.Y_train)
    K = kernel.matrix(ds.X_train, ds.X_train, np.eye(14))
    alpha = np.linalg.solve(K, ds.Y_train)
    J = kernel_predictor_jacobian(kernel, ds.X_train, ds.X_train, alpha, np.eye(14))
    G = agop(J, center=True)
    expected = psd_matrix_power(G, 0.5)
    # M_1^2 = G exactly; M_1 itself is sensitive to round-off in G's near-zero eigenvalues
    np.testing.assert_allclose(rfm.Ms_[1] @ rfm.Ms_[1], G, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(rfm.Ms_[1], expected, atol=1e-6)
    uncentered = RFM(kernel, iters=2, center_grads=False).fit(ds.X_train, ds.Y_train)
    assert not np.allclose(uncentered.Ms_[1], expected, atol=1e-6)


def test_rfm_deterministic() -> None:
    ds = modular_dataset(7, "sub", 0.5, seed=2)
    a = RFM(iters=3).fit(ds.X_train, ds.Y_train)
    b = RFM(iters=3).fit(ds.X_train, ds.Y_train)
    np.testing.assert_array_equal(a.M_, b.M_)
    np.testing.assert_array_equal(a.alpha_, b.alpha_)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"iters": 0}, "iters"),
        ({"iters": 2.5}, "iters"),
        ({"ridge": -1.0}, "ridge"),
        ({"agop_power": 0.0}, "agop_power"),
        ({"op": "pow"}, "op"),
        ({"M0": np.eye(3)}, "M0"),
        ({"kernel": "gaussian"}, "kernel"),
    ],
)
def test_rfm_bad_hyperparameters(kwargs: dict, name: str) -> None:
    ds = modular_dataset(5, "add", 0.5, seed=0)
    with pytest.raises(ValueError, match=name):
        RFM(**kwargs).fit(ds.X_train, ds.Y_train)


def test_rfm_bad_data() -> None:
    ds = modular_dataset(5, "add", 0.5, seed=0)
    with pytest.raises(ValueError, match="same number of rows"):
        RFM(iters=1).fit(ds.X_train, ds.Y_train[:-1])
    with pytest.raises(ValueError, match="X contains NaN"):
        RFM(iters=1).fit(np.full_like(ds.X_train, np.nan), ds.Y_train)
    with pytest.raises(ValueError, match="eval_sets"):
        RFM(iters=1).fit(ds.X_train, ds.Y_train, eval_sets={"test": (ds.X_test[:, :3], ds.Y_test)})
    with pytest.raises(NotFittedError, match="not fitted"):
        RFM().predict(ds.X_test)


@parametrize_with_checks([RFM(iters=3)])
def test_rfm_is_a_scikit_learn_estimator(estimator, check) -> None:
    check(estimator)  # all 53 applicable checks; check_array_api_input skips without SCIPY_ARRAY_API


def test_rfm_in_cross_validation_and_pipelines() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 5))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2  # depends on two of five coordinates
    model = make_pipeline(StandardScaler(), RFM(iters=3, ridge=1e-3))
    scores = cross_val_score(model, X, y, cv=3)  # R², as scikit-learn regressors score
    assert scores.shape == (3,) and np.all(scores > 0.5)
    fitted = clone(model).fit(X, y)
    assert fitted.predict(X).shape == (120,)
    assert fitted.score(X, y) == pytest.approx(r2_score(y, fitted.predict(X)))
    rfm = RFM(iters=2).set_params(ridge=0.1)
    assert rfm.get_params()["ridge"] == 0.1 and clone(rfm).get_params()["ridge"] == 0.1
    m = fit_metrics(fitted.predict(X)[:, None], y[:, None])
    assert np.isnan(m.acc) and m.r2 == pytest.approx(fitted.score(X, y))


def test_ridge_changes_solution() -> None:
    ds = modular_dataset(7, "add", 0.5, seed=0)
    a = RFM(iters=1).fit(ds.X_train, ds.Y_train)
    b = RFM(iters=1, ridge=1e-1).fit(ds.X_train, ds.Y_train)
    assert a.history_[0].train_mse < 1e-10 < b.history_[0].train_mse


# ---------------------------------------------------------------- circulant features


@pytest.mark.parametrize("op", OPERATIONS)
def test_random_circulant_features_structure(op: str) -> None:
    p = 7
    M = random_circulant_features(p, op, seed=0, power=1.0)  # power 1: M* itself (PSD part)
    assert M.shape == (2 * p, 2 * p)
    np.testing.assert_allclose(M, M.T, atol=1e-12)
    assert np.linalg.eigvalsh(M).min() > -1e-10
    # a function of a block-circulant matrix stays block-circulant (Hankel for sub/div)
    assert block_circulant_deviation(M, op) < 1e-10
    M_half = random_circulant_features(p, op, seed=0)
    assert block_circulant_deviation(M_half, op) < 1e-10
    assert not np.allclose(M_half, random_circulant_features(p, op, seed=1))
    np.testing.assert_array_equal(M_half, random_circulant_features(p, op, seed=0))
    # circulant (add, mul) versus Hankel (sub, div) blocks
    strict = block_circulant_deviation(M_half, op, allow_hankel=False)
    assert (strict < 1e-10) == (op in ("add", "mul"))
    # centred column: C 1 = 0 and A 1 = 0, so M* (and M) annihilate 1 ⊕ ±1
    for sign in (1.0, -1.0):
        v = np.concatenate([np.ones(p), sign * np.ones(p)])
        np.testing.assert_allclose(M_half @ v, 0.0, atol=1e-6)  # sqrt of round-off


@pytest.mark.parametrize("op", OPERATIONS)
def test_enforce_circulant_projection(op: str) -> None:
    p = 7
    M = _random_psd(np.random.default_rng(0), 2 * p)
    assert block_circulant_deviation(M, op) > 0.05
    P = enforce_circulant(M, op)
    assert block_circulant_deviation(P, op) < 1e-12
    np.testing.assert_allclose(P[:p, :p], np.eye(p) - 1.0 / p)
    np.testing.assert_allclose(P[:p, p:], P[p:, :p].T)


@pytest.mark.parametrize("op", OPERATIONS)
def test_random_circulant_kernel_beats_identity(op: str) -> None:
    ds = modular_dataset(31, op, 0.5, seed=0)
    ev = {"test": (ds.X_test, ds.Y_test)}
    fixed = RFM(iters=1).fit(ds.X_train, ds.Y_train, eval_sets=ev).history_[0].test_acc
    M = random_circulant_features(31, op, seed=0)
    circ = RFM(iters=1, M0=M).fit(ds.X_train, ds.Y_train, eval_sets=ev).history_[0].test_acc
    assert fixed < 0.1
    assert circ > 0.5


def test_rfm_grokking_smoke() -> None:
    # Tiny end-to-end run: test accuracy is at chance for the first iterations and ends far above
    # the fixed-kernel baseline (iteration 0); circulant deviation falls. About 1 s.
    ds = modular_dataset(31, "add", 0.5, seed=0)
    rfm = RFM(GaussianMahalanobisKernel(2.5), iters=20, op="add").fit(
        ds.X_train, ds.Y_train, eval_sets={"test": (ds.X_test, ds.Y_test)}
    )
    acc = [r.test_acc for r in rfm.history_]
    dev = [r.circulant_deviation for r in rfm.history_]
    assert max(r.train_mse for r in rfm.history_) < 1e-8
    assert max(acc[:5]) <= 0.05
    assert acc[-1] > acc[0] + 0.3
    assert dev[-1] < 0.5 * dev[1]


# ---------------------------------------------------------------- network


def test_quadratic_mlp_closed_form_agop_matches_autograd() -> None:
    g = torch.Generator().manual_seed(0)
    net = QuadraticMLP(10, 16, 5, generator=g, dtype=torch.float64)
    X = torch.randn(12, 10, generator=g, dtype=torch.float64)
    J = torch.func.vmap(torch.func.jacrev(net))(X).detach().numpy()  # (n, c, d)
    for center in (False, True):
        np.testing.assert_allclose(net.agop(X, center=center), agop(J, center=center), rtol=1e-10, atol=1e-12)
    W1 = net.W1.detach().numpy()
    np.testing.assert_allclose(net.nfm(), W1.T @ W1)
    assert -1.0 <= nfm_agop_correlation(net, X) <= 1.0


def test_quadratic_mlp_init_is_seeded_and_leaves_global_rng() -> None:
    torch.manual_seed(123)
    state = torch.get_rng_state()
    a = QuadraticMLP(6, 8, 3, generator=torch.Generator().manual_seed(4))
    b = QuadraticMLP(6, 8, 3, generator=torch.Generator().manual_seed(4))
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(a.W1, b.W1) and torch.equal(a.W2, b.W2)
    assert float(a.W1.detach().abs().max()) <= 1 / np.sqrt(6)
    with pytest.raises(ValueError, match="width"):
        QuadraticMLP(6, 0, 3)


def test_train_mlp_runs_deterministically_and_records() -> None:
    ds = modular_dataset(7, "add", 0.5, seed=0)

    def run() -> object:
        net = QuadraticMLP(14, 32, 7, generator=torch.Generator().manual_seed(0))
        return train_mlp(net, ds, epochs=6, batch_size=8, measure_every=3, seed=1)

    r1, r2 = run(), run()
    assert len(r1.history) == 6
    assert [h.test_acc for h in r1.history] == [h.test_acc for h in r2.history]
    assert set(r1.agops) == {3, 6}
    assert np.isnan(r1.history[0].nfm_agop_corr) and np.isfinite(r1.history[2].nfm_agop_corr)
    assert r1.final.agop_alignment == pytest.approx(1.0)
    assert r1.history[-1].train_loss < r1.history[0].train_loss
    with pytest.raises(ValueError, match="epochs"):
        train_mlp(QuadraticMLP(14, 4, 7), ds, epochs=0)
    with pytest.raises(ValueError, match="X_train"):
        train_mlp(QuadraticMLP(10, 4, 7), ds, epochs=1)


# ---------------------------------------------------------------- claim check


def test_check_small_criteria_are_all_measured_at_toy_size() -> None:
    """Every small-scale criterion names a metric the check really reports (run at toy size)."""
    from icml25.theory.rfm_grokking.check import CHECK

    result = CHECK.run(
        "small",
        seeds=[0, 1],
        overrides={"p": 11, "iters": 8, "net_width": 16, "net_epochs": 4, "net_measure_every": 2},
    )
    assert len(result.criteria) == 22  # 2 operations x (1 paired + 8 thresholds) + 2 x 2 gates
    unmeasured = [c.name for c in result.criteria if c.value is None or c.threshold is None]
    assert not unmeasured, unmeasured
    head = next(c for c in result.criteria if c.role == "headline")
    assert head.name == "add_beats_fixed" and head.interval is not None  # paired over seeds and pairs
    assert {c.name for c in result.criteria if c.role == "gate"} == {
        f"{op}_{g}" for op in ("add", "mul") for g in ("positive_control", "floor_low")
    }
    m = result.metrics
    for op in ("add", "mul"):  # the floor is about 1/p (2/p for x: label 0 covers 2p - 1 pairs)
        assert m["majority"][f"{op}/test_acc"].max <= 2.5 / 11
    assert {f.file for f in result.figures} == {
        "grokking_curves.png",
        "feature_block.png",
        "network.png",
        "paired_intervals.png",
    }


def test_check_config_validation() -> None:
    from icml25.core.config import ConfigError
    from icml25.theory.rfm_grokking.check import CHECK

    with pytest.raises(ConfigError, match="ops"):
        CHECK.config("small", {"ops": ("pow",)})
    with pytest.raises(ConfigError, match="iters"):
        CHECK.config("small", {"iters": 3})
    for bad, match in (
        ({"p": 33}, "prime"),
        ({"train_frac": 0.0}, "train_frac"),
        ({"bandwidth": -1.0}, "bandwidth"),
        ({"net_width": 0}, "net_width"),
        ({"net_measure_every": 0}, "net_measure_every"),
    ):
        with pytest.raises(ConfigError, match=match):
            CHECK.config("small", bad)


def test_grokking_metrics_on_a_synthetic_history() -> None:
    from icml25.theory.rfm_grokking.check import grokking_metrics

    nan = float("nan")
    test_acc = [0.02, 0.02, 0.03, 0.02, 0.04, 0.05, 0.06, 0.065, 0.5, 0.995, 1.0]  # jump at t = 8
    train_mse = [1e-20] * 10 + [1e-9]
    circ = [nan, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05, 0.04]
    align = [0.7 + 0.03 * t for t in range(11)]
    m = grokking_metrics(test_acc, train_mse, circ, align)
    assert m["jump_iteration"] == 8  # 0.065 is not above 0.02 + 0.05; 0.5 is
    assert m["circ_dev_pre_jump"] == 0.2 and m["circ_dev_ratio_pre_jump"] == pytest.approx(0.25)
    assert m["test_acc_max_first5"] == 0.05  # t = 1..5, not t = 6
    assert m["iteration_99"] == 9 and m["final_test_acc"] == 1.0 and m["train_mse_max"] == 1e-9
    assert m["alignment_pre_jump"] == pytest.approx(0.7 + 0.03 * 7)
    assert m["circ_dev_ratio_final"] == pytest.approx(0.05)
    # the rise: from 0.02 + 0.098 (reached at t = 8) to 0.02 + 0.882 (t = 9), after 8 flat iterations
    assert m["flat_iters"] == 8 and m["rise_iters"] == 1 and m["rise_over_flat"] == pytest.approx(1 / 8)
    creep = grokking_metrics(
        [0.0, 0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0], [0.0] * 8, [nan] + [0.5] * 7, [0.0] * 8
    )
    assert creep["flat_iters"] == 2 and creep["rise_iters"] == 4 and creep["rise_over_flat"] == 2.0
    never = grokking_metrics([0.0] * 8, [0.0] * 8, [nan, 0.0] + [0.0] * 6, [0.0] * 8)
    assert never["jump_iteration"] == 8 and never["iteration_99"] == 8
    assert never["rise_iters"] == 8 and never["rise_over_flat"] == 1.0  # an unfinished rise is not sharp
    assert math.isnan(never["circ_dev_ratio_pre_jump"])  # zero deviation at t = 1: no ratio
    with pytest.raises(ValueError, match="iterations"):
        grokking_metrics([0.0] * 3, [0.0] * 3, [0.0] * 3, [0.0] * 3)


def test_full_preset_runs_a_few_steps_on_cpu() -> None:
    """The paper's configuration (p = 61, four operations, width-1024 network) runs here, shortened."""
    from icml25.theory.rfm_grokking.check import CHECK

    config = CHECK.config("full")
    assert config.p == 61 and set(config.ops) == {"add", "sub", "mul", "div"} and config.net_width == 1024
    result = CHECK.run("full", seeds=[0], overrides={"iters": 7, "net_epochs": 1, "net_measure_every": 1})
    assert set(result.metrics["rfm"]) >= {f"{op}/final_test_acc" for op in config.ops}
    corr = result.metrics["quadratic_net"]["div/nfm_agop_corr"].mean
    assert -1.0 <= corr <= 1.0  # NaN fails here
    assert len(result.criteria) == 44  # all four operations are judged at full scale (36 + 8 gates)


def _judged(claim: object, scale: str) -> set[tuple]:
    """The criteria judged at ``scale``, without their ``scales`` field (for comparing claims)."""
    return {
        (c.name, c.arm, c.metric, c.op, c.threshold, c.other_arm, c.factor, c.reduce, c.description)
        for c in claim.criteria_at(scale)  # type: ignore[attr-defined]
    }


def test_claim_for_each_preset_judges_the_same_criteria_as_the_class_claim() -> None:
    from icml25.theory.rfm_grokking.check import CHECK

    small = CHECK.claim_for(CHECK.config("small"))
    assert small == CHECK.claim
    assert len(small.criteria_at("small")) == 18 and small.headline == "add_beats_fixed"
    head = small.headline_criterion()
    assert head.other_arm == "fixed_kernel" and head.smallest_effect == 0.5 and head.effect_source
    assert set(small.references) == {"majority", "random_circulant"} and small.controls == (
        "random_circulant",
    )
    assert len(small.gates_at("small")) == 4
    assert any(c.description.endswith("by iteration 30") for c in small.criteria)
    full = CHECK.claim_for(CHECK.config("full"))
    assert {c[0] for c in _judged(full, "full")} == {
        f"{op}_{name}"
        for op in ("add", "sub", "mul", "div")
        for name in (
            "beats_fixed",
            "groks",
            "interpolates",
            "flat_start",
            "hidden_progress",
            "fixed_kernel_chance",
            "sharp",
            "net_nfm_matches_agop",
            "net_generalizes",
        )
    }
    assert _judged(CHECK.claim_for(CHECK.config("tiny")), "tiny") == _judged(CHECK.claim, "tiny")


def test_operation_override_yields_criteria_the_check_measures(tmp_path) -> None:  # noqa: ANN001
    from icml25.core.check import RunContext
    from icml25.core.claims import evaluate_criterion, summarize_metrics
    from icml25.core.progress import NullReporter
    from icml25.theory.rfm_grokking.check import CHECK

    overrides = {
        "ops": ("sub",),
        "p": 11,
        "iters": 8,
        "net_width": 16,
        "net_epochs": 4,
        "net_measure_every": 2,
    }
    config = CHECK.config("small", overrides)
    claim = CHECK.claim_for(config)
    assert claim.headline == "sub_beats_fixed" and claim.headline_baseline is None
    assert all(c.name.startswith("sub_") and c.metric.startswith("sub/") for c in claim.criteria)
    assert any(c.description.endswith("by iteration 8") for c in claim.criteria)
    ctx = RunContext(slug=CHECK.slug, scale="small", run_dir=tmp_path, reporter=NullReporter())
    outcome = CHECK.run_seed(config, 0, ctx)
    metrics = summarize_metrics([outcome.metrics])
    for arm in ("rfm", "fixed_kernel"):  # the per-pair rows behind the paired interval match the curve
        rows = outcome.items[arm]["sub/final_test_acc"]
        assert rows.shape == (len(modular_dataset(11, "sub", 0.5, seed=0).X_test),)
        assert rows.mean() == pytest.approx(outcome.metrics[arm]["sub/final_test_acc"], abs=1e-12)
    results = [
        evaluate_criterion(c, metrics) for c in (*claim.gates_at("small"), *claim.criteria_at("small"))
    ]
    assert len(results) == 11
    assert all("not measured" not in r.reason for r in results), [r.reason for r in results]


def test_config_errors_name_the_field() -> None:
    from icml25.theory.rfm_grokking.check import RFMGrokkingConfig

    with pytest.raises(ValueError, match=r"RFMGrokkingConfig\.net_train_frac must lie in \(0, 1\)"):
        RFMGrokkingConfig(net_train_frac=1.0)
    with pytest.raises(ValueError, match=r"RFMGrokkingConfig\.ridge must be a finite number >= 0"):
        RFMGrokkingConfig(ridge=-1.0)
    with pytest.raises(ValueError, match=r"RFMGrokkingConfig\.net_epochs must be a positive integer"):
        RFMGrokkingConfig(net_epochs=0)


def test_sharpness_criterion_tells_a_jump_from_a_creep() -> None:
    """Emergence is a criterion that can fail: at p = 31 with half the pairs for training, 20 RFM
    iterations creep (0.02, 0.07, 0.14, ..., 0.57: the top-level README's example), while with 60 %
    training pairs (and in the paper README's p = 17 example) accuracy stays at 0 and then rises to
    ~100 % within a few iterations."""
    from icml25.theory.rfm_grokking.check import SHARP_MAX, grokking_metrics

    def curve(p: int, frac: float, iters: int) -> dict[str, float]:
        ds = modular_dataset(p=p, op="add", train_frac=frac, seed=0)
        rfm = RFM(kernel=GaussianMahalanobisKernel(bandwidth=2.5), iters=iters, op="add")
        h = rfm.fit(ds.X_train, ds.Y_train, eval_sets={"test": (ds.X_test, ds.Y_test)}).history_
        acc = [r.test_acc for r in h]
        return grokking_metrics(acc, [r.train_mse for r in h], [r.circulant_deviation for r in h], acc)

    creep = curve(31, 0.5, 20)
    assert creep["final_test_acc"] < 0.9 and creep["rise_over_flat"] > SHARP_MAX
    for p, frac, iters in ((31, 0.6, 20), (17, 0.7, 15)):
        jump = curve(p, frac, iters)
        assert jump["test_acc_max_first5"] == 0.0 and jump["final_test_acc"] >= 0.99
        assert jump["flat_iters"] >= 5 and jump["rise_over_flat"] <= SHARP_MAX, jump


def test_a_meaningless_kernel_solve_warns_instead_of_passing_silently() -> None:
    """A kernel ridge fit is never worse on its training data than predicting 0; one that is (or is
    not finite) came from a failed solve of a numerically singular Gram matrix, and says so."""
    import warnings

    from icml25.theory.rfm_grokking.rfm import _warn_if_unreliable

    Y = np.eye(3)[[0, 1, 2, 0]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _warn_if_unreliable(Y.copy(), Y, 0)  # an interpolating fit
        _warn_if_unreliable(np.zeros_like(Y), Y, 0)  # the zero predictor is the bound itself
    for garbage in (Y * 1e6, np.full_like(Y, np.nan)):
        with pytest.warns(RuntimeWarning, match="ridge > 0"):
            _warn_if_unreliable(garbage, Y, 2)


def test_a_ridge_fit_on_blobs_does_not_warn() -> None:
    import warnings

    from sklearn.datasets import make_blobs

    from icml25.theory.rfm_grokking import RFMClassifier

    X, y = make_blobs(n_samples=120, random_state=0)
    X = (X - X.mean(0)) / X.std(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model = RFMClassifier(iters=2, ridge=1e-6).fit(X, y)
    assert (model.predict(X) == y).mean() > 0.9
