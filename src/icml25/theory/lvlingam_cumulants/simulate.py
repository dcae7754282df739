"""Latent-variable LiNGAM graphs, random models on them, exact source cumulants, and sampling.

Part of our implementation of *Causal Effect Identification in lvLiNGAM from Higher-Order Cumulants*
(Tramontano et al., ICML 2025, https://arxiv.org/abs/2506.05202). Implements the paper's lvLiNGAM
model and the random models of its simulations.

Model (the paper's lvLiNGAM in canonical form): ``V = A V + N`` with independent, zero-mean,
non-Gaussian noises. Observed variables come first (indices ``0..p-1``, in topological order),
latents last (``p..p+l-1``) and latents have no parents. ``adj_obs[v, w] = 1`` means ``w -> v`` and
``adj_latent[v, s] = 1`` means latent ``s -> v``, as in the released ``simulate_data.py``. The
observed data are ``X = N_obs-and-latent @ B'^T`` with ``B' = (I - Lambda)^{-1} [I, Gamma]``
(``(p, p + l)``; column ``s`` holds the total effects of source ``s``).

Simulation protocol (the paper's simulations as released in ``simulate_data.py`` and
``experiments_utils.py``, ported to numpy with an explicit generator): edge weights
``+-U(0.5, 0.9)`` with random sign; the first (topologically lowest) child of each latent gets
weight 1; noise parameters drawn per source (gamma shape U(0.1, 1) scale U(0.1, 0.5); beta alpha
U(1.5, 2) beta U(2, 10); lognormal mu U(-2, -0.5) sigma U(0.1, 0.4); exponential scale U(0.8, 1.2);
uniform radius U(1, 3)). Laplace (scale U(0.5, 1)) and Gaussian (sd U(0.5, 1)) are our additions:
Laplace is symmetric (third cumulant 0), Gaussian is unidentifiable and exists only to test that the
estimators refuse it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from .cumulants import Cumulants

__all__ = [
    "NOISE_KINDS",
    "LvLingamGraph",
    "LvLingamModel",
    "NoiseSpec",
    "iv_graph",
    "proxy_graph",
    "random_model",
    "simulate_lvlingam",
]

NoiseKind = Literal["gamma", "beta", "lognormal", "exponential", "uniform", "laplace", "gaussian"]
NOISE_KINDS: tuple[str, ...] = ("gamma", "beta", "lognormal", "exponential", "uniform", "laplace", "gaussian")
_N_PARAMS = {
    "gamma": 2,
    "beta": 2,
    "lognormal": 2,
    "exponential": 1,
    "uniform": 1,
    "laplace": 1,
    "gaussian": 1,
}


def _cumulants_from_raw(raw: list[float]) -> np.ndarray:
    """kappa_n = mu'_n - sum_{m=1}^{n-1} C(n-1, m-1) kappa_m mu'_{n-m} (raw[0] = 1)."""
    kappa = np.zeros(len(raw))
    for n in range(1, len(raw)):
        kappa[n] = raw[n] - sum(math.comb(n - 1, m - 1) * kappa[m] * raw[n - m] for m in range(1, n))
    return kappa


@dataclass(frozen=True)
class NoiseSpec:
    """One centred noise distribution: ``kind`` and its parameters.

    Parameters: gamma (shape, scale), beta (a, b), lognormal (mu, sigma), exponential (scale),
    uniform (radius), laplace (scale), gaussian (sd).
    """

    kind: NoiseKind
    params: tuple[float, ...]

    def __post_init__(self) -> None:
        if self.kind not in _N_PARAMS:
            raise ValueError(f"noise kind must be one of {NOISE_KINDS}, got {self.kind!r}")
        if len(self.params) != _N_PARAMS[self.kind]:
            raise ValueError(
                f"{self.kind} noise takes {_N_PARAMS[self.kind]} parameter(s), got {self.params}"
            )
        positive = self.params[1:] if self.kind == "lognormal" else self.params
        if any(not math.isfinite(v) or v <= 0 for v in positive):
            raise ValueError(f"{self.kind} noise parameters must be positive and finite, got {self.params}")

    @classmethod
    def draw(cls, kind: str, rng: np.random.Generator) -> NoiseSpec:
        """Parameters drawn as in the released simulator (``simulate_data.py``)."""
        u = rng.uniform
        table: dict[str, tuple[float, ...]] = {
            "gamma": (u(0.1, 1.0), u(0.1, 0.5)),
            "beta": (u(1.5, 2.0), u(2.0, 10.0)),
            "lognormal": (u(-2.0, -0.5), u(0.1, 0.4)),
            "exponential": (u(0.8, 1.2),),
            "uniform": (u(1.0, 3.0),),
            "laplace": (u(0.5, 1.0),),
            "gaussian": (u(0.5, 1.0),),
        }
        if kind not in table:
            raise ValueError(f"noise must be one of {NOISE_KINDS}, got {kind!r}")
        return cls(kind, table[kind])  # type: ignore[arg-type]

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` centred draws."""
        a = self.params
        if self.kind == "gamma":
            return rng.gamma(a[0], a[1], n) - a[0] * a[1]
        if self.kind == "beta":
            return rng.beta(a[0], a[1], n) - a[0] / (a[0] + a[1])
        if self.kind == "lognormal":
            return rng.lognormal(a[0], a[1], n) - math.exp(a[0] + a[1] ** 2 / 2)
        if self.kind == "exponential":
            return rng.exponential(a[0], n) - a[0]
        if self.kind == "uniform":
            return rng.uniform(-a[0], a[0], n)
        if self.kind == "laplace":
            return rng.laplace(0.0, a[0], n)
        return rng.normal(0.0, a[0], n)

    def cumulants(self, max_order: int) -> np.ndarray:
        """Exact cumulants ``kappa_0..kappa_K`` (``kappa_0 = kappa_1 = 0``: centred), shape ``(K+1,)``."""
        K = max_order
        a = self.params
        r = np.arange(K + 1)
        fact = np.array([math.factorial(max(int(k) - 1, 0)) for k in r], dtype=float)
        if self.kind == "gamma":
            kappa = a[0] * a[1] ** r * fact
        elif self.kind == "exponential":
            kappa = a[0] ** r * fact
        elif self.kind == "beta":
            raw = [math.prod((a[0] + i) / (a[0] + a[1] + i) for i in range(k)) for k in range(K + 1)]
            kappa = _cumulants_from_raw(raw)
        elif self.kind == "lognormal":
            kappa = _cumulants_from_raw([math.exp(k * a[0] + k * k * a[1] ** 2 / 2) for k in range(K + 1)])
        elif self.kind == "uniform":
            bern = {2: 1 / 6, 4: -1 / 30, 6: 1 / 42, 8: -1 / 30, 10: 5 / 66}
            if K > 10:
                raise ValueError("uniform cumulants are tabulated up to order 10")
            kappa = np.array([bern.get(int(k), 0.0) * (2 * a[0]) ** k / max(int(k), 1) for k in r])
        elif self.kind == "laplace":
            kappa = np.array(
                [2 * math.factorial(k - 1) * a[0] ** k if k >= 2 and k % 2 == 0 else 0.0 for k in r]
            )
        else:
            kappa = np.array([a[0] ** 2 if k == 2 else 0.0 for k in r])
        kappa = np.asarray(kappa, dtype=float)
        kappa[:2] = 0.0
        return kappa


# ----------------------------------------------------------------------------------------------
# graphs and models
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LvLingamGraph:
    """A latent-variable LiNGAM graph: observed DAG plus latent -> observed edges.

    Args:
        adj_obs: ``(p, p)`` 0/1, strictly lower triangular (``adj_obs[v, w] = 1``: ``w -> v``).
        adj_latent: ``(p, l)`` 0/1 (``adj_latent[v, s] = 1``: latent ``s -> v``); every latent has
            at least one child.
        names: observed variable names (length p).
    """

    adj_obs: tuple[tuple[int, ...], ...]
    adj_latent: tuple[tuple[int, ...], ...]
    names: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        A, G = self.obs, self.latent
        p = A.shape[0]
        if A.ndim != 2 or A.shape != (p, p) or not np.isin(A, (0, 1)).all():
            raise ValueError(f"adj_obs must be a square 0/1 matrix, got {A.tolist()}")
        if np.triu(A).any():
            raise ValueError("adj_obs must be strictly lower triangular (variables in topological order)")
        if G.ndim != 2 or G.shape[0] != p or not np.isin(G, (0, 1)).all():
            raise ValueError(f"adj_latent must be a ({p}, l) 0/1 matrix, got shape {G.shape}")
        if G.shape[1] and (G.sum(axis=0) == 0).any():
            raise ValueError("every latent must have at least one observed child")
        if self.names and len(self.names) != p:
            raise ValueError(f"names must have {p} entries, got {self.names}")

    @property
    def obs(self) -> np.ndarray:
        return np.array(self.adj_obs, dtype=int).reshape(len(self.adj_obs), -1)

    @property
    def latent(self) -> np.ndarray:
        return np.array(self.adj_latent, dtype=int).reshape(len(self.adj_obs), -1)

    @property
    def p(self) -> int:
        return len(self.adj_obs)

    @property
    def n_latent(self) -> int:
        return self.latent.shape[1]


def _tuple2(a: np.ndarray) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(v) for v in row) for row in a)


def proxy_graph(n_latent: int = 1, *, proxy_affects_treatment: bool = False) -> LvLingamGraph:
    """Proxy graph (Z = 0, T = 1, Y = 2): every latent -> Z, T, Y; T -> Y; optionally Z -> T."""
    if n_latent < 1:
        raise ValueError(f"n_latent must be >= 1, got {n_latent}")
    A = np.zeros((3, 3), dtype=int)
    A[2, 1] = 1
    if proxy_affects_treatment:
        A[1, 0] = 1
    return LvLingamGraph(_tuple2(A), _tuple2(np.ones((3, n_latent), dtype=int)), ("Z", "T", "Y"))


def iv_graph() -> LvLingamGraph:
    """Underspecified IV graph (Z = 0, T1 = 1, T2 = 2, Y = 3): Z -> T1, T2; T1, T2 -> Y;
    latent L1 -> T2, Y and latent L2 -> T1, Y (the paper's IV experiment graph)."""
    A = np.zeros((4, 4), dtype=int)
    A[1, 0] = A[2, 0] = A[3, 1] = A[3, 2] = 1
    G = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    return LvLingamGraph(_tuple2(A), _tuple2(G), ("Z", "T1", "T2", "Y"))


@dataclass(frozen=True)
class LvLingamModel:
    """Weights and noises on a graph.

    Args:
        lam: ``(p, p)`` direct effects among observed variables (``lam[v, w]``: ``w -> v``).
        gamma: ``(p, l)`` latent loadings.
        noises: ``p + l`` noise specs, observed noises first, then latents.
    """

    lam: np.ndarray
    gamma: np.ndarray
    noises: tuple[NoiseSpec, ...]

    def __post_init__(self) -> None:
        p = self.lam.shape[0]
        if self.lam.shape != (p, p) or self.gamma.shape[0] != p:
            raise ValueError(f"lam must be (p, p) and gamma (p, l); got {self.lam.shape}, {self.gamma.shape}")
        if len(self.noises) != p + self.gamma.shape[1]:
            raise ValueError(f"need {p + self.gamma.shape[1]} noises (p + l), got {len(self.noises)}")

    @property
    def p(self) -> int:
        return int(self.lam.shape[0])

    @property
    def total_effects(self) -> np.ndarray:
        """``(I - Lambda)^{-1}``: entry ``[v, w]`` is the total effect of ``w`` on ``v``."""
        return np.linalg.inv(np.eye(self.p) - self.lam)

    @property
    def mixing(self) -> np.ndarray:
        """``B' = (I - Lambda)^{-1} [I, Gamma]``, shape ``(p, p + l)``."""
        T = self.total_effects
        return np.hstack([T, T @ self.gamma])

    def effect(self, cause: int, outcome: int) -> float:
        """Total causal effect of observed ``cause`` on observed ``outcome``."""
        return float(self.total_effects[outcome, cause])

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` draws of the observed variables, shape ``(n, p)``."""
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        N = np.stack([s.sample(n, rng) for s in self.noises], axis=1)
        return N @ self.mixing.T

    def population_cumulants(self, max_order: int) -> Cumulants:
        """Exact cumulants of the observed variables up to ``max_order``."""
        omega = np.stack([s.cumulants(max_order) for s in self.noises])
        return Cumulants.from_mixing(self.mixing, omega)


def random_model(
    graph: LvLingamGraph,
    noise: str | tuple[str, ...] = "gamma",
    rng: np.random.Generator | int | None = None,
    *,
    weight_range: tuple[float, float] = (0.5, 0.9),
) -> LvLingamModel:
    """Random weights and noise parameters on ``graph``, as in the released simulator.

    Args:
        graph: the graph.
        noise: one kind for all sources or one per source (observed first, then latents).
        rng: generator or seed.
        weight_range: ``|weight| ~ U(weight_range)``, random sign.
    """
    gen = np.random.default_rng(rng)
    lo, hi = weight_range
    if not 0 < lo <= hi:
        raise ValueError(f"weight_range must satisfy 0 < low <= high, got {weight_range}")
    A, G = graph.obs, graph.latent
    p, l = A.shape[0], G.shape[1]
    kinds = (noise,) * (p + l) if isinstance(noise, str) else tuple(noise)
    if len(kinds) != p + l:
        raise ValueError(f"noise must be one kind or {p + l} kinds, got {len(kinds)}")

    def weights(mask: np.ndarray) -> np.ndarray:
        w = gen.choice([-1.0, 1.0], mask.shape) * gen.uniform(lo, hi, mask.shape)
        return np.where(mask == 1, w, 0.0)

    lam = weights(A)
    gamma = weights(G)
    for s in range(l):  # scale fixing: the first child of each latent gets weight 1
        gamma[int(np.argmax(G[:, s] != 0)), s] = 1.0
    noises = tuple(NoiseSpec.draw(k, gen) for k in kinds)
    return LvLingamModel(lam, gamma, noises)


def simulate_lvlingam(
    n: int,
    adj_obs: np.ndarray,
    adj_latent: np.ndarray,
    noise: str = "gamma",
    rng: np.random.Generator | int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw a random model on the graph and ``n`` samples from it.

    Returns:
        ``X`` of shape ``(n, p)`` and ``B'`` of shape ``(p, p + l)`` (total effects of every
        source; its first p columns are the observed-to-observed total effects).
    """
    gen = np.random.default_rng(rng)
    graph = LvLingamGraph(_tuple2(np.asarray(adj_obs)), _tuple2(np.asarray(adj_latent)))
    model = random_model(graph, noise, gen)
    return model.sample(n, gen), model.mixing
