"""Simulated multi-label 12-lead ECG (the stand-in for CODE-15 and the PhysioNet/CinC 2021 sets).

H-Tuning (Zhou, Zhang, Dong; ICML 2025) pre-trains on CODE-15 and fine-tunes on Chapman, PTB-XL,
Ningbo and G12EC with 10% of the labels (Sec. 4.1). None of these is available offline, so records
are generated here with the ECGSYN morphology (McSharry et al., 2003, as packaged in ``neurokit2``):
each of the five waves P, Q, R, S, T is a Gaussian in the cardiac phase θ around its angle θ_i,

    z(θ) = Σ_i a_i b_i² exp(-Δθ_i² / (2 b_i²)),   Δθ_i = wrap(θ - θ_i),

which is the fast-rate solution of ECGSYN's ``dz/dt = -Σ a_i Δθ_i exp(-Δθ_i²/2b_i²)``. The wave
parameters (θ_i, a_i, b_i), their heart-rate scaling and the 12-lead wave-gain table are read from
``neurokit2`` (``ecg_simulate(method="ecgsyn" | "multileads")``); integrating ECGSYN's ODE per record
costs ≈ 0.05 s (measured here), so the closed form is evaluated vectorised instead (≈ 0.3 ms a record).
``method="neurokit"`` calls ``neurokit2.ecg_simulate`` per record (one lead projected by the gain
table) for a slower, ODE-based corpus.

Conditions (labels) set ECGSYN parameters: ``normal`` (no other label), ``brady`` (HR 40-55),
``tachy`` (HR 105-150), ``af`` (no P wave, irregular RR, 4-8 Hz fibrillatory waves), ``low_qrs``
(Q/R/S ×0.4), ``t_inv`` (T negative), ``wide_qrs`` (Q/R/S widths ×2), ``peaked_t`` (T ×2).
A record carries 0-2 compatible conditions. Nothing is cached to disk.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from icml25.core.validate import check_fields, check_finite_array, check_in_range, check_positive

__all__ = [
    "CONDITIONS",
    "PRETRAIN_CONDITIONS",
    "LEADS",
    "DomainShift",
    "simulate_ecg_dataset",
    "ecgsyn_waves",
    "low_label_split",
    "cutmix_time",
]

CONDITIONS: tuple[str, ...] = (
    "normal",
    "brady",
    "tachy",
    "af",
    "low_qrs",
    "t_inv",
    "wide_qrs",
    "peaked_t",
)
#: The labels of the pre-training corpus (the downstream task adds ``wide_qrs`` and ``peaked_t``).
PRETRAIN_CONDITIONS: tuple[str, ...] = CONDITIONS[:6]
LEADS: tuple[str, ...] = ("I", "II", "III", "aVR", "aVL", "aVF", "V1", "V2", "V3", "V4", "V5", "V6")

_RHYTHM = ("brady", "tachy", "af")
_T_WAVE = ("t_inv", "peaked_t")
# neurokit2's 12-lead wave-gain table (rows: leads I..V6; columns P, Q, R, S, T), as used by
# ``ecg_simulate(method="multileads")``.
_GAMMA = np.array(
    [
        [1, 0.1, 1, 1.2, 1],
        [2, 0.2, 0.2, 0.2, 3],
        [1, -0.1, -0.8, -1.1, 2.5],
        [-1, -0.05, -0.8, -0.5, -1.2],
        [0.05, 0.05, 1, 1, 1],
        [1, -0.05, -0.1, -0.1, 3],
        [-0.5, 0.05, 0.2, 0.5, 1],
        [0.05, 0.05, 1.3, 2.5, 2],
        [1, 0.05, 1, 2, 1],
        [1.2, 0.05, 1, 2, 2],
        [1.5, 0.1, 0.8, 1, 2],
        [1.8, 0.05, 0.5, 0.1, 2],
    ]
)
_GAIN = 10.0  # a_R b_R² = 0.3 -> R wave of ~3 in lead I before the global scale below
_SCALE = 1.0 / 3.0


def ecgsyn_waves() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ECGSYN's default wave angles θ_i (radians), amplitudes a_i and widths b_i for P, Q, R, S, T.

    Read from the signature of ``neurokit2``'s ECGSYN implementation, so a change there shows up here.
    """
    return tuple(a.copy() for a in _ecgsyn_waves())  # type: ignore[return-value]


@functools.lru_cache(maxsize=1)
def _ecgsyn_waves() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from neurokit2.ecg.ecg_simulate import _ecg_simulate_ecgsyn

    params = inspect.signature(_ecg_simulate_ecgsyn).parameters
    ti = np.asarray(params["ti"].default, dtype=float) * np.pi / 180.0
    ai = np.asarray(params["ai"].default, dtype=float)
    bi = np.asarray(params["bi"].default, dtype=float)
    return ti, ai, bi


@dataclass(frozen=True)
class DomainShift:
    """How a corpus differs from another (pre-training vs downstream): noise and lead gains.

    Args:
        noise: std of white measurement noise (after scaling; R wave ≈ 1).
        wander: amplitude of baseline wander (0.1-0.4 Hz).
        gain_jitter: per-record relative jitter of the 12-lead wave-gain table (0.2 = ±20%).
        gain_bias: a fixed multiplicative offset of the table for this corpus (a "device" effect).
    """

    noise: float = 0.05
    wander: float = 0.1
    gain_jitter: float = 0.2
    gain_bias: float = 0.0

    def __post_init__(self) -> None:
        check_fields(self, non_negative=("noise", "wander", "gain_jitter"))
        check_in_range("DomainShift.gain_bias", self.gain_bias, -0.9, 0.9)


def _sample_labels(rng: np.random.Generator, conditions: Sequence[str]) -> list[str]:
    abnormal = [c for c in conditions if c != "normal"]
    k = int(rng.choice(3, p=(0.25, 0.45, 0.30)))
    chosen: list[str] = []
    for c in rng.permutation(abnormal):
        if len(chosen) >= k:
            break
        if c in _RHYTHM and any(o in _RHYTHM for o in chosen):
            continue
        if c in _T_WAVE and any(o in _T_WAVE for o in chosen):
            continue
        chosen.append(str(c))
    if not chosen and "normal" not in conditions:
        chosen.append(str(abnormal[int(rng.integers(len(abnormal)))]))
    return chosen


def _beat_times(rng: np.random.Generator, labels: Sequence[str], duration: float) -> tuple[np.ndarray, float]:
    if "brady" in labels:
        hr = rng.uniform(40, 55)
    elif "tachy" in labels:
        hr = rng.uniform(105, 150)
    elif "af" in labels:
        hr = rng.uniform(75, 130)
    else:
        hr = rng.uniform(60, 100)
    n = int(duration * hr / 60) + 4
    if "af" in labels:  # irregularly irregular: independent beat-to-beat rates, std 15-25 bpm
        rates = np.clip(hr + rng.uniform(15, 25) * rng.standard_normal(n), 40, 200)
    else:  # sinus: slow respiratory modulation, std ~2 bpm
        rates = hr + 2.0 * np.sin(
            2 * np.pi * rng.uniform(0.15, 0.3) * np.arange(n) * 60 / hr + rng.uniform(0, 6)
        )
    rr = 60.0 / rates
    r = np.cumsum(rr) - rng.uniform(0, 2 * rr[0])
    return r, hr


def _wave_params(labels: Sequence[str], hr: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Wave angles, peak heights and widths for ``labels`` at heart rate ``hr``."""
    ti, ai, bi = ecgsyn_waves()
    if "af" in labels:
        ai[0] = 0.0
    if "low_qrs" in labels:
        ai[1:4] *= 0.4
    if "wide_qrs" in labels:
        bi[1:4] *= 2.0
    if "t_inv" in labels:
        ai[4] = -ai[4]
    if "peaked_t" in labels:
        ai[4] *= 2.0
    # ECGSYN's heart-rate scaling of wave angles and widths
    f1 = np.sqrt(hr / 60.0)
    f2 = np.sqrt(f1)
    ti = ti * np.array([f2, f1, 1.0, f1, f2])
    return ti, ai, bi * f1


def _peak_heights(ai: np.ndarray) -> np.ndarray:
    """a_i b_i² at ECGSYN's default widths: ECGSYN's wave heights, kept when a width changes (the
    ODE's 1/ω factor cancels the b_i² growth with heart rate, so heights do not scale with HR)."""
    return ai * _ecgsyn_waves()[2] ** 2


def _phase(t: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Cardiac phase θ(t) ∈ (-π, π], 0 at each R peak, advancing linearly between R peaks."""
    k = np.clip(np.searchsorted(r, t, side="right") - 1, 0, len(r) - 2)
    theta = 2 * np.pi * (t - r[k]) / (r[k + 1] - r[k])
    return (theta + np.pi) % (2 * np.pi) - np.pi


def _waves_closed_form(
    t: np.ndarray, r: np.ndarray, ti: np.ndarray, ai: np.ndarray, bi: np.ndarray
) -> np.ndarray:
    """Per-wave ECGSYN components ``(5, len(t))``: h_i exp(-Δθ_i²/(2 b_i²)) (h_i: :func:`_peak_heights`)."""
    theta = _phase(t, r)
    d = theta[None, :] - ti[:, None]
    d = (d + np.pi) % (2 * np.pi) - np.pi
    return _peak_heights(ai)[:, None] * np.exp(-0.5 * (d / bi[:, None]) ** 2)


def simulate_ecg_dataset(
    n: int,
    conditions: Sequence[str] = CONDITIONS,
    *,
    fs: int = 100,
    duration: float = 10.0,
    method: str = "fast",
    shift: DomainShift | None = None,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Simulate ``n`` labelled 12-lead ECG records.

    Args:
        n: number of records (> 0).
        conditions: label names, a subset of :data:`CONDITIONS` (order = label columns).
        fs: sampling rate in Hz; duration: record length in seconds (``L = fs · duration``).
        method: ``"fast"`` (closed-form ECGSYN morphology, vectorised) or ``"neurokit"``
            (``neurokit2.ecg_simulate`` ODE per record, one lead projected by the gain table; slow).
        shift: noise and lead-gain settings of this corpus (default :class:`DomainShift`).
        seed: seed of the generator (records are a deterministic function of it).

    Returns:
        ``X`` float32 ``(n, 12, L)`` and ``Y`` float32 multi-hot ``(n, len(conditions))``.
    """
    check_positive("n", n, integer=True)
    check_positive("fs", fs, integer=True)
    check_positive("duration", duration)
    if isinstance(conditions, str) or not conditions:
        raise ValueError("conditions must be a non-empty sequence of condition names")
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown or len(set(conditions)) != len(conditions):
        raise ValueError(f"conditions must be distinct names from {CONDITIONS}, got {list(conditions)}")
    if method not in ("fast", "neurokit"):
        raise ValueError(f"method must be 'fast' or 'neurokit', got {method!r}")
    shift = shift or DomainShift()
    length = int(round(fs * duration))
    if length < 8:
        raise ValueError(f"fs * duration must give at least 8 samples, got {length}")
    rng = np.random.default_rng(seed)
    t = np.arange(length) / fs
    x = np.empty((n, 12, length), dtype=np.float32)
    y = np.zeros((n, len(conditions)), dtype=np.float32)
    col = {c: j for j, c in enumerate(conditions)}
    for i in range(n):
        labels = _sample_labels(rng, conditions)
        for c in labels or ["normal"]:
            if c in col:
                y[i, col[c]] = 1.0
        r, hr = _beat_times(rng, labels, duration)
        ti, ai, bi = _wave_params(labels, hr)
        gamma = (
            _GAMMA * (1.0 + shift.gain_bias) * (1.0 + shift.gain_jitter * rng.uniform(-1, 1, _GAMMA.shape))
        )
        if method == "fast":
            waves = _waves_closed_form(t, r, ti, ai, bi)  # (5, L)
            sig = _GAIN * gamma @ waves  # (12, L)
        else:
            sig = (
                _GAIN
                * gamma.sum(1, keepdims=True)
                / 5
                * _neurokit_lead(labels, hr, duration, fs, length, rng)
            )
        sig = sig * _SCALE
        if "af" in labels:  # fibrillatory waves, strongest in II, III, aVF, V1
            f = rng.uniform(4, 8)
            amp = rng.uniform(0.04, 0.08) * np.abs(_GAMMA[:, 0:1]) / 2
            sig = sig + amp * np.sin(2 * np.pi * f * t + rng.uniform(0, 6.3, (12, 1)))
        wander = shift.wander * np.sin(2 * np.pi * rng.uniform(0.1, 0.4) * t + rng.uniform(0, 6.3, (12, 1)))
        x[i] = sig + wander + shift.noise * rng.standard_normal((12, length))
    return x, y


def _neurokit_lead(
    labels: Sequence[str], hr: float, duration: float, fs: int, length: int, rng: np.random.Generator
) -> np.ndarray:
    import neurokit2 as nk

    ti, ai, bi = _wave_params(labels, 60.0)  # ECGSYN applies its own heart-rate scaling
    std = 20.0 if "af" in labels else 2.0
    z = nk.ecg_simulate(
        duration=duration + 1,
        sampling_rate=fs,
        noise=0,
        heart_rate=hr,
        heart_rate_std=std,
        method="ecgsyn",
        random_state=int(rng.integers(2**31 - 1)),
        ti=tuple(ti * 180 / np.pi),
        ai=tuple(ai),
        bi=tuple(bi),
    )
    z = np.asarray(z, dtype=float)[:length]
    return 0.3 * (z - np.median(z)) / (np.abs(z - np.median(z)).max() + 1e-9)


def low_label_split(
    y: np.ndarray, labeled_ratio: float = 0.10, val_frac: float = 0.2, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The paper's label-scarce protocol (Sec. 4.1): ``labeled_ratio`` of the records are labelled
    and split ``1 - val_frac`` / ``val_frac`` into train/validation; the rest is the test set.

    Records are assigned by iterative stratification (Sechidis, Tsoumakas, Vlahavas 2011; what the
    official code calls through scikit-multilearn): repeatedly take the label with the fewest
    unassigned records, and hand each of those records, in random order, to the split that still
    wants the most records of that label (ties: the split with the most room left; a split that has
    its size takes no more, so the sizes are exact). Each split then
    holds each label, and records with one or two labels, in proportion.

    Returns:
        index arrays ``(train, val, test)``.
    """
    check_finite_array("y", y, ndim=2)
    check_in_range("labeled_ratio", labeled_ratio, 0.0, 1.0, low_open=True, high_open=True)
    check_in_range("val_frac", val_frac, 0.0, 1.0, low_open=True, high_open=True)
    y = np.asarray(y) > 0.5
    n = len(y)
    n_lab = int(round(labeled_ratio * n))
    n_val = int(round(val_frac * n_lab))
    if n_lab - n_val < 1 or n_val < 1 or n - n_lab < 1:
        raise ValueError(f"y has too few rows ({n}) for labeled_ratio={labeled_ratio}, val_frac={val_frac}")
    rng = np.random.default_rng(seed)
    want = np.array([n_lab - n_val, n_val, n - n_lab], dtype=float)
    need = np.outer(want / n, y.sum(0))  # (3 splits, C): label counts still wanted per split
    room = want.copy()
    split = np.full(n, -1)

    def assign(i: int, label: int | None) -> None:
        score = room if label is None else need[:, label] + 1e-9 * room  # ties: most room
        s = int(np.argmax(np.where(room > 0, score, -np.inf)))  # a full split takes no more
        split[i] = s
        room[s] -= 1
        need[s, y[i]] -= 1

    while True:
        left = split < 0
        counts = np.where(y[left].sum(0) > 0, y[left].sum(0), np.iinfo(np.int64).max)
        if not (y[left].any(axis=1)).any():
            break
        label = int(np.argmin(counts))
        for i in rng.permutation(np.flatnonzero(left & y[:, label])):
            assign(int(i), label)
    for i in rng.permutation(np.flatnonzero(split < 0)):  # records without a label
        assign(int(i), None)
    return tuple(np.sort(np.flatnonzero(split == s)) for s in range(3))  # type: ignore[return-value]


def cutmix_time(
    x: np.ndarray, y: np.ndarray, rng: np.random.Generator, alpha: float = 0.75
) -> tuple[np.ndarray, np.ndarray]:
    """CutMix along time (the official training batches): a random segment of each record is replaced
    by the same segment of a shuffled partner; labels mix by the replaced fraction λ ~ Beta(α, α)."""
    check_positive("alpha", alpha)
    n, length = x.shape[0], x.shape[-1]
    lam = rng.beta(alpha, alpha)
    cut = int(round((1 - lam) * length))
    start = int(rng.integers(0, length - cut + 1))
    perm = rng.permutation(n)
    xm = x.copy()
    xm[..., start : start + cut] = x[perm][..., start : start + cut]
    frac = cut / length
    return xm, (1 - frac) * y + frac * y[perm]
