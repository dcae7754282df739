"""Training and zero-shot evaluation for PNBA (*Neural Representational Consistency Emerges from
Probabilistic Neural-Behavioral Representation Alignment*, Zhu et al., ICML 2025,
https://arxiv.org/abs/2505.04331), plus the CCA "manual alignment" baseline.

* :func:`train_pnba`: AdamW through :func:`icml25.nn.fit` on every training recording at once
  (neurons padded and masked).
* :func:`preservation_stats`: the paper's preserved-representation test (official
  ``lv_statistics_activtiy.py``): Pearson R between flattened neural latents of two subjects' trials,
  *paired* (same behaviour instance) against all *unpaired* combinations; Cohen's d, one-sided
  Mann-Whitney U and Welch t-tests, plus cosine similarity and cross-subject trial identification.
* :func:`velocity_r2`, :func:`velocity_r2_items` (its per-trial contributions, for paired intervals),
  :func:`effective_rank`: decoding quality and collapse diagnostics.
* :func:`pca_cca_latents`: per-subject PCA latents aligned to a reference subject by CCA on
  condition-averaged activity (the Safaie et al. 2023 procedure the paper contrasts with). CCA needs
  paired samples; condition averages (8 directions x T bins) are the pairing, so this baseline uses
  every subject's condition labels, the held-out ones' included: it is aligned with supervision, not
  zero-shot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats
from torch import Tensor

from icml25.core.progress import ProgressFn
from icml25.core.validate import check_fields, check_finite_array
from icml25.nn.train import FitConfig, FitHistory, fit

from .data import N_CONDITIONS, Recording, pad_recordings
from .model import PNBA

__all__ = [
    "TrainConfig",
    "train_pnba",
    "encode_recording",
    "preservation_stats",
    "velocity_r2",
    "velocity_r2_items",
    "effective_rank",
    "pca_cca_latents",
]


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation (official mouse-V1 recipe: AdamW, betas (0.9, 0.999), weight decay 0.05, warm-up
    then cosine; steps, batch and learning rate are ours)."""

    steps: int = 600
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.05
    warmup_steps: int = 30
    grad_clip: float = 5.0

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=("steps", "batch_size"),
            positive=("lr",),
            non_negative=("weight_decay", "grad_clip"),
        )
        check_fields(self, non_negative_int=("warmup_steps",))


def train_pnba(
    model: PNBA,
    recordings: Sequence[Recording],
    cfg: TrainConfig,
    *,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> FitHistory:
    """Train ``model`` (any objective) on ``recordings``; recording ``i`` uses neural readout ``i``."""
    if len(recordings) > model.cfg.n_recordings:
        raise ValueError(
            f"recordings has {len(recordings)} entries but the model has {model.cfg.n_recordings} readouts"
        )
    data = pad_recordings(list(recordings))
    if data.spikes.shape[1] > model.cfg.max_neurons:
        raise ValueError(
            f"recordings hold {data.spikes.shape[1]} neurons, above max_neurons={model.cfg.max_neurons}"
        )

    def loss_fn(m: torch.nn.Module, batch: tuple[Tensor, ...], gen: torch.Generator) -> Tensor:
        spikes, mask, vel, rec = batch
        n = int(mask.sum(1).max())  # trim padding shared by the whole batch
        return m(spikes[:, :n], vel, rec, mask[:, :n], generator=gen).total

    fcfg = FitConfig(
        steps=cfg.steps,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        warmup_steps=cfg.warmup_steps,
        weight_decay=cfg.weight_decay,
        grad_clip=cfg.grad_clip,
        sampling="shuffle_drop_last",
        fused=True,  # fused AdamW kernels: fewer launches on the CPU, the same update up to round-off
    )
    return fit(model, loss_fn, data.tensors(), fcfg, seed=seed, progress=progress)


@torch.no_grad()
def encode_recording(model: PNBA, rec: Recording, batch_size: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Neural latents of every trial of ``rec`` (no subject information): ``mu, logvar`` ``[K, D, T]``."""
    model.eval()
    x = torch.from_numpy(rec.spikes).float()
    mus, lvs = [], []
    for i in range(0, len(x), batch_size):
        mu, lv = model.encode_neural(x[i : i + batch_size])
        mus.append(mu)
        lvs.append(lv)
    return torch.cat(mus).numpy(), torch.cat(lvs).numpy()


def _rows_standardised(a: np.ndarray) -> np.ndarray:
    a = a.reshape(len(a), -1).astype(np.float64)
    a = a - a.mean(1, keepdims=True)
    return a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)


def preservation_stats(
    mu_a: np.ndarray, mu_b: np.ndarray, pairs_a: np.ndarray, pairs_b: np.ndarray
) -> dict[str, float]:
    """Paired vs unpaired similarity of two subjects' latents.

    Args:
        mu_a: ``[K_a, ...]`` latents of subject a (flattened per trial); mu_b: ``[K_b, ...]``.
        pairs_a, pairs_b: behaviour-instance ids; trials with equal ids are *paired*.

    Returns:
        ``paired_r``, ``unpaired_r`` (mean Pearson R), ``paired_cos``, ``unpaired_cos``, ``cohens_d``
        (pooled sd), ``mw_log10p`` (one-sided Mann-Whitney U, paired > unpaired), ``t_log10p`` (Welch,
        one-sided), ``identification`` (fraction of a's paired trials whose most similar trial of b is
        its pair).
    """
    for name, arr in (("mu_a", mu_a), ("mu_b", mu_b)):
        check_finite_array(name, arr)
        if np.asarray(arr).ndim < 2:
            raise ValueError(f"{name} must be [trials, ...], got shape {np.shape(arr)}")
    pairs_a, pairs_b = np.asarray(pairs_a), np.asarray(pairs_b)
    if pairs_a.shape != (len(mu_a),) or pairs_b.shape != (len(mu_b),):
        raise ValueError("pairs_a and pairs_b must hold one id per trial of mu_a and mu_b")
    if np.prod(np.shape(mu_a)[1:]) != np.prod(np.shape(mu_b)[1:]):
        raise ValueError(
            f"mu_a and mu_b must have the same latent size, got {np.shape(mu_a)} and {np.shape(mu_b)}"
        )
    za, zb = _rows_standardised(np.asarray(mu_a)), _rows_standardised(np.asarray(mu_b))
    r = za @ zb.T  # Pearson R of every (a, b) trial combination
    fa = np.asarray(mu_a, dtype=np.float64).reshape(len(mu_a), -1)
    fb = np.asarray(mu_b, dtype=np.float64).reshape(len(mu_b), -1)
    cos = (fa / np.maximum(np.linalg.norm(fa, axis=1, keepdims=True), 1e-12)) @ (
        fb / np.maximum(np.linalg.norm(fb, axis=1, keepdims=True), 1e-12)
    ).T
    paired = pairs_a[:, None] == pairs_b[None, :]
    if not paired.any() or paired.all():
        raise ValueError("pairs_a and pairs_b must give both paired and unpaired trial combinations")
    rp, ru = r[paired], r[~paired]
    sd = np.sqrt(
        ((len(rp) - 1) * rp.var(ddof=1 if len(rp) > 1 else 0) + (len(ru) - 1) * ru.var(ddof=1))
        / max(len(rp) + len(ru) - 2, 1)
    )
    mw = stats.mannwhitneyu(rp, ru, alternative="greater")
    tt = stats.ttest_ind(rp, ru, equal_var=False, alternative="greater")
    rows = paired.any(1)
    ident = float(np.mean(paired[rows, r[rows].argmax(1)]))
    return {
        "paired_r": float(rp.mean()),
        "unpaired_r": float(ru.mean()),
        "paired_cos": float(cos[paired].mean()),
        "unpaired_cos": float(cos[~paired].mean()),
        "cohens_d": float((rp.mean() - ru.mean()) / max(sd, 1e-12)),
        "mw_log10p": float(np.log10(max(float(mw.pvalue), 1e-300))),
        "t_log10p": float(np.log10(max(float(tt.pvalue), 1e-300))) if np.isfinite(tt.pvalue) else 0.0,
        "identification": ident,
    }


def velocity_r2(pred: np.ndarray, true: np.ndarray) -> float:
    """R² of ``[K, 2, T]`` velocity predictions, pooled over trials and bins, averaged over components."""
    pred, true = np.asarray(pred, dtype=np.float64), np.asarray(true, dtype=np.float64)
    if pred.shape != true.shape or pred.ndim != 3:
        raise ValueError(f"pred and true must both be [K, dims, T], got {pred.shape} and {true.shape}")
    p = pred.transpose(0, 2, 1).reshape(-1, pred.shape[1])
    t = true.transpose(0, 2, 1).reshape(-1, true.shape[1])
    ss_res = ((p - t) ** 2).sum(0)
    ss_tot = ((t - t.mean(0)) ** 2).sum(0)
    return float(np.mean(1 - ss_res / np.maximum(ss_tot, 1e-12)))


def velocity_r2_items(pred: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Per-trial contributions to :func:`velocity_r2`: ``[K]`` whose mean is exactly the R².

    Trial ``i`` scores ``1 - K · mean_c(SSres_ic / SStot_c)`` with ``SStot_c`` the recording's total
    sum of squares of component ``c``, a fixed scale for every predictor of the same targets, so
    paired differences between two predictors are differences of R² contributions.
    """
    pred, true = np.asarray(pred, dtype=np.float64), np.asarray(true, dtype=np.float64)
    if pred.shape != true.shape or pred.ndim != 3:
        raise ValueError(f"pred and true must both be [K, dims, T], got {pred.shape} and {true.shape}")
    K = len(true)
    ss_res = ((pred - true) ** 2).sum(2)  # [K, dims]
    ss_tot = ((true - true.mean((0, 2), keepdims=True)) ** 2).sum((0, 2))  # [dims]
    return 1.0 - K * (ss_res / np.maximum(ss_tot, 1e-12)).mean(1)


def effective_rank(latents: np.ndarray) -> float:
    """Participation ratio ``(Σλ)²/Σλ²`` of the trial covariance of flattened latents (1 = collapsed)."""
    x = np.asarray(latents, dtype=np.float64).reshape(len(latents), -1)
    if len(x) < 2:
        raise ValueError("latents needs at least 2 trials")
    s = np.linalg.svd(x - x.mean(0), compute_uv=False) ** 2
    return float(s.sum() ** 2 / max((s**2).sum(), 1e-300))


def _smoothed(rec: Recording, width: float = 1.5) -> np.ndarray:
    from scipy.ndimage import gaussian_filter1d

    return np.sqrt(gaussian_filter1d(rec.spikes.astype(np.float64), width, axis=-1))


def pca_cca_latents(
    recordings: Sequence[Recording], reference: Recording, n_components: int = 8
) -> list[np.ndarray]:
    """PCA latents of every recording mapped into the reference's PC space by CCA on condition averages.

    Each recording: square-root smoothed counts -> its own PCA (``n_components``) -> latents
    ``[K, n_components, T]``. CCA between its condition-averaged latents ``[8 T, n]`` and the reference's
    gives canonical directions; a recording's latents are projected to the canonical space and mapped
    back through the reference's canonical directions (least squares), so all recordings share the
    reference's coordinates. Uses condition labels of every recording (supervised alignment).
    """
    from sklearn.cross_decomposition import CCA
    from sklearn.decomposition import PCA

    def pca(rec: Recording) -> np.ndarray:
        x = _smoothed(rec)
        K, N, T = x.shape
        k = min(n_components, N)
        flat = x.transpose(0, 2, 1).reshape(-1, N)
        lat = PCA(n_components=k, random_state=0).fit_transform(flat)
        return lat.reshape(K, T, k).transpose(0, 2, 1)

    ref_lat = pca(reference)
    present = [c for c in range(N_CONDITIONS) if np.any(reference.condition == c)]
    out = []
    for rec in recordings:
        lat = pca(rec)
        conds = [c for c in present if np.any(rec.condition == c)]
        # condition averages [conditions * T, k]: the paired samples CCA needs
        src = np.concatenate([lat[rec.condition == c].mean(0).T for c in conds])
        tgt = np.concatenate([ref_lat[reference.condition == c].mean(0).T for c in conds])
        mx, my = src.mean(0), tgt.mean(0)
        k = min(src.shape[1], tgt.shape[1])
        cca = CCA(n_components=k, scale=False, max_iter=1000).fit(src - mx, tgt - my)
        K, _, T = lat.shape
        u = (lat.transpose(0, 2, 1).reshape(-1, lat.shape[1]) - mx) @ cca.x_rotations_
        back = u @ np.linalg.pinv(cca.y_rotations_) + my
        out.append(back.reshape(K, T, -1).transpose(0, 2, 1))
    return out
