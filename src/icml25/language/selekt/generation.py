"""Batched greedy decoding for the evaluations of *Robust Learning of Diverse Code Edits*
(Aggarwal et al., ICML 2025, arXiv 2503.03656): held-out edit success and HumanEval pass@1 are
greedy generations from many prompts, which one ``generate`` call per batch does far faster on a
CPU than one call per prompt.

Prompts are left-padded into one batch with an attention mask (Hugging Face causal LMs then derive
the positions from the mask, so a padded prompt sees the same positions as alone), decoded greedily
with the key/value cache, and each row is cut to its own token budget. A row that stops early (end
of sequence, or a stop string) is padded by ``generate`` while the others continue; those pads are
dropped. ``stop_in_completion`` ends a row once its own new text (decoded by a function the caller
passes) contains a stop string; unlike ``generate``'s ``stop_strings`` it never matches across the
end of the prompt, so cutting a completion at its first stop string gives the same text whether or
not decoding stopped there. Up to floating-point reassociation in the padded matrix products,
every row equals what a call with that prompt alone returns (the tests check this on a tiny random Llama).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

__all__ = ["greedy_generate"]


def _check_prompts(prompts: Sequence[Sequence[int]]) -> list[list[int]]:
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence) or not prompts:
        raise ValueError("prompts must be a non-empty sequence of token-id lists")
    out = []
    for i, p in enumerate(prompts):
        if isinstance(p, (str, bytes)) or not isinstance(p, Sequence) or not p:
            raise ValueError(f"prompts[{i}] must be a non-empty sequence of token ids")
        if not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in p):
            raise TypeError(f"prompts[{i}] must hold non-negative int token ids")
        out.append(list(p))
    return out


class _StopInCompletion:
    """A ``generate`` stopping criterion: a row is done once the text of its new tokens (from
    ``prompt_width`` on) contains one of ``stops``."""

    def __init__(self, prompt_width: int, stops: Sequence[str], decode: Callable[[list[int]], str]) -> None:
        self.prompt_width = prompt_width
        self.stops = tuple(stops)
        self.decode = decode

    def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs: Any) -> torch.Tensor:
        new = input_ids[:, self.prompt_width :].tolist()
        done = [any(s in self.decode(row) for s in self.stops) for row in new]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


@torch.no_grad()
def greedy_generate(
    model: Any,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int | Sequence[int],
    *,
    pad_id: int,
    eos_id: int | None,
    batch_size: int = 8,
    stop: str | Sequence[str] | None = None,
    tokenizer: Any = None,
    stop_in_completion: Sequence[str] = (),
    decode: Callable[[list[int]], str] | None = None,
) -> list[list[int]]:
    """Greedy continuations (new token ids only) of ``prompts``, ``batch_size`` prompts per call.

    Args:
        model: a Hugging Face causal LM (``model.generate``).
        prompts: token ids per prompt (no padding).
        max_new_tokens: one budget for all prompts, or one per prompt (each >= 1).
        pad_id: the padding id (left padding of prompts; ``generate`` fills finished rows with it).
        eos_id: end-of-sequence id (generation of a row ends after it), or None.
        batch_size: prompts per ``generate`` call; prompts are grouped by budget and length so
            that little padding and little decoding past a row's budget is wasted.
        stop: a stop string or several (needs ``tokenizer``): a row ends once its text contains one.
        tokenizer: the tokenizer ``generate`` decodes with to look for ``stop``.
        stop_in_completion: stop strings looked for in each row's new text only (needs ``decode``);
            the row's tokens up to the step that completed one are returned (cut them yourself).
        decode: token ids -> text, for ``stop_in_completion``.

    Returns:
        One list of new token ids per prompt, in the order of ``prompts``, each at most its
        budget long, cut after the first ``eos_id``; without an ``eos_id`` in a row, trailing
        ``pad_id`` tokens (a row that ended at ``stop`` while others ran on) are removed. When
        ``pad_id == eos_id``, a row that ended at ``stop`` keeps one trailing ``eos_id`` that a
        lone call would not return (decoding with special tokens skipped gives the same text).
    """
    rows = _check_prompts(prompts)
    if isinstance(max_new_tokens, int) and not isinstance(max_new_tokens, bool):
        budgets = [max_new_tokens] * len(rows)
    elif isinstance(max_new_tokens, Sequence) and not isinstance(max_new_tokens, str):
        budgets = list(max_new_tokens)
    else:
        raise TypeError(f"max_new_tokens must be an int or a sequence of ints, got {max_new_tokens!r}")
    if len(budgets) != len(rows):
        raise ValueError(f"max_new_tokens has {len(budgets)} budgets for {len(rows)} prompts")
    if any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in budgets):
        raise ValueError(f"max_new_tokens must be positive ints, got {budgets}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    if not all(isinstance(x, str) and x for x in stops):
        raise ValueError(f"stop must be a non-empty string or a sequence of them, got {stop!r}")
    if stops and tokenizer is None:
        raise ValueError("stop needs a tokenizer")
    own_stops = list(stop_in_completion)
    if not all(isinstance(x, str) and x for x in own_stops):
        raise ValueError(f"stop_in_completion must hold non-empty strings, got {stop_in_completion!r}")
    if own_stops and decode is None:
        raise ValueError("stop_in_completion needs decode")
    kwargs: dict[str, Any] = {}
    if stops:
        kwargs = {"stop_strings": stops, "tokenizer": tokenizer}
    device = next(model.parameters()).device
    order = sorted(range(len(rows)), key=lambda i: (budgets[i], len(rows[i]), i))
    out: list[list[int]] = [[] for _ in rows]
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        width = max(len(rows[i]) for i in chunk)
        ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        attn = torch.zeros((len(chunk), width), dtype=torch.long)
        for r, i in enumerate(chunk):
            ids[r, width - len(rows[i]) :] = torch.tensor(rows[i])
            attn[r, width - len(rows[i]) :] = 1
        call_kwargs = dict(kwargs)
        if own_stops:
            from transformers import StoppingCriteriaList

            assert decode is not None
            call_kwargs["stopping_criteria"] = StoppingCriteriaList(
                [_StopInCompletion(width, own_stops, decode)]
            )
        gen = model.generate(
            ids.to(device),
            attention_mask=attn.to(device),
            max_new_tokens=max(budgets[i] for i in chunk),
            do_sample=False,
            pad_token_id=pad_id,
            eos_token_id=eos_id,
            **call_kwargs,
        )
        new = gen[:, width:].tolist()
        for r, i in enumerate(chunk):
            toks = new[r][: budgets[i]]
            if eos_id is not None and eos_id in toks:
                toks = toks[: toks.index(eos_id) + 1]
            elif len(chunk) > 1:
                while toks and toks[-1] == pad_id:
                    toks.pop()
            out[i] = toks
    return out
