"""Byte-level language-model training for the RMT and its transformer twin, with the recipe of App.
C.1 of *Residual Matrix Transformers: Scaling the Size of the Residual Stream* (Mak & Flanigan,
ICML 2025, https://arxiv.org/abs/2506.22696).

Recipe: cross-entropy plus z-loss ``1e-4 · (log Z)²`` (losses are reported without it); AdamW with
β = (0.9, 0.95), ε = 1e-8 and decoupled weight decay 1e-4 on everything except norms, the
embedding tables and the unembedding, applied as the released code does (``decay="independent"``:
each step shrinks a weight by ``1e-4 × the schedule's multiplier``, not by ``1e-4 × the learning
rate``, which at the released peak rate 1e-2 is 100× stronger than PyTorch's coupled convention);
gradient clipping at 1.0; linear warm-up over 5 % of the steps, then cosine decay to 10 % of the
peak learning rate. Training goes through :func:`icml25.nn.fit`; each step reads ``batch_size``
random windows of ``seq_len + 1`` bytes.

Data: the bytes (UTF-8) of a text corpus, vocabulary 256; validation bits per byte =
cross-entropy in nats / ln 2 on fixed non-overlapping windows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from icml25.core.progress import ProgressFn
from icml25.core.validate import check_fields, check_in_range
from icml25.nn.optim import make_optimizer
from icml25.nn.train import FitConfig, fit

from .flops import flops_per_token
from .model import GPT, ResidualMatrixTransformer

__all__ = [
    "LMTrainConfig",
    "LMHistory",
    "ByteData",
    "byte_tensor",
    "byte_data",
    "lm_loss",
    "lm_param_groups",
    "lm_optimizer",
    "eval_windows",
    "bits_per_byte",
    "window_bits",
    "random_windows",
    "spread_windows",
    "NgramModel",
    "train_lm",
    "value_at_flops",
    "flops_to_reach",
]

LN2 = math.log(2.0)
DecayKind = Literal["independent", "lr_coupled"]
_NO_DECAY_PREFIXES = ("tok_emb", "pos_emb", "unembedding.")


@dataclass(frozen=True)
class LMTrainConfig:
    """How a language model is trained (App. C.1 recipe; sizes for this machine).

    Args:
        steps: optimiser steps.
        batch_size: windows per step.
        seq_len: tokens per window (the model's context; the window holds one more byte).
        lr: peak learning rate.
        warmup_frac: fraction of the steps spent in linear warm-up (5 %).
        min_lr_frac: the cosine floor as a fraction of ``lr`` (10 %).
        weight_decay: decoupled AdamW decay of matrices and key vectors (1e-4).
        decay: how ``weight_decay`` scales with the learning rate. ``"independent"`` (the released
            code: optax's ``add_decayed_weights`` before the schedule, whose peak is 1) shrinks a
            weight per step by ``weight_decay × lr_t / lr``; ``"lr_coupled"`` (PyTorch's AdamW
            convention) by ``weight_decay × lr_t``.
        betas, eps: AdamW (0.9, 0.95), 1e-8.
        grad_clip: global gradient-norm clip (1.0).
        z_loss: coefficient of ``(log Z)²`` (1e-4).
        eval_every: evaluate every this many steps (the last step always); 0 = only at the end.
        eval_tokens: at most this many validation tokens per evaluation.
        eval_spread: take the evaluation windows evenly spaced over the whole validation split
            (:func:`spread_windows`) instead of back to back from its start (:func:`eval_windows`);
            a split of many files is then represented by all of them, not by its first few.
    """

    steps: int = 1200
    batch_size: int = 16
    seq_len: int = 128
    lr: float = 3e-3
    warmup_frac: float = 0.05
    min_lr_frac: float = 0.1
    weight_decay: float = 1e-4
    decay: DecayKind = "independent"
    betas: tuple[float, float] = (0.9, 0.95)
    eps: float = 1e-8
    grad_clip: float = 1.0
    z_loss: float = 1e-4
    eval_every: int = 100
    eval_tokens: int = 32_768
    eval_spread: bool = False

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=("steps", "batch_size", "seq_len", "eval_tokens"),
            non_negative_int=("eval_every",),
            positive=("lr", "eps"),
            non_negative=("weight_decay", "grad_clip", "z_loss"),
        )
        if self.decay not in ("independent", "lr_coupled"):
            raise ValueError(f"decay must be 'independent' or 'lr_coupled', got {self.decay!r}")
        check_in_range("LMTrainConfig.warmup_frac", self.warmup_frac, 0.0, 1.0)
        check_in_range("LMTrainConfig.min_lr_frac", self.min_lr_frac, 0.0, 1.0)

    @property
    def torch_weight_decay(self) -> float:
        """The ``weight_decay`` to hand PyTorch's AdamW (which multiplies it by the current rate)."""
        return self.weight_decay / self.lr if self.decay == "independent" else self.weight_decay

    @property
    def tokens_per_step(self) -> int:
        return self.batch_size * self.seq_len

    def fit_config(self) -> FitConfig:
        return FitConfig(
            steps=self.steps,
            batch_size=self.batch_size,
            lr=self.lr,
            warmup_steps=max(1, round(self.warmup_frac * self.steps)) if self.warmup_frac > 0 else 0,
            min_lr=self.min_lr_frac * self.lr,
            betas=self.betas,
            weight_decay=self.weight_decay,
            grad_clip=self.grad_clip,
            sampling="replacement",
            eval_every=self.eval_every if self.eval_every > 0 else self.steps,
            monitor="val_bpb",
            keep_best=False,
        )


@dataclass(frozen=True)
class ByteData:
    """Byte tokens of the train / validation / test splits of a corpus.

    Attributes:
        train, val, test: ``uint8`` tensors of bytes.
        record: what a result should store about the source text (name, hash, sizes).
    """

    train: Tensor
    val: Tensor
    test: Tensor
    record: Mapping[str, Any] = field(default_factory=dict)


def byte_tensor(text: str, max_bytes: int | None = None) -> Tensor:
    """The UTF-8 bytes of ``text`` (at most ``max_bytes``) as a ``uint8`` tensor."""
    raw = text.encode("utf-8")
    if max_bytes is not None:
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        raw = raw[:max_bytes]
    if not raw:
        raise ValueError("byte_tensor: the text is empty")
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).clone()


def byte_data(
    corpus: str = "python",
    *,
    max_chars: int = 8_000_000,
    max_train_bytes: int | None = None,
    max_eval_bytes: int | None = None,
) -> ByteData:
    """Byte-level splits of a standard-library corpus (:mod:`icml25.data.corpora`): its train,
    calibration (our validation) and held-out (our test) texts, each capped."""
    from icml25.data.corpora import english_corpus, python_corpus

    if corpus == "python":
        c = python_corpus(max_chars=max_chars)
    elif corpus == "english":
        c = english_corpus()
    else:
        raise ValueError(f"corpus must be 'python' or 'english', got {corpus!r}")
    train = byte_tensor(c.train, max_train_bytes)
    val = byte_tensor(c.calibration, max_eval_bytes)
    test = byte_tensor(c.heldout, max_eval_bytes)
    record = dict(c.record())
    record["bytes"] = {"train": train.numel(), "val": val.numel(), "test": test.numel()}
    return ByteData(train=train, val=val, test=test, record=record)


def lm_loss(logits: Tensor, targets: Tensor, z_loss: float = 0.0) -> tuple[Tensor, Tensor]:
    """Next-token cross-entropy and the training objective ``CE + z_loss · mean((log Z)²)``.

    Args:
        logits: ``(b, n, V)``.
        targets: ``(b, n)`` token ids.
        z_loss: coefficient of the z-loss.

    Returns:
        ``(objective, cross_entropy)``, both scalars; the cross-entropy is in nats per token.
    """
    if logits.ndim != 3 or targets.shape != logits.shape[:2]:
        raise ValueError(
            f"logits must be (b, n, V) and targets (b, n), got {tuple(logits.shape)}, {tuple(targets.shape)}"
        )
    flat = logits.float().flatten(0, 1)
    ce = F.cross_entropy(flat, targets.flatten().long())
    if z_loss == 0:
        return ce, ce
    log_z = torch.logsumexp(flat, dim=-1)
    return ce + z_loss * log_z.pow(2).mean(), ce


def lm_param_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW groups: matrices and key vectors decay; norms, the embedding tables and the
    unembedding do not (App. C.1)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if p.ndim >= 2 and not name.startswith(_NO_DECAY_PREFIXES):
            decay.append(p)
        else:
            no_decay.append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def eval_windows(tokens: Tensor, seq_len: int, max_tokens: int) -> Tensor:
    """Non-overlapping windows ``(m, seq_len + 1)`` from the start of ``tokens``, covering at most
    ``max_tokens`` predicted tokens."""
    m = min((tokens.numel() - 1) // seq_len, max(1, max_tokens // seq_len))
    if m < 1:
        raise ValueError(f"the split has {tokens.numel()} tokens, fewer than one window of {seq_len + 1}")
    idx = torch.arange(m)[:, None] * seq_len + torch.arange(seq_len + 1)[None, :]
    return tokens[idx].long()


def lm_optimizer(model: nn.Module, config: LMTrainConfig) -> torch.optim.Optimizer:
    """AdamW over :func:`lm_param_groups` at the peak rate ``config.lr`` (the schedule rescales it),
    with the decay convention of ``config.decay``."""
    optimizer = make_optimizer(
        lm_param_groups(model, config.torch_weight_decay), "adamw", lr=config.lr, betas=config.betas
    )
    for group in optimizer.param_groups:
        group["eps"] = config.eps
    return optimizer


def spread_windows(tokens: Tensor, seq_len: int, max_tokens: int) -> Tensor:
    """Windows ``(m, seq_len + 1)`` whose starts are evenly spaced from the first to the last
    possible offset of ``tokens``; as many as :func:`eval_windows` would take (at most ``max_tokens``
    predicted tokens)."""
    n_starts = tokens.numel() - seq_len
    if n_starts < 1:
        raise ValueError(f"the split has {tokens.numel()} tokens, fewer than one window of {seq_len + 1}")
    m = min((tokens.numel() - 1) // seq_len, max(1, max_tokens // seq_len))
    starts = torch.linspace(0, n_starts - 1, m).round().long()
    return tokens[starts[:, None] + torch.arange(seq_len + 1)[None, :]].long()


@torch.no_grad()
def bits_per_byte(model: nn.Module, windows: Tensor, batch_size: int = 64) -> float:
    """Mean next-byte cross-entropy in bits over ``windows (m, n + 1)``."""
    total, count = 0.0, 0
    device = _device_of(model)
    for chunk in windows.split(batch_size):
        chunk = chunk.to(device)
        logits = model(chunk[:, :-1])
        _, ce = lm_loss(logits, chunk[:, 1:])
        total += float(ce) * chunk[:, 1:].numel()
        count += chunk[:, 1:].numel()
    return total / count / LN2


@torch.no_grad()
def window_bits(model: nn.Module, windows: Tensor, batch_size: int = 64) -> Tensor:
    """Mean next-byte cross-entropy in bits of each window of ``windows (m, n + 1)``: ``(m,)``, the
    per-item scores a paired comparison bootstraps over (their mean is :func:`bits_per_byte`)."""
    out = []
    device = _device_of(model)
    for chunk in windows.split(batch_size):
        chunk = chunk.to(device)
        logits = model(chunk[:, :-1]).float()
        ce = F.cross_entropy(logits.flatten(0, 1), chunk[:, 1:].flatten().long(), reduction="none")
        out.append(ce.view(chunk.shape[0], -1).mean(1) / LN2)
    return torch.cat(out).cpu()


def _device_of(model: nn.Module) -> torch.device:
    return next(iter(model.parameters())).device


def random_windows(tokens: Tensor, seq_len: int, count: int, generator: torch.Generator) -> Tensor:
    """``count`` windows ``(count, seq_len + 1)`` starting at uniformly drawn offsets of ``tokens``
    (with replacement; a seed's own draw of test items)."""
    if count < 1:
        raise ValueError(f"count must be positive, got {count}")
    n_starts = tokens.numel() - seq_len
    if n_starts < 1:
        raise ValueError(f"the split has {tokens.numel()} tokens, fewer than one window of {seq_len + 1}")
    starts = torch.randint(0, n_starts, (count,), generator=generator)
    return tokens[starts[:, None] + torch.arange(seq_len + 1)[None, :]].long()


@dataclass(frozen=True)
class NgramModel:
    """A byte unigram or bigram model counted on training bytes: the floor a trained language model
    must clear. The unigram adds ``alpha`` to every count; the bigram's rows are smoothed toward the
    unigram with a Dirichlet prior of strength ``mu``: ``p(b | a) = (c(a, b) + mu p(b)) / (c(a) + mu)``.

    Attributes:
        log_probs: ``(V,)`` (unigram) or ``(V, V)`` (bigram; row = previous byte) natural logs.
    """

    log_probs: Tensor

    @classmethod
    def fit(
        cls, tokens: Tensor, order: int, vocab_size: int = 256, *, alpha: float = 0.5, mu: float = 100.0
    ) -> NgramModel:
        if order not in (1, 2):
            raise ValueError(f"order must be 1 or 2, got {order}")
        if not (alpha > 0 and mu > 0):
            raise ValueError(f"alpha and mu must be positive, got {alpha}, {mu}")
        t = tokens.long()
        uni = torch.bincount(t, minlength=vocab_size).double() + alpha
        uni = uni / uni.sum()
        if order == 1:
            return cls(uni.log())
        pairs = torch.bincount(t[:-1] * vocab_size + t[1:], minlength=vocab_size**2).double()
        pairs = pairs.view(vocab_size, vocab_size)
        probs = (pairs + mu * uni[None, :]) / (pairs.sum(1, keepdim=True) + mu)
        return cls(probs.log())

    def window_bits(self, windows: Tensor) -> Tensor:
        """Mean next-byte cross-entropy in bits of each window ``(m, n + 1)``: ``(m,)``."""
        targets = windows[:, 1:].long()
        if self.log_probs.ndim == 1:
            logp = self.log_probs[targets]
        else:
            logp = self.log_probs[windows[:, :-1].long(), targets]
        return (-logp.mean(1) / LN2).float()


@dataclass(frozen=True)
class LMHistory:
    """What :func:`train_lm` measured.

    Attributes:
        steps: the evaluated steps (1-based).
        val_bpb: validation bits per byte at those steps.
        tokens: training tokens seen at those steps.
        flops: cumulative training FLOPs (matrix products, forward + backward) at those steps.
        train_loss: mean training objective (cross-entropy in nats plus z-loss) over the last 10 %
            of the steps.
        flops_per_token: training FLOPs per token of the model.
        seconds: wall time of the training loop.
        diverged: a non-finite loss stopped training.
    """

    steps: tuple[int, ...]
    val_bpb: tuple[float, ...]
    tokens: tuple[int, ...]
    flops: tuple[float, ...]
    train_loss: float
    flops_per_token: float
    seconds: float
    diverged: bool

    @property
    def final_bpb(self) -> float:
        return self.val_bpb[-1] if self.val_bpb else float("nan")


def train_lm(
    model: GPT | ResidualMatrixTransformer,
    train_tokens: Tensor,
    val_tokens: Tensor,
    config: LMTrainConfig,
    *,
    seed: int = 0,
    progress: ProgressFn | None = None,
    on_eval: Callable[[int, float], None] | None = None,
) -> LMHistory:
    """Train ``model`` in place on random windows of ``train_tokens``; evaluate bits per byte on
    windows of ``val_tokens`` (``config.eval_spread`` says which) every ``config.eval_every`` steps.

    Args:
        model: a :class:`ResidualMatrixTransformer` or :class:`GPT` (its ``n_ctx`` ≥ ``seq_len``).
        train_tokens, val_tokens: 1-D integer tensors of token ids (bytes).
        config: an :class:`LMTrainConfig`.
        seed: seed of the batch sampler.
        progress: ``progress(step, total)``.
        on_eval: ``on_eval(step, val_bpb)`` after each evaluation.
    """
    if not isinstance(model, GPT | ResidualMatrixTransformer):
        raise TypeError(f"model must be a GPT or ResidualMatrixTransformer, got {type(model).__name__}")
    if not isinstance(config, LMTrainConfig):
        raise TypeError(f"config must be an LMTrainConfig, got {type(config).__name__}")
    for name, t in (("train_tokens", train_tokens), ("val_tokens", val_tokens)):
        if not isinstance(t, Tensor) or t.ndim != 1 or t.dtype.is_floating_point:
            raise ValueError(f"{name} must be a 1-D integer tensor")
    n = config.seq_len
    if n > model.cfg.n_ctx:
        raise ValueError(f"seq_len={n} exceeds the model's n_ctx={model.cfg.n_ctx}")
    n_starts = train_tokens.numel() - n
    if n_starts < 1:
        raise ValueError(f"train_tokens has {train_tokens.numel()} tokens, fewer than a window of {n + 1}")
    windows = (spread_windows if config.eval_spread else eval_windows)(val_tokens, n, config.eval_tokens)
    offsets = torch.arange(n + 1)
    fpt = flops_per_token(model.cfg, n)

    device = _device_of(model)  # the data follow the model (a GPU run places the model there)
    train_on = train_tokens.to(device)
    offsets = offsets.to(device)

    def loss_fn(m: nn.Module, starts: Tensor, _: torch.Generator) -> Tensor:
        chunk = train_on[starts.to(device)[:, None] + offsets[None, :]].long()
        objective, _ce = lm_loss(m(chunk[:, :-1]), chunk[:, 1:], config.z_loss)
        return objective

    def evaluate(m: nn.Module) -> dict[str, float]:
        return {"val_bpb": bits_per_byte(m, windows)}

    def report(record: Any) -> None:
        if on_eval is not None:
            on_eval(record.step, float(record.metrics["val_bpb"]))

    fcfg = config.fit_config()
    optimizer = lm_optimizer(model, config)
    hist = fit(
        model,
        loss_fn,
        n_starts,
        fcfg,
        seed=seed,
        evaluate=evaluate,
        optimizer=optimizer,
        on_eval=report,
        progress=progress,
    )
    steps, bpb = hist.metric("val_bpb")
    tokens = tuple(s * config.tokens_per_step for s in steps)
    k = max(1, len(hist.train_loss) // 10)
    tail = hist.train_loss[-k:]
    train_loss = float(sum(tail) / len(tail)) if tail else float("nan")
    return LMHistory(
        steps=steps,
        val_bpb=bpb,
        tokens=tokens,
        flops=tuple(float(t * fpt) for t in tokens),
        train_loss=train_loss,
        flops_per_token=fpt,
        seconds=hist.seconds,
        diverged=hist.diverged,
    )


def _check_curve(flops: Sequence[float], values: Sequence[float]) -> tuple[list[float], list[float]]:
    xs, ys = [float(f) for f in flops], [float(v) for v in values]
    if not xs or len(xs) != len(ys):
        raise ValueError(f"a curve needs matching, non-empty flops and values, got {len(xs)} and {len(ys)}")
    if any(not math.isfinite(x) or x <= 0 for x in xs) or any(
        b <= a for a, b in zip(xs, xs[1:], strict=False)
    ):
        raise ValueError("curve FLOPs must be positive, finite and strictly increasing")
    return xs, ys


def value_at_flops(flops: Sequence[float], values: Sequence[float], at: float) -> float:
    """A loss curve's value at ``at`` FLOPs, linear in log-FLOPs between evaluations (the end values
    outside the measured range; NaN when ``at`` lies before the first evaluation)."""
    xs, ys = _check_curve(flops, values)
    if at < xs[0]:
        return float("nan")
    if at >= xs[-1]:
        return ys[-1]
    i = next(j for j in range(1, len(xs)) if xs[j] >= at)
    w = (math.log(at) - math.log(xs[i - 1])) / (math.log(xs[i]) - math.log(xs[i - 1]))
    return ys[i - 1] + w * (ys[i] - ys[i - 1])


def flops_to_reach(flops: Sequence[float], values: Sequence[float], target: float) -> float:
    """The FLOPs at which a loss curve first reaches ``target`` (interpolated in log-FLOPs between
    the last evaluation above it and the first at or below it); NaN if it never does. A curve that
    is already at or below the target at its first evaluation returns that evaluation's FLOPs."""
    xs, ys = _check_curve(flops, values)
    for i, y in enumerate(ys):
        if y <= target:
            if i == 0 or ys[i - 1] == y:
                return xs[i]
            w = (ys[i - 1] - target) / (ys[i - 1] - y)
            return math.exp(math.log(xs[i - 1]) + w * (math.log(xs[i]) - math.log(xs[i - 1])))
    return float("nan")
