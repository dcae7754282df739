"""Trains a tiny regression model with icml25.nn.train.fit and writes the loss trajectory (rank 0).

Run directly (one process) or under ``accelerate launch --cpu --num_processes 2``; the test in
test_distributed.py compares the two.
"""

from __future__ import annotations

import json
import sys

import torch

from icml25.nn.distributed import get_accelerator, is_main_process
from icml25.nn.train import FitConfig, fit


def main(out: str) -> None:
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    X = torch.randn(64, 5, generator=g, dtype=torch.float64)
    y = X @ torch.randn(5, 1, generator=g, dtype=torch.float64) + 0.1 * torch.randn(
        64, 1, generator=g, dtype=torch.float64
    )
    model = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)).double()

    def loss_fn(m, batch, gen):
        xb, yb = batch
        return ((m(xb) - yb) ** 2).mean()

    config = FitConfig(
        steps=12,
        batch_size=8,
        lr=0.05,
        warmup_steps=2,
        weight_decay=0.01,
        grad_clip=1.0,
        sampling="shuffle_drop_last",
    )
    hist = fit(model, loss_fn, (X, y), config, seed=3)
    acc = get_accelerator()
    if is_main_process():
        with open(out, "w") as f:
            json.dump(
                {
                    "loss": list(hist.train_loss),
                    "world": 1 if acc is None else acc.num_processes,
                    "weight": model[0].weight.detach().flatten().tolist(),
                },
                f,
            )


if __name__ == "__main__":
    main(sys.argv[1])
