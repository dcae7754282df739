"""Claim check for *Schwarz-Schur Involution: Lightspeed Differentiable Sparse Linear Solvers*
(Wang, Abulnaga, Balbastre, Fischl; ICML 2025; https://openreview.net/forum?id=RKbanvzycr).

The paper: condensing grid operators into batched dense DtN merges gives an exact, differentiable
direct solver far faster than SciPy (SuperLU) and cuDSS. The verdict rests on those claims only:
exactness, gradients, and speed against the paper's SciPy baseline (SuperLU, ``splu`` with COLAMD),
one factorisation and batched. Our own CPU targets (against CHOLMOD, the merge phase's BLAS
efficiency, the 5x ratios, peak memory) are the benchmark's goals, measured and printed by
``icml25 bench solver`` (``bench.targets``), never judged here. CHOLMOD is timed beside ours in the
check as a reported baseline (no criterion names it).

Arms. ``ours``; ``superlu`` (the paper's SciPy baseline, judged); ``cholmod`` (reported); on a GPU
``cudss`` (``torch.sparse.spsolve`` on CUDA where torch is built with cuDSS, the paper's GPU
baseline). Reference (a positive control, never beaten): ``dense_lu``, LAPACK's dense LU on the
same operators at ``dense_n``^2 unknowns, the exactness oracle: what round-off allows.

* E1 exactness: float64 relative residual on P1 (5-point Poisson + 1e-2 I, Neumann), P1' (9-point,
  Dirichlet), P2 (Darcy, kappa = exp(GRF), Neumann + 1e-2 I) and P3 (8-neighbour image affinity
  Laplacian + 1e-2 I) at ``dense_n`` and every size of the preset, incl. a non-power-of-two
  (padded) grid; relative difference from the dense oracle and from SuperLU; float32 residual
  (reported).
* E4 gradients: ``torch.autograd.gradcheck`` (float64) w.r.t. kappa and the right-hand side on a
  small grid, and dL/dkappa and dL/db against a SciPy adjoint (SuperLU on A^T) on a larger grid.
* E2 speed, paired per problem: at every speed size, ``speed_problems`` different P2 problems (a
  fresh kappa and fresh ``n_rhs`` right-hand sides each), every method once per problem (factor +
  ``n_rhs`` solves), alternating order, after an untimed warm-up; one item = one problem, its
  score the log of the seconds, so the paired difference is the log time ratio ours / SuperLU
  (two-stage cluster bootstrap: seeds, then problems). The residual of every timed solve is kept.
* E3 batching, paired per round: ``speed_problems`` rounds, each a fresh batch of ``batch_count``
  different ``batch_n``^2 P2 systems: ours in one call vs ``splu`` looped; item = round, score the
  log seconds.

Gates (point conditions under which the criteria can be judged; declared before any run):
``oracle_round_off``: the dense oracle's residual <= 1e-10 on every operator (the 1e-10 exactness
threshold is attainable on these operators); ``superlu_exact``: SuperLU solves every timed system
to a residual <= 1e-10 (the speed comparison compares two exact solves). Ours' exactness on the
timed systems is a criterion (``timed_exact``), not a gate: an inexact ours must read "not
reproduced", never "inconclusive".

Criteria (the paper's claims; declared before any run). Exactness and gradients: max residual
<= 1e-10 (suite and timed solves); adjoint gradient error <= 1e-8; gradcheck passes. Speed against
SuperLU, paired log time ratios, superiority: at every speed size >= 257 (the largest if all are
smaller) ours' factor + ``n_rhs`` solves take less time than SuperLU's (headline: the largest
such size); ``batch_count`` different small systems in one call take less time than looping
``splu``. Smallest effect: log(1.25), a 1.25x speed-up, our declared smallest speed-up worth
switching solvers for (the paper's figures, 60-1000x, time ours on a GPU;
on 2 CPU cores we expect a modest gain, not orders of magnitude); a criterion fails when its
interval excludes any speed-up of 1.25x or more.

``medium`` (ours on a CUDA GPU where one is present, ``device="auto"``): the paper's GPU speed-up
replaces the CPU speed criteria: ``gpu_faster_than_superlu_<n>`` (paired log ratio, smallest
effect log(10): an order of magnitude, the least of the paper's "orders of magnitude"; 60-1000x
against SciPy on an A6000, secondary summaries: 257^2 in ~36 ms against ~16.5 s), the geometric-
mean speed-up at the largest size >= 10x (``gpu_speedup_10x_<n>``), and where torch has cuDSS,
``gpu_faster_than_cudss_<n>`` (smallest effect log(10); the paper reports 40-170x against cuDSS).
Our SuperLU keeps its factors and solves all right-hand sides at once, so ratios run lower than
the paper's. Without a GPU the medium preset runs the CPU criteria at the larger sizes (the
device is in the notes and series). Timings are wall-clock on a machine shared with other jobs:
hence alternating order, ratios within one run, and intervals over problems and seeds.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch

from icml25.core.check import ClaimCheck, NeedsResource, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.validate import check_fields, check_in_range

from .baselines import splu_run
from .bench import METHODS, available, batched_rounds, time_problems, warm_up
from .layout import PatchLayout
from .operators import GridLaplacian, darcy, gaussian_random_field, image_laplacian, poisson
from .solver import factorize, sinv_solve

PROBLEMS = ("poisson5_neumann", "poisson9_dirichlet", "darcy", "image9")
#: the smallest speed-up of interest on the CPU (declared; see the module docstring)
CPU_EFFECT = math.log(1.25)
CPU_EFFECT_SOURCE = (
    "declared: a 1.25x speed-up (log 1.25), the smallest worth switching solvers for; the paper's "
    "60-1000x vs SciPy time ours on a GPU (on 2 CPU cores we expect a "
    "modest gain, not orders of magnitude)"
)
#: the smallest speed-up of interest on a GPU: an order of magnitude
GPU_EFFECT = math.log(10.0)
GPU_EFFECT_SOURCE = (
    "declared: 10x (log 10), an order of magnitude, the least of the paper's 'orders of magnitude' "
    "(60-1000x vs SciPy, 40-170x vs cuDSS on an A6000)"
)


@dataclass(frozen=True)
class CondensedSolverConfig:
    """Sizes and repeats of the check. ``full`` runs E1-E4 up to 513^2 (1025^2 would need more memory).

    ``dense_n``: the grid of the dense-LU exactness oracle (``dense_n^2`` unknowns, dense; at most 65).
    ``speed_problems``: the paired items of the speed criteria: different problems per speed size
    (and rounds of fresh batches in the batched comparison), each timed once per method.
    ``methods``: the timed arms (``ours`` and ``superlu`` always; ``cholmod`` reported; ``cudss`` on
    a GPU). ``device``: where ours is timed (E2/E3): ``"cpu"``, ``"cuda"`` or ``"auto"`` (CUDA where
    ``torch.cuda.is_available()``, else the CPU); exactness and gradients run on the CPU in float64.
    ``require_cholmod``: refuse to run (``needs scikit-sparse``) without CHOLMOD; off by default,
    since CHOLMOD is only reported, not judged.
    """

    exact_sizes: tuple[int, ...] = (65, 100, 257, 513)
    problems: tuple[str, ...] = PROBLEMS
    dense_n: int = 33
    speed_sizes: tuple[int, ...] = (257, 513)
    n_rhs: int = 64
    speed_problems: int = 4
    batch_n: int = 65
    batch_count: int = 16
    gradcheck_n: int = 9
    adjoint_n: int = 65
    superlu_ref_max_n: int = 257
    methods: tuple[str, ...] = ("ours", "superlu", "cholmod")
    require_cholmod: bool = False
    device: str = "cpu"

    def __post_init__(self) -> None:
        bad = [p for p in self.problems if p not in PROBLEMS]
        if bad or not self.problems:
            raise ValueError(f"problems must be a non-empty subset of {PROBLEMS}, got {self.problems}")
        for name in ("exact_sizes", "speed_sizes"):
            if not getattr(self, name):
                raise ValueError(f"CondensedSolverConfig.{name} must be non-empty")
            for i, n in enumerate(getattr(self, name)):
                check_in_range(f"CondensedSolverConfig.{name}[{i}]", n, 5)
        check_fields(self, positive_int=("n_rhs", "speed_problems", "batch_count"))
        bad_m = [m for m in self.methods if m not in METHODS]
        if bad_m or "ours" not in self.methods or "superlu" not in self.methods:
            raise ValueError(
                f"CondensedSolverConfig.methods must include 'ours' and 'superlu' and lie in {METHODS}, "
                f"got {self.methods}"
            )
        for name in ("batch_n", "gradcheck_n", "adjoint_n"):
            check_in_range(f"CondensedSolverConfig.{name}", getattr(self, name), 5)
        check_in_range("CondensedSolverConfig.dense_n", self.dense_n, 5, 65)
        if self.device not in ("cpu", "cuda", "auto"):
            raise ValueError(f"CondensedSolverConfig.device must be cpu, cuda or auto, got {self.device!r}")


def resolve_device(cfg: CondensedSolverConfig) -> str:
    """``cfg.device`` with ``"auto"`` resolved: ``"cuda"`` where torch sees a CUDA device, else ``"cpu"``."""
    if cfg.device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return cfg.device


def build_problem(name: str, n: int, seed: int, dtype: torch.dtype = torch.float64) -> GridLaplacian:
    """One of the test operators on an ``n x n`` grid (P1, P1', P2, P3)."""
    g = torch.Generator().manual_seed(seed)
    if name == "poisson5_neumann":
        return poisson(n, n, dtype=dtype)
    if name == "poisson9_dirichlet":
        return poisson(n, n, stencil="9pt", boundary="dirichlet", mass=0.0, dtype=dtype)
    if name == "darcy":
        return darcy(torch.exp(gaussian_random_field(n, n, generator=g, dtype=dtype)))
    if name == "image9":
        i, j = torch.meshgrid(
            torch.linspace(0, 1, n, dtype=torch.float64),
            torch.linspace(0, 1, n, dtype=torch.float64),
            indexing="ij",
        )
        blobs = sum(
            torch.exp(-((i - float(c0)) ** 2 + (j - float(c1)) ** 2) / 0.02)
            for c0, c1 in torch.rand(4, 2, generator=g, dtype=torch.float64)
        )
        img = blobs + 0.05 * torch.randn(n, n, generator=g, dtype=torch.float64)
        return image_laplacian(img[None].to(dtype), sigma=0.2)
    raise ValueError(f"unknown problem {name!r}; choose from {PROBLEMS}")


def _exactness(
    cfg: CondensedSolverConfig, seed: int, ctx: RunContext
) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """E1 on every problem at ``dense_n`` and every exact size: ours' metrics, SuperLU's (sizes up to
    ``superlu_ref_max_n``) and the dense oracle's (``dense_n``)."""
    rng = np.random.default_rng(seed)
    res64: dict[str, float] = {}
    err: dict[str, float] = {}
    err_dense: dict[str, float] = {}
    res32: dict[str, float] = {}
    superlu_res: dict[str, float] = {}
    dense_res: dict[str, float] = {}
    sizes = sorted({cfg.dense_n, *cfg.exact_sizes})
    total = len(sizes) * len(cfg.problems)
    k = 0
    for n in sizes:
        for name in cfg.problems:
            op = build_problem(name, n, seed)
            layout = PatchLayout.for_grid(n, n)
            b = rng.standard_normal((n * n, 2))
            rhs = torch.as_tensor(b.reshape(1, n, n, 2))
            F = factorize(op.alpha(layout), layout)
            x = F.solve(rhs)
            key = f"{name}_{n}"
            res64[key] = float(F.residual(x, rhs).max())
            xs = x[0].reshape(n * n, 2).numpy()
            if n <= cfg.superlu_ref_max_n or n == cfg.dense_n:
                A = op.to_scipy()
            if n == cfg.dense_n:  # the oracle: LAPACK's dense LU on the same operator
                Ad = A.toarray()
                xd = np.linalg.solve(Ad, b)
                r = np.linalg.norm(Ad @ xd - b, axis=0) / np.linalg.norm(b, axis=0)
                dense_res[key] = float(r.max())
                err_dense[key] = float(np.linalg.norm(xs - xd) / np.linalg.norm(xd))
            if n <= cfg.superlu_ref_max_n:  # SuperLU's solution for the relative difference
                ref = splu_run(A, b)
                err[key] = float(np.linalg.norm(xs - ref.x) / np.linalg.norm(ref.x))
                r = np.linalg.norm(A @ ref.x - b, axis=0) / np.linalg.norm(b, axis=0)
                superlu_res[key] = float(r.max())
            if n <= 257:  # float32 residual, reported only
                op32 = build_problem(name, n, seed, dtype=torch.float32)
                F32 = factorize(op32.alpha(layout), layout)
                r32 = rhs.float()
                res32[key] = float(F32.residual(F32.solve(r32), r32).max())
            k += 1
            ctx.progress("exactness", k, total)
    nan = float("nan")
    ours = {
        "max_residual_fp64": max(res64.values()),
        "max_rel_diff_vs_superlu": max(err.values()) if err else nan,
        "max_rel_diff_vs_dense": max(err_dense.values()),
        "max_residual_fp32": max(res32.values()) if res32 else nan,
    }
    ours.update({f"residual/{key}": v for key, v in res64.items()})
    superlu = {"max_residual_fp64": max(superlu_res.values())} if superlu_res else {}
    return ours, superlu, {"max_residual_fp64": max(dense_res.values())}


def _adjoint_reference(op: GridLaplacian, x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SciPy adjoint for ``L = <g, x>``, ``A x = b`` with Darcy edges ``c = (k_u + k_v) / 2``.

    Returns (dL/db, dL/dkappa) with ``lam = A^-T g``, ``dL/dc_e = -(lam_u - lam_v)(x_u - x_v)``.
    """
    n0, n1 = op.grid_shape
    A = op.to_scipy()
    lam = splu_run(sp.csr_matrix(A.T), g[:, None]).x[:, 0]
    lam2, x2 = lam.reshape(n0, n1), x.reshape(n0, n1)
    dk = np.zeros((n0, n1))
    for d0, d1 in ((0, 1), (1, 0)):
        lu_ = lam2[: n0 - d0, : n1 - d1] - lam2[d0:, d1:]
        xu_ = x2[: n0 - d0, : n1 - d1] - x2[d0:, d1:]
        dc = -lu_ * xu_
        dk[: n0 - d0, : n1 - d1] += 0.5 * dc
        dk[d0:, d1:] += 0.5 * dc
    return lam, dk.ravel()


def _gradients(cfg: CondensedSolverConfig, seed: int) -> dict[str, float]:
    gen = torch.Generator().manual_seed(seed)
    n = cfg.gradcheck_n
    layout = PatchLayout.for_grid(n, n)
    kappa = torch.exp(0.5 * torch.randn(1, n, n, generator=gen, dtype=torch.float64)).requires_grad_()
    b = torch.randn(1, n, n, generator=gen, dtype=torch.float64, requires_grad=True)

    def f(k: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
        return sinv_solve(darcy(k).alpha(layout), rhs, layout)

    ok = torch.autograd.gradcheck(f, (kappa, b), raise_exception=False)
    n = cfg.adjoint_n
    layout = PatchLayout.for_grid(n, n)
    kappa = torch.exp(gaussian_random_field(n, n, generator=gen)).requires_grad_()
    b = torch.randn(1, n, n, generator=gen, dtype=torch.float64, requires_grad=True)
    g = torch.randn(1, n, n, generator=gen, dtype=torch.float64)
    op = darcy(kappa)
    x = sinv_solve(op.alpha(layout), b, layout)
    (x * g).sum().backward()
    assert kappa.grad is not None and b.grad is not None
    lam, dk = _adjoint_reference(op, x.detach()[0].numpy().ravel(), g[0].numpy().ravel())
    err_k = np.linalg.norm(kappa.grad[0].numpy().ravel() - dk) / np.linalg.norm(dk)
    err_b = np.linalg.norm(b.grad[0].numpy().ravel() - lam) / np.linalg.norm(lam)
    return {"gradcheck_ok": float(bool(ok)), "grad_rel_err": float(max(err_k, err_b))}


def _speed(
    cfg: CondensedSolverConfig, seed: int, ctx: RunContext
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, np.ndarray]], list[str]]:
    """E2/E3, paired: every timed method on the same problems (``bench.time_problems``) and the same
    batches (``bench.batched_rounds``), alternating order, the same thread count for every library.
    Returns per-arm metrics, per-arm item scores (log seconds; one per problem or round) and notes."""
    device = resolve_device(cfg)
    notes = [f"ours timed on {device} (config device={cfg.device}); baselines on the CPU"]
    missing = [m for m in cfg.methods if not available(m)]
    notes.extend(f"{m} not timed: its library does not import here (reported, not judged)" for m in missing)
    notes.append("our CPU targets (vs CHOLMOD, BLAS efficiency, 5x ratios): `icml25 bench solver`")
    if "cudss" not in cfg.methods:
        notes.append("cudss (the paper's GPU baseline) is timed by the medium preset on a GPU only")
    methods = [m for m in cfg.methods if m not in missing]
    metrics: dict[str, dict[str, float]] = {m: {} for m in methods}
    items: dict[str, dict[str, np.ndarray]] = {m: {} for m in methods}
    timed_res: dict[str, list[float]] = {m: [] for m in methods}
    warm_up(methods, device=device)
    for n in cfg.speed_sizes:
        per = time_problems(
            n,
            cfg.speed_problems,
            methods,
            n_rhs=cfg.n_rhs,
            seed=seed,
            device=device,
            log=lambda s: ctx.progress("speed: " + s, 0, 1),
        )
        for m, rec in per.items():
            d = metrics[m]
            for key in ("total_s", "factor_s", "solve_s"):
                d[f"{key}_{n}"] = float(np.median(rec[key]))
            items[m][f"log_total_s_{n}"] = np.log(np.asarray(rec["total_s"]))
            timed_res[m].extend(rec["residual"])
            if m == "ours":
                d[f"solve1_s_{n}"] = float(np.median(rec["solve1_s"]))
                ratio = np.asarray(rec["factor_s"]) / np.asarray(rec["solve1_s"])
                d[f"reuse_ratio_{n}"] = float(np.median(ratio))
        for m in methods:
            if m != "ours":  # geometric-mean speed-up of ours over m on these problems
                gap = items[m][f"log_total_s_{n}"] - items["ours"][f"log_total_s_{n}"]
                metrics["ours"][f"speedup_vs_{m}_{n}"] = float(np.exp(gap.mean()))
    ctx.progress(f"speed: batched {cfg.batch_count} x {cfg.batch_n}^2", 0, 1)
    bat = batched_rounds(
        cfg.batch_n, cfg.batch_count, methods, rounds=cfg.speed_problems, seed=seed, device=device
    )
    for m, rec in bat.items():
        metrics[m]["batched_s"] = float(np.median(rec["seconds"]))
        items[m]["log_batched_s"] = np.log(np.asarray(rec["seconds"]))
        timed_res[m].extend(rec["residual"])
    for m in methods:
        metrics[m]["timed_residual"] = max(timed_res[m])
    ctx.progress("speed", 1, 1)
    return metrics, items, notes


def _judged_speed_sizes(cfg: CondensedSolverConfig) -> tuple[int, ...]:
    """Speed sizes with a SuperLU criterion: every one >= 257 (257 and 513 at small and full; full's 65
    and 129 are reported only), or the largest one if all are smaller."""
    large = tuple(n for n in cfg.speed_sizes if n >= 257)
    return large or (max(cfg.speed_sizes),)


def _paired(name: str, other: str, metric: str, gpu: bool, description: str) -> Criterion:
    return Criterion(
        name,
        "ours",
        metric,
        "<",
        other_arm=other,
        smallest_effect=GPU_EFFECT if gpu else CPU_EFFECT,
        effect_source=GPU_EFFECT_SOURCE if gpu else CPU_EFFECT_SOURCE,
        description=description,
    )


def _criteria(cfg: CondensedSolverConfig) -> tuple[Criterion, ...]:
    """The criteria for ``cfg``: speed criteria name the grid sizes the config times, and on a CUDA
    device the GPU speed-up replaces the CPU one."""
    gpu = resolve_device(cfg) == "cuda"
    judged = _judged_speed_sizes(cfg)
    top = max(judged)
    speed = tuple(
        _paired(
            f"gpu_faster_than_superlu_{n}" if gpu else f"faster_than_superlu_{n}",
            "superlu",
            f"log_total_s_{n}",
            gpu,
            f"{n}^2, factor + {cfg.n_rhs} right-hand sides"
            + (", ours on a CUDA GPU, SuperLU on the CPU" if gpu else "")
            + f": ours faster than SuperLU (paired log time ratios, {cfg.speed_problems} problems x seeds)",
        )
        for n in judged
    )
    extra: tuple[Criterion, ...] = ()
    if gpu:
        extra = (
            Criterion(
                f"gpu_speedup_10x_{top}",
                "ours",
                f"speedup_vs_superlu_{top}",
                ">=",
                10.0,
                reduce="min",
                description=f"{top}^2: ours (CUDA) >= 10x faster than SuperLU (geometric mean, per seed)",
            ),
        )
        if "cudss" in cfg.methods and available("cudss"):
            extra += (
                _paired(
                    f"gpu_faster_than_cudss_{top}",
                    "cudss",
                    f"log_total_s_{top}",
                    True,
                    f"{top}^2, factor + {cfg.n_rhs} right-hand sides: ours faster than cuDSS on the same GPU",
                ),
            )
    return (
        Criterion(
            "exact_fp64",
            "ours",
            "max_residual_fp64",
            "<=",
            1e-10,
            reduce="max",
            description="relative residual <= 1e-10 in float64 on every operator and size",
        ),
        Criterion(
            "timed_exact",
            "ours",
            "timed_residual",
            "<=",
            1e-10,
            reduce="max",
            description="every timed solve of ours (problems and batches) has relative residual <= 1e-10",
        ),
        Criterion(
            "adjoint_gradient",
            "ours",
            "grad_rel_err",
            "<=",
            1e-8,
            reduce="max",
            description="dL/dkappa and dL/db match a SciPy adjoint to 1e-8 (relative)",
        ),
        Criterion(
            "gradcheck",
            "ours",
            "gradcheck_ok",
            ">=",
            1.0,
            reduce="min",
            description="torch.autograd.gradcheck passes (float64)",
        ),
        *speed,
        *extra,
        _paired(
            "batched_vs_splu_loop",
            "superlu",
            "log_batched_s",
            False,
            f"{cfg.batch_count} different {cfg.batch_n}^2 systems in one call: faster than looping splu "
            f"(paired log time ratio over {cfg.speed_problems} batches x seeds)",
        ),
        Criterion(
            "tiny_exact",
            "ours",
            "max_residual_fp64",
            "<=",
            1e-10,
            reduce="max",
            scales=("tiny",),
            description="smoke: exact on tiny grids",
        ),
        Criterion(
            "tiny_gradcheck",
            "ours",
            "gradcheck_ok",
            ">=",
            1.0,
            reduce="min",
            scales=("tiny",),
            description="smoke: gradcheck",
        ),
    )


GATES = (
    Criterion(
        "oracle_round_off",
        "dense_lu",
        "max_residual_fp64",
        "<=",
        1e-10,
        reduce="max",
        description=(
            "the exactness oracle (dense LU on the same operators) reaches a residual <= 1e-10: "
            "the exactness threshold is attainable on these operators"
        ),
    ),
    Criterion(
        "superlu_exact",
        "superlu",
        "timed_residual",
        "<=",
        1e-10,
        reduce="max",
        description="SuperLU solves every timed system to a residual <= 1e-10: two exact solves are compared",
    ),
)


CLAIM_TEMPLATE = Claim(
    statement=(
        "Condensing grid Laplacians into batched dense Dirichlet-to-Neumann merges yields an exact, "
        "differentiable direct sparse solver faster than SciPy's SuperLU, one system or a batch, and "
        "on a GPU by orders of magnitude"
    ),
    source="Abstract; Sec. 5 experiments (timings vs SciPy/cuDSS); official README demo",
    ours="ours",
    baselines=("superlu", "cholmod", "cudss"),
    references=("dense_lu",),
    controls=("dense_lu",),
    gates=GATES,
    criteria=_criteria(CondensedSolverConfig()),
    headline="faster_than_superlu_513",
    min_seeds=2,
    timed_metrics=(
        "batched_s",
        "log_batched_s",
        "factor_s_*",
        "solve_s_*",
        "solve1_s_*",
        "total_s_*",
        "log_total_s_*",
        "reuse_ratio_*",
        "speedup_vs_*",
    ),
    setup_notes=(
        "tiny/small/full on the CPU (the paper's 10^2-10^3x are GPU results vs cuDSS/SciPy; the medium "
        "preset times ours on a CUDA GPU where one is present); float64; Darcy operators for timing, a "
        "fresh operator per timed problem; ours, SuperLU and CHOLMOD (reported) in the same process, "
        "alternating order, the same thread count for every library; paired log time ratios over "
        "problems and seeds; timings under load from other jobs. Our CPU targets (vs CHOLMOD, BLAS "
        "efficiency, 5x ratios, memory) are the benchmark's goals: `icml25 bench solver`."
    ),
)


def _claim(cfg: CondensedSolverConfig) -> Claim:
    criteria = _criteria(cfg)
    top = max(_judged_speed_sizes(cfg))
    headline = (
        f"gpu_faster_than_superlu_{top}" if resolve_device(cfg) == "cuda" else f"faster_than_superlu_{top}"
    )
    return dataclasses.replace(CLAIM_TEMPLATE, criteria=criteria, headline=headline)


CLAIM = _claim(CondensedSolverConfig())


class CondensedSparseSolverCheck(ClaimCheck[CondensedSolverConfig]):
    slug = "condensed_sparse_solver"
    presets = {
        "tiny": CondensedSolverConfig(
            exact_sizes=(20,),
            dense_n=9,
            speed_sizes=(17,),
            n_rhs=2,
            speed_problems=2,
            batch_n=17,
            batch_count=2,
            gradcheck_n=6,
            adjoint_n=17,
        ),
        "small": CondensedSolverConfig(),
        # the paper's GPU speed-up: ours (torch's batched dense path) on CUDA where available, against
        # SuperLU on the CPU and cuDSS (torch.sparse.spsolve) on the same GPU where torch has it
        "medium": CondensedSolverConfig(
            speed_sizes=(257, 513, 1025),
            batch_n=257,
            batch_count=64,
            methods=("ours", "superlu", "cholmod", "cudss"),
            device="auto",
        ),
        "full": CondensedSolverConfig(
            exact_sizes=(65, 100, 129, 257, 513),
            speed_sizes=(65, 129, 257, 513),
            speed_problems=5,
            batch_count=64,
            adjoint_n=129,
            superlu_ref_max_n=513,
        ),
    }
    default_seeds = {"tiny": 1, "small": 2, "medium": 2, "full": 3}

    claim = CLAIM  # the small preset's; claim_for builds the criteria for any config

    def claim_for(self, config: CondensedSolverConfig) -> Claim:
        return _claim(config)

    def run_seed(self, config: CondensedSolverConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        if config.require_cholmod and "cholmod" in config.methods and not available("cholmod"):
            raise NeedsResource(
                "scikit-sparse (CHOLMOD)",
                "require_cholmod is set; pip install 'icml25[sparse]'",
            )
        device = resolve_device(config)
        if device == "cuda" and not torch.cuda.is_available():
            raise NeedsResource("a CUDA GPU", "device='cuda' times ours on a GPU; use device='auto' or 'cpu'")
        ours, superlu, dense = _exactness(config, seed, ctx)
        ours.update(_gradients(config, seed))
        ctx.progress("gradients", 1, 1)
        timed, items, notes = _speed(config, seed, ctx)
        ours.update(timed.pop("ours"))
        superlu.update(timed.pop("superlu"))
        metrics = {"ours": ours, "superlu": superlu, "dense_lu": dense, **timed}
        series = {
            "device": device,
            "speed_sizes": list(config.speed_sizes),
            **{
                f"{m}_total": [metrics[m].get(f"total_s_{n}", float("nan")) for n in config.speed_sizes]
                for m in metrics
                if m != "dense_lu"
            },
        }
        return SeedOutcome(metrics=metrics, series=series, notes=tuple(notes), items=items)

    def make_figures(
        self, config: CondensedSolverConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext
    ) -> None:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3.5))
        styles = {
            "ours": "o-",
            "cholmod": "s--",
            "pardiso": "^--",
            "mumps": "v--",
            "superlu": "x--",
            "cudss": "d--",
        }
        names = {"ours": "ours (Schwarz-Schur)", "superlu": "SuperLU (splu)", "cudss": "cuDSS (torch)"}
        for k, (m, st) in enumerate(styles.items()):
            for o in outcomes:
                s = o.series
                ys = s.get(f"{m}_total")
                if ys is None:
                    continue
                ax.loglog([n * n for n in s["speed_sizes"]], ys, st, color=f"C{k}", alpha=0.7)
            if any(o.series.get(f"{m}_total") is not None for o in outcomes):
                ax.plot([], [], st, color=f"C{k}", label=names.get(m, m.upper()))
        ax.set_xlabel("unknowns N")
        ax.set_ylabel(f"factor + solve time, {config.n_rhs} rhs [s] (median)")
        ax.legend(fontsize=7)
        ctx.save_figure(fig, "speed", "Factor + solve wall time vs grid size (Darcy, float64), each seed")


CHECK = CondensedSparseSolverCheck()
