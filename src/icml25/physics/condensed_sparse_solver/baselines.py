"""SciPy / PyAMG / CHOLMOD / PARDISO / MUMPS baselines with separate setup (factor) and solve timings.

Part of our implementation of *Schwarz–Schur Involution: Lightspeed Differentiable Sparse Linear
Solvers* (Wang et al., ICML 2025, https://openreview.net/forum?id=RKbanvzycr). The paper's CPU
baseline is SciPy's direct solver (SuperLU); PyAMG (an iterative solver) and CHOLMOD are our
additions for the CPU benchmark.

The sparse direct solvers a CPU user would pick instead, all optional (extra ``icml25[sparse]``):
CHOLMOD (supernodal Cholesky) from PyPI ``scikit-sparse`` (builds once Debian's
``libsuitesparse-dev`` is installed), PARDISO (MKL, symmetric positive definite mode) from PyPI
``pypardiso``, and MUMPS (multifrontal, symmetric mode, sequential) from PyPI ``python-mumps``
(needs Debian's ``libmumps-seq-dev``). Each ``*_available()`` says whether it imports; a runner
raises ImportError with an install hint when it does not (callers report it as missing).
Factor time includes each library's ordering/analysis; solve time is the triangular solves.
Thread counts are set by the caller (``threadpoolctl``), the same for every library.

On a GPU the paper's baseline is NVIDIA's cuDSS; ``cudss_run`` calls it through torch
(``torch.sparse.spsolve`` on a CUDA CSR tensor, present only where torch is built with cuDSS), and
``cudss_available()`` says whether that call works here (never on a CPU-only machine).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

__all__ = [
    "BaselineRun",
    "splu_run",
    "spsolve_run",
    "pyamg_cg_run",
    "pyamg_available",
    "cholmod_run",
    "cholmod_available",
    "pardiso_run",
    "pardiso_available",
    "mumps_run",
    "mumps_available",
    "cudss_run",
    "cudss_available",
]


@dataclass(frozen=True)
class BaselineRun:
    """Solution ``[n, C]`` with setup/solve seconds and the stored factor's size in bytes."""

    x: np.ndarray
    factor_s: float
    solve_s: float
    factor_bytes: int
    note: str = ""

    @property
    def total_s(self) -> float:
        return self.factor_s + self.solve_s


def _check_system(A: sp.spmatrix, B: np.ndarray) -> np.ndarray:
    """Validate ``A`` (square sparse, non-empty, finite) and ``B`` (``[n]`` or ``[n, C]``, finite reals)."""
    if not sp.issparse(A) or A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(
            f"A must be a square scipy.sparse matrix, got {type(A).__name__} {getattr(A, 'shape', '')}"
        )
    if A.shape[0] == 0:
        raise ValueError("A is empty (0 x 0)")
    if not np.isfinite(A.data).all():
        raise ValueError("A contains NaN or infinite values")
    Bn = np.asarray(B)
    if Bn.dtype.kind not in "fiu":
        raise TypeError(f"B must hold real numbers, got dtype {Bn.dtype}")
    if Bn.ndim not in (1, 2) or Bn.shape[0] != A.shape[0] or Bn.size == 0:
        raise ValueError(
            f"B must have shape [{A.shape[0]}] or [{A.shape[0]}, C] with C >= 1, got {list(Bn.shape)}"
        )
    if not np.isfinite(Bn).all():
        raise ValueError("B contains NaN or infinite values")
    return np.asarray(Bn, dtype=np.float64)


def splu_run(A: sp.spmatrix, B: np.ndarray, permc_spec: str = "COLAMD") -> BaselineRun:
    """SuperLU (``scipy.sparse.linalg.splu``): factor once, then solve all columns of ``B``."""
    B = _check_system(A, B)
    Ac = sp.csc_matrix(A)
    t0 = time.perf_counter()
    lu = spla.splu(Ac, permc_spec=permc_spec)
    t1 = time.perf_counter()
    x = lu.solve(np.asarray(B, dtype=np.float64))
    t2 = time.perf_counter()
    size = int((lu.L.nnz + lu.U.nnz) * 12)
    return BaselineRun(x=x, factor_s=t1 - t0, solve_s=t2 - t1, factor_bytes=size)


def spsolve_run(A: sp.spmatrix, B: np.ndarray) -> BaselineRun:
    """``scipy.sparse.linalg.spsolve`` (SuperLU again, factor and solve in one call)."""
    B = _check_system(A, B)
    Ac = sp.csc_matrix(A)
    t0 = time.perf_counter()
    x = spla.spsolve(Ac, np.asarray(B, dtype=np.float64))
    t1 = time.perf_counter()
    x = x.reshape(B.shape)
    return BaselineRun(x=x, factor_s=0.0, solve_s=t1 - t0, factor_bytes=0, note="factor+solve in one call")


def pyamg_cg_run(
    A: sp.spmatrix, B: np.ndarray, rtol: float = 1e-10, max_rhs: int | None = None
) -> BaselineRun:
    """Smoothed-aggregation AMG (PyAMG) as a CG preconditioner, each column to relative residual ``rtol``.

    With ``max_rhs`` only that many columns are solved and the solve time is extrapolated linearly
    to all columns (the returned ``x`` then has zeros in the unsolved columns; ``note`` says so).
    """
    B = _check_system(A, B)
    try:
        import pyamg
    except ImportError as err:
        raise ImportError("the AMG baseline needs pyamg: pip install 'icml25[physics]'") from err

    Acsr = sp.csr_matrix(A)
    B2 = np.asarray(B, dtype=np.float64).reshape(A.shape[0], -1)
    t0 = time.perf_counter()
    ml = pyamg.smoothed_aggregation_solver(Acsr)
    t1 = time.perf_counter()
    ncol = B2.shape[1]
    todo = ncol if max_rhs is None else min(ncol, max_rhs)
    x = np.zeros_like(B2)
    for c in range(todo):
        x[:, c] = ml.solve(B2[:, c], tol=rtol, accel="cg", maxiter=2000)
    t2 = time.perf_counter()
    solve = (t2 - t1) * ncol / todo
    size = int(sum(level.A.nnz for level in ml.levels) * 12)
    note = f"solve time extrapolated from {todo} of {ncol} columns" if todo < ncol else ""
    return BaselineRun(x=x.reshape(B.shape), factor_s=t1 - t0, solve_s=solve, factor_bytes=size, note=note)


def pyamg_available() -> bool:
    try:
        import pyamg  # noqa: F401
    except ImportError:
        return False
    return True


def cholmod_available() -> bool:
    try:
        import sksparse.cholmod  # noqa: F401
    except ImportError:
        return False
    return True


def cholmod_run(A: sp.spmatrix, B: np.ndarray) -> BaselineRun:
    """CHOLMOD sparse Cholesky via ``scikit-sparse`` (optional).

    Raises:
        ImportError: with an install hint when ``scikit-sparse`` is missing.
    """
    try:
        from sksparse.cholmod import cholesky
    except ImportError as err:
        raise ImportError(
            "CHOLMOD needs the optional package scikit-sparse (pip install 'icml25[sparse]'; it builds "
            "after `apt-get install libsuitesparse-dev`)"
        ) from err
    B = _check_system(A, B)
    Ac = sp.csc_matrix(A)
    t0 = time.perf_counter()
    factor = cholesky(Ac)
    t1 = time.perf_counter()
    x = factor(np.asarray(B, dtype=np.float64))
    t2 = time.perf_counter()
    size = int(factor.L().nnz * 12)
    return BaselineRun(x=np.asarray(x), factor_s=t1 - t0, solve_s=t2 - t1, factor_bytes=size)


def pardiso_available() -> bool:
    try:
        import pypardiso  # noqa: F401
    except (ImportError, OSError):
        return False
    return True


def pardiso_run(A: sp.spmatrix, B: np.ndarray) -> BaselineRun:
    """MKL PARDISO via ``pypardiso`` in real symmetric positive definite mode (``mtype=2``, upper triangle).

    Raises:
        ImportError: with an install hint when ``pypardiso`` (or MKL) is missing.
    """
    try:
        from pypardiso import PyPardisoSolver
    except (ImportError, OSError) as err:
        raise ImportError(
            "PARDISO needs the optional package pypardiso (pip install 'icml25[sparse]')"
        ) from err
    B = _check_system(A, B)
    Au = sp.triu(sp.csr_matrix(A), format="csr")
    Au.sort_indices()
    solver = PyPardisoSolver(mtype=2)
    solver.set_iparm(18, -1)  # report the number of nonzeros in the factor
    t0 = time.perf_counter()
    solver.factorize(Au)
    t1 = time.perf_counter()
    x = solver.solve(Au, np.asarray(B, dtype=np.float64))
    t2 = time.perf_counter()
    nnz = abs(int(solver.get_iparm(18)))
    solver.free_memory(everything=True)
    return BaselineRun(
        x=np.asarray(x).reshape(np.shape(B)), factor_s=t1 - t0, solve_s=t2 - t1, factor_bytes=nnz * 12
    )


def mumps_available() -> bool:
    try:
        import mumps  # noqa: F401
    except (ImportError, OSError):
        return False
    return True


def mumps_run(A: sp.spmatrix, B: np.ndarray) -> BaselineRun:
    """Sequential MUMPS via ``python-mumps``: symmetric mode, automatic ordering (analysis counted in factor).

    Raises:
        ImportError: with an install hint when ``python-mumps`` (or libmumps) is missing.
    """
    try:
        import mumps
    except (ImportError, OSError) as err:
        raise ImportError(
            "MUMPS needs the optional package python-mumps (pip install 'icml25[sparse]'; it needs "
            "`apt-get install libmumps-seq-dev`)"
        ) from err
    B = _check_system(A, B)
    ctx = mumps.Context()
    t0 = time.perf_counter()
    ctx.set_matrix(sp.coo_matrix(A), symmetric=True)
    ctx.factor(ordering="auto")
    t1 = time.perf_counter()
    x = ctx.solve(np.asarray(B, dtype=np.float64))
    t2 = time.perf_counter()
    nnz = int(ctx.factor_stats.nonzeros)
    return BaselineRun(
        x=np.asarray(x).reshape(np.shape(B)), factor_s=t1 - t0, solve_s=t2 - t1, factor_bytes=nnz * 12
    )


_CUDSS_OK: bool | None = None


def cudss_available() -> bool:
    """Whether ``torch.sparse.spsolve`` solves a small CUDA CSR system here (torch built with cuDSS)."""
    global _CUDSS_OK
    if _CUDSS_OK is None:
        _CUDSS_OK = False
        try:
            import torch

            if torch.cuda.is_available():
                A = sp.csr_matrix(np.diag([2.0, 3.0, 4.0, 5.0]))
                x = _torch_spsolve(A, np.ones((4, 1)))
                _CUDSS_OK = bool(np.allclose(x[:, 0], [0.5, 1 / 3, 0.25, 0.2]))
        except Exception:  # any failure (no CUDA build, no cuDSS, a driver error) means unavailable
            _CUDSS_OK = False
    return _CUDSS_OK


def _torch_spsolve(A: sp.spmatrix, B: np.ndarray) -> np.ndarray:
    import torch

    dev = torch.device("cuda")
    Ac = sp.csr_matrix(A)
    At = torch.sparse_csr_tensor(
        torch.as_tensor(Ac.indptr, dtype=torch.int32, device=dev),
        torch.as_tensor(Ac.indices, dtype=torch.int32, device=dev),
        torch.as_tensor(Ac.data, dtype=torch.float64, device=dev),
        size=Ac.shape,
    )
    B2 = torch.as_tensor(np.asarray(B, dtype=np.float64).reshape(Ac.shape[0], -1), device=dev)
    try:  # every column in one call (one factorisation) where this torch accepts a matrix
        X = torch.sparse.spsolve(At, B2)
    except (RuntimeError, NotImplementedError, TypeError):
        X = torch.stack([torch.sparse.spsolve(At, B2[:, c].contiguous()) for c in range(B2.shape[1])], 1)
    torch.cuda.synchronize(dev)
    return X.reshape(B2.shape).cpu().numpy()


def cudss_run(A: sp.spmatrix, B: np.ndarray) -> BaselineRun:
    """cuDSS through torch (``torch.sparse.spsolve`` on CUDA): analysis + factor + solve in one call.

    torch exposes no separate factorisation, so ``factor_s`` is 0 and ``solve_s`` holds the call
    (``note`` says so); all of ``B``'s columns go in one call where torch accepts a matrix, else one
    call (one factorisation) per column.

    Raises:
        ImportError: where torch has no CUDA device or was built without cuDSS.
    """
    if not cudss_available():
        raise ImportError(
            "the cuDSS baseline needs a CUDA GPU and torch built with cuDSS (torch.sparse.spsolve on CUDA)"
        )
    B = _check_system(A, B)
    t0 = time.perf_counter()
    x = _torch_spsolve(A, B)
    t1 = time.perf_counter()
    return BaselineRun(
        x=x.reshape(B.shape),
        factor_s=0.0,
        solve_s=t1 - t0,
        factor_bytes=0,
        note="torch.sparse.spsolve (cuDSS): factor + solve in one call",
    )
