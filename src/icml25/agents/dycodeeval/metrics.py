"""DyCodeEval's metrics: dynamic Pass@1, DyPass@K, grouped pass@k, stability and diversity.

*DyCodeEval: Dynamic Benchmarking of Reasoning Capabilities in Code Large Language Models Under Data
Contamination* (Chen et al., ICML 2025, https://arxiv.org/abs/2503.04149), Sec. 4-5 (DyPass@10 in
its Table 3) and the official ``post.py``, ``stability.py``, ``diversity.py``.

* Dynamic Pass@1: per seed, one validated variant drawn with a seeded RNG, then ordinary Pass@1.
* DyPass@K: we did not recover the paper's exact formula, so the definition here is ours:
  for each seed, ``n`` >= K distinct variants with one greedy completion each, ``c`` passing;
  ``1 - C(n - c, K) / C(n, K)`` (the unbiased estimator of Chen et al., Eq. 1, over variants instead
  of samples), averaged over seeds. :func:`grouped_pass_at_k` is the repository's grouped variant
  (per-variant pass@k from samples, averaged within a seed, then across seeds).
* Stability: mean and std of dynamic Pass@1 over repeated random variant draws.
* Diversity: mean sentence BLEU-4 (word tokens, lower-cased; NLTK's smoothing "method1",
  epsilon 0.1, our own implementation as NLTK is not a dependency) between a seed's instruction
  and each variant's (external) and between pairs of variants of one seed (internal); and the mean
  TF-IDF cosine similarity of the same pairs (offline stand-in for sentence embeddings). Lower
  means more diverse.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from icml25.core.validate import check_positive, check_str
from icml25.llm.code_eval import pass_at_k

__all__ = [
    "dynamic_pass_at_1",
    "dypass_at_k",
    "grouped_pass_at_k",
    "stability",
    "sentence_bleu",
    "tfidf_cosine",
    "external_diversity",
    "internal_diversity",
    "char_mutation",
]


def _check_outcomes(outcomes: Mapping[str, Sequence[bool]]) -> None:
    if not outcomes:
        raise ValueError("outcomes must map at least one seed to its variants' pass/fail list")


def dynamic_pass_at_1(outcomes: Mapping[str, Sequence[bool]], *, seed: int = 33) -> float:
    """Pass@1 with one variant per seed drawn by ``random.Random(seed)`` (paper default 33).

    Seeds without any validated variant are skipped; if none has one the result is NaN.
    """
    _check_outcomes(outcomes)
    rng = random.Random(seed)
    picks = [bool(rng.choice(list(v))) for _, v in sorted(outcomes.items()) if len(v) > 0]
    return float(np.mean(picks)) if picks else float("nan")


def stability(
    outcomes: Mapping[str, Sequence[bool]], *, draws: int = 5, seed: int = 0
) -> tuple[float, float]:
    """(mean, std) of dynamic Pass@1 over ``draws`` random variant draws (paper: 5)."""
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}")
    vals = [dynamic_pass_at_1(outcomes, seed=seed + d) for d in range(draws)]
    return float(np.mean(vals)), float(np.std(vals))


def dypass_at_k(outcomes: Mapping[str, Sequence[bool]], k: int) -> float:
    """DyPass@K: unbiased pass@K over distinct variants (one greedy completion each), mean over seeds.

    Seeds with fewer than ``k`` variants are skipped (NaN if none is left).
    """
    _check_outcomes(outcomes)
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    vals = [pass_at_k(len(v), sum(map(bool, v)), k) for v in outcomes.values() if len(v) >= k]
    return float(np.mean(vals)) if vals else float("nan")


def grouped_pass_at_k(samples: Mapping[str, Sequence[tuple[int, int]]], k: int) -> float:
    """The repository's grouped pass@k: ``seed -> [(n, c) per variant]``; mean within, then across seeds."""
    if not samples:
        raise ValueError("samples must not be empty")
    per_seed = [np.mean([pass_at_k(n, c, k) for n, c in group]) for group in samples.values() if group]
    return float(np.mean(per_seed)) if per_seed else float("nan")


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+|[^\w\s]", text.lower())


def sentence_bleu(reference: str, hypothesis: str, *, max_n: int = 4, epsilon: float = 0.1) -> float:
    """Sentence BLEU-max_n with uniform weights, brevity penalty and "method1" smoothing."""
    check_str("reference", reference)
    check_str("hypothesis", hypothesis)
    check_positive("max_n", max_n, integer=True)
    check_positive("epsilon", epsilon)
    ref, hyp = _tokens(reference), _tokens(hypothesis)
    if not hyp or not ref:
        return 0.0
    log_p = 0.0
    for n in range(1, max_n + 1):
        h = Counter(tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1))
        r = Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1))
        total = sum(h.values())
        if total == 0:
            return 0.0
        match = sum(min(c, r[g]) for g, c in h.items())
        log_p += math.log((match if match > 0 else epsilon) / total) / max_n
    bp = 1.0 if len(hyp) > len(ref) else math.exp(1 - len(ref) / len(hyp))
    return float(bp * math.exp(log_p))


def tfidf_cosine(pairs: Sequence[tuple[str, str]]) -> float:
    """Mean TF-IDF cosine similarity of text pairs (vocabulary fitted on all texts in ``pairs``)."""
    if not pairs:
        raise ValueError("pairs is empty: the mean similarity of no pairs is undefined")
    for pair in pairs:
        if not (isinstance(pair, tuple | list) and len(pair) == 2):
            raise TypeError(f"pairs must hold (text, text) pairs, got {pair!r}")
        check_str("pairs[i][0]", pair[0])
        check_str("pairs[i][1]", pair[1])
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = [t for p in pairs for t in p]
    try:
        vec = TfidfVectorizer(lowercase=True, token_pattern=r"(?u)\b\w+\b").fit(texts)
    except ValueError:  # no word at all in any text
        return float("nan")
    a = vec.transform([p[0] for p in pairs])
    b = vec.transform([p[1] for p in pairs])
    return float(np.mean(np.asarray(a.multiply(b).sum(axis=1)).ravel()))


def external_diversity(
    seed_texts: Mapping[str, str], variants: Mapping[str, Sequence[str]]
) -> dict[str, float]:
    """BLEU and TF-IDF cosine between each seed text and each of its variants' (lower = more diverse)."""
    pairs = [(seed_texts[s], v) for s, vs in variants.items() for v in vs]
    if not pairs:
        return {"bleu": float("nan"), "cosine": float("nan"), "pairs": 0.0}
    return {
        "bleu": float(np.mean([sentence_bleu(a, b) for a, b in pairs])),
        "cosine": tfidf_cosine(pairs),
        "pairs": float(len(pairs)),
    }


def internal_diversity(variants: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """BLEU and TF-IDF cosine between pairs of variants of the same seed (lower = more diverse)."""
    pairs = [(a, b) for vs in variants.values() for a, b in itertools.combinations(vs, 2)]
    if not pairs:
        return {"bleu": float("nan"), "cosine": float("nan"), "pairs": 0.0}
    return {
        "bleu": float(np.mean([sentence_bleu(a, b) for a, b in pairs])),
        "cosine": tfidf_cosine(pairs),
        "pairs": float(len(pairs)),
    }


def char_mutation(text: str, *, rate: float = 0.05, seed: int = 0) -> str:
    """A manual-operator baseline: swap adjacent letters inside words with probability ``rate``."""
    if not 0 <= rate <= 1:
        raise ValueError(f"rate must lie in [0, 1], got {rate}")
    rng = random.Random(seed)
    chars = list(text)
    for i in range(len(chars) - 1):
        if chars[i].isalpha() and chars[i + 1].isalpha() and rng.random() < rate:
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
    return "".join(chars)
