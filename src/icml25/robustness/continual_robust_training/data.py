"""The digits data and the small CNN of our check of regularised continual robust training.

Paper: *Adapting to Evolving Adversaries with Regularized Continual Robust Training*
(Dai et al., ICML 2025, https://arxiv.org/abs/2502.04248)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from icml25.core.validate import check_in_range, check_positive

__all__ = ["SmallCNN", "load_digits_tensors"]


class SmallCNN(nn.Module):
    """conv(c->w1, 3x3)-ReLU-conv(w1->w2, 3x3)-ReLU-maxpool 2-FC(hidden)-ReLU-FC(classes).

    With the defaults (``w1=32, w2=64, hidden=128``) on 8x8 inputs it has about 150k parameters.
    """

    def __init__(
        self,
        in_channels: int = 1,
        image_size: int = 8,
        classes: int = 10,
        widths: tuple[int, int] = (32, 64),
        hidden: int = 128,
    ) -> None:
        super().__init__()
        for name, v in (
            ("in_channels", in_channels),
            ("image_size", image_size),
            ("classes", classes),
            ("hidden", hidden),
            ("widths[0]", widths[0]),
            ("widths[1]", widths[1]),
        ):
            check_positive(name, v, integer=True)
        if image_size < 2:
            raise ValueError(f"image_size must be at least 2, got {image_size}")
        w1, w2 = widths
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, w1, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(w1, w2, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        side = image_size // 2
        self.head = nn.Sequential(
            nn.Flatten(), nn.Linear(w2 * side * side, hidden), nn.ReLU(), nn.Linear(hidden, classes)
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.features(x))


def load_digits_tensors(
    seed: int = 0, test_size: float = 0.3, n_train: int | None = None
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """scikit-learn's 8x8 digits as ``(x_train, y_train, x_test, y_test)``: images ``(N, 1, 8, 8)``
    float32 in ``[0, 1]`` (pixel / 16), int64 labels, stratified split by ``seed``; ``n_train``
    keeps a stratified subset of the training part."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    check_in_range("test_size", test_size, 0.0, 1.0, low_open=True, high_open=True)
    data = load_digits()
    x = torch.tensor(data.images / 16.0, dtype=torch.float32).unsqueeze(1)
    y = torch.tensor(data.target, dtype=torch.int64)
    idx = list(range(len(y)))
    tr, te = train_test_split(idx, test_size=test_size, stratify=data.target, random_state=seed)
    if n_train is not None:
        check_positive("n_train", n_train, integer=True)
        if n_train < len(tr):
            tr, _ = train_test_split(tr, train_size=n_train, stratify=data.target[tr], random_state=seed)
    return x[tr], y[tr], x[te], y[te]
