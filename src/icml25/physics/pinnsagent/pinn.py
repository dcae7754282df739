"""The PINN trainer and configuration space searched in *PINNsAgent: Automated PDE Surrogation
with Large Language Models* (Wuwu et al., ICML 2025, arXiv 2501.12053).

A configuration (Table 1 of the paper, reduced to what trains in about a second on a CPU) sets
the network (plain ``fnn``, layer-wise ``laaf`` or global ``gaaf`` adaptive activations, Jagtap et
al.), activation, width, depth, initializer, optimizer, learning rate, collocation sampling
(uniform or Sobol), the numbers of domain and boundary points, and the boundary-loss weight. A
PINN is trained on L = mean |N[u] - s|^2 + w_bc * mean |u - g|^2 on the boundary (plus
u_t at t = 0 for second-order-in-time PDEs) for a fixed number of steps; its test error is the
relative L2 error (and MSE) against the reference on a grid (paper Sec. 3.1).

The loop here is our own rather than ``icml25.nn.fit``: the loss needs derivatives of the network
at collocation points, which ``fit``'s supervised batches do not provide. By default they are
propagated forward through the layers with the values (:func:`jet_forward`: value, gradient and
the pure second derivatives the operator reads, in one pass) rather than taken by one nested
autograd call per derivative; ``derivatives="autograd"`` keeps the nested calls.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from icml25.core.validate import check_positive, check_tensor_dtype

from .pdes import DiffOperator, PDESpec, grad

#: How the trainer differentiates the network for the PDE residual (see :func:`train_pinn`).
DERIVATIVES = ("jet", "autograd")

#: The reduced search space: parameter -> allowed values (ordered; numeric ones ascending).
DEFAULT_SPACE: dict[str, tuple[Any, ...]] = {
    "net": ("fnn", "laaf", "gaaf"),
    "activation": ("tanh", "sin", "silu", "gelu", "sigmoid", "relu", "elu", "gaussian"),
    "width": (8, 16, 32, 48, 64),
    "depth": (2, 3, 4, 5),
    "initializer": ("glorot_normal", "glorot_uniform", "he_normal", "he_uniform", "zeros"),
    "optimizer": ("adam", "adamw", "rmsprop", "sgd"),
    "lr": (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2),
    "sampling": ("uniform", "sobol"),
    "n_domain": (64, 128, 256, 512),
    "n_boundary": (16, 32, 64, 128),
    "bc_weight": (1.0, 10.0, 100.0),
}

DEFAULT_CONFIG: dict[str, Any] = {
    "net": "fnn",
    "activation": "tanh",
    "width": 32,
    "depth": 3,
    "initializer": "glorot_normal",
    "optimizer": "adam",
    "lr": 1e-3,
    "sampling": "uniform",
    "n_domain": 256,
    "n_boundary": 64,
    "bc_weight": 10.0,
}


class SearchSpace:
    """A finite product space of hyperparameters (paper Table 1, reduced).

    Args:
        values: parameter -> non-empty tuple of allowed values (defaults to :data:`DEFAULT_SPACE`).
        max_width: drop widths above this (the cheap scales use narrow nets).
    """

    def __init__(self, values: Mapping[str, tuple[Any, ...]] | None = None, *, max_width: int | None = None):
        vals = dict(DEFAULT_SPACE if values is None else values)
        if not vals:
            raise ValueError("values must hold at least one parameter")
        if max_width is not None:
            check_positive("max_width", max_width, integer=True)
            if "width" in vals:
                vals["width"] = tuple(w for w in vals["width"] if w <= max_width) or (min(vals["width"]),)
        for key, options in vals.items():
            if not isinstance(options, tuple) or not options:
                raise ValueError(f"values[{key!r}] must be a non-empty tuple")
        self.values: dict[str, tuple[Any, ...]] = vals

    @property
    def params(self) -> tuple[str, ...]:
        """The parameter names, in order."""
        return tuple(self.values)

    def size(self) -> int:
        """Number of configurations."""
        return math.prod(len(v) for v in self.values.values())

    def sample(self, rng: np.random.Generator) -> dict[str, Any]:
        """A uniformly random configuration."""
        return {k: v[int(rng.integers(len(v)))] for k, v in self.values.items()}

    def default(self) -> dict[str, Any]:
        """:data:`DEFAULT_CONFIG` snapped into this space."""
        return self.snap_config({k: DEFAULT_CONFIG.get(k, v[0]) for k, v in self.values.items()})

    def snap(self, param: str, value: Any) -> Any | None:
        """The allowed value of ``param`` nearest to ``value`` (numbers compared in log scale for
        positive ones; strings case-insensitively); None if ``value`` cannot be matched."""
        if param not in self.values:
            return None
        options = self.values[param]
        if isinstance(options[0], str):
            text = str(value).strip().strip("'\"").lower()
            for o in options:
                if text == o:
                    return o
            return None
        try:
            v = float(value)
        except (TypeError, ValueError):
            return None
        if not math.isfinite(v):
            return None
        if all(float(o) > 0 for o in options) and v > 0:
            best = min(options, key=lambda o: abs(math.log(float(o)) - math.log(v)))
        else:
            best = min(options, key=lambda o: abs(float(o) - v))
        return best

    def snap_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Every parameter snapped; missing or unmatchable ones take the first allowed value."""
        out = {}
        for k, options in self.values.items():
            v = self.snap(k, config[k]) if k in config else None
            out[k] = options[0] if v is None else v
        return out

    def contains(self, config: Mapping[str, Any]) -> bool:
        """Whether ``config`` sets exactly this space's parameters to allowed values."""
        return set(config) == set(self.values) and all(config[k] in v for k, v in self.values.items())


def config_key(config: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """A hashable key of a configuration."""
    return tuple(sorted(config.items()))


class _Act(nn.Module):
    """sigma(n * a * z), with ``a`` trainable (LAAF per layer, GAAF shared) or fixed (fnn: n a = 1)."""

    def __init__(self, name: str, slope: nn.Parameter | None, n: float = 10.0) -> None:
        super().__init__()
        self.name = name
        self.slope = slope
        self.n = n

    def forward(self, z: Tensor) -> Tensor:
        if self.slope is not None:
            z = self.n * self.slope * z
        return activation(self.name, z)


def activation(name: str, z: Tensor) -> Tensor:
    """The named activation function."""
    if name == "tanh":
        return torch.tanh(z)
    if name == "sin":
        return torch.sin(z)
    if name == "silu":
        return nn.functional.silu(z)
    if name == "gelu":
        return nn.functional.gelu(z)
    if name == "sigmoid":
        return torch.sigmoid(z)
    if name == "relu":
        return torch.relu(z)
    if name == "elu":
        return nn.functional.elu(z)
    if name == "gaussian":
        return torch.exp(-(z**2))
    raise ValueError(f"unknown activation {name!r}")


_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)


def activation_jet(name: str, z: Tensor) -> tuple[Tensor, Tensor, Tensor | None]:
    """The named activation and its first and second derivatives at ``z``: ``(s(z), s'(z), s''(z))``;
    ``s''`` is None where it is zero almost everywhere (relu). Each formula is differentiable, so
    parameter gradients flow through the derivatives as they do through nested autograd."""
    if name == "tanh":
        a = torch.tanh(z)
        d1 = 1.0 - a * a
        return a, d1, -2.0 * a * d1
    if name == "sin":
        a = torch.sin(z)
        return a, torch.cos(z), -a
    if name == "sigmoid":
        a = torch.sigmoid(z)
        d1 = a * (1.0 - a)
        return a, d1, d1 * (1.0 - 2.0 * a)
    if name == "silu":
        s = torch.sigmoid(z)
        q = s * (1.0 - s)
        return nn.functional.silu(z), s + z * q, q * (2.0 + z * (1.0 - 2.0 * s))
    if name == "gelu":
        pdf = torch.exp(-0.5 * z * z) * _INV_SQRT_2PI
        cdf = 0.5 * (1.0 + torch.erf(z * _INV_SQRT_2))
        return nn.functional.gelu(z), cdf + z * pdf, pdf * (2.0 - z * z)
    if name == "relu":
        return torch.relu(z), (z > 0).to(z.dtype), None
    if name == "elu":  # alpha = 1: s = z for z > 0, exp(z) - 1 otherwise
        a = nn.functional.elu(z)
        pos = z > 0
        neg = a + 1.0  # exp(z) where z <= 0 (masked elsewhere: no overflow reaches the gradient)
        return a, torch.where(pos, torch.ones_like(z), neg), torch.where(pos, torch.zeros_like(z), neg)
    if name == "gaussian":
        a = torch.exp(-(z**2))
        return a, -2.0 * z * a, (4.0 * z * z - 2.0) * a
    raise ValueError(f"unknown activation {name!r}")


def jet_forward(model: PINNNet, x: Tensor, n_second: int = 0) -> tuple[Tensor, Tensor, Tensor | None]:
    """u(x), its gradient and the pure second derivatives of its first ``n_second`` coordinates,
    propagated forward through the layers (forward-mode, the diagonal of the Hessian only).

    For z = W h + b the derivatives map linearly (J_z = J_h W^T, H_z = H_h W^T); for a = s(z)
    elementwise, J_a = s'(z) J_z and H_a = s''(z) J_z^2 + s'(z) H_z. One pass replaces the nested
    autograd calls of ``grad``/``second`` (one per derivative); the values agree with them to float
    round-off, and backpropagating through this pass gives the same parameter gradients.

    Args:
        model: the network.
        x: points (N, d), float32; they need not require grad.
        n_second: how many leading coordinates need d^2u/dx_i^2 (0 <= n_second <= d).

    Returns:
        ``u`` (N,), ``du`` (N, d) and ``d2u`` (N, n_second), None when ``n_second`` is 0.
    """
    if not isinstance(x, Tensor) or x.ndim != 2:
        raise ValueError("x must be a 2-D tensor of points")
    d = x.shape[1]
    if not 0 <= n_second <= d:
        raise ValueError(f"n_second must be in [0, {d}], got {n_second}")
    h, jac = _input_jet(model, x)
    return _jet_layers(model, h, jac, n_second)


def _input_jet(model: PINNNet, x: Tensor) -> tuple[Tensor, Tensor]:
    """The input map h = 2 (x - lo) / (hi - lo) - 1 and its Jacobian, shape (d, 1, d) (constant)."""
    lo, hi = model.get_buffer("lo"), model.get_buffer("hi")
    return 2.0 * (x - lo) / (hi - lo) - 1.0, torch.diag(2.0 / (hi - lo)).unsqueeze(1)


def _jet_layers(
    model: PINNNet, h: Tensor, jac: Tensor, n_second: int
) -> tuple[Tensor, Tensor, Tensor | None]:
    """:func:`jet_forward` from the mapped inputs ``h`` (N, d) and their Jacobian ``jac``."""
    d = jac.shape[0]
    hess: Tensor | None = None  # (n_second, N, width); None = zero (the input map is affine)
    linears = list(model.linears)
    for lin, act in zip(linears[:-1], model.acts, strict=True):
        assert isinstance(lin, nn.Linear) and isinstance(act, _Act)
        wt = lin.weight.t()
        z = nn.functional.linear(h, lin.weight, lin.bias)
        jz = jac @ wt
        hz = None if hess is None else hess @ wt
        if act.slope is not None:
            scale = act.n * act.slope
            z, jz = scale * z, scale * jz
            hz = None if hz is None else scale * hz
        a, d1, d2 = activation_jet(act.name, z)
        if n_second:
            js = jz if n_second == d else jz[:n_second]
            if d2 is None:
                hess = None if hz is None else d1 * hz
            elif hz is None:
                hess = d2 * js * js
            else:
                hess = torch.addcmul(d1 * hz, d2 * js, js)
        h, jac = a, d1 * jz
    last = linears[-1]
    assert isinstance(last, nn.Linear)
    u = nn.functional.linear(h, last.weight, last.bias)[:, 0]
    wo = last.weight[0]
    du = (jac * wo).sum(-1).t()
    if not n_second:
        return u, du, None
    if hess is None:  # piecewise-linear network: zero curvature
        return u, du, torch.zeros(h.shape[0], n_second, dtype=h.dtype)
    return u, du, (hess * wo).sum(-1).t()


class PINNNet(nn.Module):
    """A fully connected network of ``depth`` hidden layers of ``width`` units, inputs mapped from the
    PDE's box to [-1, 1]^d.

    Args:
        lower, upper: the input box.
        width, depth: hidden size and number of hidden layers (positive).
        activation: an activation name of :data:`DEFAULT_SPACE`.
        net: ``fnn``, ``laaf`` (a trainable slope per layer) or ``gaaf`` (one shared slope).
        initializer: weight initializer name; biases start at zero.
        generator: seeds the initialisation.
    """

    def __init__(
        self,
        lower: tuple[float, ...],
        upper: tuple[float, ...],
        *,
        width: int,
        depth: int,
        activation: str = "tanh",
        net: str = "fnn",
        initializer: str = "glorot_normal",
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        check_positive("width", width, integer=True)
        check_positive("depth", depth, integer=True)
        if net not in ("fnn", "laaf", "gaaf"):
            raise ValueError(f"net must be fnn, laaf or gaaf, got {net!r}")
        self.register_buffer("lo", torch.tensor(lower, dtype=torch.float32))
        self.register_buffer("hi", torch.tensor(upper, dtype=torch.float32))
        d = len(lower)
        sizes = [d] + [width] * depth + [1]
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:], strict=True))
        shared = nn.Parameter(torch.tensor(0.1)) if net == "gaaf" else None
        self.slopes = nn.ParameterList(
            [nn.Parameter(torch.tensor(0.1)) for _ in range(depth)] if net == "laaf" else []
        )
        self.shared = shared
        self.acts = nn.ModuleList(
            _Act(activation, self.slopes[i] if net == "laaf" else shared) for i in range(depth)
        )
        for lin in self.linears:
            assert isinstance(lin, nn.Linear)
            init_weight(lin.weight, initializer, generator)
            nn.init.zeros_(lin.bias)

    def forward(self, x: Tensor) -> Tensor:
        """u(x) of shape (N, 1) for points ``x`` of shape (N, d), float32."""
        if not isinstance(x, Tensor):
            raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
        check_tensor_dtype("x", x, torch.float32)
        if x.ndim != 2 or x.shape[1] != self.get_buffer("lo").shape[0]:
            raise ValueError(f"x must have shape (N, {self.get_buffer('lo').shape[0]}), got {tuple(x.shape)}")
        if x.shape[0] == 0:
            raise ValueError("x is empty")
        if not x.requires_grad and not bool(torch.isfinite(x).all()):
            raise ValueError("x contains NaN or infinite values")
        return self.unchecked_forward(x)

    def unchecked_forward(self, x: Tensor) -> Tensor:
        """:meth:`forward` without its input checks (the training loop calls it on its own points)."""
        lo, hi = self.get_buffer("lo"), self.get_buffer("hi")
        h = 2.0 * (x - lo) / (hi - lo) - 1.0
        for lin, act in zip(self.linears[:-1], self.acts, strict=True):
            h = act(lin(h))
        return self.linears[-1](h)


def init_weight(w: Tensor, name: str, generator: torch.Generator | None) -> None:
    """Initialise ``w`` in place with the named scheme."""
    fan_out, fan_in = w.shape
    with torch.no_grad():
        if name == "zeros":
            w.zero_()
        elif name == "glorot_normal":
            w.normal_(0.0, math.sqrt(2.0 / (fan_in + fan_out)), generator=generator)
        elif name == "glorot_uniform":
            b = math.sqrt(6.0 / (fan_in + fan_out))
            w.uniform_(-b, b, generator=generator)
        elif name == "he_normal":
            w.normal_(0.0, math.sqrt(2.0 / fan_in), generator=generator)
        elif name == "he_uniform":
            b = math.sqrt(6.0 / fan_in)
            w.uniform_(-b, b, generator=generator)
        else:
            raise ValueError(f"unknown initializer {name!r}")


@dataclass(frozen=True)
class TrainResult:
    """Outcome of one PINN training: test relative L2 error and MSE, final loss, seconds."""

    l2rel: float
    mse: float
    train_loss: float
    seconds: float

    @property
    def log_l2(self) -> float:
        """log10 of the relative L2 error, capped at 2 (diverged runs count as 100)."""
        v = self.l2rel
        return 2.0 if not math.isfinite(v) or v <= 0 else min(2.0, math.log10(v))


def _unit_points(n: int, d: int, sampling: str, generator: torch.Generator) -> Tensor:
    if sampling == "sobol":
        seed = int(torch.randint(2**31 - 1, (1,), generator=generator))
        return torch.quasirandom.SobolEngine(d, scramble=True, seed=seed).draw(n)
    if sampling == "uniform":
        return torch.rand(n, d, generator=generator)
    raise ValueError(f"sampling must be uniform or sobol, got {sampling!r}")


def _make_optimizer(
    name: str, params: list[nn.Parameter], lr: float, fast: bool = False
) -> torch.optim.Optimizer:
    """The named optimizer; ``fast`` takes torch's fused step (Adam, AdamW, SGD) or its multi-tensor
    step (RMSprop), the same update formulas in fewer kernel calls; else the per-tensor step."""
    if name == "adam":
        if fast:
            return torch.optim.Adam(params, lr=lr, fused=True)
        return torch.optim.Adam(params, lr=lr)
    if name == "adamw":
        if fast:
            return torch.optim.AdamW(params, lr=lr, weight_decay=1e-4, fused=True)
        return torch.optim.AdamW(params, lr=lr, weight_decay=1e-4)
    if name == "rmsprop":
        if fast:
            return torch.optim.RMSprop(params, lr=lr, foreach=True)
        return torch.optim.RMSprop(params, lr=lr)
    if name == "sgd":
        if fast:
            return torch.optim.SGD(params, lr=lr, momentum=0.9, fused=True)
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    raise ValueError(f"unknown optimizer {name!r}")


def train_pinn(
    pde: PDESpec,
    config: Mapping[str, Any],
    *,
    steps: int = 200,
    seed: int = 0,
    test_per_axis: int = 41,
    space: SearchSpace | None = None,
    derivatives: str = "jet",
) -> TrainResult:
    """Train a PINN with ``config`` on ``pde`` for ``steps`` full-batch steps; test on a grid.

    ``config`` must set every parameter of ``space`` (default :data:`DEFAULT_SPACE`) to an allowed
    value. The same (pde, config, seed) always gives the same result on one machine.

    ``derivatives="jet"`` (default) evaluates the residual of a :class:`DiffOperator` on derivatives
    propagated forward through the network (:func:`jet_forward`); ``"autograd"`` (and any operator
    that is a plain function) applies the operator by nested autograd calls, as the earlier code
    did (op for op, with the per-tensor optimizer step). The jet path evaluates the domain, boundary
    and initial-velocity points in one pass and takes torch's fused (Adam, AdamW, SGD) or
    multi-tensor (RMSprop) optimizer step. The two agree to float round-off per step.
    """
    if derivatives not in DERIVATIVES:
        raise ValueError(f"derivatives must be one of {DERIVATIVES}, got {derivatives!r}")
    space = space or SearchSpace()
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping, got {type(config).__name__}")
    missing = [k for k in DEFAULT_CONFIG if k not in config]
    if missing:
        raise ValueError(f"config is missing {missing}")
    for k in DEFAULT_CONFIG:
        if k in space.values and config[k] not in space.values[k]:
            raise ValueError(f"config[{k!r}]={config[k]!r} is not in the search space {space.values[k]}")
    check_positive("steps", steps, integer=True)
    check_positive("test_per_axis", test_per_axis, integer=True)
    t0 = time.perf_counter()
    gen = torch.Generator().manual_seed(seed)
    c = dict(config)
    model = PINNNet(
        pde.lower,
        pde.upper,
        width=int(c["width"]),
        depth=int(c["depth"]),
        activation=str(c["activation"]),
        net=str(c["net"]),
        initializer=str(c["initializer"]),
        generator=gen,
    )
    d = pde.dim
    xd = pde.scale(_unit_points(int(c["n_domain"]), d, str(c["sampling"]), gen))
    sd = pde.source(xd)
    xb = pde.boundary_points(_unit_points(int(c["n_boundary"]), d, str(c["sampling"]), gen), gen)
    gb = pde.exact(xb).detach()
    xv = xt = None
    vt = None
    if pde.initial_velocity:
        unit = _unit_points(int(c["n_boundary"]), d, str(c["sampling"]), gen)
        unit[:, -1] = 0.0
        xv = pde.scale(unit)
        xt = xv.clone().requires_grad_(True)
        vt = grad(pde.exact(xt).unsqueeze(1), xt)[:, -1].detach()
    op = pde.operator
    jet = op if derivatives == "jet" and isinstance(op, DiffOperator) else None
    nd, nb = xd.shape[0], xb.shape[0]
    h_all: Tensor | None = None
    jac0: Tensor | None = None
    if jet is not None:
        # one pass over the domain, boundary (and initial-velocity) points together; the input map
        # is constant, so it is computed once
        h_all, jac0 = _input_jet(model, torch.cat([xd, xb] if xv is None else [xd, xb, xv]))
    else:
        xd.requires_grad_(True)
    # the fast path also takes the fused / multi-tensor optimizer step; the autograd path keeps the
    # earlier per-tensor step, so derivatives="autograd" is the earlier trainer op for op
    params = list(model.parameters())
    opt = _make_optimizer(str(c["optimizer"]), params, float(c["lr"]), fast=jet is not None)
    w = float(c["bc_weight"])
    loss_value = math.nan
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        if jet is not None and h_all is not None and jac0 is not None:
            u, du, d2u = _jet_layers(model, h_all, jac0, jet.n_second)
            res = jet.jet(u[:nd], du[:nd], None if d2u is None else d2u[:nd]) - sd
            loss = res.pow(2).mean() + w * (u[nd : nd + nb] - gb).pow(2).mean()
            if xv is not None and vt is not None:
                loss = loss + w * (du[nd + nb :, -1] - vt).pow(2).mean()
        else:  # the earlier trainer, op for op
            res = op(model.unchecked_forward(xd), xd) - sd
            loss = res.pow(2).mean() + w * (model.unchecked_forward(xb)[:, 0] - gb).pow(2).mean()
            if xv is not None and vt is not None:
                xr = xv.clone().requires_grad_(True)
                loss = loss + w * (grad(model.unchecked_forward(xr), xr)[:, -1] - vt).pow(2).mean()
        value = float(loss.detach())
        if not math.isfinite(value):
            loss_value = math.inf
            break
        loss.backward()
        opt.step()
        loss_value = value
    with torch.no_grad():
        xg = pde.test_grid(test_per_axis)
        ref = pde.exact(xg)
        pred = model(xg)[:, 0]
        err = pred - ref
        mse = float(err.pow(2).mean())
        l2 = float(err.norm() / ref.norm().clamp_min(1e-12))
    if not math.isfinite(loss_value) or not math.isfinite(l2):
        l2, mse = math.inf, math.inf
    return TrainResult(l2rel=l2, mse=mse, train_loss=loss_value, seconds=time.perf_counter() - t0)


def replace(config: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy of ``config`` with ``changes`` applied."""
    out = dict(config)
    out.update(changes)
    return out
