"""Simulated multi-subject spiking populations for *Neural Representational Consistency Emerges from
Probabilistic Neural-Behavioral Representation Alignment* (PNBA; Zhu et al., ICML 2025,
https://arxiv.org/abs/2505.04331).

The paper's zero-shot claims are about animals that share latent neural dynamics but have different
neurons. Real monkey/mouse recordings are not available offline, so this module simulates the
situation with a centre-out reaching task in which the shared structure is true by construction:

* behaviour: hand velocity ``v(t) = s(t) [cos θ, sin θ]`` with a bell-shaped speed profile whose
  amplitude (±15 %) and peak time (±2 bins) vary per trial (one *behaviour instance*);
* shared latent dynamics ``z(t) ∈ R^8``: ``u(t) = M φ(t)`` with
  ``φ = [s cos θ, s sin θ, ṡ cos θ, ṡ sin θ, p cos θ, p sin θ, s, 1]`` (``p`` a preparatory bump),
  passed through a shared slow rotation ``z_t = ρ R z_{t-1} + u_t``, scaled to unit variance, plus
  smooth per-trial noise (std 0.1);
* cell types (``readout="prototypes"``, the default): ``n_cell_types`` prototype readout directions
  ``p_k`` (unit norm) and type log-rates (evenly spaced in log between ``type_rates`` Hz) are drawn
  once and shared by every subject, as cortical cell classes are shared across animals; a neuron of
  type ``k`` (uniform over types) reads out ``c_n = p_k + readout_noise · ε`` (``ε ~ N(0, I/d)``) with
  log-baseline ``log rate_k + N(0, 0.2)``. The readout distribution is the same anisotropic mixture
  in every subject, so which latent directions a neuron carries is revealed (up to noise) by its
  type's firing rate, and an order-invariant encoder can decode an unseen subject zero-shot;
* ``readout="isotropic"`` (the earlier simulator): rows ``c_n ~ N(0, I/8)`` and log-baselines
  ``N(log 5 Hz, 0.5)``; the readout distribution is rotation invariant, so a single trial of an
  unseen subject reveals its latent only up to an unknown rotation and zero-shot decoding is capped
  for every encoder that does not know the neurons' identities;
* subject ``s``: ``N_s`` neurons with readouts as above, gains ``U(0.7, 1.3)``, a random neuron order;
  a second session rotates the readout by ~0.1 rad and replaces 10 % of the neurons (new neurons
  drawn from the same distribution); rates ``exp(b + g c·z)`` clipped at 100 Hz and Poisson counts in
  25 ms bins.

Held-out (validation and test) subjects all perform the *same* behaviour instances (``pair_id``), the
analogue of repeated video clips in Sensorium 2023, so paired trials exist across subjects while no
neuron correspondence does. ``shared_dynamics=False`` draws ``M`` per subject: the negative control in
which no common latent structure exists to be found.

Notation: ``T`` time bins, ``N`` neurons of one recording, ``K`` trials.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import Tensor

from icml25.core.validate import check_fields

__all__ = [
    "SyntheticPopulationConfig",
    "Recording",
    "MultiSubjectData",
    "PaddedRecordings",
    "make_multisubject_reaching",
    "pad_recordings",
]

DT = 0.025  # seconds per bin
N_CONDITIONS = 8


@dataclass(frozen=True)
class SyntheticPopulationConfig:
    """The simulated experiment.

    Args:
        n_train_subjects: subjects whose trials (all sessions) are used for training.
        n_val_subjects: unseen subjects used only to choose hyperparameters.
        n_test_subjects: unseen subjects for the zero-shot tests (need >= 2 for pairs).
        sessions: sessions per training subject (readout drift and neuron turnover between them).
        trials_per_session: trials per training session.
        heldout_trials: trials per validation/test subject (shared behaviour instances).
        T: time bins of 25 ms.
        latent_dim: dimension of the shared latent dynamics (8 inputs to ``M``).
        neurons: inclusive range of neuron counts per subject.
        noise_std: std of the smooth per-trial latent noise.
        drift_angle: readout rotation between sessions (radians).
        turnover: fraction of neurons replaced between sessions.
        shared_dynamics: one ``M`` for every subject (False: one per subject, the negative control).
        readout: ``"prototypes"`` (cell types shared across subjects, anisotropic; default) or
            ``"isotropic"`` (rows ``N(0, I/d)``, the earlier simulator, in which zero-shot decoding
            is capped by an unknown rotation).
        n_cell_types: prototype directions (``"prototypes"`` only).
        readout_noise: std (relative to a unit prototype) of a neuron's deviation from its type.
        type_rates: (lowest, highest) type firing rate in Hz; types are spaced evenly in log rate.
        seed: seed of the whole data set.
    """

    n_train_subjects: int = 10
    n_val_subjects: int = 2
    n_test_subjects: int = 3
    sessions: int = 2
    trials_per_session: int = 200
    heldout_trials: int = 100
    T: int = 40
    latent_dim: int = 8
    neurons: tuple[int, int] = (60, 160)
    noise_std: float = 0.1
    drift_angle: float = 0.1
    turnover: float = 0.1
    shared_dynamics: bool = True
    readout: Literal["prototypes", "isotropic"] = "prototypes"
    n_cell_types: int = 8
    readout_noise: float = 0.3
    type_rates: tuple[float, float] = (5.0, 30.0)
    seed: int = 0

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=("n_train_subjects", "n_val_subjects", "sessions", "trials_per_session"),
            non_negative=("noise_std", "drift_angle"),
            probability=("turnover",),
        )
        check_fields(self, positive_int=("heldout_trials", "T", "latent_dim"))
        if not isinstance(self.n_test_subjects, int) or self.n_test_subjects < 2:
            raise ValueError(
                f"SyntheticPopulationConfig.n_test_subjects must be >= 2, got {self.n_test_subjects!r}"
            )
        if self.T < 8:
            raise ValueError(f"SyntheticPopulationConfig.T must be >= 8 bins, got {self.T}")
        if self.readout not in ("prototypes", "isotropic"):
            raise ValueError(
                f"SyntheticPopulationConfig.readout must be 'prototypes' or 'isotropic', got {self.readout!r}"
            )
        check_fields(self, positive_int=("n_cell_types",), non_negative=("readout_noise",))
        r_lo, r_hi = self.type_rates
        if not (0 < r_lo <= r_hi <= 100):
            raise ValueError(
                f"SyntheticPopulationConfig.type_rates must be (lo, hi) Hz with 0 < lo <= hi <= 100, "
                f"got {self.type_rates}"
            )
        lo, hi = self.neurons
        if not (isinstance(lo, int) and isinstance(hi, int) and 3 <= lo <= hi):
            raise ValueError(
                f"SyntheticPopulationConfig.neurons must be (lo, hi) with 3 <= lo <= hi, got {self.neurons}"
            )


@dataclass(frozen=True)
class Recording:
    """One session of one subject.

    Attributes:
        spikes: ``[K, N, T]`` spike counts (float32).
        velocity: ``[K, 2, T]`` hand velocity.
        condition: ``[K]`` reach direction index in ``0..7``.
        pair_id: ``[K]`` behaviour-instance id shared across held-out subjects (-1: unique trial).
        subject: subject index (training subjects first, then validation, then test).
        session: session index.
    """

    spikes: np.ndarray
    velocity: np.ndarray
    condition: np.ndarray
    pair_id: np.ndarray
    subject: int
    session: int

    @property
    def n_neurons(self) -> int:
        return int(self.spikes.shape[1])


@dataclass(frozen=True)
class MultiSubjectData:
    """Training recordings (every session of every training subject) and unseen subjects."""

    train: tuple[Recording, ...]
    val: tuple[Recording, ...]
    test: tuple[Recording, ...]
    config: SyntheticPopulationConfig


@dataclass(frozen=True)
class PaddedRecordings:
    """Recordings stacked into one batch-able set, neurons zero-padded to the largest count.

    Attributes:
        spikes: ``[K, N_max, T]``; mask: ``[K, N_max]`` True on real neurons; velocity: ``[K, 2, T]``;
        recording: ``[K]`` index of the recording each trial came from (selects the neural readout).
    """

    spikes: Tensor
    mask: Tensor
    velocity: Tensor
    recording: Tensor

    def tensors(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        return self.spikes, self.mask, self.velocity, self.recording


def _smooth_noise(rng: np.random.Generator, shape: tuple[int, ...], width: float) -> np.ndarray:
    """White noise along the last axis smoothed by a Gaussian kernel and rescaled to unit std."""
    T = shape[-1]
    t = np.arange(T)
    kernel = np.exp(-0.5 * ((t[:, None] - t[None, :]) / width) ** 2)
    kernel /= np.sqrt((kernel**2).sum(axis=1, keepdims=True))
    return rng.normal(size=shape) @ kernel.T


def _behaviour(rng: np.random.Generator, n: int, T: int) -> dict[str, np.ndarray]:
    """``n`` behaviour instances: direction, speed profile and its derivative, preparatory bump."""
    cond = rng.integers(0, N_CONDITIONS, size=n)
    theta = 2 * np.pi * cond / N_CONDITIONS
    amp = rng.uniform(0.85, 1.15, size=n)
    shift = rng.uniform(-2.0, 2.0, size=n) * T / 40
    t = np.arange(T)[None, :]
    peak = 0.55 * T + shift[:, None]
    width = T / 9
    s = amp[:, None] * np.exp(-0.5 * ((t - peak) / width) ** 2)
    ds = -(t - peak) / width * s  # d s / d(t / width)
    prep = np.exp(-0.5 * ((t - (peak - 0.3 * T)) / (width / 1.5)) ** 2)
    return {"cond": cond, "theta": theta, "s": s, "ds": ds, "prep": prep}


def _inputs(beh: dict[str, np.ndarray]) -> np.ndarray:
    """φ(t) for every instance: ``[K, 8, T]``."""
    c, s = np.cos(beh["theta"])[:, None], np.sin(beh["theta"])[:, None]
    sp, ds, prep = beh["s"], beh["ds"], beh["prep"]
    return np.stack([sp * c, sp * s, ds * c, ds * s, prep * c, prep * s, sp, np.ones_like(sp)], axis=1)


def _rotation(rng: np.random.Generator, d: int, angle: float) -> np.ndarray:
    """A random rotation of ``R^d`` by about ``angle`` (exponential of a scaled skew matrix)."""
    from scipy.linalg import expm

    a = rng.normal(size=(d, d))
    skew = a - a.T
    skew *= angle / max(float(np.linalg.norm(skew, 2)), 1e-12)
    return np.asarray(expm(skew))


class _Dynamics:
    """``M``, the slow rotation and the latent scale: u = Mφ, z_t = ρ R z_{t-1} + u_t."""

    def __init__(self, rng: np.random.Generator, latent_dim: int, T: int, rot: np.ndarray) -> None:
        self.M = rng.normal(size=(latent_dim, 8)) / np.sqrt(8)
        self.rot = rot
        ref = _behaviour(np.random.default_rng(12345), 256, T)  # fixed reference set for the scale
        z = self._raw(_inputs(ref))
        self.mean = z.mean(axis=(0, 2), keepdims=True)
        self.std = z.std(axis=(0, 2), keepdims=True) + 1e-8

    def _raw(self, phi: np.ndarray) -> np.ndarray:
        u = np.einsum("dk,nkt->ndt", self.M, phi)
        z = np.zeros_like(u)
        z[..., 0] = u[..., 0]
        for t in range(1, u.shape[-1]):
            z[..., t] = 0.6 * z[..., t - 1] @ self.rot.T + u[..., t]
        return z

    def __call__(self, phi: np.ndarray) -> np.ndarray:
        return (self._raw(phi) - self.mean) / self.std


class _CellTypes:
    """The readout distribution every subject shares: prototypes and type log-rates (or isotropic)."""

    def __init__(self, rng: np.random.Generator, cfg: SyntheticPopulationConfig) -> None:
        self.cfg = cfg
        if cfg.readout == "prototypes":
            p = rng.normal(size=(cfg.n_cell_types, cfg.latent_dim))
            self.prototypes = p / np.linalg.norm(p, axis=1, keepdims=True)
            lo, hi = np.log(cfg.type_rates[0]), np.log(cfg.type_rates[1])
            self.log_rates = np.linspace(lo, hi, cfg.n_cell_types)

    def draw(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Readout rows ``[n, d]`` and log-baselines ``[n]`` of ``n`` new neurons."""
        cfg, d = self.cfg, self.cfg.latent_dim
        if cfg.readout == "isotropic":
            return rng.normal(size=(n, d)) / np.sqrt(d), rng.normal(np.log(5.0), 0.5, size=n)
        k = rng.integers(0, cfg.n_cell_types, size=n)
        C = self.prototypes[k] + cfg.readout_noise * rng.normal(size=(n, d)) / np.sqrt(d)
        return C, self.log_rates[k] + rng.normal(0.0, 0.2, size=n)


def _subject(rng: np.random.Generator, cfg: SyntheticPopulationConfig, types: _CellTypes) -> dict:
    n = int(rng.integers(cfg.neurons[0], cfg.neurons[1] + 1))
    C, b = types.draw(rng, n)
    return {"C": C, "b": b, "g": rng.uniform(0.7, 1.3, size=n)}


def _next_session(
    rng: np.random.Generator, sub: dict[str, np.ndarray], cfg: SyntheticPopulationConfig, types: _CellTypes
) -> dict:
    """Readout drift (small rotation) and neuron turnover between sessions."""
    C = sub["C"] @ _rotation(rng, cfg.latent_dim, cfg.drift_angle).T
    b, g = sub["b"].copy(), sub["g"].copy()
    n = C.shape[0]
    k = int(round(cfg.turnover * n))
    if k:
        new = rng.choice(n, size=k, replace=False)
        C[new], b[new] = types.draw(rng, k)
        g[new] = rng.uniform(0.7, 1.3, size=k)
    return {"C": C, "b": b, "g": g}


def _record(
    rng: np.random.Generator,
    sub: dict[str, np.ndarray],
    dyn: _Dynamics,
    beh: dict[str, np.ndarray],
    pair_id: np.ndarray,
    cfg: SyntheticPopulationConfig,
    subject: int,
    session: int,
) -> Recording:
    K, T = beh["s"].shape
    z = dyn(_inputs(beh)) + cfg.noise_std * _smooth_noise(rng, (K, cfg.latent_dim, T), width=3.0)
    drive = sub["b"][None, :, None] + sub["g"][None, :, None] * np.einsum("nd,kdt->knt", sub["C"], z)
    rate = np.minimum(np.exp(drive), 100.0)
    spikes = rng.poisson(rate * DT).astype(np.float32)
    order = rng.permutation(spikes.shape[1])  # neuron order carries no meaning
    velocity = np.stack(
        [beh["s"] * np.cos(beh["theta"])[:, None], beh["s"] * np.sin(beh["theta"])[:, None]], 1
    )
    return Recording(
        spikes=spikes[:, order],
        velocity=velocity.astype(np.float32),
        condition=beh["cond"].astype(np.int64),
        pair_id=pair_id.astype(np.int64),
        subject=subject,
        session=session,
    )


def make_multisubject_reaching(cfg: SyntheticPopulationConfig) -> MultiSubjectData:
    """Simulate the training, validation and test subjects of ``cfg`` (deterministic in ``cfg.seed``).

    Returns:
        :class:`MultiSubjectData`; validation and test subjects each share one set of behaviour
        instances (``pair_id`` = trial index), training trials are all distinct (``pair_id`` = -1).
    """
    if not isinstance(cfg, SyntheticPopulationConfig):
        raise TypeError(f"cfg must be a SyntheticPopulationConfig, got {type(cfg).__name__}")
    rng = np.random.default_rng(cfg.seed)
    rot = _rotation(rng, cfg.latent_dim, 0.3)
    shared = _Dynamics(rng, cfg.latent_dim, cfg.T, rot)
    types = _CellTypes(rng, cfg)

    def dynamics() -> _Dynamics:
        return shared if cfg.shared_dynamics else _Dynamics(rng, cfg.latent_dim, cfg.T, rot)

    train: list[Recording] = []
    for s in range(cfg.n_train_subjects):
        sub, dyn = _subject(rng, cfg, types), dynamics()
        for sess in range(cfg.sessions):
            if sess:
                sub = _next_session(rng, sub, cfg, types)
            beh = _behaviour(rng, cfg.trials_per_session, cfg.T)
            train.append(_record(rng, sub, dyn, beh, -np.ones(cfg.trials_per_session), cfg, s, sess))
    groups: list[list[Recording]] = []
    first = cfg.n_train_subjects
    for count in (cfg.n_val_subjects, cfg.n_test_subjects):
        beh = _behaviour(rng, cfg.heldout_trials, cfg.T)
        ids = np.arange(cfg.heldout_trials)
        groups.append(
            [
                _record(rng, _subject(rng, cfg, types), dynamics(), beh, ids, cfg, first + i, 0)
                for i in range(count)
            ]
        )
        first += count
    return MultiSubjectData(train=tuple(train), val=tuple(groups[0]), test=tuple(groups[1]), config=cfg)


def pad_recordings(recordings: tuple[Recording, ...] | list[Recording]) -> PaddedRecordings:
    """Stack recordings with different neuron counts: zero-pad neurons and keep a mask."""
    if len(recordings) == 0:
        raise ValueError("recordings is empty")
    n_max = max(r.n_neurons for r in recordings)
    spikes, masks = [], []
    for r in recordings:
        K, N, T = r.spikes.shape
        spikes.append(np.pad(r.spikes, ((0, 0), (0, n_max - N), (0, 0))))
        m = np.zeros((K, n_max), dtype=bool)
        m[:, :N] = True
        masks.append(m)
    rec = np.concatenate([np.full(len(r.spikes), i) for i, r in enumerate(recordings)])
    return PaddedRecordings(
        spikes=torch.from_numpy(np.concatenate(spikes)).float(),
        mask=torch.from_numpy(np.concatenate(masks)),
        velocity=torch.from_numpy(np.concatenate([r.velocity for r in recordings])).float(),
        recording=torch.from_numpy(rec).long(),
    )
