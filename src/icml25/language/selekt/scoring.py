"""Teacher-forced scoring for the claim check of *Robust Learning of Diverse Code Edits*
(Aggarwal et al., ICML 2025, arXiv 2503.03656): per-item exact match and loss in one forward pass
per batch, instead of greedy generation.

Teacher-forced exact match of a target (every target token is the argmax given the target's own
prefix) is the same event as greedy decoding reproducing the target token for token, so it measures
what a greedy exact-match evaluation measures at the cost of one forward pass per item (greedy
generation costs one pass per new token). Two uses:

- :func:`target_scores`: edit requests (prompt, reference edit) from :func:`.finetune.encode_pairs`;
  one exact-match flag and one mean loss per request.
- :func:`line_scores` and :func:`encode_completions`: a retention probe on code the base model
  already completes: HumanEval prompts followed by their canonical solutions, scored per solution
  line (a line is exact when every token that starts in it is the argmax).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

__all__ = ["encode_completions", "line_scores", "target_scores", "token_line_index"]


def _forward_rows(
    model: nn.Module, ids: Tensor, labels: Tensor, attn: Tensor, rows: Sequence[int], bf16: bool
) -> tuple[Tensor, int]:
    """Logits of ``rows`` (trimmed to their longest row) from the position before the batch's
    first labelled token on: returns ``(logits, offset)``, ``logits[:, i]`` predicting the token
    at position ``offset + i + 1`` (the vocabulary projection is skipped for prompt positions).
    The rows go to the model's device; the logits come back on the CPU."""
    idx = list(rows)
    width = int(attn[idx].sum(1).max())
    device = next(model.parameters()).device
    sub_ids, sub_attn = ids[idx, :width].to(device), attn[idx, :width].to(device)
    scored = (labels[idx, 1:width] != -100).any(0).nonzero()
    first = int(scored[0]) if scored.numel() else width - 2  # logit position of the first target
    keep = max(width - first, 2)
    device_type = device.type
    with torch.no_grad(), torch.autocast(device_type, dtype=torch.bfloat16, enabled=bf16):
        try:
            out = model(input_ids=sub_ids, attention_mask=sub_attn, logits_to_keep=keep)
        except TypeError:
            out = model(input_ids=sub_ids, attention_mask=sub_attn)
    if hasattr(out, "logits"):
        out = out.logits
    logits = out if isinstance(out, Tensor) else out[0]
    keep = min(keep, logits.shape[1])
    return logits[:, -keep:].float().cpu(), width - keep  # on the CPU, beside the labels


def _batches(attn: Tensor, batch_size: int) -> list[list[int]]:
    """Row indices grouped by length (shortest first), so padding stays small."""
    order = sorted(range(attn.shape[0]), key=lambda i: int(attn[i].sum()))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def target_scores(
    model: nn.Module,
    data: tuple[Tensor, Tensor, Tensor],
    *,
    batch_size: int = 8,
    bf16: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-row teacher-forced exact match (0/1) and mean cross-entropy (nats) of the labelled tokens.

    Args:
        data: ``(input_ids, labels, attention_mask)``, labels -100 outside the target (right padding).
        bf16: run the forward pass under bfloat16 autocast (the loss is computed in fp32).
    """
    ids, labels, attn = data
    if ids.shape != labels.shape or ids.shape != attn.shape or ids.ndim != 2:
        raise ValueError(f"data tensors must share one [N, T] shape, got {[tuple(t.shape) for t in data]}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    was_training = model.training
    model.eval()
    exact = np.zeros(ids.shape[0])
    loss = np.zeros(ids.shape[0])
    for rows in _batches(attn, batch_size):
        logits, offset = _forward_rows(model, ids, labels, attn, rows, bf16)
        tgt = labels[rows, offset + 1 : offset + logits.shape[1]]
        mask = tgt != -100
        if not bool(mask.any(1).all()):
            raise ValueError("every row needs at least one labelled token")
        for j, r in enumerate(rows):
            m = mask[j]
            row_logits = logits[j, :-1][m]
            nll = nn.functional.cross_entropy(row_logits, tgt[j][m], reduction="none")
            exact[r] = float(bool((row_logits.argmax(-1) == tgt[j][m]).all()))
            loss[r] = float(nll.mean())
    model.train(was_training)
    return exact, loss


def token_line_index(codec: Any, target_ids: Sequence[int]) -> list[int]:
    """For each target token, the index of the line of the decoded target its first character is in.

    Lines are split at ``"\\n"``; a token that only holds whitespace or newlines belongs to the line
    its first character is in. Decoding prefixes keeps multi-byte and merged tokens exact.
    """
    starts, prev = [], ""
    for k in range(1, len(target_ids) + 1):
        starts.append(len(prev))
        prev = codec.decode(target_ids[:k])
    return [prev[:s].count("\n") for s in starts]


def encode_completions(
    codec: Any, prompts: Sequence[str], completions: Sequence[str], max_len: int
) -> tuple[tuple[Tensor, Tensor, Tensor], list[list[int]]]:
    """Raw (not chat) ``prompt + completion`` rows and, per row, each completion token's line index.

    Returns ``((input_ids, labels, attention_mask), lines)``; labels are -100 on the prompt; a row
    longer than ``max_len`` keeps its whole completion and loses the start of its prompt (a
    completion longer than ``max_len - 1`` tokens is cut at its end).
    """
    if len(prompts) != len(completions) or not prompts:
        raise ValueError("prompts and completions must be non-empty and equally long")
    rows, lines = [], []
    for p_text, c_text in zip(prompts, completions, strict=True):
        t = codec.encode(c_text)[: max_len - 1]
        p = codec.encode(p_text)[-(max_len - len(t)) :]
        rows.append((p, t))
        lines.append(token_line_index(codec, t))
    width = max(len(p) + len(t) for p, t in rows)
    ids = torch.full((len(rows), width), codec.pad_id, dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    attn = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (p, t) in enumerate(rows):
        n = len(p) + len(t)
        ids[i, :n] = torch.tensor(p + t)
        labels[i, len(p) : n] = torch.tensor(t)
        attn[i, :n] = 1
    return (ids, labels, attn), lines


def line_scores(
    model: nn.Module,
    data: tuple[Tensor, Tensor, Tensor],
    lines: Sequence[Sequence[int]],
    *,
    batch_size: int = 8,
    bf16: bool = False,
) -> list[tuple[int, int, bool]]:
    """Teacher-forced exact match per completion line: ``(row, line, exact)`` for every line of a
    row's completion in which at least one token starts (sorted by row, then line)."""
    ids, labels, attn = data
    if len(lines) != ids.shape[0]:
        raise ValueError(f"lines must have one entry per row, got {len(lines)} for {ids.shape[0]} rows")
    was_training = model.training
    model.eval()
    out: list[tuple[int, int, bool]] = []
    for rows in _batches(attn, batch_size):
        logits, offset = _forward_rows(model, ids, labels, attn, rows, bf16)
        pred = logits[:, :-1].argmax(-1)
        for j, r in enumerate(rows):
            tgt = labels[r, offset + 1 : offset + logits.shape[1]]
            pos = (tgt != -100).nonzero().flatten()
            if len(pos) != len(lines[r]):
                raise ValueError(f"row {r}: {len(pos)} target tokens but {len(lines[r])} line indices")
            ok = (pred[j, pos] == tgt[pos]).tolist()
            per_line: dict[int, bool] = {}
            for flag, line in zip(ok, lines[r], strict=True):
                per_line[line] = per_line.get(line, True) and bool(flag)
            out.extend((r, line, flag) for line, flag in sorted(per_line.items()))
    model.train(was_training)
    out.sort()
    return out
