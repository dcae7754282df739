"""What every paper uses: the claim-check protocol, results store, configs, runtime, progress.

``core`` imports no paper. Plotting lives in :mod:`icml25.core.plotting` and is imported on use.
"""

from icml25.core.check import ClaimCheck, NeedsResource, RunContext, SeedOutcome
from icml25.core.claims import (
    SCALES,
    CheckResult,
    Claim,
    Criterion,
    CriterionResult,
    MetricSummary,
    Verdict,
    VerdictKind,
    compute_verdict,
    evaluate_criterion,
)
from icml25.core.config import ConfigError, apply_overrides, parse_overrides
from icml25.core.results import ResultStore
from icml25.core.runtime import Stopwatch, environment, seed_everything, set_threads

__all__ = [
    "SCALES",
    "CheckResult",
    "Claim",
    "ClaimCheck",
    "ConfigError",
    "Criterion",
    "CriterionResult",
    "MetricSummary",
    "NeedsResource",
    "ResultStore",
    "RunContext",
    "SeedOutcome",
    "Stopwatch",
    "Verdict",
    "VerdictKind",
    "apply_overrides",
    "compute_verdict",
    "environment",
    "evaluate_criterion",
    "parse_overrides",
    "seed_everything",
    "set_threads",
]
