"""2D periodic pseudo-spectral PDE simulators: a registry of families, batched in torch, cached on disk.

Every family lives on a periodic square ``[0, L)^2`` sampled on ``res x res`` points and is advanced in
Fourier space (``torch.fft.rfft2``) with the integrating-factor Runge-Kutta 2 (Heun) scheme

    u_hat' = Lin(k) u_hat + N(u_hat)          (Lin diagonal in Fourier space)
    k1     = N(u_n)
    u*     = E (u_n + dt k1),                 E = exp(Lin dt)
    u_n+1  = E u_n + dt/2 (E k1 + N(u*))

which is second order in ``dt`` and exact when ``N = 0`` (pure diffusion). Quadratic products are
dealiased with the 2/3 rule (every Fourier mode with ``|k_x|`` or ``|k_y| > res/3`` is removed from the
nonlinear term). Computation runs in float64 on the CPU; stored trajectories are float32.

Families (``PDE_FAMILIES``; add one by registering a :class:`PDEFamily`):

    diffusion      u_t = nu Lap u,                          nu ~ U[0.005, 0.05]
    burgers        u_t + (u . grad) u = nu Lap u, u=(u,v),  nu ~ U[0.005, 0.02]
    navier_stokes  w_t + u . grad w = nu Lap w,             nu ~ U[5e-4, 2e-3]
                   with Lap psi = -w, u = (d_y psi, -d_x psi)
    kolmogorov     the same plus forcing sin(4y) - 0.1 w
    gray_scott     A_t = D_A Lap A - A B^2 + F (1 - A),
                   B_t = D_B Lap B + A B^2 - (F + k) B,     (F, k) ~ U[0.030, 0.040] x U[0.058, 0.062]

Initial conditions are random sums of the Fourier modes with integer wavenumber ``0 < |k| <= 4``
(uniform amplitudes, uniform phases), normalised to unit maximum per field. Gray-Scott starts from
``A = 1, B = 0`` with seeded patches where such a field exceeds 0.5.

These are our own small stand-ins for the pre-training PDE families of *PDE-Transformer* (Holzschuh
et al., ICML 2025, https://arxiv.org/abs/2505.24717), which trains on far larger simulated datasets.
Sources: the Gray-Scott parameters and units follow Pearson, "Complex patterns in a simple system"
(Science 261, 1993); the 2/3 dealiasing rule is Orszag's (J. Atmos. Sci. 28, 1971).

Choices made here (our own, since no paper fixes them for these resolutions):
    * Gray-Scott runs in Pearson's units (D_A = 2e-5, D_B = 1e-5, time step 1) on a domain of side
      ``L = res / 128`` (the pixel size of Pearson's 256-point grid on L = 2.5, so patterns keep the
      same size in pixels at any resolution), with time step 2 (4 is unstable), 100 time units
      between frames and 10 burn-in frames so that patterns have formed.
    * Burgers starts after 2 and Navier-Stokes after 4 burn-in frames (a random sum of modes is not
      a typical state of the flow); the Burgers initial velocity has maximum 0.5 so that shocks stay resolved
      at 64 points for the smallest viscosity.
    * Frame spacing (``frame_dt``) is chosen so that consecutive frames differ by roughly 5-30 % in
      relative L2 norm; see each family's definition.

Trajectories are deterministic functions of (family, resolution, counts, seed) and are cached as
``.npz`` files (never pickle) under ``$ICML25_CACHE/pde`` (default ``~/.cache/icml25/pde``), keyed by
a hash of the full configuration; writes are atomic (temporary file, then rename).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "PDE_FAMILIES",
    "PDEFamily",
    "SpectralGrid",
    "Trajectories",
    "cache_dir",
    "get_family",
    "integrate",
    "random_initial_condition",
    "sample_params",
    "simulate",
]

CACHE_VERSION = 1  # bump when a solver changes its numbers: old cache entries are then ignored


# ----------------------------------------------------------------------------------------------
# Spectral grid
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpectralGrid:
    """Wavenumbers of a periodic ``res x res`` grid on ``[0, length)^2`` (rfft layout, float64).

    Arrays are ``[res, 1]`` (``ky``, rows / dim -2) and ``[1, res//2 + 1]`` (``kx``, columns / dim -1).
    """

    res: int
    length: float

    @property
    def ky(self) -> Tensor:
        return (2 * math.pi / self.length) * torch.fft.fftfreq(self.res, 1.0 / self.res).double()[:, None]

    @property
    def kx(self) -> Tensor:
        return (2 * math.pi / self.length) * torch.fft.rfftfreq(self.res, 1.0 / self.res).double()[None, :]

    @property
    def k2(self) -> Tensor:
        return self.kx**2 + self.ky**2

    @property
    def dealias(self) -> Tensor:
        """2/3 rule: keep integer wavenumbers with ``|k_x|, |k_y| < res/3``."""
        iy = torch.fft.fftfreq(self.res, 1.0 / self.res).abs()[:, None]
        ix = torch.fft.rfftfreq(self.res, 1.0 / self.res)[None, :]
        return ((iy < self.res / 3) & (ix < self.res / 3)).double()

    def coords(self) -> tuple[Tensor, Tensor]:
        """``(y, x)`` coordinates, each ``[res, res]``."""
        s = torch.arange(self.res, dtype=torch.float64) * (self.length / self.res)
        y, x = torch.meshgrid(s, s, indexing="ij")
        return y, x

    def fft(self, u: Tensor) -> Tensor:
        return torch.fft.rfft2(u)

    def ifft(self, u_hat: Tensor) -> Tensor:
        return torch.fft.irfft2(u_hat, s=(self.res, self.res))

    def ddx(self, u_hat: Tensor) -> Tensor:
        return self.ifft(1j * self.kx * u_hat)

    def ddy(self, u_hat: Tensor) -> Tensor:
        return self.ifft(1j * self.ky * u_hat)


# ----------------------------------------------------------------------------------------------
# Families: linear operator (diagonal in Fourier space) and nonlinear term
# ----------------------------------------------------------------------------------------------

# (params [B, P], grid) -> Lin [B, C, res, res//2+1] (complex or real)
LinearFn = Callable[[Tensor, SpectralGrid], Tensor]
# (u_hat [B, C, res, res//2+1], params [B, P], grid) -> N_hat, same shape; None for linear PDEs
NonlinearFn = Callable[[Tensor, Tensor, SpectralGrid], Tensor]
# (n, res, generator) -> initial state [n, C, res, res] float64
InitFn = Callable[[int, int, torch.Generator], Tensor]


@dataclass(frozen=True)
class PDEFamily:
    """One PDE family of the registry.

    Args:
        name: registry key.
        fields: names of the physical fields (channels), e.g. ``("u", "v")``.
        param_names: names of the per-trajectory parameters.
        param_ranges: ``(low, high)`` of the uniform distribution of each parameter.
        linear: the diagonal linear operator in Fourier space.
        nonlinear: the nonlinear right-hand side in Fourier space (dealiased), or None.
        init: random initial condition ``(n, res, generator) -> [n, C, res, res]``.
        length: domain side ``L`` as a function of the resolution.
        frame_dt: physical time between stored frames.
        substeps: solver steps per stored frame (ignored when ``nonlinear`` is None: exact).
        burn_in: frames simulated and discarded before the first stored frame.
    """

    name: str
    fields: tuple[str, ...]
    param_names: tuple[str, ...]
    param_ranges: tuple[tuple[float, float], ...]
    linear: LinearFn = field(repr=False)
    nonlinear: NonlinearFn | None = field(repr=False)
    init: InitFn = field(repr=False)
    length: Callable[[int], float] = field(repr=False)
    frame_dt: float = 1.0
    substeps: int = 1
    burn_in: int = 0

    @property
    def n_fields(self) -> int:
        return len(self.fields)

    def describe(self) -> dict[str, object]:
        """The numbers that define this family's trajectories (used in the cache key)."""
        return {
            "name": self.name,
            "fields": list(self.fields),
            "params": {n: list(r) for n, r in zip(self.param_names, self.param_ranges, strict=True)},
            "frame_dt": self.frame_dt,
            "substeps": self.substeps,
            "burn_in": self.burn_in,
            "length_64": self.length(64),
        }


def random_initial_condition(
    n: int, n_fields: int, res: int, *, generator: torch.Generator, k_max: float = 4.0
) -> Tensor:
    """Random low-wavenumber fields: sum of modes ``0 < |k| <= k_max`` with uniform amplitude and phase.

    Args:
        n: number of samples.
        n_fields: channels per sample.
        res: grid points per side.
        generator: the torch generator that makes the draw deterministic.
        k_max: largest integer wavenumber magnitude.

    Returns:
        ``[n, n_fields, res, res]`` float64, zero mean, each field scaled to ``max |u| = 1``.
    """
    if res < 2 * k_max + 2:
        raise ValueError(f"res must be at least 2*k_max + 2 = {2 * k_max + 2:g}, got {res}")
    kk = torch.fft.fftfreq(res, 1.0 / res).double()
    kmag = torch.sqrt(kk[:, None] ** 2 + kk[None, :] ** 2)
    keep = (kmag > 0) & (kmag <= k_max)
    amp = torch.rand(n, n_fields, res, res, generator=generator, dtype=torch.float64)
    phase = 2 * math.pi * torch.rand(n, n_fields, res, res, generator=generator, dtype=torch.float64)
    spec = torch.where(keep, amp, torch.zeros((), dtype=torch.float64)) * torch.exp(1j * phase)
    u = torch.fft.ifft2(spec).real
    u = u - u.mean(dim=(-2, -1), keepdim=True)
    return u / u.abs().amax(dim=(-2, -1), keepdim=True).clamp_min(1e-12)


def _diffusion_linear(params: Tensor, grid: SpectralGrid) -> Tensor:
    return (-params[:, 0, None, None] * grid.k2)[:, None]  # Lin = -nu |k|^2


def _burgers_nonlinear(u_hat: Tensor, params: Tensor, grid: SpectralGrid) -> Tensor:
    u, v = grid.ifft(u_hat[:, 0]), grid.ifft(u_hat[:, 1])
    out = []
    for c in range(2):  # -(u d_x + v d_y) u_c
        adv = u * grid.ddx(u_hat[:, c]) + v * grid.ddy(u_hat[:, c])
        out.append(-grid.fft(adv))
    return torch.stack(out, dim=1) * grid.dealias


def _vorticity_advection(w_hat: Tensor, grid: SpectralGrid) -> Tensor:
    k2 = grid.k2.clone()
    k2[0, 0] = 1.0
    psi_hat = w_hat / k2  # Lap psi = -w
    psi_hat[..., 0, 0] = 0
    u, v = grid.ddy(psi_hat), -grid.ddx(psi_hat)  # u = (d_y psi, -d_x psi)
    adv = u * grid.ddx(w_hat) + v * grid.ddy(w_hat)
    return -grid.fft(adv) * grid.dealias


def _ns_nonlinear(w_hat: Tensor, params: Tensor, grid: SpectralGrid) -> Tensor:
    return _vorticity_advection(w_hat[:, 0], grid)[:, None]


def _kolmogorov_linear(params: Tensor, grid: SpectralGrid) -> Tensor:
    return (-params[:, 0, None, None] * grid.k2 - 0.1)[:, None]  # viscosity and linear drag -0.1 w


def _kolmogorov_nonlinear(w_hat: Tensor, params: Tensor, grid: SpectralGrid) -> Tensor:
    y, _ = grid.coords()
    forcing = grid.fft(torch.sin(4 * y))  # f = sin(4y)
    return (_vorticity_advection(w_hat[:, 0], grid) + forcing)[:, None]


GS_DIFFUSIVITY = (2e-5, 1e-5)  # (D_A, D_B), Pearson (1993)


def _gray_scott_linear(params: Tensor, grid: SpectralGrid) -> Tensor:
    F, k = params[:, 0, None, None], params[:, 1, None, None]
    lin_a = -GS_DIFFUSIVITY[0] * grid.k2 - F
    lin_b = -GS_DIFFUSIVITY[1] * grid.k2 - (F + k)
    return torch.stack([lin_a, lin_b], dim=1)


def _gray_scott_nonlinear(u_hat: Tensor, params: Tensor, grid: SpectralGrid) -> Tensor:
    A, B = grid.ifft(u_hat[:, 0]), grid.ifft(u_hat[:, 1])
    F = params[:, 0, None, None]
    reaction = A * B * B
    return torch.stack([grid.fft(-reaction + F), grid.fft(reaction)], dim=1) * grid.dealias


def _gray_scott_init(n: int, res: int, generator: torch.Generator) -> Tensor:
    seedfield = random_initial_condition(n, 1, res, generator=generator)[:, 0]
    patch = (seedfield > 0.5).double()
    return torch.stack([1 - 0.5 * patch, 0.25 * patch], dim=1)


def _scaled_init(n_fields: int, scale: float) -> InitFn:
    def init(n: int, res: int, generator: torch.Generator) -> Tensor:
        return scale * random_initial_condition(n, n_fields, res, generator=generator)

    return init


def _two_pi(res: int) -> float:
    return 2 * math.pi


PDE_FAMILIES: dict[str, PDEFamily] = {
    f.name: f
    for f in (
        PDEFamily(
            "diffusion",
            ("u",),
            ("nu",),
            ((0.005, 0.05),),
            linear=_diffusion_linear,
            nonlinear=None,
            init=_scaled_init(1, 1.0),
            length=_two_pi,
            frame_dt=1.0,
        ),
        PDEFamily(
            "burgers",
            ("u", "v"),
            ("nu",),
            ((0.005, 0.02),),
            linear=_diffusion_linear,
            nonlinear=_burgers_nonlinear,
            init=_scaled_init(2, 0.5),
            length=_two_pi,
            frame_dt=0.25,
            substeps=10,
            burn_in=2,
        ),
        PDEFamily(
            "navier_stokes",
            ("w",),
            ("nu",),
            ((5e-4, 2e-3),),
            linear=_diffusion_linear,
            nonlinear=_ns_nonlinear,
            init=_scaled_init(1, 4.0),
            length=_two_pi,
            frame_dt=0.125,
            substeps=5,
            burn_in=4,
        ),
        PDEFamily(
            "kolmogorov",
            ("w",),
            ("nu",),
            ((5e-4, 2e-3),),
            linear=_kolmogorov_linear,
            nonlinear=_kolmogorov_nonlinear,
            init=_scaled_init(1, 4.0),
            length=_two_pi,
            frame_dt=0.125,
            substeps=5,
            burn_in=4,
        ),
        PDEFamily(
            "gray_scott",
            ("A", "B"),
            ("F", "k"),
            ((0.030, 0.040), (0.058, 0.062)),
            linear=_gray_scott_linear,
            nonlinear=_gray_scott_nonlinear,
            init=_gray_scott_init,
            length=lambda res: res / 128,
            frame_dt=100.0,
            substeps=50,
            burn_in=10,
        ),
    )
}


def get_family(name: str) -> PDEFamily:
    """The registered family ``name``; an unknown name raises ``ValueError`` listing the known ones."""
    if name not in PDE_FAMILIES:
        raise ValueError(f"unknown PDE {name!r}; known families: {', '.join(sorted(PDE_FAMILIES))}")
    return PDE_FAMILIES[name]


def sample_params(family: PDEFamily, n: int, *, generator: torch.Generator) -> Tensor:
    """Per-trajectory parameters, uniform in each range: ``[n, len(param_names)]`` float64."""
    lo = torch.tensor([r[0] for r in family.param_ranges], dtype=torch.float64)
    hi = torch.tensor([r[1] for r in family.param_ranges], dtype=torch.float64)
    return lo + (hi - lo) * torch.rand(n, len(lo), generator=generator, dtype=torch.float64)


# ----------------------------------------------------------------------------------------------
# Time integration
# ----------------------------------------------------------------------------------------------


def integrate(
    family: PDEFamily | str,
    u0: Tensor,
    params: Tensor,
    *,
    n_frames: int,
    frame_dt: float | None = None,
    substeps: int | None = None,
    length: float | None = None,
) -> Tensor:
    """Advance ``u0`` and return ``n_frames`` frames spaced ``frame_dt`` apart (the first is ``u0``).

    Args:
        family: a :class:`PDEFamily` or its registry name.
        u0: ``[B, C, res, res]`` initial state (C = the family's field count).
        params: ``[B, P]`` per-trajectory parameters.
        n_frames: frames to return (>= 1).
        frame_dt: time between frames (default: the family's).
        substeps: IF-RK2 steps per frame (default: the family's).
        length: domain side (default: the family's for this resolution).

    Returns:
        ``[B, n_frames, C, res, res]`` float64.
    """
    fam = get_family(family) if isinstance(family, str) else family
    if u0.ndim != 4 or u0.shape[1] != fam.n_fields or u0.shape[-1] != u0.shape[-2]:
        raise ValueError(f"u0 must be [B, {fam.n_fields}, res, res] for {fam.name}, got {tuple(u0.shape)}")
    if params.shape != (u0.shape[0], len(fam.param_names)):
        raise ValueError(f"params must be [{u0.shape[0]}, {len(fam.param_names)}], got {tuple(params.shape)}")
    if n_frames < 1:
        raise ValueError(f"n_frames must be at least 1, got {n_frames}")
    if not torch.isfinite(u0).all():
        raise ValueError("u0 contains NaN or infinite values")
    res = u0.shape[-1]
    grid = SpectralGrid(res, fam.length(res) if length is None else length)
    frame_dt = fam.frame_dt if frame_dt is None else frame_dt
    substeps = fam.substeps if substeps is None else substeps
    if substeps < 1 or frame_dt <= 0:
        raise ValueError(f"substeps must be >= 1 and frame_dt > 0, got {substeps} and {frame_dt}")
    params = params.double()
    lin = fam.linear(params, grid)
    u_hat = grid.fft(u0.double())
    frames = [u0.double()]
    if fam.nonlinear is None:
        E_frame = torch.exp(lin * frame_dt)  # exact exponential integrator
        for _ in range(n_frames - 1):
            u_hat = E_frame * u_hat
            frames.append(grid.ifft(u_hat))
        return torch.stack(frames, dim=1)
    dt = frame_dt / substeps
    E = torch.exp(lin * dt)
    N = fam.nonlinear
    for _ in range(n_frames - 1):
        for _ in range(substeps):  # IF-RK2 (Heun), module docstring
            k1 = N(u_hat, params, grid)
            u_star = E * (u_hat + dt * k1)
            u_hat = E * u_hat + 0.5 * dt * (E * k1 + N(u_star, params, grid))
        frames.append(grid.ifft(u_hat))
    return torch.stack(frames, dim=1)


# ----------------------------------------------------------------------------------------------
# Batched, seeded, cached trajectory generation
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Trajectories:
    """Simulated trajectories of one family.

    Attributes:
        u: ``[N, T, C, res, res]`` float32 states.
        params: ``[N, P]`` float32 per-trajectory parameters (named by ``param_names``).
        family: the family name.
        fields: the channel names.
        param_names: the parameter names.
        frame_dt: time between frames.
        length: domain side.
    """

    u: Tensor
    params: Tensor
    family: str
    fields: tuple[str, ...]
    param_names: tuple[str, ...]
    frame_dt: float
    length: float


def cache_dir() -> Path:
    """``$ICML25_CACHE/pde`` or ``~/.cache/icml25/pde``."""
    root = os.environ.get("ICML25_CACHE", "").strip()
    return (Path(root) if root else Path.home() / ".cache" / "icml25") / "pde"


def _cache_key(fam: PDEFamily, n_traj: int, n_frames: int, res: int, seed: int) -> str:
    spec = {
        "version": CACHE_VERSION,
        "family": fam.describe(),
        "n_traj": n_traj,
        "n_frames": n_frames,
        "res": res,
        "seed": seed,
    }
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:20]
    return f"{fam.name}-{res}-{digest}"


def _save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)  # type: ignore[arg-type]
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def simulate(
    name: str,
    *,
    n_traj: int,
    n_frames: int,
    res: int = 64,
    seed: int = 0,
    cache: bool = True,
) -> Trajectories:
    """Simulate ``n_traj`` trajectories of family ``name`` (random ICs and parameters from ``seed``).

    Args:
        name: a key of :data:`PDE_FAMILIES`.
        n_traj: number of trajectories (vectorised as one batch).
        n_frames: stored frames per trajectory (after the family's burn-in).
        res: grid points per side (even, >= 16).
        seed: makes initial conditions and parameters deterministic.
        cache: read/write the on-disk cache (:func:`cache_dir`).

    Returns:
        :class:`Trajectories`.
    """
    fam = get_family(name)
    if n_traj < 1 or n_frames < 1:
        raise ValueError(f"n_traj and n_frames must be at least 1, got {n_traj} and {n_frames}")
    if res < 16 or res % 2:
        raise ValueError(f"res must be an even number >= 16, got {res}")
    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")

    def make(u: Tensor, params: Tensor) -> Trajectories:
        return Trajectories(
            u=u,
            params=params,
            family=fam.name,
            fields=fam.fields,
            param_names=fam.param_names,
            frame_dt=fam.frame_dt,
            length=fam.length(res),
        )

    path = cache_dir() / f"{_cache_key(fam, n_traj, n_frames, res, seed)}.npz"
    if cache and path.is_file():
        try:
            with np.load(path, allow_pickle=False) as data:
                return make(torch.from_numpy(data["u"].copy()), torch.from_numpy(data["params"].copy()))
        except (OSError, KeyError, ValueError):
            pass  # unreadable entry: simulate again and overwrite it
    gen = torch.Generator().manual_seed(seed)
    params = sample_params(fam, n_traj, generator=gen)
    u0 = fam.init(n_traj, res, gen)
    full = integrate(fam, u0, params, n_frames=n_frames + fam.burn_in)
    u = full[:, fam.burn_in :].float().contiguous()
    if not torch.isfinite(u).all():
        raise FloatingPointError(f"{fam.name}: the solver diverged (seed {seed}, res {res})")
    out = make(u, params.float())
    if cache:
        _save_npz(path, {"u": out.u.numpy(), "params": out.params.numpy()})
    return out


def family_config(name: str) -> dict[str, object]:
    """A JSON-able description of a registered family (for results and reports)."""
    return get_family(name).describe()
