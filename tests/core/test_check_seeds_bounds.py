"""ClaimCheck.run bounds its seeds itself, not only through the CLI."""

from __future__ import annotations

import pytest

from icml25.catalog import get_paper
from icml25.core.check import MAX_SEEDS
from icml25.core.config import ConfigError


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_seeds": 0}, "n_seeds"),
        ({"n_seeds": MAX_SEEDS + 1}, "n_seeds"),
        ({"seeds": []}, "seeds"),
        ({"seeds": [-1]}, "non-negative"),
        ({"seeds": [0, 0]}, "distinct"),
    ],
)
def test_run_refuses_bad_seed_lists_before_any_work(kwargs: dict[str, object], match: str) -> None:
    check = get_paper("rfm_grokking").load_check()
    with pytest.raises(ConfigError, match=match):
        check.run("tiny", **kwargs)  # type: ignore[arg-type]
