"""Metrics of AAAR-1.0 (Lou et al., ICML 2025, arXiv 2410.22394), Sec. 4 of the paper.

* EquationInference: precision / recall / F1 of the positive class over per-candidate binary
  decisions (the ICML protocol), and 4-way accuracy (the arXiv v1 protocol).
* ExperimentDesign: soft precision / recall / F1 over a cosine-similarity matrix S (predicted x
  gold): S-P = mean_i max_j S_ij, S-R = mean_j max_i S_ij, S-F1 their harmonic mean; S-Match of the
  explanations = mean of diag(S) over the i-th predicted and i-th gold explanation (truncated to
  the shorter list); ROUGE-1 / ROUGE-L F-measure per pair, averaged.
* PaperWeakness: SN-P / SN-R / SN-F1, the soft scores with several reviewers (recall per reviewer
  then averaged; precision per prediction averaged over reviewers), and the ITF-IDF specificity:
  for paper i with T weakness items, O_j = sum_k sim(j,k)[sim >= tau] within the list (self
  included), P_j = 1 + sum over the other N-1 papers of round(max_k sim(j,k), 2)[>= tau], and
  score_j = log(T / O_j) log(N / P_j); a paper's score is the mean over j, the benchmark's the mean
  over papers. Higher = more paper-specific.

Embeddings are pluggable: any callable mapping a list of strings to an (n, d) array. The paper uses
sentence-transformers (all-mpnet-base-v2 for the soft scores, all-MiniLM-L6-v2 for ITF-IDF); the
offline default here is :class:`TfidfEmbedder` (word 1-2-gram TF-IDF, L2-normalised).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "Embedder",
    "TfidfEmbedder",
    "binary_prf",
    "choice_accuracy",
    "cosine_matrix",
    "soft_prf",
    "soft_match",
    "rouge_scores",
    "sn_prf",
    "itf_idf",
]

Embedder = Callable[[Sequence[str]], Any]


def _strings(name: str, items: Any, *, allow_empty: bool = True) -> list[str]:
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        raise TypeError(f"{name} must be a sequence of strings, got {type(items).__name__}")
    out = list(items)
    for i, s in enumerate(out):
        if not isinstance(s, str):
            raise TypeError(f"{name}[{i}] must be a string, got {type(s).__name__}")
    if not out and not allow_empty:
        raise ValueError(f"{name} must not be empty")
    return out


def _labels(name: str, values: Any) -> np.ndarray:
    if isinstance(values, str | bytes) or not isinstance(values, Sequence | np.ndarray):
        raise TypeError(f"{name} must be a sequence of 0/1 labels, got {type(values).__name__}")
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if arr.dtype.kind not in "biu":
        raise TypeError(f"{name} must hold integer 0/1 labels, got dtype {arr.dtype}")
    if not np.isin(arr, (0, 1)).all():
        raise ValueError(f"{name} must hold only 0 and 1")
    return arr.astype(int)


def binary_prf(predicted: Sequence[int], gold: Sequence[int]) -> dict[str, float]:
    """Precision, recall and F1 of the positive class (1 = "this candidate is the original").

    Zero divisions give 0, as sklearn's ``zero_division=0``. Always answering 1 on a 1:3 set gives
    P = 0.25, R = 1, F1 = 0.4.
    """
    p, g = _labels("predicted", predicted), _labels("gold", gold)
    if p.shape != g.shape:
        raise ValueError(f"predicted and gold must have the same length, got {p.size} and {g.size}")
    tp = int(((p == 1) & (g == 1)).sum())
    precision = tp / int(p.sum()) if p.sum() else 0.0
    recall = tp / int(g.sum()) if g.sum() else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def choice_accuracy(predicted: Sequence[int | None], gold: Sequence[int]) -> float:
    """Share of multiple-choice items answered correctly; an unparsed answer (``None``) is wrong."""
    if isinstance(predicted, str | bytes) or not isinstance(predicted, Sequence):
        raise TypeError("predicted must be a sequence of option indices or None")
    if isinstance(gold, str | bytes) or not isinstance(gold, Sequence):
        raise TypeError("gold must be a sequence of option indices")
    if not gold:
        raise ValueError("gold must not be empty")
    if len(predicted) != len(gold):
        raise ValueError(
            f"predicted and gold must have the same length, got {len(predicted)} and {len(gold)}"
        )
    for name, seq in (("predicted", predicted), ("gold", gold)):
        for i, v in enumerate(seq):
            if v is None and name == "predicted":
                continue
            if isinstance(v, bool) or not isinstance(v, int | np.integer):
                raise TypeError(f"{name}[{i}] must be an int option index, got {type(v).__name__}")
    return float(np.mean([p is not None and int(p) == int(g) for p, g in zip(predicted, gold, strict=True)]))


class TfidfEmbedder:
    """Word 1-2-gram TF-IDF vectors (sublinear tf, L2-normalised) fit on a corpus: the offline
    stand-in for the paper's sentence-transformer embeddings."""

    def __init__(self, corpus: Sequence[str], *, ngram_range: tuple[int, int] = (1, 2)) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        texts = _strings("corpus", corpus, allow_empty=False)
        if not any(t.strip() for t in texts):
            raise ValueError("corpus must contain some text")
        self._vectorizer = TfidfVectorizer(ngram_range=ngram_range, sublinear_tf=True).fit(texts)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        items = _strings("texts", texts)
        if not items:
            return np.zeros((0, len(self._vectorizer.vocabulary_)))
        return np.asarray(self._vectorizer.transform(items).toarray(), dtype=float)


def _embed(embed: Embedder, texts: list[str]) -> np.ndarray:
    vectors = np.asarray(embed(texts), dtype=float)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ValueError(f"embed must return an array of shape ({len(texts)}, d), got {vectors.shape}")
    if not np.isfinite(vectors).all():
        raise ValueError("embed returned NaN or inf")
    return vectors


def cosine_matrix(a: Any, b: Any) -> np.ndarray:
    """Cosine similarities between the rows of ``a`` (n, d) and ``b`` (m, d); a zero row gives 0."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(f"a and b must be 2-D with the same width, got {x.shape} and {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("a and b must be finite")
    nx = np.linalg.norm(x, axis=1, keepdims=True)
    ny = np.linalg.norm(y, axis=1, keepdims=True)
    x = np.divide(x, nx, out=np.zeros_like(x), where=nx > 0)
    y = np.divide(y, ny, out=np.zeros_like(y), where=ny > 0)
    return x @ y.T


def _hmean(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def soft_prf(predicted: Sequence[str], gold: Sequence[str], embed: Embedder) -> dict[str, float]:
    """S-Precision, S-Recall and S-F1 of a predicted list against a gold list (paper Sec. 4.2).

    An empty prediction scores 0 on all three (as the official averaging does).
    """
    pred = _strings("predicted", predicted)
    ref = _strings("gold", gold, allow_empty=False)
    if not pred:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    s = cosine_matrix(_embed(embed, pred), _embed(embed, ref))
    p, r = float(s.max(axis=1).mean()), float(s.max(axis=0).mean())
    return {"precision": p, "recall": r, "f1": _hmean(p, r)}


def soft_match(predicted: Sequence[str], gold: Sequence[str], embed: Embedder) -> float:
    """S-Match: mean cosine of the i-th predicted and i-th gold explanation, over the shorter list."""
    pred = _strings("predicted", predicted)
    ref = _strings("gold", gold, allow_empty=False)
    n = min(len(pred), len(ref))
    if n == 0:
        return 0.0
    s = cosine_matrix(_embed(embed, pred[:n]), _embed(embed, ref[:n]))
    return float(np.diag(s).mean())


def _f_measure(overlap: int, n_pred: int, n_gold: int) -> float:
    precision = overlap / n_pred if n_pred else 0.0
    recall = overlap / n_gold if n_gold else 0.0
    return _hmean(precision, recall)


def _lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists (dynamic programming)."""
    row = [0] * (len(b) + 1)
    for x in a:
        diagonal = 0
        for j, y in enumerate(b, start=1):
            diagonal, row[j] = row[j], diagonal + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


def rouge_scores(predicted: Sequence[str], gold: Sequence[str]) -> dict[str, float]:
    """ROUGE-1 and ROUGE-L F-measure (Porter stemming) per aligned pair, averaged over the shorter list.

    Tokenisation is ``rouge-score``'s own (lower case, non-alphanumerics to spaces, Porter stems
    of tokens longer than 3 characters); the two F-measures are computed here rather than with
    ``rouge_score.rouge_scorer``, whose import of ``absl.logging`` binds a log handler to
    whatever ``sys.stderr`` is at that moment (under pytest, a capture file that is later
    closed), which broke later tests in the same process.
    """
    from rouge_score.tokenizers import DefaultTokenizer

    pred = _strings("predicted", predicted)
    ref = _strings("gold", gold, allow_empty=False)
    n = min(len(pred), len(ref))
    if n == 0:
        return {"rouge1": 0.0, "rougeL": 0.0}
    tokenizer = DefaultTokenizer(use_stemmer=True)
    r1, rl = [], []
    for p, g in zip(pred[:n], ref[:n], strict=True):
        pt, gt = tokenizer.tokenize(p), tokenizer.tokenize(g)
        overlap = sum((Counter(pt) & Counter(gt)).values())
        r1.append(_f_measure(overlap, len(pt), len(gt)))
        rl.append(_f_measure(_lcs_length(pt, gt), len(pt), len(gt)))
    return {"rouge1": float(np.mean(r1)), "rougeL": float(np.mean(rl))}


def sn_prf(predicted: Sequence[str], reviews: Sequence[Sequence[str]], embed: Embedder) -> dict[str, float]:
    """SN-Precision / SN-Recall / SN-F1 of a weakness list against several reviewers (Sec. 4.3).

    Recall: per reviewer, mean over their items g of max_p cos(p, g); then mean over reviewers.
    Precision: per predicted item p, mean over reviewers of max_g cos(p, g); then mean over p.
    """
    pred = _strings("predicted", predicted)
    if isinstance(reviews, str | bytes) or not isinstance(reviews, Sequence) or not reviews:
        raise ValueError("reviews must be a non-empty sequence of weakness lists")
    lists = [_strings(f"reviews[{i}]", r, allow_empty=False) for i, r in enumerate(reviews)]
    if not pred:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    p_vec = _embed(embed, pred)
    mats = [cosine_matrix(p_vec, _embed(embed, r)) for r in lists]
    recall = float(np.mean([m.max(axis=0).mean() for m in mats]))
    precision = float(np.mean(np.stack([m.max(axis=1) for m in mats]).mean(axis=0)))
    return {"precision": precision, "recall": recall, "f1": _hmean(precision, recall)}


def itf_idf(weaknesses: Sequence[Sequence[str]], embed: Embedder, *, tau: float = 0.5) -> dict[str, Any]:
    """ITF-IDF specificity of one weakness list per paper (Sec. 4.3, "diversity").

    Returns ``{"score": benchmark mean, "per_paper": [...]}``. A paper with an empty list scores 0.
    """
    if isinstance(weaknesses, str | bytes) or not isinstance(weaknesses, Sequence):
        raise TypeError("weaknesses must be a sequence of weakness lists, one per paper")
    lists = [_strings(f"weaknesses[{i}]", w) for i, w in enumerate(weaknesses)]
    if len(lists) < 2:
        raise ValueError(f"weaknesses must cover at least 2 papers, got {len(lists)}")
    if (
        isinstance(tau, bool)
        or not isinstance(tau, int | float)
        or not math.isfinite(tau)
        or not -1 <= tau <= 1
    ):
        raise ValueError(f"tau must be a finite number in [-1, 1], got {tau!r}")
    vectors = [_embed(embed, w) if w else None for w in lists]
    n = len(lists)
    per_paper = []
    for i, vi in enumerate(vectors):
        if vi is None:
            per_paper.append(0.0)
            continue
        t = vi.shape[0]
        inner = cosine_matrix(vi, vi)
        np.fill_diagonal(inner, 1.0)
        o = np.where(inner >= tau, inner, 0.0).sum(axis=1)
        p = np.ones(t)
        for k, vk in enumerate(vectors):
            if k == i or vk is None:
                continue
            best = np.round(cosine_matrix(vi, vk).max(axis=1), 2)
            p += np.where(best >= tau, best, 0.0)
        scores = np.log(t / o) * np.log(n / p)
        per_paper.append(float(scores.mean()))
    return {"score": float(np.mean(per_paper)), "per_paper": per_paper}
