"""Claim check for *WGFormer: An SE(3)-Transformer Driven by Wasserstein Gradient Flows for Molecular
Ground-State Conformation Prediction* (Wang, Cheng, Xu, ICML 2025, https://arxiv.org/abs/2410.09795).

The paper's headline (Performance table of the official README; QM9 and Molecule3D test splits):
WGFormer refines RDKit conformers into ground-state conformations with lower D-MAE, D-RMSE and C-RMSD
than ConfOpt, GTMGC, EGNN and the SE(3)-Transformer; its attention (tied QK, ``-W Wᵀ`` values,
Sinkhorn normalisation) is what the paper credits. Offline there is no DFT, so the check asks the same
question of a force-field stand-in whose correction is systematic and learnable: molecules from
RDKit's NCI list (<= 9 heavy atoms at small, hydrogens added), input = a raw ETKDG conformer, target =
the MMFF94 minimum reached from that same conformer (``target_mode="mmff_from_input"``; bond lengths,
angles and local relaxation, the kind of correction RDKit -> DFT mostly is). Random split 70/10/20
(``split_mode="random"``, the protocol of the paper's QM9 and Molecule3D-random benchmarks; the
Bemis-Murcko scaffold split stays available as ``--set split_mode=scaffold``). (The earlier design,
two different MMFF minima of the same molecule, left nothing to learn:
every arm's validation loss stayed at the identity's; it remains available as
``--set target_mode="lowest_mmff" input_mode="mmff_local"``.)

Arms (same tokens, distance featurisation, decoder, loss, optimiser, step budget and lr sweep):
    wgformer        Sinkhorn attention with tied QK and -W Wᵀ values (the paper's layer; official
                    value map and detached column potential, see ``WGFormerConfig``)
    softmax         the same network with standard attention (separate Q, K, V; softmax), equal width
    egnn            E(n)-equivariant GNN (Satorras et al. 2021) on the same inputs
    shared_softmax  optional ablation (``--set arms=...``): tied QK and -W Wᵀ values, softmax
References (never baselines to beat):
    identity        the input conformation itself (also what every untrained model returns: the
                    decoders are zero-initialised)
    mmff            RDKit MMFF94 minimisation from the input: the program that made the targets, so a
                    positive control (C-RMSD ~ 0), with its seconds per molecule beside the models'

Gates (small): every learned arm's best validation loss is at most ``gate_factor`` (0.98) times the
identity's: the arms have learned part of the correction, so comparing them means something (an
untrained arm scores exactly 1.0 x; 2 % is the smallest gain we would call learning).

Criteria (declared before any small-scale number of this design was seen; the smallest effects
re-derived by the declared rule when the split changed, see below). Each is a paired interval
over seeds and test molecules (two-stage bootstrap; per molecule the scores are averaged over its
``n_inputs`` input conformations): the headline, WGFormer's C-RMSD below the softmax transformer's;
then WGFormer's D-MAE below the softmax transformer's (pooled as in ``eval.py``: Σ|D - D̂| / Σ n²), and
C-RMSD and D-MAE below EGNN's. Smallest effects of interest: 5 % of the input conformations' test
error on these data (random split: C-RMSD 0.216 Å, D-MAE 0.163 Å), so 0.011 Å C-RMSD and 0.008 Å
D-MAE (0.009 and 0.007 on the earlier scaffold split); 5 % is a little below the paper's smallest
relative gain over its best competitor (7 %, Molecule3D random C-RMSD 0.713 -> 0.664 over GTMGC).

Learning rate: every learned arm trains once per lr of ``lrs`` at ``sweep_seed`` and keeps the lr with
the lowest validation loss (keep-best on the validation split as well); the other seeds reuse it.

``medium`` (one GPU, about 30 minutes; ``device="auto"``): 3000 molecules <= 12 heavy atoms,
a WGFormer-small (6 x 128, 16 heads) and its softmax twin, EGNN 4 x 128, 6000 steps of batch 32.

Deviations from the paper, forced by a few minutes on 2 CPU cores: MMFF targets instead of DFT, a few
hundred small molecules, 3-layer d = 32 models (paper: 30 x 512, 64 heads), 800 AdamW steps with
warm-up + cosine (about 29 passes over the molecules; paper: Adam, polynomial decay, 500 epochs), EGNN
of 3 layers and width 32, no dropout, the
decoder's last layer zero-initialised (every arm starts from the identity map), Sinkhorn marginals
over valid tokens, the decoder's padded pairs zeroed.

Changed after seeing run 20261205T172420132429Z-fcd2ed (scaffold split, 600 steps: inconclusive, the
gate ``wgformer_learns`` failed at 0.733 against a bar of 0.709), because its split was wrong for these
data, whatever the arms score: the NCI molecules with <= 9 heavy atoms are 60 % acyclic, the scaffold
split puts every acyclic molecule (one scaffold, the empty one) into train, so 381 of the 441 training
molecules were chains and none of the validation or test molecules were; the identity's loss was 1.50
on train and 0.72 on validation. The gates then measured transfer from chains to ring systems, not
learning of the correction (on that split WGFormer's training loss fell while its validation loss rose
above the input's from step 120 on, at every lr tried: 3e-4, 1e-3, 3e-3). The split is now random, as
in QM9 and Molecule3D-random. In single-seed explorations on the random split (seed 0, not the
check) WGFormer's validation loss relative to the input's was 0.976 (lr 1e-3) and 0.975 (3e-3) after
600 steps, still falling, and 0.971 after 800; softmax 0.966 after 600. So ``steps`` went from 600 to
800 (the small budget holds 800, about 5.5 minutes alone). Criteria, gate factor and lr grid are as
declared before; the smallest effects follow the declared rule (5 % of the inputs' test error) on the
new test split, computed from the inputs alone before any arm's test score on it was seen: 0.011 Å
C-RMSD and 0.008 Å D-MAE (were 0.009 and 0.007).

Outcome at small (3 seeds, random split, 800 steps; run 20261206T004947154783Z-7b2d56, 972 s at a
load average of 18-24 on the 2 shared cores, about 4 CPU-minutes): not reproduced. Every gate passes
(best validation loss over the input's 1.366: WGFormer 1.330, softmax 1.303, EGNN 1.265; bar 1.339).
The headline interval, WGFormer minus softmax C-RMSD, is [+0.0020, +0.0033] Å: above zero, WGFormer is
worse. D-MAE against softmax [+0.0029, +0.0055] Å; against EGNN C-RMSD [+0.0024, +0.0044], D-MAE
[+0.0065, +0.0096] Å. The run judged with the old smallest effects (0.009, 0.007 Å; the module was
loaded before they were re-derived); every interval lies above zero, so 0.011 and 0.008 give the same
outcomes. lr picked: WGFormer 1e-3 (3e-3 within 0.1 %), softmax and EGNN 3e-3.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from icml25.core.check import ClaimCheck, NeedsResource, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.tuning import best_on_validation
from icml25.core.validate import check_fields
from icml25.nn.params import count_parameters
from icml25.nn.train import FitConfig

from .data import (
    INPUT_MODES,
    SPLIT_MODES,
    TARGET_MODES,
    ConformerRecord,
    ConformerTensors,
    build_conformer_dataset,
    collate,
    nci_smiles,
    split_indices,
)
from .egnn import EGNN, EGNNConfig
from .metrics import mmff_refine, per_molecule_errors
from .model import WGFormer, WGFormerConfig, WGFormerOutput, pairwise_distances, sinkhorn
from .training import predict, train_model, validation_loss

LEARNED = ("wgformer", "softmax", "shared_softmax", "egnn")
REFERENCES = ("identity", "mmff")
ARMS = (*LEARNED, *REFERENCES)
_KIND = {"wgformer": "sinkhorn", "softmax": "softmax", "shared_softmax": "shared_softmax"}
#: smallest effects of interest (Å): 5 % of the input conformations' test C-RMSD (0.216) and D-MAE
#: (0.163) on the random split (the declared rule; on the earlier scaffold split 0.009 and 0.007)
CRMSD_EFFECT = 0.011
DMAE_EFFECT = 0.008
EFFECT_SOURCE = (
    "declared: 5 % of the input conformations' test error on these data (random split: C-RMSD 0.216 Å, "
    "D-MAE 0.163 Å, measured before any arm's test score on this split was seen), a little below the "
    "paper's smallest relative gain over its "
    "best competitor (7 %, Molecule3D random C-RMSD 0.713 -> 0.664)"
)


@dataclass(frozen=True)
class WGFormerCheckConfig:
    """Data, models, training and thresholds of one check run."""

    max_heavy: int = 9
    n_molecules: int = 640
    k_target: int = 10
    n_inputs: int = 4
    input_mode: str = "raw"
    target_mode: str = "mmff_from_input"
    data_seed: int = 0
    split: tuple[float, float, float] = (0.7, 0.1, 0.2)
    split_mode: str = "random"
    model: WGFormerConfig = WGFormerConfig(dim=32, layers=3, heads=4, ffn=128, n_gauss=32, dropout=0.0)
    egnn: EGNNConfig = EGNNConfig(hidden=32, layers=3)
    steps: int = 800
    batch_size: int = 16
    lrs: tuple[float, ...] = (1e-3, 3e-3)
    warmup_frac: float = 0.06
    grad_clip: float = 1.0
    evals: int = 10
    sweep_seed: int = 0
    arms: tuple[str, ...] = ("wgformer", "softmax", "egnn")
    gate_factor: float = 0.98
    device: str = "cpu"
    cache: bool = True

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=("max_heavy", "n_molecules", "k_target", "n_inputs", "steps", "batch_size", "evals"),
            non_negative_int=("data_seed", "sweep_seed"),
            positive=("gate_factor",),
            non_negative=("grad_clip",),
            probability=("warmup_frac",),
        )
        if not self.lrs or any(not (lr > 0) for lr in self.lrs):
            raise ValueError(
                f"WGFormerCheckConfig.lrs must be a non-empty tuple of positive numbers, got {self.lrs}"
            )
        unknown = set(self.arms) - set(LEARNED)
        if unknown or "wgformer" not in self.arms:
            raise ValueError(f"WGFormerCheckConfig.arms must include 'wgformer' and be a subset of {LEARNED}")
        if self.input_mode not in INPUT_MODES or self.target_mode not in TARGET_MODES:
            raise ValueError(
                f"WGFormerCheckConfig: input_mode must be one of {INPUT_MODES} and target_mode one of "
                f"{TARGET_MODES}, got {self.input_mode!r}, {self.target_mode!r}"
            )
        if self.split_mode not in SPLIT_MODES:
            raise ValueError(
                f"WGFormerCheckConfig.split_mode must be one of {SPLIT_MODES}, got {self.split_mode!r}"
            )
        if self.device not in ("cpu", "cuda", "auto"):
            raise ValueError(
                f"WGFormerCheckConfig.device must be 'cpu', 'cuda' or 'auto', got {self.device!r}"
            )
        if self.target_mode == "mmff_from_input" and self.input_mode != "raw":
            raise ValueError("WGFormerCheckConfig: target_mode='mmff_from_input' needs input_mode='raw'")

    def fit_config(self, lr: float) -> FitConfig:
        return FitConfig(
            steps=self.steps,
            batch_size=self.batch_size,
            lr=lr,
            warmup_steps=int(self.warmup_frac * self.steps),
            betas=(0.9, 0.99),
            grad_clip=self.grad_clip,
            eval_every=max(1, self.steps // self.evals),
            sampling="shuffle_drop_last",
        )


# ----------------------------------------------------------------------------------------------
# Data (cached as .npz under $ICML25_CACHE/wgformer, keyed by the settings; never pickle)
# ----------------------------------------------------------------------------------------------


def _cache_dir() -> Path:
    root = os.environ.get("ICML25_CACHE")
    return (Path(root).expanduser() if root else Path.home() / ".cache" / "icml25") / "wgformer"


def _data_key(config: WGFormerCheckConfig) -> str:
    import rdkit

    key = dict(
        max_heavy=config.max_heavy,
        n=config.n_molecules,
        k=config.k_target,
        inputs=config.n_inputs,
        mode=config.input_mode,
        target=config.target_mode,
        seed=config.data_seed,
        rdkit=rdkit.__version__,
        v=2,
    )
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def _save(records: Sequence[ConformerRecord], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(
        tmp,
        smiles=np.array([r.smiles for r in records]),
        atoms=np.array([" ".join(r.atoms) for r in records]),
        inputs=np.concatenate([r.input_coords.transpose(1, 0, 2) for r in records]),
        target=np.concatenate([r.targets().transpose(1, 0, 2) for r in records]),
    )
    os.replace(tmp, path)


def _load(path: Path) -> list[ConformerRecord]:
    z = np.load(path, allow_pickle=False)
    out, pos = [], 0
    for smi, atoms in zip(z["smiles"].tolist(), z["atoms"].tolist(), strict=True):
        sym = tuple(atoms.split())
        n = len(sym)
        inp = z["inputs"][pos : pos + n].transpose(1, 0, 2).copy()
        out.append(ConformerRecord(smi, sym, inp, z["target"][pos : pos + n].transpose(1, 0, 2).copy()))
        pos += n
    return out


def load_records(config: WGFormerCheckConfig) -> list[ConformerRecord]:
    """The check's molecules (from the cache when present)."""
    path = _cache_dir() / f"{_data_key(config)}.npz"
    if config.cache and path.exists():
        return _load(path)
    records = build_conformer_dataset(
        nci_smiles(config.max_heavy),
        n_molecules=config.n_molecules,
        k_target=config.k_target,
        n_inputs=config.n_inputs,
        input_mode=config.input_mode,
        target_mode=config.target_mode,
        seed=config.data_seed,
    )
    if config.cache:
        _save(records, path)
    return records


# ----------------------------------------------------------------------------------------------
# Models, training with the lr sweep
# ----------------------------------------------------------------------------------------------


class InputConformer(nn.Module):
    """The identity reference: returns the input conformation (what every untrained arm returns)."""

    def forward(self, tokens: Tensor, coords: Tensor, atom_mask: Tensor) -> WGFormerOutput:
        x = coords * atom_mask.unsqueeze(-1).to(coords.dtype)
        return WGFormerOutput(coords=x, distances=pairwise_distances(x))


def resolve_device(config: WGFormerCheckConfig) -> torch.device:
    """``config.device`` as a torch device (``"auto"``: CUDA when present); a missing GPU is a resource."""
    if config.device == "cpu" or (config.device == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise NeedsResource("gpu", "WGFormerCheckConfig.device='cuda' but torch sees no CUDA device")
    return torch.device("cuda")


def build_model(config: WGFormerCheckConfig, arm: str, seed: int) -> nn.Module:
    """The learned ``arm``, initialised from ``seed`` (on CPU), on the config's device."""
    torch.manual_seed(seed)
    if arm == "egnn":
        model: nn.Module = EGNN(config.egnn)
    else:
        model = WGFormer(dataclasses.replace(config.model, attention=_KIND[arm]))  # type: ignore[arg-type]
    return model.to(resolve_device(config))


@dataclass
class _Trained:
    model: nn.Module
    lr: float
    val_loss: float
    losses: tuple[float, ...]
    seconds: float


# (config, arm) -> (chosen run, val loss per lr); holds only the latest config's sweep
_SWEEP: dict[tuple[WGFormerCheckConfig, str], tuple[_Trained, dict[float, float]]] = {}


def _train(
    config: WGFormerCheckConfig,
    arm: str,
    lr: float,
    seed: int,
    data: dict[str, ConformerTensors],
    ctx: RunContext,
) -> _Trained:
    model = build_model(config, arm, seed)

    def report(done: int, total: int) -> None:
        ctx.progress(f"train {arm} lr={lr:g}", done, total)

    hist = train_model(
        model, data["train"], config.fit_config(lr), seed=seed, valid=data["valid"], progress=report
    )
    return _Trained(model, lr, hist.best_value, hist.train_loss, hist.seconds)


def _sweep(
    config: WGFormerCheckConfig, arm: str, data: dict[str, ConformerTensors], ctx: RunContext
) -> tuple[_Trained, dict[float, float]]:
    key = (config, arm)
    if key not in _SWEEP:
        for k in [k for k in _SWEEP if k[0] != config]:
            del _SWEEP[k]
        runs = [_train(config, arm, lr, config.sweep_seed, data, ctx) for lr in config.lrs]
        by_lr = {r.lr: r for r in runs}
        best = by_lr[best_on_validation(by_lr, lambda r: r.val_loss)]
        _SWEEP[key] = (best, {r.lr: r.val_loss for r in runs})
    return _SWEEP[key]


def test_items(
    records: Sequence[ConformerRecord], data: ConformerTensors, model: nn.Module | None
) -> dict[str, np.ndarray]:
    """Per test molecule, over all its input conformations: ``c_rmsd`` (mean) and ``d_abs`` (summed rows
    Σ|D - D̂|, Σ(D - D̂)², n²). ``model=None`` scores the inputs themselves."""
    k = records[0].n_inputs
    crmsd = np.zeros(len(records))
    rows = np.zeros((len(records), 3))
    for c in range(k):
        preds = [r.input_coords[c] for r in records] if model is None else predict(model, data, conformer=c)
        per = per_molecule_errors(records, preds, c)
        crmsd += per["c_rmsd"] / k
        rows += per["d_abs"]
    return {"c_rmsd": crmsd, "d_mae": rows}


def _pooled_dmae(rows: np.ndarray) -> float:
    return float(rows[:, 0].sum() / rows[:, 2].sum())


def _summary(items: dict[str, np.ndarray]) -> dict[str, float]:
    """The item statistics (C-RMSD: mean over molecules; D-MAE, D-RMSE pooled as in ``eval.py``)."""
    rows = items["d_mae"]
    return {
        "c_rmsd": float(items["c_rmsd"].mean()),
        "d_mae": _pooled_dmae(rows),
        "d_rmse": float(np.sqrt(rows[:, 1].sum() / rows[:, 2].sum())),
    }


# ----------------------------------------------------------------------------------------------
# Smoke measurements (tiny criteria): equivariance and Sinkhorn marginals
# ----------------------------------------------------------------------------------------------


def _random_rotation(gen: torch.Generator) -> torch.Tensor:
    q, r = torch.linalg.qr(torch.randn(3, 3, generator=gen, dtype=torch.float64))
    q = q * torch.sign(torch.diagonal(r))
    if torch.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


@torch.no_grad()
def smoke_measures(model: nn.Module, data: ConformerTensors, seed: int) -> dict[str, float]:
    """SE(3) equivariance error (float32) and Sinkhorn row/column errors on real logits."""
    gen = torch.Generator().manual_seed(seed)
    idx = torch.arange(min(4, len(data)))
    dev = next(model.parameters()).device
    tokens, x, _, mask = (t.to(dev) for t in data.index(idx))
    rot = _random_rotation(gen).float().to(dev)
    shift = (torch.randn(1, 1, 3, generator=gen) * 5.0).to(dev)
    model.eval()
    y = model(tokens, x, mask).coords
    y2 = model(tokens, x @ rot.T + shift, mask).coords
    atom = mask.unsqueeze(-1)
    err = float(((y @ rot.T + shift - y2) * atom).abs().max())
    valid = (tokens != 0).cpu()
    logits = torch.randn(len(idx), 2, tokens.shape[1], tokens.shape[1], generator=gen)
    p = sinkhorn(logits, valid, n_iter=3)
    row = float((p.sum(-1) - valid[:, None].float()).abs().max())
    col = float((sinkhorn(logits, valid, n_iter=51).sum(-2) - valid[:, None].float()).abs().max())
    return {"equivariance_err": err, "sinkhorn_row_err": row, "sinkhorn_col_err_51": col}


# ----------------------------------------------------------------------------------------------
# Claim
# ----------------------------------------------------------------------------------------------


def _paired(name: str, other: str, metric: str, effect: float, what: str) -> Criterion:
    return Criterion(
        name,
        arm="wgformer",
        metric=metric,
        op="<",
        other_arm=other,
        smallest_effect=effect,
        effect_source=EFFECT_SOURCE,
        description=f"WGFormer's {what}, paired over seeds and test molecules",
    )


def _criteria() -> tuple[Criterion, ...]:
    return (
        _paired(
            "beats_softmax_crmsd",
            "softmax",
            "c_rmsd",
            CRMSD_EFFECT,
            "C-RMSD is below the softmax transformer's",
        ),
        _paired(
            "beats_softmax_dmae", "softmax", "d_mae", DMAE_EFFECT, "D-MAE is below the softmax transformer's"
        ),
        _paired("beats_egnn_crmsd", "egnn", "c_rmsd", CRMSD_EFFECT, "C-RMSD is below EGNN's"),
        _paired("beats_egnn_dmae", "egnn", "d_mae", DMAE_EFFECT, "D-MAE is below EGNN's"),
        Criterion(
            "tiny_equivariant",
            arm="wgformer",
            metric="equivariance_err",
            op="<",
            threshold=1e-3,
            scales=("tiny",),
            description="rotating and translating the input moves the prediction the same way (float32, Å)",
        ),
        Criterion(
            "tiny_sinkhorn_rows",
            arm="wgformer",
            metric="sinkhorn_row_err",
            op="<",
            threshold=1e-5,
            scales=("tiny",),
            description="Sinkhorn attention rows sum to 1 over valid tokens",
        ),
        Criterion(
            "tiny_learns",
            arm="wgformer",
            metric="loss_ratio",
            op="<",
            threshold=1.0,
            scales=("tiny",),
            description="the trained model's training-set loss is below the untrained model's",
        ),
    )


def _gates(arms: Sequence[str], factor: float) -> tuple[Criterion, ...]:
    return tuple(
        Criterion(
            f"{arm}_learns",
            arm=arm,
            metric="val_loss",
            op="<=",
            other_arm="identity",
            factor=factor,
            description=(
                f"{arm}'s best validation loss is at most {factor:g} x the input conformation's (the "
                "arm has learned the correction)"
            ),
        )
        for arm in arms
    )


CLAIM = Claim(
    statement=(
        "Refining low-quality conformers, WGFormer (Sinkhorn attention with tied QK and -WWᵀ values) gets "
        "lower C-RMSD and D-MAE than the same network with softmax attention and than EGNN."
    ),
    source="Performance table (official README) and Sec. 4 (QM9, Molecule3D; EGNN and ablations)",
    ours="wgformer",
    baselines=("softmax", "egnn", "shared_softmax"),
    references=REFERENCES,
    controls=("mmff",),
    criteria=_criteria(),
    gates=_gates(("wgformer", "softmax", "egnn"), 0.98),
    headline="beats_softmax_crmsd",
    min_seeds=3,
    timed_metrics=("seconds_per_mol", "train_seconds"),
    setup_notes=(
        "MMFF94 targets instead of DFT: input = a raw ETKDG conformer, target = the MMFF94 minimum reached "
        "from it; 640 NCI molecules <= 9 heavy atoms, random split 70/10/20; 3-layer d=32 transformers "
        "(paper 30 x 512) and a 3-layer width-32 EGNN; 800 AdamW steps of batch 16 with the same 2-value lr "
        "sweep on validation loss for every learned arm; test scores averaged over 4 inputs per molecule."
    ),
)


class WGFormerCheck(ClaimCheck[WGFormerCheckConfig]):
    slug = "wgformer"
    claim = CLAIM
    presets = {
        "tiny": WGFormerCheckConfig(
            max_heavy=9,
            n_molecules=16,
            k_target=3,
            n_inputs=2,
            split=(0.6, 0.2, 0.2),
            model=WGFormerConfig(dim=16, layers=2, heads=2, ffn=32, n_gauss=8, dropout=0.0),
            egnn=EGNNConfig(hidden=16, layers=2),
            steps=40,
            batch_size=8,
            lrs=(3e-3,),
            evals=1,
        ),
        "small": WGFormerCheckConfig(),
        # one GPU, about 30 minutes: a WGFormer-small (6 x 128, 16 heads) on ~3000 molecules
        "medium": WGFormerCheckConfig(
            max_heavy=12,
            n_molecules=3000,
            split=(0.8, 0.1, 0.1),
            model=WGFormerConfig(dim=128, layers=6, heads=16, ffn=512, n_gauss=64, dropout=0.1),
            egnn=EGNNConfig(hidden=128, layers=4),
            steps=6000,
            batch_size=32,
            lrs=(3e-4, 1e-3),
            evals=20,
            device="auto",
        ),
        "full": WGFormerCheckConfig(
            max_heavy=20,
            n_molecules=3000,
            n_inputs=11,
            split=(0.8, 0.1, 0.1),
            model=WGFormerConfig(),
            egnn=EGNNConfig(hidden=128, layers=4),
            steps=50_000,
            batch_size=32,
            lrs=(2e-5, 1e-4),
            evals=50,
            device="auto",
        ),
    }
    default_seeds = {"tiny": 1, "small": 3, "medium": 3, "full": 3}
    item_statistics = {"d_mae": _pooled_dmae}

    def claim_for(self, config: WGFormerCheckConfig) -> Claim:
        """Absent arms lose their criteria, gates and baseline slot; the gates follow ``gate_factor``."""
        learned = [a for a in ("wgformer", "softmax", "egnn", "shared_softmax") if a in config.arms]
        crit = tuple(c for c in _criteria() if c.other_arm is None or c.other_arm in config.arms)
        names = {c.name for c in crit}
        return dataclasses.replace(
            CLAIM,
            baselines=tuple(a for a in CLAIM.baselines if a in config.arms),
            criteria=crit,
            gates=_gates(learned, config.gate_factor),
            headline=CLAIM.headline if CLAIM.headline in names else None,
        )

    def begin_run(self, config: WGFormerCheckConfig) -> None:
        _SWEEP.clear()

    def run_seed(self, config: WGFormerCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        # molecules are ~20 tokens: one thread beats several here (thread overhead dominates), so
        # every arm trains single-threaded; the caller's setting is restored afterwards
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return self._run_seed(config, seed, ctx)
        finally:
            torch.set_num_threads(threads)

    def _run_seed(self, config: WGFormerCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        ctx.progress("data", 0, 1)
        records = load_records(config)
        tr, va, te = split_indices(records, config.split, config.split_mode, seed=config.data_seed)
        if not (tr and va and te):
            raise ValueError(
                f"{config.split_mode} split left an empty part "
                f"(train {len(tr)}, valid {len(va)}, test {len(te)})"
            )
        test_recs = [records[i] for i in te]
        data = {
            "train": collate([records[i] for i in tr]),
            "valid": collate([records[i] for i in va]),
            "test": collate(test_recs),
        }
        ctx.progress("data", 1, 1)
        metrics: dict[str, dict[str, float]] = {}
        items: dict[str, dict[str, np.ndarray]] = {}
        series: dict[str, Any] = {"n_train": len(tr), "n_valid": len(va), "n_test": len(te)}

        items["identity"] = test_items(test_recs, data["test"], None)
        metrics["identity"] = {
            **_summary(items["identity"]),
            "val_loss": validation_loss(InputConformer(), data["valid"]),
        }
        mmff_preds, seconds = [], 0.0
        for c in range(test_recs[0].n_inputs):
            preds, s = mmff_refine(test_recs, conformer=c)
            mmff_preds.append(preds)
            seconds += s / test_recs[0].n_inputs
        rows = [per_molecule_errors(test_recs, p, c) for c, p in enumerate(mmff_preds)]
        items["mmff"] = {
            "c_rmsd": np.mean([r["c_rmsd"] for r in rows], axis=0),
            "d_mae": np.sum([r["d_abs"] for r in rows], axis=0),
        }
        metrics["mmff"] = {**_summary(items["mmff"]), "seconds_per_mol": seconds}

        for arm in config.arms:
            chosen, sweep = _sweep(config, arm, data, ctx)
            run = chosen if seed == config.sweep_seed else _train(config, arm, chosen.lr, seed, data, ctx)
            start = time.perf_counter()
            predict(run.model, data["test"])
            per_mol = (time.perf_counter() - start) / len(test_recs)
            items[arm] = test_items(test_recs, data["test"], run.model)
            m = {
                **_summary(items[arm]),
                "seconds_per_mol": per_mol,
                "train_seconds": run.seconds,
                "lr": run.lr,
                "val_loss": run.val_loss,
                "params": float(count_parameters(run.model)),
                "loss_ratio": validation_loss(run.model, data["train"])
                / validation_loss(build_model(config, arm, seed), data["train"]),
            }
            metrics[arm] = m
            series[arm] = {
                "losses": [round(v, 5) for v in run.losses],
                "sweep": {f"{lr:g}": v for lr, v in sweep.items()},
            }
            if arm == "wgformer":
                m.update(smoke_measures(run.model, data["test"], seed))
        return SeedOutcome(metrics=metrics, series=series, items=items)

    def make_figures(
        self, config: WGFormerCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext
    ) -> None:
        from icml25.core.plotting import arm_color, new_figure

        arms = [a for a in ARMS if a in outcomes[0].metrics]
        shown = [a for a in arms if a != "identity"]
        others = [a for a in arms if a != "wgformer"]
        fig, axes = new_figure(ncols=3, width=3.4)
        for ax, metric, label in zip(
            axes, ("c_rmsd", "d_mae", "d_rmse"), ("C-RMSD", "D-MAE", "D-RMSE"), strict=True
        ):
            for i, arm in enumerate(shown):  # relative to the input conformation: < 0 is an improvement
                vals = [o.metrics[arm][metric] - o.metrics["identity"][metric] for o in outcomes]
                ax.bar(i, float(np.mean(vals)), color=arm_color(arm, "wgformer", others), alpha=0.7)
                ax.scatter([i] * len(vals), vals, color="k", s=10, zorder=3)
            ax.axhline(0.0, color="k", lw=0.8)
            base = float(np.mean([o.metrics["identity"][metric] for o in outcomes]))
            ax.set_xticks(range(len(shown)), shown, rotation=45, ha="right")
            ax.set(ylabel=f"{label} minus input's (Å)", title=f"{label} (input {base:.3f} Å)")
        ctx.save_figure(
            fig,
            "test_metrics",
            "Test-split C-RMSD, D-MAE and D-RMSE of each arm minus those of the input conformation "
            "(below 0: better than the input; bars: mean over seeds, dots: seeds; mmff made the targets). "
            f"Targets: {config.target_mode}; inputs: {config.input_mode} ETKDG conformers.",
        )
        fig, ax = new_figure(width=5.0)
        for arm in [a for a in arms if a in LEARNED]:
            losses = np.asarray(outcomes[0].series[arm]["losses"])
            w = max(1, len(losses) // 25)
            smooth = np.convolve(losses, np.ones(w) / w, mode="valid")
            ax.plot(smooth, label=arm, color=arm_color(arm, "wgformer", [a for a in arms if a != "wgformer"]))
        ax.set(
            xlabel="optimiser step",
            ylabel="training loss (8 L1(D) + MSE(x))",
            title="training loss, first seed",
        )
        ax.legend()
        ctx.save_figure(
            fig, "training_loss", "Training loss of the learned arms (first seed, moving average)."
        )


CHECK = WGFormerCheck()
