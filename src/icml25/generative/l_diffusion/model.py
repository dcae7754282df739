"""L-Diffusion's pipeline: Laplace-noise diffusion features, pixel contrastive refinement, Dice segmentation.

*L-Diffusion: Laplace Diffusion for Efficient Pathology Image Segmentation* (ICML 2025, OpenReview
2veJwf07RN; official code https://github.com/Lweihan/LDiffusion). In our words:

1. A denoiser ``eps(x_t, t)`` is trained on unlabelled images with Laplace noise (ε-prediction, L1 =
   Laplace maximum likelihood; :func:`icml25.nn.diffusion.ddpm_loss`): a denoising *reconstruction*
   objective in pixel space, standing in for the official fine-tuning of a pretrained Stable-Diffusion
   UNet on VAE latents (Laplace noise added to the latent, InfoNCE + VGG19 content loss).
2. Feature sequence (the paper's Sec. on the diffusion feature extractor): at ``T_f`` fixed timesteps the
   image is noised with a fixed-seed noise draw, the denoiser predicts ``x0_hat``, which is converted
   to grayscale (weights 0.2989, 0.5870, 0.1140, as in the official code); stacking the ``T_f`` maps gives
   each pixel a vector ``v(p) in R^{T_f}`` (:meth:`LDiffusion.pixel_features`).
3. Contrastive refinement: the denoiser is fine-tuned on labelled pixels with a supervised pixel InfoNCE
   (:func:`pixel_infonce`; :meth:`LDiffusion.contrastive_finetune` samples as the official loss: per
   image, 1 % of each class's pixels as anchors (at least 1), one same-class positive, 1024 distinct
   other-class negatives, classes with too few other-class pixels skipped; temperature
   ``tau``, the paper 0.05-0.1, the code 0.5) plus an MSE reconstruction term keeping it a denoiser
   (the official uses a VGG19 content loss, whose weights are not available here).
4. Segmentation: a network on the refined feature maps (optionally with the RGB image concatenated), trained
   with a Dice loss (:func:`dice_loss`, plus cross-entropy), evaluated by :func:`seg_metrics`
   (per-image Dice / IoU / pixel accuracy over foreground classes, as the official ``evaluate.py``).

The noise family is a parameter (``"laplace"`` or ``"gaussian"``), so the Gaussian ablation is the same
code. Any denoiser ``nn.Module`` with ``(x_t, t, cond) -> eps`` plugs in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from icml25.core.validate import check_fields, check_finite_tensor, check_positive
from icml25.nn.diffusion import NoiseFamily, NoiseSchedule, ddpm_loss, predict_x0, q_sample, sample_noise

__all__ = [
    "GRAY_WEIGHTS",
    "LDiffusionConfig",
    "LDiffusion",
    "pixel_infonce",
    "dice_loss",
    "seg_loss",
    "seg_metrics",
    "per_image_scores",
    "to_gray",
    "train_segmenter",
    "predict_labels",
]

GRAY_WEIGHTS = (0.2989, 0.5870, 0.1140)
Progress = Callable[[int, int], None]


def to_gray(x: Tensor) -> Tensor:
    """``[B, 3, H, W] -> [B, 1, H, W]`` with the official grayscale weights."""
    if x.ndim != 4 or x.shape[1] != 3:
        raise ValueError(f"x must be [B, 3, H, W], got {tuple(x.shape)}")
    w = x.new_tensor(GRAY_WEIGHTS).reshape(1, 3, 1, 1)
    return (x * w).sum(1, keepdim=True)


@dataclass(frozen=True)
class LDiffusionConfig:
    """Noise family, schedule, feature timesteps and the contrastive settings.

    ``timesteps``: the ``T_f`` steps whose ``x0_hat`` maps form the pixel vector (5-15 in the paper).
    ``laplace_scale``: the scale ``b`` of the Laplace noise before the ``sqrt(1 - abar_t)`` factor
    (:func:`icml25.nn.diffusion.sample_noise`); ``None`` (default) is unit variance, ``b = 1/sqrt 2``.
    The official code adds ``Laplace(0, sqrt(1 - abar_t))`` noise to its latents, i.e. ``b = 1``:
    ``form="additive", laplace_scale=1.0`` is its forward process exactly. Ignored for Gaussian noise
    (the ablation arm keeps its unit-variance Gaussian).
    ``feature``: ``"gray"`` (official, one value per step) or ``"rgb"`` (three).
    ``tau``: InfoNCE temperature; ``anchors_per_class``, ``n_neg``: sampled pixels per class / negatives.
    ``anchor_fraction``: anchors as a fraction of each class's pixels, rounded down (official: 0.01, at
    least ``min_anchors`` = 1); ``None`` uses the fixed ``anchors_per_class`` instead.
    ``official_skip``: skip a class with fewer than two pixels or with no more than ``n_neg`` other-class
    pixels (official ``compute_contrastive_loss``; an image without such a class adds no loss).
    ``negatives_with_replacement``: draw each anchor's negatives with replacement (``False``, the
    official, draws distinct pixels, at most all other-class pixels).
    ``per_image``: anchors, positives and negatives within each image, the loss averaged over all the
    batch's anchors (official);
    ``False`` pools anchors, positives and negatives across the batch.
    ``recon_weight``: weight of the MSE between ``x0_hat`` and the image during contrastive fine-tuning.
    """

    noise: NoiseFamily = "laplace"
    schedule: Literal["linear", "cosine"] = "cosine"
    T: int = 1000
    form: Literal["vp", "additive"] = "vp"
    laplace_scale: float | None = None
    timesteps: tuple[int, ...] = (600, 450, 300, 200, 100)
    feature: Literal["gray", "rgb"] = "gray"
    tau: float = 0.1
    anchors_per_class: int = 32
    n_neg: int = 1024
    anchor_fraction: float | None = 0.01
    min_anchors: int = 1
    official_skip: bool = True
    negatives_with_replacement: bool = False
    per_image: bool = True
    recon_weight: float = 1.0
    noise_seed: int = 1234

    def __post_init__(self) -> None:
        if self.noise not in ("laplace", "gaussian"):
            raise ValueError(f"LDiffusionConfig.noise must be 'laplace' or 'gaussian', got {self.noise!r}")
        if self.feature not in ("gray", "rgb"):
            raise ValueError(f"LDiffusionConfig.feature must be 'gray' or 'rgb', got {self.feature!r}")
        if self.form not in ("vp", "additive"):
            raise ValueError(f"LDiffusionConfig.form must be 'vp' or 'additive', got {self.form!r}")
        check_fields(self, positive_int=("T", "anchors_per_class", "n_neg", "min_anchors"), positive=("tau",))
        if self.laplace_scale is not None:
            check_fields(self, positive=("laplace_scale",))
        if self.anchor_fraction is not None and not 0 < self.anchor_fraction <= 1:
            raise ValueError(
                f"LDiffusionConfig.anchor_fraction must lie in (0, 1] or be None, got {self.anchor_fraction}"
            )
        check_fields(self, non_negative=("recon_weight",))
        if not self.timesteps or any(not (0 <= t < self.T) for t in self.timesteps):
            raise ValueError(
                f"LDiffusionConfig.timesteps must be non-empty steps in [0, T), got {self.timesteps}"
            )


def pixel_infonce(
    features: Tensor,
    labels: Tensor,
    *,
    tau: float = 0.1,
    anchors_per_class: int = 32,
    n_neg: int = 256,
    anchor_fraction: float | None = None,
    min_anchors: int = 1,
    negatives_with_replacement: bool = True,
    official_skip: bool = False,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Supervised pixel InfoNCE: for each anchor ``a`` with a same-class positive ``p`` and other-class
    negatives ``n_j``, ``-log( e^{<a,p>/tau} / (e^{<a,p>/tau} + sum_j e^{<a,n_j>/tau}) )``, mean over anchors.

    Dot products on the raw (unnormalised) pixel vectors, as the official ``info_nce_loss``. Anchors per
    class: ``anchors_per_class``, or with ``anchor_fraction`` that fraction of the class's pixels rounded
    down (at least ``min_anchors``; the official uses ``max(1, int(0.01 n))``), never more than the class
    has. Negatives: ``n_neg`` other-class pixels per anchor, with replacement, or distinct pixels (at most
    all of them) when ``negatives_with_replacement=False`` (official). ``official_skip``: classes with
    fewer than two pixels or at most ``n_neg`` other-class pixels get no anchors (official); if no class
    qualifies the loss is 0.

    Args:
        features: ``[N, D]`` pixel vectors (or ``[B, D, H, W]`` maps).
        labels: ``[N]`` (or ``[B, H, W]``) integer classes.
    """
    if features.ndim == 4:
        if labels.ndim != 3 or labels.shape != (features.shape[0], *features.shape[2:]):
            raise ValueError(f"labels must be [B, H, W] matching features, got {tuple(labels.shape)}")
        features = features.permute(0, 2, 3, 1).reshape(-1, features.shape[1])
        labels = labels.reshape(-1)
    check_finite_tensor("features", features, ndim=2, floating=True)
    if labels.ndim != 1 or labels.shape[0] != features.shape[0]:
        raise ValueError(f"labels must have shape [{features.shape[0]}], got {tuple(labels.shape)}")
    if labels.is_floating_point():
        raise TypeError(f"labels must be integer classes, got {labels.dtype}")
    check_positive("tau", tau)
    rows = _infonce_rows(
        features,
        labels,
        tau=tau,
        anchors_per_class=anchors_per_class,
        n_neg=n_neg,
        anchor_fraction=anchor_fraction,
        min_anchors=min_anchors,
        negatives_with_replacement=negatives_with_replacement,
        official_skip=official_skip,
        generator=generator,
    )
    return _rows_loss(rows, features)


def _rows_loss(rows: list[Tensor], features: Tensor) -> Tensor:
    if not rows:
        return features.sum() * 0.0
    # classes with fewer other-class pixels than n_neg (distinct negatives) get fewer columns: pad with
    # -inf logits, which add nothing to the softmax denominator
    width = max(r.shape[1] for r in rows)
    logits = torch.cat([F.pad(r, (0, width - r.shape[1]), value=float("-inf")) for r in rows])
    return F.cross_entropy(logits, torch.zeros(len(logits), dtype=torch.long, device=features.device))


def _infonce_rows(
    features: Tensor,
    labels: Tensor,
    *,
    tau: float,
    anchors_per_class: int,
    n_neg: int,
    anchor_fraction: float | None,
    min_anchors: int,
    negatives_with_replacement: bool,
    official_skip: bool,
    generator: torch.Generator | None,
) -> list[Tensor]:
    """Per class, the ``[k, 1 + n]`` logits (positive first) of its anchors; see :func:`pixel_infonce`."""
    classes = torch.unique(labels)
    if len(classes) < 2 and not official_skip:
        raise ValueError("pixel_infonce needs pixels of at least two classes")
    dev = features.device
    rows = []
    for c in classes:
        same = torch.nonzero(labels == c).squeeze(1)
        other = torch.nonzero(labels != c).squeeze(1)
        if official_skip and (len(same) < 2 or len(other) <= n_neg):
            continue
        want = (
            anchors_per_class
            if anchor_fraction is None
            else max(min_anchors, int(anchor_fraction * len(same)))
        )
        k = min(want, len(same))
        ia = torch.randperm(len(same), generator=generator)[:k]
        # a positive other than the anchor itself (as the official loss), when the class has two pixels
        shift = torch.randint(1, max(2, len(same)), (k,), generator=generator)
        ip = (ia + shift) % len(same) if len(same) > 1 else ia
        a, p = same[ia.to(dev)], same[ip.to(dev)]
        if negatives_with_replacement:
            jn = torch.randint(len(other), (k, n_neg), generator=generator)
        else:
            jn = torch.rand(k, len(other), generator=generator).argsort(1)[:, : min(n_neg, len(other))]
        fa = features[a]
        pos = (fa * features[p]).sum(-1, keepdim=True)
        neg = torch.einsum("kd,knd->kn", fa, features[other[jn.to(dev)]])
        rows.append(torch.cat([pos, neg], dim=1) / tau)
    return rows


def dice_loss(logits: Tensor, target: Tensor, *, eps: float = 1.0) -> Tensor:
    """Soft multi-class Dice loss ``1 - mean_c (2 sum p_c g_c + eps) / (sum p_c + sum g_c + eps)``
    over the batch, with ``p = softmax(logits)`` and one-hot ``g``."""
    if logits.ndim != 4 or target.shape != (logits.shape[0], *logits.shape[2:]):
        raise ValueError(
            f"need logits [B, C, H, W] and target [B, H, W], got {tuple(logits.shape)}, {tuple(target.shape)}"
        )
    p = logits.softmax(1)
    g = F.one_hot(target.long(), logits.shape[1]).permute(0, 3, 1, 2).to(p.dtype)
    inter = (p * g).sum((0, 2, 3))
    denom = p.sum((0, 2, 3)) + g.sum((0, 2, 3))
    return 1 - ((2 * inter + eps) / (denom + eps)).mean()


def seg_loss(logits: Tensor, target: Tensor) -> Tensor:
    """The segmentation objective used for every arm: Dice loss + cross-entropy."""
    return dice_loss(logits, target) + F.cross_entropy(logits, target.long())


def _check_pred_gt(pred: np.ndarray, gt: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    pred = np.asarray(pred)
    gt = np.asarray(gt)
    if pred.shape != gt.shape or pred.ndim != 3 or pred.size == 0:
        raise ValueError(
            f"pred and gt must be equal non-empty [N, H, W] arrays, got {pred.shape}, {gt.shape}"
        )
    if not (np.issubdtype(pred.dtype, np.integer) and np.issubdtype(gt.dtype, np.integer)):
        raise TypeError(f"pred and gt must hold integer class labels, got {pred.dtype}, {gt.dtype}")
    check_positive("n_classes", n_classes, integer=True)
    if n_classes < 2:
        raise ValueError("n_classes must be >= 2 (background + one class)")
    return pred, gt


def per_image_scores(pred: np.ndarray, gt: np.ndarray, n_classes: int) -> dict[str, np.ndarray]:
    """Per-image foreground scores ``[N]`` (class 0 excluded), the official ``evaluate.py`` conventions.

    ``dice``: mean over foreground classes of 2TP/(2TP+FP+FN), a class absent from both prediction and
    ground truth scoring 1 (so a constant background prediction scores the share of absent classes);
    ``miou``: mean IoU over the classes present in prediction or ground truth (absent ones skipped; an
    image with no foreground in either scores 1); ``mpa``: TP/(TP+FN), 1 if absent from the ground
    truth; ``fwiou``: sum_c |G_c|/|G| IoU_c.
    """
    pred, gt = _check_pred_gt(pred, gt, n_classes)
    dice, iou, pa, fw = [], [], [], []
    fg = range(1, n_classes)
    for p, g in zip(pred, gt, strict=True):
        d_i, u_i, a_i, f_i = [], [], [], 0.0
        for c in fg:
            pc, gc = p == c, g == c
            tp = float(np.sum(pc & gc))
            fp = float(np.sum(pc & ~gc))
            fn = float(np.sum(~pc & gc))
            d_i.append(1.0 if tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn))
            if tp + fp + fn > 0:
                u_i.append(tp / (tp + fp + fn))
                f_i += float(gc.mean()) * u_i[-1]
            a_i.append(1.0 if tp + fn == 0 else tp / (tp + fn))
        dice.append(float(np.mean(d_i)))
        iou.append(float(np.mean(u_i)) if u_i else 1.0)
        pa.append(float(np.mean(a_i)))
        fw.append(f_i)
    return {
        k: np.asarray(v, dtype=float) for k, v in (("dice", dice), ("miou", iou), ("mpa", pa), ("fwiou", fw))
    }


def seg_metrics(
    pred: np.ndarray, gt: np.ndarray, n_classes: int, *, tail: tuple[int, ...] = ()
) -> dict[str, float]:
    """Foreground (class 0 excluded) metrics: the means over images of :func:`per_image_scores`
    (official ``evaluate.py``), plus pooled scores that do not reward absent classes.

    ``dice_c<k>`` is the Dice of class k pooled over all images (0 if class k is predicted nowhere
    and present somewhere; 1 only if absent from both everywhere); ``pooled_dice`` their mean over
    the foreground classes; ``tail_dice`` the mean pooled Dice of the ``tail`` classes.
    """
    pred, gt = _check_pred_gt(pred, gt, n_classes)
    per = per_image_scores(pred, gt, n_classes)
    out = {k: float(v.mean()) for k, v in per.items()}
    fg = range(1, n_classes)
    for c in fg:
        pc, gc = pred == c, gt == c
        tp, fpn = float(np.sum(pc & gc)), float(np.sum(pc ^ gc))
        out[f"dice_c{c}"] = 1.0 if tp + fpn == 0 else 2 * tp / (2 * tp + fpn)
    out["pooled_dice"] = float(np.mean([out[f"dice_c{c}"] for c in fg]))
    if tail:
        out["tail_dice"] = float(np.mean([out[f"dice_c{c}"] for c in tail]))
    return out


class LDiffusion:
    """The L-Diffusion feature extractor around any denoiser ``eps(x_t, t, cond) -> [B, C, H, W]``."""

    def __init__(self, denoiser: nn.Module, config: LDiffusionConfig | None = None) -> None:
        self.denoiser = denoiser
        self.config = config or LDiffusionConfig()
        self.schedule = NoiseSchedule(self.config.schedule, self.config.T)

    @property
    def _laplace_scale(self) -> float | None:
        """The configured Laplace scale, for Laplace noise only."""
        return self.config.laplace_scale if self.config.noise == "laplace" else None

    @property
    def n_features(self) -> int:
        return len(self.config.timesteps) * (1 if self.config.feature == "gray" else 3)

    def _x0_hats(self, x: Tensor) -> list[Tensor]:
        cfg = self.config
        g = torch.Generator().manual_seed(cfg.noise_seed)
        noise = sample_noise(x.shape[1:], cfg.noise, generator=g, laplace_scale=self._laplace_scale)
        noise = noise.to(x).expand_as(x)
        outs = []
        for t in cfg.timesteps:
            tt = torch.full((x.shape[0],), t, dtype=torch.long, device=x.device)
            xt = q_sample(x, tt, self.schedule, noise, form=cfg.form)
            eps = self.denoiser(xt, tt, None)
            outs.append(predict_x0(xt, eps, tt, self.schedule, form=cfg.form).clamp(-1.5, 1.5))
        return outs

    def _features(self, x: Tensor) -> Tensor:
        hats = self._x0_hats(x)
        maps = [to_gray(h) if self.config.feature == "gray" else h for h in hats]
        return torch.cat(maps, dim=1)

    def pixel_features(self, images: Tensor, *, batch_size: int = 64) -> Tensor:
        """``[B, 3, H, W] -> [B, n_features, H, W]``: the stacked ``x0_hat`` maps (no gradient)."""
        check_finite_tensor("images", images, ndim=4, floating=True)
        if images.shape[1] != 3:
            raise ValueError(f"images must have 3 channels, got {images.shape[1]}")
        self.denoiser.eval()
        with torch.no_grad():
            return torch.cat(
                [self._features(images[i : i + batch_size]) for i in range(0, len(images), batch_size)]
            )

    def pretrain(
        self,
        images: Tensor,
        *,
        steps: int,
        lr: float = 2e-3,
        batch_size: int = 32,
        seed: int = 0,
        progress: Progress | None = None,
    ) -> list[float]:
        """Self-supervised denoising with the configured noise family (L1 for Laplace, L2 for Gaussian)."""
        check_finite_tensor("images", images, ndim=4, floating=True)
        check_positive("steps", steps, integer=True)
        g = torch.Generator().manual_seed(seed)
        opt = torch.optim.AdamW(self.denoiser.parameters(), lr=lr, weight_decay=0.0)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
        self.denoiser.train()
        losses = []
        for s in range(steps):
            idx = torch.randint(len(images), (min(batch_size, len(images)),), generator=g)
            loss = ddpm_loss(
                self.denoiser,
                images[idx],
                self.schedule,
                family=self.config.noise,
                form=self.config.form,
                generator=g,
                laplace_scale=self._laplace_scale,
            )
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(self.denoiser.parameters(), 1.0)
            opt.step()
            sched.step()
            losses.append(loss.item())
            if progress is not None and (s + 1) % 25 == 0:
                progress(s + 1, steps)
        return losses

    def _infonce(self, feats: Tensor, y: Tensor, g: torch.Generator) -> Tensor:
        cfg = self.config
        kw: dict = dict(
            tau=cfg.tau,
            anchors_per_class=cfg.anchors_per_class,
            n_neg=cfg.n_neg,
            anchor_fraction=cfg.anchor_fraction,
            min_anchors=cfg.min_anchors,
            negatives_with_replacement=cfg.negatives_with_replacement,
            official_skip=cfg.official_skip,
            generator=g,
        )
        if not cfg.per_image:
            return pixel_infonce(feats, y, **kw)
        rows: list[Tensor] = []
        for i in range(len(y)):  # anchors meet only their own image's pixels; mean over all anchors
            f = feats[i].reshape(feats.shape[1], -1).T
            yi = y[i].reshape(-1)
            if len(torch.unique(yi)) >= 2 or cfg.official_skip:
                rows += _infonce_rows(f, yi, **kw)
        return _rows_loss(rows, feats)

    def contrastive_finetune(
        self,
        images: Tensor,
        labels: Tensor,
        *,
        steps: int,
        lr: float = 3e-4,
        batch_size: int = 8,
        seed: int = 0,
        progress: Progress | None = None,
    ) -> list[float]:
        """Fine-tune the denoiser: pixel InfoNCE on its pixel vectors + ``recon_weight`` · MSE(x0_hat, x)."""
        check_finite_tensor("images", images, ndim=4, floating=True)
        if labels.shape != (images.shape[0], *images.shape[2:]):
            raise ValueError(f"labels must be [B, H, W] matching images, got {tuple(labels.shape)}")
        check_positive("steps", steps, integer=True)
        cfg = self.config
        g = torch.Generator().manual_seed(seed)
        opt = torch.optim.AdamW(self.denoiser.parameters(), lr=lr, weight_decay=0.0)
        self.denoiser.train()
        losses = []
        for s in range(steps):
            idx = torch.randint(len(images), (min(batch_size, len(images)),), generator=g)
            x, y = images[idx], labels[idx]
            hats = self._x0_hats(x)
            feats = torch.cat([to_gray(h) if cfg.feature == "gray" else h for h in hats], dim=1)
            loss = self._infonce(feats, y, g)
            if cfg.recon_weight > 0:
                loss = loss + cfg.recon_weight * torch.stack([F.mse_loss(h, x) for h in hats]).mean()
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(self.denoiser.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
            if progress is not None and (s + 1) % 25 == 0:
                progress(s + 1, steps)
        return losses


def train_segmenter(
    net: nn.Module,
    inputs: Tensor,
    labels: Tensor,
    *,
    steps: int,
    lr: float,
    batch_size: int = 16,
    seed: int = 0,
    progress: Progress | None = None,
) -> list[float]:
    """Train a segmentation network ``net(x, None, None) -> logits`` with :func:`seg_loss` (AdamW, cosine)."""
    check_finite_tensor("inputs", inputs, ndim=4, floating=True)
    if labels.shape != (inputs.shape[0], *inputs.shape[2:]):
        raise ValueError(f"labels must be [B, H, W] matching inputs, got {tuple(labels.shape)}")
    check_positive("steps", steps, integer=True)
    check_positive("lr", lr)
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    net.train()
    losses = []
    for s in range(steps):
        idx = torch.randint(len(inputs), (min(batch_size, len(inputs)),), generator=g)
        x, y = inputs[idx], labels[idx]
        if torch.rand((), generator=g) < 0.5:  # flips: the same augmentation for every arm
            x, y = x.flip(-1), y.flip(-1)
        if torch.rand((), generator=g) < 0.5:
            x, y = x.flip(-2), y.flip(-2)
        loss = seg_loss(net(x, None, None), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        if progress is not None and (s + 1) % 25 == 0:
            progress(s + 1, steps)
    return losses


def predict_labels(net: nn.Module, inputs: Tensor, *, batch_size: int = 64) -> np.ndarray:
    """Argmax class per pixel ``[N, H, W]``."""
    check_finite_tensor("inputs", inputs, ndim=4, floating=True)
    net.eval()
    with torch.no_grad():
        out = [
            net(inputs[i : i + batch_size], None, None).argmax(1) for i in range(0, len(inputs), batch_size)
        ]
    return torch.cat(out).numpy()
