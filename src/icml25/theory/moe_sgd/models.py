"""Models for *Mixture of Experts Provably Detect and Learn the Latent Cluster Structure in
Gradient-Based Learning* (Kawata et al., ICML 2025, https://arxiv.org/abs/2506.01656).

The paper's learners are a vanilla two-layer network and a mixture of two-layer experts with a
gating network (Sec. 4). The paper's exact parameterisation could not be recovered, so both are
built *in the style of* the paper: neurons ``sigma(u . x + b)`` with unit first-layer vectors
``u`` (spherical SGD keeps them on the sphere), a matched Hermite activation
``He_k*(z)/sqrt(k*!)`` by default (the paper lists a Hermite-polynomial activation) or ReLU with
a random bias, and a softmax router ``pi(x) = softmax(Theta x)`` whose top-k weights mix the
experts.

Each expert holds two neuron groups: group A is trained in stage I (cluster discovery), group B
in stage III (per-expert learning, including the global direction); see ``train``.

Notation: n samples, d input dimension, N neurons, M experts, J neurons per group.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from icml25.core.validate import check_finite_array, check_positive

from .hermite import HermiteLink

__all__ = ["Activation", "TwoLayerNet", "MoE", "random_unit_rows"]

ActName = Literal["hermite", "relu_bias"]


class Activation:
    """A neuron non-linearity with its derivative.

    ``"hermite"``: ``He_degree(z) / sqrt(degree!)`` (matched to the task's information exponent);
    ``"relu_bias"``: ``max(z, 0)`` (the bias is a separate neuron parameter, drawn U(-1, 1)).
    """

    def __init__(self, name: ActName = "hermite", degree: int = 3) -> None:
        if name not in ("hermite", "relu_bias"):
            raise ValueError(f"act must be 'hermite' or 'relu_bias', got {name!r}")
        check_positive("degree", degree, integer=True)
        self.name, self.degree = name, int(degree)
        self._link = HermiteLink({self.degree: 1.0}) if name == "hermite" else None

    def __call__(self, z: np.ndarray) -> np.ndarray:
        if self._link is None:
            return np.maximum(z, 0.0)
        if self.degree == 3:  # the default; a direct formula is faster than Clenshaw
            return (z * z * z - 3.0 * z) * (1.0 / math.sqrt(6.0))
        return self._link(z)

    def derivative(self, z: np.ndarray) -> np.ndarray:
        if self._link is None:
            return (z > 0).astype(z.dtype)
        if self.degree == 3:
            return (3.0 * z * z - 3.0) * (1.0 / math.sqrt(6.0))
        return self._link.derivative(z)

    @property
    def has_bias(self) -> bool:
        return self.name == "relu_bias"

    def __repr__(self) -> str:
        return f"Activation({self.name!r}, degree={self.degree})"


def random_unit_rows(shape: tuple[int, ...], d: int, rng: np.random.Generator) -> np.ndarray:
    """Independent uniform points on the unit sphere of R^d, shape ``(*shape, d)``."""
    U = rng.standard_normal((*shape, d))
    return U / np.linalg.norm(U, axis=-1, keepdims=True)


def _check_inputs(X: np.ndarray, d: int) -> None:
    check_finite_array("X", X, ndim=2)
    if X.shape[1] != d:
        raise ValueError(f"X must have shape (n, {d}), got {X.shape}")


class TwoLayerNet:
    """The vanilla learner ``F(x) = sum_j a_j sigma(u_j . x + b_j) + c0`` with unit ``u_j``.

    Args:
        d: input dimension.
        width: number of neurons N.
        act: ``"hermite"`` or ``"relu_bias"``.
        degree: Hermite degree of the matched activation.
        rng: draws the initial directions (and biases).

    Attributes:
        U: (N, d) unit first-layer vectors; b: (N,) biases (zero for ``"hermite"``);
        a: (N,) second layer; c0: output bias.
    """

    def __init__(
        self, d: int, width: int, *, act: ActName = "hermite", degree: int = 3, rng: np.random.Generator
    ) -> None:
        check_positive("d", d, integer=True)
        check_positive("width", width, integer=True)
        self.d, self.width = int(d), int(width)
        self.act = Activation(act, degree)
        self.U = random_unit_rows((width,), d, rng)
        self.b = rng.uniform(-1.0, 1.0, width) if self.act.has_bias else np.zeros(width)
        self.a = np.zeros(width)
        self.c0 = 0.0

    def features(self, X: np.ndarray) -> np.ndarray:
        """(n, N) neuron outputs ``sigma(U x + b)``."""
        _check_inputs(X, self.d)
        return self.act(X @ self.U.T + self.b)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return self.features(X) @ self.a + self.c0

    def neuron_directions(self) -> np.ndarray:
        """(N, d) every first-layer vector (for overlaps)."""
        return self.U


class MoE:
    """A mixture of ``M`` two-layer experts with a softmax router (Sec. 4, in the style of the paper).

    ``f_m(x) = sum_{j<2J} a_mj sigma(u_mj . x + b_mj) + c0_m``, neurons ``j < J`` form group A and
    ``j >= J`` group B; gate ``pi(x) = softmax(Theta x)``; output ``F(x) = sum_m g_m(x) f_m(x)``,
    where ``g`` is the softmax itself (``routing="soft"``) or its top-k entries renormalised
    (``routing="top"``; top-1 is the argmax expert).

    Args:
        d: input dimension.
        n_experts: M.
        neurons_per_group: J.
        act, degree: as for :class:`TwoLayerNet`.
        top_k: experts kept by ``routing="top"``.
        router_init: standard deviation of the initial router weights.
        rng: draws the initial parameters.
    """

    def __init__(
        self,
        d: int,
        n_experts: int,
        neurons_per_group: int,
        *,
        act: ActName = "hermite",
        degree: int = 3,
        top_k: int = 1,
        router_init: float = 1e-3,
        rng: np.random.Generator,
    ) -> None:
        check_positive("d", d, integer=True)
        check_positive("n_experts", n_experts, integer=True)
        check_positive("neurons_per_group", neurons_per_group, integer=True)
        check_positive("top_k", top_k, integer=True)
        if top_k > n_experts:
            raise ValueError(f"top_k must be at most n_experts={n_experts}, got {top_k}")
        self.d, self.n_experts, self.J, self.top_k = (
            int(d),
            int(n_experts),
            int(neurons_per_group),
            int(top_k),
        )
        self.act = Activation(act, degree)
        M, J = self.n_experts, self.J
        self.U = random_unit_rows((M, 2 * J), d, rng)  # [:, :J] group A, [:, J:] group B
        self.b = rng.uniform(-1.0, 1.0, (M, 2 * J)) if self.act.has_bias else np.zeros((M, 2 * J))
        self.a = np.zeros((M, 2 * J))
        self.c0 = np.zeros(M)
        self.Theta = router_init * rng.standard_normal((M, d))

    # -- experts -------------------------------------------------------------------------------

    def expert_features(self, X: np.ndarray) -> np.ndarray:
        """(n, M, 2J) every expert's neuron outputs."""
        _check_inputs(X, self.d)
        P = np.einsum("nd,mjd->nmj", X, self.U) + self.b
        return self.act(P)

    def expert_outputs(self, X: np.ndarray, *, group: Literal["all", "A", "B"] = "all") -> np.ndarray:
        """(n, M) ``f_m(x)`` using the neurons of ``group`` (and the output bias)."""
        Phi = self.expert_features(X)
        sl = {"all": slice(None), "A": slice(0, self.J), "B": slice(self.J, None)}[group]
        return np.einsum("nmj,mj->nm", Phi[:, :, sl], self.a[:, sl]) + self.c0

    # -- router --------------------------------------------------------------------------------

    def router_probs(self, X: np.ndarray) -> np.ndarray:
        """(n, M) ``softmax(Theta x)``."""
        _check_inputs(X, self.d)
        logits = X @ self.Theta.T
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    def route(self, X: np.ndarray) -> np.ndarray:
        """(n,) the top-1 expert of every sample."""
        return np.argmax(self.router_probs(X), axis=1)

    def gates(self, X: np.ndarray, routing: Literal["soft", "top"] = "top") -> np.ndarray:
        """(n, M) mixing weights: the softmax, or its ``top_k`` entries renormalised."""
        p = self.router_probs(X)
        if routing == "soft":
            return p
        if routing != "top":
            raise ValueError(f"routing must be 'soft' or 'top', got {routing!r}")
        if self.top_k == 1:
            return np.eye(self.n_experts)[np.argmax(p, axis=1)]
        keep = np.argsort(-p, axis=1)[:, : self.top_k]
        g = np.zeros_like(p)
        np.put_along_axis(g, keep, np.take_along_axis(p, keep, axis=1), axis=1)
        return g / g.sum(axis=1, keepdims=True)

    def __call__(self, X: np.ndarray, *, routing: Literal["soft", "top"] = "top") -> np.ndarray:
        return np.einsum("nm,nm->n", self.gates(X, routing), self.expert_outputs(X))

    def neuron_directions(self, group: Literal["all", "A", "B"] = "all") -> np.ndarray:
        """(neurons, d) the first-layer vectors of ``group`` over all experts."""
        sl = {"all": slice(None), "A": slice(0, self.J), "B": slice(self.J, None)}[group]
        return self.U[:, sl].reshape(-1, self.d)
