"""Shared fixtures: a toy claim check that exercises the whole protocol in milliseconds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion


@dataclass(frozen=True)
class ToyConfig:
    n: int = 200
    effect: float = 1.0


TOY_CLAIM = Claim(
    statement="The toy method's mean is larger than the baseline's.",
    source="toy",
    ours="ours",
    baselines=("baseline",),
    criteria=(
        Criterion(
            "beats_baseline",
            arm="ours",
            metric="mean",
            op=">",
            other_arm="baseline",
            scales=("tiny", "small", "full"),
            description="ours above baseline",
        ),
        Criterion("positive", arm="ours", metric="mean", op=">", threshold=0.0, scales=("small", "full")),
    ),
)


class ToyCheck(ClaimCheck[ToyConfig]):
    slug = "toy"
    claim = TOY_CLAIM
    presets = {"tiny": ToyConfig(n=50), "small": ToyConfig(), "full": ToyConfig(n=10_000)}

    def run_seed(self, config: ToyConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        rng = np.random.default_rng(seed)
        ours = rng.normal(config.effect, 1.0, config.n)
        base = rng.normal(0.0, 1.0, config.n)
        for i in range(3):
            ctx.progress("steps", i + 1, 3)
        return SeedOutcome(
            metrics={"ours": {"mean": float(ours.mean())}, "baseline": {"mean": float(base.mean())}},
            series={"ours_hist": np.histogram(ours, bins=5)[0]},
        )

    def make_figures(self, config, outcomes, ctx) -> None:
        from icml25.core.plotting import new_figure

        fig, ax = new_figure()
        ax.plot([o.metrics["ours"]["mean"] for o in outcomes], label="ours")
        ax.set_xlabel("seed")
        ax.set_ylabel("mean")
        ctx.save_figure(fig, "means", "Mean per seed.")


@pytest.fixture
def toy_check() -> ToyCheck:
    return ToyCheck()
