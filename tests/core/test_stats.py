"""Paired intervals and the holds / fails / undetermined rule (icml25.core.stats)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from icml25.core.stats import (
    Interval,
    cluster_bootstrap_interval,
    judge,
    paired_interval,
    paired_t_interval,
    resolving_factor,
)


class TestPairedT:
    def test_equals_scipy_on_a_known_case(self) -> None:
        d = [0.3, 0.1, 0.5, 0.2]
        iv = paired_t_interval(d, level=0.9)
        low, high = scipy_stats.t.interval(
            0.9, df=3, loc=np.mean(d), scale=np.std(d, ddof=1) / 2.0
        )
        assert iv.estimate == pytest.approx(0.275)
        assert (iv.low, iv.high) == pytest.approx((low, high))
        assert iv.method == "paired t" and iv.n_seeds == 4 and iv.n_items is None

    def test_matches_ttest_rel_confidence_interval(self) -> None:
        rng = np.random.default_rng(1)
        a, b = rng.normal(1.0, 1.0, 12), rng.normal(0.5, 1.0, 12)
        ci = scipy_stats.ttest_rel(a, b).confidence_interval(0.95)
        iv = paired_t_interval(a - b)
        assert (iv.low, iv.high) == pytest.approx((ci.low, ci.high))

    def test_zero_spread_is_a_point(self) -> None:
        iv = paired_t_interval([0.2, 0.2, 0.2])
        assert iv.low == pytest.approx(0.2) and iv.high == pytest.approx(0.2)

    @pytest.mark.parametrize("bad", [[1.0], [], [0.1, float("nan")], [0.1, float("inf")]])
    def test_bad_input(self, bad: list[float]) -> None:
        with pytest.raises(ValueError, match="differences"):
            paired_t_interval(bad)

    def test_bad_level(self) -> None:
        with pytest.raises(ValueError, match="level"):
            paired_t_interval([0.1, 0.2], level=1.5)


class TestClusterBootstrap:
    def test_one_seed_mean_matches_normal_theory(self) -> None:
        rng = np.random.default_rng(0)
        a = rng.normal(0.3, 1.0, 4000)
        b = a - 0.3 + rng.normal(0.0, 0.5, 4000)  # paired: a - b ~ N(0.3, 0.25)
        iv = cluster_bootstrap_interval([a], [b], resamples=2000)
        d = a - b
        se = d.std(ddof=1) / math.sqrt(d.size)
        assert iv.estimate == pytest.approx(d.mean())
        assert iv.half_width == pytest.approx(1.96 * se, rel=0.1)
        assert iv.n_seeds == 1 and iv.n_items == 4000

    def test_pairing_removes_the_shared_item_difficulty(self) -> None:
        rng = np.random.default_rng(2)
        difficulty = rng.normal(0, 5.0, 500)
        a = difficulty + 0.2 + rng.normal(0, 0.1, 500)
        b = difficulty + rng.normal(0, 0.1, 500)
        iv = cluster_bootstrap_interval([a], [b])
        assert iv.low > 0.15 and iv.high < 0.25  # unpaired, the interval would be ~40x wider

    def test_seed_spread_widens_the_interval(self) -> None:
        rng = np.random.default_rng(3)
        items = [rng.normal(0, 1, 300) for _ in range(4)]
        same = [x + 0.1 for x in items]
        spread = [x + off for x, off in zip(items, (-0.5, 0.7, -0.3, 0.5), strict=True)]
        narrow = cluster_bootstrap_interval(same, items)
        wide = cluster_bootstrap_interval(spread, items)
        assert wide.half_width > 5 * max(narrow.half_width, 1e-9)

    def test_custom_statistic_and_factor(self) -> None:
        a = [np.array([[1.0, 0.0], [3.0, 0.0], [5.0, 0.0]])]
        b = [np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])]
        iv = cluster_bootstrap_interval(a, b, statistic=lambda rows: float(rows[:, 0].max()), factor=2.0)
        assert iv.estimate == pytest.approx(5.0 - 2.0 * 1.0)

    def test_deterministic(self) -> None:
        rng = np.random.default_rng(4)
        a, b = [rng.normal(size=50)], [rng.normal(size=50)]
        assert cluster_bootstrap_interval(a, b) == cluster_bootstrap_interval(a, b)

    def test_bad_input(self) -> None:
        with pytest.raises(ValueError, match="same"):
            cluster_bootstrap_interval([np.zeros(3)], [np.zeros(4)])
        with pytest.raises(ValueError, match="seeds"):
            cluster_bootstrap_interval([], [])
        with pytest.raises(ValueError, match="finite"):
            cluster_bootstrap_interval([np.array([1.0, np.nan])], [np.zeros(2)])
        with pytest.raises(ValueError, match="at least one item"):
            cluster_bootstrap_interval([np.zeros(0)], [np.zeros(0)])
        with pytest.raises(ValueError, match="resamples"):
            cluster_bootstrap_interval([np.zeros(3)], [np.zeros(3)], resamples=10)

    def test_paired_interval_picks_the_method(self) -> None:
        items = [np.ones(20), np.ones(20)]
        assert paired_interval(items, items, [1, 1], [1, 1]).method == "cluster bootstrap"
        assert paired_interval(None, None, [1.0, 2.0], [0.5, 1.0]).method == "paired t"
        assert paired_interval(None, None, [1.0], [0.5]) is None


class TestJudge:
    iv = staticmethod(lambda lo, hi: Interval((lo + hi) / 2, lo, hi, 0.95, "t", 3))

    def test_superiority(self) -> None:
        assert judge(self.iv(0.01, 0.3), ">", 0.1) == "holds"
        assert judge(self.iv(-0.2, 0.05), ">", 0.1) == "fails"  # excludes the smallest effect
        assert judge(self.iv(-0.2, 0.2), ">", 0.1) == "undetermined"
        assert judge(None, ">", 0.1) == "undetermined"

    def test_lower_is_better(self) -> None:
        assert judge(self.iv(-0.3, -0.01), "<", 0.1) == "holds"
        assert judge(self.iv(-0.05, 0.2), "<", 0.1) == "fails"
        assert judge(self.iv(-0.2, 0.2), "<=", 0.1) == "undetermined"

    def test_non_inferiority(self) -> None:
        assert judge(self.iv(-1.5, 0.5), ">=", 2.0, "non_inferiority") == "holds"
        assert judge(self.iv(-4.0, -2.5), ">=", 2.0, "non_inferiority") == "fails"
        assert judge(self.iv(-3.0, 0.5), ">=", 2.0, "non_inferiority") == "undetermined"

    def test_bad_arguments(self) -> None:
        with pytest.raises(ValueError, match="smallest_effect"):
            judge(self.iv(0, 1), ">", 0.0)
        with pytest.raises(ValueError, match="op"):
            judge(self.iv(0, 1), "==", 0.1)
        with pytest.raises(ValueError, match="comparison"):
            judge(self.iv(0, 1), ">", 0.1, "equivalence")  # type: ignore[arg-type]

    def test_resolving_factor(self) -> None:
        iv = Interval(0.05, -0.15, 0.25, 0.95, "t", 3)  # half-width 0.2, estimate halfway to 0.1
        # farther boundary: 0 and 0.1 are both 0.05 away -> (0.2 / 0.05)^2 = 16
        assert resolving_factor(iv, ">", 0.1) == pytest.approx(16.0)
        on_margin = Interval(-2.0, -3, -1, 0.95, "t", 3)
        assert math.isinf(resolving_factor(on_margin, ">=", 2.0, "non_inferiority"))


class TestCalibration:
    """No-effect data: undetermined at small n, fails at large n; a true effect holds at large n."""

    @staticmethod
    def _run(effect: float, n: int, seed: int) -> str:
        rng = np.random.default_rng(seed)
        base = [rng.normal(0.0, 1.0, n) for _ in range(3)]
        ours = [x + effect + rng.normal(0.0, 1.0, n) for x in base]
        return judge(cluster_bootstrap_interval(ours, base, resamples=500, seed=seed), ">", 0.2)

    def test_no_effect_small_n_is_undetermined(self) -> None:
        outcomes = [self._run(0.0, 20, s) for s in range(10)]
        assert outcomes.count("undetermined") >= 8
        assert "holds" not in outcomes[:5] or outcomes.count("holds") <= 1

    def test_no_effect_large_n_fails(self) -> None:
        assert [self._run(0.0, 5000, s) for s in range(3)] == ["fails"] * 3

    def test_true_effect_large_n_holds(self) -> None:
        assert [self._run(0.5, 5000, s) for s in range(3)] == ["holds"] * 3

    @settings(max_examples=25, deadline=None)
    @given(
        st.lists(st.floats(-5, 5), min_size=2, max_size=8),
        st.floats(0.01, 3.0),
    )
    def test_outcome_is_consistent_with_the_interval(self, diffs: list[float], delta: float) -> None:
        iv = paired_t_interval(diffs)
        out = judge(iv, ">", delta)
        assert (out == "holds") == (iv.low > 0)
        if out == "fails":
            assert iv.high < delta
        assert out in ("holds", "fails", "undetermined")
