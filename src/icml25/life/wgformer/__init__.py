"""WGFormer: An SE(3)-Transformer Driven by Wasserstein Gradient Flows for Molecular Ground-State
Conformation Prediction (ICML 2025).

Fanmeng Wang, Minjie Cheng, Hongteng Xu; https://arxiv.org/abs/2410.09795; official code
https://github.com/FanmengWang/WGFormer (Uni-Core based, not a dependency).

Refines a cheap RDKit conformation into a ground-state conformation: an SE(3)-invariant pair
transformer whose attention ties query and key, uses ``-W Wᵀ`` values and Sinkhorn normalisation (each
layer one Wasserstein-gradient-flow step), decoded into an equivariant coordinate update.

Implements: the model and its softmax / shared-QK-softmax variants (``model.py``), the EGNN baseline
(``egnn.py``), the loss with Kabsch alignment and the D-MAE / D-RMSE / C-RMSD metrics plus an MMFF
baseline (``metrics.py``), RDKit data with pseudo ground states, random and scaffold splits (``data.py``),
training (``training.py``) and the claim check (``check.py``).

    from icml25.life.wgformer import WGFormer, WGFormerConfig, build_conformer_dataset, collate
    recs = build_conformer_dataset(["CCO", "c1ccccc1O"])
    batch = collate(recs)
    model = WGFormer(WGFormerConfig(dim=64, layers=4, heads=8, ffn=256, n_gauss=32))
    tokens, coords, target, mask = batch.index(torch.arange(len(batch)))
    out = model(tokens, coords, mask)        # out.coords [b, n, 3], out.distances [b, n, n]
"""

from .data import (
    VOCAB,
    ConformerRecord,
    ConformerTensors,
    build_conformer_dataset,
    collate,
    make_record,
    nci_smiles,
    random_split,
    scaffold_split,
)
from .egnn import EGNN, EGNNConfig
from .metrics import (
    align,
    c_rmsd,
    conformer_loss,
    distance_errors,
    evaluate_predictions,
    kabsch_rotation,
    mmff_refine,
)
from .model import (
    GaussianDistanceBias,
    SinkhornAttention,
    WGFormer,
    WGFormerConfig,
    WGFormerLayer,
    WGFormerOutput,
    equivariant_update,
    pairwise_distances,
    sinkhorn,
)
from .training import predict, train_model, validation_loss

__all__ = [
    "VOCAB",
    "ConformerRecord",
    "ConformerTensors",
    "build_conformer_dataset",
    "collate",
    "make_record",
    "nci_smiles",
    "random_split",
    "scaffold_split",
    "EGNN",
    "EGNNConfig",
    "align",
    "c_rmsd",
    "conformer_loss",
    "distance_errors",
    "evaluate_predictions",
    "kabsch_rotation",
    "mmff_refine",
    "GaussianDistanceBias",
    "SinkhornAttention",
    "WGFormer",
    "WGFormerConfig",
    "WGFormerLayer",
    "WGFormerOutput",
    "equivariant_update",
    "pairwise_distances",
    "sinkhorn",
    "predict",
    "train_model",
    "validation_loss",
]
