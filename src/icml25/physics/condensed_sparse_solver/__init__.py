"""Schwarz–Schur Involution: Lightspeed Differentiable Sparse Linear Solvers.

Yu Wang, S. Mazdak Abulnaga, Yael Balbastre, Bruce Fischl. ICML 2025 (PMLR 267:62172-62221).
https://openreview.net/forum?id=RKbanvzycr · official code https://github.com/wangyu9/Schwarz_Schur_Involution

A direct solver for sparse systems on regular 2D grids with local (5/9-point) stencils. The grid
is cut into small overlapping ``w x w`` patches; each patch's interior is eliminated at once (the
Schwarz step), leaving a dense Dirichlet-to-Neumann matrix on its ring, and neighbouring
subdomains are merged pairwise by dense Schur complements (the Schur steps) until one system on
the grid's perimeter remains. Every step is one fixed-shape batch of small dense matrices, so
factorisation and solves are a short sequence of batched BLAS/LAPACK calls (any torch device),
many systems and right-hand sides are solved together, and the backward pass is one more solve.

Implements: the patch tensors ``alpha`` (the paper's "involution" of ``(A, b)`` into
``(alpha, beta)``) with the top-down split and bottom-up assembly; Algorithm 1 (numerical
factorisation + back-substitution) with the parallel Schwarz step (Alg. 2) and Schur steps
(Alg. 4, alternating axes), the top solve and factor reuse for new right-hand sides (Table 7); the
backward pass (Alg. 3 and 5) as one transposed solve, ``dL/db = A^-T g`` and
``dL/dalpha_p = -(P_p lam)(P_p x)^T``; float32/float64, batched systems and columns, and a memory
estimate before factorising.

CPU speed work (same maths, see ``solver``): Cholesky blocks without explicit inverses, merges
copied straight into preallocated buffers with the Schur update fused into one batched gemm,
solves in subdomain chunks with scatter-adds; ``bench`` compares against CHOLMOD, PARDISO, MUMPS and
SuperLU in one process (``icml25 bench solver``); ``baselines`` adds cuDSS through torch on a GPU.

Choices where the paper leaves room or where we depart from the official code (see the module
docstrings): rings are ordered as clockwise walks and children are scattered into the merged
``[R, G]`` order by block copies (the official flips are descending runs); right-hand sides live in
one global vector instead of per-patch ``beta``; symmetric input uses Cholesky blocks and reports
indefinite/singular operators, non-symmetric input uses LU within blocks; non-conforming grids are
padded with identity rows (top-left embedding); unshared outer-boundary nodes are eliminated only in
the last levels (<= 16 subdomains, run one subdomain at a time), not in the Schwarz step as
officially; patches are square (``w x w``) but the patch counts per axis may differ (longer axis
halved first). Left out: bordered systems, complex/Hermitian input, the JAX path.

Usage::

    layout = PatchLayout.for_grid(257, 257)
    op = darcy(torch.exp(gaussian_random_field(257, 257)))       # -div(kappa grad u) + 1e-2 u
    factor = factorize(op.alpha(layout), layout)
    x = factor.solve(rhs)                                          # rhs [B, 257, 257, C]
    x = sinv_solve(op.alpha(layout), rhs, layout)                  # differentiable in kappa and rhs
"""

from .baselines import (
    BaselineRun,
    cholmod_available,
    cholmod_run,
    mumps_available,
    mumps_run,
    pardiso_available,
    pardiso_run,
    pyamg_cg_run,
    splu_run,
    spsolve_run,
)
from .layout import EliminationPlan, LevelPlan, PatchLayout, elimination_plan
from .operators import (
    STENCILS,
    GridLaplacian,
    alpha_from_scipy,
    alpha_to_scipy,
    check_alpha,
    darcy,
    gaussian_random_field,
    image_laplacian,
    patch_node_ids,
    poisson,
)
from .solver import (
    InsufficientMemoryError,
    MemoryEstimate,
    SchurFactor,
    SingularOperatorError,
    estimate_memory,
    factorize,
    merge_flops,
    sinv_solve,
    solve_grid_system,
)

__all__ = [
    "STENCILS",
    "BaselineRun",
    "EliminationPlan",
    "GridLaplacian",
    "InsufficientMemoryError",
    "LevelPlan",
    "MemoryEstimate",
    "PatchLayout",
    "SchurFactor",
    "SingularOperatorError",
    "alpha_from_scipy",
    "alpha_to_scipy",
    "check_alpha",
    "cholmod_available",
    "cholmod_run",
    "darcy",
    "elimination_plan",
    "estimate_memory",
    "factorize",
    "gaussian_random_field",
    "image_laplacian",
    "merge_flops",
    "mumps_available",
    "mumps_run",
    "pardiso_available",
    "pardiso_run",
    "patch_node_ids",
    "poisson",
    "pyamg_cg_run",
    "sinv_solve",
    "solve_grid_system",
    "splu_run",
    "spsolve_run",
]
