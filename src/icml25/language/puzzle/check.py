"""Claim check for *Puzzle: Distillation-Based NAS for Inference-Optimized LLMs* (Bercovich et al.,
ICML 2025, arXiv 2411.19146).

Claim (Section 5 search ablations): at equal measured throughput, the MIP-chosen heterogeneous child
is closer to the parent than budget-constrained greedy choice and uniform shrinking, and it meets the
speed budget it was asked for. Here the parent is the embedded SmolLM2-135M-Instruct (30 layers,
9 query / 3 KV heads, d_ff 1536); the block library per layer is attention {parent, kv1, linear,
noop} x FFN {parent, 50 %, 25 %, linear, noop} widths, built with decoupled blockwise local
distillation on cached parent activations (seed = which calibration windows), scored by
replace-one-block KL and costed by latency measured on this CPU.

Arms at each budget ``b`` (fraction of the parent's predicted latency, 0.75 and 0.6):
    mip       MIP (HiGHS) minimising summed replace-one-block KL under the latency budget
    greedy    from the parent, cheapest KL increase per ms saved, until the budget fits
    uniform   the best single (attention, FFN) variant used in every layer that fits
    depth     whole layers removed, smallest replace-one-layer KL first, until the budget fits
References: ``parent`` (the unmodified model: the ceiling, a control) and ``random`` (a random
feasible child: random cheaper swaps until the budget fits, drawn per seed; the floor a search
without scores reaches). Every seed draws its own BLD, scoring and evaluation windows (scoring and
evaluation from disjoint halves of the held-out text).

Metrics per arm and budget ``p`` (percent): ``bpb_p`` and ``kl_p`` kept per evaluation window
(English and Python windows pooled; the runner pairs arms over seeds and windows), ``en_bpb_p``,
``code_bpb_p`` (bits per byte per corpus), ``speedup_p`` (measured forward tokens/s of the child /
the parent's, median of interleaved repetitions), ``pred_ratio_p``, ``params_p``, ``score_p``.

Gates (declared before the small run): ``scores_informative_60``: greedy's held-out bits/byte below
the random child's (the scores carry information); ``equal_speed_<p>``: the MIP child's measured
speed-up at least ``1 - speed_tolerance`` times greedy's (the comparison is at about equal speed).

Criteria (declared before any small-scale number was seen): headline ``bpb_vs_greedy_60``, the MIP
child's held-out bits/byte below greedy's at the tightest budget, paired over seeds and windows with
smallest effect ``BPB_EFFECT`` = 0.01 bits/byte (declared: about 1 % of the parent's bits per byte;
the paper's MMLU gap, 78.39 vs 70.74, has no bits-per-byte equivalent); the same against greedy at
0.75 and against uniform at both budgets, and on per-window KL with ``KL_EFFECT`` = 0.025 nats (the
same 0.01 bits/byte at about 3.7 bytes per SmolLM2 token); and the measured speed-up at least
``(1 / b) * (1 - speed_tolerance)`` (default 5 %). The MIP child cannot score worse than greedy on
the MIP's own objective, so only held-out windows decide. No global distillation (uptraining) is
applied to any arm.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.validate import check_fields, check_in_range

from .blocks import Variant, assemble_child, build_library, parent_dims
from .search import (
    choice_to_groups,
    depth_choice,
    evaluate_choices,
    greedy_choice,
    groups_to_choice,
    measure_costs,
    random_choice,
    replace_one_scores,
    solve_mip,
    uniform_choice,
)

ARMS = ("mip", "greedy", "uniform", "depth")
BASELINES_JUDGED = ("greedy", "uniform")
REFERENCES = ("parent", "random")
ALL_ARMS = (*ARMS, *REFERENCES)


@dataclass(frozen=True)
class PuzzleCheckConfig:
    """One claim-check configuration.

    Args:
        model: ``"smollm2-135m-instruct"`` or any local Hugging Face Llama-style folder, or
            ``"random-tiny"`` (a random 2-layer Llama on bytes built in code).
        budgets: latency budgets as fractions of the parent's predicted latency.
        kv_heads: KV-head counts offered as attention variants (each must divide the parent's).
        ffn_fracs: FFN widths offered, as fractions of the parent's.
        n_calib, n_val, seq: BLD training / lr-selection windows and their length in tokens.
        bld_steps, bld_lrs: Adam steps per lr and the lr sweep (the initialisation is a candidate too).
        n_score, score_seq: windows and length for replace-one-block KL scores.
        cost_batch, cost_seq, cost_reps: timing input ``[batch, seq]`` and repetitions.
        eval_windows, eval_seq: held-out windows per corpus and their length.
        eval_chunk: windows per forward pass in the evaluation (memory only; the numbers do not
            depend on it beyond float rounding).
        tp_reps: interleaved throughput repetitions (parent vs child).
        speed_tolerance: allowed shortfall of measured speed-up vs ``1 / budget``.
        cost: the MIP's resource: ``"latency"`` (each block's latency measured on this machine,
            the paper's throughput constraint) or ``"params"`` (decoder parameter count; deterministic,
            used by the ``tiny`` preset so that repeated runs choose the same children).
    """

    model: str = "smollm2-135m-instruct"
    budgets: tuple[float, ...] = (0.75, 0.6)
    kv_heads: tuple[int, ...] = (1,)
    ffn_fracs: tuple[float, ...] = (0.5, 0.25)
    n_calib: int = 8
    n_val: int = 2
    seq: int = 128
    bld_steps: int = 10
    bld_lrs: tuple[float, ...] = (1e-3,)
    n_score: int = 1
    score_seq: int = 48
    cost_batch: int = 1
    cost_seq: int = 128
    cost_reps: int = 5
    eval_windows: int = 8
    eval_seq: int = 96
    eval_chunk: int = 8
    tp_reps: int = 9
    speed_tolerance: float = 0.05
    code_chars: int = 1_000_000
    cost: str = "latency"

    def __post_init__(self) -> None:
        if not self.budgets:
            raise ValueError("PuzzleCheckConfig.budgets must be non-empty")
        for i, b in enumerate(self.budgets):
            check_in_range(f"PuzzleCheckConfig.budgets[{i}]", b, 0.0, 1.0, low_open=True, high_open=True)
        for i, f in enumerate(self.ffn_fracs):
            check_in_range(f"PuzzleCheckConfig.ffn_fracs[{i}]", f, 0.0, 1.0, low_open=True, high_open=True)
        check_fields(
            self,
            positive_int=(
                "n_calib",
                "n_val",
                "seq",
                "n_score",
                "score_seq",
                "cost_batch",
                "cost_seq",
                "cost_reps",
                "eval_windows",
                "eval_seq",
                "eval_chunk",
                "tp_reps",
            ),
            non_negative_int=("bld_steps",),
        )
        check_in_range("PuzzleCheckConfig.speed_tolerance", self.speed_tolerance, 0.0, 1.0, high_open=True)
        if self.cost not in ("latency", "params"):
            raise ValueError(f"PuzzleCheckConfig.cost must be 'latency' or 'params', got {self.cost!r}")


def _pct(b: float) -> str:
    return str(round(100 * b))


#: smallest effect of interest on held-out bits per byte (paired, per window)
BPB_EFFECT = 0.01
BPB_SOURCE = (
    "declared: 0.01 bits/byte, about 1 % of the parent's held-out bits per byte, the smallest quality gap "
    "between two children at the same speed that we would call a difference"
)
#: the same gap on the per-token KL: 0.01 bits/byte x ln 2 x about 3.7 bytes per SmolLM2 token
KL_EFFECT = 0.025
KL_SOURCE = "declared: the 0.01 bits/byte effect in nats per token (x ln 2 x ~3.7 bytes per token)"


def _criteria(config: PuzzleCheckConfig) -> tuple[Criterion, ...]:
    out = []
    for b in config.budgets:
        p = _pct(b)
        for metric, what, effect, source in (
            ("bpb", "held-out bits/byte (English and Python windows)", BPB_EFFECT, BPB_SOURCE),
            ("kl", "KL to the parent", KL_EFFECT, KL_SOURCE),
        ):
            for base in BASELINES_JUDGED:
                out.append(
                    Criterion(
                        name=f"{metric}_vs_{base}_{p}",
                        arm="mip",
                        metric=f"{metric}_{p}",
                        op="<",
                        other_arm=base,
                        smallest_effect=effect,
                        effect_source=source,
                        description=(
                            f"budget {p}%: MIP child's {what} below {base}'s, paired over seeds and "
                            "evaluation windows"
                        ),
                    )
                )
        out.append(
            Criterion(
                name=f"speedup_{p}",
                arm="mip",
                metric=f"speedup_{p}",
                op=">=",
                threshold=round((1.0 / b) * (1.0 - config.speed_tolerance), 6),
                description=(
                    f"budget {p}%: measured speed-up at least 1/{b:g} less {config.speed_tolerance:.0%}"
                ),
            )
        )
    p = _pct(config.budgets[0])
    out.append(
        Criterion(
            name="tiny_budget_met",
            arm="mip",
            metric=f"pred_ratio_{p}",
            op="<=",
            threshold=config.budgets[0] + 1e-9,
            scales=("tiny",),
            description="smoke: the MIP child's predicted cost fits the budget",
        )
    )
    out.append(
        Criterion(
            name="tiny_mip_score",
            arm="mip",
            metric=f"score_{p}",
            op="<=",
            other_arm="greedy",
            scales=("tiny",),
            description="smoke: the MIP optimum's summed score is no worse than greedy's",
        )
    )
    return tuple(out)


def _gates(config: PuzzleCheckConfig) -> tuple[Criterion, ...]:
    judged = ("small", "medium", "full")
    p = _pct(config.budgets[-1])
    out = [
        Criterion(
            name=f"scores_informative_{p}",
            arm="greedy",
            metric=f"bpb_{p}",
            op="<",
            other_arm="random",
            scales=judged,
            description=(
                f"budget {p}%: the score-driven greedy child has lower held-out bits/byte than a random "
                "feasible child (the reference): the replace-one-block scores carry the information the "
                "searches compete on"
            ),
        )
    ]
    for b in config.budgets:
        q = _pct(b)
        out.append(
            Criterion(
                name=f"equal_speed_{q}",
                arm="mip",
                metric=f"speedup_{q}",
                op=">=",
                other_arm="greedy",
                factor=round(1.0 - config.speed_tolerance, 6),
                scales=judged,
                description=(
                    f"budget {q}%: the MIP child's measured speed-up is within {config.speed_tolerance:.0%} "
                    "of greedy's, so the quality comparison is at (about) equal measured speed"
                ),
            )
        )
    return tuple(out)


_STATEMENT = (
    "At equal measured speed, the MIP-assembled Puzzle child (blockwise-distilled library, replace-one-block "
    "KL scores, measured costs) is closer to the parent than greedy per-layer choice and uniform "
    "shrinking, and its measured speed-up reaches the budget asked."
)


def _claim(config: PuzzleCheckConfig) -> Claim:
    return Claim(
        statement=_STATEMENT,
        source="Section 5 search ablations (MIP 78.39 vs greedy 70.74 MMLU at equal throughput), Table 1",
        ours="mip",
        baselines=("greedy", "uniform", "depth"),
        references=REFERENCES,
        controls=("parent",),
        criteria=_criteria(config),
        gates=_gates(config),
        headline=f"bpb_vs_greedy_{_pct(config.budgets[-1])}",
        timed_metrics=("speedup_*",),
        setup_notes=(
            "SmolLM2-135M-Instruct on CPU, library attention {parent, kv1, linear, noop} x "
            "FFN {100, 50, 25 %, linear, noop}, decoupled BLD of a few Adam steps, replace-one-block KL, "
            "per-block CPU latency; no uptraining. Scoring and evaluation windows drawn per seed from "
            "disjoint halves of the held-out text; references: the parent (ceiling) and a random "
            "feasible child (floor)."
        ),
    )


CLAIM = _claim(PuzzleCheckConfig())


def _tiny_model() -> Any:
    from icml25.llm.models import tiny_random_llama

    return tiny_random_llama(vocab_size=256, init_std=0.2)


def _encode(text: str, tokenizer: Any, n: int) -> torch.Tensor:
    if tokenizer is None:
        return torch.tensor(list(text[: n * 2].encode("utf-8")[:n]), dtype=torch.long)
    ids = tokenizer(text[: n * 8], add_special_tokens=False)["input_ids"]
    return torch.tensor(ids[:n], dtype=torch.long)


def _windows(ids: torch.Tensor, n: int, t: int, gen: torch.Generator) -> torch.Tensor:
    if ids.numel() < t + 1:
        raise ValueError(f"corpus has {ids.numel()} tokens, fewer than a window of {t}")
    starts = torch.randint(0, ids.numel() - t, (n,), generator=gen)
    return torch.stack([ids[s : s + t] for s in starts.tolist()])


def _bpb_windows(logits: torch.Tensor, ids: torch.Tensor, tokenizer: Any) -> np.ndarray:
    """Bits per byte of each window: ``logits`` ``[N, T, V]`` on ``ids`` ``[N, T]`` -> ``[N]``
    (per token for a byte-level model)."""
    lg = logits[:, :-1].float()
    nll = torch.nn.functional.cross_entropy(lg.transpose(1, 2), ids[:, 1:], reduction="none").sum(-1)
    if tokenizer is None:
        n_bytes = np.full(ids.shape[0], ids.shape[1] - 1, dtype=float)
    else:
        n_bytes = np.array([len(tokenizer.decode(row[1:].tolist()).encode("utf-8")) for row in ids], float)
    return nll.double().numpy() / math.log(2) / np.maximum(n_bytes, 1.0)


def _bpb(logits: torch.Tensor, ids: torch.Tensor, tokenizer: Any) -> float:
    """Bits per byte of ``logits`` ``[N, T, V]`` on windows ``ids`` ``[N, T]`` (per token for bytes)."""
    lg = logits[:, :-1].float()
    nll = torch.nn.functional.cross_entropy(
        lg.reshape(-1, lg.shape[-1]), ids[:, 1:].reshape(-1), reduction="sum"
    )
    if tokenizer is None:
        n_bytes = ids[:, 1:].numel()
    else:
        n_bytes = sum(len(tokenizer.decode(row[1:].tolist()).encode("utf-8")) for row in ids)
    return float(nll) / math.log(2) / max(n_bytes, 1)


def _kl_windows(parent_logits: torch.Tensor, child_logits: torch.Tensor) -> np.ndarray:
    """Mean over positions of KL(parent || child) for each window ``[N]`` (nats)."""
    lp = torch.log_softmax(parent_logits.float(), -1)
    lc = torch.log_softmax(child_logits.float(), -1)
    return (lp.exp() * (lp - lc)).sum(-1).mean(-1).double().numpy()


def _window_bytes(ids: torch.Tensor, tokenizer: Any) -> np.ndarray:
    """UTF-8 bytes of each window's predicted tokens ``ids[:, 1:]`` ``[N]`` (tokens for a byte model)."""
    if tokenizer is None:
        return np.full(ids.shape[0], float(max(ids.shape[1] - 1, 1)))
    n = [len(tokenizer.decode(row[1:].tolist()).encode("utf-8")) for row in ids]
    return np.maximum(np.array(n, dtype=float), 1.0)


def _speedups(model: Any, children: Sequence[Any], x: torch.Tensor, reps: int) -> list[float]:
    """Measured forward tokens/s of each child over the parent's: medians of ``reps`` rounds, each
    round timing the parent once and then every child (order rotated per round), so that a change of
    machine load hits the parent and the children of a round alike."""
    t_parent: list[float] = []
    t_child: list[list[float]] = [[] for _ in children]
    for r in range(reps):
        t_parent.append(_tokens_per_s(model, x))
        for k in range(len(children)):
            c = (k + r) % len(children)
            t_child[c].append(_tokens_per_s(children[c], x))
    base = statistics.median(t_parent)
    return [statistics.median(t) / base for t in t_child]


@torch.inference_mode()
def _tokens_per_s(model: Any, x: torch.Tensor) -> float:
    model(input_ids=x[:, :8], use_cache=False)
    t0 = time.perf_counter()
    model(input_ids=x, use_cache=False)
    return x.numel() / max(time.perf_counter() - t0, 1e-9)


@torch.inference_mode()
def _sample(model: Any, tokenizer: Any, n: int = 10) -> str:
    prompt = "The Python interpreter"
    ids = (
        torch.tensor([list(prompt.encode())])
        if tokenizer is None
        else tokenizer(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
    )
    out = model.generate(ids, max_new_tokens=n, do_sample=False, pad_token_id=0)
    new = out[0, ids.shape[1] :].tolist()
    return (
        bytes(t % 256 for t in new).decode("utf-8", "replace") if tokenizer is None else tokenizer.decode(new)
    )


def _mean_item(outcomes: Sequence[SeedOutcome], arm: str, metric: str) -> float:
    return statistics.fmean(float(np.mean(o.items[arm][metric])) for o in outcomes)


class PuzzleCheck(ClaimCheck[PuzzleCheckConfig]):
    slug = "puzzle"
    claim = CLAIM
    presets = {
        "tiny": PuzzleCheckConfig(
            model="random-tiny",
            kv_heads=(1,),
            ffn_fracs=(0.5,),
            n_calib=4,
            n_val=2,
            seq=32,
            bld_steps=5,
            score_seq=32,
            cost_seq=32,
            cost_reps=3,
            eval_seq=32,
            tp_reps=1,
            code_chars=1_000_000,
            cost="params",
        ),
        # evaluation size, declared before the small run from a power argument (README): the per-window
        # spread of the MIP - greedy gap (sd 0.013-0.028 bits/byte) is small next to its spread between
        # seeds (about 0.035, each seed is one library and one set of children), so seeds, not
        # windows, resolve the criteria; 5 seeds were declared, then set back to 3 for time before any
        # judging run (5 x 0.78 of a seed's former time is about 640 s alone on the slower AMD machine,
        # over the 10-minute limit; 5 seeds would resolve only the headline, narrowly): 3 x 6 windows
        "small": PuzzleCheckConfig(eval_windows=6),
        # the small experiment with enough seeds to resolve its headline (README, "What it would take"):
        # the MIP - greedy gap varies between seeds (each seed is one block library and one set of
        # children), so seeds, not windows, resolve it; the small run's interval needs about 5.8x its
        # 3 seeds; 24 seeds leave room for a wider spread. Sized for the lent GPU machine's 16 CPU cores
        # (this check runs on the CPU): about 24 x 30-40 s
        "medium": PuzzleCheckConfig(eval_windows=6),
        "full": PuzzleCheckConfig(
            kv_heads=(1,),
            ffn_fracs=(0.75, 0.5, 0.25, 0.1),
            n_calib=64,
            n_val=8,
            bld_steps=150,
            bld_lrs=(3e-4, 1e-3),
            n_score=8,
            score_seq=128,
            cost_reps=11,
            eval_windows=16,
            eval_seq=256,
            tp_reps=11,
            code_chars=2_000_000,
        ),
    }
    default_seeds = {"tiny": 1, "small": 3, "medium": 24, "full": 3}

    def claim_for(self, config: PuzzleCheckConfig) -> Claim:
        return _claim(config)

    def run_seed(self, config: PuzzleCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        from icml25.data.corpora import english_corpus, python_corpus

        t_start = time.perf_counter()
        if config.model == "random-tiny":
            model, tokenizer = _tiny_model(), None
        else:
            from icml25.llm.models import load_causal_lm

            ctx.progress("load model", 0, 1)
            model, tokenizer = load_causal_lm(config.model)
        dims = parent_dims(model)
        corpora = {"en": english_corpus(), "code": python_corpus(max_chars=config.code_chars)}
        n_tok = 60_000
        calib_src = {k: _encode(c.calibration, tokenizer, n_tok) for k, c in corpora.items()}
        held_src = {k: _encode(c.heldout, tokenizer, n_tok) for k, c in corpora.items()}
        gen = torch.Generator().manual_seed(seed)
        half = max(config.n_calib // 2, 1)
        calib = torch.cat([_windows(calib_src[k], half, config.seq, gen) for k in ("en", "code")])
        val = torch.cat(
            [_windows(calib_src[k], max(config.n_val // 2, 1), config.seq, gen) for k in ("en", "code")]
        )
        # scoring and evaluation windows are drawn per seed from the held-out halves (scoring from the
        # first half, evaluation from the second: the two never overlap)
        mid = {k: v.numel() // 2 for k, v in held_src.items()}
        score_ids = torch.cat(
            [_windows(held_src[k][: mid[k]], config.n_score, config.score_seq, gen) for k in ("en", "code")]
        )
        ev = {
            k: _windows(held_src[k][mid[k] :], config.eval_windows, config.eval_seq, gen)
            for k in ("en", "code")
        }
        kv = [
            Variant("attention", "kv", k)
            for k in config.kv_heads
            if k < dims["kv_heads"] and dims["kv_heads"] % k == 0
        ]
        attn_vars = [*kv, Variant("attention", "linear"), Variant("attention", "noop")]
        ffn_vars = [Variant("ffn", "width", max(1, round(f * dims["ffn"]))) for f in config.ffn_fracs]
        ffn_vars += [Variant("ffn", "linear"), Variant("ffn", "noop")]

        ctx.progress("blockwise distillation", 0, 1)
        t0 = time.perf_counter()
        lib = build_library(
            model,
            calib,
            val,
            attn_vars,
            ffn_vars,
            steps=config.bld_steps,
            lrs=config.bld_lrs,
            seed=seed,
            progress=lambda d, t: ctx.progress("blockwise distillation", d, t),
        )
        t_bld = time.perf_counter() - t0
        ctx.progress("replace-one-block scores", 0, 1)
        t0 = time.perf_counter()
        sa, sf = replace_one_scores(model, lib, score_ids)
        t_score = time.perf_counter() - t0
        costs = measure_costs(model, lib, batch=config.cost_batch, seq=config.cost_seq, reps=config.cost_reps)
        if config.cost == "params":  # deterministic resource (tiny): decoder parameters, no constant
            ca, cf = costs["attention_params"].astype(float), costs["ffn_params"].astype(float)
            const = 0.0
        else:  # measured latency on this machine (the paper's throughput constraint)
            ca, cf = costs["attention_ms"], costs["ffn_ms"]
            const = float(costs["const_ms"])
        parent_ms = float(const + ca[:, 0].sum() + cf[:, 0].sum())
        groups_s = [row for pair in zip(sa, sf, strict=True) for row in pair]
        groups_c = [row for pair in zip(ca, cf, strict=True) for row in pair]
        parent_params = float(costs["attention_params"][:, 0].sum() + costs["ffn_params"][:, 0].sum())
        noop = (len(attn_vars), len(ffn_vars))  # noop is last in both menus

        def predicted(choice: Sequence[tuple[int, int]]) -> float:
            return float(const + sum(ca[i, a] + cf[i, f] for i, (a, f) in enumerate(choice)))

        ev_ids = torch.cat([ev["en"], ev["code"]])  # [2 * eval_windows, eval_seq], English first
        corpus_of = np.array(["en"] * ev["en"].shape[0] + ["code"] * ev["code"].shape[0])
        n_bytes = _window_bytes(ev_ids, tokenizer)
        n_items = ev_ids.shape[0]
        metrics: dict[str, dict[str, float]] = {a: {} for a in ALL_ARMS}
        items: dict[str, dict[str, np.ndarray]] = {a: {} for a in ALL_ARMS}
        rng = np.random.default_rng(seed)
        series: dict[str, Any] = {
            "attention_variants": lib.names("attention"),
            "ffn_variants": lib.names("ffn"),
            "attention_ms": costs["attention_ms"][0].tolist(),
            "ffn_ms": costs["ffn_ms"][0].tolist(),
            "cost": config.cost,
            "const_ms": float(costs["const_ms"]),
            "parent_pred_ms": parent_ms,
            "attention_scores": sa.tolist(),
            "ffn_scores": sf.tolist(),
            "choices": {},
            "samples": {},
            "eval_items": n_items,
        }
        # every search first, then one shared evaluation of all distinct children (identical
        # architectures are evaluated once; children share the parent's computation up to their first
        # changed sub-block)
        choices: dict[str, dict[str, list[tuple[int, int]]]] = {}
        for b in config.budgets:
            budget_blocks = b * parent_ms - const
            choices[_pct(b)] = {
                "mip": groups_to_choice(solve_mip(groups_s, [groups_c], [budget_blocks])),
                "greedy": groups_to_choice(greedy_choice(groups_s, groups_c, budget_blocks)),
                "uniform": uniform_choice(sa, sf, ca, cf, budget_blocks),
                "depth": depth_choice(sa, sf, ca, cf, budget_blocks, noop),
                "random": groups_to_choice(random_choice(groups_c, budget_blocks, rng)),
            }
        archs: list[tuple[tuple[int, int], ...]] = []
        for per_budget in choices.values():
            for choice in per_budget.values():
                if tuple(choice) not in archs:
                    archs.append(tuple(choice))
        ctx.progress("evaluate", 0, 1)
        t0 = time.perf_counter()
        quality = evaluate_choices(model, lib, [list(a) for a in archs], ev_ids, chunk=config.eval_chunk)
        t_eval = time.perf_counter() - t0
        series["eval_blocks_run"] = [quality.blocks_run, quality.naive_blocks]
        parent_items = quality.parent_nll / math.log(2) / n_bytes
        parent_eval = {
            f"{k}_bpb": float(
                quality.parent_nll[corpus_of == k].sum() / math.log(2) / n_bytes[corpus_of == k].sum()
            )
            for k in ev
        }
        ctx.progress("throughput", 0, 1)
        t0 = time.perf_counter()
        x_tp = ev_ids[:, : config.cost_seq][: config.cost_batch]
        speedups = _speedups(
            model,
            [assemble_child(model, lib, list(a), share_weights=True) for a in archs],
            x_tp,
            config.tp_reps,
        )
        t_tp = time.perf_counter() - t0
        pred_err = []
        for b in config.budgets:
            p = _pct(b)
            for key, value in parent_eval.items():
                metrics["parent"][f"{key}_{p}"] = value
            metrics["parent"][f"speedup_{p}"] = 1.0
            items["parent"][f"bpb_{p}"] = parent_items
            items["parent"][f"kl_{p}"] = np.zeros(n_items)
            for arm, choice in choices[p].items():
                c = archs.index(tuple(choice))
                m = metrics[arm]
                for k in ev:
                    sel = corpus_of == k
                    m[f"{k}_bpb_{p}"] = float(quality.nll[c, sel].sum() / math.log(2) / n_bytes[sel].sum())
                items[arm][f"bpb_{p}"] = quality.nll[c] / math.log(2) / n_bytes
                items[arm][f"kl_{p}"] = quality.kl[c]
                m[f"speedup_{p}"] = speedups[c]
                m[f"pred_ratio_{p}"] = predicted(choice) / parent_ms
                pred_err.append(abs(1.0 / m[f"speedup_{p}"] - m[f"pred_ratio_{p}"]) / m[f"pred_ratio_{p}"])
                gi = choice_to_groups(choice)
                m[f"score_{p}"] = float(sum(groups_s[g][j] for g, j in enumerate(gi)))
                m[f"params_{p}"] = (
                    float(
                        sum(
                            costs["attention_params"][i, a] + costs["ffn_params"][i, f]
                            for i, (a, f) in enumerate(choice)
                        )
                    )
                    / parent_params
                )
                series["choices"][f"{arm}_{p}"] = [
                    [lib.names("attention")[a], lib.names("ffn")[f]] for a, f in choice
                ]
                ctx.log(
                    f"{arm} @ {p}%: " + ", ".join(f"{k} {v:.4g}" for k, v in m.items() if k.endswith(f"_{p}"))
                )
            series["samples"][p] = _sample(
                assemble_child(model, lib, choices[p]["mip"], share_weights=True), tokenizer
            )
        series["latency_prediction_rel_err"] = float(np.mean(pred_err))
        series["seconds"] = {
            "bld": t_bld,
            "score": t_score,
            "eval": t_eval,
            "throughput": t_tp,
            "total": time.perf_counter() - t_start,
        }
        notes = (
            f"model {config.model}; BLD {config.n_calib}x{config.seq} tokens, {config.bld_steps} steps, lrs "
            f"{config.bld_lrs} + init chosen on {config.n_val} windows; scores on {2 * config.n_score}x"
            f"{config.score_seq}; costs at [{config.cost_batch}, {config.cost_seq}] on 1 CPU thread; "
            "mean |1/measured speed-up - predicted| / predicted = "
            f"{series['latency_prediction_rel_err']:.3f}",
        )
        return SeedOutcome(metrics=metrics, series=series, items=items, notes=notes)

    def make_figures(
        self, config: PuzzleCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext
    ) -> None:
        from icml25.core.plotting import arm_color, new_figure

        fig, axes = new_figure(ncols=2, width=4.4, height=3.4)
        for ax, metric, label in zip(
            axes, ("bpb", "kl"), ("held-out bits/byte", "KL to parent (nats)"), strict=True
        ):
            for arm in (*ARMS, "random"):
                xs, ys = [], []
                for b in config.budgets:
                    p = _pct(b)
                    xs.append(statistics.fmean(o.metrics[arm][f"speedup_{p}"] for o in outcomes))
                    ys.append(
                        statistics.fmean(float(np.mean(o.items[arm][f"{metric}_{p}"])) for o in outcomes)
                    )
                ax.plot(
                    xs, ys, marker="o", label=arm, color=arm_color(arm, "mip", ("greedy", "uniform", "depth"))
                )
            if metric == "bpb":
                p0 = _pct(config.budgets[0])
                ax.axhline(
                    _mean_item(outcomes, "parent", f"bpb_{p0}"),
                    color="k",
                    ls="--",
                    lw=1,
                    label="parent",
                )
            ax.set_xlabel("measured speed-up vs parent")
            ax.set_ylabel(label)
            ax.set_yscale("log")
        axes[1].legend()
        ctx.save_figure(fig, "quality_vs_speed", "Child quality vs measured speed-up at each latency budget.")


CHECK = PuzzleCheck()
