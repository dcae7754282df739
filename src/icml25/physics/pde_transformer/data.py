"""Multi-PDE next-step data for PDE-Transformer's claim check.

*PDE-Transformer: Efficient and Versatile Transformers for Physics Simulations* (Holzschuh et al.,
ICML 2025, https://arxiv.org/abs/2505.24717). A CPU-sized stand-in for the paper's joint training set
of 16 PDE families (APEBench-based simulations, described in its Appendix C); which families and grid
sizes are used is our choice. Several families from :mod:`icml25.data.pde` are simulated, split by
trajectory into train and test, normalised with per-family channel mean/std computed on the train
split, and zero-padded to a common channel count (the paper's mixed-channel setup pads to 2 fields
and masks padded outputs). The PDE label of a sample is its family's index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from icml25.data.pde import get_family, simulate

__all__ = ["MultiPDEData", "make_multi_pde_data"]


@dataclass(frozen=True)
class MultiPDEData:
    """Normalised, padded trajectories of several families.

    Attributes:
        families: family names; a sample's label is the index into this tuple.
        train: ``[F, N_train, T, C, H, W]`` normalised train trajectories (padded channels are 0).
        test: ``[F, N_test, T, C, H, W]`` normalised test trajectories.
        mean, std: ``[F, C]`` per-family channel statistics (padded channels: 0 and 1).
        channel_mask: ``[F, C]`` bool, True for real (not padded) channels.
        val: ``[F, N_val, T, C, H, W]`` normalised validation trajectories (for choosing
            hyperparameters), or None when none were simulated.
    """

    families: tuple[str, ...]
    train: Tensor
    test: Tensor
    mean: Tensor
    std: Tensor
    channel_mask: Tensor
    val: Tensor | None = None

    def validation(self) -> MultiPDEData:
        """The same data with the validation trajectories in place of the test ones (for ``evaluate``)."""
        if self.val is None:
            raise ValueError("this data set has no validation trajectories (make it with n_val >= 1)")
        return replace(self, test=self.val, val=None)

    @property
    def n_channels(self) -> int:
        return self.train.shape[3]

    def denormalize(self, x: Tensor, family: int) -> Tensor:
        """``[..., C, H, W]`` normalised -> physical units of ``family``."""
        return x * self.std[family][:, None, None] + self.mean[family][:, None, None]

    def train_pairs(self) -> tuple[Tensor, Tensor, Tensor]:
        """All consecutive train frame pairs: ``x [M, C, H, W]``, ``y [M, C, H, W]``, labels ``[M]``."""
        Fm, N, T = self.train.shape[:3]
        x = self.train[:, :, :-1].reshape(-1, *self.train.shape[3:])
        y = self.train[:, :, 1:].reshape(-1, *self.train.shape[3:])
        labels = torch.arange(Fm).repeat_interleave(N * (T - 1))
        return x, y, labels


def make_multi_pde_data(
    families: Sequence[str],
    *,
    res: int,
    n_train: int,
    n_test: int,
    n_frames: int,
    seed: int,
    channels: int = 2,
    cache: bool = True,
    n_val: int = 0,
    frame_stride: int = 1,
) -> MultiPDEData:
    """Simulate (or load from the cache) and normalise a multi-family data set.

    Trajectories of family ``i`` come from ``simulate(name, seed=seed * 1000 + i)``; the first
    ``n_train`` are the train split, the next ``n_test`` the test split and the last ``n_val`` (if
    any; a separate simulation, ``seed=seed * 1000 + 500 + i``, so the train and test trajectories do
    not depend on ``n_val``) the validation split, normalised with the train statistics.

    ``frame_stride`` keeps every ``frame_stride``-th simulated frame, so one stored step spans
    ``frame_stride`` of the family's frame intervals (``(n_frames - 1) * frame_stride + 1`` frames are
    simulated); 1 keeps the family's spacing.
    """
    if n_val < 0:
        raise ValueError(f"n_val must be >= 0, got {n_val}")
    if not families:
        raise ValueError("families must name at least one PDE family")
    if frame_stride < 1:
        raise ValueError(f"frame_stride must be >= 1, got {frame_stride}")
    if n_train < 1 or n_test < 1 or n_frames < 2:
        raise ValueError(f"need n_train, n_test >= 1 and n_frames >= 2, got {n_train}, {n_test}, {n_frames}")
    for name in families:
        if get_family(name).n_fields > channels:
            raise ValueError(f"{name} has {get_family(name).n_fields} fields, more than channels={channels}")
    raw_frames = (n_frames - 1) * frame_stride + 1
    trains, tests, vals, means, stds, masks = [], [], [], [], [], []
    for i, name in enumerate(families):
        traj = simulate(
            name, n_traj=n_train + n_test, n_frames=raw_frames, res=res, seed=seed * 1000 + i, cache=cache
        )
        u = traj.u[:, ::frame_stride]  # [N, T, c, H, W]
        c = u.shape[2]
        mean = u[:n_train].mean(dim=(0, 1, 3, 4))
        std = u[:n_train].std(dim=(0, 1, 3, 4)).clamp_min(1e-6)
        u = (u - mean[:, None, None]) / std[:, None, None]
        pad = torch.zeros(u.shape[0], u.shape[1], channels - c, res, res)
        u = torch.cat([u, pad], dim=2)
        trains.append(u[:n_train])
        tests.append(u[n_train:])
        if n_val:
            v = simulate(
                name, n_traj=n_val, n_frames=raw_frames, res=res, seed=seed * 1000 + 500 + i, cache=cache
            ).u[:, ::frame_stride]
            v = (v - mean[:, None, None]) / std[:, None, None]
            vals.append(torch.cat([v, torch.zeros(v.shape[0], v.shape[1], channels - c, res, res)], dim=2))
        means.append(torch.cat([mean, torch.zeros(channels - c)]))
        stds.append(torch.cat([std, torch.ones(channels - c)]))
        masks.append(torch.arange(channels) < c)
    return MultiPDEData(
        families=tuple(families),
        train=torch.stack(trains),
        test=torch.stack(tests),
        mean=torch.stack(means),
        std=torch.stack(stds),
        channel_mask=torch.stack(masks),
        val=torch.stack(vals) if vals else None,
    )
