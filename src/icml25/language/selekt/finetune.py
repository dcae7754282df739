"""Fine-tuning a causal LM on code edits: SeleKT, full SFT and LoRA through :func:`icml25.nn.fit`,
for *Robust Learning of Diverse Code Edits* (Aggarwal et al., ICML 2025, arXiv 2503.03656).

Loss: next-token cross-entropy on the response tokens only (the paper's stage-2 completion-only
collator; prompt and padding are masked with -100). ``method="selekt"`` runs Algorithm 1 (dense
AdamW steps, a top-α projection of θ − θ_base every ``period_steps`` steps and once at the end);
``"sft"`` is the same loop without projection; ``"lora"`` trains low-rank adapters on every linear
layer (``peft``; paper: r = 64, lora_alpha = 16, dropout 0.05) and merges them into the weights.
Works on any Hugging Face causal LM (``model(input_ids=, attention_mask=, labels=)``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import Tensor, nn

from icml25.core.validate import check_fields, check_in_range
from icml25.nn.train import FitConfig, FitHistory, fit

from .projection import SeleKT, changed_fraction, snapshot_base

__all__ = ["ChatCodec", "FinetuneConfig", "FinetuneResult", "encode_pairs", "completion_loss", "finetune"]

Method = Literal["selekt", "sft", "lora", "sft_then_project"]


class ChatCodec:
    """Turns a chat prompt and a response into token ids, for a HF tokenizer or raw bytes.

    With a tokenizer that has a chat template the prompt is ``apply_chat_template(...,
    add_generation_prompt=True)``; otherwise a plain ``<|user|>``/``<|assistant|>`` frame. Without a
    tokenizer, tokens are UTF-8 bytes and ``eos_id`` is 256 (a tiny random model's vocabulary of 257).
    """

    def __init__(self, tokenizer: Any = None) -> None:
        self.tokenizer = tokenizer
        if tokenizer is None:
            self.eos_id, self.pad_id = 256, 256
        else:
            self.eos_id = int(tokenizer.eos_token_id)
            pad = tokenizer.pad_token_id
            self.pad_id = int(pad) if pad is not None else self.eos_id

    def prompt_text(self, messages: Sequence[dict[str, str]]) -> str:
        tok = self.tokenizer
        if tok is not None and getattr(tok, "chat_template", None):
            return str(tok.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True))
        body = "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages)
        return body + "<|assistant|>\n"

    def encode(self, text: str) -> list[int]:
        if self.tokenizer is None:
            return list(text.encode("utf-8"))
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: Sequence[int]) -> str:
        if self.tokenizer is None:
            return bytes(i for i in ids if 0 <= i < 256).decode("utf-8", "replace")
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=True))


def encode_pairs(
    codec: ChatCodec, prompts: Sequence[Sequence[dict[str, str]]], targets: Sequence[str], max_len: int
) -> tuple[Tensor, Tensor, Tensor]:
    """``(input_ids, labels, attention_mask)``, right-padded; labels are -100 outside the response.

    A pair longer than ``max_len`` loses the start of its prompt (the response is kept whole when it fits).
    """
    if len(prompts) != len(targets) or not prompts:
        raise ValueError(
            f"prompts and targets must be non-empty and equally long, got {len(prompts)}, {len(targets)}"
        )
    if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 2:
        raise ValueError(f"max_len must be an int >= 2, got {max_len!r}")
    rows = []
    for messages, target in zip(prompts, targets, strict=True):
        p = codec.encode(codec.prompt_text(messages))
        t = codec.encode(target) + [codec.eos_id]
        t = t[: max_len - 1]
        p = p[-(max_len - len(t)) :]
        rows.append((p, t))
    width = max(len(p) + len(t) for p, t in rows)
    ids = torch.full((len(rows), width), codec.pad_id, dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    attn = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (p, t) in enumerate(rows):
        n = len(p) + len(t)
        ids[i, :n] = torch.tensor(p + t)
        labels[i, len(p) : n] = torch.tensor(t)
        attn[i, :n] = 1
    return ids, labels, attn


def completion_loss(model: nn.Module, batch: tuple[Tensor, Tensor, Tensor], _gen: Any = None) -> Tensor:
    """Mean cross-entropy over response tokens (padding trimmed to the longest row of the batch).

    The same value as a Hugging Face model's own ``labels=`` loss, but the vocabulary projection
    is applied only from the first response position of the batch on (``logits_to_keep``): the
    prompt's logits are never used, and on a small model the LM head is a large part of a step.
    A model whose ``forward`` does not take ``logits_to_keep`` gets all positions.
    """
    ids, labels, attn = batch
    width = int(attn.sum(1).max())
    ids, labels, attn = ids[:, :width], labels[:, :width], attn[:, :width]
    scored = (labels[:, 1:] != -100).any(0).nonzero()
    first = int(scored[0]) if scored.numel() else width - 2  # logit position of the first target
    keep = max(width - first, 2)
    try:
        out = model(input_ids=ids, attention_mask=attn, logits_to_keep=keep)
    except TypeError:
        out = model(input_ids=ids, attention_mask=attn)
    logits = out.logits if hasattr(out, "logits") else out[0]
    keep = min(keep, logits.shape[1])
    logits = logits[:, -keep:-1]  # positions width-keep .. width-2 predict width-keep+1 .. width-1
    targets = labels[:, width - keep + 1 :]
    return nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1), ignore_index=-100
    )


def _bf16_completion_loss(model: nn.Module, batch: tuple[Tensor, Tensor, Tensor], _gen: Any = None) -> Tensor:
    """:func:`completion_loss` with the forward pass under bfloat16 autocast (fp32 weights)."""
    device_type = next(model.parameters()).device.type
    with torch.autocast(device_type, dtype=torch.bfloat16):
        loss = completion_loss(model, batch)
    return loss.float()


@dataclass(frozen=True)
class FinetuneConfig:
    """One fine-tuning run.

    Args:
        method: ``"selekt"``, ``"sft"``, ``"lora"`` or ``"sft_then_project"`` (SFT, then one
            projection at the end: the ablation of the periodic part).
        steps, batch_size, lr, warmup_steps, weight_decay: the optimiser loop (AdamW, cosine).
        alpha: SeleKT's budget, the fraction of entries allowed to differ from base.
        period_steps: M, steps between projections.
        scope: ``"per_tensor"`` (released code) or ``"global"`` (paper pseudo-code).
        lora_r, lora_alpha, lora_dropout: the LoRA baseline (paper: 64, 16, 0.05).
        grad_clip: gradient-norm clip (0 = off).
        precision: ``"fp32"``, or ``"bf16"``: the forward and backward passes under bfloat16
            autocast with fp32 master weights and optimiser state (the paper trains in bf16;
            on a CPU with bf16 matrix units this is also faster), or ``"auto"``: bf16 where the
            model's device runs bfloat16 natively, else fp32 (:func:`.precision.choose_precision`).
        fused: fused AdamW kernels (same update, fewer passes over the weights).
    """

    method: Method = "selekt"
    steps: int = 12
    batch_size: int = 1
    lr: float = 1e-5
    warmup_steps: int = 0
    weight_decay: float = 0.1
    alpha: float = 0.05
    period_steps: int = 4
    scope: Literal["per_tensor", "global"] = "per_tensor"
    lora_r: int = 64
    lora_alpha: int = 16
    lora_dropout: float = 0.05
    grad_clip: float = 1.0
    precision: Literal["fp32", "bf16", "auto"] = "fp32"
    fused: bool = True

    def __post_init__(self) -> None:
        if self.method not in ("selekt", "sft", "lora", "sft_then_project"):
            raise ValueError(
                f"FinetuneConfig.method must be selekt, sft, lora or sft_then_project, got {self.method!r}"
            )
        check_fields(
            self,
            positive_int=("steps", "batch_size", "period_steps", "lora_r", "lora_alpha"),
            positive=("lr",),
            non_negative_int=("warmup_steps",),
            non_negative=("weight_decay", "grad_clip"),
        )
        check_in_range("FinetuneConfig.alpha", self.alpha, 0.0, 1.0, low_open=True)
        check_in_range("FinetuneConfig.lora_dropout", self.lora_dropout, 0.0, 1.0, high_open=True)
        if self.scope not in ("per_tensor", "global"):
            raise ValueError(f"FinetuneConfig.scope must be per_tensor or global, got {self.scope!r}")
        if self.precision not in ("fp32", "bf16", "auto"):
            raise ValueError(f"FinetuneConfig.precision must be fp32, bf16 or auto, got {self.precision!r}")
        if not isinstance(self.fused, bool):
            raise TypeError(f"FinetuneConfig.fused must be a bool, got {type(self.fused).__name__}")


@dataclass
class FinetuneResult:
    """The fine-tuned model (a new module; the input is untouched) and what happened."""

    model: nn.Module
    history: FitHistory
    changed: dict[str, float] = field(default_factory=dict)
    n_projections: int = 0

    @property
    def changed_total(self) -> float:
        """Fraction of all projected entries that differ from base (mean of per-tensor fractions, by size)."""
        return self.changed.get("__total__", float("nan"))


def _total_fraction(model: nn.Module, base: dict[str, Tensor]) -> dict[str, float]:
    fr = changed_fraction(model, base)
    sizes = {n: b.numel() for n, b in base.items()}
    fr["__total__"] = sum(fr[n] * sizes[n] for n in sizes) / max(sum(sizes.values()), 1)
    return fr


def finetune(
    model: nn.Module,
    data: tuple[Tensor, Tensor, Tensor],
    config: FinetuneConfig,
    *,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> FinetuneResult:
    """Fine-tune a copy of ``model`` on ``data`` (from :func:`encode_pairs`) with ``config.method``."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(config, FinetuneConfig):
        raise TypeError(f"config must be a FinetuneConfig, got {type(config).__name__}")
    if not isinstance(data, tuple) or len(data) != 3 or not all(isinstance(t, Tensor) for t in data):
        raise TypeError("data must be the (input_ids, labels, attention_mask) tuple of encode_pairs")
    ids, labels, attn = data
    if ids.ndim != 2 or ids.shape != labels.shape or ids.shape != attn.shape or ids.shape[0] == 0:
        raise ValueError(
            f"data tensors must share one non-empty [N, T] shape, got {[tuple(t.shape) for t in data]}"
        )
    torch.manual_seed(seed)  # LoRA initialisation and dropout draw from the global generator
    work = copy.deepcopy(model)
    base = snapshot_base(work)
    fit_cfg = FitConfig(
        steps=config.steps,
        batch_size=config.batch_size,
        lr=config.lr,
        warmup_steps=config.warmup_steps,
        min_lr=0.0,
        weight_decay=config.weight_decay,
        grad_clip=config.grad_clip,
        sampling="shuffle",
        keep_best=False,
        fused=config.fused,
    )
    precision: str = config.precision
    if precision == "auto":
        from .precision import choose_precision

        precision = choose_precision("auto", next(model.parameters()).device)[0]
    loss_fn = completion_loss if precision == "fp32" else _bf16_completion_loss
    projector: SeleKT | None = None
    if config.method == "lora":
        from peft import LoraConfig, get_peft_model

        lcfg = LoraConfig(
            r=config.lora_r,
            lora_alpha=config.lora_alpha,
            lora_dropout=config.lora_dropout,
            target_modules="all-linear",
            task_type="CAUSAL_LM",
        )
        peft_model = get_peft_model(work, lcfg)
        history = fit(peft_model, loss_fn, data, fit_cfg, seed=seed, progress=progress)
        work = peft_model.merge_and_unload()
        # peft froze the base weights; give them back the input's flags (besides being what the
        # caller passed in, autocast caches its bf16 weight casts only for weights that need grad)
        flags = {n: p.requires_grad for n, p in model.named_parameters()}
        for n, p in work.named_parameters():
            p.requires_grad_(flags.get(n, True))
    else:
        if config.method == "selekt":
            projector = SeleKT(base, alpha=config.alpha, period_steps=config.period_steps, scope=config.scope)
        history = fit(work, loss_fn, data, fit_cfg, seed=seed, post_step=projector, progress=progress)
        if config.method == "sft_then_project":
            projector = SeleKT(base, alpha=config.alpha, period_steps=config.steps, scope=config.scope)
            projector.finalize(work)
        elif projector is not None and len(history.steps) % config.period_steps:
            projector.finalize(work)  # Alg. 1's last projection, unless the last step made it
    work.eval()
    return FinetuneResult(
        model=work,
        history=history,
        changed=_total_fraction(work, base),
        n_projections=projector.n_projections if projector is not None else 0,
    )
