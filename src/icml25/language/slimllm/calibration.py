"""Calibration tokens for SlimLLM (Guo et al., ICML 2025, https://arxiv.org/abs/2505.22689).

The paper scores heads and channels on a small calibration set: random windows of ``window_len``
tokens drawn from unlabelled text (32 windows of 128 tokens in its experiments). These helpers make
that set from any texts and any tokenizer, so a user can prune with their own data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from icml25.core.validate import check_positive

__all__ = ["encode_text", "calibration_windows"]


def encode_text(text: str, tokenizer: Any, max_tokens: int) -> torch.Tensor:
    """The first ``max_tokens`` token ids of ``text`` as a 1-D ``long`` tensor.

    ``tokenizer`` is a Hugging Face tokenizer, or ``None`` for UTF-8 bytes (ids 0-255). Only a prefix
    of the text (about 8 characters per wanted token) is tokenised, so long corpora stay cheap.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    check_positive("max_tokens", max_tokens, integer=True)
    if tokenizer is None:
        return torch.tensor(list(text[: max_tokens * 2].encode("utf-8")[:max_tokens]), dtype=torch.long)
    chars = max_tokens * 8  # ~4 characters per token; a margin so that enough tokens remain
    ids = tokenizer(text[:chars], add_special_tokens=False)["input_ids"]
    return torch.tensor(ids[:max_tokens], dtype=torch.long)


def calibration_windows(
    texts: Sequence[str],
    tokenizer: Any,
    n_windows: int,
    window_len: int,
    *,
    seed: int = 0,
    max_tokens_per_text: int = 200_000,
) -> torch.Tensor:
    """``[n_windows, window_len]`` token windows at random offsets, shared out evenly over ``texts``.

    Each text gives ``n_windows // len(texts)`` windows, the last ones one more when the count does
    not divide; the offsets come from one ``torch.Generator`` seeded with ``seed``, so the same
    arguments give the same windows.
    """
    if isinstance(texts, str) or not texts:
        raise ValueError("texts must be a non-empty sequence of strings")
    check_positive("n_windows", n_windows, integer=True)
    check_positive("window_len", window_len, integer=True)
    k = len(texts)
    counts = [n_windows // k] * k
    for i in range(n_windows % k):
        counts[k - 1 - i] += 1
    gen = torch.Generator().manual_seed(seed)
    windows = []
    for index, (text, count) in enumerate(zip(texts, counts, strict=True)):
        ids = encode_text(text, tokenizer, max_tokens_per_text)
        if ids.numel() < window_len + 1:
            raise ValueError(
                f"texts[{index}] has {ids.numel()} tokens, fewer than window_len + 1 = {window_len + 1}"
            )
        starts = torch.randint(0, ids.numel() - window_len, (count,), generator=gen)
        windows += [ids[s : s + window_len] for s in starts.tolist()]
    return torch.stack(windows)
