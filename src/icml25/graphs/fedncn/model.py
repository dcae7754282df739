"""The local model of FedNCN-style clustering: a 4-layer GCN encoder, a feature decoder and DEC.

Paper: *Federated Node-Level Clustering Network with Cross-Subgraph Link Mending* (ICML 2025,
https://openreview.net/forum?id=38Nh0TebXZ).

Notation: ``n`` nodes, ``d`` input features, ``d'`` embedding width (the last of ``dims``), ``K``
clusters. The paper (Liu et al., ICML 2025) uses the same 4-layer GNN, widths 500-500-2000-10, on the
clients and as the server's generator, with Z^(l) = sigma(A_hat Z^(l-1) W^(l)) (Sec. 3, client model
learning) and the generator trained with a feature-reconstruction MSE plus the DEC loss KL(P||Q).
We give every arm (FedNCN, FedAvg, FedProx, local-only, centralised) this one model and objective:
``L = MSE(X_hat, X) + gamma * KL(P || Q)``, with Student-t soft assignments Q to the current centres
and the sharpened target P of DEC (Xie et al., 2016), so the arms differ only in what is federated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from icml25.core.validate import check_fields, check_finite_tensor, check_positive

__all__ = [
    "GCNAutoencoder",
    "LocalTrainConfig",
    "normalized_adjacency",
    "student_t_assignment",
    "target_distribution",
    "train_local",
    "kmeans",
]


def normalized_adjacency(edge_index: Tensor, num_nodes: int, edge_weight: Tensor | None = None) -> Tensor:
    """``A_hat = D^{-1/2} (A + I) D^{-1/2}`` as a sparse COO tensor ``[n, n]`` (GCN propagation).

    Args:
        edge_index: ``[2, m]`` int64 (both directions of an undirected edge listed).
        num_nodes: ``n``.
        edge_weight: optional ``[m]`` non-negative weights (default 1).
    """
    check_positive("num_nodes", num_nodes, integer=True)
    if not isinstance(edge_index, Tensor) or edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"edge_index must be a [2, m] tensor, got {getattr(edge_index, 'shape', None)}")
    if edge_index.dtype != torch.long:
        raise TypeError(f"edge_index must be int64, got {edge_index.dtype}")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        raise ValueError(f"edge_index must hold node ids in [0, {num_nodes})")
    w = torch.ones(edge_index.shape[1]) if edge_weight is None else edge_weight.float()
    if w.shape != (edge_index.shape[1],):
        raise ValueError(f"edge_weight must have shape [{edge_index.shape[1]}], got {tuple(w.shape)}")
    loops = torch.arange(num_nodes)
    idx = torch.cat([edge_index, torch.stack([loops, loops])], 1)
    val = torch.cat([w, torch.ones(num_nodes)])
    deg = torch.zeros(num_nodes).index_add_(0, idx[0], val)
    inv = deg.pow(-0.5)
    val = inv[idx[0]] * val * inv[idx[1]]
    return torch.sparse_coo_tensor(idx, val, (num_nodes, num_nodes)).coalesce()


INITS = ("glorot", "torch")


class GCNAutoencoder(nn.Module):
    """GCN encoder (``len(dims)`` layers, ReLU between) and a mirrored MLP decoder of node features.

    Args:
        in_dim: ``d``.
        dims: encoder widths; the paper's are (500, 500, 2000, 10), the last being ``d'``.
        init: ``"glorot"`` (default): every weight Glorot/Xavier-uniform, every bias 0, the
            initialisation of GCN layers (Kipf & Welling, 2017; PyG's ``GCNConv``; SDCN's GNN layer)
            and of DEC's autoencoder (Keras ``Dense`` defaults in DEC's reference code);
            ``"torch"``: PyTorch's ``nn.Linear`` default (Kaiming-uniform with a = sqrt(5), uniform
            bias), which this implementation used before: its weights have about a quarter of
            Glorot's variance, so the 8-layer encoder/decoder starts near zero output and its
            reconstruction pre-training stalls for several rounds.
    """

    def __init__(self, in_dim: int, dims: Sequence[int] = (500, 500, 2000, 10), init: str = "glorot") -> None:
        super().__init__()
        check_positive("in_dim", in_dim, integer=True)
        if not dims:
            raise ValueError("dims must hold at least one width")
        for i, w in enumerate(dims):
            check_positive(f"dims[{i}]", w, integer=True)
        if init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {init!r}")
        widths = [in_dim, *dims]
        self.in_dim = in_dim
        self.enc = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:], strict=True))
        back = widths[::-1]
        self.dec = nn.ModuleList(nn.Linear(a, b) for a, b in zip(back[:-1], back[1:], strict=True))
        if init == "glorot":
            for lin in [*self.enc, *self.dec]:
                nn.init.xavier_uniform_(lin.weight)
                nn.init.zeros_(lin.bias)

    def _check(self, x: Tensor) -> None:
        check_finite_tensor("x", x, ndim=2, floating=True)
        if x.shape[1] != self.in_dim:
            raise ValueError(f"x must have {self.in_dim} features (columns), got shape {tuple(x.shape)}")

    def encode(self, x: Tensor, adj: Tensor) -> Tensor:
        """``Z = A_hat relu(... A_hat X W1 ...) W_L``: ``[n, d] -> [n, d']``."""
        self._check(x)
        if adj.shape != (x.shape[0], x.shape[0]):
            raise ValueError(f"adj must have shape [{x.shape[0]}, {x.shape[0]}], got {tuple(adj.shape)}")
        h = x
        for i, lin in enumerate(self.enc):
            h = torch.sparse.mm(adj, lin(h))  # A_hat H W (+ bias, propagated)
            if i < len(self.enc) - 1:
                h = torch.relu(h)
        return h

    def decode(self, z: Tensor) -> Tensor:
        """``[n, d'] -> [n, d]`` feature reconstruction (node-wise MLP)."""
        h = z
        for i, lin in enumerate(self.dec):
            h = lin(h)
            if i < len(self.dec) - 1:
                h = torch.relu(h)
        return h


def student_t_assignment(z: Tensor, centers: Tensor, alpha: float = 1.0) -> Tensor:
    """DEC soft assignment ``q_ik ∝ (1 + ||z_i - mu_k||^2 / alpha)^(-(alpha+1)/2)`` (rows sum to 1).

    Args:
        z: ``[n, d']`` embeddings; centers: ``[K, d']``; alpha: Student-t degrees of freedom.
    """
    if z.ndim != 2 or centers.ndim != 2 or z.shape[1] != centers.shape[1]:
        raise ValueError(
            f"z [n, d'] and centers [K, d'] must agree, got {tuple(z.shape)}, {tuple(centers.shape)}"
        )
    d2 = torch.cdist(z, centers).pow(2)
    q = (1.0 + d2 / alpha).pow(-(alpha + 1) / 2)
    return q / q.sum(1, keepdim=True)


def target_distribution(q: Tensor) -> Tensor:
    """DEC target ``p_ik ∝ q_ik^2 / f_k`` with cluster frequency ``f_k = sum_i q_ik``; rows sum to 1."""
    w = q.pow(2) / q.sum(0, keepdim=True)
    return w / w.sum(1, keepdim=True)


def kmeans(
    z: Tensor | np.ndarray, k: int, *, init: Tensor | np.ndarray | None = None, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """K-means labels ``[n]`` and centres ``[K, d']``; from ``init`` (one run) or k-means++ (10 runs)."""
    from sklearn.cluster import KMeans

    check_positive("k", k, integer=True)
    x = z.detach().cpu().numpy() if isinstance(z, Tensor) else np.asarray(z)
    x = x.astype(np.float64)
    if len(x) < k:
        raise ValueError(f"k-means needs at least k={k} points, got {len(x)}")
    if init is None:
        km = KMeans(k, n_init=10, random_state=seed)
    else:
        c = init.detach().cpu().numpy() if isinstance(init, Tensor) else np.asarray(init)
        km = KMeans(k, init=c.astype(np.float64), n_init=1, random_state=seed)
    labels = km.fit_predict(x)
    return labels.astype(np.int64), km.cluster_centers_.astype(np.float32)


def _link_loss(z: Tensor, edge_index: Tensor, generator: torch.Generator | None) -> Tensor:
    """Graph-autoencoder BCE of ``sigmoid(z_u . z_v)`` on the edges and as many random pairs."""
    import torch.nn.functional as F  # noqa: N812

    src, dst = edge_index
    neg = torch.randint(0, z.shape[0], (2, src.numel()), generator=generator)
    pos_logit = (z[src] * z[dst]).sum(1)
    neg_logit = (z[neg[0]] * z[neg[1]]).sum(1)
    return F.binary_cross_entropy_with_logits(
        torch.cat([pos_logit, neg_logit]),
        torch.cat([torch.ones_like(pos_logit), torch.zeros_like(neg_logit)]),
    )


@dataclass(frozen=True)
class LocalTrainConfig:
    """One local update: full-batch Adam on ``MSE(X_hat, X) + gamma * KL(P||Q) (+ mu/2 ||w - w_g||^2)``.

    Args:
        epochs: full-batch steps per update (the paper: 10 local epochs per round).
        lr: Adam learning rate.
        gamma: weight of the DEC term (0 before centres exist).
        prox_mu: FedProx proximal weight (0 = off).
    """

    epochs: int = 10
    lr: float = 1e-3
    gamma: float = 1.0
    prox_mu: float = 0.0
    adj_weight: float = 0.0

    def __post_init__(self) -> None:
        check_fields(
            self, positive_int=("epochs",), positive=("lr",), non_negative=("gamma", "prox_mu", "adj_weight")
        )


def train_local(
    model: GCNAutoencoder,
    x: Tensor,
    adj: Tensor,
    config: LocalTrainConfig,
    *,
    centers: Tensor | None = None,
    reference: Sequence[Tensor] | None = None,
    edge_index: Tensor | None = None,
    generator: torch.Generator | None = None,
) -> list[float]:
    """Train ``model`` in place for ``config.epochs`` full-batch steps; returns the loss per step.

    Args:
        model: the encoder/decoder.
        x: ``[n, d]`` node features; adj: its ``A_hat`` (:func:`normalized_adjacency`).
        centers: ``[K, d']`` DEC centres (fixed during the update); None trains reconstruction only.
        reference: parameters ``w_g`` of the global model for the FedProx term (same order as
            ``model.parameters()``).
    """
    check_finite_tensor("x", x, ndim=2, floating=True)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    ref = [r.detach() for r in reference] if reference is not None and config.prox_mu > 0 else None
    losses = []
    for _ in range(config.epochs):
        opt.zero_grad()
        z = model.encode(x, adj)
        loss = (model.decode(z) - x).pow(2).sum(1).mean()  # ||X - X_hat||^2 / N
        if config.adj_weight > 0 and edge_index is not None and edge_index.numel():
            loss = loss + config.adj_weight * _link_loss(z, edge_index, generator)
        if centers is not None and config.gamma > 0:
            q = student_t_assignment(z, centers)
            p = target_distribution(q).detach()
            loss = (
                loss
                + config.gamma * (p * (p.clamp_min(1e-12).log() - q.clamp_min(1e-12).log())).sum(1).mean()
            )
        if ref is not None:
            loss = loss + config.prox_mu / 2 * sum(
                (w - r).pow(2).sum() for w, r in zip(model.parameters(), ref, strict=True)
            )
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses
