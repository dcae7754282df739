"""Claim check for *Schwarz-Schur Involution: Lightspeed Differentiable Sparse Linear Solvers*
(Wang, Abulnaga, Balbastre, Fischl; ICML 2025; https://openreview.net/forum?id=RKbanvzycr).

The paper: condensing grid operators into batched dense DtN merges gives an exact, differentiable
direct solver far faster than SciPy (SuperLU) and cuDSS. The verdict rests on those claims only:
exactness, gradients, and speed against the paper's SciPy baseline (SuperLU, ``splu`` with COLAMD),
one factorisation and batched. The CPU sparse direct solvers a user would pick instead -- CHOLMOD
(scikit-sparse), PARDISO (pypardiso, MKL), MUMPS (python-mumps) -- are measured in the same process
on the same operators (``bench.run_benchmark``) and reported; our CPU targets against them (and the
BLAS efficiency and 5x ratios) are the benchmark's goals (``bench.targets``, printed by
``icml25 bench condensed_sparse_solver`` and listed in this check's notes), not judged criteria.

* E1 exactness: float64 relative residual on P1 (5-point Poisson + 1e-2 I, Neumann), P1' (9-point,
  Dirichlet), P2 (Darcy, kappa = exp(GRF), Neumann + 1e-2 I) and P3 (8-neighbour image affinity
  Laplacian + 1e-2 I) at every size of the preset, incl. a non-power-of-two (padded) grid; also the
  relative difference from SuperLU's solution, and the float32 residual (reported, not judged).
* E4 gradients: ``torch.autograd.gradcheck`` (float64) w.r.t. kappa and the right-hand side on a
  small grid, and dL/dkappa and dL/db against a SciPy adjoint (SuperLU on A^T) on a larger grid.
* E2 speed: P2, factor + ``n_rhs`` solves and one-column solves with the stored factors, every
  method once per round in alternating order, medians over rounds, the same thread count for every
  library; per-level GFLOP/s against a same-shape batched matmul timed in the same run; peak memory
  of factor + solve in a fresh process per solver.
* E3 batching: ``batch_count`` different P2 systems of ``batch_n``^2 in one call vs each library looped.

Criteria (the paper's claims; declared before any run). Exactness and gradients: max residual
<= 1e-10; adjoint gradient error <= 1e-8; gradcheck passes. Against SuperLU (the paper's SciPy
baseline): at every speed size >= 257 (the largest if all are smaller) ours' factor + ``n_rhs``
solves take less time than SuperLU's (headline: the largest such size); ``batch_count`` different
small systems in one call take less time than looping ``splu`` (batching is the paper's regime:
slower than looping splu there would contradict it). ``medium`` (ours on a CUDA GPU where one is
present, ``device="auto"``): the paper's GPU speed-up, ours at least 10x faster than SuperLU at
every judged size (headline: the largest). The paper reports 60-1000x against SciPy on an A6000
(secondary summaries; 257^2 in ~36 ms against ~16.5 s); our SuperLU keeps its factors and solves
all right-hand sides at once, so the ratio is smaller than the paper's, and 10x (an order of
magnitude) is the smallest speed-up we would still call the paper's GPU claim. Without a GPU the
medium preset runs on the CPU with the CPU criteria only (the device is in the notes and series).

Measured and reported, not judged (``bench.targets``, the benchmark's goals): against CHOLMOD at
every speed size >= 513 (factor + ``n_rhs`` solves at least as fast; factorisation >= 0.8x;
1-RHS solve within 1.5x; peak memory <= 1.5x; batched small systems at least as fast as CHOLMOD
looped), batched >= 5x faster than looping splu, reuse ratio >= 5 at the speed size closest to 257,
merge phase >= 0.5x a same-shape batched matmul's GFLOP/s. PARDISO and MUMPS are reported too.
Missing libraries are listed in the notes and their metrics stay unmeasured. The sizes in criterion
names follow the configuration (``claim_for``). Timings are wall-clock on a machine shared with
other jobs: they are noisy, hence medians of alternating rounds and ratios within one run.
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
from .bench import METHODS, available, blas_report, matmul_gflops, run_benchmark
from .layout import PatchLayout
from .operators import GridLaplacian, darcy, gaussian_random_field, image_laplacian, poisson
from .solver import factorize, sinv_solve

PROBLEMS = ("poisson5_neumann", "poisson9_dirichlet", "darcy", "image9")


@dataclass(frozen=True)
class CondensedSolverConfig:
    """Sizes and repeats of the check. ``full`` runs E1-E4 up to 513^2 (1025^2 would need more memory).

    ``device``: where ours is timed (E2/E3): ``"cpu"``, ``"cuda"`` or ``"auto"`` (CUDA where
    ``torch.cuda.is_available()``, else the CPU); exactness and gradients run on the CPU in float64.
    ``require_cholmod``: refuse to run (``needs scikit-sparse``) without CHOLMOD; off by default,
    since CHOLMOD is only a benchmark goal, not a judged baseline.
    """

    exact_sizes: tuple[int, ...] = (65, 100, 257, 513)
    problems: tuple[str, ...] = PROBLEMS
    speed_sizes: tuple[int, ...] = (257, 513)
    n_rhs: int = 64
    repeats: int = 3
    batch_n: int = 65
    batch_count: int = 16
    gradcheck_n: int = 9
    adjoint_n: int = 65
    matmul_n: int = 1024
    superlu_ref_max_n: int = 257
    methods: tuple[str, ...] = ("ours", "cholmod", "pardiso", "mumps", "superlu")
    memory: bool = True
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
        check_fields(self, positive_int=("n_rhs", "repeats", "batch_count"))
        bad_m = [m for m in self.methods if m not in METHODS]
        if bad_m or "ours" not in self.methods or "superlu" not in self.methods:
            raise ValueError(
                f"CondensedSolverConfig.methods must include 'ours' and 'superlu' and lie in {METHODS}, "
                f"got {self.methods}"
            )
        for name in ("batch_n", "gradcheck_n", "adjoint_n", "matmul_n"):
            check_in_range(f"CondensedSolverConfig.{name}", getattr(self, name), 5)
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
) -> tuple[dict[str, float], dict[str, float]]:
    rng = np.random.default_rng(seed)
    res64: dict[str, float] = {}
    err: dict[str, float] = {}
    res32: dict[str, float] = {}
    superlu_res: dict[str, float] = {}
    total = len(cfg.exact_sizes) * len(cfg.problems)
    k = 0
    for n in cfg.exact_sizes:
        for name in cfg.problems:
            op = build_problem(name, n, seed)
            layout = PatchLayout.for_grid(n, n)
            b = rng.standard_normal((n * n, 2))
            rhs = torch.as_tensor(b.reshape(1, n, n, 2))
            F = factorize(op.alpha(layout), layout)
            x = F.solve(rhs)
            res64[f"{name}_{n}"] = float(F.residual(x, rhs).max())
            if n <= cfg.superlu_ref_max_n:  # SuperLU's solution for the relative difference
                A = op.to_scipy()
                ref = splu_run(A, b)
                xs = x[0].reshape(n * n, 2).numpy()
                err[f"{name}_{n}"] = float(np.linalg.norm(xs - ref.x) / np.linalg.norm(ref.x))
                r = np.linalg.norm(A @ ref.x - b, axis=0) / np.linalg.norm(b, axis=0)
                superlu_res[f"{name}_{n}"] = float(r.max())
            if n <= 257:  # float32 residual, reported only
                op32 = build_problem(name, n, seed, dtype=torch.float32)
                F32 = factorize(op32.alpha(layout), layout)
                r32 = rhs.float()
                res32[f"{name}_{n}"] = float(F32.residual(F32.solve(r32), r32).max())
            k += 1
            ctx.progress("exactness", k, total)
    ours = {
        "max_residual_fp64": max(res64.values()),
        "max_rel_diff_vs_superlu": max(err.values()) if err else float("nan"),
        "max_residual_fp32": max(res32.values()) if res32 else float("nan"),
    }
    ours.update({f"residual/{key}": v for key, v in res64.items()})
    return ours, ({"max_residual_fp64": max(superlu_res.values())} if superlu_res else {})


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


BASELINE_ARMS = ("cholmod", "pardiso", "mumps", "superlu")


def _speed(
    cfg: CondensedSolverConfig, seed: int, ctx: RunContext
) -> tuple[dict[str, float], dict[str, dict[str, float]], list[str], list[dict[str, object]]]:
    """E2/E3 with every direct solver in one process (``bench.run_benchmark``: alternating rounds,
    medians, the same thread count for every library). Returns ours' metrics, each baseline arm's,
    notes (device, missing libraries, BLAS per library, the benchmark's goals) and the goals."""
    device = resolve_device(cfg)
    ours: dict[str, float] = {"matmul_gflops": matmul_gflops(cfg.matmul_n)}
    arms: dict[str, dict[str, float]] = {m: {} for m in BASELINE_ARMS}
    notes: list[str] = []
    methods = [m for m in cfg.methods]
    res = run_benchmark(
        cfg.speed_sizes,
        (1, cfg.n_rhs),
        repeats=cfg.repeats,
        methods=methods,
        seed=seed,
        batch=(cfg.batch_n, cfg.batch_count),
        memory=cfg.memory,
        memory_sizes=_cholmod_sizes(cfg),
        batch_methods=("cholmod", "mumps", "superlu"),
        levels=True,
        log=lambda s: ctx.progress("speed: " + s, 0, 1),
        device=device,
    )
    for m, why in res["missing"].items():
        notes.append(f"{m} {why}")
    notes.append(f"ours timed on {device} (config device={cfg.device}); baselines on the CPU")
    for t in res["targets"]:  # the benchmark's goals: measured and printed, not judged
        if t["value"] != t["value"]:
            notes.append(f"goal (not judged): {t['target']}: not measured ({t['unit']})")
        else:
            state = "met" if t["met"] else "missed"
            notes.append(
                f"goal (not judged): {t['target']}: {t['value']:.2f} {t['unit']} "
                f"(goal {t['threshold']:.2f}) {state}"
            )
    if cfg.memory:
        notes.extend(f"BLAS of {m}: {d}" for m, d in blas_report().items())
    rows = {(r["method"], r["n"], r["n_rhs"]): r for r in res["rows"]}
    for n in cfg.speed_sizes:
        for m in methods:
            r64, r1 = rows.get((m, n, cfg.n_rhs)), rows.get((m, n, 1))
            if r64 is None or "total_s" not in r64 or r1 is None or "solve_s" not in r1:
                continue  # missing library: its metrics stay unmeasured (criteria say so)
            d = ours if m == "ours" else arms[m]
            d[f"total_s_{n}"] = r64["total_s"]
            d[f"factor_s_{n}"] = r64["factor_s"]
            d[f"solve1_s_{n}"] = r1["solve_s"]
            d[f"factor_mb_{n}"] = r64["factor_mb"]
            mem = res["memory"].get(f"{m}_{n}")
            if mem is not None and math.isfinite(mem.get("peak_mb", float("nan"))):
                d[f"peak_mb_{n}"] = mem["peak_mb"]
        o64 = rows[("ours", n, cfg.n_rhs)]
        ours[f"reuse_ratio_{n}"] = o64["factor_s"] / o64["solve1_s"]
        ours[f"merge_gflops_{n}"] = o64["merge_gflops"]
        for m in BASELINE_ARMS:
            if f"total_s_{n}" in arms[m]:
                ours[f"speedup_vs_{m}_{n}"] = arms[m][f"total_s_{n}"] / ours[f"total_s_{n}"]
    lv = res["levels"]
    ours["merge_frac_of_matmul"] = lv["merge_ratio"] if lv else float("nan")
    ours["merge_same_shape_gflops"] = lv["merge_ref_gflops"] if lv else float("nan")
    for m, sec in res["batched"].items():
        (ours if m == "ours" else arms[m])["batched_s"] = sec
    ctx.progress("speed", 1, 1)
    return ours, {m: v for m, v in arms.items() if m in methods}, notes, res["targets"]


def _judged_speed_sizes(cfg: CondensedSolverConfig) -> tuple[int, ...]:
    """Speed sizes with a SuperLU criterion: every one >= 257 (257 and 513 at small and full; full's 65
    and 129 are reported only), or the largest one if all are smaller."""
    large = tuple(n for n in cfg.speed_sizes if n >= 257)
    return large or (max(cfg.speed_sizes),)


def _cholmod_sizes(cfg: CondensedSolverConfig) -> tuple[int, ...]:
    """Speed sizes with a CHOLMOD criterion: every one >= 513, or the largest one if all are smaller."""
    large = tuple(n for n in cfg.speed_sizes if n >= 513)
    return large or (max(cfg.speed_sizes),)


def _criteria(cfg: CondensedSolverConfig) -> tuple[Criterion, ...]:
    """The criteria for ``cfg``: speed and reuse criteria name the grid sizes the config times."""
    speed = tuple(
        Criterion(
            f"faster_than_superlu_{n}",
            "ours",
            f"total_s_{n}",
            "<",
            other_arm="superlu",
            description=(
                f"{n}^2, {cfg.n_rhs} right-hand sides: our total time is below SuperLU's (median of repeats)"
            ),
        )
        for n in _judged_speed_sizes(cfg)
    )
    gpu: tuple[Criterion, ...] = ()
    if resolve_device(cfg) == "cuda":
        gpu = tuple(
            Criterion(
                f"gpu_speedup_vs_superlu_{n}",
                "ours",
                f"total_s_{n}",
                "<=",
                other_arm="superlu",
                factor=0.1,
                description=(
                    f"{n}^2, {cfg.n_rhs} right-hand sides, ours on a CUDA GPU: at least 10x faster than "
                    "SuperLU on the CPU (paper: 60-1000x vs SciPy on an A6000)"
                ),
            )
            for n in _judged_speed_sizes(cfg)
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
        *gpu,
        Criterion(
            "batched_vs_splu_loop",
            "ours",
            "batched_s",
            "<",
            other_arm="superlu",
            description=(
                f"{cfg.batch_count} different {cfg.batch_n}^2 systems in one call: faster than looping splu"
            ),
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


CLAIM_TEMPLATE = Claim(
    statement=(
        "Condensing grid Laplacians into batched dense Dirichlet-to-Neumann merges yields an exact, "
        "differentiable direct sparse solver faster than SciPy's SuperLU, one system or a batch, and "
        "on a GPU by orders of magnitude"
    ),
    source="Abstract; Sec. 5 experiments (timings vs SciPy/cuDSS); official README demo",
    ours="ours",
    baselines=("cholmod", "superlu", "pardiso", "mumps"),
    criteria=_criteria(CondensedSolverConfig()),
    headline="faster_than_superlu_513",
    min_seeds=2,
    timed_metrics=(
        "batched_s",
        "factor_s_*",
        "solve1_s_*",
        "total_s_*",
        "reuse_ratio_*",
        "speedup_vs_*",
        "matmul_gflops",
        "merge_gflops_*",
        "merge_frac_of_matmul",
        "merge_same_shape_gflops",
        "peak_mb_*",
    ),
    setup_notes=(
        "tiny/small/full on the CPU (the paper's 10^2-10^3x are GPU results vs cuDSS/SciPy; the medium "
        "preset times ours on a CUDA GPU where one is present); float64; Darcy operator for timing; "
        "CHOLMOD, PARDISO, MUMPS and SuperLU in the same process, alternating order, medians, the same "
        "thread count for every library; peak memory in fresh processes; timings under load from other "
        "jobs, ratios within one run. Our CPU targets (vs CHOLMOD, BLAS efficiency, 5x ratios) are the "
        "benchmark's goals, listed in the notes, not judged."
    ),
)


def _claim(cfg: CondensedSolverConfig) -> Claim:
    criteria = _criteria(cfg)
    top = max(_judged_speed_sizes(cfg))
    headline = (
        f"gpu_speedup_vs_superlu_{top}" if resolve_device(cfg) == "cuda" else f"faster_than_superlu_{top}"
    )
    return dataclasses.replace(CLAIM_TEMPLATE, criteria=criteria, headline=headline)


CLAIM = _claim(CondensedSolverConfig())


class CondensedSparseSolverCheck(ClaimCheck[CondensedSolverConfig]):
    slug = "condensed_sparse_solver"
    presets = {
        "tiny": CondensedSolverConfig(
            exact_sizes=(20,),
            speed_sizes=(17,),
            n_rhs=2,
            repeats=1,
            batch_n=17,
            batch_count=2,
            gradcheck_n=6,
            adjoint_n=17,
            matmul_n=256,
            methods=("ours", "cholmod", "superlu"),
            memory=False,
            require_cholmod=False,
        ),
        "small": CondensedSolverConfig(),
        # the paper's GPU speed-up: ours (torch's batched dense path) on CUDA where available
        "medium": CondensedSolverConfig(
            speed_sizes=(257, 513, 1025),
            batch_n=257,
            batch_count=64,
            methods=("ours", "cholmod", "superlu"),
            memory=False,
            device="auto",
        ),
        "full": CondensedSolverConfig(
            exact_sizes=(65, 100, 129, 257, 513),
            speed_sizes=(65, 129, 257, 513),
            repeats=5,
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
        ours, base = _exactness(config, seed, ctx)
        ours.update(_gradients(config, seed))
        ctx.progress("gradients", 1, 1)
        s_ours, arms, notes, goals = _speed(config, seed, ctx)
        ours.update(s_ours)
        superlu = {**base, **arms.pop("superlu", {})}
        metrics = {"ours": ours, "superlu": superlu, **arms}
        series = {
            "device": device,
            "goals": [{k: (None if v != v else v) for k, v in g.items()} for g in goals],
            "speed_sizes": list(config.speed_sizes),
            **{
                f"{m}_total": [metrics[m].get(f"total_s_{n}", float("nan")) for n in config.speed_sizes]
                for m in metrics
            },
        }
        return SeedOutcome(metrics=metrics, series=series, notes=tuple(notes))

    def make_figures(
        self, config: CondensedSolverConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext
    ) -> None:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3.5))
        styles = {"ours": "o-", "cholmod": "s--", "pardiso": "^--", "mumps": "v--", "superlu": "x--"}
        names = {"ours": "ours (Schwarz-Schur)", "superlu": "SuperLU (splu)"}
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
        ax.set_ylabel(f"factor + solve time, {config.n_rhs} rhs [s]")
        ax.legend(fontsize=7)
        ctx.save_figure(fig, "speed", "Factor + solve wall time vs grid size (Darcy, float64), each seed")


CHECK = CondensedSparseSolverCheck()
