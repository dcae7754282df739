"""Claim check for *Universal Length Generalization with Turing Programs* (Hou et al., ICML 2025,
https://arxiv.org/abs/2407.03310).

The paper's headline (abstract, Sec. 4): trained on additions of up to 50 digits with Turing-Program
scratchpads and Hard-ALiBi attention, a transformer is 98 % exact at 100 digits (2x), while
training without the scratchpad or with other positional encodings (NoPE, RoPE, ALiBi) fails to
length-generalise. Here the same comparison at toy scale: train on n-digit + n-digit additions,
n uniform in [1, L] (L = ``train_max_len``), and measure exact match at n = L (1x), ceil(1.5 L)
(1.5x) and 2 L (2x).

Arms (same decoder shape, same optimiser, steps, batch size and learning-rate sweep):
    tp_hard_alibi          Turing Program + Hard-ALiBi (half the heads windows 1, 2, ..., the rest NoPE)
    tp_nope                Turing Program, every head NoPE (the headline baseline: the positional ablation)
    tp_learned             Turing Program, learned absolute positions
    scratchpad_hard_alibi  plain scratchpad (carry and partial sum only, no copy of the operands) + Hard-ALiBi
    direct_hard_alibi      direct answer, least significant digit first, + Hard-ALiBi
``small`` runs ours and tp_nope (the time budget; see "Budget" below); ``medium`` adds tp_learned and
the direct answer, ``full`` every arm and TP + RoPE.
Reference (never a baseline to beat): ``untrained``, ours at initialisation scored on the same
problems: what "learned nothing" scores (exact match 0, token accuracy about 1/30).

Equal effort: every arm gets the same number of optimiser steps of the same number of problems
(steps x batch), i.e. the same number of training examples; scratchpad formats therefore see more
tokens, which is the trade the paper's method makes and what a user of either format would pay.
Learning rate: each arm trains once per value of ``lr_grid`` at ``sweep_seed`` and keeps the value
with the best teacher-forced exact match on a validation set of fresh problems at the training
lengths (ties: lower validation loss); the other seeds reuse that value. Training runs are pure
functions of (config, arm, lr, seed) and run in ``workers`` single-threaded processes.

Metric: teacher-forced exact match of the whole continuation (scratchpad and answer; equal to
"greedy decoding reproduces the reference program"), on ``n_test`` problems per length, the same
problems in the same order for every arm (they depend on the seed and the length only), so the
runner pairs arms per problem; greedy decoding with the KV cache on ``n_greedy`` of them gives
answer-only accuracy and the fraction of generated programs that pass the verifier.

Gates (a failed gate gives "inconclusive": the claim is about generalising beyond what was fitted):
    ours_fits_training_length   tp_hard_alibi exact_1x >= fit_gate (0.9), seed mean
    ours_above_untrained        tp_hard_alibi token_acc_1x >= 0.5 (the untrained reference: ~0.03)
Criteria (declared before any small-scale number was seen):
    beats_tp_nope_2x (headline) exact_2x of ours > tp_nope's, paired over seeds and test problems,
                                smallest effect 0.3 (EFFECT_SOURCE: a third of the paper's > 0.9 gap)
    beats_<other>_2x            the same against every other baseline arm
    ours_in_distribution        tp_hard_alibi exact_1x >= 0.95
    ours_1p5x, ours_2x          tp_hard_alibi exact at 1.5x and 2x >= 0.8 (the paper: 98 % at 2x)

Sizing (issue 40). The old small preset (1..3 digits, 600 steps of 16) fitted no arm (best exact at
1x: 0.10). Fewer digits and more steps were tried next, outside the check, seed 0, 100 problems a
length, on the shared machine: with 1..2-digit training and 1000 steps of 32 problems (lr 3e-3,
2 layers, d = 64, 8 heads of which 4 hard) TP + learned positions is exact at n = 2 (1.00) but ours
reaches 0.08, TP + NoPE 0.04 and the direct answer 0.04 (all 1.00 at n = 1; 0 for every arm at
n = 3, 4); with 3 layers, lr 1e-2 and 2000 steps ours reaches 0.52 at n = 2. Two check runs with that
model (1500 and 1000 steps, 3 seeds) then failed the fit gate at 0.14 and 0.064 (results
20261205T184208468812Z-6cec7f and 20261205T190453057820Z-6ca803; the coordinator's timed run of
the 1000-step preset, 20261205T194331678873Z-642af1, 122 s alone, read the same 0.064).

Why ours did not fit (round 3 of issue 40). Not a defect of the attention: ``hard_alibi_bias`` plus
the causal mask gives exactly the attention weights of the reference code's masking loop
(``GPTHardAlibiAttention._attn`` in ``sjelassi/transformers_ssm_copy``, transcribed in the tests:
equal to 1e-12 on random scores; head i sees keys i - j for j = 0..i, the other heads are causal
NoPE; the cached-decoding offset is tested separately). An error analysis of the old model (seed
0, lr 1e-2, 1000 steps, 200 two-digit problems, 1.5 % exact) puts almost every wrong token in two
places: the sum digit written after the state (wrong in 57 % and 72 % of problems in the first two
steps) and the copy of the answer digits written in earlier steps (18-37 %); the operand region
is copied > 96 % right. Those are the tokens whose source lies beyond the 4-token windows and
that must be found, by content alone, among several earlier lines holding the same kind of token
(marked digits, state tokens): the NoPE heads have to tell the latest line from older ones. That is
a capacity / optimisation limit of the tiny model, which learned absolute positions sidestep. So
the small model moved to the reference code's head split: 16 heads, 8 of them hard with windows
1..8 (``--num_masked_heads 8`` of 16 there; we had 4 of 8 with windows 1..4), at width 128 (head
dim 8). Exploration, seed 0, lr 3e-3, 100 problems at n = 2: 1000 steps give 0.61 exact (0.26 with
the same split at width 64 and lr 1e-2; 0.21 for 3 layers of 4 heads at width 64; the old model
0.10), 1500 steps 0.90 (validation 0.98) and 2000 steps 0.99 (validation 1.00); 0 at n = 3 and 4
in every case (token accuracy 0.51 and 0.37 at 2000 steps). The small preset: this model, 2000
steps of 32, three arms, all at lr 3e-3 (the value every arm chose from {3e-3, 1e-2} in both
earlier check runs; the sweep's second value is dropped to stay in the time budget, so the
``lr_grid`` is one value, the same for every arm; pass ``lr_grid=(3e-3, 1e-2)`` to sweep again);
about 5-6 minutes alone on 2 cores, estimated from the CPU time per step measured under load.
Changed after seeing run 20261205T194331678873Z-642af1, because
its fit gate (0.064) showed that the model could not fit the training lengths, and 1500 -> 2000
steps after the 1500-step exploration sat at the gate's threshold (0.90); the criteria,
thresholds, gates and smallest effects are unchanged. ``medium`` (one GPU, 1..5 digits, a 4-layer
width-256 model with the same 16/8 head split, 8000 steps of 64) stays the preset that could show
length generalisation.

Outcome at small with this preset (run 20261206T011752274314Z-45bf55, 3 seeds, in a scratch results
folder; 926 s while the machine's load fell from 7 to 0.3; the last seed's runs, nearly alone,
took 91 / 81 / 68 s for ours / TP + NoPE / TP + learned, so about 6-7 minutes alone): **not
reproduced**. Both gates hold: ours is exact on 0.949 of 300 two-digit problems (seeds 0.963,
0.900, 0.983; token accuracy 0.999); TP + NoPE 0.838, TP + learned 1.00. Every arm is 0 exact at
n = 3 and 4 (token accuracy at n = 4: ours 0.33, TP + NoPE 0.23, TP + learned 0.15, untrained
0.03), so the headline's paired interval, ours minus TP + NoPE at 4 digits, is [0, 0] over 3 seeds
x 300 problems, below the smallest effect 0.3: the headline fails; ours_in_distribution misses
0.95 by 0.001. A reason that is not the method's fault: training on 1-2 digits never shows a head
strictly inside an operand (that needs n >= 3), so 2 -> 4 digits asks more than the paper's
50 -> 100; ``medium`` is the test at 1..5 -> 10 digits.

Budget (issue 40 item 4, round 4). That preset ran about 870-920 s alone on the slower 2-core
machine (AMD EPYC, AVX2 only), over the 10-minute limit; training is about 95 % of it and is
matmul-bound (no saving that keeps the numbers identical is worth having: fused AdamW changes the
round-off). Declared before any run of it (commit 2cc61ca), the same for both arms and argued from
the per-seed numbers above: (1) TP + learned positions leaves ``small`` (it stays at ``medium`` and
``full``): its criterion is supporting, and it was 0 of 900 exact at 3 and 4 digits; a third of the
runs. (2) 16 problems a step instead of 32, same 2000 steps, learning rate and schedule (about 0.55
of a run's CPU time). The headline could not lose its resolution to either cut (ours was exact on 0
of 900 problems at 3 and 4 digits with the larger budget); the risk was the fit gate. It failed:
at 16 a step ours was exact on 0.707 and 0.517 of 300 two-digit problems in seeds 1 and 2
(validation 0.80 and 0.75; development runs at one thread under load, seed 0 stopped once the mean
could no longer reach 0.9). So (2) was undone, changed after seeing those numbers, because the gate
showed that half the examples do not fit the training lengths: ``small`` trains 2000 steps of 32 as
before, so ours and TP + NoPE run exactly the recorded budget, and only (1) remains. That does not
reach the 5-minute aim: about 530-610 s alone is the estimate (six runs of about 165-180 s of CPU
each on two workers, three rounds; the CPU-time ratio new/old is about 0.68, measured interleaved at
one thread). Gate, criteria, thresholds and smallest effects are unchanged. On the AMD machine ours
at 32 a step is exact on 0.967, 0.823 and 0.990 of the two-digit test problems (mean 0.927; the
Intel run: 0.963, 0.900, 0.983, the round-off of other kernels) and on none at 3 and 4 digits:
expected verdict "not reproduced" with the gate passing by 0.027.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.runtime import WorkerPool
from icml25.core.validate import check_fields, check_in_range

from .model import DecoderConfig, TinyDecoder
from .programs import AdditionTask, Tokenizer, addition_program, verify_addition_program
from .training import (
    TrainConfig,
    greedy_decode,
    length_generalization_eval,
    sequence_loss,
    teacher_forced_exact_match,
    train_decoder,
)

OURS = "tp_hard_alibi"
ARM_SPECS: dict[str, tuple[str, str]] = {  # arm -> (format, positional scheme)
    "tp_hard_alibi": ("turing", "hard_alibi"),
    "tp_nope": ("turing", "nope"),
    "tp_learned": ("turing", "learned"),
    "scratchpad_hard_alibi": ("scratchpad", "hard_alibi"),
    "direct_hard_alibi": ("direct_reversed", "hard_alibi"),
    "tp_rope": ("turing", "rope"),
}
BASELINES = ("tp_nope", "tp_learned", "scratchpad_hard_alibi", "direct_hard_alibi")
HEADLINE_BASELINE = "tp_nope"
UNTRAINED = "untrained"  # reference: ours at initialisation, scored on the same problems
REFERENCES = (UNTRAINED,)
MULTIPLES = {"1x": 1.0, "1p5x": 1.5, "2x": 2.0}
#: smallest effect of interest of every paired "beats" criterion, in exact match at 2x
EFFECT = 0.3
EFFECT_SOURCE = (
    "declared: 0.3 exact match at 2x; the paper's Turing-Program + Hard-ALiBi model is 98 % exact at 2x "
    "while its NoPE / RoPE / no-scratchpad ablations are near 0 (Sec. 4, Fig. 1), a gap above 0.9, so a "
    "third of it is the least gap that still says 'the ablation does not length-generalise'"
)


@dataclass(frozen=True)
class TuringProgramsCheckConfig:
    """Data, model, training and thresholds of the check.

    ``arms`` must contain ``tp_hard_alibi`` and the headline baseline ``tp_nope``; ``tp_rope`` is
    available as an extra arm. ``device`` trains and evaluates on that torch device (``"cuda"`` for
    ``medium``); problems are drawn on the CPU either way, so results depend on the seed only.
    """

    train_min_len: int = 1
    train_max_len: int = 2
    extra_lengths: tuple[int, ...] = ()
    n_test: int = 300
    n_greedy: int = 16
    n_val: int = 64
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 16
    n_hard: int = 8
    mlp_ratio: float = 4.0
    train: TrainConfig = TrainConfig(steps=2000, batch_size=32, lr=3e-3, warmup_steps=40)
    lr_grid: tuple[float, ...] = (3e-3,)
    sweep_seed: int = 0
    arms: tuple[str, ...] = ("tp_hard_alibi", "tp_nope")
    threads: int = 1
    workers: int = 2
    in_dist_threshold: float = 0.95
    long_threshold: float = 0.8
    margin: float = EFFECT
    fit_gate: float = 0.9
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_fields(self, positive_int=("train_min_len", "train_max_len", "n_test", "n_val", "d_model"))
        check_fields(
            self, positive_int=("n_layers", "n_heads"), non_negative_int=("n_greedy", "n_hard", "threads")
        )
        check_fields(self, non_negative_int=("sweep_seed",), positive_int=("workers",))
        if self.train_max_len < self.train_min_len:
            raise ValueError("TuringProgramsCheckConfig.train_max_len must be >= train_min_len")
        if (
            len(self.arms) < 2
            or OURS not in self.arms
            or HEADLINE_BASELINE not in self.arms
            or any(a not in ARM_SPECS for a in self.arms)
            or len(set(self.arms)) != len(self.arms)
        ):
            raise ValueError(
                f"TuringProgramsCheckConfig.arms must be distinct names from {sorted(ARM_SPECS)}: "
                f"{OURS!r}, the headline baseline {HEADLINE_BASELINE!r} and any others"
            )
        if not self.lr_grid or any(not (isinstance(lr, float | int) and lr > 0) for lr in self.lr_grid):
            raise ValueError(
                f"TuringProgramsCheckConfig.lr_grid must be non-empty positive numbers, got {self.lr_grid}"
            )
        if any(n < 1 for n in self.extra_lengths):
            raise ValueError("TuringProgramsCheckConfig.extra_lengths must be positive")
        for name in ("in_dist_threshold", "long_threshold", "margin", "fit_gate"):
            check_in_range(f"TuringProgramsCheckConfig.{name}", getattr(self, name), 0.0, 1.0)

    def multiple_lengths(self) -> dict[str, int]:
        """``{"1x": L, "1p5x": ceil(1.5 L), "2x": 2 L}``."""
        return {k: math.ceil(f * self.train_max_len) for k, f in MULTIPLES.items()}

    def test_lengths(self) -> tuple[int, ...]:
        return tuple(sorted({*self.multiple_lengths().values(), *self.extra_lengths}))

    def decoder(self, vocab_size: int, pos: str, max_len: int) -> DecoderConfig:
        return DecoderConfig(
            vocab_size=vocab_size,
            d_model=self.d_model,
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            mlp_ratio=self.mlp_ratio,
            pos=pos,  # type: ignore[arg-type]
            n_hard=self.n_hard,
            max_len=max_len,
        )


def _criteria(config: TuringProgramsCheckConfig) -> tuple[Criterion, ...]:
    out = [
        Criterion(
            "ours_in_distribution",
            arm=OURS,
            metric="exact_1x",
            op=">=",
            threshold=config.in_dist_threshold,
            description="Turing Program + Hard-ALiBi is exact at the longest training length",
        ),
        Criterion(
            "ours_1p5x",
            arm=OURS,
            metric="exact_1p5x",
            op=">=",
            threshold=config.long_threshold,
            description="Turing Program + Hard-ALiBi stays exact at 1.5x the training length",
        ),
        Criterion(
            "ours_2x",
            arm=OURS,
            metric="exact_2x",
            op=">=",
            threshold=config.long_threshold,
            description="Turing Program + Hard-ALiBi stays exact at 2x the training length",
        ),
    ]
    for arm in (HEADLINE_BASELINE, *(a for a in config.arms if a not in (OURS, HEADLINE_BASELINE))):
        out.append(
            Criterion(
                f"beats_{arm}_2x",
                arm=OURS,
                metric="exact_2x",
                op=">",
                other_arm=arm,
                smallest_effect=config.margin,
                effect_source=EFFECT_SOURCE,
                description=(
                    f"at 2x the training length, Turing Program + Hard-ALiBi is exact on more problems than "
                    f"{arm} (paired over seeds and test problems)"
                ),
            )
        )
    out += [
        Criterion(
            "tiny_learns",
            arm=OURS,
            metric="loss_ratio",
            op="<",
            threshold=1.0,
            scales=("tiny",),
            description="training lowers the loss",
        ),
        Criterion(
            "tiny_verifier_roundtrip",
            arm=OURS,
            metric="verifier_roundtrip",
            op=">=",
            threshold=1.0,
            scales=("tiny",),
            description="every reference program passes the verifier and a corrupted one fails",
        ),
        Criterion(
            "tiny_tf_equals_greedy",
            arm=OURS,
            metric="tf_greedy_agreement",
            op=">=",
            threshold=1.0,
            scales=("tiny",),
            description="teacher-forced exact match equals greedy (KV-cached) reproduction of the reference",
        ),
    ]
    return tuple(out)


def _gates(config: TuringProgramsCheckConfig) -> tuple[Criterion, ...]:
    """The claim is about generalising beyond what was fitted: ours must first fit the training lengths."""
    return (
        Criterion(
            "ours_fits_training_length",
            arm=OURS,
            metric="exact_1x",
            op=">=",
            threshold=config.fit_gate,
            description=(
                f"Turing Program + Hard-ALiBi is exact on >= {config.fit_gate:g} of fresh problems at the "
                "longest training length (seed mean): without that, accuracy at 2x says nothing about length "
                "generalisation"
            ),
        ),
        Criterion(
            "ours_above_untrained",
            arm=OURS,
            metric="token_acc_1x",
            op=">=",
            threshold=0.5,
            description="trained model's teacher-forced token accuracy at 1x is >= 0.5 (untrained: ~1/30)",
        ),
    )


_DEFAULT = TuringProgramsCheckConfig()

CLAIM = Claim(
    statement=(
        "Trained on short additions, a transformer that writes Turing-Program scratchpads with Hard-ALiBi "
        "attention stays exact at 1.5x and 2x the training length, while the same model with NoPE or learned "
        "positions, or with a plain scratchpad or the direct answer, does not."
    ),
    source="Abstract; Sec. 4 (addition, Fig. 1 and the positional-encoding / no-scratchpad ablations)",
    ours=OURS,
    baselines=BASELINES,
    references=REFERENCES,
    criteria=_criteria(_DEFAULT),
    gates=_gates(_DEFAULT),
    headline=f"beats_{HEADLINE_BASELINE}_2x",
    min_seeds=3,
    timed_metrics=("train_seconds",),
    setup_notes=(
        "small: train on 1..2-digit additions, test at 2, 3 and 4 digits (the paper: up to 50, test 100); "
        "a 2-layer, d=128 decoder with 16 heads, 8 of them Hard-ALiBi with windows 1..8 as in the reference "
        "code (~0.4M parameters; the paper's model is far larger); 2000 AdamW steps of 32 problems per arm "
        "at lr 3e-3, the value every arm chose from {3e-3, 1e-2} in earlier runs, for ours and TP + NoPE "
        "(a budget set by 10 minutes on 2 CPU cores for 2 arms x 3 seeds; TP + learned positions runs "
        "at medium and full); our own addition Turing Program (the paper's "
        "exact format and hyper-parameters are not given); 300 test problems per length, the same for "
        "every arm."
    ),
)


def _verifier_roundtrip(seed: int) -> float:
    """1.0 iff reference programs verify and a one-token corruption of each does not."""
    gen = torch.Generator().manual_seed(seed)
    task = AdditionTask(1, 6)
    ok = True
    for n in range(1, 7):
        for a, b in task.problems(4, n, gen):
            toks = addition_program(a, b)
            ok &= verify_addition_program(toks).valid
            bad = list(toks)
            i = len(bad) - 3  # a digit of the answer line
            bad[i] = "0" if bad[i] != "0" else "1"
            ok &= not verify_addition_program(bad).valid
    return float(ok)


@dataclass(frozen=True)
class _Trained:
    """One finished training run (picklable: it crosses process boundaries)."""

    config: TuringProgramsCheckConfig
    arm: str
    state: dict[str, torch.Tensor]
    losses: tuple[float, ...]
    val_exact: float
    val_loss: float
    seconds: float

    def model(self) -> TinyDecoder:
        model = _build(self.config, self.arm)
        model.load_state_dict(self.state)
        return model.to(self.config.device).eval()


def _build(config: TuringProgramsCheckConfig, arm: str) -> TinyDecoder:
    fmt, pos = ARM_SPECS[arm]
    task = AdditionTask(config.train_min_len, config.train_max_len, fmt)  # type: ignore[arg-type]
    max_len = max(task.sequence_length(n) for n in (*config.test_lengths(), config.train_max_len)) + 2
    return TinyDecoder(config.decoder(len(Tokenizer()), pos, max_len))


def train_arm(config: TuringProgramsCheckConfig, arm: str, lr: float, seed: int) -> _Trained:
    """Train one arm at one learning rate and seed; score it on validation problems at the training lengths.

    A pure function of its arguments (own generators, one thread unless ``config.threads == 0``), so it
    gives the same weights in a worker process as in this one.
    """
    if config.threads:
        torch.set_num_threads(config.threads)
    fmt, _ = ARM_SPECS[arm]
    tok = Tokenizer()
    task = AdditionTask(config.train_min_len, config.train_max_len, fmt)  # type: ignore[arg-type]
    torch.manual_seed(seed)
    model = _build(config, arm).to(config.device)
    hist = train_decoder(model, task, tok, replace(config.train, lr=float(lr)), seed=seed)
    gen = torch.Generator().manual_seed(10_000 + seed)  # validation problems: fresh, training lengths
    per = max(1, config.n_val // (config.train_max_len - config.train_min_len + 1))
    exact, losses = [], []
    with torch.no_grad():
        for n in range(config.train_min_len, config.train_max_len + 1):
            batch = task.encode(task.problems(per, n, gen), tok)
            exact.append(float(teacher_forced_exact_match(model, batch)[0].float().mean()))
            losses.append(float(sequence_loss(model, batch)))
    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    return _Trained(
        config, arm, state, hist.train_loss, float(np.mean(exact)), float(np.mean(losses)), hist.seconds
    )


@dataclass
class _Cache:
    runs: dict[Any, _Trained] = field(default_factory=dict)


class TuringProgramsCheck(ClaimCheck[TuringProgramsCheckConfig]):
    slug = "turing_programs"
    claim = CLAIM
    presets = {
        "tiny": TuringProgramsCheckConfig(
            train_max_len=2,
            n_test=16,
            n_greedy=8,
            n_val=16,
            d_model=32,
            n_layers=1,
            n_heads=4,
            n_hard=2,
            train=TrainConfig(steps=40, batch_size=8, lr=3e-3, warmup_steps=5),
            lr_grid=(3e-3,),
            arms=("tp_hard_alibi", "tp_nope", "direct_hard_alibi"),
            workers=1,
        ),
        "small": _DEFAULT,
        # one GPU, about 30 minutes (sized, not yet timed on a GPU): 1..5-digit training, tests at 5, 8 and
        # 10 digits, a 4-layer width-256 decoder (16 heads, 8 hard as in the reference code) and 8000 steps
        # of 64 problems per run
        "medium": TuringProgramsCheckConfig(
            train_max_len=5,
            n_test=400,
            n_greedy=32,
            n_val=128,
            d_model=256,
            n_layers=4,
            n_heads=16,
            n_hard=8,
            train=TrainConfig(steps=8000, batch_size=64, lr=1e-3, warmup_steps=200),
            lr_grid=(3e-4, 1e-3),
            arms=("tp_hard_alibi", "tp_nope", "tp_learned", "direct_hard_alibi"),
            threads=0,
            workers=1,
            device="cuda",
        ),
        # the paper's setting as far as it is stated: 1..50-digit training, tests to 100 digits; the model
        # and optimiser follow the Hard-ALiBi reference code (12 layers, width 1024, 16 heads, 8 of them
        # hard with windows 1..8), lr 1e-5 and batch 8 as there; the steps are our guess
        "full": TuringProgramsCheckConfig(
            train_max_len=50,
            extra_lengths=(60, 75, 90, 100),
            n_test=200,
            n_greedy=50,
            n_val=256,
            d_model=1024,
            n_layers=12,
            n_heads=16,
            n_hard=8,
            train=TrainConfig(steps=200_000, batch_size=8, lr=1e-5, warmup_steps=1000),
            lr_grid=(1e-5, 3e-5, 1e-4),
            arms=("tp_hard_alibi", *BASELINES, "tp_rope"),
            threads=0,
            workers=1,
        ),
    }
    default_seeds = {"tiny": 1, "small": 3, "medium": 3, "full": 3}

    def __init__(self) -> None:
        self._cache = _Cache()
        self._pool: WorkerPool | None = None

    def claim_for(self, config: TuringProgramsCheckConfig) -> Claim:
        """Criteria follow the arms and thresholds of ``config``."""
        baselines = tuple(a for a in config.arms if a != OURS)
        return replace(CLAIM, baselines=baselines, criteria=_criteria(config), gates=_gates(config))

    def begin_run(self, config: TuringProgramsCheckConfig) -> None:
        """A fresh learning-rate sweep cache for every run."""
        self._cache = _Cache()
        self._pool = WorkerPool(config.workers)

    def end_run(self) -> None:
        """Shut the worker pool down (cancelling queued runs) and drop the cache."""
        if self._pool is not None:
            self._pool.close()
        self._pool = None
        self._cache = _Cache()

    # -- training with the shared learning-rate sweep -----------------------------------------

    def _submit(self, config: TuringProgramsCheckConfig, jobs: Sequence[tuple[str, float, int]]) -> None:
        """Queue every ``(arm, lr, seed)`` job not yet trained or queued on the pool (``workers`` > 1, at
        most the run's thread budget: in a one-thread slot every run trains here, at the same one thread
        as a worker, so the numbers are the same)."""
        if self._pool is None:
            self._pool = WorkerPool(config.workers)
        for arm, lr, seed in dict.fromkeys(jobs):
            if (config, arm, lr, seed) not in self._cache.runs:
                self._pool.submit((config, arm, lr, seed), train_arm, config, arm, lr, seed)

    def _ensure_trained(
        self, config: TuringProgramsCheckConfig, jobs: Sequence[tuple[str, float, int]], ctx: RunContext
    ) -> None:
        """Have every ``(arm, lr, seed)`` job trained: queued ones are awaited, the rest are queued
        (``workers`` > 1) or trained here. Each job is a pure function of its arguments, so the order
        and the process it runs in change no number."""
        todo = [j for j in dict.fromkeys(jobs) if (config, *j) not in self._cache.runs]
        if not todo:
            return
        ctx.progress("train", 0, len(todo))
        self._submit(config, todo)
        for i, (arm, lr, seed) in enumerate(todo):
            key = (config, arm, lr, seed)
            queued = self._pool is not None and self._pool.queued(key)
            self._cache.runs[key] = self._pool.take(key) if queued else train_arm(config, arm, lr, seed)  # type: ignore[union-attr]
            ctx.progress("train", i + 1, len(todo))

    def _lrs(self, config: TuringProgramsCheckConfig, ctx: RunContext) -> dict[str, float]:
        """Each arm's learning rate: the best of ``lr_grid`` on validation, trained at ``sweep_seed``."""
        jobs = [(arm, float(lr), config.sweep_seed) for arm in config.arms for lr in config.lr_grid]
        if len(config.lr_grid) == 1:  # nothing to choose: queue every planned seed's runs now
            lr = float(config.lr_grid[0])
            later = [s for s in self.planned_seeds if s != config.sweep_seed]
            self._submit(config, jobs + [(arm, lr, s) for s in later for arm in config.arms])
            return dict.fromkeys(config.arms, lr)
        self._ensure_trained(config, jobs, ctx)
        out = {}
        for arm in config.arms:
            runs = [
                (self._cache.runs[(config, arm, float(lr), config.sweep_seed)], float(lr))
                for lr in config.lr_grid
            ]
            out[arm] = max(runs, key=lambda r: (r[0].val_exact, -r[0].val_loss))[1]
        return out

    # -- one seed -------------------------------------------------------------------------------

    def run_seed(self, config: TuringProgramsCheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        if config.threads:
            torch.set_num_threads(config.threads)
        tok = Tokenizer()
        mult = config.multiple_lengths()
        metrics: dict[str, dict[str, float]] = {}
        series: dict[str, Any] = {"lengths": list(config.test_lengths())}
        lrs = self._lrs(config, ctx)
        later = [s for s in self.planned_seeds if s > seed] if seed in self.planned_seeds else []
        self._submit(config, [(arm, lrs[arm], s) for s in (seed, *later) for arm in config.arms])
        self._ensure_trained(config, [(arm, lrs[arm], seed) for arm in config.arms], ctx)
        models: dict[str, TinyDecoder] = {}
        items: dict[str, dict[str, np.ndarray]] = {}
        torch.manual_seed(seed)
        untrained = _build(config, OURS).to(config.device).eval()  # the reference: ours before training
        for arm in (*config.arms, UNTRAINED):
            fmt, _ = ARM_SPECS[OURS if arm == UNTRAINED else arm]
            task = AdditionTask(config.train_min_len, config.train_max_len, fmt)  # type: ignore[arg-type]
            ctx.progress(f"evaluate {arm}", 0, 1)
            model = untrained if arm == UNTRAINED else self._cache.runs[(config, arm, lrs[arm], seed)].model()
            ev = length_generalization_eval(
                model,
                task,
                tok,
                lengths=config.test_lengths(),
                n_per_length=config.n_test,
                n_greedy=config.n_greedy,
                seed=seed,
                per_item=True,
            )
            m: dict[str, float] = {}
            for n, row in ev.items():
                for key, value in row.items():
                    if not isinstance(value, np.ndarray):
                        m[f"{key}_n{n}"] = value
            items[arm] = {}
            for name, n in mult.items():
                items[arm][f"exact_{name}"] = ev[n]["exact_items"]  # same problems, same order, every arm
                m[f"exact_{name}"] = ev[n]["exact"]
                m[f"token_acc_{name}"] = ev[n]["token_acc"]
                if "greedy_answer" in ev[n]:
                    m[f"greedy_answer_{name}"] = ev[n]["greedy_answer"]
            series[arm] = {
                "exact": [ev[n]["exact"] for n in config.test_lengths()],
                "token_acc": [ev[n]["token_acc"] for n in config.test_lengths()],
                "greedy_answer": [ev[n].get("greedy_answer", float("nan")) for n in config.test_lengths()],
            }
            if arm != UNTRAINED:
                run = self._cache.runs[(config, arm, lrs[arm], seed)]
                models[arm] = model
                m.update({"lr": float(lrs[arm]), "val_exact": run.val_exact, "val_loss": run.val_loss})
                k = max(1, len(run.losses) // 10)
                m["final_loss"] = float(np.mean(run.losses[-k:]))
                m["loss_ratio"] = m["final_loss"] / float(np.mean(run.losses[:k]))
                m["train_seconds"] = run.seconds
                series[arm]["losses"] = [round(v, 5) for v in run.losses[:: max(1, len(run.losses) // 100)]]
            metrics[arm] = m
        ours = metrics[OURS]
        for arm in config.arms:
            if arm != OURS:
                ours[f"gap_2x_{arm}"] = ours["exact_2x"] - metrics[arm]["exact_2x"]
        ours["verifier_roundtrip"] = _verifier_roundtrip(seed)
        ours["tf_greedy_agreement"] = _tf_greedy_agreement(models[OURS], config, seed)
        return SeedOutcome(metrics=metrics, series=series, items=items)

    def make_figures(
        self, config: TuringProgramsCheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext
    ) -> None:
        from icml25.core.plotting import arm_color, new_figure, plot_band

        lengths = list(config.test_lengths())
        claim = self.claim_for(config)
        fig, axes = new_figure(ncols=3, width=3.6)
        panels = (
            ("exact", "teacher-forced exact match"),
            ("token_acc", "teacher-forced token accuracy"),
            ("greedy_answer", "greedy answer accuracy"),
        )
        for j, (key, label) in enumerate(panels):
            ax = axes[j]
            for arm in (*config.arms, UNTRAINED):
                curves = [[float(v) for v in o.series[arm][key]] for o in outcomes]
                plot_band(ax, lengths, curves, label=arm, color=arm_color(arm, claim.ours, claim.baselines))
            ax.axvline(config.train_max_len, color="grey", ls=":", lw=1)
            ax.set(xlabel="operand length n (digits)", ylabel=label, ylim=(-0.03, 1.03), title=label)
        axes[0].legend()
        ctx.save_figure(
            fig,
            "accuracy_vs_length",
            f"Exact match against operand length per arm (mean and min-max over seeds); training lengths "
            f"{config.train_min_len}..{config.train_max_len} (dotted line). Left: teacher-forced exact "
            "match of the whole continuation; middle: fraction of its tokens right under teacher forcing; "
            "right: answer accuracy of greedy decoding on a subset.",
        )


@torch.no_grad()
def _tf_greedy_agreement(model: TinyDecoder, config: TuringProgramsCheckConfig, seed: int) -> float:
    """Fraction of problems where teacher-forced exact match equals greedy reproduction of the reference."""
    tok = Tokenizer()
    task = AdditionTask(config.train_min_len, config.train_max_len, "turing")
    gen = torch.Generator().manual_seed(20_000 + seed)
    agree, total = 0, 0
    for n in range(config.train_min_len, config.train_max_len + 1):
        batch = task.encode(task.problems(8, n, gen), tok)
        exact = teacher_forced_exact_match(model, batch)[0]
        p = int(batch.prompt_len[0])
        out = greedy_decode(
            model, batch.tokens[:, :p], max_new=int(batch.length.max()) - p, eos=tok.eos, pad=tok.pad
        )
        for i in range(batch.tokens.shape[0]):
            L = int(batch.length[i])
            same = out.shape[1] >= L and bool(torch.equal(out[i, :L], batch.tokens[i, :L]))
            agree += same == bool(exact[i])
            total += 1
    return agree / total


CHECK = TuringProgramsCheck()
