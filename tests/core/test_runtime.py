"""Thread control: ICML25_THREADS lets a shared machine run checks on fewer cores."""

from __future__ import annotations

import math

import pytest
import torch

from icml25.core.runtime import set_threads


@pytest.fixture(autouse=True)
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_env_sets_threads(monkeypatch) -> None:
    monkeypatch.setenv("ICML25_THREADS", "1")
    assert set_threads() == 1 and torch.get_num_threads() == 1


def test_explicit_argument_wins_over_env(monkeypatch) -> None:
    monkeypatch.setenv("ICML25_THREADS", "1")
    assert set_threads(2) == 2


def test_thread_budget_reads_the_env_else_all_cores(monkeypatch) -> None:
    import os

    from icml25.core.runtime import thread_budget

    monkeypatch.setenv("ICML25_THREADS", "1")
    assert thread_budget() == 1
    monkeypatch.delenv("ICML25_THREADS")
    assert thread_budget() == (os.cpu_count() or 1)


@pytest.mark.parametrize("bad", ["0", "-1", "two"])
def test_bad_env_value_is_rejected(monkeypatch, bad: str) -> None:
    from icml25.core.runtime import thread_budget

    monkeypatch.setenv("ICML25_THREADS", bad)
    with pytest.raises(ValueError, match="ICML25_THREADS"):
        set_threads()
    with pytest.raises(ValueError, match="ICML25_THREADS"):
        thread_budget()


def test_seed_everything_takes_numpy_ints_and_repeats() -> None:
    import random

    import numpy as np

    from icml25.core.runtime import seed_everything

    seed_everything(np.int64(3))
    first = (random.random(), np.random.rand(), torch.rand(1).item())
    seed_everything(3)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == first


@pytest.mark.parametrize("bad", [-1, True, 1.5, "3", None])
def test_seed_everything_rejects_bad_seeds(bad: object) -> None:
    from icml25.core.runtime import seed_everything

    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        seed_everything(bad)  # type: ignore[arg-type]


def test_resolve_precision_picks_the_faster_matmul(monkeypatch) -> None:
    from icml25.core import runtime

    assert runtime.resolve_precision("fp32") == "fp32" and runtime.resolve_precision("bf16") == "bf16"
    runtime._PRECISION_CACHE.clear()
    rates = {"fp32": 50.0, "bf16": 6.0}  # an AVX2-only processor: emulated bfloat16
    monkeypatch.setattr(runtime, "matmul_gflops", lambda name, **kw: rates[name])
    assert runtime.resolve_precision("auto") == "fp32"
    runtime._PRECISION_CACHE.clear()
    rates.update(bf16=400.0)  # native bfloat16 (AVX512-BF16 / AMX)
    assert runtime.resolve_precision("auto") == "bf16"
    runtime._PRECISION_CACHE.clear()
    with pytest.raises(ValueError, match="precision"):
        runtime.resolve_precision("fp16")


def test_matmul_gflops_measures_something() -> None:
    from icml25.core.runtime import matmul_gflops

    rate = matmul_gflops("fp32", size=64, seconds=0.02)
    assert math.isfinite(rate) and rate > 0  # no speed floor: a loaded machine may stall it
    with pytest.raises(ValueError, match="dtype_name"):
        matmul_gflops("int8")
    with pytest.raises(ValueError, match="size"):
        matmul_gflops("fp32", size=0)


def test_cpu_model_reads_the_model_name(tmp_path) -> None:
    from icml25.core.runtime import cpu_flags, cpu_model, environment

    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
        "model name\t: AMD EPYC 7B13\nflags\t\t: fpu avx2 fma\n"
    )
    assert cpu_model(info) == "AMD EPYC 7B13"  # the name, not x86's numeric "model" line before it
    assert cpu_flags(info) == frozenset({"fpu", "avx2", "fma"})
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd\n\nModel\t\t: Raspberry Pi 4 Model B\n")
    assert cpu_model(arm) == "Raspberry Pi 4 Model B"
    assert cpu_flags(arm) == frozenset({"fp", "asimd"})
    (tmp_path / "empty").write_text("processor\t: 0\n")
    assert cpu_model(tmp_path / "empty") is None
    assert cpu_model(tmp_path / "missing") is None
    assert cpu_flags(tmp_path / "empty") is None and cpu_flags(tmp_path / "missing") is None
    env = environment()
    assert "cpu_model" in env and "cpu_capability" in env


def test_worker_pool_queues_only_when_the_thread_budget_allows(monkeypatch) -> None:
    import operator

    from icml25.core.runtime import WorkerPool

    monkeypatch.setenv("ICML25_THREADS", "1")  # a one-thread slot: nothing is queued, the caller runs it
    solo = WorkerPool(4)
    assert solo.workers == 1 and not solo.active
    assert solo.submit("a", operator.add, 1, 2) is False and not solo.queued("a")
    with pytest.raises(KeyError):
        solo.take("a")
    monkeypatch.setenv("ICML25_THREADS", "2")
    pool = WorkerPool(8)
    assert pool.workers == 2 and pool.active
    try:
        assert pool.submit("a", operator.add, 1, 2) and pool.submit("b", operator.mul, 3, 4)
        assert pool.submit("a", operator.add, 100, 200)  # already queued: kept, not resubmitted
        assert pool.queued("a") and pool.take("a") == 3 and not pool.queued("a")
        assert pool.take("b") == 12
    finally:
        pool.close()
    assert not pool.queued("b")
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="workers"):
            WorkerPool(bad)  # type: ignore[arg-type]
