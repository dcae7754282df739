"""SciPy / PyAMG / CHOLMOD baselines with separate setup (factor) and solve timings.

Part of our implementation of *Schwarz–Schur Involution: Lightspeed Differentiable Sparse Linear
Solvers* (Wang et al., ICML 2025, https://openreview.net/forum?id=RKbanvzycr). The paper's CPU
baseline is SciPy's direct solver (SuperLU); PyAMG (an iterative solver) and CHOLMOD are our
additions for the CPU benchmark.

CHOLMOD comes from the optional PyPI package ``scikit-sparse`` (extra ``icml25[sparse]``; it builds
only once Debian's ``libsuitesparse-dev`` is installed). It is skipped when not importable.
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


def splu_run(A: sp.spmatrix, B: np.ndarray, permc_spec: str = "COLAMD") -> BaselineRun:
    """SuperLU (``scipy.sparse.linalg.splu``): factor once, then solve all columns of ``B``."""
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
    Ac = sp.csc_matrix(A)
    t0 = time.perf_counter()
    factor = cholesky(Ac)
    t1 = time.perf_counter()
    x = factor(np.asarray(B, dtype=np.float64))
    t2 = time.perf_counter()
    size = int(factor.L().nnz * 12)
    return BaselineRun(x=np.asarray(x), factor_s=t1 - t0, solve_s=t2 - t1, factor_bytes=size)
