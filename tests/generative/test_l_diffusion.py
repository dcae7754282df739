"""Tests for L-Diffusion (ICML 2025): SynthPath, pixel InfoNCE, Dice loss, metrics, pipeline, check."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.generative.l_diffusion import (
    TISSUE_CLASSES,
    LDiffusion,
    LDiffusionConfig,
    SynthPathConfig,
    dice_loss,
    make_synthpath,
    per_image_scores,
    pixel_infonce,
    predict_labels,
    seg_metrics,
    to_gray,
    train_segmenter,
)
from icml25.generative.l_diffusion.check import CHECK
from icml25.nn.diffusion import SmallUNet

SMALL = SynthPathConfig(size=16, n_unlabeled=4, n_train=6, n_val=2, n_test=3, n_regions=4, seed=3)


def test_synthpath_deterministic_shapes_and_classes() -> None:
    a, b = make_synthpath(SMALL), make_synthpath(SMALL)
    np.testing.assert_array_equal(a.train_x, b.train_x)
    np.testing.assert_array_equal(a.test_y, b.test_y)
    assert a.train_x.shape == (6, 3, 16, 16) and a.train_x.dtype == np.float32
    assert a.train_y.shape == (6, 16, 16) and a.train_y.dtype == np.int64
    assert a.unlabeled.shape == (4, 3, 16, 16)
    assert a.train_x.min() >= -1 and a.train_x.max() <= 1
    assert a.n_classes == len(TISSUE_CLASSES)
    c = make_synthpath(dataclasses.replace(SMALL, seed=4))
    assert not np.array_equal(a.train_x, c.train_x)


def test_synthpath_long_tail_and_class_appearance() -> None:
    d = make_synthpath(SynthPathConfig(size=24, n_unlabeled=0, n_train=40, n_val=1, n_test=1, seed=0))
    share = np.bincount(d.train_y.ravel(), minlength=6) / d.train_y.size
    assert share[0] > share[2] > share[5]  # background most common, vessel rare
    gray = to_gray(torch.from_numpy(d.train_x)).squeeze(1).numpy()
    assert gray[d.train_y == 0].mean() > gray[d.train_y == 3].mean()  # background brighter than lymphocytes


def test_pixel_infonce_hand_computed_and_decreases() -> None:
    # 4 pixels, classes [0, 0, 1, 1]; one anchor per class, one negative each
    f = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    y = torch.tensor([0, 0, 1, 1])
    loss = pixel_infonce(
        f, y, tau=0.5, anchors_per_class=1, n_neg=1, generator=torch.Generator().manual_seed(0)
    )
    # every anchor/positive pair has dot 1, every anchor/negative dot 0
    want = -math.log(math.exp(2.0) / (math.exp(2.0) + 1.0))
    assert float(loss) == pytest.approx(want, rel=1e-6)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(40, 3, requires_grad=True)
    lab = torch.arange(40) % 3
    opt = torch.optim.SGD([x], lr=0.1)
    first = None
    for _ in range(30):
        loss = pixel_infonce(x, lab, tau=0.5, anchors_per_class=8, n_neg=16, generator=g)
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < first


def test_dice_loss_perfect_and_worst() -> None:
    y = torch.tensor([[[0, 1], [2, 1]]])
    perfect = 50 * torch.nn.functional.one_hot(y, 3).permute(0, 3, 1, 2).float()
    assert float(dice_loss(perfect, y, eps=1e-6)) < 1e-4
    assert float(dice_loss(-perfect, y, eps=1e-6)) > 0.9


def test_seg_metrics_hand_computed_and_absent_conventions() -> None:
    gt = np.array([[[0, 1], [1, 2]]])
    pred = np.array([[[0, 1], [2, 2]]])
    m = seg_metrics(pred, gt, 4, tail=(3,))
    # class 1: tp 1, fn 1 -> dice 2/3, iou 1/2, pa 1/2; class 2: tp 1, fp 1 -> dice 2/3, iou 1/2, pa 1
    # class 3 absent everywhere: dice 1, pa 1, iou skipped
    assert m["dice"] == pytest.approx((2 / 3 + 2 / 3 + 1) / 3)
    assert m["miou"] == pytest.approx(0.5)
    assert m["mpa"] == pytest.approx((0.5 + 1 + 1) / 3)
    assert m["fwiou"] == pytest.approx(0.5 * 0.5 + 0.25 * 0.5)
    assert m["tail_dice"] == 1.0
    assert m["dice_c1"] == pytest.approx(2 / 3)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_seg_metrics_perfect_prediction_is_one(seed) -> None:
    gt = np.random.default_rng(seed).integers(0, 4, (2, 5, 5))
    m = seg_metrics(gt, gt, 4)
    assert m["dice"] == 1.0 and m["mpa"] == 1.0
    assert m["miou"] == 1.0
    assert all(0.0 <= m[k] <= 1.0 for k in ("dice", "mpa", "fwiou"))


def test_pipeline_shapes_gradients_and_noise_families() -> None:
    d = make_synthpath(SMALL)
    x, y = torch.from_numpy(d.train_x), torch.from_numpy(d.train_y)
    for fam in ("laplace", "gaussian"):
        torch.manual_seed(0)
        ld = LDiffusion(SmallUNet(3, 3, (8, 8)), LDiffusionConfig(noise=fam, timesteps=(500, 200, 50)))
        losses = ld.pretrain(x, steps=3, batch_size=4)
        assert len(losses) == 3 and all(np.isfinite(losses))
        before = ld.pixel_features(x)
        assert before.shape == (6, 3, 16, 16)
        torch.testing.assert_close(before, ld.pixel_features(x))  # fixed noise: deterministic features
        ld.contrastive_finetune(x, y, steps=2, batch_size=2)
        assert not torch.allclose(before, ld.pixel_features(x))
    rgb = LDiffusion(SmallUNet(3, 3, (8, 8)), LDiffusionConfig(feature="rgb", timesteps=(500, 200)))
    assert rgb.n_features == 6 and rgb.pixel_features(x[:1]).shape == (1, 6, 16, 16)
    seg = SmallUNet(3, 6, (8, 8), time=False)
    train_segmenter(seg, x, y, steps=2, lr=1e-3, batch_size=4)
    assert predict_labels(seg, x).shape == (6, 16, 16)


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="noise"):
        LDiffusionConfig(noise="cauchy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timesteps"):
        LDiffusionConfig(timesteps=(1000,))
    with pytest.raises(ValueError, match="tau"):
        LDiffusionConfig(tau=0.0)
    with pytest.raises(ValueError, match="size"):
        SynthPathConfig(size=0)
    with pytest.raises(ValueError, match="two classes"):
        pixel_infonce(torch.zeros(3, 2), torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="NaN"):
        pixel_infonce(torch.full((3, 2), float("nan")), torch.tensor([0, 1, 1]))
    with pytest.raises(TypeError, match="integer"):
        pixel_infonce(torch.zeros(3, 2), torch.tensor([0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="pred and gt"):
        seg_metrics(np.zeros((1, 2, 2)), np.zeros((1, 3, 3)), 3)
    with pytest.raises(ValueError, match="images"):
        LDiffusion(SmallUNet(3, 3, (8, 8))).pixel_features(torch.zeros(1, 1, 8, 8))
    with pytest.raises(ValueError, match="steps"):
        train_segmenter(
            SmallUNet(3, 2, (8,), time=False), torch.zeros(1, 3, 8, 8), torch.zeros(1, 8, 8), steps=0, lr=1e-3
        )


def test_tiny_check_runs_and_smoke_criteria_hold(tmp_path) -> None:
    from icml25.core.results import ResultStore

    result = CHECK.run("tiny", store=ResultStore(tmp_path))
    assert all(c.passed for c in result.criteria)


def test_presets_and_full_scale_one_step() -> None:
    full = CHECK.config("full")
    assert full.data.size == 64 and len(full.ld.timesteps) == 10 and full.ld.tau == 0.07
    claim = CHECK.claim_for(CHECK.config("small"))
    assert {c.name for c in claim.criteria_at("small")} >= {
        "beats_unet",
        "laplace_beats_gaussian",
        "contrastive_helps",
    }
    # the full configuration's networks construct and take one step at its tile size
    torch.manual_seed(0)
    x = torch.rand(2, 3, full.data.size, full.data.size) * 2 - 1
    y = torch.randint(0, 6, (2, full.data.size, full.data.size))
    ld = LDiffusion(SmallUNet(3, 3, full.denoiser_channels), full.ld)
    ld.pretrain(x, steps=1, batch_size=2)
    ld.contrastive_finetune(x, y, steps=1, batch_size=1)
    seg = SmallUNet(3 + ld.n_features, 6, full.seg_channels, time=False)
    train_segmenter(seg, torch.cat([ld.pixel_features(x), x], 1), y, steps=1, lr=1e-3, batch_size=2)


# --- issue 41: input parity, a headline that does not reward absent classes, official InfoNCE sampling


class _Ctx:
    def progress(self, *args: object, **kwargs: object) -> None:
        pass


def test_headline_metric_does_not_reward_absent_classes() -> None:
    """A constant background prediction scores ~0.5 per-image Dice (absent classes score 1, the official
    convention) but nothing on the headline's metric (per-image mIoU, absent classes skipped)."""
    d = make_synthpath(SynthPathConfig(size=24, n_unlabeled=0, n_train=1, n_val=1, n_test=40, seed=1))
    const = np.zeros_like(d.test_y)
    m = seg_metrics(const, d.test_y, d.n_classes, tail=(4, 5))
    assert m["dice"] > 0.3  # the official Dice rewards the classes a tile lacks
    head = CHECK.claim_for(CHECK.config("small")).headline_criterion()
    assert m[head.metric] < 0.05
    assert m["pooled_dice"] < 0.05 and m["tail_dice"] == 0.0
    per = per_image_scores(const, d.test_y, d.n_classes)
    assert per["miou"].shape == (40,) and per["miou"].mean() == pytest.approx(m["miou"])


def test_protocol_arms_references_gates_and_paired_headline() -> None:
    claim = CHECK.claim_for(CHECK.config("small"))
    head = claim.headline_criterion()
    assert (head.arm, head.other_arm, head.metric) == ("ldiffusion", "unet_gray", "miou")
    assert head.smallest_effect and head.smallest_effect > 0
    assert claim.references == ("constant",)
    assert {g.name for g in claim.gates_at("small")} == {"baseline_learns", "pretrain_learns"}
    for c in claim.criteria_at("small"):
        assert c.other_arm is None or c.smallest_effect is not None, c.name
    assert "unet_gray" in claim.baselines and "constant" not in claim.baselines


def test_unet_gray_arm_sees_the_grayscale_image(monkeypatch) -> None:
    """The supervised baseline with the method's kind of input: a one-channel grayscale image."""
    import icml25.generative.l_diffusion.check as chk

    seen: list[int] = []
    real = chk.train_segmenter

    def spy(net, inputs, labels, **kw):  # type: ignore[no-untyped-def]
        seen.append(int(inputs.shape[1]))
        return real(net, inputs, labels, **kw)

    monkeypatch.setattr(chk, "train_segmenter", spy)
    cfg = CHECK.config("tiny")
    out = CHECK.run_seed(cfg, 0, _Ctx())  # type: ignore[arg-type]
    n_feat = len(cfg.ld.timesteps)
    # smallest fraction: ldiffusion, gaussian, no_contrastive (features), unet_gray (1), unet (3);
    # all labels: ldiffusion only (label_efficient)
    assert seen == [n_feat, n_feat, n_feat, 1, 3, n_feat]
    assert set(out.metrics) == {"ldiffusion", "gaussian", "no_contrastive", "unet_gray", "unet", "constant"}
    for arm in out.metrics:
        assert out.items[arm]["miou"].shape == (cfg.data.n_test,)
        assert out.metrics[arm]["miou"] == pytest.approx(float(out.items[arm]["miou"].mean()))
    assert out.metrics["constant"]["val_miou"] == pytest.approx(
        out.metrics["unet_gray"]["val_miou"] - out.metrics["unet_gray"]["val_miou_over_constant"]
    )


def test_infonce_defaults_are_the_official_sampling() -> None:
    cfg = LDiffusionConfig()
    assert cfg.anchor_fraction == 0.01 and cfg.min_anchors == 1 and cfg.n_neg == 1024
    assert cfg.negatives_with_replacement is False and cfg.per_image is True and cfg.official_skip
    with pytest.raises(ValueError, match="anchor_fraction"):
        LDiffusionConfig(anchor_fraction=0.0)


def test_pixel_infonce_distinct_negatives_hand_computed() -> None:
    """Without replacement and n_neg >= the other-class pixels, each anchor sees every negative once."""
    f = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.5, 1.0], [-0.5, 2.0]])
    y = torch.tensor([0, 0, 1, 1])
    tau = 0.5

    def nll(pos: float, negs: list[float]) -> float:
        z = [pos, *negs]
        return -(pos / tau - math.log(sum(math.exp(v / tau) for v in z)))

    want = np.mean(
        [nll(1.0, [0.5, -0.5]), nll(1.0, [0.5, -0.5]), nll(1.75, [0.5, 0.5]), nll(1.75, [-0.5, -0.5])]
    )
    for s in range(5):
        got = pixel_infonce(
            f,
            y,
            tau=tau,
            n_neg=1024,
            anchor_fraction=1.0,
            negatives_with_replacement=False,
            generator=torch.Generator().manual_seed(s),
        )
        assert float(got) == pytest.approx(want, rel=1e-6)


def test_pixel_infonce_anchor_fraction_and_unequal_negative_counts(monkeypatch) -> None:
    import icml25.generative.l_diffusion.model as mdl

    shapes: list[tuple[int, ...]] = []
    real = mdl.F.cross_entropy

    def spy(logits, target, *a, **kw):  # type: ignore[no-untyped-def]
        shapes.append(tuple(logits.shape))
        return real(logits, target, *a, **kw)

    monkeypatch.setattr(mdl.F, "cross_entropy", spy)
    y = torch.cat([torch.zeros(1000, dtype=torch.long), torch.ones(350, dtype=torch.long)])
    f = torch.randn(1350, 3)
    loss = pixel_infonce(f, y, n_neg=1024, anchor_fraction=0.01, negatives_with_replacement=False)
    assert torch.isfinite(loss)
    # int(1 % of 1000) = 10 anchors, int(3.5) = 3 (official: rounded down); class-1 anchors see 1000
    # distinct negatives (n_neg 1024 capped), class-0 anchors all 350 (padded)
    assert shapes[-1] == (13, 1 + 1000)
    # official skip: class 0 has only 350 <= 500 other-class pixels, so only class 1's 3 anchors remain
    pixel_infonce(f, y, n_neg=500, anchor_fraction=0.01, negatives_with_replacement=False, official_skip=True)
    assert shapes[-1] == (3, 1 + 500)
    loss = pixel_infonce(f, y, n_neg=2000, anchor_fraction=0.01, official_skip=True)
    assert float(loss) == 0.0  # no class has more than 2000 other-class pixels: no anchors


def test_contrastive_loss_is_per_image_by_default() -> None:
    """Per image (official, batch size 1): each image's anchors meet only that image's pixels."""
    feats = torch.tensor([[[[1.0, 0.0]], [[0.0, 1.0]]], [[[5.0, 0.0]], [[0.0, 5.0]]]])  # [2, 2, 1, 2]
    y = torch.tensor([[[0, 1]], [[0, 1]]])
    tau = 0.5
    ld = LDiffusion(
        SmallUNet(3, 3, (8,)), LDiffusionConfig(tau=tau, anchor_fraction=1.0, official_skip=False)
    )
    l1 = -math.log(math.exp(1 / tau) / (math.exp(1 / tau) + 1))
    l2 = -math.log(math.exp(25 / tau) / (math.exp(25 / tau) + 1))
    got = ld._infonce(feats, y, torch.Generator().manual_seed(0))
    assert float(got) == pytest.approx((l1 + l2) / 2, rel=1e-5)
    pooled = LDiffusion(
        SmallUNet(3, 3, (8,)),
        LDiffusionConfig(tau=tau, anchor_fraction=1.0, per_image=False, official_skip=False),
    )
    assert float(pooled._infonce(feats, y, torch.Generator().manual_seed(0))) != pytest.approx((l1 + l2) / 2)


def test_official_laplace_scale_runs_the_official_additive_noise() -> None:
    """``form="additive", laplace_scale=1.0`` adds Laplace(0, sqrt(1 - abar_t)) noise, as the official
    code does: the denoiser sees x0 + sqrt(1 - abar_t) * sqrt(2) * n for our unit-variance n (same draws)."""
    seen: list[torch.Tensor] = []

    class Recorder(torch.nn.Module):
        def forward(self, x, t, cond):  # type: ignore[no-untyped-def]
            seen.append(x.detach().clone())
            return torch.zeros_like(x)

    x0 = torch.zeros(2, 3, 8, 8)
    feats = {}
    for scale in (None, 1.0):
        seen.clear()
        ld = LDiffusion(Recorder(), LDiffusionConfig(form="additive", laplace_scale=scale, timesteps=(500,)))
        ld.pixel_features(x0)
        feats[scale] = seen[0]
    torch.testing.assert_close(feats[1.0], feats[None] * math.sqrt(2), rtol=1e-5, atol=1e-6)
    gauss = LDiffusion(Recorder(), LDiffusionConfig(noise="gaussian", laplace_scale=1.0, timesteps=(500,)))
    assert gauss._laplace_scale is None  # the Gaussian ablation keeps unit variance
    assert LDiffusionConfig().laplace_scale is None  # the recorded runs' unit-variance noise
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="laplace_scale"):
            LDiffusionConfig(laplace_scale=bad)
