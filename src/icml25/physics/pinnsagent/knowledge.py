"""Physics-Guided Knowledge Replay and the knowledge base of *PINNsAgent: Automated PDE
Surrogation with Large Language Models* (Wuwu et al., ICML 2025, arXiv 2501.12053).

The knowledge base is a table of past trainings, one row per (PDE, configuration) with its test
error. PGKR (paper Sec. 3.3, eq. 6) embeds every PDE, ranks the other solved PDEs by weighted
cosine similarity s_ij = (W f_i).(W f_j) / (|W f_i| |W f_j|) and replays the best
configurations of the top-k as a warm start. Two encoders are provided: the paper's one-hot
blocks of ten physics labels (with the family and type blocks up-weighted, our choice of W since
the paper's weights are not published), and a deterministic hashed character-trigram embedding of
the PDE's text description.

The knowledge base also yields per-parameter statistics that guide the memory tree: the
exploration score of the released code (``database/memory_tree.py``), computed per PDE and averaged
over the PDEs in the base. A categorical parameter scores the spread of mean log-error across its
values times a success-rate dispersion factor; a continuous one (learning rate, width, depth, point
counts) scores the gap in mean log-error between the runs with its top and bottom third of values
times (1 + |Spearman rho|). Per-value success rates (runs below the 25th percentile of their PDE's
errors) are our addition: they shape the tree's prior and the scripted planner's value choice.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml25.core.validate import check_finite_array, check_positive

from .pdes import LABEL_VALUES, PDESpec
from .pinn import SearchSpace


@dataclass(frozen=True)
class KBRow:
    """One past training: PDE name, configuration, test relative L2 error, seconds."""

    pde: str
    config: dict[str, Any]
    l2rel: float
    seconds: float = 0.0

    @property
    def log_l2(self) -> float:
        """log10 relative L2, capped at 2 (diverged = 100)."""
        v = self.l2rel
        return 2.0 if not math.isfinite(v) or v <= 0 else min(2.0, math.log10(v))


@dataclass
class KnowledgeBase:
    """A table of :class:`KBRow` (paper Sec. 3.2; ``dataset_for_retrieval.csv`` of the release)."""

    rows: list[KBRow] = field(default_factory=list)

    def add(self, row: KBRow) -> None:
        """Append a row."""
        if not isinstance(row, KBRow):
            raise TypeError(f"row must be a KBRow, got {type(row).__name__}")
        self.rows.append(row)

    def pdes(self) -> list[str]:
        """PDE names present, in first-seen order."""
        return list(dict.fromkeys(r.pde for r in self.rows))

    def without(self, pde: str) -> KnowledgeBase:
        """The leave-one-out base: every row except those of ``pde``."""
        return KnowledgeBase([r for r in self.rows if r.pde != pde])

    def of(self, pde: str) -> list[KBRow]:
        """The rows of ``pde``."""
        return [r for r in self.rows if r.pde == pde]

    def best(self, pde: str) -> KBRow | None:
        """The row of ``pde`` with the lowest error (None if it has none)."""
        rows = self.of(pde)
        return min(rows, key=lambda r: r.log_l2) if rows else None

    def topk(self, pde: str, k: int) -> list[KBRow]:
        """The ``k`` lowest-error rows of ``pde``."""
        check_positive("k", k, integer=True)
        return sorted(self.of(pde), key=lambda r: r.log_l2)[:k]


def encode_labels(pde: PDESpec, weights: Mapping[str, float] | None = None) -> np.ndarray:
    """The paper's PDE feature vector: concatenated one-hot label blocks times the diagonal W.

    ``weights`` maps label names to block weights (default: 2 for ``family`` and ``type``, 1 else).
    """
    w = {"family": 2.0, "type": 2.0} if weights is None else dict(weights)
    blocks = []
    for key, values in LABEL_VALUES.items():
        one = np.zeros(len(values))
        one[values.index(pde.labels[key])] = 1.0
        blocks.append(one * float(w.get(key, 1.0)))
    return np.concatenate(blocks)


def encode_text(text: str, dim: int = 256) -> np.ndarray:
    """A deterministic text embedding: hashed counts of lower-cased character trigrams, L2-normed."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("text must be a non-empty string")
    check_positive("dim", dim, integer=True)
    s = f"  {text.lower()}  "
    v = np.zeros(dim)
    for i in range(len(s) - 2):
        h = int.from_bytes(hashlib.blake2b(s[i : i + 3].encode(), digest_size=4).digest(), "little")
        v[h % dim] += 1.0
    return v / np.linalg.norm(v)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two non-zero vectors."""
    check_finite_array("a", a, ndim=1)
    check_finite_array("b", b, ndim=1)
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"a and b must be 1-D of equal shape, got {a.shape} and {b.shape}")
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0 or not (np.isfinite(na) and np.isfinite(nb)):
        raise ValueError("a and b must be finite and non-zero")
    return float(a @ b / (na * nb))


@dataclass(frozen=True)
class Retrieved:
    """A PGKR hit: the similar PDE, its similarity and its best row."""

    pde: str
    similarity: float
    best: KBRow


class PGKR:
    """Physics-Guided Knowledge Replay (paper Sec. 3.3).

    Args:
        specs: every PDE that may appear in the knowledge base or as a target, by name.
        encoder: ``"labels"`` (the paper's label blocks) or ``"text"`` (hashed trigrams of the
            description).
        weights: label block weights for the ``labels`` encoder.
    """

    def __init__(
        self,
        specs: Mapping[str, PDESpec],
        encoder: str = "labels",
        weights: Mapping[str, float] | None = None,
    ) -> None:
        if encoder not in ("labels", "text"):
            raise ValueError(f"encoder must be 'labels' or 'text', got {encoder!r}")
        if not specs:
            raise ValueError("specs must not be empty")
        self.specs = dict(specs)
        self.encoder = encoder
        self.weights = weights

    def embed(self, pde: PDESpec) -> np.ndarray:
        """The PDE's feature vector."""
        if self.encoder == "labels":
            return encode_labels(pde, self.weights)
        return encode_text(pde.description)

    def similarities(self, target: PDESpec, kb: KnowledgeBase) -> list[tuple[str, float]]:
        """(PDE, similarity) for every other PDE of ``kb``, most similar first."""
        f = self.embed(target)
        out = [(name, cosine(f, self.embed(self.specs[name]))) for name in kb.pdes() if name != target.name]
        return sorted(out, key=lambda t: -t[1])

    def retrieve(
        self, target: PDESpec, kb: KnowledgeBase, k: int = 1, max_l2: float = 1.0
    ) -> list[Retrieved]:
        """The top-``k`` similar PDEs (never the target itself) whose best error is <= ``max_l2``."""
        check_positive("k", k, integer=True)
        hits = []
        for name, sim in self.similarities(target, kb):
            best = kb.best(name)
            if best is None or not best.l2rel <= max_l2:
                continue
            hits.append(Retrieved(name, sim, best))
            if len(hits) == k:
                break
        return hits


@dataclass(frozen=True)
class ParamStats:
    """Knowledge-base statistics of the search parameters, averaged over PDEs.

    Attributes:
        scores: parameter -> importance score in [0, 1] (released code's exploration score).
        success: parameter -> value -> success rate (runs under their PDE's 25th percentile).
    """

    scores: dict[str, float]
    success: dict[str, dict[Any, float]]


#: The numeric parameters the released code scores as continuous (``memory_tree.py``: lr, width,
#: depth and the point counts); ``bc_weight``, numeric but absent from the release, is scored the same way.
CONTINUOUS_PARAMS = ("lr", "width", "depth", "n_domain", "n_boundary", "bc_weight")

#: How parameters are scored: ``official`` (categorical and continuous formulas of the release) or
#: ``categorical`` (every parameter with the categorical formula: our first version, kept as a variant).
SCORINGS = ("official", "categorical")


def _valid_logs(rows: Sequence[KBRow]) -> tuple[list[KBRow], np.ndarray]:
    """Rows with a finite positive error and their uncapped log10 errors (the release skips the rest)."""
    keep = [r for r in rows if math.isfinite(r.l2rel) and r.l2rel > 0]
    return keep, np.array([math.log10(r.l2rel) for r in keep])


def _as_float(v: Any) -> float | None:
    try:
        return None if v is None else float(v)
    except (TypeError, ValueError):
        return None


def categorical_score(values: Sequence[Any], logs: np.ndarray) -> float:
    """The release's categorical score: gap x min(1 + std of per-value success rates, 2).

    ``gap`` = max - min over values of the mean log error; success = log error strictly below the
    25th percentile of these runs; 0 when fewer than two values occur.
    """
    logs = np.asarray(logs, dtype=float)
    if len(values) != len(logs):
        raise ValueError(f"values and logs must have equal length, got {len(values)} and {len(logs)}")
    groups: dict[Any, list[float]] = {}
    for v, lg in zip(values, logs, strict=True):
        groups.setdefault(v, []).append(float(lg))
    if len(groups) <= 1:
        return 0.0
    means = np.array([np.mean(g) for g in groups.values()])
    cut = np.percentile(logs, 25)
    rates = [float(np.mean([m < cut for m in g])) for g in groups.values()]
    return float((means.max() - means.min()) * min(1.0 + float(np.std(rates)), 2.0))


def continuous_score(values: Sequence[float], logs: np.ndarray) -> float:
    """The release's continuous score: |mean log error of the top third - bottom third by value| x
    (1 + |Spearman rho(value, log error)|); 0 with fewer than 6 runs. As in the release, the top
    "third" holds ceil(n/3) runs and the bottom one floor(n/3)."""
    from scipy.stats import spearmanr

    x = np.asarray(values, dtype=float)
    logs = np.asarray(logs, dtype=float)
    if x.shape != logs.shape:
        raise ValueError(f"values and logs must have equal length, got {x.shape} and {logs.shape}")
    n = len(x)
    if n < 6:
        return 0.0
    srt = logs[np.argsort(x)]  # numpy's default (unstable) sort, as in the release: ties matter
    # the release slices sorted[-n//3:], i.e. the top ceil(n/3) runs against the bottom floor(n/3)
    gap = abs(float(np.mean(srt[(-n) // 3 :])) - float(np.mean(srt[: n // 3])))
    if np.all(x == x[0]) or np.all(logs == logs[0]):
        rho = 0.0
    else:
        r = float(spearmanr(x, logs)[0])
        rho = abs(r) if math.isfinite(r) else 0.0
    return gap * (1.0 + rho)


def exploration_scores(
    rows: Sequence[KBRow], params: Sequence[str], scoring: str = "official"
) -> dict[str, float]:
    """One PDE's exploration scores (``memory_tree.calculate_exploration_scores`` of the release).

    Each parameter gets the continuous score if ``scoring == "official"`` and it is one of
    :data:`CONTINUOUS_PARAMS`, else the categorical one; the scores are min-max normalised to [0, 1]
    (all 0.5 when equal, all 1.0 when no run has a finite error).
    """
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {SCORINGS}, got {scoring!r}")
    keep, logs = _valid_logs(rows)
    if not keep:
        return dict.fromkeys(params, 1.0)
    raw = {}
    for p in params:
        if scoring == "official" and p in CONTINUOUS_PARAMS:
            pairs = [(_as_float(r.config.get(p)), lg) for r, lg in zip(keep, logs, strict=True)]
            num = [(v, lg) for v, lg in pairs if v is not None]  # the release skips non-numeric values
            raw[p] = continuous_score([v for v, _ in num], np.array([lg for _, lg in num]))
        else:
            cat = [(r.config.get(p), lg) for r, lg in zip(keep, logs, strict=True)]
            cat = [(v, lg) for v, lg in cat if v is not None]
            raw[p] = categorical_score([v for v, _ in cat], np.array([lg for _, lg in cat]))
    lo, hi = min(raw.values()), max(raw.values())
    return {p: (s - lo) / (hi - lo) if hi > lo else 0.5 for p, s in raw.items()}


def parameter_stats(
    kb: KnowledgeBase, space: SearchSpace, quantile: float = 0.25, scoring: str = "official"
) -> ParamStats:
    """Per-parameter importance and per-value success rates from ``kb`` (see module docstring).

    Scores: :func:`exploration_scores` of every PDE with >= 2 rows, averaged over those PDEs (the
    release's ``simulate_new_pde`` global scores; 0.5 with none). Success rates (our prior, used by the
    tree and the scripted planner, not by the release's prompt): the share of a value's runs at or under
    their PDE's ``quantile`` of log error (diverged runs count as 100), pooled over PDEs with a +1/+2
    (Laplace) prior, so values never seen get 0.5.
    """
    if not 0 < quantile < 1:
        raise ValueError(f"quantile must be in (0, 1), got {quantile}")
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {SCORINGS}, got {scoring!r}")
    per_pde: list[dict[str, float]] = []
    hits: dict[str, dict[Any, float]] = {p: dict.fromkeys(v, 0.0) for p, v in space.values.items()}
    counts: dict[str, dict[Any, float]] = {p: dict.fromkeys(v, 0.0) for p, v in space.values.items()}
    for name in kb.pdes():
        rows = kb.of(name)
        if len(rows) < 2:
            continue
        logs = np.array([r.log_l2 for r in rows])
        cut = np.quantile(logs, quantile)
        succ = logs <= cut
        for p, values in space.values.items():
            for v in values:
                idx = [i for i, r in enumerate(rows) if r.config.get(p) == v]
                if idx:
                    hits[p][v] += float(succ[idx].sum())
                    counts[p][v] += len(idx)
        per_pde.append(exploration_scores(rows, space.params, scoring))
    avg = {p: float(np.mean([d[p] for d in per_pde])) if per_pde else 0.5 for p in space.values}
    success = {
        p: {v: (hits[p][v] + 1.0) / (counts[p][v] + 2.0) for v in vals} for p, vals in space.values.items()
    }
    return ParamStats(avg, success)


def format_config(config: Mapping[str, Any]) -> str:
    """A compact JSON-like rendering of a configuration for prompts."""
    parts = []
    for k, v in config.items():
        parts.append(f'"{k}": "{v}"' if isinstance(v, str) else f'"{k}": {v:g}')
    return "{" + ", ".join(parts) + "}"


def rows_table(rows: Sequence[KBRow]) -> str:
    """Rows rendered one per line, for prompts."""
    return "\n".join(f"- {r.pde}: L2={r.l2rel:.3g} config {format_config(r.config)}" for r in rows)
