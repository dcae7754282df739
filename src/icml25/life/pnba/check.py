"""Claim check for *Neural Representational Consistency Emerges from Probabilistic Neural-Behavioral
Representation Alignment* (PNBA; Zhu, Song, Ouyang, Yu, Huang; ICML 2025; https://arxiv.org/abs/2505.04331).

The paper's claim: latents of a neural encoder trained by probabilistic neural-behavioural alignment are
preserved across animals (paired trials of two unseen subjects are far more similar than unpaired ones)
and decode behaviour zero-shot, unlike deterministic alignment, which needs manual (CCA) alignment.
Here, on the simulated multi-subject reaching data of :mod:`icml25.life.pnba.data` (shared latent
dynamics, no neuron correspondence, neuron readouts drawn from cell types shared by every subject),
everything is measured on 3 *test* subjects never seen in training.

Arms (same data, same simulated subjects):
    pnba          full objective (matching + KLs + generative constraints), order-invariant encoder
    pnba_nogen    PNBA without the generative constraints (matching and KL terms only)
    contrastive   deterministic means and symmetric InfoNCE (CEBRA/CLIP-like), same encoders
    pnba_control  PNBA trained and tested on data whose latent dynamics differ per subject (negative
                  control: there is no shared structure to find)
References (never baselines to beat):
    oracle        the same neural encoder and behaviour decoder regressed directly on velocity
                  (``objective="supervised"``), same steps and lr sweep: what the encoder, the data and
                  the budget allow zero-shot (positive control)
    untrained     the same architecture at its random initialisation, same ridge readout (floor)
    cca           per-subject PCA latents aligned to a reference training subject by CCA on
                  condition-averaged activity; uses the test subjects' condition labels, so it is a
                  supervised ceiling, not zero-shot

Equal effort: the four trained arms on the shared data get the same steps, batch and learning-rate sweep
(``lrs``; small uses the single rate 3e-3 for every arm, an equal and untuned budget); with several rates
each keeps the one with the best zero-shot ridge R² on 2 *validation* subjects (never the test
subjects). The control reuses PNBA's chosen rate. Zero-shot decoding: ``r2_zero_shot`` is a ridge
readout from the flattened neural latent to velocity, fitted on training subjects only (the same
readout for every arm); ``r2_decoder`` is the model's own behaviour decoder applied to the neural
latent (PNBA, the oracle, the control). Items for the paired intervals: the 100 behaviour instances
shared by the test subjects; an item's score is its trial's contribution to the R² (residual over the
fixed total sum of squares), averaged over the test subjects, so the item mean is the R².

Gates (the claim is judged only when both pass):
    oracle_decodes  oracle decoder R² on the test subjects >= 0.6, the level the claim asks of PNBA
                    (our planned "zero-shot R² >= 0.6"): zero-shot decoding is possible here at all,
                    with this encoder and this many steps
    floor_is_low    untrained encoder + ridge R² <= 0.3 (our planned "not reproduced" level): zero-shot
                    decoding is not trivial

Criteria (declared before any small-scale number of this design was seen; thresholds from the config):
    beats_contrastive  headline, paired over seeds and behaviour instances: pnba r2_zero_shot -
                       contrastive r2_zero_shot > 0, smallest effect 0.05 R² (declared; the paper
                       reports no gap we could retrieve)
    beats_nogen        the same against pnba_nogen
    zero_shot_decoding pnba decoder R² on test subjects >= 0.6 (planned level)
    preserved_gap      pnba Cohen's d (paired vs unpaired Pearson R, test-subject pairs) >= 1 (planned)
    preserved_significant  one-sided Mann-Whitney log10 p <= -6 (weakest pair, worst seed; planned)
    control_worse      pnba decoder R² - pnba_control decoder R² > 0, paired t over seeds (the control's
                       test trials differ), smallest effect 0.1 R² (declared). The earlier
                       ``control R² < 0.75 x pnba R²`` was ill-posed for a negative R².

Deviations (ours): simulated data only (no monkey/mouse recordings offline); 20 bins and 40-100 neurons
per subject at small scale, 100 trials per training session; small 1-D conv encoders and an attention
set-pooling projector instead of the official conv/max-pool over the neuron axis (which depends on
neuron order); 1200 AdamW steps instead of 400 epochs on 8 GPUs. The official summed distance is used
in the matching loss.

History. The first design (isotropic readouts ``c_n ~ N(0, I/8)``, 300 steps, lr sweep {1e-3, 3e-3})
was "not reproduced" at small (2026-12-03): every latent had collapsed and every decoder R² was about
0. Two causes, neither in the objective (a test pins it to the official code): with isotropic
readouts a trial of an unseen subject reveals its latent only up to an unknown rotation, so zero-shot
decoding was capped for every objective (the oracle regressed directly on velocity reached R² 0.22 at
300 steps in a one-seed pilot, against 0.65 with cell-type readouts); and 300 steps left PNBA in the
collapse its objective starts in (one-seed pilot with cell-type readouts at 1200 steps: PNBA ridge
R² 0.70, decoder 0.50; oracle decoder 0.75). ``readout="isotropic"`` keeps the earlier simulator.

Outcome of this design at small (3 seeds, 2026-12-05, before the coordinator's timed run): not
reproduced, resolved. Both gates pass (oracle decoder R² 0.84; untrained floor 0.01). Headline fails:
PNBA's zero-shot ridge R² 0.811 against the contrastive model's 0.812, paired difference -0.0004 with
95 % CI [-0.021, +0.027], which excludes the smallest effect 0.05. Every supporting criterion holds:
PNBA beats PNBA-nogen (whose latents collapse, R² 0.00; CI [+0.69, +0.92]), decoder R² 0.67 >= 0.6,
Cohen's d 1.07 >= 1, Mann-Whitney log10 p <= -24, and the negative control decodes at R² -0.03
(difference CI [+0.22, +1.19]). One seed cost about 100 s of CPU time (single thread) before round 6.

Speed (round 6, issue 45 item 1; no change to the design, the budget or any criterion): the model's
fast paths (see ``model.py``: the projector's temporal conv as one matmul and its pooling folded into
the key map, kernel-1 convolutions as matmuls, each decoder run once on both posterior samples,
fused AdamW) compute the same maps up to float round-off; after 100 training steps the loss agrees
with the earlier code to 2e-7 relative and the test latents to 5e-7. Steps are about 1.4x (PNBA
objective) to 1.6x (contrastive) faster, measured side by side on the shared machine.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.validate import check_fields

from .data import MultiSubjectData, Recording, SyntheticPopulationConfig, make_multisubject_reaching
from .evaluation import (
    TrainConfig,
    effective_rank,
    encode_recording,
    pca_cca_latents,
    preservation_stats,
    train_pnba,
    velocity_r2,
    velocity_r2_items,
)
from .model import PNBA, PNBAConfig

#: arms trained on the shared-dynamics data with the same steps and learning-rate sweep
LEARNED = ("pnba", "pnba_nogen", "contrastive", "oracle")
BASELINES = ("contrastive", "pnba_nogen", "pnba_control")
REFERENCES = ("oracle", "untrained", "cca")
ARMS = ("pnba", *BASELINES, *REFERENCES)
OBJECTIVE = {"pnba": "pnba", "pnba_nogen": "nogen", "contrastive": "contrastive", "oracle": "supervised"}
#: smallest effect of interest on zero-shot velocity R² between two alignment objectives
R2_EFFECT = 0.05
R2_EFFECT_SOURCE = (
    "declared (the paper reports no R² gap we could retrieve): 0.05 of explained velocity variance, the "
    "smallest zero-shot gain we would call better"
)
CONTROL_EFFECT = 0.1
CONTROL_EFFECT_SOURCE = (
    "declared: a negative control that loses less than 0.1 of explained variance would not show that the "
    "decoding rests on shared structure"
)


@dataclass(frozen=True)
class PNBACheckConfig:
    """Data, model sizes, training, the shared learning-rate sweep and the criteria thresholds.

    ``model``'s ``n_recordings``, ``max_neurons`` and ``T`` are placeholders set from the data.
    """

    data: SyntheticPopulationConfig = SyntheticPopulationConfig(
        trials_per_session=100, T=20, neurons=(40, 100)
    )
    model: PNBAConfig = PNBAConfig(n_recordings=1, max_neurons=1, T=1, hidden=32, channels=4, n_virtual=8)
    train: TrainConfig = TrainConfig(steps=1200, batch_size=32, warmup_steps=60)
    lrs: tuple[float, ...] = (3e-3,)
    ridge_alpha: float = 1.0
    cca_components: int = 8
    run_control: bool = True
    min_cohens_d: float = 1.0
    max_mw_log10p: float = -6.0
    min_r2: float = 0.6
    max_floor_r2: float = 0.3

    def __post_init__(self) -> None:
        if not self.lrs or any(not (isinstance(v, float) and v > 0) for v in self.lrs):
            raise ValueError(
                f"PNBACheckConfig.lrs must be a non-empty tuple of positive floats, got {self.lrs}"
            )
        check_fields(self, positive=("ridge_alpha", "min_cohens_d"))
        check_fields(self, positive_int=("cca_components",))
        for name in ("min_r2", "max_floor_r2"):
            value = getattr(self, name)
            if not (isinstance(value, float) and value < 1.0):
                raise ValueError(f"PNBACheckConfig.{name} must be a float below 1 (an R²), got {value!r}")

    def model_config(self, data: MultiSubjectData, objective: str) -> PNBAConfig:
        return dataclasses.replace(
            self.model,
            n_recordings=len(data.train),
            max_neurons=max(r.n_neurons for r in data.train),
            T=data.config.T,
            objective=objective,  # type: ignore[arg-type]
        )


def _criteria(cfg: PNBACheckConfig) -> tuple[Criterion, ...]:
    return (
        Criterion(
            "beats_contrastive",
            arm="pnba",
            metric="r2_zero_shot",
            op=">",
            other_arm="contrastive",
            smallest_effect=R2_EFFECT,
            effect_source=R2_EFFECT_SOURCE,
            description=(
                "zero-shot ridge readout R² on unseen subjects above the deterministic contrastive "
                "model's, paired over seeds and behaviour instances"
            ),
        ),
        Criterion(
            "beats_nogen",
            arm="pnba",
            metric="r2_zero_shot",
            op=">",
            other_arm="pnba_nogen",
            smallest_effect=R2_EFFECT,
            effect_source=R2_EFFECT_SOURCE,
            description="zero-shot ridge readout R² above PNBA without the generative constraints (paired)",
        ),
        Criterion(
            "zero_shot_decoding",
            arm="pnba",
            metric="r2_decoder",
            op=">=",
            threshold=cfg.min_r2,
            description="PNBA's own behaviour decoder on unseen subjects' neural latents (no alignment)",
        ),
        Criterion(
            "preserved_gap",
            arm="pnba",
            metric="cohens_d",
            op=">=",
            threshold=cfg.min_cohens_d,
            description="test-subject pairs: paired trials' latents correlate more than unpaired (Cohen's d)",
        ),
        Criterion(
            "preserved_significant",
            arm="pnba",
            metric="mw_log10p",
            op="<=",
            threshold=cfg.max_mw_log10p,
            reduce="max",
            description="one-sided Mann-Whitney p of paired > unpaired R, weakest pair, worst seed",
        ),
        Criterion(
            "control_worse",
            arm="pnba",
            metric="r2_decoder",
            op=">",
            other_arm="pnba_control",
            smallest_effect=CONTROL_EFFECT,
            effect_source=CONTROL_EFFECT_SOURCE,
            description=(
                "PNBA's zero-shot decoder R² minus the same model's on data with subject-specific latent "
                "dynamics (negative control), paired over seeds: a difference, never a ratio of R²s"
            ),
        ),
        Criterion(
            "tiny_learns",
            arm="pnba",
            metric="loss_ratio",
            op="<",
            threshold=1.0,
            scales=("tiny",),
            description="training reduces the PNBA loss",
        ),
        Criterion(
            "tiny_order_invariant",
            arm="pnba",
            metric="permutation_error",
            op="<",
            threshold=1e-4,
            scales=("tiny",),
            description="shuffling a test subject's neurons leaves its latents unchanged",
        ),
    )


def _gates(cfg: PNBACheckConfig) -> tuple[Criterion, ...]:
    return (
        Criterion(
            "oracle_decodes",
            arm="oracle",
            metric="r2_decoder",
            op=">=",
            threshold=cfg.min_r2,
            description=(
                "the same neural encoder and decoder regressed directly on velocity (same steps and lr "
                "sweep) decode the unseen subjects zero-shot at the level the claim asks of PNBA: the "
                "simulator and the budget allow zero-shot decoding at all"
            ),
        ),
        Criterion(
            "floor_is_low",
            arm="untrained",
            metric="r2_zero_shot",
            op="<=",
            threshold=cfg.max_floor_r2,
            description=(
                "an untrained encoder with the same ridge readout stays at or below our planned "
                "'not reproduced' level (R² 0.3): zero-shot decoding is not trivial here"
            ),
        ),
    )


CLAIM = Claim(
    statement=(
        "A neural encoder trained by probabilistic neural-behavioural alignment (with generative "
        "constraints) gives latents preserved across unseen subjects (paired >> unpaired trial "
        "similarity) that decode behaviour zero-shot, better than deterministic contrastive "
        "alignment and than PNBA without the generative constraints."
    ),
    source="Abstract; Sec. 4 (preserved representations in M1/PMd and V1, zero-shot decoding, ablations)",
    ours="pnba",
    baselines=BASELINES,
    references=REFERENCES,
    controls=("oracle", "cca"),
    criteria=_criteria(PNBACheckConfig()),
    gates=_gates(PNBACheckConfig()),
    headline="beats_contrastive",
    min_seeds=3,
    setup_notes=(
        "Simulated centre-out reaching: 10 training subjects x 2 sessions x 100 trials, 2 validation and 3 "
        "test subjects sharing 100 behaviour instances, 20 bins, 40-100 Poisson neurons per subject whose "
        "readouts are drawn from 8 cell types shared across subjects (prototype directions plus noise, "
        "type-specific rates 5-30 Hz) of shared 8-D latent dynamics. Learned arms (PNBA, PNBA-nogen, "
        "contrastive, and the oracle regressed on velocity): 1200 AdamW steps of 32 trials at lr 3e-3 "
        "each (one shared rate: equal, untuned budget). The paper uses real recordings (monkey M1/PMd, "
        "Sensorium 2023 mouse V1) and trains for 400 epochs on 8 GPUs."
    ),
    timed_metrics=("train_seconds",),
)


def _stack(latents: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate([a.reshape(len(a), -1) for a in latents])


def _ridge(cfg: PNBACheckConfig, train_lat: Sequence[np.ndarray], train: Sequence[Recording]) -> Any:
    from sklearn.linear_model import Ridge

    y = np.concatenate([r.velocity.reshape(len(r.velocity), -1) for r in train])
    return Ridge(alpha=cfg.ridge_alpha).fit(_stack(train_lat), y)


def _r2_items(preds: Sequence[np.ndarray], recs: Sequence[Recording]) -> np.ndarray:
    """Per behaviour instance (``pair_id``): the R² contribution averaged over the test subjects.

    Its mean equals the mean over subjects of each subject's R² (every subject has the same trials).
    """
    rows = []
    for pred, r in zip(preds, recs, strict=True):
        order = np.argsort(r.pair_id, kind="stable")
        rows.append(velocity_r2_items(pred, r.velocity)[order])
    return np.mean(rows, axis=0)


def _readout_items(ridge: Any, lat: Sequence[np.ndarray], recs: Sequence[Recording]) -> np.ndarray:
    preds = [
        ridge.predict(a.reshape(len(a), -1)).reshape(r.velocity.shape) for a, r in zip(lat, recs, strict=True)
    ]
    return _r2_items(preds, recs)


def _readout_r2(ridge: Any, lat: Sequence[np.ndarray], recs: Sequence[Recording]) -> float:
    return float(
        np.mean(
            [
                velocity_r2(ridge.predict(a.reshape(len(a), -1)).reshape(r.velocity.shape), r.velocity)
                for a, r in zip(lat, recs, strict=True)
            ]
        )
    )


def _pair_metrics(lat: Sequence[np.ndarray], recs: Sequence[Recording]) -> dict[str, float]:
    per_pair = [
        preservation_stats(lat[i], lat[j], recs[i].pair_id, recs[j].pair_id)
        for i, j in itertools.combinations(range(len(recs)), 2)
    ]
    out = {k: float(np.mean([p[k] for p in per_pair])) for k in per_pair[0]}
    out["mw_log10p"] = max(p["mw_log10p"] for p in per_pair)  # the weakest pair
    out["effective_rank"] = float(np.mean([effective_rank(a) for a in lat]))
    out["latent_trial_std"] = float(np.mean([a.std(0).mean() for a in lat]))
    return out


def _similarity(a: np.ndarray, b: np.ndarray, order: np.ndarray) -> list[list[float]]:
    za = a.reshape(len(a), -1)[order]
    zb = b.reshape(len(b), -1)[order]
    za = (za - za.mean(1, keepdims=True)) / (za.std(1, keepdims=True) + 1e-12)
    zb = (zb - zb.mean(1, keepdims=True)) / (zb.std(1, keepdims=True) + 1e-12)
    return np.round(za @ zb.T / za.shape[1], 3).tolist()


def _evaluate(
    cfg: PNBACheckConfig, model: PNBA, data: MultiSubjectData
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """Zero-shot metrics of a model on ``data``'s test subjects, and the per-instance R² items."""
    ridge = _ridge(cfg, [encode_recording(model, r)[0] for r in data.train], data.train)
    lat = [encode_recording(model, r)[0] for r in data.test]
    items = {"r2_zero_shot": _readout_items(ridge, lat, data.test)}
    out = {"r2_zero_shot": float(items["r2_zero_shot"].mean())}
    if model.has_decoder:
        with torch.no_grad():
            preds = [model.decode_behavior(torch.from_numpy(a)).numpy() for a in lat]
        out["r2_decoder"] = float(_r2_items(preds, data.test).mean())
    val_lat = [encode_recording(model, r)[0] for r in data.val]
    out["val_r2"] = _readout_r2(ridge, val_lat, data.val)
    out.update(_pair_metrics(lat, data.test))
    return out, items


class PNBACheck(ClaimCheck[PNBACheckConfig]):
    slug = "pnba"
    claim = CLAIM

    def claim_for(self, config: PNBACheckConfig) -> Claim:
        """Thresholds come from the config."""
        return dataclasses.replace(CLAIM, criteria=_criteria(config), gates=_gates(config))

    presets = {
        "tiny": PNBACheckConfig(
            data=SyntheticPopulationConfig(
                n_train_subjects=3,
                n_val_subjects=1,
                n_test_subjects=2,
                sessions=2,
                trials_per_session=20,
                heldout_trials=20,
                T=12,
                neurons=(12, 24),
            ),
            model=PNBAConfig(
                n_recordings=1, max_neurons=1, T=1, hidden=8, channels=2, n_virtual=4, match_distance="mean"
            ),
            train=TrainConfig(steps=12, batch_size=16, warmup_steps=2),
            lrs=(3e-3,),
            cca_components=4,
        ),
        "small": PNBACheckConfig(),
        "full": PNBACheckConfig(
            data=SyntheticPopulationConfig(),  # T = 40 bins of 25 ms, 60-160 neurons, 200 trials/session
            model=PNBAConfig(
                n_recordings=1, max_neurons=1, T=1, latent_dim=8, hidden=128, channels=16, n_virtual=64
            ),  # official sum distance
            train=TrainConfig(steps=50_000, batch_size=32, lr=1e-4, warmup_steps=600),
            lrs=(1e-4, 3e-4),
        ),
    }
    default_seeds = {"tiny": 1, "small": 3, "full": 3}

    def _train(
        self, config: PNBACheckConfig, data: MultiSubjectData, arm: str, lr: float, seed: int, ctx: RunContext
    ) -> tuple[PNBA, Any]:
        torch.manual_seed(seed)
        model = PNBA(config.model_config(data, OBJECTIVE.get(arm, "pnba")))

        def report(done: int, total: int) -> None:
            ctx.progress(f"train {arm} lr={lr:g}", done, total)

        hist = train_pnba(
            model, data.train, dataclasses.replace(config.train, lr=lr), seed=seed, progress=report
        )
        return model, hist

    def run_seed(self, config: PNBACheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        ctx.progress("simulate", 0, 2)
        data = make_multisubject_reaching(dataclasses.replace(config.data, seed=seed))
        metrics: dict[str, dict[str, float]] = {a: {} for a in ARMS}
        items: dict[str, dict[str, np.ndarray]] = {}
        series: dict[str, Any] = {}
        order = np.lexsort((data.test[0].pair_id, data.test[0].condition))
        series["conditions_sorted"] = data.test[0].condition[order].tolist()

        chosen: dict[str, float] = {}
        for arm in LEARNED:  # same steps and the same lr sweep, chosen on the validation subjects
            best: tuple[float, float, PNBA, Any, dict[str, float], dict[str, np.ndarray]] | None = None
            for lr in config.lrs:
                model, hist = self._train(config, data, arm, lr, seed, ctx)
                m, it = _evaluate(config, model, data)
                val = m["val_r2"] if np.isfinite(m["val_r2"]) else -np.inf
                if best is None or val > best[0]:
                    best = (val, lr, model, hist, m, it)
            assert best is not None
            _, lr, model, hist, m, it = best
            chosen[arm] = lr
            metrics[arm].update(m)
            items[arm] = it
            k = max(1, len(hist.train_loss) // 10)
            metrics[arm]["loss_ratio"] = float(np.mean(hist.train_loss[-k:]) / np.mean(hist.train_loss[:k]))
            metrics[arm]["lr"] = lr
            metrics[arm]["train_seconds"] = hist.seconds
            if arm == "pnba":
                x = torch.from_numpy(data.test[0].spikes[:16])
                perm = torch.randperm(x.shape[1], generator=torch.Generator().manual_seed(seed))
                with torch.no_grad():
                    err = (model.encode_neural(x)[0] - model.encode_neural(x[:, perm])[0]).abs().max()
                metrics[arm]["permutation_error"] = float(err)
            lat = [encode_recording(model, r)[0] for r in data.test[:2]]
            series[arm] = {"similarity": _similarity(lat[0], lat[1], order)}

        # floor: the same architecture, untrained, with the same ridge readout
        torch.manual_seed(seed)
        m, it = _evaluate(config, PNBA(config.model_config(data, "nogen")), data)
        metrics["untrained"].update(m)
        items["untrained"] = it

        # CCA: supervised manual alignment to the first training recording (uses test condition labels)
        ctx.progress("pca+cca", 0, 1)
        recs = list(data.train) + list(data.test)
        aligned = pca_cca_latents(recs, data.train[0], n_components=config.cca_components)
        tr, te = aligned[: len(data.train)], aligned[len(data.train) :]
        ridge = _ridge(config, tr, data.train)
        items["cca"] = {"r2_zero_shot": _readout_items(ridge, te, data.test)}
        metrics["cca"]["r2_zero_shot"] = float(items["cca"]["r2_zero_shot"].mean())
        metrics["cca"].update(_pair_metrics(te, data.test))
        series["cca"] = {"similarity": _similarity(te[0], te[1], order)}

        if config.run_control:  # PNBA, same budget and PNBA's chosen lr, on subject-specific dynamics
            ctrl = make_multisubject_reaching(
                dataclasses.replace(config.data, seed=seed, shared_dynamics=False)
            )
            model, hist = self._train(config, ctrl, "pnba_control", chosen["pnba"], seed, ctx)
            m, _ = _evaluate(config, model, ctrl)  # other test trials: paired over seeds only
            metrics["pnba_control"].update(m)
            metrics["pnba_control"]["train_seconds"] = hist.seconds
        series["chosen_lr"] = chosen
        return SeedOutcome(metrics={a: v for a, v in metrics.items() if v}, series=series, items=items)

    def make_figures(self, config: PNBACheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext) -> None:
        from icml25.core.plotting import arm_color, new_figure

        first = outcomes[0].series
        shown = [a for a in (*LEARNED, "cca") if a in first]
        fig, axes = new_figure(ncols=len(shown), width=2.8, height=2.8)
        conds = np.asarray(first["conditions_sorted"])
        edges = np.flatnonzero(np.diff(conds)) + 0.5
        for ax, arm in zip(np.atleast_1d(axes), shown, strict=True):
            sim = np.asarray(first[arm]["similarity"])
            im = ax.imshow(sim, cmap="RdBu_r", vmin=-1, vmax=1)
            for e in edges:
                ax.axhline(e, color="k", lw=0.3)
                ax.axvline(e, color="k", lw=0.3)
            ax.set(
                title=arm, xlabel="test subject B trial", ylabel="test subject A trial", xticks=[], yticks=[]
            )
            ax.grid(False)
        fig.colorbar(im, ax=list(np.atleast_1d(axes)), shrink=0.8, label="Pearson R")
        ctx.save_figure(
            fig,
            "cross_subject_similarity",
            "Pearson R between neural latents of two unseen test subjects (seed 0), trials sorted by reach "
            "direction (lines) and behaviour instance: the diagonal holds paired trials (same behaviour).",
        )
        fig, ax = new_figure(width=5.5)
        claim = self.claim_for(config)
        for i, arm in enumerate(ARMS):
            for j, metric in enumerate(("r2_zero_shot", "r2_decoder")):
                got = [o.metrics.get(arm, {}).get(metric) for o in outcomes]
                vals = [float(v) for v in got if v is not None]
                if not vals or (metric == "r2_decoder" and arm == "cca"):
                    continue
                x = i + (j - 0.5) * 0.35
                color = arm_color(arm, claim.ours, claim.baselines)
                ax.bar(x, np.mean(vals), width=0.33, color=color, alpha=1.0 if j == 0 else 0.5)
                ax.scatter([x] * len(vals), vals, color="k", s=8, zorder=3)
        ax.set_xticks(range(len(ARMS)), ARMS, rotation=20)
        ax.set(ylabel="velocity R² on unseen subjects", title="solid: ridge readout, light: own decoder")
        ax.axhline(0, color="k", lw=0.5)
        ctx.save_figure(
            fig,
            "decoding_r2",
            "Zero-shot velocity R² on the test subjects per arm (bars: mean, dots: seeds). Solid: ridge "
            "readout fitted on training subjects' latents; light: the model's own behaviour decoder "
            "(pnba, oracle, control). cca is aligned with the test subjects' condition labels (not "
            "zero-shot); untrained is the random-initialisation floor.",
        )


CHECK = PNBACheck()
