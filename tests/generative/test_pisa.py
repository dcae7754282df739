"""Tests for PISA (ICML 2025): drop simulator, PisaBench metrics, generator, rewards, ORO, claim check."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.generative.pisa import (
    DOMAINS,
    DropSimulator,
    SegReward,
    SimConfig,
    StageConfig,
    TinyI2V,
    TinySeg,
    TrajectoryReward,
    align_frames,
    as_tensor,
    chamfer,
    dropping_object_index,
    fit_gravity,
    generate,
    generic_motion_clips,
    mask_centroids,
    mask_iou,
    oro,
    pisabench_metrics,
    rectified_flow_loss,
    scaled_l2,
    score_videos,
    simulate_drop,
    soft_iou,
    static_copy,
    threshold_masks,
    train_flow,
)
from icml25.generative.pisa.check import CHECK, TEST_DOMAINS, relative_to_reference

CFG = SimConfig(size=16, frames=10)


@pytest.fixture(autouse=True)
def _one_thread() -> object:
    """Tiny convolutions run fastest on one thread, and much slower on a shared, loaded machine."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


# ---------------------------------------------------------------- simulator


def test_simulator_shapes_determinism_and_domains() -> None:
    sim = DropSimulator(CFG)
    a, b = sim.sample(5, "seen", seed=1), sim.sample(5, "seen", seed=1)
    np.testing.assert_array_equal(a.video, b.video)
    assert a.video.shape == (5, 10, 16, 16) and a.video.dtype == np.float32
    assert a.masks.shape == (5, 10, 16, 16) and a.masks.dtype == bool
    assert a.video.min() >= 0 and a.video.max() <= 1
    assert a.masks.sum(axis=(2, 3)).min() > 0  # the object is always visible
    assert {m["shape"] for m in a.meta} <= set(DOMAINS["seen"].shapes)
    u = sim.sample(8, "unseen", seed=1)
    assert {m["shape"] for m in u.meta} <= {"triangle", "bar"}
    assert not np.array_equal(a.video, sim.sample(5, "seen", seed=2).video)


def test_free_fall_kinematics_and_exact_gravity_fit() -> None:
    ys, t_hit = simulate_drop(CFG, y0=3.0, half_height=1.5, e=0.0)
    t = np.arange(CFG.frames) / CFG.fps
    pre = t <= t_hit
    np.testing.assert_allclose(ys[pre], 3.0 + 0.5 * CFG.g_px * t[pre] ** 2)
    rest = CFG.floor_y - 1.5
    assert np.all(ys <= rest + 1e-9) and ys[-1] == pytest.approx(rest)
    assert t_hit == pytest.approx(math.sqrt(2 * (rest - 3.0) / CFG.g_px))
    last = int(math.floor(t_hit * CFG.fps))
    assert fit_gravity(ys, CFG.fps, CFG.px_per_m, last_frame=last) == pytest.approx(CFG.g, rel=1e-9)
    # a bounce goes back up, less high than the start
    yb, _ = simulate_drop(CFG, y0=3.0, half_height=1.5, e=0.4)
    assert yb.min() == pytest.approx(3.0) and np.any(yb[pre.sum() :] < rest - 0.1)


def test_gravity_from_ground_truth_masks_is_close() -> None:
    clips = DropSimulator(CFG).sample(20, "seen", seed=0)
    g = []
    for i in range(len(clips)):
        last = int(math.floor(clips.meta[i]["impact_time"] * clips.fps))
        if last >= 2:
            g.append(
                fit_gravity(
                    mask_centroids(clips.masks[i])[:, 0, 1], clips.fps, clips.px_per_m, last_frame=last
                )
            )
    assert abs(np.median(g) - CFG.g) / CFG.g < 0.15


def test_generic_clips_never_accelerate() -> None:
    clips = generic_motion_clips(CFG, 20, seed=0, p_static=0.5)
    for i in range(len(clips)):
        c = clips.centroid[i]
        d2 = np.abs(np.diff(c, 2, axis=0)).max(axis=1)
        speed = clips.meta[i]["speed"]
        if speed == 0:
            assert np.all(d2 == 0)
        # away from reflections the motion is uniform: most second differences vanish
        assert np.mean(d2 < 1e-9) >= 0.5


# ---------------------------------------------------------------- metrics


def _square(r: int, c: int, n: int = 16, k: int = 2) -> np.ndarray:
    m = np.zeros((n, n), bool)
    m[r : r + k, c : c + k] = True
    return m


def test_metrics_hand_made_masks() -> None:
    gt = np.stack([_square(4, 4 + t) for t in range(4)])
    out = pisabench_metrics(gt, gt, 16, 16)
    assert out == {"l2": 0.0, "chamfer_distance": 0.0, "iou": 1.0}
    shifted = np.stack([_square(4, 5 + t) for t in range(4)])  # one pixel to the right
    out = pisabench_metrics(gt, shifted, 16, 16)
    # |dx| = 1, |dy| = 0: per-coordinate mean 0.5, scaled by (1/sqrt 2)/16
    assert out["l2"] == pytest.approx(0.5 / math.sqrt(2) / 16)
    assert out["iou"] == pytest.approx(2 / 6)
    # Chamfer: half of each set is at distance 0, half at distance 1 -> 0.5 + 0.5 per frame
    assert out["chamfer_distance"] == pytest.approx(1.0 / math.sqrt(2) / 16)


def test_metrics_empty_masks_and_nan_handling() -> None:
    gt = np.stack([_square(4, 4), _square(6, 4), np.zeros((16, 16), bool)])
    pd = np.stack([_square(4, 4), np.zeros((16, 16), bool), np.zeros((16, 16), bool)])
    out = pisabench_metrics(gt, pd, 16, 16)
    assert out["iou"] == pytest.approx((1 + 0 + 1) / 3)  # both empty counts as IoU 1
    assert out["l2"] == 0.0  # empty frames are NaN centroids, left out
    assert out["chamfer_distance"] == 0.0
    all_empty = np.zeros_like(gt)
    assert math.isnan(pisabench_metrics(gt, all_empty, 16, 16)["l2"])


def test_frame_alignment() -> None:
    idx, n = align_frames(10, 10, 32.0, 16.0)
    assert idx.tolist() == [0, 2, 4, 6, 8] and n == 5
    idx, n = align_frames(3, 6, 8.0, 16.0)
    assert idx.tolist() == [0, 0, 1, 1, 2, 2]
    gt = np.stack([_square(2 + t, 4) for t in range(10)])
    pd = gt[::2]  # a prediction at half the frame rate that is exactly right
    assert pisabench_metrics(gt, pd, 16.0, 8.0)["l2"] == 0.0


def _chamfer_naive(a: np.ndarray, b: np.ndarray, res: int) -> float:
    vals = []
    for fa, fb in zip(a, b, strict=True):
        pa, pb = np.argwhere(fa), np.argwhere(fb)
        if len(pa) == 0 or len(pb) == 0:
            continue
        d = np.sqrt(((pa[:, None, :] - pb[None, :, :]) ** 2).sum(-1))
        vals.append((d.min(0).mean() + d.min(1).mean()) / math.sqrt(2) / res)
    return float(np.mean(vals)) if vals else float("nan")


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 100_000), st.floats(0.05, 0.6))
def test_metric_properties_against_brute_force(seed: int, p: float) -> None:
    rng = np.random.default_rng(seed)
    a = rng.random((3, 8, 8)) < p
    b = rng.random((3, 8, 8)) < p
    cd = chamfer(a, b, 8)
    ref = _chamfer_naive(a, b, 8)
    assert (math.isnan(cd) and math.isnan(ref)) or cd == pytest.approx(ref, rel=1e-6)
    assert (math.isnan(cd) and math.isnan(chamfer(b, a, 8))) or cd == pytest.approx(chamfer(b, a, 8))
    iou = mask_iou(a, b)
    assert 0.0 <= iou <= 1.0 and iou == pytest.approx(mask_iou(b, a))
    # L2 is the mean absolute per-coordinate centroid difference
    ca, cb = mask_centroids(a), mask_centroids(b)
    diffs = [
        abs(x - y)
        for x, y in zip(ca.ravel(), cb.ravel(), strict=True)
        if not (math.isnan(x) or math.isnan(y))
    ]
    l2 = scaled_l2(ca, cb, 8)
    if diffs:
        assert l2 == pytest.approx(np.mean(diffs) / math.sqrt(2) / 8)


def test_dropping_object_index() -> None:
    assert dropping_object_index() == -1
    pts = [{"positive": [[5, 40], [6, 30]]}, {"positive": [[9, 12]]}, {"positive": [[1, 50]]}]
    assert dropping_object_index(pts) == 1
    with pytest.raises(ValueError, match="positive"):
        dropping_object_index([{"negative": [[1, 1]]}])


def test_metric_input_validation() -> None:
    with pytest.raises(ValueError, match="gt_masks"):
        pisabench_metrics(np.zeros((2, 2)), np.zeros((2, 2)), 16, 16)
    with pytest.raises(ValueError, match="gt_fps"):
        pisabench_metrics(np.zeros((2, 4, 4)), np.zeros((2, 4, 4)), 0, 16)
    with pytest.raises(TypeError, match="gt_masks"):
        pisabench_metrics(np.array([["a"]]), np.zeros((2, 4, 4)), 16, 16)
    with pytest.raises(ValueError, match="NaN"):
        pisabench_metrics(np.full((2, 4, 4), np.nan), np.zeros((2, 4, 4)), 16, 16)
    with pytest.raises(ValueError, match="n"):
        DropSimulator(CFG).sample(0)
    with pytest.raises(ValueError, match="frames"):
        SimConfig(frames=2)


# ---------------------------------------------------------------- generator and rewards


def test_generator_shapes_condition_and_loss() -> None:
    torch.manual_seed(0)
    model = TinyI2V(10, (8, 16))
    clips = DropSimulator(CFG).sample(4, "seen", seed=0)
    first = as_tensor(clips.video[:, 0])
    out = generate(model, first, steps=3, generator=torch.Generator().manual_seed(0))
    assert out.shape == (4, 10, 16, 16) and out.dtype == torch.float32
    torch.testing.assert_close(out[:, 0], first)  # frame 0 is the condition, untouched
    assert not out.requires_grad
    loss = rectified_flow_loss(model, as_tensor(clips.video), torch.Generator().manual_seed(0))
    assert loss.ndim == 0 and torch.isfinite(loss)
    with pytest.raises(ValueError, match="frames"):
        rectified_flow_loss(model, as_tensor(clips.video[:, :5]))
    with pytest.raises(ValueError, match="first"):
        generate(model, torch.full((2, 16, 16), float("nan")))


def test_psft_lowers_loss() -> None:
    torch.manual_seed(0)
    model = TinyI2V(6, (8, 16))
    clips = DropSimulator(SimConfig(size=16, frames=6)).sample(16, "seen", seed=0)
    hist = train_flow(model, as_tensor(clips.video), StageConfig(steps=30, batch_size=8, lr=3e-3))
    assert np.mean(hist.train_loss[-5:]) < np.mean(hist.train_loss[:5])


def test_soft_iou_matches_hard_iou_on_binary_masks() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.random((5, 8, 8)) < 0.4, rng.random((5, 8, 8)) < 0.4
    soft = soft_iou(as_tensor(a), as_tensor(b)).numpy()
    hard = [mask_iou(a[i : i + 1], b[i : i + 1]) for i in range(5)]
    np.testing.assert_allclose(soft, hard, rtol=1e-5)
    p = as_tensor(a)[None]
    np.testing.assert_allclose(TrajectoryReward.centroids(p)[0].numpy(), mask_centroids(a)[:, 0], rtol=1e-5)


def test_reward_gradient_flows_through_sampler_and_oro_runs() -> None:
    torch.manual_seed(0)
    cfg = SimConfig(size=16, frames=6)
    clips = DropSimulator(cfg).sample(4, "seen", seed=0)
    model, seg = TinyI2V(6, (8, 16)), TinySeg((8, 8)).requires_grad_(False)
    video, masks = as_tensor(clips.video), as_tensor(clips.masks)
    for reward in (SegReward(seg), TrajectoryReward(seg)):
        model.zero_grad()
        out = generate(
            model, video[:2, 0], steps=3, generator=torch.Generator().manual_seed(0), differentiable=True
        )
        loss = reward(out, masks[:2])
        loss.backward()
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        assert grads and sum(float(g.abs().sum()) for g in grads) > 0
        assert all(p.grad is None for p in seg.parameters())  # the reward model stays frozen
    before = [p.detach().clone() for p in model.parameters()]
    hist = oro(
        model, video, masks, SegReward(seg), StageConfig(steps=2, batch_size=2, lr=1e-3), sample_steps=2
    )
    assert len(hist.train_loss) == 2 and all(0 <= v <= 1 for v in hist.train_loss)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_threshold_segmenter_recovers_ground_truth_on_clean_renders() -> None:
    for dom in ("seen", "unseen"):
        clips = DropSimulator(CFG).sample(6, dom, seed=4)
        thr = threshold_masks(clips.video, clips)
        assert np.mean(thr == clips.masks) > 0.999  # float rounding at exact half-coverage aside
        assert np.mean([mask_iou(clips.masks[i], thr[i]) for i in range(6)]) > 0.99


def test_static_copy() -> None:
    first = torch.rand(3, 16, 16)
    v = static_copy(first, 5)
    assert v.shape == (3, 5, 16, 16)
    torch.testing.assert_close(v[:, 4], first)


# ---------------------------------------------------------------- check


def test_tiny_check_runs_and_smoke_criteria_hold() -> None:
    res = CHECK.run("tiny")
    assert str(res.verdict) == "inconclusive"
    assert all(c.passed for c in res.criteria)
    for arm in ("static", "base", "sft", "sft_oro", "sft_cont"):
        for dom in TEST_DOMAINS:
            assert f"l2_{dom}" in res.metrics[arm]
    assert {f.file for f in res.figures} == {"trajectories.png", "sample_frames.png"}
    # the PSFT criteria's paired metrics: per video over base's mean, so base's own is 1
    for dom in ("seen", "unseen"):
        for met in ("l2", "cd", "iou"):
            assert res.metrics["base"][f"{met}_rel_{dom}"].mean == pytest.approx(1.0)
            assert math.isfinite(res.metrics["sft"][f"{met}_rel_{dom}"].mean)
    for arm in ("sft", "base"):  # every seen test video has a fit here: the pair's median is the metric's
        assert res.metrics[arm]["g_err_pair_seen"].mean == pytest.approx(res.metrics[arm]["g_err_seen"].mean)


def test_presets_and_full_scale_one_step() -> None:
    small, full = CHECK.config("small"), CHECK.config("full")
    assert small.sim.size == 16 and small.sim.frames == 10 and small.sample_steps == 8
    assert CHECK.config("small", {"min_cut": 0.3}).min_cut == 0.3
    assert full.sim.size == 32 and full.sim.frames == 16
    # the full configuration's models construct and take one PSFT and one ORO step
    torch.manual_seed(0)
    clips = DropSimulator(full.sim).sample(2, "seen", seed=0)
    model, seg = (
        TinyI2V(full.sim.frames, full.model_channels),
        TinySeg(full.seg_channels).requires_grad_(False),
    )
    video, masks = as_tensor(clips.video), as_tensor(clips.masks)
    train_flow(model, video, StageConfig(steps=1, batch_size=2, lr=full.sft.lr))
    hist = oro(
        model, video, masks, SegReward(seg), StageConfig(steps=1, batch_size=2, lr=1e-5), sample_steps=2
    )
    assert len(hist.train_loss) == 1 and math.isfinite(hist.train_loss[0])


def test_score_videos_gives_per_video_items_that_average_to_the_metrics() -> None:
    """Issue 41: the ORO criteria pair arms per test video, so scoring returns one value per video."""
    clips = DropSimulator(CFG).sample(5, "seen", seed=3)
    torch.manual_seed(0)
    seg = TinySeg((8, 8)).requires_grad_(False)
    m, s = score_videos(seg, as_tensor(clips.video), clips)
    for key, item in (
        ("iou", "iou_items"),
        ("iou_thr", "iou_thr_items"),
        ("l2", "l2_items"),
        ("cd", "cd_items"),
    ):
        assert s[item].shape == (5,)
        assert np.nanmean(s[item]) == pytest.approx(m[key])
    assert s["g_err_items"].shape == (5,)
    assert np.nanmedian(s["g_err_items"]) == pytest.approx(m["g_err"])
    np.testing.assert_allclose(s["iou_thr_items"], 1.0, atol=1e-2)  # clean renders: threshold = truth


def test_oro_headline_is_paired_against_equal_budget_psft_on_the_threshold_segmenter() -> None:
    claim = CHECK.claim_for(CHECK.config("small"))
    head = claim.headline_criterion()
    assert (head.arm, head.other_arm, head.metric) == ("sft_oro", "sft_cont", "iou_thr_seen")
    assert head.smallest_effect == CHECK.config("small").min_effect_iou
    assert claim.references == ("static",)
    gates = {g.name for g in claim.gates_at("small")}
    assert gates == {"segmenter_works", "base_no_gravity", "sft_beats_static"}
    assert all(c.smallest_effect for c in claim.criteria_at("small") if c.other_arm is not None)


def test_every_arm_vs_arm_criterion_is_paired_and_the_psft_ones_keep_their_meaning() -> None:
    """Issue 41 item 2: the PSFT criteria (sft / base ratios) and g_toward_true were point comparisons
    without an interval; they are paired per test video and seed, with smallest effects from the
    config, and hold exactly when the old ratio conditions hold with confidence."""
    from icml25.core.claims import MetricSummary, evaluate_criterion

    cfg = CHECK.config("small")
    claim = CHECK.claim_for(cfg)
    psft = {f"sft_{kind}_{dom}" for kind in ("cuts_l2", "cuts_cd", "iou") for dom in ("seen", "unseen")}
    crits = {c.name: c for c in claim.criteria_at("small")}
    assert psft | {"g_toward_true"} <= set(crits)
    for c in claim.criteria_at("small"):
        if c.other_arm is not None:
            assert c.paired and c.effect_source
    for name in psft:
        c = crits[name]
        assert (c.arm, c.other_arm, c.smallest_effect) == ("sft", "base", cfg.min_effect_rel)
        assert c.factor == pytest.approx(cfg.iou_factor if "iou" in name else 1 - cfg.min_cut)
    g = crits["g_toward_true"]
    assert (g.arm, g.other_arm, g.metric, g.op) == ("sft", "base", "g_err_pair_seen", "<")
    assert g.smallest_effect == cfg.min_effect_g
    changed = CHECK.claim_for(CHECK.config("small", {"min_effect_rel": 0.2, "min_effect_g": 0.3}))
    assert {c.name: c.smallest_effect for c in changed.criteria}["sft_cuts_l2_seen"] == 0.2
    assert {c.name: c.smallest_effect for c in changed.criteria}["g_toward_true"] == 0.3

    rng = np.random.default_rng(0)
    base = [rng.uniform(0.05, 0.15, 30) for _ in range(3)]

    def judge(name: str, ratio: float) -> str:
        sft = [ratio * b * rng.uniform(0.95, 1.05, b.size) for b in base]
        pairs = [relative_to_reference(a, b) for a, b in zip(sft, base, strict=True)]
        assert all(p is not None for p in pairs)
        items = {
            "sft": {crits[name].metric: [p[0] for p in pairs if p is not None]},
            "base": {crits[name].metric: [p[1] for p in pairs if p is not None]},
        }
        metrics = {
            arm: {m: MetricSummary.of([float(r.mean()) for r in rows]) for m, rows in v.items()}
            for arm, v in items.items()
        }
        return evaluate_criterion(crits[name], metrics, items=items, resamples=500).outcome

    assert judge("sft_cuts_l2_seen", 0.3) == "holds"  # a 70 % cut
    assert judge("sft_cuts_l2_seen", 0.8) == "fails"  # a 20 % cut: not even 40 % - 0.1 of base
    assert judge("sft_iou_unseen", 3.0) == "holds"
    assert judge("sft_iou_unseen", 1.5) == "fails"

    def judge_g(cut: float) -> str:  # medians over videos, as the g_err metric is one
        b = [rng.uniform(0.8, 1.6, 30) for _ in range(3)]
        a = [np.maximum(x - cut + rng.normal(0.0, 0.02, x.size), 0.0) for x in b]
        items = {"sft": {g.metric: a}, "base": {g.metric: b}}
        metrics = {
            k: {g.metric: MetricSummary.of([float(np.median(r)) for r in v[g.metric]])}
            for k, v in items.items()
        }
        res = evaluate_criterion(g, metrics, items=items, statistics=CHECK.item_statistics, resamples=500)
        return res.outcome

    assert judge_g(0.5) == "holds"
    assert judge_g(0.0) == "fails"  # no move toward g: the interval excludes min_effect_g


def test_relative_to_reference_pairs_defined_videos_and_scales_by_the_reference_mean() -> None:
    a = np.array([1.0, np.nan, 3.0, 2.0])
    b = np.array([2.0, 4.0, np.nan, 6.0])
    pair = relative_to_reference(a, b)
    assert pair is not None
    np.testing.assert_allclose(pair[0], [0.25, 0.5])  # videos 0 and 3; base's mean there is 4
    np.testing.assert_allclose(pair[1], [0.5, 1.5])
    assert pair[0].mean() == pytest.approx(np.mean([1.0, 2.0]) / np.mean([2.0, 6.0]))
    assert relative_to_reference(np.array([np.nan]), np.array([1.0])) is None
    assert relative_to_reference(np.ones(2), np.zeros(2)) is None  # a zero reference mean has no ratio
    with pytest.raises(ValueError, match="values and reference"):
        relative_to_reference(np.ones(3), np.ones(4))
