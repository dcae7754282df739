"""Per-window held-out loss of a (pruned) causal LM, for paired comparisons between pruned models.

Part of our implementation of *SlimLLM: Accurate Structured Pruning for Large Language Models* (Guo
et al., ICML 2025, https://arxiv.org/abs/2505.22689). Perplexity is exp of the mean token loss; the
check needs the loss *per evaluation window* so that every pruned model is scored on the same
windows and the differences between two models can be paired window by window.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from icml25.core.validate import check_positive

__all__ = ["draw_windows", "window_nll"]


def draw_windows(ids: Tensor, window: int, n_windows: int, *, seed: int) -> Tensor:
    """``[n_windows, window]`` disjoint windows of ``ids`` at seeded random positions (in text order).

    The token sequence is cut into ``len(ids) // window`` disjoint chunks and ``n_windows`` of them
    are drawn without replacement with a ``torch.Generator`` seeded with ``seed``.
    """
    check_positive("window", window, integer=True)
    check_positive("n_windows", n_windows, integer=True)
    ids = torch.as_tensor(ids).flatten()
    if window < 2:
        raise ValueError(f"window must be at least 2 tokens, got {window}")
    n_chunks = ids.numel() // window
    if n_chunks < n_windows:
        raise ValueError(
            f"ids: {ids.numel()} tokens hold {n_chunks} disjoint windows of {window}, fewer than "
            f"n_windows = {n_windows}"
        )
    pick = torch.randperm(n_chunks, generator=torch.Generator().manual_seed(seed))[:n_windows]
    chunks = ids[: n_chunks * window].view(n_chunks, window)
    return chunks[pick.sort().values]


@torch.no_grad()
def window_nll(model: Any, windows: Tensor, *, batch_size: int = 8) -> Tensor:
    """Mean next-token loss (nats per token) of each window: ``[n_windows]`` float64.

    Each window is scored on its own (tokens 2..T given the tokens before them in the window), so a
    window's loss does not depend on the other windows or on the batch size.
    """
    check_positive("batch_size", batch_size, integer=True)
    windows = torch.as_tensor(windows)
    if windows.ndim != 2 or windows.shape[1] < 2:
        raise ValueError(f"windows must be [n, T >= 2] token ids, got {tuple(windows.shape)}")
    out = []
    for i in range(0, windows.shape[0], batch_size):
        x = windows[i : i + batch_size].long()
        logits = model(input_ids=x)
        logits = getattr(logits, "logits", logits)
        loss = torch.nn.functional.cross_entropy(
            logits[:, :-1].double().reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1), reduction="none"
        )
        out.append(loss.view(x.shape[0], -1).mean(dim=1))
    return torch.cat(out)
