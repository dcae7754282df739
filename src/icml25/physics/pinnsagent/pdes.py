"""Benchmark PDEs with reference solutions for *PINNsAgent: Automated PDE Surrogation with Large
Language Models* (Wuwu et al., ICML 2025, arXiv 2501.12053).

The paper searches PINN configurations on 14 PINNacle PDEs. Here every PDE is a small 1-D (or
1-D in space plus time, or 2-D) problem on a box with a closed-form reference solution, except
Burgers, whose reference is the Cole-Hopf integral evaluated by Gauss-Hermite quadrature. Each
PDE carries the paper's ten categorical physics labels (Sec. 3.3) and a one-line text
description, which the knowledge replay embeds.

The residual of every PDE is written as ``N[u](x) - s(x)``: the operator ``N`` is applied to the
network by autograd and ``s`` is ``N`` applied to the reference (a manufactured source; it is
zero up to rounding for the homogeneous PDEs and exactly zero for Burgers). Each suite operator is
a :class:`DiffOperator`: the autograd form above plus the same formula on derivatives propagated
forward through the network, which the trainer uses (one pass instead of nested autograd calls).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from icml25.core.validate import check_finite_array, check_positive

Operator = Callable[[Tensor, Tensor], Tensor]
Exact = Callable[[Tensor], Tensor]

#: The ten label attributes of the paper's PDE encoder (Sec. 3.3) and their allowed values.
LABEL_VALUES: dict[str, tuple[str, ...]] = {
    "family": (
        "burgers",
        "poisson",
        "heat",
        "ns",
        "wave",
        "chaotic",
        "advection",
        "helmholtz",
        "reaction_diffusion",
    ),
    "type": ("parabolic", "elliptic", "hyperbolic", "mixed"),
    "dimension": ("1d", "2d", "3d", "nd"),
    "linearity": ("linear", "nonlinear"),
    "time": ("time_independent", "time_dependent"),
    "bc": ("dirichlet", "neumann", "robin", "periodic", "none"),
    "ic": ("ic", "no_ic"),
    "coefficient": ("constant", "variable"),
    "horizon": ("short", "long"),
    "geometry": ("simple", "complex"),
}


def grad(u: Tensor, x: Tensor) -> Tensor:
    """du/dx for ``u`` of shape (N, 1) computed from ``x`` of shape (N, d): shape (N, d)."""
    return torch.autograd.grad(u.sum(), x, create_graph=True)[0]


def second(du: Tensor, x: Tensor, i: int) -> Tensor:
    """d^2u/dx_i^2 from the gradient ``du`` (N, d): shape (N,)."""
    return torch.autograd.grad(du[:, i].sum(), x, create_graph=True)[0][:, i]


#: ``N[u]`` from derivatives: (u (N,), du (N, d), d2u (N, m) or None) -> (N,), where ``d2u[:, i]`` is
#: d^2u/dx_i^2 for the first ``m`` coordinates.
JetOperator = Callable[[Tensor, Tensor, Tensor | None], Tensor]


@dataclass(frozen=True)
class DiffOperator:
    """A PDE operator in two equivalent forms.

    Calling it, ``op(u, x)``, applies ``fn`` by autograd to the network output ``u`` (N, 1) at
    ``x`` (N, d) with ``x.requires_grad`` (the reference form, used for manufactured sources).
    ``jet(u, du, d2u)`` is the same operator written on derivatives that the trainer propagates
    forward through the network (:func:`icml25.physics.pinnsagent.pinn.jet_forward`), which avoids
    one nested autograd pass per derivative in every training step. ``n_second`` is the number of
    leading coordinates whose pure second derivatives ``jet`` reads (0: first derivatives only).
    A :class:`PDESpec` whose operator is a plain function trains through autograd.
    """

    fn: Operator
    jet: JetOperator
    n_second: int

    def __post_init__(self) -> None:
        if isinstance(self.n_second, bool) or not isinstance(self.n_second, int) or self.n_second < 0:
            raise ValueError(f"n_second must be a non-negative integer, got {self.n_second!r}")

    def __call__(self, u: Tensor, x: Tensor) -> Tensor:
        return self.fn(u, x)


def _op(fn: Operator, jet: JetOperator, n_second: int) -> DiffOperator:
    return DiffOperator(fn, jet, n_second)


def _d2(d2u: Tensor | None) -> Tensor:
    if d2u is None:
        raise ValueError("this operator needs second derivatives (n_second > 0)")
    return d2u


@dataclass(frozen=True)
class PDESpec:
    """One benchmark PDE on the box ``prod_i [lower_i, upper_i]``.

    Args:
        name: identifier.
        description: one sentence in words (embedded by the text encoder of the knowledge replay).
        labels: the ten physics labels of :data:`LABEL_VALUES`.
        lower, upper: the box; for time-dependent PDEs the last coordinate is time.
        operator: ``N[u]`` as a function of (u (N,1), x (N,d)) with ``x.requires_grad``; returns (N,).
        exact: the reference solution, (N,d) -> (N,).
        time_dependent: whether the last coordinate is time (then the face t = T is not a boundary).
        zero_source: the reference solves ``N[u] = 0`` exactly (the source is not computed).
        initial_velocity: also fit u_t = exact_t at t = 0 (second order in time).
    """

    name: str
    description: str
    labels: dict[str, str]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    operator: Operator
    exact: Exact
    time_dependent: bool = False
    zero_source: bool = False
    initial_velocity: bool = False
    extra: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.lower) != len(self.upper) or not self.lower:
            raise ValueError(f"{self.name}: lower and upper must be non-empty and of equal length")
        if any(hi <= lo for lo, hi in zip(self.lower, self.upper, strict=True)):
            raise ValueError(f"{self.name}: every upper bound must exceed its lower bound")
        for key, value in self.labels.items():
            if key not in LABEL_VALUES or value not in LABEL_VALUES[key]:
                raise ValueError(f"{self.name}: unknown label {key}={value}")
        if set(self.labels) != set(LABEL_VALUES):
            raise ValueError(f"{self.name}: labels must set all of {sorted(LABEL_VALUES)}")

    @property
    def dim(self) -> int:
        """Number of input coordinates (space plus time)."""
        return len(self.lower)

    def scale(self, unit: Tensor) -> Tensor:
        """Map points of the unit box to the PDE's box."""
        lo = torch.tensor(self.lower, dtype=unit.dtype)
        hi = torch.tensor(self.upper, dtype=unit.dtype)
        return lo + unit * (hi - lo)

    def source(self, x: Tensor) -> Tensor:
        """``N[u_exact](x)``, the manufactured source (zeros when ``zero_source``)."""
        if self.zero_source:
            return torch.zeros(x.shape[0], dtype=x.dtype)
        xr = x.detach().clone().requires_grad_(True)
        u = self.exact(xr).unsqueeze(1)
        return self.operator(u, xr).detach()

    def boundary_points(self, unit: Tensor, generator: torch.Generator) -> Tensor:
        """Project unit-box points onto the boundary faces (t = T excluded), one random face each."""
        n, d = unit.shape
        faces = []
        for i in range(d):
            faces.append((i, 0.0))
            if not (self.time_dependent and i == d - 1):
                faces.append((i, 1.0))
        pick = torch.randint(len(faces), (n,), generator=generator)
        out = unit.clone()
        for k, (i, v) in enumerate(faces):
            out[pick == k, i] = v
        return self.scale(out)

    def test_grid(self, per_axis: int = 41, max_points: int = 41**3) -> Tensor:
        """A tensor-product grid of ``per_axis ** dim`` points for the test error; in high dimension
        the points per axis shrink until the grid holds at most ``max_points`` (5-D: 9 per axis)."""
        check_positive("per_axis", per_axis, integer=True)
        check_positive("max_points", max_points, integer=True)
        while per_axis > 2 and per_axis**self.dim > max_points:
            per_axis -= 1
        axes = [torch.linspace(lo, hi, per_axis) for lo, hi in zip(self.lower, self.upper, strict=True)]
        mesh = torch.meshgrid(*axes, indexing="ij")
        return torch.stack([m.reshape(-1) for m in mesh], dim=1)


def burgers_reference(x: np.ndarray, t: np.ndarray, nu: float, n_nodes: int = 120) -> np.ndarray:
    """Cole-Hopf solution of u_t + u u_x = nu u_xx with u(x, 0) = -sin(pi x).

    u = -int sin(pi (x - e)) f(x - e) G(e) de / int f(x - e) G(e) de with
    f(y) = exp(-cos(pi y) / (2 pi nu)) and G the heat kernel of variance 2 nu t; the integrals
    use ``n_nodes`` Gauss-Hermite nodes (e = sqrt(4 nu t) z). t = 0 returns the initial condition.
    """
    check_positive("nu", nu)
    check_positive("n_nodes", n_nodes, integer=True)
    check_finite_array("x", x, ndim=1)
    check_finite_array("t", t, ndim=1)
    x = np.asarray(x, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    if x.shape != t.shape:
        raise ValueError(f"x and t must have the same shape, got {x.shape} and {t.shape}")
    if (t < 0).any():
        raise ValueError("t must be non-negative")
    z, w = np.polynomial.hermite.hermgauss(n_nodes)
    out = -np.sin(np.pi * x)
    pos = t > 0
    if pos.any():
        xs, ts = x[pos][:, None], t[pos][:, None]
        y = xs - np.sqrt(4 * nu * ts) * z[None, :]
        logf = -np.cos(np.pi * y) / (2 * np.pi * nu)
        logf = logf - logf.max(axis=1, keepdims=True)
        f = np.exp(logf) * w[None, :]
        out[pos] = -(np.sin(np.pi * y) * f).sum(1) / f.sum(1)
    return out


def _labels(**kw: str) -> dict[str, str]:
    base = {
        "dimension": "1d",
        "linearity": "linear",
        "time": "time_dependent",
        "bc": "dirichlet",
        "ic": "ic",
        "coefficient": "constant",
        "horizon": "short",
        "geometry": "simple",
    }
    base.update(kw)
    return base


def _poisson1d(u: Tensor, x: Tensor) -> Tensor:
    return -second(grad(u, x), x, 0)


def _laplace_neg(u: Tensor, x: Tensor) -> Tensor:
    du = grad(u, x)
    return -(second(du, x, 0) + second(du, x, 1))


def _helmholtz(u: Tensor, x: Tensor) -> Tensor:
    du = grad(u, x)
    return second(du, x, 0) + second(du, x, 1) + u[:, 0]


def _laplace_neg_nd(u: Tensor, x: Tensor) -> Tensor:
    du = grad(u, x)
    return -sum((second(du, x, i) for i in range(x.shape[1])), torch.zeros(x.shape[0], dtype=x.dtype))


def _heat2d(u: Tensor, x: Tensor) -> Tensor:
    du = grad(u, x)
    return du[:, 2] - 0.05 * (second(du, x, 0) + second(du, x, 1))


def _heat(u: Tensor, x: Tensor) -> Tensor:
    du = grad(u, x)
    return du[:, 1] - 0.1 * second(du, x, 0)


def _wave(u: Tensor, x: Tensor) -> Tensor:
    du = grad(u, x)
    return second(du, x, 1) - 4.0 * second(du, x, 0)


def _advection(u: Tensor, x: Tensor) -> Tensor:
    du = grad(u, x)
    return du[:, 1] + du[:, 0]


BURGERS_NU = 0.05 / math.pi


def _burgers(u: Tensor, x: Tensor) -> Tensor:
    du = grad(u, x)
    return du[:, 1] + u[:, 0] * du[:, 0] - BURGERS_NU * second(du, x, 0)


def _allen_cahn(u: Tensor, x: Tensor) -> Tensor:
    du = grad(u, x)
    v = u[:, 0]
    return du[:, 1] - 0.01 * second(du, x, 0) + 5.0 * (v**3 - v)


# The same operators on propagated derivatives (see DiffOperator); u is (N,), du (N, d), d2u (N, m).


def _poisson1d_jet(u: Tensor, du: Tensor, d2u: Tensor | None) -> Tensor:
    return -_d2(d2u)[:, 0]


def _laplace_neg_jet(u: Tensor, du: Tensor, d2u: Tensor | None) -> Tensor:
    d2 = _d2(d2u)
    return -(d2[:, 0] + d2[:, 1])


def _helmholtz_jet(u: Tensor, du: Tensor, d2u: Tensor | None) -> Tensor:
    d2 = _d2(d2u)
    return d2[:, 0] + d2[:, 1] + u


def _laplace_neg_nd_jet(u: Tensor, du: Tensor, d2u: Tensor | None) -> Tensor:
    return -_d2(d2u).sum(dim=1)


def _heat2d_jet(u: Tensor, du: Tensor, d2u: Tensor | None) -> Tensor:
    d2 = _d2(d2u)
    return du[:, 2] - 0.05 * (d2[:, 0] + d2[:, 1])


def _heat_jet(u: Tensor, du: Tensor, d2u: Tensor | None) -> Tensor:
    return du[:, 1] - 0.1 * _d2(d2u)[:, 0]


def _wave_jet(u: Tensor, du: Tensor, d2u: Tensor | None) -> Tensor:
    d2 = _d2(d2u)
    return d2[:, 1] - 4.0 * d2[:, 0]


def _advection_jet(u: Tensor, du: Tensor, d2u: Tensor | None) -> Tensor:
    return du[:, 1] + du[:, 0]


def _burgers_jet(u: Tensor, du: Tensor, d2u: Tensor | None) -> Tensor:
    return du[:, 1] + u * du[:, 0] - BURGERS_NU * _d2(d2u)[:, 0]


def _allen_cahn_jet(u: Tensor, du: Tensor, d2u: Tensor | None) -> Tensor:
    return du[:, 1] - 0.01 * _d2(d2u)[:, 0] + 5.0 * (u**3 - u)


def _burgers_exact(x: Tensor) -> Tensor:
    ref = burgers_reference(x[:, 0].detach().numpy(), x[:, 1].detach().numpy(), BURGERS_NU)
    return torch.as_tensor(ref, dtype=x.dtype)


PI = math.pi
#: dimension of the n-D Poisson problem (PINNacle's PNd is 5-D)
POISSON_ND_DIM = 5


def _suite() -> dict[str, PDESpec]:
    specs = [
        PDESpec(
            "poisson1d",
            "Poisson equation -u'' = 16 pi^2 sin(4 pi x) on [0, 1] with zero Dirichlet boundary values.",
            _labels(family="poisson", type="elliptic", time="time_independent", ic="no_ic"),
            (0.0,),
            (1.0,),
            _op(_poisson1d, _poisson1d_jet, 1),
            lambda x: torch.sin(4 * PI * x[:, 0]),
        ),
        PDESpec(
            "poisson2d",
            "Poisson equation -laplace u = 2 pi^2 sin(pi x) sin(pi y) on the unit square, zero Dirichlet.",
            _labels(family="poisson", type="elliptic", dimension="2d", time="time_independent", ic="no_ic"),
            (0.0, 0.0),
            (1.0, 1.0),
            _op(_laplace_neg, _laplace_neg_jet, 2),
            lambda x: torch.sin(PI * x[:, 0]) * torch.sin(PI * x[:, 1]),
        ),
        PDESpec(
            "helmholtz2d",
            "Helmholtz equation laplace u + u = q on the unit square, u = sin(pi x) sin(2 pi y), Dirichlet.",
            _labels(family="helmholtz", type="elliptic", dimension="2d", time="time_independent", ic="no_ic"),
            (0.0, 0.0),
            (1.0, 1.0),
            _op(_helmholtz, _helmholtz_jet, 2),
            lambda x: torch.sin(PI * x[:, 0]) * torch.sin(2 * PI * x[:, 1]),
        ),
        PDESpec(
            "poissonnd",
            "Poisson equation -laplace u = (pi^2 / 4) sum_i sin(pi x_i / 2) on the unit cube in 5-D, "
            "u = sum_i sin(pi x_i / 2), Dirichlet.",
            _labels(family="poisson", type="elliptic", dimension="nd", time="time_independent", ic="no_ic"),
            (0.0,) * POISSON_ND_DIM,
            (1.0,) * POISSON_ND_DIM,
            _op(_laplace_neg_nd, _laplace_neg_nd_jet, POISSON_ND_DIM),
            lambda x: torch.sin(0.5 * PI * x).sum(dim=1),
        ),
        PDESpec(
            "heat1d",
            "Heat equation u_t = 0.1 u_xx on [0, 1] x [0, 1], u(x, 0) = sin(pi x), zero Dirichlet ends.",
            _labels(family="heat", type="parabolic"),
            (0.0, 0.0),
            (1.0, 1.0),
            _op(_heat, _heat_jet, 1),
            lambda x: torch.exp(-0.1 * PI**2 * x[:, 1]) * torch.sin(PI * x[:, 0]),
            time_dependent=True,
        ),
        PDESpec(
            "heat2d",
            "Heat equation u_t = 0.05 (u_xx + u_yy) on the unit square for t in [0, 1], "
            "u(x, y, 0) = sin(pi x) sin(2 pi y), zero Dirichlet sides.",
            _labels(family="heat", type="parabolic", dimension="2d"),
            (0.0, 0.0, 0.0),
            (1.0, 1.0, 1.0),
            _op(_heat2d, _heat2d_jet, 2),
            lambda x: (
                torch.exp(-0.25 * PI**2 * x[:, 2]) * torch.sin(PI * x[:, 0]) * torch.sin(2 * PI * x[:, 1])
            ),
            time_dependent=True,
        ),
        PDESpec(
            "wave1d",
            "Wave equation u_tt = 4 u_xx on [0, 1] x [0, 1], two standing modes, u_t(x, 0) = 0, Dirichlet.",
            _labels(family="wave", type="hyperbolic"),
            (0.0, 0.0),
            (1.0, 1.0),
            _op(_wave, _wave_jet, 2),
            lambda x: (
                torch.sin(PI * x[:, 0]) * torch.cos(2 * PI * x[:, 1])
                + 0.5 * torch.sin(4 * PI * x[:, 0]) * torch.cos(8 * PI * x[:, 1])
            ),
            time_dependent=True,
            initial_velocity=True,
        ),
        PDESpec(
            "advection1d",
            "Linear advection u_t + u_x = 0 on [0, 1] x [0, 0.5] transporting a Gaussian pulse, "
            "inflow boundary.",
            _labels(family="advection", type="hyperbolic"),
            (0.0, 0.0),
            (1.0, 0.5),
            _op(_advection, _advection_jet, 0),
            lambda x: torch.exp(-(((x[:, 0] - x[:, 1] - 0.3) / 0.15) ** 2)),
            time_dependent=True,
        ),
        PDESpec(
            "burgers1d",
            "Viscous Burgers u_t + u u_x = (0.05/pi) u_xx on [-1, 1] x [0, 1], u(x, 0) = -sin(pi x), "
            "Dirichlet.",
            _labels(family="burgers", type="parabolic", linearity="nonlinear"),
            (-1.0, 0.0),
            (1.0, 1.0),
            _op(_burgers, _burgers_jet, 1),
            _burgers_exact,
            time_dependent=True,
            zero_source=True,
        ),
        PDESpec(
            "allen_cahn1d",
            "Allen-Cahn u_t = 0.01 u_xx - 5 (u^3 - u) + s on [-1, 1] x [0, 1], manufactured "
            "u = cos(pi x) exp(-t), Dirichlet.",
            _labels(family="reaction_diffusion", type="parabolic", linearity="nonlinear"),
            (-1.0, 0.0),
            (1.0, 1.0),
            _op(_allen_cahn, _allen_cahn_jet, 1),
            lambda x: torch.cos(PI * x[:, 0]) * torch.exp(-x[:, 1]),
            time_dependent=True,
        ),
    ]
    return {s.name: s for s in specs}


#: The benchmark suite, by name.
PDE_SUITE: dict[str, PDESpec] = _suite()


def get_pde(name: str) -> PDESpec:
    """The suite's PDE called ``name``."""
    if name not in PDE_SUITE:
        raise ValueError(f"unknown PDE {name!r}; choose from {sorted(PDE_SUITE)}")
    return PDE_SUITE[name]
