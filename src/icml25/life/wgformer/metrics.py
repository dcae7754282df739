"""Loss and metrics of WGFormer (Wang, Cheng, Xu, ICML 2025, https://arxiv.org/abs/2410.09795).

* :func:`kabsch_rotation` / :func:`align` — the optimal rotation of one centred point set onto another
  (Kabsch 1976), batched and masked; the official loss uses ``scipy``'s ``Rotation.align_vectors``.
* :func:`conformer_loss` — the training objective (official ``losses/WGFormer.py``):
  ``8 · L1(D̂, D*) + 1 · MSE(x̂, R x*)`` over real atoms, with the target rotated onto the centred
  prediction (rotation not differentiated).
* :func:`distance_errors`, :func:`c_rmsd` and :func:`evaluate_predictions` — the evaluation of the
  official ``eval.py``: D-MAE = Σ|D - D̂| / Σ n² and D-RMSE = sqrt(Σ(D - D̂)² / Σ n²) over all atoms
  (hydrogens and the diagonal included), C-RMSD = mean of RDKit ``GetBestRMS`` (symmetry-aware) on
  heavy atoms.
* :func:`mmff_refine` — the energy-based baseline: MMFF94 minimisation started from the input.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from icml25.core.validate import check_finite_tensor

from .data import ConformerRecord

__all__ = [
    "kabsch_rotation",
    "align",
    "conformer_loss",
    "distance_errors",
    "c_rmsd",
    "evaluate_predictions",
    "per_molecule_errors",
    "mmff_refine",
]


def kabsch_rotation(p: Tensor, q: Tensor, mask: Tensor | None = None) -> Tensor:
    """Proper rotation ``R`` minimising ``Σ_i ‖R q_i - p_i‖²`` for centred ``p, q`` of shape ``[b, n, 3]``.

    Returns ``[b, 3, 3]``; rows outside ``mask`` (``[b, n]`` bool) are ignored. ``det R = +1``.
    """
    if p.shape != q.shape or p.ndim != 3 or p.shape[-1] != 3:
        raise ValueError(f"p and q must both be [b, n, 3], got {tuple(p.shape)} and {tuple(q.shape)}")
    if mask is not None:
        w = mask.unsqueeze(-1).to(p.dtype)
        p, q = p * w, q * w
    h = q.transpose(-1, -2) @ p  # [b, 3, 3] = Σ q_i p_iᵀ
    u, _, vt = torch.linalg.svd(h)
    d = torch.sign(torch.linalg.det(vt.transpose(-1, -2) @ u.transpose(-1, -2)))
    d = torch.where(d == 0, torch.ones_like(d), d)
    s = torch.diag_embed(torch.stack([torch.ones_like(d), torch.ones_like(d), d], dim=-1))
    return vt.transpose(-1, -2) @ s @ u.transpose(-1, -2)


def align(mobile: Tensor, ref: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """Centre both over ``mask``, rotate ``mobile`` onto ``ref``: ``(mobile', ref')``, masked rows 0."""
    w = mask.unsqueeze(-1).to(ref.dtype)
    cnt = w.sum(-2, keepdim=True).clamp_min(1.0)
    ref_c = (ref - (ref * w).sum(-2, keepdim=True) / cnt) * w
    mob_c = (mobile - (mobile * w).sum(-2, keepdim=True) / cnt) * w
    r = kabsch_rotation(ref_c, mob_c, mask)
    return mob_c @ r.transpose(-1, -2), ref_c


def _pair_mask(mask: Tensor) -> Tensor:
    return mask.unsqueeze(-1) & mask.unsqueeze(-2)


def conformer_loss(
    coords: Tensor,
    distances: Tensor,
    target: Tensor,
    atom_mask: Tensor,
    *,
    w_dist: float = 8.0,
    w_coord: float = 1.0,
) -> Tensor:
    """``w_dist · L1(D̂, D*) + w_coord · MSE(x̂ - mean, R(x* - mean))`` over real atoms.

    Args:
        coords: ``[b, n, 3]`` predictions; distances: ``[b, n, n]`` their distances.
        target: ``[b, n, 3]`` ground-state coordinates; atom_mask: ``[b, n]`` bool real atoms.
    """
    check_finite_tensor("target", target, ndim=3, floating=True)
    if coords.shape != target.shape or distances.shape != coords.shape[:2] + coords.shape[1:2]:
        raise ValueError(
            f"coords {tuple(coords.shape)}, distances {tuple(distances.shape)} and target "
            f"{tuple(target.shape)} disagree"
        )
    from .model import pairwise_distances

    pm = _pair_mask(atom_mask)
    d_star = pairwise_distances(target)
    l_dist = (distances - d_star).abs()[pm].mean()
    w = atom_mask.unsqueeze(-1).to(coords.dtype)
    cnt = w.sum(-2, keepdim=True).clamp_min(1.0)
    pred_c = (coords - (coords * w).sum(-2, keepdim=True) / cnt) * w
    with torch.no_grad():
        tgt_rot, _ = align(target, pred_c.detach(), atom_mask)  # R x*, rotated onto the prediction
    l_coord = (pred_c - tgt_rot).pow(2)[atom_mask].mean()
    return w_dist * l_dist + w_coord * l_coord


def distance_errors(pred: Sequence[np.ndarray], ref: Sequence[np.ndarray]) -> dict[str, float]:
    """D-MAE and D-RMSE accumulated over molecules (official ``eval.py``: Σ over pairs / Σ n²)."""
    if len(pred) != len(ref) or not len(pred):
        raise ValueError(f"pred and ref must be equally long and non-empty, got {len(pred)} and {len(ref)}")
    abs_sum = sq_sum = count = 0.0
    for p, r in zip(pred, ref, strict=True):
        if p.shape != r.shape:
            raise ValueError(f"prediction shape {p.shape} differs from reference {r.shape}")
        dp = np.linalg.norm(p[:, None] - p[None], axis=-1)
        dr = np.linalg.norm(r[:, None] - r[None], axis=-1)
        abs_sum += float(np.abs(dp - dr).sum())
        sq_sum += float(((dp - dr) ** 2).sum())
        count += dp.size
    return {"d_mae": abs_sum / count, "d_rmse": float(np.sqrt(sq_sum / count))}


def _with_conformer(mol, x: np.ndarray):  # type: ignore[no-untyped-def]
    from rdkit import Chem
    from rdkit.Geometry import Point3D

    m = Chem.Mol(mol)
    m.RemoveAllConformers()
    conf = Chem.Conformer(m.GetNumAtoms())
    for i, p in enumerate(np.asarray(x, dtype=np.float64)):
        conf.SetAtomPosition(i, Point3D(float(p[0]), float(p[1]), float(p[2])))
    m.AddConformer(conf, assignId=True)
    return m


def c_rmsd(record: ConformerRecord, pred: np.ndarray, conformer: int = 0) -> float:
    """Symmetry-aware heavy-atom RMSD (RDKit ``GetBestRMS`` after ``RemoveHs``) of ``pred`` to the target
    of input ``conformer``."""
    from rdkit import Chem
    from rdkit.Chem import rdMolAlign

    if pred.shape != (record.n_atoms, 3) or not np.isfinite(pred).all():
        raise ValueError(f"pred must be a finite [{record.n_atoms}, 3] array, got {pred.shape}")
    mol = record.mol()
    prb = Chem.RemoveHs(_with_conformer(mol, pred))
    ref = Chem.RemoveHs(_with_conformer(mol, record.target(conformer)))
    return float(rdMolAlign.GetBestRMS(prb, ref))


def evaluate_predictions(
    records: Sequence[ConformerRecord], preds: Sequence[np.ndarray], conformer: int = 0
) -> dict[str, float]:
    """``{"d_mae", "d_rmse", "c_rmsd"}`` of ``preds`` (one ``[n, 3]`` array per record) against the
    targets of input ``conformer``."""
    out = distance_errors(preds, [r.target(conformer) for r in records])
    out["c_rmsd"] = float(np.mean([c_rmsd(r, p, conformer) for r, p in zip(records, preds, strict=True)]))
    return out


def per_molecule_errors(
    records: Sequence[ConformerRecord], preds: Sequence[np.ndarray], conformer: int = 0
) -> dict[str, np.ndarray]:
    """Per-molecule scores for paired comparisons: ``c_rmsd`` ``[N]`` and ``d_abs`` ``[N, 3]`` rows of
    (Σ|D - D̂|, Σ(D - D̂)², n²), whose column sums give the pooled D-MAE and D-RMSE of ``eval.py``."""
    rows = []
    for r, p in zip(records, preds, strict=True):
        t = r.target(conformer)
        dp = np.linalg.norm(p[:, None] - p[None], axis=-1)
        dt = np.linalg.norm(t[:, None] - t[None], axis=-1)
        rows.append((float(np.abs(dp - dt).sum()), float(((dp - dt) ** 2).sum()), float(dp.size)))
    crmsd = [c_rmsd(r, p, conformer) for r, p in zip(records, preds, strict=True)]
    return {"c_rmsd": np.asarray(crmsd), "d_abs": np.asarray(rows)}


def mmff_refine(
    records: Sequence[ConformerRecord], *, conformer: int = 0, max_iters: int = 1000
) -> tuple[list[np.ndarray], float]:
    """MMFF94 minimisation from each record's input ``conformer``: ``(predictions, seconds/molecule)``."""
    from rdkit.Chem import AllChem

    preds = []
    start = time.perf_counter()
    for r in records:
        mol = _with_conformer(r.mol(), r.input_coords[conformer])
        AllChem.MMFFOptimizeMolecule(mol, maxIters=max_iters)  # type: ignore[attr-defined]
        preds.append(np.asarray(mol.GetConformer().GetPositions(), dtype=np.float64))
    return preds, (time.perf_counter() - start) / max(1, len(records))
