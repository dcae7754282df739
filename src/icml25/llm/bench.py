"""``icml25 bench llm``: aggregate generation throughput of a local causal LM against this CPU's ceiling.

One decoding step of a batch of ``B`` sequences costs about ``2 * N`` FLOPs per sequence (``N`` the
parameters touched per token: every matrix of every block plus the output head), so batched decoding
is bound by the matmul rate of the machine, while one stream is bound by memory bandwidth (every
weight is read once per token whatever the batch). The benchmark measures:

* the machine's matmul rate at the model's precision (a large square product, this process's
  threads), and from it the compute ceiling in tokens/s: ``rate / (2 * N)``;
* plain one-prompt-at-a-time ``generate`` (batch 1, the KV cache on, as transformers does);
* batched greedy decoding at batch sizes 8 and 32 (left-padded prompts, a shared KV cache, every
  sequence forced to the same number of new tokens so the count is exact);

and prints aggregate new tokens/s for each, with the fraction of the ceiling. Times are ratios
measured in one process, never absolute claims.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ThroughputRow",
    "decode_flops_per_token",
    "linear_bound_tokens_per_s",
    "main",
    "measure_throughput",
]

_PROMPTS = (
    "Write a Python function that returns the n-th Fibonacci number.",
    "Explain what a hash table is in two sentences.",
    "List three prime numbers greater than 100.",
    "What does the `yield` keyword do in Python?",
    "Give a short definition of gradient descent.",
    "Translate 'good morning' into French and Spanish.",
    "Why is the sky blue? Answer briefly.",
    "Write a haiku about compilers.",
)


@dataclass(frozen=True)
class ThroughputRow:
    """One measured configuration: ``tokens`` new tokens in ``seconds``."""

    label: str
    batch: int
    tokens: int
    seconds: float

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds


def decode_flops_per_token(model: Any) -> float:
    """``2 * N``: the multiply-adds of one decoding step per sequence, with ``N`` the parameters of
    every matrix the step multiplies by (the blocks' linear layers and the output head; the input
    embedding is a lookup and costs nothing)."""
    import torch

    total = 0
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            total += module.weight.numel()
    return 2.0 * total


def linear_bound_tokens_per_s(model: Any, batch: int, *, repeats: int = 3) -> float:
    """Tokens/s if a decoding step cost only its linear layers' matmuls at ``batch`` rows.

    Times ``F.linear`` of a random ``(batch, in)`` input through every ``nn.Linear`` of the model
    (best of ``repeats``): the bound that small-``M`` matrix products leave, below the large-matrix
    ceiling, before attention, norms and the KV cache cost anything.
    """
    import torch

    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    if not linears:
        raise ValueError("model has no nn.Linear layers")
    inputs = [torch.randn(batch, m.in_features, dtype=m.weight.dtype) for m in linears]
    best = float("inf")
    with torch.inference_mode():
        for _ in range(repeats + 1):  # the first pass warms the kernels up
            start = time.perf_counter()
            for m, x in zip(linears, inputs, strict=True):
                torch.nn.functional.linear(x, m.weight)
            best = min(best, time.perf_counter() - start)
    return batch / best


def _chat_prompts(tokenizer: Any, batch: int) -> list[str]:
    return [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": _PROMPTS[i % len(_PROMPTS)]}],
            tokenize=False,
            add_generation_prompt=True,
        )
        for i in range(batch)
    ]


def measure_throughput(
    model: Any, tokenizer: Any, *, batch: int, new_tokens: int, label: str = ""
) -> ThroughputRow:
    """Greedy decoding of ``batch`` chat prompts at once, exactly ``new_tokens`` new tokens each."""
    import torch

    from icml25.llm.local import left_padded, pad_token_id

    enc = left_padded(tokenizer, _chat_prompts(tokenizer, batch))
    pad = pad_token_id(tokenizer)
    kwargs = dict(
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        do_sample=False,
        temperature=None,
        top_p=None,
        top_k=None,
        pad_token_id=pad,
    )
    with torch.inference_mode():
        model.generate(**enc, **{**kwargs, "max_new_tokens": 2, "min_new_tokens": 2})  # warm-up
        start = time.perf_counter()
        out = model.generate(**enc, **kwargs)
        seconds = time.perf_counter() - start
    produced = (out.shape[1] - enc["input_ids"].shape[1]) * batch
    return ThroughputRow(label or f"batch {batch}", batch, int(produced), seconds)


def build_parser() -> argparse.ArgumentParser:
    """The benchmark's options (``icml25 bench llm --help``)."""
    parser = argparse.ArgumentParser(prog="icml25 bench llm", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct", help="embedded name, HF folder or .gguf")
    parser.add_argument("--new-tokens", type=int, default=48, help="new tokens per sequence")
    parser.add_argument("--batches", default="1,8,32", help="comma-separated batch sizes")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16"), help="weights' dtype")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.new_tokens < 1:
        parser.error("--new-tokens must be at least 1")
    try:
        batches = [int(b) for b in args.batches.split(",") if b.strip()]
    except ValueError:
        parser.error(f"--batches must be comma-separated integers, got {args.batches!r}")
    if not batches or min(batches) < 1:
        parser.error("--batches must hold positive integers")

    import torch

    from icml25.core.runtime import matmul_gflops
    from icml25.llm.models import load_causal_lm

    model, tokenizer = load_causal_lm(args.model)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[args.precision]
    model = model.to(dtype).eval()
    flops = decode_flops_per_token(model)
    rate = matmul_gflops(args.precision, size=1024, seconds=1.0)
    ceiling = rate * 1e9 / flops
    print(
        f"model {args.model}: {flops / 2e6:.0f}M multiplied parameters, {flops / 1e9:.3f} GFLOP per token; "
        f"{torch.get_num_threads()} thread(s), {args.precision} matmul {rate:.1f} GFLOP/s "
        f"(capability {torch.backends.cpu.get_cpu_capability()}): ceiling {ceiling:.0f} tokens/s"
    )
    rows = [measure_throughput(model, tokenizer, batch=b, new_tokens=args.new_tokens) for b in batches]
    header = f"{'configuration':<16} {'new tokens':>10} {'seconds':>8} {'tokens/s':>9} {'of ceiling':>10}"
    print(header + f" {'linear-only bound':>18}")
    for row in rows:
        bound = linear_bound_tokens_per_s(model, row.batch)
        print(
            f"{row.label:<16} {row.tokens:>10d} {row.seconds:>8.2f} {row.tokens_per_s:>9.1f} "
            f"{row.tokens_per_s / ceiling:>9.1%} {bound:>11.0f} tok/s"
        )
    print(
        "ceiling: large-matrix matmul rate / FLOPs per token; linear-only bound: the same batch's "
        "matrix products alone, timed at their real shapes"
    )
    return 0
