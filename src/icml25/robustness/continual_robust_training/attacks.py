"""Threat models as composable modules and the generic PGD / random-search attacks over them.

Continual robust training (Dai, Cianfarani, Bhagoji, Sehwag, Mittal; ICML 2025; arXiv 2502.04248)
needs many threat models that share one optimiser: Sec. 3 writes each attack as a set ``C(x)`` of
allowed perturbations, and the official training script runs the same projected ascent over every
attack's own parameters (pixels for l_p balls, a flow field for StAdv, a colour map for ReColorAdv).
Here a :class:`ThreatModel` exposes exactly those pieces -- a random start, how parameters act on an
image, one ascent step and the projection back into the set -- and :func:`attack` is the one loop
that maximises a loss over any of them. Every threat model works on batches of images in ``[0, 1]``
of shape ``(B, C, H, W)`` and keeps its output in ``[0, 1]``.

The grayscale analogues ``SpatialFlow`` (of StAdv) and ``ReColor1D`` (of ReColorAdv) and the
held-out ``AffineWarp`` are ours; they are not the paper's attacks and carry their own names.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as tnf
from torch import Tensor, nn

from icml25.core.validate import check_finite_tensor, check_positive

__all__ = [
    "ThreatModel",
    "NoAttack",
    "LinfPGD",
    "L2PGD",
    "SpatialFlow",
    "ReColor1D",
    "AffineWarp",
    "attack",
    "square_attack",
    "check_images",
]

AttackLoss = Literal["ce", "logit"]


def check_images(name: str, x: Tensor) -> None:
    """Raise unless ``x`` is a finite, non-empty float tensor of shape ``(B, C, H, W)``."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    check_finite_tensor(name, x, ndim=4)


def _check_labels(y: Tensor, n: int) -> None:
    if not isinstance(y, Tensor):
        raise TypeError(f"y must be a torch.Tensor, got {type(y).__name__}")
    if y.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"y must hold integer class labels, got {y.dtype}")
    if y.ndim != 1 or len(y) != n:
        raise ValueError(f"y must have shape ({n},), got {tuple(y.shape)}")


class ThreatModel:
    """A set of allowed perturbations ``C(x)`` described by parameters (Sec. 3 of the paper).

    Subclasses implement ``random_init`` (a random point of ``C(x)``), ``apply`` (the perturbed
    image), ``step`` (one ascent step along a gradient) and ``project`` (back into ``C(x)``).
    ``eps`` is the budget in the parameters' own units.
    """

    name: str = "threat"

    def __init__(self, eps: float) -> None:
        check_positive(f"{type(self).__name__}.eps", eps)
        self.eps = float(eps)

    def random_init(self, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        raise NotImplementedError

    def raw_start(self, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """A random start before it is clipped into the image box (the official regulariser's start).

        Threat models whose images never leave ``[0, 1]`` return :meth:`random_init`.
        """
        return self.random_init(x, generator)

    def apply(self, x: Tensor, params: Tensor) -> Tensor:
        raise NotImplementedError

    def apply_raw(self, x: Tensor, params: Tensor) -> Tensor:
        """The perturbed image without clipping to ``[0, 1]`` (evaluated only at a raw start)."""
        return self.apply(x, params)

    def step(self, params: Tensor, grad: Tensor, size: float) -> Tensor:
        """Signed-gradient ascent, the default for box-bounded parameters."""
        return params + size * grad.sign()

    def project(self, params: Tensor, x: Tensor) -> Tensor:
        raise NotImplementedError

    def default_step_size(self, steps: int) -> float:
        """The optimiser's step size for ``steps`` iterations (the official ``eps/(n-2)`` rule)."""
        return self.eps / (steps - 2) if steps > 3 else self.eps / steps

    def reg_step_size(self, steps: int) -> float:
        """Step size of the regulariser's inner maximisation: ``eps`` for one step, else as training."""
        return self.eps if steps == 1 else self.default_step_size(steps)

    def contains(self, x: Tensor, x_adv: Tensor, params: Tensor, tol: float = 1e-5) -> bool:
        """Whether ``params`` lie in the budget and ``x_adv`` is in ``[0, 1]`` (for tests)."""
        inside = bool((params.abs() <= self.eps + tol).all())
        return inside and bool((x_adv >= -tol).all() and (x_adv <= 1 + tol).all())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(eps={self.eps:g})"


class NoAttack(ThreatModel):
    """The clean input (empty threat model); ``apply`` returns ``x`` unchanged."""

    name = "clean"

    def __init__(self, eps: float = 1.0) -> None:
        super().__init__(eps)

    def random_init(self, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        return torch.zeros(len(x), 1, dtype=x.dtype, device=x.device)

    def apply(self, x: Tensor, params: Tensor) -> Tensor:
        return x + 0.0 * params.sum()

    def project(self, params: Tensor, x: Tensor) -> Tensor:
        return torch.zeros_like(params)


def _uniform(shape: tuple[int, ...], like: Tensor, generator: torch.Generator | None) -> Tensor:
    u = torch.rand(shape, generator=generator, dtype=like.dtype, device="cpu")
    return (2 * u - 1).to(like.device)


class LinfPGD(ThreatModel):
    """The l_inf ball ``||delta||_inf <= eps`` (PGD, Madry et al.; step ``eps/4`` as in the official code)."""

    name = "linf"

    def random_init(self, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        return self.project(self.raw_start(x, generator), x)

    def raw_start(self, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        return self.eps * _uniform(tuple(x.shape), x, generator)

    def apply(self, x: Tensor, params: Tensor) -> Tensor:
        return (x + params).clamp(0.0, 1.0)

    def apply_raw(self, x: Tensor, params: Tensor) -> Tensor:
        return x + params

    def project(self, params: Tensor, x: Tensor) -> Tensor:
        delta = params.clamp(-self.eps, self.eps)
        return (x + delta).clamp(0.0, 1.0) - x

    def default_step_size(self, steps: int) -> float:
        return self.eps / 4


def _renorm(delta: Tensor, maxnorm: float) -> Tensor:
    norms = delta.flatten(1).norm(dim=1).clamp_min(1e-12)
    factor = (maxnorm / norms).clamp(max=1.0)
    return delta * factor.view(-1, *([1] * (delta.ndim - 1)))


class L2PGD(ThreatModel):
    """The l_2 ball ``||delta||_2 <= eps`` per example (normalised-gradient PGD, step ``0.15 eps``)."""

    name = "l2"

    def random_init(self, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        return self.project(self.raw_start(x, generator), x)

    def raw_start(self, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        return _renorm(_uniform(tuple(x.shape), x, generator), self.eps)

    def apply(self, x: Tensor, params: Tensor) -> Tensor:
        return (x + params).clamp(0.0, 1.0)

    def apply_raw(self, x: Tensor, params: Tensor) -> Tensor:
        return x + params

    def step(self, params: Tensor, grad: Tensor, size: float) -> Tensor:
        norms = grad.flatten(1).norm(dim=1).clamp_min(1e-12).view(-1, *([1] * (grad.ndim - 1)))
        return params + size * grad / norms

    def project(self, params: Tensor, x: Tensor) -> Tensor:
        delta = _renorm(params, self.eps)
        return (x + delta).clamp(0.0, 1.0) - x

    def default_step_size(self, steps: int) -> float:
        return 0.15 * self.eps

    def contains(self, x: Tensor, x_adv: Tensor, params: Tensor, tol: float = 1e-5) -> bool:
        inside = bool(((x_adv - x).flatten(1).norm(dim=1) <= self.eps + tol).all())
        return inside and bool((x_adv >= -tol).all() and (x_adv <= 1 + tol).all())


def _identity_grid(x: Tensor) -> Tensor:
    b, _, h, w = x.shape
    ys = torch.linspace(-1, 1, h, dtype=x.dtype, device=x.device)
    xs = torch.linspace(-1, 1, w, dtype=x.dtype, device=x.device)
    gy, gx = torch.meshgrid(ys, xs, indexing="ij")
    return torch.stack([gx, gy], dim=-1).expand(b, h, w, 2)


class SpatialFlow(ThreatModel):
    """A per-pixel flow field ``f`` with ``||f||_inf <= eps`` pixels (a grayscale StAdv analogue).

    The image is resampled at ``p + f(p)`` by bilinear ``grid_sample`` with border padding; the
    parameters have shape ``(B, H, W, 2)`` in pixel units (``x`` then ``y`` displacement).
    ``tv`` is reserved for a flow smoothness penalty and must be 0 here (not implemented).
    """

    name = "flow"

    def random_init(self, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        b, _, h, w = x.shape
        return self.eps * _uniform((b, h, w, 2), x, generator)

    def apply(self, x: Tensor, params: Tensor) -> Tensor:
        _, _, h, w = x.shape
        scale = torch.tensor([2.0 / max(w - 1, 1), 2.0 / max(h - 1, 1)], dtype=x.dtype, device=x.device)
        grid = _identity_grid(x) + params * scale
        out = tnf.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=True)
        return out.clamp(0.0, 1.0)

    def project(self, params: Tensor, x: Tensor) -> Tensor:
        return params.clamp(-self.eps, self.eps)


class ReColor1D(ThreatModel):
    """A monotone piecewise-linear intensity map with ``knots`` knots (a grayscale ReColorAdv analogue).

    Knot values start at the identity ``linspace(0, 1, knots)``; each may move by at most ``eps``
    and they are kept sorted (the map stays monotone) and in ``[0, 1]``. ``x' = g(x)`` per pixel.
    The parameters are the knot offsets, shape ``(B, knots)``.
    """

    name = "recolor"

    def __init__(self, eps: float, knots: int = 9) -> None:
        super().__init__(eps)
        check_positive("ReColor1D.knots", knots, integer=True)
        if knots < 2:
            raise ValueError(f"ReColor1D.knots must be at least 2, got {knots}")
        self.knots = int(knots)

    def _base(self, x: Tensor) -> Tensor:
        return torch.linspace(0, 1, self.knots, dtype=x.dtype, device=x.device)

    def random_init(self, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        return self.project(self.eps * _uniform((len(x), self.knots), x, generator), x)

    def apply(self, x: Tensor, params: Tensor) -> Tensor:
        values = self._base(x) + params  # (B, K)
        k = self.knots - 1
        pos = x.clamp(0.0, 1.0) * k
        idx = pos.floor().clamp(max=k - 1).long()
        frac = pos - idx.to(x.dtype)
        flat = idx.flatten(1)
        lo = values.gather(1, flat).view_as(x)
        hi = values.gather(1, flat + 1).view_as(x)
        return (lo + frac * (hi - lo)).clamp(0.0, 1.0)

    def project(self, params: Tensor, x: Tensor) -> Tensor:
        base = self._base(x)
        values = (base + params.clamp(-self.eps, self.eps)).clamp(0.0, 1.0)
        values = values.sort(dim=1).values  # sorting keeps each knot inside its (monotone) box
        return values - base


class AffineWarp(ThreatModel):
    """A global rotation and translation: shifts of at most ``eps`` pixels, rotation of at most
    ``eps * degrees_per_pixel`` degrees. Parameters ``(B, 3)`` = (angle/eps-scaled, tx, ty) in pixel
    units; used here as an attack never seen in training."""

    name = "affine"

    def __init__(self, eps: float, degrees_per_pixel: float = 15.0) -> None:
        super().__init__(eps)
        check_positive("AffineWarp.degrees_per_pixel", degrees_per_pixel)
        self.degrees_per_pixel = float(degrees_per_pixel)

    def random_init(self, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        return self.eps * _uniform((len(x), 3), x, generator)

    def apply(self, x: Tensor, params: Tensor) -> Tensor:
        _, _, h, w = x.shape
        angle = params[:, 0] * math.radians(self.degrees_per_pixel)
        cos, sin = torch.cos(angle), torch.sin(angle)
        tx = params[:, 1] * 2.0 / max(w - 1, 1)
        ty = params[:, 2] * 2.0 / max(h - 1, 1)
        theta = torch.stack([torch.stack([cos, -sin, tx], 1), torch.stack([sin, cos, ty], 1)], 1)
        grid = tnf.affine_grid(theta, list(x.shape), align_corners=True)
        out = tnf.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=True)
        return out.clamp(0.0, 1.0)

    def project(self, params: Tensor, x: Tensor) -> Tensor:
        return params.clamp(-self.eps, self.eps)


def _objective(model: nn.Module, x_adv: Tensor, y: Tensor | None, ref: Tensor | None, loss: str) -> Tensor:
    logits = model(x_adv)
    if loss == "ce":
        assert y is not None
        return tnf.cross_entropy(logits, y, reduction="sum")
    assert ref is not None
    return (logits - ref).norm(dim=1).sum()


def attack(
    model: nn.Module,
    x: Tensor,
    y: Tensor | None,
    tm: ThreatModel,
    steps: int = 10,
    step_size: float | None = None,
    loss: AttackLoss = "ce",
    generator: torch.Generator | None = None,
    return_params: bool = False,
    clip_start: bool = True,
) -> Tensor | tuple[Tensor, Tensor]:
    """Projected ascent over ``tm``'s parameters from a random start; the attacked images (detached).

    ``loss="ce"`` maximises the cross-entropy of ``y`` (PGD; Madry et al. 2018); ``loss="logit"``
    maximises ``||h(x') - h(x)||_2`` (the inner problem of the paper's ALR regulariser, Sec. 3.3),
    for which ``y`` may be ``None``. Parameter gradients of ``model`` are not touched.

    ``clip_start=True`` (the official PGD attacks) clips the random start into ``[0, 1]`` before the
    first gradient; ``clip_start=False`` (the official regulariser, ``reg_utils.L2Reg``) takes the
    first gradient at the unclipped point ``x + delta`` and clips only after the first step. The
    two differ only for threat models whose start can leave ``[0, 1]`` (l_inf, l_2).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(tm, ThreatModel):
        raise TypeError(f"tm must be a ThreatModel, got {type(tm).__name__}")
    check_images("x", x)
    check_positive("steps", steps, integer=True)
    if loss not in ("ce", "logit"):
        raise ValueError(f"loss must be 'ce' or 'logit', got {loss!r}")
    if loss == "ce":
        if y is None:
            raise ValueError("y is required for loss='ce'")
        _check_labels(y, len(x))
    size = tm.default_step_size(steps) if step_size is None else float(step_size)
    check_positive("step_size", size)
    x = x.detach()
    ref = None
    if loss == "logit":
        with torch.no_grad():
            ref = model(x)
    params = tm.random_init(x, generator) if clip_start else tm.raw_start(x, generator)
    with torch.enable_grad():
        for i in range(steps):
            params = params.detach().requires_grad_(True)
            x_now = tm.apply(x, params) if (clip_start or i > 0) else tm.apply_raw(x, params)
            obj = _objective(model, x_now, y, ref, loss)
            (grad,) = torch.autograd.grad(obj, params)
            params = tm.project(tm.step(params.detach(), grad, size), x)
    params = params.detach()
    x_adv = tm.apply(x, params).detach()
    return (x_adv, params) if return_params else x_adv


def _margin(logits: Tensor, y: Tensor) -> Tensor:
    true = logits.gather(1, y[:, None]).squeeze(1)
    other = logits.clone()
    other.scatter_(1, y[:, None], -math.inf)
    return true - other.max(dim=1).values


@torch.no_grad()
def square_attack(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    eps: float,
    queries: int = 300,
    p_init: float = 0.3,
    generator: torch.Generator | None = None,
) -> Tensor:
    """A gradient-free l_inf random search in the style of Square Attack (Andriushchenko et al. 2020).

    Starts from vertical stripes of ``+-eps``; each query redraws one random square window (side
    shrinking from ``sqrt(p_init)`` of the image over the queries) to ``+-eps`` per channel and keeps
    it for the examples whose margin ``z_y - max_{j != y} z_j`` decreased. Used as a gradient-masking
    control: if it beats PGD by much, PGD gradients are unreliable.
    """
    check_images("x", x)
    _check_labels(y, len(x))
    check_positive("eps", eps)
    check_positive("queries", queries, integer=True)
    check_positive("p_init", p_init)
    b, c, h, w = x.shape
    rand = lambda *shape: torch.rand(shape, generator=generator)  # noqa: E731
    signs = torch.where(rand(b, c, 1, w) < 0.5, -1.0, 1.0).to(x.dtype).expand(b, c, h, w)
    delta = LinfPGD(eps).project(eps * signs, x)
    best = _margin(model(x + delta), y)
    for q in range(queries):
        frac = p_init * (1 - q / queries) + 1.0 / (h * w)
        side = max(1, min(h, int(round(math.sqrt(frac * h * w)))))
        r = int(torch.randint(0, h - side + 1, (1,), generator=generator))
        s = int(torch.randint(0, w - side + 1, (1,), generator=generator))
        cand = delta.clone()
        new = torch.where(rand(b, c, 1, 1) < 0.5, -eps, eps).to(x.dtype)
        cand[:, :, r : r + side, s : s + side] = new
        cand = LinfPGD(eps).project(cand, x)
        margin = _margin(model(x + cand), y)
        better = (margin < best) & (best > 0)
        delta = torch.where(better.view(-1, 1, 1, 1), cand, delta)
        best = torch.where(better, margin, best)
    return (x + delta).clamp(0.0, 1.0)
