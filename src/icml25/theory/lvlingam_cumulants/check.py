"""Claim check for *Causal Effect Identification in lvLiNGAM from Higher-Order Cumulants*
(Tramontano, Kivva, Salehkaleybar, Drton, Kiyavash; ICML 2025; https://arxiv.org/abs/2506.05202).

The paper's simulations (Sec. 6 and App., result files ``estimation/Results/*.csv``): on random
lvLiNGAM models with gamma or beta noise, the cumulant estimators' median relative error shrinks
as n grows, while the cross-moment estimator (misspecified when Z -> T or with two latents) and
min-norm IV (the IV problem is underspecified) plateau, and naive OLS stays biased.

Settings (graphs of ``estimation/proxy_experiments.ipynb`` and ``iv_experiments.ipynb``):
    proxy_edge_l1    L -> Z, T, Y; Z -> T -> Y            ours: ICM; also cumulant minimisation
    iv               Z -> T1, T2 -> Y; L2 -> T1, Y; L1 -> T2, Y   ours: underspecified IV
    proxy_noedge_l2  L1, L2 -> Z, T, Y; T -> Y            ours: CM with l = 2 (judged at full only)
    (full also runs proxy_noedge_l1, where cross-moment is consistent, and proxy_edge_l2)

Arms: ``cumulant`` (the proposed estimator of each setting, deterministic tie-break
``tie_break="first"``, the released rule in exact arithmetic), ``cumulant_min`` (the paper's
minimisation refinement, proxy_edge_l1),
``cumulant_released`` (``tie_break="released"``: the released float comparison, so rounding
decides exact ties; CM settings, informational), ``cumulant_leftover`` (CM with ``match="leftover"``,
informational), ``cross_moment`` (Kivva et al. 2023), ``min_norm`` (IV) and ``ols``. References:
``zero`` (the estimate 0: relative error exactly 1, what learning nothing scores) and ``oracle``
(a positive control: the proposed estimator on the model's exact population cumulants, error 0 up
to round-off when the algebra is right). Every arm sees the same simulated data and cumulants; no
arm has a tuning knob, so there is no sweep.

Protocol (issue 43; declared before the small run). Each setting and noise draws ``replicates``
independent models (weights and noise parameters as in the released simulator) and one sample of
the largest n per model; smaller n are nested prefixes, each re-centred (as in the released
``run_experiment``). The per-model relative error ``|b_hat - b| / |b|`` (IV: mean over the two
effects; a failure counts as ``FAIL_ERROR`` = 1e3, i.e. worse than any estimate) is the item; the
metric ``<setting>/<noise>/medrel_n<n>`` is the median over the models, pooled (small runs one seed
of 100 models, so the median is over all of them; with several seeds the runner averages the
seeds' medians). Arm-vs-arm criteria are paired over the same models by the runner's bootstrap of
the difference of medians. ``slope`` is the least-squares slope of log10(median) on log10(n).

Gates (small and full), per judged setting and noise:
    * ``oracle_exact``: the oracle's median error on population cumulants < 1e-6 (the algebra);
    * ``informative``: ours' median error at the largest n < 0.5 (half the ``zero`` floor): the
      sample is large enough for higher-order cumulants to carry the effect.
Criteria (small and full): ours' slope < 0; at the largest n, the median error of each proposed
estimator is below that of each baseline misspecified for its graph (cross-moment and OLS for the
proxy graphs, min-norm and OLS for IV), paired over models, smallest effect 0.05 in relative
error. effect_source: the repository's stored medians at n = 1e5 (gamma) put the gaps at 0.2
(proxy with edge: 0.026 vs 0.225) and 0.55 (IV: 0.114 vs 0.668); 0.05 is a quarter of the smaller
one. Headline: ``proxy_edge_l1/gamma/cumulant/beats_cross_moment``.

Two latents (issue 43). The repository's own stored results put CM (l = 2) at 0.084 against
cross-moment's 0.117 at n = 1e5, and the advantage appears only near n = 1e7 (0.004 vs 0.121). The
two-latent criteria are therefore judged where the paper judges them, at n = 1e7 (``medium``: the two
two-latent settings alone; ``full``: sizes 1e3..1e6 plus ``large_n`` = 1e7 for them, 100 models).
Small runs the two-latent setting to n = 1e5 for the record (its gates and criteria apply at medium
and full only), and the README states the claim for two latents as "needs medium (n = 1e7)".

Why not at small (round 6; decided from one timed model and the official stored errors, before any
n = 1e7 run of ours over many models). One model at
n = 1e7 costs about 4 s of one core here (process time at load ~1: 2.0 s drawing the five sources,
1.0-1.7 s for the order-5 cumulants streamed over 1e7 rows, 3 ms for all estimators; the earlier
"15 s" was wall time on a loaded machine). Its errors are bimodal (right root / wrong root), so the
paired median difference needs many models: resampling the official repository's stored per-model
errors at n = 1e7 (``estimation/Results/*_2_latent*.csv``, 100 models per cell) and applying our
criterion (bootstrap interval of the difference of medians, smallest effect 0.05), the gamma
no-edge cell holds with probability 0.45 / 0.66 / 0.76 / 0.96 with 20 / 30 / 40 / 60 models, and
the other three cells need more (beta no-edge: 0.22 with 20, 0.78 with 100). Judging even the one
gamma cell at small would add about 60 x 4 s = 240 s of one core to a small run of about 150 s:
beyond the ~4-minute small budget. So two latents stay at ``medium``.

``medium`` (changed in round 6, before any medium run): the paper's 100 models per setting and noise
(it was 20, which the same resampling gives 22-73 % power per cell; with 100: 78-100 %), sizes
1e4..1e6 plus 1e7, the two-latent gates and criteria, headline
``proxy_noedge_l2/gamma/cumulant/beats_cross_moment``. The 400 models (about 27 minutes of one core)
are spread over the machine's cores (``workers=0``: ``$ICML25_THREADS`` or all cores; each model is
seeded by its own key, so the outcome does not depend on the number of workers): a few minutes on a
16-core GPU machine, nothing runs on the GPU.

Medium headline cell, run on this CPU (round 6; no device was lent): ``--scale medium --set
settings=["proxy_noedge_l2"] --set noises=["gamma"]``, 100 models: CM 0.014 vs cross-moment 0.162 at
n = 1e7, difference of medians -0.147, 95 % CI [-0.251, -0.051]: holds (at 1e5 CM was still worse,
0.26 vs 0.16, as the repository's stored results lead one to expect). 313 s of one core.
The beta cell alone (seeded as the first noise, so not the preset's beta models): CM 0.029 vs 0.153,
-0.123, 95 % CI [-0.392, -0.047]: holds. ``proxy_edge_l2`` was not run here.

Protocol change (second issue-43 small run, declared before it ran). The first run (sizes 1e3-1e5
everywhere) resolved the headline (holds) and, once the paired statistic was the median (the first
run's intervals used the mean of the errors through a runner mapping bug of ours, fixed), left
iv/beta/cumulant/beats_min_norm undetermined: min-norm's error is heavy-tailed, so the bootstrap
interval of the difference of medians at 1e5 reached +0.06 (ours 0.21 vs 0.30). The IV setting now
goes on to n = 1e6 (``large_n_settings=("iv",)``; about 1 s per model alone, 200 models), where the
paper also reports its IV advantage growing (0.114 at 1e5, 0.013 at 1e7). Criteria, smallest effect
and the other settings are unchanged.

Deviations from the paper: n goes to 1e5 at small (1e6 for IV) (1e7 at full for two latents), 100 models per
setting and noise at small (paper: 100 seeds), plug-in cumulants as in the released code, GRICA
and ReLVLiNGAM baselines are not run. The ``lingam`` PyPI package contains none of these
estimators and is not used.
"""

from __future__ import annotations

import dataclasses
import math
import os
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any

import numpy as np

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.validate import check_fields

from .cumulants import Cumulants
from .estimators import (
    CumulantConditionWarning,
    CumulantMinimization,
    ProxyCumulantEstimator,
    SmallSampleWarning,
    UnderspecifiedIVEstimator,
    cross_moment_effect,
    min_norm_iv,
    ols_effect,
    required_order,
)
from .simulate import NOISE_KINDS, LvLingamGraph, LvLingamModel, iv_graph, proxy_graph, random_model

# setting -> (graph, latents, Z -> T edge)
SETTINGS: dict[str, tuple[int, bool | None]] = {
    "proxy_edge_l1": (1, True),
    "proxy_noedge_l2": (2, False),
    "iv": (1, None),
    "proxy_noedge_l1": (1, False),
    "proxy_edge_l2": (2, True),
}
# arms run in each setting, and the baselines misspecified there (judged by the criteria)
ARMS: dict[str, tuple[str, ...]] = {
    "proxy_edge_l1": ("cumulant", "cumulant_min", "cross_moment", "ols"),
    "proxy_noedge_l2": ("cumulant", "cumulant_released", "cumulant_leftover", "cross_moment", "ols"),
    "iv": ("cumulant", "min_norm", "ols"),
    "proxy_noedge_l1": ("cumulant", "cumulant_released", "cumulant_leftover", "cross_moment", "ols"),
    "proxy_edge_l2": ("cumulant", "cumulant_released", "cumulant_leftover", "cross_moment", "ols"),
}
MISSPECIFIED: dict[str, tuple[str, ...]] = {
    "proxy_edge_l1": ("cross_moment", "ols"),
    "proxy_noedge_l2": ("cross_moment", "ols"),
    "iv": ("min_norm", "ols"),
    "proxy_noedge_l1": ("ols",),
    "proxy_edge_l2": ("cross_moment", "ols"),
}
PROPOSED = ("cumulant", "cumulant_min")
REFERENCES = ("zero", "oracle")
TWO_LATENT = ("proxy_noedge_l2", "proxy_edge_l2")  # judged at n = 1e7 (medium and full) only
FAIL_ERROR = 1e3  # the relative error an estimator's failure counts as (finite, so models pair up)
SMALLEST_EFFECT = 0.05
EFFECT_SOURCE = (
    "repository's stored medians at n = 1e5, gamma noise: gaps 0.2 (proxy with edge, 0.026 vs 0.225) and "
    "0.55 (IV, 0.114 vs 0.668); 0.05 is a quarter of the smaller gap"
)
ORACLE_TOL = 1e-6
INFORMATIVE = 0.5  # ours must reach below half the zero estimate's error (1.0) at the largest n


@dataclass(frozen=True)
class LvLingamConfig:
    """One claim-check configuration.

    Args:
        settings: graphs to run (keys of ``SETTINGS``).
        noises: noise families (gamma and beta in the paper).
        sample_sizes: nested sample sizes, increasing.
        replicates: random models per setting and noise (the items of the paired criteria).
        large_n: one more nested sample size, run only for ``large_n_settings``.
        large_n_settings: the settings whose sizes go on to ``large_n`` (small: IV to 1e6; full:
            the two-latent settings, judged at n = 1e7 as in the paper).
        workers: processes the models are spread over (each model is seeded by its own key, so the
            outcome does not depend on it); 0 = the cores this run may use (``$ICML25_THREADS``,
            else all). Small runs in-process (1); medium and full use 0.
    """

    settings: tuple[str, ...] = ("proxy_edge_l1", "iv", "proxy_noedge_l2")
    noises: tuple[str, ...] = ("gamma", "beta")
    sample_sizes: tuple[int, ...] = (1_000, 10_000, 100_000)
    replicates: int = 100
    large_n: int = 1_000_000
    large_n_settings: tuple[str, ...] = ("iv",)
    workers: int = 1

    def __post_init__(self) -> None:
        bad = [s for s in self.settings if s not in SETTINGS]
        if bad or not self.settings:
            raise ValueError(
                f"settings must be a non-empty subset of {sorted(SETTINGS)}, got {self.settings}"
            )
        bad = [nz for nz in self.noises if nz not in NOISE_KINDS or nz == "gaussian"]
        if bad or not self.noises:
            raise ValueError(f"noises must be non-Gaussian kinds from {NOISE_KINDS}, got {self.noises}")
        sizes = list(self.sample_sizes)
        if len(sizes) < 2 or sizes != sorted(set(sizes)) or sizes[0] < 100:
            raise ValueError(f"sample_sizes must be >= 2 increasing sizes >= 100, got {self.sample_sizes}")
        check_fields(self, positive_int=("replicates", "large_n"))
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 0:
            raise ValueError(f"LvLingamConfig.workers must be an integer >= 0, got {self.workers!r}")
        bad = [s for s in self.large_n_settings if s not in SETTINGS]
        if bad:
            raise ValueError(
                f"large_n_settings must be keys of {sorted(SETTINGS)}, got {self.large_n_settings}"
            )
        if self.large_n_settings and self.large_n <= sizes[-1]:
            raise ValueError(
                f"large_n must exceed the largest of sample_sizes ({sizes[-1]}) when large_n_settings "
                f"is non-empty, got {self.large_n}"
            )

    def sizes_for(self, setting: str) -> tuple[int, ...]:
        """The nested sample sizes run for ``setting`` (``sample_sizes``, plus ``large_n`` if selected)."""
        extra = (self.large_n,) if setting in self.large_n_settings else ()
        return tuple(self.sample_sizes) + extra


def _judged_scales(setting: str) -> tuple[str, ...]:
    return ("medium", "full") if setting in TWO_LATENT else ("small", "medium", "full")


def _criteria(config: LvLingamConfig) -> tuple[Criterion, ...]:
    """The criteria for the settings and noises ``config`` runs (two latents: full only).

    A setting or noise left out of ``config`` has no criterion (it would have no metric); the
    tiny smoke criteria use the first noise of ``config``.
    """
    out: list[Criterion] = []
    for setting in config.settings:
        scales = _judged_scales(setting)
        for noise in config.noises:
            key = f"{setting}/{noise}"
            for arm in (a for a in PROPOSED if a in ARMS[setting]):
                out.append(
                    Criterion(
                        f"{key}/{arm}/error_falls",
                        arm=arm,
                        metric=f"{key}/slope",
                        op="<",
                        threshold=0.0,
                        reduce="max",
                        scales=scales,
                        description=f"{arm} median relative error falls with n ({key}; log-log slope < 0)",
                    )
                )
                for base in MISSPECIFIED[setting]:
                    out.append(
                        Criterion(
                            f"{key}/{arm}/beats_{base}",
                            arm=arm,
                            metric=f"{key}/medrel_nmax",
                            op="<",
                            other_arm=base,
                            smallest_effect=SMALLEST_EFFECT,
                            effect_source=EFFECT_SOURCE,
                            scales=scales,
                            description=(
                                f"{arm} median relative error at the largest n is below {base}'s "
                                f"({key}; paired over the same models)"
                            ),
                        )
                    )
    # tiny: smoke conditions (finite, and below the structurally misspecified baseline at n_max)
    for setting in config.settings:
        key, base = f"{setting}/{config.noises[0]}", MISSPECIFIED[setting][0]
        out.append(
            Criterion(
                f"tiny/{key}/below_{base}",
                arm="cumulant",
                metric=f"{key}/medrel_nmax",
                op="<",
                other_arm=base,
                reduce="mean",
                scales=("tiny",),
                description=f"smoke: cumulant error below {base} ({key})",
            )
        )
    return tuple(out)


def _gates(config: LvLingamConfig) -> tuple[Criterion, ...]:
    out: list[Criterion] = []
    for setting in config.settings:
        scales = _judged_scales(setting)
        for noise in config.noises:
            key = f"{setting}/{noise}"
            out.append(
                Criterion(
                    f"{key}/oracle_exact",
                    arm="oracle",
                    metric=f"{key}/medrel_pop",
                    op="<",
                    threshold=ORACLE_TOL,
                    scales=scales,
                    description=f"the estimator on exact population cumulants returns the effect ({key})",
                )
            )
            out.append(
                Criterion(
                    f"{key}/informative",
                    arm="cumulant",
                    metric=f"{key}/medrel_nmax",
                    op="<",
                    other_arm="zero",
                    factor=INFORMATIVE,
                    scales=scales,
                    description=(
                        f"at the largest n our median error is below half that of the zero estimate ({key}): "
                        "the sample carries the effect"
                    ),
                )
            )
    return tuple(out)


def _claim(config: LvLingamConfig) -> Claim:
    criteria = _criteria(config)
    paired = [c for c in criteria if c.paired]
    judged = [c for c in paired if "small" in c.scales] or paired
    headline = next(
        (c.name for c in judged if c.name.endswith("/cumulant/beats_cross_moment")),
        judged[0].name if judged else criteria[0].name,
    )
    return dataclasses.replace(CLAIM_TEMPLATE, criteria=criteria, gates=_gates(config), headline=headline)


CLAIM_TEMPLATE = Claim(
    statement=(
        "Higher-order-cumulant estimators recover causal effects in lvLiNGAM from a single proxy (also "
        "when the proxy affects the treatment, and with two latents) or one instrument for two "
        "treatments: their median relative error shrinks as n grows, while the cross-moment and "
        "min-norm IV baselines, misspecified for these graphs, and naive OLS plateau."
    ),
    source="Sec. 6 simulations (proxy and IV experiments; repository result files, gamma and beta noise)",
    ours="cumulant",
    baselines=("cumulant_min", "cumulant_released", "cumulant_leftover", "cross_moment", "min_norm", "ols"),
    references=REFERENCES,
    controls=("oracle",),
    criteria=_criteria(LvLingamConfig()),
    gates=_gates(LvLingamConfig()),
    headline="proxy_edge_l1/gamma/cumulant/beats_cross_moment",
    min_seeds=1,
    setup_notes=(
        "Random lvLiNGAM models as in the released simulator (weights +-U(0.5, 0.9), first child of each "
        "latent weight 1, gamma/beta noise with per-source parameters), nested sample sizes 1e3-1e5 at "
        "small, one seed of 100 models per setting and noise (medians pooled over the models, criteria "
        "paired over them). The two-latent setting runs to 1e5 at small for the record; it is judged at "
        "n = 1e7 (medium and full) as in the paper: 100 models per setting and noise, about 4 s of one "
        "core each. "
        "'cumulant_min' is the paper's second proposed estimator (listed among the comparison arms), not a "
        "baseline; 'cumulant_released' is ours with the released float tie-break, 'cumulant_leftover' CM "
        "with the population-exact last step (both informational). References: 'zero' (error 1) and "
        "'oracle' (population cumulants, a positive control). GRICA and ReLVLiNGAM are not run."
    ),
)
CLAIM = _claim(LvLingamConfig())  # the small preset's claim; claim_for builds it for any config


# item_statistics: every per-model error metric is the median over its models (the items)
MEDIAN_OF_ITEMS: dict[str, Any] = {
    f"{setting}/{noise}/medrel_nmax": np.median for setting in SETTINGS for noise in NOISE_KINDS
}


def _relative_error(estimate: Any, truth: np.ndarray) -> float:
    est = np.atleast_1d(np.asarray(estimate, dtype=float))
    err = np.abs(est - truth) / np.abs(truth)
    return float(min(err.mean(), FAIL_ERROR)) if np.isfinite(err).all() else FAIL_ERROR


def _truth(setting: str, model: LvLingamModel) -> np.ndarray:
    if setting == "iv":
        return np.array([model.effect(1, 3), model.effect(2, 3)])
    return np.array([model.effect(1, 2)])


def _graph(setting: str) -> LvLingamGraph:
    n_latent, edge = SETTINGS[setting]
    return iv_graph() if edge is None else proxy_graph(n_latent, proxy_affects_treatment=edge)


def _ours(setting: str, **kw: Any) -> Any:
    n_latent, edge = SETTINGS[setting]
    if setting == "iv":
        return UnderspecifiedIVEstimator(**kw)
    return ProxyCumulantEstimator(n_latent, proxy_affects_treatment=bool(edge), **kw)


def _fit_effect(est: Any, cum: Cumulants) -> Any:
    # the estimators' diagnostics (few rows, ill-conditioned system) are measured, not shown, here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (CumulantConditionWarning, SmallSampleWarning))
        return est.fit(cum).effect_


def estimate_all(setting: str, cum: Cumulants) -> dict[str, Any]:
    """Every non-reference arm of ``setting`` on the same cumulants; a failing estimator gives NaN."""
    fns: dict[str, Any] = {
        "ols": lambda c: ols_effect(c, [1, 2], 3) if setting == "iv" else ols_effect(c, [1], 2),
        "cumulant": lambda c: _fit_effect(_ours(setting), c),
        "cumulant_released": lambda c: _fit_effect(_ours(setting, tie_break="released"), c),
        "cumulant_leftover": lambda c: _fit_effect(_ours(setting, match="leftover"), c),
        "cumulant_min": lambda c: _fit_effect(CumulantMinimization(), c),
        "cross_moment": cross_moment_effect,
        "min_norm": min_norm_iv,
    }
    out: dict[str, Any] = {}
    for arm in ARMS[setting]:
        try:
            with np.errstate(all="ignore"):
                out[arm] = fns[arm](cum)
        except (ValueError, np.linalg.LinAlgError):
            out[arm] = np.nan
    return out


def model_errors(
    setting: str, noise: str, key: tuple[int, ...], sizes: Sequence[int], order: int
) -> tuple[dict[str, np.ndarray], float]:
    """One random model's relative errors: ``({arm: error at each of sizes}, oracle error)``.

    The model and its sample come from ``np.random.default_rng(key)`` alone, so the result does not
    depend on which process computes it or in what order. Smaller sizes are nested prefixes of one
    sample of the largest, each re-centred (as in the released ``run_experiment``).
    """
    rng = np.random.default_rng(list(key))
    model = random_model(_graph(setting), noise, rng)
    X = model.sample(sizes[-1], rng)
    truth = _truth(setting, model)
    oracle = FAIL_ERROR
    try:
        with np.errstate(all="ignore"):
            oracle = _relative_error(_fit_effect(_ours(setting), model.population_cumulants(order)), truth)
    except (ValueError, np.linalg.LinAlgError):
        pass
    errors = {arm: np.full(len(sizes), FAIL_ERROR) for arm in (*ARMS[setting], "zero")}
    for k, n in enumerate(sizes):
        cum = Cumulants.from_data(X[:n], order)  # re-centred prefix, streamed in chunks
        ests = estimate_all(setting, cum)
        ests["zero"] = np.zeros_like(truth)
        for arm, est in ests.items():
            errors[arm][k] = _relative_error(est, truth)
    return errors, oracle


def _model_task(task: tuple[Any, ...]) -> tuple[dict[str, np.ndarray], float]:
    return model_errors(*task)


def _resolve_workers(workers: int) -> int:
    """``workers``, or for 0 the cores this run may use (``$ICML25_THREADS``, else all)."""
    if workers > 0:
        return workers
    env = os.environ.get("ICML25_THREADS", "").strip()
    return int(env) if env.isdigit() and int(env) > 0 else max(1, os.cpu_count() or 1)


def _map_models(tasks: Sequence[tuple[Any, ...]], workers: int) -> Iterator[tuple[int, Any]]:
    """``(index, model_errors(*task))`` for each task, in processes when ``workers > 1``.

    Results arrive in completion order with their index; each model is seeded by its own key, so
    the outcome is identical for any number of workers.
    """
    if workers <= 1 or len(tasks) <= 1:
        for i, task in enumerate(tasks):
            yield i, _model_task(task)
        return
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(_model_task, task): i for i, task in enumerate(tasks)}
        for fut in as_completed(futures):
            yield futures[fut], fut.result()


def _slope(sizes: Sequence[int], medians: Sequence[float]) -> float:
    y = np.asarray(medians, dtype=float)
    if not np.isfinite(y).all() or (y <= 0).any():
        return math.nan
    return float(np.polyfit(np.log10(np.asarray(sizes, dtype=float)), np.log10(y), 1)[0])


class LvLingamCumulantsCheck(ClaimCheck[LvLingamConfig]):
    slug = "lvlingam_cumulants"
    claim = CLAIM
    item_statistics = MEDIAN_OF_ITEMS
    presets = {
        "tiny": LvLingamConfig(
            settings=("proxy_edge_l1", "iv"),
            noises=("gamma",),
            sample_sizes=(1_000, 100_000),
            replicates=10,
            large_n_settings=(),
        ),
        "small": LvLingamConfig(),
        # the two-latent settings alone at the paper's n = 1e7 and its 100 models per setting and noise
        # (20 before: underpowered, see the docstring): about 4 s of one core per model (1e7 rows drawn
        # and their order-5 cumulants, plus the 1e4..1e6 prefixes), 400 models = about 27 CPU-minutes,
        # spread over the machine's cores (workers=0; a 16-core GPU machine: about 2-3 minutes)
        "medium": LvLingamConfig(
            settings=TWO_LATENT,
            sample_sizes=(10_000, 100_000, 1_000_000),
            replicates=100,
            large_n=10_000_000,
            large_n_settings=TWO_LATENT,
            workers=0,
        ),
        "full": LvLingamConfig(
            settings=tuple(SETTINGS),
            sample_sizes=(1_000, 10_000, 100_000, 1_000_000),
            replicates=100,
            large_n=10_000_000,
            large_n_settings=TWO_LATENT,
            workers=0,
        ),
    }
    default_seeds = {"tiny": 1, "small": 1, "medium": 1, "full": 1}

    def claim_for(self, config: LvLingamConfig) -> Claim:
        return _claim(config)

    def run_seed(self, config: LvLingamConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        arms = CLAIM_TEMPLATE.arms
        metrics: dict[str, dict[str, float]] = {a: {} for a in arms}
        items: dict[str, dict[str, np.ndarray]] = {a: {} for a in arms}
        series: dict[str, Any] = {"sample_sizes": list(config.sample_sizes)}
        cells = [
            (s_idx, setting, z_idx, noise)
            for s_idx, setting in enumerate(config.settings)
            for z_idx, noise in enumerate(config.noises)
        ]
        errors: dict[str, dict[str, np.ndarray]] = {}
        oracles: dict[str, np.ndarray] = {}
        tasks: list[tuple[Any, ...]] = []
        slots: list[tuple[str, int]] = []
        for s_idx, setting, z_idx, noise in cells:
            key, sizes = f"{setting}/{noise}", config.sizes_for(setting)
            order = max(required_order(SETTINGS[setting][0]), 4)
            errors[key] = {
                arm: np.full((config.replicates, len(sizes)), FAIL_ERROR) for arm in (*ARMS[setting], "zero")
            }
            oracles[key] = np.full(config.replicates, FAIL_ERROR)
            for r in range(config.replicates):
                tasks.append((setting, noise, (seed, s_idx, z_idx, r), sizes, order))
                slots.append((key, r))
        # every model of every cell in one pass (one process pool when workers > 1)
        for done, (i, (errs, oracle_err)) in enumerate(
            _map_models(tasks, _resolve_workers(config.workers)), start=1
        ):
            key, r = slots[i]
            oracles[key][r] = oracle_err
            for arm, e in errs.items():
                errors[key][arm][r] = e
            ctx.progress("models", done, len(tasks))
        for _, setting, _, noise in cells:
            key, sizes = f"{setting}/{noise}", config.sizes_for(setting)
            oracle = oracles[key]
            series[key] = dict(errors[key])
            for arm, e in errors[key].items():
                med = np.median(e, axis=0)  # a failure (FAIL_ERROR) counts as the worst error
                for k, n in enumerate(sizes):
                    metrics[arm][f"{key}/medrel_n{n}"] = float(med[k])
                metrics[arm][f"{key}/medrel_nmax"] = float(med[-1])
                items[arm][f"{key}/medrel_nmax"] = e[:, -1].copy()
                metrics[arm][f"{key}/slope"] = _slope(sizes, med)
                metrics[arm][f"{key}/fail_frac"] = float((e >= FAIL_ERROR).mean())
            metrics["oracle"][f"{key}/medrel_pop"] = float(np.median(oracle))
            metrics["oracle"][f"{key}/fail_frac"] = float((oracle >= FAIL_ERROR).mean())
            series[key]["oracle"] = oracle
        return SeedOutcome(metrics=metrics, series=series, items=items)

    def make_figures(self, config: LvLingamConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext) -> None:
        from icml25.core.plotting import arm_color, new_figure

        fig, axes = new_figure(ncols=len(config.settings), nrows=len(config.noises), width=3.6, height=3.0)
        axes = np.asarray(axes).reshape(len(config.noises), len(config.settings))
        for zi, noise in enumerate(config.noises):
            for si, setting in enumerate(config.settings):
                ax = axes[zi, si]
                key = f"{setting}/{noise}"
                sizes = np.asarray(config.sizes_for(setting), dtype=float)
                anchor = math.nan
                for arm in ARMS[setting]:
                    pooled = np.concatenate([np.asarray(o.series[key][arm], dtype=float) for o in outcomes])
                    q25, med, q75 = np.quantile(pooled, [0.25, 0.5, 0.75], axis=0)
                    color = arm_color(arm, CLAIM.ours, CLAIM.baselines)
                    ax.plot(sizes, med, marker="o", color=color, label=arm)
                    ax.fill_between(sizes, q25, q75, color=color, alpha=0.15, linewidth=0)
                    if arm == CLAIM.ours:
                        anchor = float(med[0])
                if math.isfinite(anchor):  # an n^(-1/2) line through our error at the smallest n
                    ref = anchor * np.sqrt(sizes[0] / sizes)
                    ax.plot(sizes, ref, color="0.5", linestyle=":", linewidth=1, label="slope -1/2")
                ax.set(xscale="log", yscale="log", xlabel="sample size n", ylabel="relative error", title=key)
                ax.legend()
        ctx.save_figure(
            fig,
            "error_vs_n",
            "Relative error of the causal-effect estimate against sample size (log-log): median over all "
            "simulated models of all seeds, band = interquartile range; dotted: slope -1/2 for reference.",
        )


CHECK = LvLingamCumulantsCheck()
