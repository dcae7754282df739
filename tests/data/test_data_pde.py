"""Tests of the pseudo-spectral PDE simulators in icml25.data.pde."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.data import pde
from icml25.data.pde import (
    PDE_FAMILIES,
    SpectralGrid,
    get_family,
    integrate,
    random_initial_condition,
    simulate,
)

TWO_PI = 2 * math.pi


def _coords(res: int) -> tuple[torch.Tensor, torch.Tensor]:
    return SpectralGrid(res, TWO_PI).coords()


def test_diffusion_matches_exact_mode_decay() -> None:
    y, x = _coords(32)
    modes = [(1, 0, 1.0), (2, 3, 0.5), (0, 4, -0.7)]  # (kx, ky, amplitude)
    u0 = sum(a * torch.cos(kx * x + ky * y + 0.3) for kx, ky, a in modes)
    nu = 0.03
    traj = integrate(
        "diffusion", u0[None, None], torch.tensor([[nu]], dtype=torch.float64), n_frames=4, frame_dt=0.7
    )
    for n in range(4):
        t = 0.7 * n
        exact = sum(
            a * math.exp(-nu * (kx**2 + ky**2) * t) * torch.cos(kx * x + ky * y + 0.3) for kx, ky, a in modes
        )
        assert torch.allclose(traj[0, n, 0], exact, atol=1e-12)


def test_burgers_matches_cole_hopf_solution() -> None:
    # 1D viscous Burgers embedded in 2D (v = 0, no y dependence): phi = a + exp(-nu t) cos x solves the
    # heat equation, u = -2 nu phi_x / phi solves u_t + u u_x = nu u_xx.
    res, nu, a, T = 64, 0.1, 2.0, 1.0
    y, x = _coords(res)

    def exact(t: float) -> torch.Tensor:
        e = math.exp(-nu * t)
        return 2 * nu * e * torch.sin(x) / (a + e * torch.cos(x))

    u0 = torch.stack([exact(0.0), torch.zeros_like(x)])[None]
    traj = integrate(
        "burgers", u0, torch.tensor([[nu]], dtype=torch.float64), n_frames=2, frame_dt=T, substeps=200
    )
    assert (traj[0, -1, 0] - exact(T)).abs().max() < 1e-6
    assert traj[0, -1, 1].abs().max() < 1e-12


def test_navier_stokes_single_shell_decays_exactly() -> None:
    # Vorticity on one wavenumber shell (|k| = 1) has zero advection: w(t) = w0 exp(-nu t).
    y, x = _coords(32)
    w0 = (torch.cos(x) + 0.5 * torch.sin(y) - 0.3 * torch.sin(x))[None, None]
    nu = 0.01
    traj = integrate(
        "navier_stokes", w0, torch.tensor([[nu]], dtype=torch.float64), n_frames=3, frame_dt=2.0, substeps=10
    )
    for n in range(3):
        assert torch.allclose(traj[0, n], w0[0] * math.exp(-nu * 2.0 * n), atol=1e-10)


def test_kolmogorov_laminar_state_is_steady() -> None:
    y, _ = _coords(32)
    nu = 1e-3
    w_star = torch.sin(4 * y) / (16 * nu + 0.1)  # 0 = -16 nu w + sin(4y) - 0.1 w
    traj = integrate(
        "kolmogorov",
        w_star[None, None],
        torch.tensor([[nu]], dtype=torch.float64),
        n_frames=3,
        frame_dt=1.0,
        substeps=10,
    )
    # the forcing is integrated explicitly, so the discrete steady state differs by O(dt^2)
    assert (traj[0, -1, 0] - w_star).abs().max() < 1e-5 * w_star.abs().max()


def test_diffusion_conserves_mass() -> None:
    gen = torch.Generator().manual_seed(1)
    u0 = 2.5 + random_initial_condition(3, 1, 32, generator=gen)
    traj = integrate(
        "diffusion", u0, torch.tensor([[0.05], [0.02], [0.005]], dtype=torch.float64), n_frames=6
    )
    mass = traj.mean(dim=(-2, -1))
    assert torch.allclose(mass, mass[:, :1].expand_as(mass), atol=1e-13)


def test_navier_stokes_conserves_mean_vorticity() -> None:
    gen = torch.Generator().manual_seed(2)
    w0 = 0.7 + 3.0 * random_initial_condition(2, 1, 32, generator=gen)
    traj = integrate("navier_stokes", w0, torch.tensor([[1e-3], [5e-4]], dtype=torch.float64), n_frames=4)
    mean = traj.mean(dim=(-2, -1))
    assert torch.allclose(mean, torch.full_like(mean, 0.7), atol=1e-12)


@pytest.mark.parametrize(
    ("name", "params", "scale", "frame_dt"),
    [("navier_stokes", [1e-3], 3.0, 0.5), ("burgers", [0.02], 0.5, 0.5), ("gray_scott", None, None, 20.0)],
)
def test_second_order_convergence_under_dt_refinement(
    name: str, params: list[float] | None, scale: float | None, frame_dt: float
) -> None:
    fam = get_family(name)
    gen = torch.Generator().manual_seed(3)
    if scale is None:
        smooth = 0.5 + 0.5 * random_initial_condition(1, 1, 32, generator=gen)[:, 0]  # smooth seed patches
        u0 = torch.stack([1 - 0.5 * smooth, 0.25 * smooth], dim=1)
        p = torch.tensor([[0.037, 0.06]], dtype=torch.float64)
    else:
        u0 = scale * random_initial_condition(1, fam.n_fields, 32, generator=gen)
        p = torch.tensor([params], dtype=torch.float64)

    def run(sub: int) -> torch.Tensor:
        return integrate(fam, u0, p, n_frames=2, frame_dt=frame_dt, substeps=sub)[0, -1]

    ref = run(256)
    errs = [float((run(s) - ref).abs().max()) for s in (16, 32, 64)]
    orders = [math.log2(errs[i] / errs[i + 1]) for i in range(2)]
    assert all(1.7 < o < 2.4 for o in orders), (errs, orders)


@pytest.mark.parametrize("name", sorted(PDE_FAMILIES))
def test_every_family_simulates_finite_and_shaped(name: str) -> None:
    traj = simulate(name, n_traj=2, n_frames=3, res=32, seed=0, cache=False)
    fam = get_family(name)
    assert traj.u.shape == (2, 3, fam.n_fields, 32, 32)
    assert traj.u.dtype == torch.float32
    assert torch.isfinite(traj.u).all()
    assert traj.params.shape == (2, len(fam.param_names))
    for j, (lo, hi) in enumerate(fam.param_ranges):
        assert ((traj.params[:, j] >= lo - 1e-7) & (traj.params[:, j] <= hi + 1e-7)).all()
    assert (traj.u[:, 1:] != traj.u[:, :-1]).any()  # the state evolves


def test_simulate_is_deterministic_and_cached(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ICML25_CACHE", str(tmp_path))
    a = simulate("burgers", n_traj=2, n_frames=3, res=16, seed=5)
    files = list((tmp_path / "pde").glob("*.npz"))
    assert len(files) == 1 and not list((tmp_path / "pde").glob("*.tmp"))
    b = simulate("burgers", n_traj=2, n_frames=3, res=16, seed=5)  # from the cache
    c = simulate("burgers", n_traj=2, n_frames=3, res=16, seed=5, cache=False)
    assert torch.equal(a.u, b.u) and torch.equal(a.u, c.u) and torch.equal(a.params, b.params)
    d = simulate("burgers", n_traj=2, n_frames=3, res=16, seed=6)
    assert not torch.equal(a.u, d.u)
    assert len(list((tmp_path / "pde").glob("*.npz"))) == 2
    files[0].write_bytes(b"not an npz file")  # a corrupt entry is simulated again
    e = simulate("burgers", n_traj=2, n_frames=3, res=16, seed=5)
    assert torch.equal(a.u, e.u)
    with np.load(files[0], allow_pickle=False) as data:
        assert set(data.files) == {"u", "params"}


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), k_max=st.sampled_from([2.0, 3.0, 4.0]))
def test_random_initial_condition_is_band_limited(seed: int, k_max: float) -> None:
    u = random_initial_condition(2, 2, 24, generator=torch.Generator().manual_seed(seed), k_max=k_max)
    assert torch.allclose(u.abs().amax(dim=(-2, -1)), torch.ones(2, 2, dtype=torch.float64))
    spec = torch.fft.fft2(u).abs()
    k = torch.fft.fftfreq(24, 1 / 24)
    kmag = torch.sqrt(k[:, None] ** 2 + k[None, :] ** 2)
    assert spec[..., (kmag > k_max) | (kmag == 0)].max() < 1e-9


def test_dealias_mask_keeps_two_thirds() -> None:
    mask = SpectralGrid(48, TWO_PI).dealias
    assert mask.shape == (48, 25)
    assert mask[15, 15] == 1 and mask[16, 0] == 0 and mask[0, 16] == 0 and mask[-15, 3] == 1


def test_bad_inputs_raise_clear_errors() -> None:
    with pytest.raises(ValueError, match="known families: .*burgers"):
        simulate("heat", n_traj=1, n_frames=2)
    with pytest.raises(ValueError, match="u0 must be"):
        integrate("burgers", torch.zeros(1, 1, 16, 16), torch.zeros(1, 1), n_frames=2)
    with pytest.raises(ValueError, match="NaN"):
        integrate("diffusion", torch.full((1, 1, 16, 16), float("nan")), torch.ones(1, 1), n_frames=2)
    with pytest.raises(ValueError, match="params must be"):
        integrate("diffusion", torch.zeros(2, 1, 16, 16), torch.ones(1, 1), n_frames=2)
    with pytest.raises(ValueError, match="res must be"):
        simulate("diffusion", n_traj=1, n_frames=2, res=15, cache=False)


def test_cache_dir_follows_environment(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("ICML25_CACHE", str(tmp_path))
    assert pde.cache_dir() == tmp_path / "pde"
    monkeypatch.delenv("ICML25_CACHE")
    assert pde.cache_dir().parts[-3:] == (".cache", "icml25", "pde")
