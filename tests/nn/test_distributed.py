"""fit under `accelerate launch` with two CPU processes (gloo) equals the one-process run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("fit_worker.py")


def _env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ACCELERATE_", "RANK", "WORLD_SIZE", "LOCAL_RANK"))
    }
    env["OMP_NUM_THREADS"] = "1"
    return env


@pytest.mark.slow
def test_two_process_fit_matches_single_process(tmp_path):
    accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent))
    if accelerate is None:
        pytest.skip("accelerate's launcher is not installed")
    single, multi = tmp_path / "single.json", tmp_path / "multi.json"
    subprocess.run([sys.executable, str(WORKER), str(single)], check=True, env=_env(), timeout=120)
    cmd = [
        accelerate,
        "launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        "29517",
        str(WORKER),
        str(multi),
    ]
    subprocess.run(cmd, check=True, env=_env(), timeout=300, capture_output=True)
    a, b = json.loads(single.read_text()), json.loads(multi.read_text())
    assert a["world"] == 1 and b["world"] == 2
    assert len(a["loss"]) == len(b["loss"]) == 12
    # float64: the same global batch, split in two and averaged by DDP, gives the same steps
    assert max(abs(x - y) for x, y in zip(a["loss"], b["loss"], strict=True)) < 1e-10
    assert max(abs(x - y) for x, y in zip(a["weight"], b["weight"], strict=True)) < 1e-10
