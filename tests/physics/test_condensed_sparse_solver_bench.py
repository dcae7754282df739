"""``icml25 bench solver``: the sparse solver's benchmark, which reports our CPU goals (against CHOLMOD,
BLAS efficiency, the 5x ratios) that the claim check no longer judges; and the paired timings
(``time_problems``, ``batched_rounds``) behind the check's speed criteria."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from icml25.cli import main
from icml25.physics.condensed_sparse_solver.baselines import cudss_available, cudss_run
from icml25.physics.condensed_sparse_solver.bench import (
    METHODS,
    available,
    batched_rounds,
    build_parser,
    time_problems,
)

torch.set_num_threads(1)


def test_bench_solver_is_the_sparse_solvers_benchmark_with_its_goals(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--sizes", "9", "--rhs", "1", "2", "--repeats", "1", "--methods", "ours", "superlu", "cholmod"]
    assert main(["bench", "solver", *argv, "--batch", "9", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["method"] for r in out["rows"]} == {"ours", "superlu", "cholmod"}
    goals = {t["target"]: t for t in out["targets"]}
    # the CPU targets the check no longer judges are still measured and reported here
    assert "n=9, factor + 2 solves: ours >= CHOLMOD" in goals
    assert "n=9, 1-RHS solve within 1.5x of CHOLMOD" in goals
    assert goals["2 batched 9^2 systems: ours >= 5x SuperLU looped"]["threshold"] == 5.0
    assert any("merge phase >= 0.5x same-shape batched matmul" in t for t in goals)
    for t in out["targets"]:
        if t["value"] is not None and t["value"] == t["value"]:
            assert t["met"] == (
                t["value"] >= t["threshold"] if "ours/" not in t["unit"] else t["value"] <= t["threshold"]
            )
    # the long name gives the same benchmark; the short one is shown in the usage line
    assert main(["bench", "condensed_sparse_solver", *argv, "--no-batch", "--json"]) == 0
    assert {r["method"] for r in json.loads(capsys.readouterr().out)["rows"]} == {
        "ours",
        "superlu",
        "cholmod",
    }
    assert build_parser().prog == "icml25 bench solver"


def test_bench_solver_table_prints_the_goals(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "bench",
                "solver",
                "--sizes",
                "9",
                "--rhs",
                "2",
                "--repeats",
                "1",
                "--methods",
                "ours",
                "superlu",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "goals (our CPU targets, not the paper's claims" in text and "5x SuperLU looped" in text


def test_time_problems_pairs_the_same_fresh_problems_across_methods() -> None:
    out = time_problems(9, 3, ["ours", "superlu"], n_rhs=2, seed=1)
    assert set(out) == {"ours", "superlu"}
    for m, rec in out.items():
        assert all(len(v) == 3 for v in rec.values()), m
        assert max(rec["residual"]) < 1e-10 and min(rec["total_s"]) > 0
    assert len(out["ours"]["solve1_s"]) == 3 and "solve1_s" not in out["superlu"]
    # each problem is a fresh operator: the residual differs from problem to problem, and a rerun repeats it
    again = time_problems(9, 3, ["ours", "superlu"], n_rhs=2, seed=1)
    assert again["ours"]["residual"] == out["ours"]["residual"]
    assert len(set(out["ours"]["residual"])) > 1
    with pytest.raises(ValueError, match="count must be a positive integer"):
        time_problems(9, 0, ["ours"], n_rhs=1)
    with pytest.raises(ValueError, match="n must be an integer >= 5"):
        time_problems(3, 1, ["ours"], n_rhs=1)


def test_batched_rounds_time_one_call_against_a_loop() -> None:
    out = batched_rounds(9, 3, ["ours", "superlu", "pyamg_cg"], rounds=2, seed=0)
    assert set(out) == {"ours", "superlu"}  # only direct solvers are looped
    for rec in out.values():
        assert len(rec["seconds"]) == 2 and max(rec["residual"]) < 1e-10
    with pytest.raises(ValueError, match="rounds must be a positive integer"):
        batched_rounds(9, 3, ["ours"], rounds=0)


def test_cudss_baseline_reports_itself_missing_without_a_gpu() -> None:
    assert "cudss" in METHODS
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the cuDSS path is exercised by the medium preset")
    assert not cudss_available() and not available("cudss")
    with pytest.raises(ImportError, match="cuDSS"):
        cudss_run(None, np.ones(4))  # type: ignore[arg-type]
