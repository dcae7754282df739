"""SeleKT sparse projection of the task vector, from *Robust Learning of Diverse Code Edits*
(Aggarwal et al., ICML 2025, arXiv 2503.03656), Section 3 (Algorithm 1).

SeleKT minimises the fine-tuning loss L(θ) subject to ‖θ − θ_base‖₀ ≤ c. Training takes ordinary
dense optimiser steps on every parameter; every M steps the task vector τ = θ − θ_base is projected
onto the constraint set, i.e. the top-k entries of |τ| are kept and every other weight is reset to
its base value:

    τ ← θ − θ_base;   γ ← top-k mask of |τ|,  k = ⌊α · N⌋;   θ ← θ_base + γ ⊙ τ.

The paper's pseudo-code reads as one global top-αN; the released implementation keeps
``int(α · numel)`` entries per parameter tensor. Both are offered (``scope="per_tensor"``, the
default, or ``"global"``). Every floating-point parameter is projected (embeddings, norms and biases
too) unless a ``param_filter`` excludes it. :class:`SeleKT` is a post-step hook for
:func:`icml25.nn.fit` (``post_step=projector``); training continues from the projected weights and
the optimiser moments are kept (the released code reloads them after each projection).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Literal

import torch
from torch import Tensor, nn

from icml25.core.validate import check_in_range

__all__ = ["SeleKT", "sparse_project_", "topk_mask", "changed_fraction", "snapshot_base"]

Scope = Literal["per_tensor", "global"]
ParamFilter = Callable[[str, Tensor], bool]


def _check_alpha(alpha: float) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise TypeError(f"alpha must be a float in (0, 1], got {type(alpha).__name__}")
    if not math.isfinite(alpha):
        raise ValueError(f"alpha must be finite, got {alpha}")
    check_in_range("alpha", float(alpha), 0.0, 1.0, low_open=True)


def _check_scope(scope: str) -> None:
    if scope not in ("per_tensor", "global"):
        raise ValueError(f"scope must be 'per_tensor' or 'global', got {scope!r}")


def topk_mask(delta: Tensor, k: int, *, check: bool = True) -> Tensor:
    """Boolean mask of the ``k`` largest entries of ``|delta|`` (exactly ``k`` entries; among equal
    magnitudes at the cut, which ones are kept is unspecified).

    Args:
        delta: any floating tensor (the task vector of one parameter).
        k: number of entries to keep, ``0 <= k <= delta.numel()``.
        check: verify that ``delta`` is finite (callers that already did may skip the extra pass).
    """
    if not isinstance(delta, Tensor):
        raise TypeError(f"delta must be a torch.Tensor, got {type(delta).__name__}")
    if not delta.is_floating_point():
        raise TypeError(f"delta must be a floating tensor, got {delta.dtype}")
    if delta.numel() == 0:
        raise ValueError("delta must not be empty")
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= delta.numel():
        raise ValueError(f"k must be an int in [0, {delta.numel()}], got {k!r}")
    flat = delta.detach().reshape(-1).abs()
    if check and not bool(torch.isfinite(flat.max())):  # max propagates NaN
        raise ValueError("delta must be finite (NaN or inf in the task vector)")
    mask = torch.zeros_like(flat, dtype=torch.bool)
    if k > 0:
        mask[torch.topk(flat, k, sorted=False).indices] = True
    return mask.view_as(delta)


def snapshot_base(model: nn.Module, param_filter: ParamFilter | None = None) -> dict[str, Tensor]:
    """A detached copy of the floating-point parameters of ``model`` (θ_base), by name."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return {
        n: p.detach().clone()
        for n, p in model.named_parameters()
        if p.is_floating_point() and (param_filter is None or param_filter(n, p))
    }


def _matched(model: nn.Module, base_state: Mapping[str, Tensor]) -> list[tuple[str, Tensor, Tensor]]:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(base_state, Mapping) or not base_state:
        raise ValueError("base_state must be a non-empty mapping of parameter name -> tensor")
    params = dict(model.named_parameters())
    out: list[tuple[str, Tensor, Tensor]] = []
    for name, base in base_state.items():
        if name not in params:
            raise ValueError(f"base_state: parameter {name!r} is not in the model")
        p = params[name]
        if not isinstance(base, Tensor) or base.shape != p.shape:
            raise ValueError(
                f"base_state[{name!r}]: shape {tuple(getattr(base, 'shape', ()))} does not match "
                f"the model's {tuple(p.shape)}"
            )
        out.append((name, p, base))
    return out


@torch.no_grad()
def sparse_project_(
    model: nn.Module, base_state: Mapping[str, Tensor], alpha: float, scope: Scope = "per_tensor"
) -> dict[str, float]:
    """Project ``model`` in place onto ‖θ − θ_base‖₀ ≤ α·N (SeleKT's projection, Alg. 1).

    Returns the fraction of entries that differ from base after the projection, per tensor.
    """
    _check_alpha(alpha)
    _check_scope(scope)
    triples = _matched(model, base_state)
    deltas = []
    for name, p, base in triples:
        d = p.detach() - base.to(p.device, p.dtype)
        if d.numel() and not bool(torch.isfinite(d.abs().max())):  # max propagates NaN
            raise ValueError(f"model: parameter {name!r} holds NaN or inf; cannot project")
        deltas.append(d)
    if scope == "global":
        total = sum(d.numel() for d in deltas)
        k = int(alpha * total)
        flat = torch.cat([d.reshape(-1).abs().float() for d in deltas])
        keep = torch.zeros_like(flat, dtype=torch.bool)
        if k > 0:
            keep[torch.topk(flat, k, sorted=False).indices] = True
        del flat
        masks, start = [], 0
        for d in deltas:
            masks.append(keep[start : start + d.numel()].view_as(d))
            start += d.numel()
    else:
        masks = [topk_mask(d, int(alpha * d.numel()), check=False) for d in deltas]
    fractions = {}
    for (name, p, base), d, m in zip(triples, deltas, masks, strict=True):
        # θ ← θ_base + γ ⊙ τ, written as a select: entries outside the mask get the base value
        # bit for bit, entries inside keep the trained value.
        p.copy_(torch.where(m, p.detach(), base.to(p.device, p.dtype)))
        fractions[name] = float(torch.count_nonzero(d.masked_fill_(~m, 0))) / max(d.numel(), 1)
    return fractions


@torch.no_grad()
def changed_fraction(model: nn.Module, base_state: Mapping[str, Tensor]) -> dict[str, float]:
    """Fraction of entries of each parameter that differ from ``base_state``."""
    return {
        n: float(torch.count_nonzero(p.detach() != b.to(p.device, p.dtype))) / max(p.numel(), 1)
        for n, p, b in _matched(model, base_state)
    }


class SeleKT:
    """SeleKT as a post-step hook: every ``period_steps`` optimiser steps, project onto the α-sparse set.

    Args:
        base_state: θ_base by parameter name (:func:`snapshot_base`); parameters missing from it are
            trained densely and never projected.
        alpha: fraction of entries allowed to differ from base, in (0, 1] (paper default 0.05).
        period_steps: M, the steps between projections (paper: once per epoch).
        scope: ``"per_tensor"`` (released code) or ``"global"`` (paper pseudo-code).

    Use ``fit(..., post_step=projector)`` and call :meth:`finalize` after training, which projects
    once more so the returned model satisfies the constraint whatever the last step was.
    """

    def __init__(
        self,
        base_state: Mapping[str, Tensor],
        alpha: float = 0.05,
        period_steps: int = 1,
        scope: Scope = "per_tensor",
    ) -> None:
        _check_alpha(alpha)
        _check_scope(scope)
        if isinstance(period_steps, bool) or not isinstance(period_steps, int) or period_steps < 1:
            raise ValueError(f"period_steps must be a positive int, got {period_steps!r}")
        if not isinstance(base_state, Mapping) or not base_state:
            raise ValueError("base_state must be a non-empty mapping of parameter name -> tensor")
        self.base_state = dict(base_state)
        self.alpha = float(alpha)
        self.period_steps = period_steps
        self.scope: Scope = scope
        self.n_projections = 0
        self.last_fractions: dict[str, float] = {}

    def project(self, model: nn.Module) -> dict[str, float]:
        """Project now; returns the per-tensor changed fractions."""
        self.last_fractions = sparse_project_(model, self.base_state, self.alpha, self.scope)
        self.n_projections += 1
        return self.last_fractions

    def __call__(self, model: nn.Module, step: int) -> None:
        """The :func:`icml25.nn.fit` post-step hook: project when ``step`` is a multiple of M."""
        if step % self.period_steps == 0:
            self.project(model)

    def finalize(self, model: nn.Module) -> dict[str, float]:
        """The final projection of Alg. 1 (a no-op when the last step already projected)."""
        return self.project(model)
