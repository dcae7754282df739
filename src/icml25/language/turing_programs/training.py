"""Training on generated additions and exact-match evaluation by operand length.

Hou et al., *Universal Length Generalization with Turing Programs* (ICML 2025,
https://arxiv.org/abs/2407.03310), Sec. 4: train with next-token cross-entropy on everything after
the prompt, on operands up to the training length, and report exact-match accuracy at longer
lengths. Two evaluations:

* :func:`teacher_forced_exact_match` — a sequence counts iff the argmax at every target position
  (scratchpad and answer) equals the reference token; by induction this is exactly "greedy decoding
  reproduces the whole reference continuation", at the cost of one forward pass.
* :func:`greedy_decode` — true autoregressive greedy decoding with the :class:`icml25.nn.KVCache`;
  the answer is parsed from the generated text (:func:`answer_accuracy`), so a wrong scratchpad that
  still ends in the right sum counts as correct there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor

from icml25.core.validate import check_fields
from icml25.nn import FitConfig, FitHistory, fit

from .model import TinyDecoder
from .programs import AdditionTask, TokenBatch, Tokenizer, parse_answer, verify_addition_program

__all__ = [
    "TrainConfig",
    "sequence_loss",
    "train_decoder",
    "teacher_forced_exact_match",
    "greedy_decode",
    "answer_accuracy",
    "length_generalization_eval",
]


@dataclass(frozen=True)
class TrainConfig:
    """AdamW with warm-up and cosine decay; each step draws ``batch_size`` fresh problems."""

    steps: int = 1200
    batch_size: int = 32
    lr: float = 1e-3
    warmup_steps: int = 50
    weight_decay: float = 0.01
    grad_clip: float = 1.0

    def __post_init__(self) -> None:
        check_fields(self, positive_int=("steps", "batch_size"), positive=("lr",))
        check_fields(self, non_negative_int=("warmup_steps",), non_negative=("weight_decay", "grad_clip"))


def sequence_loss(model: TinyDecoder, batch: TokenBatch) -> Tensor:
    """Mean next-token cross-entropy over the positions after the prompt."""
    logits = model(batch.tokens[:, :-1])
    mask = batch.target_mask()
    return F.cross_entropy(logits[mask], batch.tokens[:, 1:][mask])


def train_decoder(
    model: TinyDecoder,
    task: AdditionTask,
    tokenizer: Tokenizer,
    config: TrainConfig,
    *,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> FitHistory:
    """Train ``model`` in place on problems drawn on the fly from ``task`` (through :func:`icml25.nn.fit`)."""
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")

    device = next(model.parameters()).device  # problems are drawn on the CPU, then moved to the model

    def loss_fn(m: torch.nn.Module, idx: Tensor, gen: torch.Generator) -> Tensor:
        return sequence_loss(m, task.sample(len(idx), gen, tokenizer).to(device))  # type: ignore[arg-type]

    fcfg = FitConfig(
        steps=config.steps,
        batch_size=config.batch_size,
        lr=config.lr,
        warmup_steps=min(config.warmup_steps, config.steps - 1),
        weight_decay=config.weight_decay,
        grad_clip=config.grad_clip,
        sampling="replacement",
    )
    return fit(model, loss_fn, config.steps * config.batch_size, fcfg, seed=seed, progress=progress)


@torch.no_grad()
def teacher_forced_exact_match(
    model: TinyDecoder, batch: TokenBatch, *, chunk: int = 64
) -> tuple[Tensor, Tensor]:
    """Per-row exact match ``(b,)`` bool and per-row token accuracy ``(b,)`` over the targets."""
    model.eval()
    device = next(model.parameters()).device
    exact, tok_acc = [], []
    for s in range(0, batch.tokens.shape[0], chunk):
        sub = TokenBatch(
            batch.tokens[s : s + chunk], batch.prompt_len[s : s + chunk], batch.length[s : s + chunk]
        ).to(device)
        width = int(sub.length.max())
        tokens = sub.tokens[:, :width]
        pred = model(tokens[:, :-1]).argmax(-1)
        mask = TokenBatch(tokens, sub.prompt_len, sub.length).target_mask()
        hit = (pred == tokens[:, 1:]) | ~mask
        exact.append(hit.all(dim=1).cpu())
        tok_acc.append((((pred == tokens[:, 1:]) & mask).sum(1) / mask.sum(1).clamp_min(1)).cpu())
    return torch.cat(exact), torch.cat(tok_acc)


@torch.no_grad()
def greedy_decode(model: TinyDecoder, prompts: Tensor, *, max_new: int, eos: int, pad: int = 0) -> Tensor:
    """Greedy continuation of equal-length prompts ``(b, P)`` → ``(b, P + k)``, k ≤ ``max_new``.

    Uses one :class:`icml25.nn.KVCache` per block: the prompt is prefilled once and each new
    token costs one token's work. Rows that emitted ``eos`` are padded with ``pad`` afterwards.
    """
    if prompts.ndim != 2 or prompts.dtype != torch.long or prompts.shape[1] < 1:
        raise ValueError("prompts must be a non-empty (batch, P) torch.long tensor")
    if isinstance(max_new, bool) or not isinstance(max_new, int) or max_new < 1:
        raise ValueError(f"max_new must be a positive integer, got {max_new!r}")
    model.eval()
    prompts = prompts.to(next(model.parameters()).device)
    caches = model.new_caches()
    logits = model(prompts, caches=caches)[:, -1]
    out = [prompts]
    done = torch.zeros(prompts.shape[0], dtype=torch.bool, device=prompts.device)
    for _ in range(max_new):
        nxt = logits.argmax(-1)
        nxt = torch.where(done, torch.full_like(nxt, pad), nxt)
        out.append(nxt[:, None])
        done = done | (nxt == eos)
        if bool(done.all()):
            break
        if model.cfg.pos == "learned" and len(caches[0]) + 1 > model.cfg.max_len:
            break
        logits = model(nxt[:, None], caches=caches)[:, -1]
    return torch.cat(out, dim=1).cpu()


def answer_accuracy(
    generated: Tensor, pairs: Sequence[tuple[str, str]], tokenizer: Tokenizer, fmt: str
) -> tuple[float, float]:
    """Fraction of rows whose parsed answer equals a + b, and (Turing format) whose program verifies."""
    ok = valid = 0
    for row, (a, b) in zip(generated, pairs, strict=True):
        toks = tokenizer.decode(row)
        ans = parse_answer(toks, fmt)  # type: ignore[arg-type]
        ok += ans is not None and ans.lstrip("0") == str(int(a) + int(b)).lstrip("0")
        valid += verify_addition_program(toks, fmt=fmt).valid  # type: ignore[arg-type]
    return ok / len(pairs), valid / len(pairs)


def length_generalization_eval(
    model: TinyDecoder,
    task: AdditionTask,
    tokenizer: Tokenizer,
    *,
    lengths: Sequence[int] = (5, 6, 7, 8, 10),
    n_per_length: int = 200,
    n_greedy: int = 50,
    seed: int = 0,
    per_item: bool = False,
) -> dict[int, dict[str, Any]]:
    """Exact match by operand length: ``{n: {"exact", "token_acc", "greedy_answer", "greedy_valid"}}``.

    ``exact`` is teacher-forced exact match over ``n_per_length`` problems; the greedy metrics use
    the first ``n_greedy`` of them (0 skips greedy decoding). Problems come from ``seed`` and n alone
    (not the format), so every format is scored on the same problems in the same order;
    ``per_item=True`` adds ``"exact_items"``, the per-problem 0/1 array behind ``exact``.
    """
    if not lengths:
        raise ValueError("lengths must be non-empty")
    out: dict[int, dict[str, Any]] = {}
    for n in lengths:
        gen = torch.Generator().manual_seed(seed * 1000 + int(n))
        pairs = task.problems(n_per_length, int(n), gen)
        batch = task.encode(pairs, tokenizer)
        exact, tok_acc = teacher_forced_exact_match(model, batch)
        row: dict[str, Any] = {"exact": float(exact.float().mean()), "token_acc": float(tok_acc.mean())}
        if per_item:
            row["exact_items"] = exact.float().numpy()
        if n_greedy > 0:
            sub = pairs[:n_greedy]
            prompts = batch.tokens[: len(sub), : int(batch.prompt_len[0])]
            max_new = int(batch.length.max() - batch.prompt_len[0]) + 2
            generated = greedy_decode(model, prompts, max_new=max_new, eos=tokenizer.eos, pad=tokenizer.pad)
            row["greedy_answer"], row["greedy_valid"] = answer_accuracy(generated, sub, tokenizer, task.fmt)
        out[int(n)] = row
    return out
