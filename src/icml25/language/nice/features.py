"""LESS-style gradient features, for *NICE Data Selection for Instruction Tuning in LLMs with
Non-differentiable Evaluation Metric* (Wang et al., ICML 2025, https://openreview.net/forum?id=2wt8m5HUBs).

NICE keeps the training side of LESS (Xia et al., 2024): every pool example z is represented by
the update direction one Adam step on z would take at a warm-up checkpoint,

    m' = β₁ m + (1 − β₁) g,   v' = β₂ v + (1 − β₂) g²,   Γ(z) = m' / √(v' + ε),   g = ∇_θ ℓ(z; θ),

where (m, v) are the checkpoint's saved Adam moments and θ are the trainable (LoRA) parameters
(Section 3.1 of the paper; ``obtain_gradients_with_adam`` in the official code). Vectors are then
mapped to a low dimension by a fixed random (Rademacher) Johnson-Lindenstrauss projection, which
preserves inner products in expectation.

Notation: N examples, P trainable parameters, d projected dimension, T sequence length.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor, nn

from icml25.core.validate import check_finite_tensor, check_in_range, check_positive

__all__ = [
    "RandomProjector",
    "adam_preconditioned_grads",
    "example_gradients",
    "sequence_nll",
    "trainable_parameters",
]


def trainable_parameters(model: nn.Module) -> list[Tensor]:
    """The parameters of ``model`` with ``requires_grad`` (the LoRA factors of a peft model), in order."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    params: list[Tensor] = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no trainable parameters (requires_grad is False everywhere)")
    return params


def _check_batch(name: str, ids: Tensor, labels: Tensor) -> None:
    for n, t in ((f"{name} input_ids", ids), (f"{name} labels", labels)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{n} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype != torch.long:
            raise TypeError(f"{n} must be a torch.long tensor of token ids, got {t.dtype}")
    if ids.ndim != 2 or ids.shape != labels.shape or ids.shape[0] == 0 or ids.shape[1] < 2:
        raise ValueError(
            f"{name}: input_ids and labels must share a non-empty [N, T>=2] shape, got "
            f"{tuple(ids.shape)} and {tuple(labels.shape)}"
        )


def sequence_nll(
    model: nn.Module, input_ids: Tensor, labels: Tensor, attention_mask: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """Token-summed negative log-likelihood of the labelled tokens of each row, and their count.

    ``labels`` follows the Hugging Face convention: aligned with ``input_ids`` (the model predicts
    ``labels[:, t]`` from the tokens before ``t``), ``-100`` where no loss is taken.

    Args:
        model: a causal LM called as ``model(input_ids=, attention_mask=)`` returning ``.logits``.
        input_ids, labels: ``[N, T]`` long tensors.
        attention_mask: optional ``[N, T]``.

    Returns:
        ``(nll [N], n_tokens [N])``; differentiable in the model's parameters.
    """
    _check_batch("sequence_nll", input_ids, labels)
    out = model(input_ids=input_ids, attention_mask=attention_mask)
    logits = out.logits if hasattr(out, "logits") else out[0]
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)  # [N, T-1, V]
    target = labels[:, 1:]
    mask = target != -100
    tok = logp.gather(-1, target.clamp_min(0).unsqueeze(-1)).squeeze(-1)  # [N, T-1]
    nll = -(tok * mask).sum(dim=1)
    return nll, mask.sum(dim=1)


def _flat_grad(loss: Tensor, params: Sequence[Tensor]) -> Tensor:
    grads = torch.autograd.grad(loss, list(params), allow_unused=True)
    return torch.cat(
        [(torch.zeros_like(p) if g is None else g).reshape(-1) for p, g in zip(params, grads, strict=True)]
    )


def example_gradients(
    model: nn.Module,
    data: tuple[Tensor, Tensor, Tensor],
    *,
    params: Sequence[Tensor] | None = None,
    reduction: Literal["mean", "sum"] = "mean",
) -> Tensor:
    """Per-example gradients of the completion loss, flattened over ``params``.

    With ``reduction="mean"`` the loss of an example is its mean token NLL (the training loss LESS
    and NICE differentiate); ``"sum"`` sums over tokens. The model is put in eval mode (no dropout).

    Args:
        model: a causal LM (a peft model for LoRA gradients).
        data: ``(input_ids, labels, attention_mask)``, each ``[N, T]`` (labels ``-100`` off the response).
        params: the parameters to differentiate (default: :func:`trainable_parameters`).
        reduction: ``"mean"`` or ``"sum"`` over the response tokens.

    Returns:
        ``[N, P]`` float32 gradients (an example without labelled tokens gets a zero row).
    """
    if not isinstance(data, tuple) or len(data) != 3:
        raise TypeError("data must be the (input_ids, labels, attention_mask) tuple")
    ids, labels, attn = data
    _check_batch("data", ids, labels)
    if not isinstance(attn, Tensor) or attn.shape != ids.shape:
        raise ValueError(f"data attention_mask must have shape {tuple(ids.shape)}")
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
    params = trainable_parameters(model) if params is None else list(params)
    model.eval()
    rows = []
    for i in range(ids.shape[0]):
        width = int(attn[i].sum())
        width = max(width, 2)
        nll, count = sequence_nll(
            model, ids[i : i + 1, :width], labels[i : i + 1, :width], attn[i : i + 1, :width]
        )
        if int(count) == 0:
            rows.append(torch.zeros(sum(p.numel() for p in params)))
            continue
        loss = nll.sum() / count.sum() if reduction == "mean" else nll.sum()
        rows.append(_flat_grad(loss, params).float())
    return torch.stack(rows)


def adam_preconditioned_grads(
    grads: Tensor,
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
    *,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
) -> Tensor:
    """Γ = m' / √(v' + ε) with m' = β₁m + (1−β₁)g and v' = β₂v + (1−β₂)g² (Section 3.1, LESS Eq. 2).

    The moments are the raw (not bias-corrected) Adam state of the checkpoint, as the official code
    reads them from the saved optimiser.

    Args:
        grads: ``[N, P]`` per-example gradients.
        exp_avg, exp_avg_sq: ``[P]`` first and second moments (``exp_avg_sq >= 0``).
        betas: Adam's (β₁, β₂).
        eps: ε, added inside the square root as in the official code.

    Returns:
        ``[N, P]`` update directions.
    """
    check_finite_tensor("grads", grads, ndim=2, floating=True)
    check_finite_tensor("exp_avg", exp_avg, ndim=1, floating=True)
    check_finite_tensor("exp_avg_sq", exp_avg_sq, ndim=1, floating=True)
    if exp_avg.shape[0] != grads.shape[1] or exp_avg_sq.shape[0] != grads.shape[1]:
        raise ValueError(
            f"exp_avg and exp_avg_sq must have length P = {grads.shape[1]} (grads is [N, P]), got "
            f"{exp_avg.shape[0]} and {exp_avg_sq.shape[0]}"
        )
    if (exp_avg_sq < 0).any():
        raise ValueError("exp_avg_sq must be non-negative (it is a running mean of squared gradients)")
    b1, b2 = betas
    check_in_range("betas[0]", b1, 0.0, 1.0, high_open=True)
    check_in_range("betas[1]", b2, 0.0, 1.0, high_open=True)
    check_positive("eps", eps)
    m = b1 * exp_avg + (1 - b1) * grads
    v = b2 * exp_avg_sq + (1 - b2) * grads.square()
    return m / torch.sqrt(v + eps)


class RandomProjector:
    """A fixed random projection R ∈ R^{in_dim × out_dim}, x ↦ x R / √out_dim (TRAK/LESS's JL step).

    Entries are ±1 (``kind="rademacher"``, as the official code) or N(0, 1) (``"gaussian"``). R is
    drawn in row blocks from generators seeded by ``(seed, block)``, so a projector never needs the
    whole matrix in memory and the same ``seed`` always gives the same R, whatever the batch.

    Args:
        in_dim: P, the gradient dimension.
        out_dim: d (paper: 8192).
        seed: seed of R (paper: 0).
        kind: ``"rademacher"`` or ``"gaussian"``.
        block_rows: rows of R generated at once.
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int = 8192,
        seed: int = 0,
        kind: Literal["rademacher", "gaussian"] = "rademacher",
        block_rows: int = 16384,
    ) -> None:
        check_positive("in_dim", in_dim, integer=True)
        check_positive("out_dim", out_dim, integer=True)
        check_positive("block_rows", block_rows, integer=True)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        if kind not in ("rademacher", "gaussian"):
            raise ValueError(f"kind must be 'rademacher' or 'gaussian', got {kind!r}")
        self.in_dim, self.out_dim, self.seed, self.kind, self.block_rows = (
            in_dim,
            out_dim,
            seed,
            kind,
            block_rows,
        )
        self._cache: dict[int, Tensor] = {}
        self._cache_ok = in_dim * out_dim <= 1 << 24

    def _block(self, b: int) -> Tensor:
        if b in self._cache:
            return self._cache[b]
        rows = min(self.block_rows, self.in_dim - b * self.block_rows)
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + b)
        if self.kind == "rademacher":
            block = torch.randint(0, 2, (rows, self.out_dim), generator=gen).float().mul_(2).sub_(1)
        else:
            block = torch.randn(rows, self.out_dim, generator=gen)
        if self._cache_ok:
            self._cache[b] = block
        return block

    def matrix(self) -> Tensor:
        """R itself, ``[in_dim, out_dim]`` (for tests and small dimensions)."""
        n_blocks = -(-self.in_dim // self.block_rows)
        return torch.cat([self._block(b) for b in range(n_blocks)])

    def __call__(self, x: Tensor) -> Tensor:
        """Project ``x`` (``[N, in_dim]`` or ``[in_dim]``) to ``[N, out_dim]`` (or ``[out_dim]``)."""
        check_finite_tensor("x", x, floating=True)
        if x.ndim not in (1, 2) or x.shape[-1] != self.in_dim:
            raise ValueError(f"x must have shape [N, {self.in_dim}] or [{self.in_dim}], got {tuple(x.shape)}")
        flat = x.reshape(-1, self.in_dim).float()
        out = torch.zeros(flat.shape[0], self.out_dim)
        for b, start in enumerate(range(0, self.in_dim, self.block_rows)):
            out += flat[:, start : start + self.block_rows] @ self._block(b)
        out /= self.out_dim**0.5
        return out if x.ndim == 2 else out[0]
