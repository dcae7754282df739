"""The shared figure style: arm colours are fixed, whichever process draws them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from icml25.core.plotting import OURS_COLOR, PALETTE, arm_color

UNKNOWN_ARMS = ["oracle", "ablation_no_gate", "random_init", "lora_r8", "greedy", "beam_4", "x"]

_PRINT_COLOURS = (
    "import json, sys; from icml25.core.plotting import arm_color; "
    "print(json.dumps([arm_color(a, 'ours', ('base',)) for a in sys.argv[1:]]))"
)


def _colours_in_fresh_process(hash_seed: str) -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    proc = subprocess.run(
        [sys.executable, "-c", _PRINT_COLOURS, *UNKNOWN_ARMS],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    return json.loads(proc.stdout)


def test_ours_and_baselines_take_fixed_colours() -> None:
    assert arm_color("ours", "ours", ("a", "b")) == OURS_COLOR
    assert [arm_color(a, "ours", ("a", "b")) for a in ("a", "b")] == list(PALETTE[:2])


def test_unknown_arm_colour_does_not_depend_on_the_string_hash_seed() -> None:
    first, second = _colours_in_fresh_process("1"), _colours_in_fresh_process("2")
    assert first == second
    assert first == [arm_color(a, "ours", ("base",)) for a in UNKNOWN_ARMS]  # and this process agrees
    assert set(first) <= set(PALETTE)
