"""Perplexity and bits per byte of a causal LM over held-out text, in sliding windows.

The token sequence is cut into windows of ``window`` tokens whose starts are ``stride`` apart (only
full windows; at most ``max_windows``). Window ``k`` scores only the tokens it adds beyond window
``k - 1`` (its last ``stride`` tokens, all but the first token in window 0), so no token is scored
twice and every scored token after the first window has at least ``window - stride`` tokens of
context; this is the Hugging Face "perplexity of fixed-length models" recipe
(https://huggingface.co/docs/transformers/perplexity). A window's own first token is never scored
(it has no context in that window), so with ``stride == window`` (disjoint windows) each window
scores ``window - 1`` tokens.

    perplexity  = exp(total NLL / scored tokens)
    bits/byte   = total NLL / ln 2 / UTF-8 bytes of the scored tokens' text

Bits per byte compares models with different tokenizers; perplexity does not.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import Tensor

from icml25.core.progress import ProgressFn

__all__ = ["PerplexityResult", "sliding_windows", "perplexity"]


@dataclass(frozen=True)
class PerplexityResult:
    """Totals over the scored tokens and the settings that produced them."""

    perplexity: float
    bits_per_byte: float
    bits_per_token: float
    nll_sum: float
    n_tokens: int
    n_bytes: int
    n_windows: int
    window: int
    stride: int

    def as_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}


def sliding_windows(
    n_tokens: int, window: int, stride: int, max_windows: int | None = None
) -> list[tuple[int, int]]:
    """``(start, first_scored)`` per full window; tokens ``[first_scored, start + window)`` are scored."""
    if window < 2:
        raise ValueError(f"window must be at least 2 tokens, got {window}")
    if not 1 <= stride <= window:
        raise ValueError(f"stride must lie in [1, window={window}], got {stride}")
    if max_windows is not None and max_windows < 1:
        raise ValueError(f"max_windows must be positive, got {max_windows}")
    out: list[tuple[int, int]] = []
    start = 0
    while start + window <= n_tokens and (max_windows is None or len(out) < max_windows):
        first = 1 if start == 0 else max(start + window - stride, start + 1)
        out.append((start, first))
        start += stride
    return out


@torch.no_grad()
def perplexity(
    model: Any,
    tokens: Tensor | str,
    *,
    tokenizer: Any = None,
    window: int = 256,
    stride: int | None = None,
    batch_size: int = 4,
    max_windows: int | None = None,
    progress: ProgressFn | None = None,
) -> PerplexityResult:
    """Perplexity of ``model`` on ``tokens`` (a 1-D id tensor, or text with ``tokenizer``).

    Args:
        model: called as ``model(input_ids=...)``; returns logits ``[B, T, V]`` or an object with
            ``.logits``.
        tokens: ``[L]`` token ids, or a string to encode with ``tokenizer`` (no special tokens).
        tokenizer: needed for text input and for bits per byte (decodes the scored tokens).
        window, stride: window length and start spacing in tokens (stride defaults to window).
        batch_size: windows per forward pass.
        max_windows: use at most this many windows (from the start of the text).
        progress: called as ``progress(windows_done, windows_total)``.
    """
    if isinstance(tokens, str):
        if tokenizer is None:
            raise ValueError("tokenizer is required when tokens is a string")
        ids = torch.tensor(tokenizer(tokens, add_special_tokens=False)["input_ids"], dtype=torch.long)
    else:
        ids = torch.as_tensor(tokens)
    if ids.ndim != 1 or ids.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"tokens must be a 1-D integer tensor, got shape {tuple(ids.shape)} {ids.dtype}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    stride = window if stride is None else stride
    spans = sliding_windows(ids.numel(), window, stride, max_windows)
    if not spans:
        raise ValueError(f"tokens: {ids.numel()} tokens are fewer than one window of {window}")
    ids = ids.long()
    device = next(model.parameters()).device if hasattr(model, "parameters") else ids.device
    nll_sum = 0.0
    n_tokens = 0
    for b in range(0, len(spans), batch_size):
        batch = spans[b : b + batch_size]
        x = torch.stack([ids[s : s + window] for s, _ in batch]).to(device)  # [B, T]
        out = model(input_ids=x)
        logits = getattr(out, "logits", out)[:, :-1]  # [B, T-1, V]: predicts tokens 1..T-1
        del out
        targets = x[:, 1:]
        nll = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1), reduction="none"
        ).view(targets.shape)  # [B, T-1]
        del logits
        logp = -nll
        mask = torch.zeros_like(logp, dtype=torch.bool)
        for i, (s, first) in enumerate(batch):
            mask[i, first - s - 1 :] = True  # target position t predicts token s + t + 1 (first > s)
        nll_sum += float(-(logp[mask]).double().sum())
        n_tokens += int(mask.sum())
        if progress is not None:
            progress(min(b + batch_size, len(spans)), len(spans))
    n_bytes = 0
    if tokenizer is not None:  # UTF-8 bytes of the scored tokens' text
        n_bytes = sum(
            len(tokenizer.decode(ids[first : s + window].tolist()).encode("utf-8")) for s, first in spans
        )
    bpt = nll_sum / n_tokens / math.log(2)
    bpb = nll_sum / math.log(2) / n_bytes if n_bytes else float("nan")
    return PerplexityResult(
        perplexity=math.exp(nll_sum / n_tokens),
        bits_per_byte=bpb,
        bits_per_token=bpt,
        nll_sum=nll_sum,
        n_tokens=n_tokens,
        n_bytes=n_bytes,
        n_windows=len(spans),
        window=window,
        stride=stride,
    )
