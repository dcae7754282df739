"""``icml25.core.parallel``: how the local pool orders checks and shares out threads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icml25.core.parallel import longest_first, threads_per_job


def test_longest_recorded_check_goes_first_and_unknown_ones_before_all() -> None:
    walls = {"a": 60.0, "b": 600.0, "c": 300.0}
    assert longest_first(["a", "b", "c", "new"], walls) == ["new", "b", "c", "a"]


def test_ties_keep_the_order_given() -> None:
    assert longest_first(["x", "y", "z"], {"x": 5.0, "y": 5.0, "z": 9.0}) == ["z", "x", "y"]


@given(
    st.lists(st.text(min_size=1, max_size=4), unique=True, max_size=12),
    st.dictionaries(st.text(min_size=1, max_size=4), st.floats(0, 1e4), max_size=12),
)
def test_order_is_a_permutation_with_non_increasing_times(slugs: list[str], walls: dict[str, float]) -> None:
    order = longest_first(slugs, walls)
    assert sorted(order) == sorted(slugs)
    times = [walls.get(s, float("inf")) for s in order]
    assert times == sorted(times, reverse=True)


def test_threads_are_shared_out_and_never_zero() -> None:
    assert threads_per_job(2, cpus=2) == 1
    assert threads_per_job(4, cpus=2) == 1
    assert threads_per_job(1, cpus=16) == 16
    with pytest.raises(ValueError, match="jobs"):
        threads_per_job(0)


def test_estimate_remaining_shares_the_work_and_respects_the_longest_job() -> None:
    from icml25.core.parallel import PoolProgress, estimate_remaining

    # 3 jobs of 100, 40, 40 s on 2 workers; job 0 has run 30 s, job 2 is done
    left = estimate_remaining([100.0, 40.0, 40.0], {0: 0.0}, {2}, now=30.0, workers=2)
    assert left == 70.0  # max((70 + 40) / 2, 70)
    assert estimate_remaining([100.0, None], {}, set(), now=0.0, workers=2) is None
    assert estimate_remaining([5.0], {0: 0.0}, {0}, now=9.0, workers=1) == 0.0
    line = PoolProgress(("a", "b"), 1, 3, 65.0, 3600.0).line()
    assert line == "[1/3 done, 0:01:05 elapsed, ~1:00:00 left] running: a, b"


def test_the_pool_names_as_running_only_the_checks_a_worker_has_taken(tmp_path) -> None:
    """One worker, two checks: every progress line names at most one running check (the executor
    queues a call beyond its workers, which must not be reported as running), and results come back
    in the jobs' order."""
    from icml25.core.parallel import CheckJob, PoolProgress, run_in_processes

    slugs = ["lexicographic_morl", "multi_reward_policy_eval"]  # the two quickest tiny checks
    jobs = [CheckJob(slug, "tiny", None, {}, str(tmp_path), 1) for slug in slugs]
    ticks: list[PoolProgress] = []
    results = run_in_processes(jobs, 1, on_tick=ticks.append, tick_s=0.2, expected_s=[5.0, 5.0])
    assert [r.slug for r in results] == slugs
    assert ticks and all(len(t.running) <= 1 for t in ticks)
    assert {t.running for t in ticks if t.done == 0} == {("lexicographic_morl",)}
