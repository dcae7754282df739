"""Training-memory and inference-cost measurements, and the multi-label metrics of H-Tuning
(Zhou, Zhang, Dong; ICML 2025; OpenReview RLu1QIPiVr).

The paper reports peak GPU memory during fine-tuning (``torch.cuda.max_memory_allocated``) and
inference latency/memory of the teacher and the distilled student (Sec. 4). On a CPU the allocator's
peak is not observable per step, so training memory is counted from what a step must hold:

    bytes saved for backward (``torch.autograd.graph.saved_tensors_hooks``, each storage once,
    parameters excluded) + parameter bytes + gradient bytes + optimizer-state bytes,

which is hardware-independent and deterministic. Metrics follow the official ``evaluation.py``:
macro-AP (model selection), macro-AUROC, and F-β / G-β (β = 2, the PhysioNet 2021 challenge scores)
with per-class thresholds chosen on validation, plus macro-F1 at the same thresholds.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from icml25.core.validate import check_finite_array, check_finite_tensor, check_positive

__all__ = [
    "TrainingMemory",
    "saved_activation_bytes",
    "training_memory",
    "model_bytes",
    "inference_latency",
    "best_thresholds",
    "multilabel_metrics",
]


@dataclass(frozen=True)
class TrainingMemory:
    """Bytes one training step must hold (see the module docstring)."""

    saved_bytes: int
    param_bytes: int
    grad_bytes: int
    optimizer_bytes: int

    @property
    def total(self) -> int:
        return self.saved_bytes + self.param_bytes + self.grad_bytes + self.optimizer_bytes


def _storage_key(t: Tensor) -> tuple[int, int]:
    return (t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())


def saved_activation_bytes(fn: Callable[[], object], model: nn.Module | None = None) -> tuple[int, object]:
    """Run ``fn()`` and count the bytes autograd saves for backward.

    Each storage counts once, with the largest extent any saved view of it covers (a sub-batch slice
    ``x[:b]`` counts b rows, not the whole batch it was cut from). Tensors that share storage with a
    parameter of ``model`` are not counted (they are parameter memory). Every saved tensor is kept
    alive until ``fn`` returns, so a freed graph's memory cannot be reused under the same address
    and the count is deterministic; for a step with several backward passes it is their sum, an
    upper bound on the peak. Returns ``(bytes, fn())``.
    """
    param_keys = {_storage_key(p) for p in model.parameters()} if model is not None else set()
    extent: dict[tuple[int, int], int] = {}
    alive: list[Tensor] = []

    def pack(t: Tensor) -> Tensor:
        if t.device.type != "meta":
            key = _storage_key(t)
            if key not in param_keys:
                extent[key] = max(extent.get(key, 0), t.numel() * t.element_size())
                alive.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    alive.clear()
    return sum(extent.values()), out


def training_memory(
    step: Callable[[], object], model: nn.Module, optimizer: torch.optim.Optimizer
) -> TrainingMemory:
    """Run one training ``step()`` and count its memory (saved-for-backward + params + grads + optimizer).

    Gradient bytes count every trainable parameter (its ``.grad`` exists at the optimizer step);
    optimizer bytes count the tensors in ``optimizer.state`` after the step.
    """
    saved, _ = saved_activation_bytes(step, model)
    params = list(model.parameters())
    param_bytes = sum(p.numel() * p.element_size() for p in params)
    grad_bytes = sum(p.numel() * p.element_size() for p in params if p.requires_grad)
    opt_bytes = sum(
        v.numel() * v.element_size()
        for state in optimizer.state.values()
        for v in state.values()
        if isinstance(v, Tensor) and v.dim() > 0
    )
    return TrainingMemory(saved, param_bytes, grad_bytes, opt_bytes)


def model_bytes(model: nn.Module) -> int:
    """Bytes of parameters and buffers (the model's inference memory footprint)."""
    return sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))


@torch.no_grad()
def inference_latency(
    model: nn.Module, x: Tensor, *, runs: int = 50, warmup: int = 5, threads: int | None = 1
) -> float:
    """Median seconds of one forward pass on ``x`` (e.g. one record, batch 1) in eval mode, at
    ``threads`` torch threads (default 1, as the latency criterion states, so that the ratio does not
    depend on the cores the run was given; None: the current setting). The thread count is restored."""
    check_finite_tensor("x", x, floating=True)
    check_positive("runs", runs, integer=True)
    if threads is not None:
        check_positive("threads", threads, integer=True)
    model.eval()
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        with torch.no_grad():
            for _ in range(warmup):
                model(x)
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                model(x)
                times.append(time.perf_counter() - t0)
    finally:
        torch.set_num_threads(before)
    return float(statistics.median(times))


def _fbeta_gbeta(y: np.ndarray, pred: np.ndarray, beta: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    tp = (y & pred).sum(0).astype(float)
    fp = (~y & pred).sum(0).astype(float)
    fn = (y & ~pred).sum(0).astype(float)
    b2 = beta**2
    f = np.divide(
        (1 + b2) * tp, (1 + b2) * tp + fp + b2 * fn, out=np.zeros_like(tp), where=(tp + fp + fn) > 0
    )
    g = np.divide(tp, tp + fp + beta * fn, out=np.zeros_like(tp), where=(tp + fp + fn) > 0)
    return f, g


def best_thresholds(y_true: np.ndarray, probs: np.ndarray, beta: float = 2.0) -> np.ndarray:
    """Per-class thresholds maximising F-β on (validation) data, from a 0.01-0.99 grid."""
    y, p = _check_pair(y_true, probs)
    grid = np.linspace(0.01, 0.99, 99)
    out = np.empty(y.shape[1])
    for j in range(y.shape[1]):
        pred = p[:, j : j + 1] >= grid[None, :]  # (n, grid)
        f, _ = _fbeta_gbeta(np.repeat(y[:, j : j + 1], len(grid), 1), pred, beta)
        out[j] = grid[int(np.argmax(f))]
    return out


def _check_pair(y_true: np.ndarray, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    check_finite_array("y_true", y_true, ndim=2)
    check_finite_array("probs", probs, ndim=2)
    y, p = np.asarray(y_true) > 0.5, np.asarray(probs, dtype=float)
    if y.shape != p.shape:
        raise ValueError(f"y_true and probs must have the same shape, got {y.shape} and {p.shape}")
    return y, p


def multilabel_metrics(
    y_true: np.ndarray, probs: np.ndarray, thresholds: np.ndarray | None = None
) -> dict[str, float]:
    """Macro-AP, macro-AUROC (classes with both outcomes present), and macro F1, F₂, G₂ at
    ``thresholds`` (default 0.5)."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    y, p = _check_pair(y_true, probs)
    thr = np.full(y.shape[1], 0.5) if thresholds is None else np.asarray(thresholds, dtype=float)
    if thr.shape != (y.shape[1],):
        raise ValueError(f"thresholds must have shape ({y.shape[1]},), got {thr.shape}")
    both = [j for j in range(y.shape[1]) if 0 < y[:, j].sum() < len(y)]
    ap = float(np.mean([average_precision_score(y[:, j], p[:, j]) for j in both])) if both else float("nan")
    auc = float(np.mean([roc_auc_score(y[:, j], p[:, j]) for j in both])) if both else float("nan")
    pred = p >= thr[None, :]
    f2, g2 = _fbeta_gbeta(y, pred, 2.0)
    f1, _ = _fbeta_gbeta(y, pred, 1.0)
    return {
        "macro_ap": ap,
        "macro_auroc": auc,
        "macro_f1": float(f1.mean()),
        "f2": float(f2.mean()),
        "g2": float(g2.mean()),
    }


def macro_average_precision(y_true: np.ndarray, scores: np.ndarray) -> float:
    """Macro-averaged average precision over the classes with both outcomes present.

    Equal to scikit-learn's ``average_precision_score`` per class (tied scores are one threshold:
    AP = sum over distinct thresholds of the recall step times the precision there), computed for all
    classes at once (one sort of the score matrix), fast enough to recompute inside a bootstrap.
    """
    y, p = _check_pair(y_true, scores)
    return _macro_ap(y, p)


def _macro_ap(y: np.ndarray, p: np.ndarray) -> float:
    """:func:`macro_average_precision` on checked boolean labels ``y`` and float scores ``p`` (n, k)."""
    positives = y.sum(axis=0)
    keep = (positives > 0) & (positives < len(y))
    if not keep.any():
        return float("nan")
    # one row per class (contiguous rows sort several times faster than strided columns); the order
    # inside a run of tied scores does not matter: only the runs' ends contribute
    yt, pt, positives = (
        np.ascontiguousarray(y[:, keep].T),
        np.ascontiguousarray(p[:, keep].T),
        positives[keep],
    )
    order = np.argsort(-pt, axis=1)
    s = np.take_along_axis(pt, order, axis=1)
    tp = np.cumsum(np.take_along_axis(yt, order, axis=1), axis=1, dtype=float)
    end = np.ones(s.shape, dtype=bool)  # last index of each run of tied scores
    end[:, :-1] = s[:, 1:] != s[:, :-1]
    tp_end = np.where(end, tp, 0.0)
    # tp at the previous run's end (tp is non-decreasing, so a running maximum over ends finds it)
    tp_prev = np.zeros_like(tp_end)
    tp_prev[:, 1:] = np.maximum.accumulate(tp_end, axis=1)[:, :-1]
    rank = np.arange(1, s.shape[1] + 1, dtype=float)
    contrib = np.where(end, (tp - tp_prev) * tp / rank, 0.0)
    return float(np.mean(contrib.sum(axis=1) / positives))
