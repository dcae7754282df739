"""Claim check for *PISA Experiments: Exploring Physics Post-Training for Video Diffusion Models by
Watching Stuff Drop* (Li et al., ICML 2025; https://arxiv.org/abs/2503.09595).

The paper's claims, on a toy scale: a video generator pretrained on generic motion does not model free
fall; supervised fine-tuning on a few simulated drops (PSFT) sharply improves the PisaBench metrics,
also on held-out objects; object-reward optimisation (ORO) with a differentiable segmentation reward
back-propagated through the sampler improves its targeted metric (IoU) further; and (a limit the
paper reports) errors grow for drop heights outside the training range.

Arms (same simulated data, same frozen segmenter for evaluation and reward, same sampling noise):
    static    the first frame copied to every frame (control)
    base      TinyI2V pretrained on generic clips (still or constant-velocity objects, no gravity)
    sft       base + PSFT on free-fall drops
    sft_oro   sft + ORO with the reward ``reward`` ("seg": 1 - soft IoU; "traj": soft-centroid L1),
              gradients through all ``sample_steps`` Euler steps (ours)
    sft_cont  sft + more PSFT for as many steps as ORO takes (equal-budget control for ORO)

Equal effort: ORO and continued PSFT (the two arms that compete for the same extra budget) each pick
their learning rate from the same ``post_lrs`` by the lowest validation L2 (``best_on_validation``) on
validation drops never used for training or testing; PSFT picks from ``sft_lrs`` the same way (one
value at small: the paper also uses one fixed PSFT rate). All arms are evaluated with the same noise.

Budget pilot (before the recorded small run): a first 3-seed run with 100 PSFT steps (rates
{5e-4, 1e-3}) left PSFT far from converged (L2 0.067 vs base 0.099 on seen drops; 7 criteria failed);
a one-seed pilot on separate data showed validation L2 still falling to 400 steps (0.056 after 100,
0.022 after 200, 0.010 after 400 at lr 1e-3; lr 2e-3 no better), so PSFT was set to 400 steps at lr
1e-3 and pre-training to 250 steps. No threshold was changed.

Test domains: ``seen`` (training shapes and heights), ``unseen`` (held-out shapes and looks, training
heights) and ``heights`` (training shapes, drops higher than any training drop).

Reference: ``static``. Gates (issue 41): ``segmenter_works`` (the learned segmenter's IoU on the true
test videos >= ``min_segmenter_iou``), ``base_no_gravity`` (base's median relative g error >=
``min_base_g_err``: no leak), ``sft_beats_static`` (PSFT's L2 below copying frame 0).

Headline (issue 41, declared before its run): ``oro_beats_cont_iou_thr``, ORO(Seg) against the
equal-budget continued PSFT on the threshold segmenter's IoU (which learned nothing, so the reward's
segmenter cannot be pleased instead), paired per test video and seed (two-stage bootstrap), smallest
effect ``min_effect_iou`` = 0.01 (the paper's ORO(Seg) gains over PSFT: 0.003 real, 0.005 sim seen,
0.016 sim unseen). Supporting: ``oro_improves_iou`` and ``oro_beats_cont_iou`` (learned segmenter,
against PSFT and continued PSFT, paired, 0.01); the PSFT criteria against base (near-tautological: base
never saw gravity): L2 and Chamfer cut by >= ``min_cut``, IoU x ``iou_factor``, on seen and held-out
objects, each paired per test video and seed as ``sft - factor x base`` on every video's value divided
by base's mean over the seed's videos (``relative_to_reference``; the estimate is the ratio of the two
means minus the factor, the old per-seed ratio), smallest effect ``min_effect_rel`` = 0.1 of base's
mean; ``g_toward_true``, sft's relative g error below base's, paired per seen test video (median over
the videos both arms fit, as ``g_err`` is a median), smallest effect ``min_effect_g`` = 0.1;
``extrapolation_worse`` (L2 on higher drops >= ``extrap_factor`` x on seen drops; one arm, a threshold).

Changed after the recorded small runs (the last 20261205T165542026738Z-d6778e), because issue 41 item 2
asks for a paired interval with a smallest effect on every arm-vs-arm criterion: the six PSFT criteria
were point thresholds on per-seed ratios (sft / base; seen 0.059 / 0.028 / 3.32, unseen 0.089 / 0.065 /
3.35 against 0.6, 0.6 and 2) and ``g_toward_true`` a point threshold on base's median error minus
sft's (1.14 > 0). Their thresholds (``min_cut``, ``iou_factor``) are unchanged; ``min_effect_rel`` and
``min_effect_g`` were declared with this change, before any small run of it.

Criteria before issue 41 (declared before any small-scale number was seen): the same PSFT thresholds
as arm-vs-arm point comparisons, and ``oro_improves_iou`` (a point comparison) as the headline.

Outcome at small (3 seeds, recorded 2026-12-04, 354 s on a shared 2-core machine, load ~2.5): reproduced,
all 10 criteria hold. Seen drops, L2 / Chamfer / IoU: static 0.062 / 0.171 / 0.30, base 0.098 / 0.256 /
0.26, sft 0.0057 / 0.0069 / 0.85, sft_oro 0.0046 / 0.0057 / 0.88, sft_cont 0.0056 / 0.0068 / 0.86; held-out
objects: base 0.118 / 0.316 / 0.19, sft 0.010 / 0.020 / 0.64, sft_oro 0.0078 / 0.014 / 0.73. Fitted g:
base -2.3 m/s^2 (drifts, no fall), sft 9.87. ORO raises IoU over PSFT in every seed while the
equal-budget continued PSFT does not (0.856), and the gain holds under the learned-nothing threshold
segmenter (``iou_thr_seen`` 0.87 vs 0.82), so it is not only reward hacking of the reward's segmenter.
Higher-than-trained drops: sft L2 0.0125, 2.2x the in-range value. Both post-PSFT sweeps chose the top
rate 3e-5. At this scale PSFT already solves the toy task (L2 cut by ~94 %), far more than the paper's
~55 % real-video cut; what it does not test is stated in the README. A supplementary 3-seed run with
``reward=traj`` (soft-centroid L1 instead of soft IoU, lr 1e-5 chosen) left seen-drop L2 unchanged
(0.00565 vs 0.00567), lowered it on held-out objects (0.0087 vs 0.0100) and higher drops (0.0114 vs
0.0125), and did not raise seen IoU (0.851), so ``oro_improves_iou`` fails there, as that criterion
is written for the segmentation reward.

Deviations (ours): 2-D grayscale 16x16 clips of 10 frames instead of Kubric 256x256 x 32 frames, a
0.6M-parameter pixel-space UNet generator instead of Open-Sora v1.2 (1.1B), a tiny prompted segmenter
instead of SAM 2 (used both for the reward and for evaluation, as SAM 2 is in the paper), no text
conditioning, no CFG, no real videos, no flow or depth reward (the trajectory reward is an option).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion, paired_criterion
from icml25.core.tuning import best_on_validation
from icml25.core.validate import check_fields

from .bench import score_videos, static_copy
from .metrics import pisabench_metrics
from .model import (
    SegReward,
    StageConfig,
    TinyI2V,
    TinySeg,
    TrajectoryReward,
    as_tensor,
    generate,
    oro,
    train_flow,
    train_tinyseg,
)
from .sim import DOMAINS, DropClips, DropSimulator, SimConfig, generic_motion_clips

ARMS = ("static", "base", "sft", "sft_oro", "sft_cont")
TEST_DOMAINS = ("seen", "unseen", "heights")


@dataclass(frozen=True)
class PisaCheckConfig:
    """Simulator, data sizes, models, the training stages, sweeps and criteria thresholds."""

    sim: SimConfig = SimConfig()
    heights: tuple[float, float] = (0.3, 1.0)
    extrap_heights: tuple[float, float] = (1.05, 1.25)
    n_pretrain: int = 1000
    n_sft: int = 256
    n_seg_extra: int = 128
    n_val: int = 16
    n_test: int = 30
    model_channels: tuple[int, ...] = (32, 64, 64)
    seg_channels: tuple[int, ...] = (16, 32)
    seg: StageConfig = StageConfig(steps=200, batch_size=64, lr=3e-3, ema=0.0)
    pretrain: StageConfig = StageConfig(steps=250, batch_size=32, lr=1e-3)
    sft: StageConfig = StageConfig(steps=400, batch_size=32, lr=1e-3)
    oro: StageConfig = StageConfig(steps=25, batch_size=4, lr=3e-5)
    sft_lrs: tuple[float, ...] = (1e-3,)
    post_lrs: tuple[float, ...] = (1e-5, 3e-5)
    sample_steps: int = 8
    reward: str = "seg"
    min_base_g_err: float = 0.5
    min_cut: float = 0.4
    iou_factor: float = 2.0
    extrap_factor: float = 1.25
    min_effect_iou: float = 0.01
    min_effect_rel: float = 0.1
    min_effect_g: float = 0.1
    min_segmenter_iou: float = 0.9

    def __post_init__(self) -> None:
        check_fields(
            self, positive_int=("n_pretrain", "n_sft", "n_seg_extra", "n_val", "n_test", "sample_steps")
        )
        check_fields(
            self,
            positive=("iou_factor", "extrap_factor", "min_effect_iou", "min_effect_rel", "min_effect_g"),
            non_negative=("min_base_g_err", "min_segmenter_iou"),
        )
        if not 0 < self.min_cut < 1:
            raise ValueError(f"PisaCheckConfig.min_cut must lie in (0, 1), got {self.min_cut}")
        for name in ("sft_lrs", "post_lrs"):
            lrs = getattr(self, name)
            if not lrs or any(not (isinstance(v, float) and v > 0) for v in lrs):
                raise ValueError(
                    f"PisaCheckConfig.{name} must be a non-empty tuple of positive floats, got {lrs}"
                )
        if self.reward not in ("seg", "traj"):
            raise ValueError(f"PisaCheckConfig.reward must be 'seg' or 'traj', got {self.reward!r}")
        if self.n_sft < self.sft.batch_size:
            raise ValueError("PisaCheckConfig.n_sft must be >= sft.batch_size")


EFFECT_SOURCE = (
    "the paper's Table 1: ORO(Seg) raises IoU over PSFT by 0.003 (real), 0.005 (sim seen) and 0.016 (sim "
    "unseen); 0.01 IoU is about their middle (our IoUs are about 5x the paper's, so it is a smaller "
    "relative gain)"
)


REL_EFFECT_SOURCE = (
    "declared (issue 41, after the small runs): 0.1 of base's mean in the same seed and videos, i.e. ten "
    "percentage points of cut (or of IoU gain); it is the gap between the declared 40 % cut and the 30 % "
    "cut below which the implementation brief (shared/papers/pisa.md) calls PSFT not reproduced; IoU alike"
)
G_EFFECT_SOURCE = (
    "declared (issue 41, after the small runs): 0.1 relative g error (about 1 m/s^2), about what the fit "
    "itself misses on the true masks (median 0.07 on seen drops of the small simulator, 3 x 30 clips)"
)


def _paired_iou(name: str, arm: str, other: str, metric: str, cfg: PisaCheckConfig, what: str) -> Criterion:
    return Criterion(
        name,
        arm=arm,
        metric=metric,
        op=">",
        other_arm=other,
        smallest_effect=cfg.min_effect_iou,
        effect_source=EFFECT_SOURCE,
        description=what,
    )


def _criteria(cfg: PisaCheckConfig) -> tuple[Criterion, ...]:
    keep = 1.0 - cfg.min_cut
    out = [
        _paired_iou(
            "oro_beats_cont_iou_thr", "sft_oro", "sft_cont", "iou_thr_seen", cfg,
            "ORO(Seg) raises IoU over the equal-budget continued PSFT, scored by the threshold segmenter "
            "that learned nothing (so a generator cannot earn it by pleasing the reward's segmenter)",
        ),
        _paired_iou(
            "oro_improves_iou", "sft_oro", "sft", "iou_seen", cfg,
            "ORO(Seg) raises mask IoU (learned segmenter, as the paper scores with SAM 2) over PSFT",
        ),
        _paired_iou(
            "oro_beats_cont_iou", "sft_oro", "sft_cont", "iou_seen", cfg,
            "ORO(Seg) raises mask IoU (learned segmenter) over the equal-budget continued PSFT",
        ),
    ]  # fmt: skip
    # the PSFT criteria (issue 41 item 2): paired per test video and seed against base; the metric is
    # each video's value over base's mean on the same seed's videos, so ``sft - factor x base`` < 0
    # is exactly "sft's mean / base's mean < factor" and the smallest effect is a share of base's mean
    for dom in ("seen", "unseen"):
        for met, word in (("l2", "L2"), ("cd", "Chamfer")):
            out.append(
                paired_criterion(
                    f"sft_cuts_{met}_{dom}",
                    "sft",
                    f"{met}_rel_{dom}",
                    "<=",
                    "base",
                    cfg.min_effect_rel,
                    REL_EFFECT_SOURCE,
                    factor=keep,
                    description=f"PSFT lowers {word} by >= {cfg.min_cut:.0%} vs base ({dom} test drops; "
                    "per video over base's mean, paired per video and seed)",
                )
            )
        out.append(
            paired_criterion(
                f"sft_iou_{dom}",
                "sft",
                f"iou_rel_{dom}",
                ">=",
                "base",
                cfg.min_effect_rel,
                REL_EFFECT_SOURCE,
                factor=cfg.iou_factor,
                description=f"PSFT multiplies mask IoU by >= {cfg.iou_factor:g} vs base ({dom} test drops; "
                "per video over base's mean, paired per video and seed)",
            )
        )
    out += [
        paired_criterion(
            "g_toward_true",
            "sft",
            "g_err_pair_seen",
            "<",
            "base",
            cfg.min_effect_g,
            G_EFFECT_SOURCE,
            description="fitted gravity moves toward the true g after PSFT (relative g error per seen test "
            "video, median over the videos both arms fit, paired per video and seed)",
        ),
        Criterion(
            "extrapolation_worse",
            arm="sft",
            metric="extrap_ratio",
            op=">=",
            threshold=cfg.extrap_factor,
            description="drops higher than any training drop have clearly larger L2 (paper's limit; "
            "sft L2 on higher drops / on seen drops, per seed)",
        ),
        Criterion(
            "tiny_metric_identity",
            arm="static",
            metric="self_l2",
            op="<=",
            threshold=1e-12,
            scales=("tiny",),
            description="L2 of ground-truth masks against themselves is 0",
        ),
        Criterion(
            "tiny_reward_gradient",
            arm="sft_oro",
            metric="reward_grad_norm",
            op=">",
            threshold=0.0,
            scales=("tiny",),
            description="the reward's gradient reaches the generator through the sampler",
        ),
    ]
    return tuple(out)


def _gates(cfg: PisaCheckConfig) -> tuple[Criterion, ...]:
    return (
        Criterion(
            "segmenter_works",
            arm="static",
            metric="segmenter_iou_on_truth",
            op=">=",
            threshold=cfg.min_segmenter_iou,
            description="the learned segmenter (SAM 2's stand-in, reward and evaluation) tracks the object "
            "on the true test videos with mask IoU >= min_segmenter_iou",
        ),
        Criterion(
            "base_no_gravity",
            arm="base",
            metric="g_err_seen",
            op=">=",
            threshold=cfg.min_base_g_err,
            description="the pretrained generator does not already fall correctly (no gravity leak)",
        ),
        Criterion(
            "sft_beats_static",
            arm="sft",
            metric="l2_seen",
            op="<",
            other_arm="static",
            description="the post-trained generator's trajectories beat copying the first frame (L2, seen)",
        ),
    )


CLAIM = Claim(
    statement=(
        "An image-to-video generator pretrained on generic motion does not model free fall; supervised "
        "post-training on simulated drops sharply lowers PisaBench L2 / Chamfer and raises IoU (also on "
        "held-out objects), object-reward optimisation with a segmentation reward raises IoU further, and "
        "errors grow for drop heights outside the training range."
    ),
    source="Abstract; Sec. 4 (Table 1: PSFT and ORO rows; Sec. 5 limits: out-of-range heights)",
    ours="sft_oro",
    baselines=("sft", "sft_cont", "base"),
    references=("static",),
    criteria=_criteria(PisaCheckConfig()),
    gates=_gates(PisaCheckConfig()),
    headline="oro_beats_cont_iou_thr",
    min_seeds=3,
    setup_notes=(
        "2-D grayscale 16x16 drop clips of 10 frames at 16 fps (8 px/m, g = 9.81), one falling object "
        "(disk/square seen; triangle/bar held out), heights 0.3-1.0 m, extrapolation 1.05-1.25 m. TinyI2V: "
        "0.6M-parameter pixel-space rectified-flow UNet conditioned on the first frame, pretrained 250 steps "
        "on 1000 generic (still / constant-velocity) clips, PSFT 400 steps on 256 drops, ORO 25 steps of "
        "batch 4 through 8 Euler steps (no guidance; the reward skips frame 0, which is given); a tiny "
        "prompted segmenter stands in for SAM 2. The paper post-trains Open-Sora v1.2 (1.1B) on 5k Kubric "
        "videos at 256^2 x 32 frames and tests on 361 real videos."
    ),
    timed_metrics=("seconds",),
)


def _domain_clips(cfg: PisaCheckConfig, sim: DropSimulator, n: int, dom: str, seed: int) -> DropClips:
    if dom == "heights":
        d = DOMAINS["seen"].with_heights(*cfg.extrap_heights, name="heights")
    else:
        d = DOMAINS[dom].with_heights(*cfg.heights)
    return sim.sample(n, d, seed=seed)


def _progress(ctx: RunContext, task: str) -> Any:
    def report(done: int, total: int) -> None:
        ctx.progress(task, done, total)

    return report


def _median(rows: np.ndarray) -> float:
    return float(np.median(rows))


def relative_to_reference(values: Any, reference: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """Two arms' per-video scores on the videos where both are defined, each divided by the reference
    arm's mean over those videos; ``None`` when no video is defined for both or that mean is not
    positive.

    PisaBench averages a metric over videos (Sec. 3.1; nanmean); PSFT's claimed cut is a ratio of two
    such means (Table 1: Open-Sora vs + PSFT). With these items, the paired difference
    ``mean(a) - factor * mean(b)`` is ``mean_a / mean_b - factor`` in the seed, and its smallest
    effect of interest is a share of the reference's mean.

    Raises:
        ValueError: ``values`` and ``reference`` are not 1-D arrays of one length.
    """
    a = np.asarray(values, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(
            f"values and reference must be 1-D per-video arrays of one length, got {a.shape} and {b.shape}"
        )
    both = np.isfinite(a) & np.isfinite(b)
    if not both.any():
        return None
    scale = float(b[both].mean())
    if not (math.isfinite(scale) and scale > 0):
        return None
    return a[both] / scale, b[both] / scale


class PisaCheck(ClaimCheck[PisaCheckConfig]):
    slug = "pisa"
    claim = CLAIM
    #: the gravity criterion compares medians over videos, as the g_err metric is one
    item_statistics = {"g_err_pair_seen": _median}

    def claim_for(self, config: PisaCheckConfig) -> Claim:
        """Thresholds come from the config."""
        return dataclasses.replace(CLAIM, criteria=_criteria(config), gates=_gates(config))

    presets = {
        "tiny": PisaCheckConfig(
            sim=SimConfig(size=16, frames=8),
            n_pretrain=64,
            n_sft=32,
            n_seg_extra=16,
            n_val=4,
            n_test=4,
            model_channels=(8, 16),
            seg_channels=(8, 8),
            seg=StageConfig(steps=20, batch_size=32, lr=3e-3, ema=0.0),
            pretrain=StageConfig(steps=15, batch_size=8, lr=1e-3),
            sft=StageConfig(steps=10, batch_size=8, lr=1e-3),
            oro=StageConfig(steps=3, batch_size=2, lr=3e-5),
            sft_lrs=(1e-3,),
            post_lrs=(3e-5,),
            sample_steps=4,
        ),
        "small": PisaCheckConfig(),
        "full": PisaCheckConfig(
            sim=SimConfig(size=32, frames=16, px_per_m=16.0, floor_rows=4, obj_size=(2.5, 4.0)),
            n_pretrain=3000,
            n_sft=256,
            n_seg_extra=512,
            n_val=32,
            n_test=30,
            model_channels=(48, 96, 96),
            seg_channels=(32, 64),
            seg=StageConfig(steps=2000, batch_size=64, lr=1e-3, ema=0.0),
            pretrain=StageConfig(steps=5000, batch_size=32, lr=1e-3),
            sft=StageConfig(steps=1500, batch_size=32, lr=1e-4),
            oro=StageConfig(steps=100, batch_size=2, lr=1e-5),
            sft_lrs=(1e-4, 3e-4, 1e-3),
            post_lrs=(3e-6, 1e-5, 3e-5),
        ),
    }
    default_seeds = {"tiny": 1, "small": 3, "full": 3}

    def run_seed(self, config: PisaCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        cfg = config
        t0 = time.perf_counter()
        sim = DropSimulator(cfg.sim)
        T, H = cfg.sim.frames, cfg.sim.size
        base_seed = 1000 * seed
        ctx.progress("simulate clips", 0, 1)
        pre = generic_motion_clips(cfg.sim, cfg.n_pretrain, seed=base_seed + 1)
        sft_data = _domain_clips(cfg, sim, cfg.n_sft, "seen", base_seed + 2)
        val = _domain_clips(cfg, sim, cfg.n_val, "seen", base_seed + 3)
        tests = {
            d: _domain_clips(cfg, sim, cfg.n_test, d, base_seed + 10 + i) for i, d in enumerate(TEST_DOMAINS)
        }
        # the segmenter (SAM 2's stand-in) is trained on renders of every kind, never on the test clips
        seg_sets = [pre, sft_data] + [
            _domain_clips(cfg, sim, cfg.n_seg_extra, d, base_seed + 20 + i)
            for i, d in enumerate(("unseen", "heights"))
        ]

        metrics: dict[str, dict[str, float]] = {a: {} for a in ARMS}
        items: dict[str, dict[str, np.ndarray]] = {a: {} for a in ARMS}
        per_video: dict[str, dict[str, dict[str, Any]]] = {a: {} for a in ARMS}  # arm -> domain -> items
        series: dict[str, Any] = {"chosen_lr": {}, "traj": {}, "frames": {}}

        # 1. frozen segmenter
        torch.manual_seed(seed)
        seg = TinySeg(cfg.seg_channels)
        fr = np.concatenate([c.video.reshape(-1, H, H) for c in seg_sets])
        pr = np.concatenate([np.repeat(c.masks[:, :1], T, 1).reshape(-1, H, H) for c in seg_sets])
        tg = np.concatenate([c.masks.reshape(-1, H, H) for c in seg_sets])
        train_tinyseg(
            seg,
            as_tensor(fr),
            as_tensor(pr),
            as_tensor(tg),
            cfg.seg,
            seed=seed,
            progress=_progress(ctx, "train segmenter"),
        )
        seg_gt, _ = score_videos(seg, as_tensor(tests["seen"].video), tests["seen"], cfg.sim.g)
        series["segmenter_on_truth"] = seg_gt
        metrics["static"]["segmenter_iou_on_truth"] = seg_gt["iou"]

        def evaluate(arm: str, make: Any) -> None:
            for i, dom in enumerate(TEST_DOMAINS):
                clips = tests[dom]
                gen = torch.Generator().manual_seed(10_000 * (seed + 1) + i)  # same noise for every arm
                videos = make(clips, gen)
                m, s = score_videos(seg, videos, clips, cfg.sim.g, keep=4 if dom == "seen" else 0)
                for k, v in m.items():
                    metrics[arm][f"{k}_{dom}"] = v
                per_video[arm][dom] = s
                if dom == "seen":  # per test video, paired across arms (same clips, same noise)
                    items[arm]["iou_seen"] = np.nan_to_num(s["iou_items"], nan=0.0)
                    items[arm]["iou_thr_seen"] = np.nan_to_num(s["iou_thr_items"], nan=0.0)
                if dom == "seen":
                    series["traj"][arm] = s["pred_y"]
                    series["traj"]["truth"] = s["true_y"]
                    series["frames"][arm] = np.round(videos[0].clamp(0, 1).numpy(), 3).tolist()
                    series["frames"]["truth"] = np.round(clips.video[0], 3).tolist()

        def sampler(model: TinyI2V) -> Any:
            def make(clips: DropClips, gen: torch.Generator) -> torch.Tensor:
                with torch.no_grad():
                    return generate(
                        model, as_tensor(clips.video[:, 0]), steps=cfg.sample_steps, generator=gen
                    )

            return make

        def val_l2(model: TinyI2V) -> float:
            gen = torch.Generator().manual_seed(99_999 + seed)
            with torch.no_grad():
                v = generate(model, as_tensor(val.video[:, 0]), steps=cfg.sample_steps, generator=gen)
            return score_videos(seg, v, val, cfg.sim.g)[0]["l2"]

        # 2. static control
        evaluate("static", lambda clips, gen: static_copy(as_tensor(clips.video[:, 0]), T))
        gt0 = tests["seen"].masks[0]
        metrics["static"]["self_l2"] = pisabench_metrics(gt0, gt0, cfg.sim.fps, cfg.sim.fps)["l2"]

        # 3. pretrain the base generator on generic motion
        torch.manual_seed(seed)
        base = TinyI2V(T, cfg.model_channels)
        s = time.perf_counter()
        train_flow(
            base, as_tensor(pre.video), cfg.pretrain, seed=seed, progress=_progress(ctx, "pretrain generator")
        )
        metrics["base"]["seconds"] = time.perf_counter() - s
        evaluate("base", sampler(base))

        # 4. PSFT, learning rate from sft_lrs on validation L2
        sft_video = as_tensor(sft_data.video)
        runs: dict[float, tuple[TinyI2V, float]] = {}
        for lr in cfg.sft_lrs:
            model = copy.deepcopy(base)
            s = time.perf_counter()
            train_flow(
                model,
                sft_video,
                dataclasses.replace(cfg.sft, lr=lr),
                seed=seed,
                progress=_progress(ctx, f"PSFT lr={lr:g}"),
            )
            runs[lr] = (model, time.perf_counter() - s)
        lr = best_on_validation(runs, lambda r: val_l2(r[0]))
        sft, metrics["sft"]["seconds"] = runs[lr]
        series["chosen_lr"]["sft"] = lr
        evaluate("sft", sampler(sft))

        # 5. ORO and the equal-budget continued PSFT, learning rates from post_lrs
        masks = as_tensor(sft_data.masks)
        reward = SegReward(seg) if cfg.reward == "seg" else TrajectoryReward(seg)
        probe = copy.deepcopy(sft)
        probe.zero_grad()
        out = generate(
            probe,
            sft_video[:2, 0],
            steps=cfg.sample_steps,
            generator=torch.Generator().manual_seed(seed),
            differentiable=True,
        )
        reward(out, masks[:2]).backward()
        grad_norm = float(sum(p.grad.norm() ** 2 for p in probe.parameters() if p.grad is not None) ** 0.5)
        chosen: dict[str, TinyI2V] = {}
        for arm in ("sft_oro", "sft_cont"):
            runs = {}
            for lr in cfg.post_lrs:
                model = copy.deepcopy(sft)
                s = time.perf_counter()
                if arm == "sft_oro":
                    oro(
                        model,
                        sft_video,
                        masks,
                        reward,
                        dataclasses.replace(cfg.oro, lr=lr),
                        sample_steps=cfg.sample_steps,
                        seed=seed,
                        progress=_progress(ctx, f"ORO lr={lr:g}"),
                    )
                else:
                    more = dataclasses.replace(cfg.sft, steps=cfg.oro.steps, lr=lr)
                    train_flow(
                        model, sft_video, more, seed=seed + 7, progress=_progress(ctx, f"more PSFT lr={lr:g}")
                    )
                runs[lr] = (model, time.perf_counter() - s)
            lr = best_on_validation(runs, lambda r: val_l2(r[0]))
            model, metrics[arm]["seconds"] = runs[lr]
            chosen[arm] = model
            series["chosen_lr"][arm] = lr
            evaluate(arm, sampler(model))
        metrics["sft_oro"]["reward_grad_norm"] = grad_norm
        # the reward itself on the validation drops (what ORO optimises), same noise for both
        for arm, model in (("sft", sft), ("sft_oro", chosen["sft_oro"])):
            with torch.no_grad():
                v = generate(
                    model,
                    as_tensor(val.video[:, 0]),
                    steps=cfg.sample_steps,
                    generator=torch.Generator().manual_seed(5),
                )
                metrics[arm]["reward_loss_val"] = float(reward(v, as_tensor(val.masks)))
        # the PSFT criteria's items: sft and base paired per test video (same clips, same noise)
        for dom in ("seen", "unseen"):
            for met in ("l2", "cd", "iou"):
                pair = relative_to_reference(
                    per_video["sft"][dom][f"{met}_items"], per_video["base"][dom][f"{met}_items"]
                )
                if pair is not None:
                    items["sft"][f"{met}_rel_{dom}"], items["base"][f"{met}_rel_{dom}"] = pair
        g_sft, g_base = per_video["sft"]["seen"]["g_err_items"], per_video["base"]["seen"]["g_err_items"]
        both = np.isfinite(g_sft) & np.isfinite(g_base)
        if both.any():
            items["sft"]["g_err_pair_seen"], items["base"]["g_err_pair_seen"] = g_sft[both], g_base[both]
        metrics["sft"]["extrap_ratio"] = metrics["sft"]["l2_heights"] / metrics["sft"]["l2_seen"]
        series["seconds"] = time.perf_counter() - t0
        return SeedOutcome(metrics=metrics, series=series, items=items)

    def make_figures(self, config: PisaCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext) -> None:
        from icml25.core.plotting import arm_color, new_figure

        first = outcomes[0].series
        claim = self.claim_for(config)
        traj = first["traj"]
        n = len(traj["truth"])
        fig, axes = new_figure(ncols=max(n, 1), width=2.6, height=2.6)
        t = np.arange(config.sim.frames)
        for j, ax in enumerate(np.atleast_1d(axes).ravel()[:n]):
            ax.plot(t, traj["truth"][j], "k-", lw=2, label="truth")
            for arm in ARMS:
                y = np.asarray(traj[arm][j], dtype=float)
                ax.plot(t, y, marker=".", lw=1, color=arm_color(arm, claim.ours, claim.baselines), label=arm)
            ax.invert_yaxis()
            ax.set(xlabel="frame", ylabel="centroid row (px)" if j == 0 else "", title=f"test drop {j}")
        np.atleast_1d(axes).ravel()[0].legend(fontsize=6)
        ctx.save_figure(
            fig,
            "trajectories",
            "Centroid row of the falling object (seed 0, 'seen' test drops) from the segmented generated "
            "videos of each arm against the simulator's ground truth (down is down).",
        )
        rows = ["truth", *ARMS]
        fr = {k: np.asarray(v) for k, v in first["frames"].items()}
        T, H = config.sim.frames, config.sim.size
        pad = 1
        mosaic = np.ones((len(rows) * (H + pad), T * (H + pad)))
        for i, arm in enumerate(rows):
            for k in range(T):
                mosaic[i * (H + pad) : i * (H + pad) + H, k * (H + pad) : k * (H + pad) + H] = fr[arm][k]
        fig, ax = new_figure(width=0.55 * T + 1, height=0.55 * len(rows))
        ax = np.asarray(ax).ravel()[0]
        ax.imshow(mosaic, cmap="gray", vmin=0, vmax=1, interpolation="nearest")
        ax.set_yticks([i * (H + pad) + H / 2 for i in range(len(rows))], rows, fontsize=7)
        ax.set_xticks([k * (H + pad) + H / 2 for k in range(T)], [str(k) for k in range(T)], fontsize=6)
        ax.set_xlabel("frame")
        ax.grid(False)
        ctx.save_figure(
            fig,
            "sample_frames",
            "One 'seen' test drop (seed 0): the simulated truth and every arm's generated frames from the "
            "same first frame and noise.",
        )


CHECK = PisaCheck()
