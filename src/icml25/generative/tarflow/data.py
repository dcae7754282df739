"""scikit-learn's bundled digits (8×8, 17 grey levels) with a fixed train/val/test split.

Part of the TarFlow claim check (*Normalizing Flows are Capable Generative Models*, ICML 2025,
https://arxiv.org/abs/2412.06329): at CPU scale it stands in for the paper's ImageNet 64×64
bits/dim benchmark and for its class-conditional guidance experiments (Sec. 3.3); the dataset is
our choice. 1797 images with integer values 0–16 (L = 17 levels). The
split is fixed (stratified, ``random_state=0``): 360 test images, and of the remaining 1437,
10% (144) are held out for model selection, leaving 1293 for training. Nothing is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = ["DigitsDataset", "load_digits_dataset", "DIGITS_LEVELS", "shift_family"]

DIGITS_LEVELS = 17


@dataclass(frozen=True)
class DigitsDataset:
    """Integer images (n, 1, 8, 8) int64 in [0, 16] and labels (n,) int64 per split."""

    x_train: Tensor
    y_train: Tensor
    x_val: Tensor
    y_val: Tensor
    x_test: Tensor
    y_test: Tensor
    num_levels: int = DIGITS_LEVELS
    num_classes: int = 10


def load_digits_dataset(
    *, test_size: int = 360, val_frac: float = 0.1, random_state: int = 0
) -> DigitsDataset:
    """The fixed digits split (defaults: 1293 train, 144 val, 360 test)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if not 0 < test_size < 1797 or not 0 < val_frac < 1:
        raise ValueError(
            f"test_size must be in (0, 1797) and val_frac in (0, 1), got {test_size}, {val_frac}"
        )
    digits = load_digits()
    x = digits.images.astype("int64")
    y = digits.target.astype("int64")
    x_tv, x_te, y_tv, y_te = train_test_split(
        x, y, test_size=test_size, stratify=y, random_state=random_state
    )
    x_tr, x_va, y_tr, y_va = train_test_split(
        x_tv, y_tv, test_size=val_frac, stratify=y_tv, random_state=random_state
    )

    def t(a: object) -> Tensor:
        return torch.as_tensor(a)

    return DigitsDataset(
        x_train=t(x_tr)[:, None],
        y_train=t(y_tr),
        x_val=t(x_va)[:, None],
        y_val=t(y_va),
        x_test=t(x_te)[:, None],
        y_test=t(y_te),
    )


def shift_family(x_int: Tensor, max_shift: int = 1) -> Tensor:
    """Every image translated by each (dy, dx) in [-max_shift, max_shift]^2, the vacated pixels set to 0.

    The claim check's larger training set (a digits family translated by up to one pixel: 9 images per
    digit). Returns (n * k, C, H, W) with k = (2 * max_shift + 1)^2, image-major: rows
    ``i * k : (i + 1) * k`` are the k translates of image ``i`` (the unshifted one at ``k // 2``).
    ``max_shift = 0`` returns the images unchanged.
    """
    if x_int.ndim != 4:
        raise ValueError(f"shift_family: x_int must be (n, C, H, W), got {tuple(x_int.shape)}")
    h, w = x_int.shape[-2:]
    if not 0 <= max_shift < min(h, w):
        raise ValueError(f"shift_family: max_shift must be in [0, {min(h, w) - 1}], got {max_shift}")
    shifts = range(-max_shift, max_shift + 1)
    out = []
    for dy in shifts:
        for dx in shifts:
            moved = torch.zeros_like(x_int)
            moved[..., max(dy, 0) : h + min(dy, 0), max(dx, 0) : w + min(dx, 0)] = x_int[
                ..., max(-dy, 0) : h + min(-dy, 0), max(-dx, 0) : w + min(-dx, 0)
            ]
            out.append(moved)
    return torch.stack(out, dim=1).reshape(-1, *x_int.shape[1:])
