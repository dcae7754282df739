"""Training loops for SLOGAN (Luo et al., ICML 2025, https://arxiv.org/abs/2507.07621) and the baselines it
is compared with (source-only ERM, DANN, self-training).

All four train the same :class:`~icml25.graphs.slogan.model.SLOGAN` network's predictor
(encoder -> causal head -> classifier) with Adam on alternating source/target mini-batches:

    erm            L = CE(source)
    dann           L = CE(source) + CE(D(GRL_lambda(z)), domain), lambda_p = 2 / (1 + exp(-10 p)) - 1
                   (Ganin et al., 2016), p the training progress
    self_training  source warm-up, then L = CE(source) + CE(aug(target), pseudo-label) for target graphs
                   whose confidence reaches a fixed threshold
    slogan         source warm-up, then L = L_sup + gamma L_dis + eta L_inv with
                   L_sup = CE(source) + CE(aug(target), pseudo-label) under category-adaptive thresholds
                   (the paper's overall objective; gamma = 0.003, eta = 0.1)

Pseudo-labels come from the current network on the un-augmented target batch (no gradient); the
pseudo-label loss is taken on an augmented copy (10% of edges dropped, 10% of feature entries
zeroed), identically for self-training and SLOGAN. Adaptive thresholds are refreshed once per epoch
from predictions on the whole target set.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor
from torch_geometric.data import Batch, Data

from icml25.core.validate import check_fields, check_non_negative

from .model import SLOGAN, AdaptiveThreshold, DomainDiscriminator, grad_reverse

__all__ = [
    "METHODS",
    "GraphSet",
    "UDAHistory",
    "UDATrainConfig",
    "augment",
    "evaluate",
    "predict_proba",
    "train_uda",
]

Method = Literal["erm", "dann", "self_training", "slogan"]
METHODS: tuple[str, ...] = ("erm", "dann", "self_training", "slogan")


@dataclass(frozen=True)
class UDATrainConfig:
    """Optimisation settings shared by every method.

    Args:
        epochs: passes over the labelled source set. batch_size: graphs per domain per step.
        lr, weight_decay: Adam settings. warmup_frac: share of epochs trained on the source only by
            the pseudo-labelling methods (the paper warms up on the source first).
        fixed_threshold: self-training's confidence threshold.
        adaptive: SLOGAN's category-adaptive thresholds (False: ``fixed_threshold``, an ablation).
        edge_drop, feature_mask: augmentation rates for the pseudo-label loss.
        dann_weight: scale of DANN's reversed domain loss.
    """

    epochs: int = 60
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 5e-4
    warmup_frac: float = 0.3
    fixed_threshold: float = 0.9
    adaptive: bool = True
    edge_drop: float = 0.1
    feature_mask: float = 0.1
    dann_weight: float = 1.0

    def __post_init__(self) -> None:
        check_fields(self, positive_int=("epochs", "batch_size"), positive=("lr",))
        check_fields(self, non_negative=("weight_decay", "dann_weight"))
        check_fields(self, probability=("warmup_frac", "edge_drop", "feature_mask"))
        check_fields(self, unit_interval=("fixed_threshold",))
        if self.batch_size < 2:
            raise ValueError(f"UDATrainConfig.batch_size must be >= 2, got {self.batch_size}")


@dataclass
class UDAHistory:
    """Per-epoch records of one training run."""

    loss: list[float] = field(default_factory=list)
    pseudo_coverage: list[float] = field(default_factory=list)
    pseudo_accuracy: list[float] = field(default_factory=list)
    thresholds: list[list[float]] = field(default_factory=list)
    seconds: float = 0.0


def _check_graphs(name: str, graphs: Sequence[Data], in_dim: int, *, labelled: bool) -> None:
    if not isinstance(graphs, Sequence) or isinstance(graphs, str):
        raise TypeError(f"{name} must be a sequence of torch_geometric Data, got {type(graphs).__name__}")
    if len(graphs) == 0:
        raise ValueError(f"{name} is empty")
    for g in graphs[:1]:
        if not isinstance(g, Data):
            raise TypeError(f"{name} must hold torch_geometric Data objects, got {type(g).__name__}")
        x = g.x
        if not isinstance(x, Tensor) or not x.is_floating_point():
            raise TypeError(f"{name}[0].x must be a floating-point tensor")
        if x.ndim != 2 or x.shape[1] != in_dim:
            raise ValueError(f"{name}[0].x must have shape (N, {in_dim}), got {tuple(x.shape)}")
        if labelled and getattr(g, "y", None) is None:
            raise ValueError(f"{name} graphs need a label y")
    for g in graphs:
        if not torch.isfinite(g.x).all():
            raise ValueError(f"{name} holds node features with NaN or infinite values")


class GraphSet:
    """A fixed list of graphs stored as concatenated tensors, collated into batches by index.

    :meth:`batch` returns the same ``x``, ``edge_index``, ``y``, ``batch`` and ``ptr`` tensors as
    ``Batch.from_data_list([graphs[i] for i in idx])`` (nodes and edges in the same order, so a model
    gives bit-identical outputs), without a Python loop over graphs; other per-graph attributes are
    not carried. ``y`` is present only when every graph has a label.
    """

    def __init__(self, graphs: Sequence[Data]) -> None:
        if len(graphs) == 0:
            raise ValueError("GraphSet needs at least one graph")
        self.n = len(graphs)
        self.x = torch.cat([g.x for g in graphs])
        n_nodes = torch.tensor([g.x.shape[0] for g in graphs], dtype=torch.long)
        n_edges = torch.tensor([g.edge_index.shape[1] for g in graphs], dtype=torch.long)
        self.node_ptr = torch.cat([torch.zeros(1, dtype=torch.long), n_nodes.cumsum(0)])
        self.edge_ptr = torch.cat([torch.zeros(1, dtype=torch.long), n_edges.cumsum(0)])
        self.n_nodes, self.n_edges = n_nodes, n_edges
        self.edge_index = torch.cat([g.edge_index for g in graphs], dim=1)  # local node numbers
        ys = [y for y in (getattr(g, "y", None) for g in graphs) if y is not None]
        self.y = torch.cat([y.view(-1) for y in ys]) if len(ys) == self.n else None

    def __len__(self) -> int:
        return self.n

    @staticmethod
    def _gather(ptr: Tensor, counts: Tensor, idx: Tensor) -> tuple[Tensor, Tensor]:
        """Positions of the chosen graphs' rows in the stored order, and each row's batch slot."""
        c = counts[idx]
        slot = torch.repeat_interleave(torch.arange(len(idx)), c)
        starts = torch.cumsum(c, 0) - c  # first row of each chosen graph inside the batch
        rows = ptr[idx][slot] + torch.arange(int(c.sum())) - starts[slot]
        return rows, slot

    def batch(self, idx: Sequence[int] | np.ndarray | Tensor) -> Batch:
        """The graphs ``idx`` (in that order) as one :class:`~torch_geometric.data.Batch`."""
        idx_t = torch.as_tensor(np.asarray(idx), dtype=torch.long).view(-1)
        nodes, node_slot = self._gather(self.node_ptr, self.n_nodes, idx_t)
        edges, edge_slot = self._gather(self.edge_ptr, self.n_edges, idx_t)
        c = self.n_nodes[idx_t]
        offsets = torch.cumsum(c, 0) - c
        ptr = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(c, 0)])
        edge_index = self.edge_index[:, edges] + offsets[edge_slot]
        out = Batch(x=self.x[nodes], edge_index=edge_index, batch=node_slot, ptr=ptr)
        if self.y is not None:
            out.y = self.y[idx_t]
        return out

    def chunks(self, batch_size: int) -> list[Batch]:
        """Consecutive batches of ``batch_size`` graphs covering the whole set in order."""
        return [self.batch(range(i, min(i + batch_size, self.n))) for i in range(0, self.n, batch_size)]


def augment(batch: Batch, *, edge_drop: float, feature_mask: float, generator: torch.Generator) -> Batch:
    """A copy of ``batch`` with a share ``edge_drop`` of (directed) edges removed and a share
    ``feature_mask`` of node-feature entries set to zero."""
    out = batch.clone()
    if edge_drop > 0:
        keep = torch.rand(out.edge_index.shape[1], generator=generator) >= edge_drop
        out.edge_index = out.edge_index[:, keep]
    if feature_mask > 0:
        out.x = out.x * (torch.rand(out.x.shape, generator=generator) >= feature_mask).float()
    return out


@torch.no_grad()
def predict_proba(model: SLOGAN, graphs: Sequence[Data], batch_size: int = 256) -> Tensor:
    """(N, K) class probabilities of ``model`` (eval mode) on ``graphs``."""
    _check_graphs("graphs", graphs, model.config.in_dim, labelled=False)
    return _predict_batches(model, GraphSet(graphs).chunks(batch_size))


@torch.no_grad()
def _predict_batches(model: SLOGAN, batches: Sequence[Batch]) -> Tensor:
    was = model.training
    model.eval()
    out = [F.softmax(model(b).logits, dim=-1) for b in batches]
    model.train(was)
    return torch.cat(out)


def evaluate(model: SLOGAN, graphs: Sequence[Data], batch_size: int = 256) -> dict[str, float]:
    """Accuracy and mean confidence of ``model`` on labelled ``graphs``."""
    probs = predict_proba(model, graphs, batch_size)
    y = torch.cat([g.y.view(-1) for g in graphs])
    return {
        "accuracy": float((probs.argmax(1) == y).float().mean()),
        "confidence": float(probs.max(1).values.mean()),
    }


def train_uda(
    model: SLOGAN,
    source: Sequence[Data],
    target: Sequence[Data],
    method: str = "slogan",
    config: UDATrainConfig | None = None,
    *,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> UDAHistory:
    """Train ``model`` in place on labelled ``source`` and unlabelled ``target`` graphs.

    Target labels, if present, are read only for the pseudo-label accuracy diagnostic in the history;
    they never enter a loss.

    Args:
        model: a :class:`SLOGAN` network (every method trains its encoder -> causal -> classifier path).
        source: labelled graphs. target: graphs of the target domain.
        method: one of :data:`METHODS`.
        config: optimisation settings. seed: seeds batching, augmentation and sampling.
        progress: ``progress(epoch, epochs)`` after each epoch.

    Returns:
        the :class:`UDAHistory`; ``model`` is left in eval mode.
    """
    if not isinstance(model, SLOGAN):
        raise TypeError(f"model must be a SLOGAN network, got {type(model).__name__}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    cfg = config or UDATrainConfig()
    if not isinstance(cfg, UDATrainConfig):
        raise TypeError(f"config must be a UDATrainConfig, got {type(cfg).__name__}")
    check_non_negative("seed", seed, integer=True)
    in_dim = model.config.in_dim
    _check_graphs("source", source, in_dim, labelled=True)
    _check_graphs("target", target, in_dim, labelled=False)
    if len(source) < 2 or len(target) < 2:
        raise ValueError("source and target must each hold at least 2 graphs")

    torch.manual_seed(seed)  # reparameterisation noise and dropout inside the model
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    disc = DomainDiscriminator(model.config.hidden) if method == "dann" else None
    params = list(model.parameters()) + (list(disc.parameters()) if disc is not None else [])
    opt = torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    thresholds = AdaptiveThreshold(model.config.n_classes, model.config.tau, model.config.threshold_floor)
    bs = min(cfg.batch_size, len(source), len(target))
    steps_per_epoch = max(1, len(source) // bs)
    total_steps = steps_per_epoch * cfg.epochs
    warmup_epochs = int(math.floor(cfg.warmup_frac * cfg.epochs))
    pseudo = method in ("self_training", "slogan")
    y_tgt = [getattr(g, "y", None) for g in target]
    labelled = [y.view(-1) for y in y_tgt if y is not None]
    y_all = torch.cat(labelled) if labelled else torch.zeros(0, dtype=torch.long)  # diagnostic only
    has_tgt_labels = len(y_all) == len(target)

    hist = UDAHistory()
    start = time.perf_counter()
    # collated once: batches are gathered by index, the whole target set is predicted from fixed chunks
    src_set, tgt_set = GraphSet(source), GraphSet(target)
    tgt_chunks = tgt_set.chunks(256) if pseudo else []
    tgt_order = rng.permutation(len(target))
    tgt_pos = 0
    step = 0
    for epoch in range(cfg.epochs):
        adapting = pseudo and epoch >= warmup_epochs
        if adapting:
            probs = _predict_batches(model, tgt_chunks)
            if method == "slogan" and cfg.adaptive:
                tau_c = thresholds.update(probs)
            else:
                tau_c = torch.full((model.config.n_classes,), cfg.fixed_threshold)
            thresholds.thresholds = tau_c
            mask = thresholds.mask(probs)
            hist.thresholds.append(tau_c.tolist())
            hist.pseudo_coverage.append(float(mask.float().mean()))
            if has_tgt_labels and bool(mask.any()):
                hist.pseudo_accuracy.append(float((probs.argmax(1)[mask] == y_all[mask]).float().mean()))
            else:
                hist.pseudo_accuracy.append(float("nan"))
        model.train()
        if disc is not None:
            disc.train()
        src_order = rng.permutation(len(source))
        losses = []
        for b in range(steps_per_epoch):
            src = src_set.batch(src_order[b * bs : (b + 1) * bs])
            if tgt_pos + bs > len(target):
                tgt_order, tgt_pos = rng.permutation(len(target)), 0
            tgt = tgt_set.batch(tgt_order[tgt_pos : tgt_pos + bs])
            tgt_pos += bs
            p = step / max(1, total_steps - 1)
            loss = _step_loss(model, disc, method, cfg, src, tgt, p, adapting, thresholds, gen)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            step += 1
        hist.loss.append(float(np.mean(losses)))
        if progress is not None:
            progress(epoch + 1, cfg.epochs)
    model.eval()
    hist.seconds = time.perf_counter() - start
    return hist


def _step_loss(
    model: SLOGAN,
    disc: DomainDiscriminator | None,
    method: str,
    cfg: UDATrainConfig,
    src: Batch,
    tgt: Batch,
    progress: float,
    adapting: bool,
    thresholds: AdaptiveThreshold,
    gen: torch.Generator,
) -> Tensor:
    out_s = model(src)
    y_s = src.y.view(-1)
    loss = F.cross_entropy(out_s.logits, y_s)
    if method == "erm":
        return loss
    if method == "dann":
        assert disc is not None
        out_t = model(tgt)
        lam = cfg.dann_weight * (2.0 / (1.0 + math.exp(-10.0 * progress)) - 1.0)
        z = torch.cat([out_s.z, out_t.z])
        d = torch.cat([torch.zeros(len(out_s.z)), torch.ones(len(out_t.z))]).long()
        return loss + F.cross_entropy(disc(grad_reverse(z, lam)), d)
    if not adapting:
        return loss
    if method == "self_training":
        with torch.no_grad():
            probs = F.softmax(model(tgt).logits, dim=-1)
        return loss + _pseudo_loss(model, tgt, probs, thresholds, cfg, gen)
    # slogan: L = L_sup + gamma L_dis + eta L_inv
    c = model.config
    out_t = model(tgt)
    probs = F.softmax(out_t.logits.detach(), dim=-1)
    loss = loss + _pseudo_loss(model, tgt, probs, thresholds, cfg, gen)
    if c.gamma > 0:
        l_dis, critic = model.decoupling_loss(out_s, y_s)
        loss = loss + c.gamma * l_dis + critic
    if c.eta > 0:
        perm = torch.randint(len(out_t.z), (len(out_s.z),), generator=gen)
        l_inv, _ = model.intervention_loss(out_s, out_t, perm)
        loss = loss + c.eta * l_inv
    return loss


def _pseudo_loss(
    model: SLOGAN,
    tgt: Batch,
    probs: Tensor,
    thresholds: AdaptiveThreshold,
    cfg: UDATrainConfig,
    gen: torch.Generator,
) -> Tensor:
    """Mean over the target batch of 1[confident] * CE(C(z_c(aug(G))), pseudo-label)."""
    mask = thresholds.mask(probs)
    if not bool(mask.any()):
        return torch.zeros(())
    aug = augment(tgt, edge_drop=cfg.edge_drop, feature_mask=cfg.feature_mask, generator=gen)
    logits = model(aug).logits
    ce = F.cross_entropy(logits, probs.argmax(1), reduction="none")
    return (ce * mask.float()).mean()
