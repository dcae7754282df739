"""Claim check for *NICE Data Selection for Instruction Tuning in LLMs with Non-differentiable
Evaluation Metric* (Wang et al., ICML 2025, https://openreview.net/forum?id=2wt8m5HUBs).

Claim: a 5 % subset chosen by NICE's policy-gradient influence on the real metric fine-tunes better
than one chosen by LESS's next-token-loss influence or at random, and often better than the full pool.

Setup (:mod:`.arithmetic`): a verifiable arithmetic pool where the validation references are a noisy
proxy for the metric. Target: additions of ``digits``-digit numbers held out by a fixed rule; metric:
the last integer of the greedy answer equals the sum (a verifier that parses the prompt, so NICE is
label-free here); references are verbose, and the pool mixes terse-correct (P1), verbose-wrong (P2,
the last digit raised by one), verbose-correct (P3) and distractor (P4) examples. At ``small`` the
base model is a 2-layer Llama on bytes pretrained here (once per run, shared by the seeds); it
memorises the sums of the operand pairs it saw and does not generalise addition to unseen ones
(pretrained without the test pairs it solves about 8 % of them and no retraining moves that). So the
``retraining_can_help`` gate measures whether any selection can lift it above the base. A base with
a habit that clean data could repair (a rambling tail after the answers of a fixed share of pairs)
is kept behind ``flaw_share`` (default 0): at 0.4 it collapsed the base to 9 % instead of about 50 %.
SmolLM2-135M-Instruct is the ``medium`` (one GPU) and ``full`` model (a LoRA step of it takes ~3 s
on this CPU, so per-subset fine-tuning of it does not fit the small budget).

Per seed: new pool, validation, dev and test prompts; LoRA warm-up on a random 5 % of the pool for
``warmup_epochs`` epochs keeping each epoch's LoRA weights and Adam moments; Adam-preconditioned,
randomly projected per-example LoRA gradients of the pool; validation vectors from ``n_val``
prompts: ``nice`` = the official "vanilla" weighting (w_k = r_k over ``num_samples`` samples, no
baseline; ``weighting`` switches it), ``nice_baseline`` = REINFORCE with a mean-reward baseline from
the same samples (a variant, reported), ``less`` = NTP gradient of the verbose reference; top
fractions; a ``random`` subset of the same size; the ``full`` pool. References (never baselines):
``base`` (the untouched model) and ``oracle_5`` (a positive control: a same-size random draw from
the correct target-format examples P1 and P3 only, i.e. what a perfect selector could buy). Every
trained arm is LoRA-retrained from the base for the same steps with the same lr grid, the lr picked
by :func:`icml25.core.tuning.best_on_validation` on ``n_dev`` dev prompts; metric = greedy accuracy on
``n_test`` test prompts, kept per prompt so that arms are paired over seeds and prompts.

Gates (point conditions, margin ``GATE_MARGIN`` = 0.02): the oracle 5 % beats the base model
(``retraining_can_help``: the recipe can improve the model) and beats the random 5 %
(``selection_matters``: which examples are chosen changes the result).

Criteria (declared before any small number of this design was seen): headline ``nice_beats_less_5``,
NICE's test accuracy minus LESS's, paired over seeds and test prompts (two-stage bootstrap); it holds
when the interval lies above 0 and fails when it excludes +0.02 (``ACC_EFFECT``, declared: two
accuracy points). The same against the random 5 %; and NICE's selection holds a smaller share of
P2 than LESS's (paired over seeds, smallest effect 0.05). The full pool is reported, not judged (the
paper says NICE "often" beats it). Tiny checks mechanics only (scores finite, warm-up loss falls).
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from icml25.core.check import ClaimCheck, RunContext, SeedOutcome
from icml25.core.claims import Claim, Criterion
from icml25.core.tuning import best_on_validation
from icml25.core.validate import check_fields, check_in_range

from .arithmetic import (
    GROUPS,
    addition_reward,
    answer_text,
    base_corpus,
    heldout_pair,
    make_pool,
    target_prompts,
)
from .features import RandomProjector, example_gradients, trainable_parameters
from .lora import LoraTrainConfig, checkpoint_features, encode_examples, load_checkpoint, train_lora
from .policy import generate, reward_weights, weighted_nll_gradient
from .selection import checkpoint_weights, influence_scores, select_top_fraction

SELECTORS = ("nice", "less", "random")
WEIGHTINGS = ("vanilla", "baseline")
#: smallest effect of interest on test accuracy (fraction of test prompts solved)
ACC_EFFECT = 0.02
ACC_EFFECT_SOURCE = (
    "declared: 2 accuracy points, the smallest gain of one 5% selection over another that we would call "
    "better (the paper reports gains of a few points but we recovered no exact numbers)"
)
#: smallest effect of interest on the share of harmful P2 examples in a selection
SHARE_EFFECT = 0.05
#: the gates' margins (accuracy points on the test prompts)
GATE_MARGIN = 0.02


@dataclass(frozen=True)
class NICECheckConfig:
    """One claim-check configuration.

    Args:
        model: ``"tiny-pretrained"`` (a byte-level Llama pretrained here on the base corpus),
            ``"smollm2-135m-instruct"`` or any path :func:`icml25.llm.models.load_causal_lm` accepts.
        digits: operand digits of the target additions.
        hidden, layers, heads: the tiny model.
        pretrain_steps, pretrain_batch, pretrain_lr, target_share, pretrain_seed: its pretraining.
        pretrain_sees_targets: the base corpus may hold the held-out operand pairs (pretrained
            knowledge that the pool can reinforce or damage); the pool never does.
        flaw_share: the share of target-length operand pairs after whose right answer the base corpus
            always rambles (`` +1``, :func:`.arithmetic.flawed_pair`): a habit of the base model that
            clean instruction data can train away (0: none).
        pool_size, shares, corruption: the pool, its P1-P4 proportions and how P2's sums are wrong
            (see :func:`.arithmetic.make_pool`).
        n_val, n_dev, n_test: validation prompts (selection), dev prompts (lr choice), test prompts.
        warmup_fraction, warmup_epochs, warmup_lr, warmup_batch: the LESS warm-up (paper: 5 %, 4 epochs).
        lora_r, lora_alpha, lora_dropout: adapters (paper: 128, 512, 0.1 on q/k/v/o).
        proj_dim: d of the random projection (paper: 8192; 0 = no projection).
        weighting: the policy-gradient weights of the ``nice`` arm: ``"vanilla"`` (w_k = r_k, the
            official default) or ``"baseline"`` (REINFORCE with the mean reward as baseline); the
            other weighting, computed from the same samples, is the ``nice_<other>`` variant arm.
        num_samples, temperature, top_k, top_p, max_new_tokens: NICE's sampling (paper: m = 20).
        fractions: selected fractions of the pool (paper: 5 %); the first one is judged.
        retrain_steps, retrain_batch, lrs: retraining, equal for every arm, and the shared lr grid.
    """

    model: str = "tiny-pretrained"
    digits: int = 2
    hidden: int = 64
    layers: int = 2
    heads: int = 4
    pretrain_steps: int = 2000
    pretrain_batch: int = 32
    pretrain_lr: float = 5e-3
    target_share: float = 0.3
    pretrain_seed: int = 0
    pretrain_sees_targets: bool = True
    flaw_share: float = 0.0
    pool_size: int = 1000
    shares: tuple[float, ...] = (0.3, 0.3, 0.1, 0.3)
    corruption: str = "last_digit_plus_one"
    n_val: int = 32
    n_dev: int = 100
    n_test: int = 1000
    warmup_fraction: float = 0.05
    warmup_epochs: int = 3
    warmup_lr: float = 2e-3
    warmup_batch: int = 8
    lora_r: int = 8
    lora_alpha: int = 32
    lora_dropout: float = 0.1
    proj_dim: int = 1024
    weighting: str = "vanilla"
    num_samples: int = 16
    temperature: float = 1.0
    top_k: int = 50
    top_p: float = 0.95
    max_new_tokens: int = 20
    fractions: tuple[float, ...] = (0.05,)
    retrain_steps: int = 20
    retrain_batch: int = 16
    lrs: tuple[float, ...] = (5e-4, 2e-3)

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=(
                "digits",
                "hidden",
                "layers",
                "heads",
                "pretrain_steps",
                "pretrain_batch",
                "pool_size",
                "n_val",
                "n_dev",
                "n_test",
                "warmup_epochs",
                "warmup_batch",
                "lora_r",
                "lora_alpha",
                "num_samples",
                "max_new_tokens",
                "retrain_steps",
                "retrain_batch",
            ),
            non_negative_int=("proj_dim", "top_k", "pretrain_seed"),
            positive=("pretrain_lr", "warmup_lr", "temperature"),
        )
        check_in_range("NICECheckConfig.target_share", self.target_share, 0.0, 0.75)
        check_in_range("NICECheckConfig.flaw_share", self.flaw_share, 0.0, 1.0)
        check_in_range("NICECheckConfig.warmup_fraction", self.warmup_fraction, 0.0, 1.0, low_open=True)
        check_in_range("NICECheckConfig.lora_dropout", self.lora_dropout, 0.0, 1.0, high_open=True)
        check_in_range("NICECheckConfig.top_p", self.top_p, 0.0, 1.0, low_open=True)
        if not 2 <= self.digits <= 4:
            raise ValueError(f"NICECheckConfig.digits must be in [2, 4], got {self.digits}")
        if self.weighting not in WEIGHTINGS:
            raise ValueError(f"NICECheckConfig.weighting must be one of {WEIGHTINGS}, got {self.weighting!r}")
        if len(self.shares) != 4 or abs(sum(self.shares) - 1) > 1e-6 or min(self.shares) < 0:
            raise ValueError(
                f"NICECheckConfig.shares must be four non-negative shares summing to 1, got {self.shares}"
            )
        if not self.fractions or any(not (0 < f <= 1) for f in self.fractions):
            raise ValueError(
                f"NICECheckConfig.fractions must be a non-empty tuple in (0, 1], got {self.fractions}"
            )
        if len({_pct(f) for f in self.fractions}) != len(self.fractions):
            raise ValueError(f"NICECheckConfig.fractions must differ in whole percents, got {self.fractions}")
        if not self.lrs or any(not (v > 0 and math.isfinite(v)) for v in self.lrs):
            raise ValueError(
                f"NICECheckConfig.lrs must be a non-empty tuple of positive floats, got {self.lrs}"
            )
        if self.hidden % self.heads:
            raise ValueError("NICECheckConfig.hidden must be a multiple of NICECheckConfig.heads")
        if self.corruption not in ("random_digit", "last_digit_plus_one"):
            raise ValueError(
                "NICECheckConfig.corruption must be random_digit or last_digit_plus_one, "
                f"got {self.corruption!r}"
            )
        if self.model.startswith("openai:"):
            raise ValueError("NICECheckConfig.model: gradient features need local weights, not an endpoint")

    @property
    def variant(self) -> str:
        """The selector name of the NICE weighting that the ``nice`` arm does not use."""
        other = next(w for w in WEIGHTINGS if w != self.weighting)
        return f"nice_{other}"


def _pct(frac: float) -> int:
    return round(frac * 100)


def _arm(selector: str, frac: float) -> str:
    return f"{selector}_{_pct(frac)}"


def build_claim(config: NICECheckConfig) -> Claim:
    """The claim for ``config``'s fractions (the first one is judged) and NICE weighting."""
    f0 = config.fractions[0]
    ours, less, rand, oracle = (_arm(s, f0) for s in ("nice", "less", "random", "oracle"))
    criteria = (
        Criterion(
            name=f"nice_beats_less_{_pct(f0)}",
            arm=ours,
            metric="acc",
            op=">",
            other_arm=less,
            smallest_effect=ACC_EFFECT,
            effect_source=ACC_EFFECT_SOURCE,
            description=f"test accuracy after retraining on NICE's {_pct(f0)}% above LESS's, paired over "
            "seeds and test prompts",
        ),
        Criterion(
            name=f"nice_beats_random_{_pct(f0)}",
            arm=ours,
            metric="acc",
            op=">",
            other_arm=rand,
            smallest_effect=ACC_EFFECT,
            effect_source=ACC_EFFECT_SOURCE,
            description=f"test accuracy after retraining on NICE's {_pct(f0)}% above a random {_pct(f0)}%'s, "
            "paired over seeds and test prompts",
        ),
        Criterion(
            name=f"nice_fewer_harmful_{_pct(f0)}",
            arm=ours,
            metric="share_P2",
            op="<",
            other_arm=less,
            smallest_effect=SHARE_EFFECT,
            effect_source="declared: 5 points of the selection's share of wrong verbose (P2) examples",
            description="NICE's selection holds a smaller share of wrong verbose examples (P2) than LESS's "
            "(paired over seeds)",
        ),
        Criterion(
            name="tiny_scores_finite",
            arm=ours,
            metric="scores_finite",
            op=">=",
            threshold=1.0,
            scales=("tiny",),
            description="smoke: every NICE influence score is finite",
        ),
        Criterion(
            name="tiny_warmup_loss_falls",
            arm="base",
            metric="warmup_loss_ratio",
            op="<",
            threshold=1.0,
            scales=("tiny",),
            description="smoke: the warm-up's last loss is below its first",
        ),
    )
    gates = (
        Criterion(
            name="retraining_can_help",
            arm=oracle,
            metric="gain_base",
            op=">=",
            threshold=GATE_MARGIN,
            description=f"retraining on an oracle {_pct(f0)}% (correct target-format examples only) lifts "
            f"test accuracy at least {GATE_MARGIN:g} above the untouched base model: the recipe can improve "
            "the model, so the arms do not just compare ways of losing accuracy",
        ),
        Criterion(
            name="selection_matters",
            arm=oracle,
            metric="gap_random",
            op=">=",
            threshold=GATE_MARGIN,
            description=f"the oracle {_pct(f0)}% beats a random {_pct(f0)}% by at least {GATE_MARGIN:g}: "
            "which examples are selected changes the result",
        ),
    )
    baselines = [less, rand, _arm(config.variant, f0)]
    baselines += [_arm(s, f) for f in config.fractions[1:] for s in (*SELECTORS, config.variant)]
    return Claim(
        statement=(
            "Retraining on the 5% of an instruction pool chosen by NICE's policy-gradient influence on a "
            "non-differentiable metric beats LESS's next-token-loss influence and random 5% subsets on that "
            "metric, without needing reference answers."
        ),
        source=(
            "Section 4 (Tables 1-3): NICE vs LESS, random and full data on AlpacaEval, TL;DR, HH-RLHF and "
            "HumanEval"
        ),
        ours=ours,
        baselines=(*baselines, "full"),
        references=("base", oracle),
        controls=(oracle,),
        criteria=criteria,
        gates=gates,
        headline=f"nice_beats_less_{_pct(f0)}",
        min_seeds=3,
        setup_notes=(
            "A verifiable arithmetic pool (terse-correct, verbose-wrong, verbose-correct, distractors) with "
            "verbose references, a 2-layer byte-level Llama pretrained here instead of 7-8B LLMs, LoRA r=8 "
            "instead of 128, a 1024-dimensional projection, 16 samples per validation prompt; NICE uses the "
            f"{config.weighting} weighting ({config.variant} is the other one, from the same samples)."
        ),
    )


CLAIM = build_claim(NICECheckConfig())


class _Codec:
    """Text <-> ids: UTF-8 bytes (eos 256) for the tiny model, or a Hugging Face tokenizer."""

    def __init__(self, tokenizer: Any = None) -> None:
        self.tokenizer = tokenizer
        if tokenizer is None:
            self.eos_id = self.pad_id = 256
        else:
            self.eos_id = int(tokenizer.eos_token_id)
            self.pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id)

    def encode(self, text: str) -> list[int]:
        if self.tokenizer is None:
            return list(text.encode("utf-8"))
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: Sequence[int]) -> str:
        ids = [i for i in ids if i != self.eos_id]
        if self.tokenizer is None:
            return bytes(i for i in ids if 0 <= i < 256).decode("utf-8", "replace")
        return str(self.tokenizer.decode(ids, skip_special_tokens=True))


_BASE_CACHE: dict[tuple[Any, ...], tuple[Any, list[float]]] = {}


def _base_model(config: NICECheckConfig, ctx: RunContext) -> tuple[Any, _Codec, list[float]]:
    """The base model (pretrained here once per process and configuration for ``tiny-pretrained``)."""
    if config.model != "tiny-pretrained":
        from icml25.llm.models import load_causal_lm

        model, tokenizer = load_causal_lm(config.model)
        return model, _Codec(tokenizer), []
    key = (
        config.digits,
        config.hidden,
        config.layers,
        config.heads,
        config.pretrain_steps,
        config.pretrain_batch,
        config.pretrain_lr,
        config.target_share,
        config.pretrain_seed,
        config.pretrain_sees_targets,
        config.flaw_share,
    )
    codec = _Codec(None)
    if key not in _BASE_CACHE:
        from icml25.language.selekt.finetune import completion_loss
        from icml25.llm.models import tiny_random_llama
        from icml25.nn.train import FitConfig, fit

        model = tiny_random_llama(
            hidden_size=config.hidden,
            intermediate_size=2 * config.hidden,
            num_hidden_layers=config.layers,
            num_attention_heads=config.heads,
            num_key_value_heads=config.heads,
            max_position_embeddings=64,
            seed=config.pretrain_seed,
            eos_token_id=256,
            pad_token_id=256,
            bos_token_id=256,
        )
        corpus = base_corpus(
            config.pretrain_steps * config.pretrain_batch,
            seed=config.pretrain_seed,
            digits=config.digits,
            target_share=config.target_share,
            exclude=None if config.pretrain_sees_targets else heldout_pair,
            flaw_share=config.flaw_share,
        )
        data = encode_examples(
            [codec.encode(p) for p, _ in corpus], [codec.encode(r) for _, r in corpus], eos_id=256, pad_id=256
        )
        cfg = FitConfig(
            steps=config.pretrain_steps,
            batch_size=config.pretrain_batch,
            lr=config.pretrain_lr,
            warmup_steps=min(50, config.pretrain_steps // 10),
            grad_clip=1.0,
            keep_best=False,
        )
        history = fit(
            model,
            completion_loss,
            data,
            cfg,
            seed=config.pretrain_seed,
            progress=lambda d, t: ctx.progress("pretrain base model", d, t),
        )
        model.eval()
        _BASE_CACHE[key] = (model, list(history.train_loss))
    model, losses = _BASE_CACHE[key]
    return model, codec, losses


def _item_scores(model: Any, codec: _Codec, pairs: Sequence[tuple[int, int]], max_new: int) -> list[float]:
    """Per-prompt metric (1.0 when the last integer of the greedy answer is the sum), in ``pairs``' order."""
    by_len: dict[int, list[int]] = {}
    prompts = [codec.encode(f"{a}+{b}=") for a, b in pairs]
    for i, p in enumerate(prompts):
        by_len.setdefault(len(p), []).append(i)
    scores = [0.0] * len(pairs)
    for idx in by_len.values():
        for start in range(0, len(idx), 128):
            chunk = idx[start : start + 128]
            outs = generate(
                model, torch.tensor([prompts[i] for i in chunk]), max_new_tokens=max_new, eos_id=codec.eos_id
            )
            for i, out in zip(chunk, outs, strict=True):
                a, b = pairs[i]
                scores[i] = addition_reward(f"{a}+{b}=", codec.decode(out))
    return scores


def _accuracy(model: Any, codec: _Codec, pairs: Sequence[tuple[int, int]], max_new: int) -> float:
    return statistics.fmean(_item_scores(model, codec, pairs, max_new))


#: The paper's configuration (SmolLM2 with its adapters, 3-digit sums); ``medium`` shrinks it.
_FULL = NICECheckConfig(
    model="smollm2-135m-instruct",
    digits=3,
    pool_size=3000,
    n_val=32,
    n_dev=100,
    n_test=1000,
    warmup_epochs=4,
    warmup_lr=2e-5,
    warmup_batch=8,
    lora_r=128,
    lora_alpha=512,
    proj_dim=8192,
    num_samples=20,
    max_new_tokens=24,
    retrain_steps=300,
    retrain_batch=8,
    lrs=(2e-5, 1e-4),
)


class NICECheck(ClaimCheck[NICECheckConfig]):
    slug = "nice"
    claim = CLAIM
    presets = {
        "tiny": NICECheckConfig(
            hidden=32,
            pretrain_steps=20,
            pretrain_batch=16,
            pool_size=40,
            n_val=3,
            n_dev=8,
            n_test=16,
            warmup_fraction=0.2,
            warmup_epochs=3,
            warmup_lr=2e-2,
            warmup_batch=8,
            lora_r=2,
            lora_alpha=8,
            proj_dim=64,
            num_samples=4,
            max_new_tokens=8,
            retrain_steps=3,
            retrain_batch=4,
            lrs=(3e-3,),
        ),
        "small": NICECheckConfig(),
        # one GPU, about 30 minutes: SmolLM2 generalises arithmetic and format across operand pairs,
        # which the tiny model at small does not (it memorises), so retraining can improve on it;
        # the paper's configuration on a third of the pool and half the retraining steps
        "medium": replace(_FULL, pool_size=1000, retrain_steps=150),
        "full": _FULL,
    }
    default_seeds = {"tiny": 1, "small": 5, "medium": 3, "full": 3}

    def claim_for(self, config: NICECheckConfig) -> Claim:
        return build_claim(config)

    def run_seed(self, config: NICECheckConfig, seed: int, ctx: RunContext) -> SeedOutcome:
        t0 = time.perf_counter()
        seconds: dict[str, float] = {}
        base, codec, pre_losses = _base_model(config, ctx)
        seconds["base_model"] = time.perf_counter() - t0
        enc = codec.encode
        pairs = target_prompts(
            config.n_val + config.n_dev + config.n_test, seed=10_000 + seed, digits=config.digits
        )
        val = pairs[: config.n_val]
        dev = pairs[config.n_val : config.n_val + config.n_dev]
        test = pairs[config.n_val + config.n_dev :]
        pool = make_pool(
            config.pool_size,
            shares=tuple(config.shares),  # type: ignore[arg-type]
            seed=seed,
            digits=config.digits,
            corruption=config.corruption,
        )
        pool_data = encode_examples(
            [enc(p) for p in pool.prompts],
            [enc(r) for r in pool.responses],
            eos_id=codec.eos_id,
            pad_id=codec.pad_id,
        )
        rng = random.Random(seed)
        lora: dict[str, Any] = dict(r=config.lora_r, alpha=config.lora_alpha, dropout=config.lora_dropout)

        # 1. Warm-up on a random slice, keeping each epoch's LoRA weights and Adam moments.
        n_warm = max(1, round(config.warmup_fraction * len(pool)))
        warm_idx = torch.tensor(sorted(rng.sample(range(len(pool)), n_warm)))
        warm = train_lora(
            base,
            tuple(t[warm_idx] for t in pool_data),  # type: ignore[arg-type]
            LoraTrainConfig(
                epochs=config.warmup_epochs,
                batch_size=config.warmup_batch,
                lr=config.warmup_lr,
                checkpoint_every_epoch=True,
                **lora,  # type: ignore[arg-type]
            ),
            seed=seed,
            progress=lambda d, t: ctx.progress("LoRA warm-up", d, t),
        )
        peft_model = warm.model
        seconds["warmup"] = time.perf_counter() - t0 - sum(seconds.values())
        n_params = sum(p.numel() for p in trainable_parameters(peft_model))
        projector = RandomProjector(n_params, config.proj_dim, seed=0) if config.proj_dim else None

        # 2. Training-side features and validation vectors at every checkpoint.
        gen = torch.Generator().manual_seed(seed)
        val_prompts = [torch.tensor(enc(f"{a}+{b}=")) for a, b in val]
        val_refs = encode_examples(
            [enc(f"{a}+{b}=") for a, b in val],
            [enc(answer_text(a + b, "verbose")) for a, b in val],
            eos_id=codec.eos_id,
            pad_id=codec.pad_id,
        )
        weightings = {"nice": config.weighting, config.variant: config.variant.removeprefix("nice_")}
        feats: dict[str, list[torch.Tensor]] = {"train": [], "less": [], **{k: [] for k in weightings}}
        reward_rates = []
        for c, ckpt in enumerate(warm.checkpoints):
            ctx.progress("gradient features", c, len(warm.checkpoints))
            feats["train"].append(checkpoint_features(peft_model, ckpt, pool_data, projector=projector))
            load_checkpoint(peft_model, ckpt)
            params = trainable_parameters(peft_model)
            less = example_gradients(peft_model, val_refs, params=params)
            rows: dict[str, list[torch.Tensor]] = {k: [] for k in weightings}
            for (a, b), prompt in zip(val, val_prompts, strict=True):
                samples = generate(
                    peft_model,
                    prompt,
                    num_samples=config.num_samples,
                    temperature=config.temperature,
                    top_k=config.top_k,
                    top_p=config.top_p,
                    max_new_tokens=config.max_new_tokens,
                    eos_id=codec.eos_id,
                    generator=gen,
                )
                rewards = torch.tensor([addition_reward(f"{a}+{b}=", codec.decode(s)) for s in samples])
                reward_rates.append(float(rewards.mean()))
                for name, mode in weightings.items():
                    w = reward_weights(rewards, mode)  # type: ignore[arg-type]
                    rows[name].append(
                        weighted_nll_gradient(
                            peft_model, prompt, samples, w, params=params, pad_id=codec.pad_id
                        )
                    )
            mats = {"less": less, **{k: torch.stack(v) for k, v in rows.items()}}
            for name, mat in mats.items():
                feats[name].append(projector(mat) if projector is not None else mat)
        seconds["features"] = time.perf_counter() - t0 - sum(seconds.values())
        weights = checkpoint_weights([ck.mean_lr for ck in warm.checkpoints])
        scores = {
            name: influence_scores(feats["train"], feats[name], weights)
            for name in ("nice", config.variant, "less")
        }

        # 3. Subsets: top fractions per selector, random subsets of the same size, the full pool, and
        #    (a reference) an oracle subset of the same size drawn from the correct target-format
        #    examples (P1, P3) only.
        subsets: dict[str, list[int]] = {}
        helpful = [i for i, g in enumerate(pool.groups) if g in ("P1", "P3")]
        for f in config.fractions:
            for name, s in scores.items():
                subsets[_arm(name, f)] = select_top_fraction(s, f).tolist()
            k = len(subsets[_arm("nice", f)])
            subsets[_arm("random", f)] = rng.sample(range(len(pool)), k)
            if f == config.fractions[0]:
                subsets[_arm("oracle", f)] = rng.sample(helpful, min(k, len(helpful)))
        subsets["full"] = list(range(len(pool)))

        # 4. Retrain each from the base with the same steps and lr grid; pick the lr on dev accuracy.
        metrics: dict[str, dict[str, float]] = {}
        series: dict[str, Any] = {
            "dev_acc": {},
            "pretrain_loss": pre_losses[:: max(1, len(pre_losses) // 50)],
        }
        items: dict[str, dict[str, Any]] = {}
        base_items = _item_scores(base, codec, test, config.max_new_tokens)
        base_acc = statistics.fmean(base_items)
        items["base"] = {"acc": np.asarray(base_items)}
        warm_losses = warm.history.train_loss
        metrics["base"] = {
            "acc": base_acc,
            "dev_acc": _accuracy(base, codec, dev, config.max_new_tokens),
            "val_reward_rate": statistics.fmean(reward_rates),
            "warmup_loss_ratio": warm_losses[-1] / warm_losses[0]
            if warm_losses and warm_losses[0] > 0
            else math.nan,
        }
        for done, (arm, idx) in enumerate(subsets.items()):
            ctx.progress("retrain on subsets", done, len(subsets))
            sub = tuple(t[torch.tensor(idx)] for t in pool_data)
            runs = {}
            for lr in config.lrs:
                run = train_lora(
                    base,
                    sub,  # type: ignore[arg-type]
                    LoraTrainConfig(
                        steps=config.retrain_steps, batch_size=config.retrain_batch, lr=lr, **lora
                    ),  # type: ignore[arg-type]
                    seed=seed,
                )
                runs[lr] = (run, _accuracy(run.model, codec, dev, config.max_new_tokens))
                series["dev_acc"][f"{arm}@{lr:g}"] = runs[lr][1]
            best = best_on_validation(runs, lambda r: -r[1])
            run, dev_acc = runs[best]
            test_items = _item_scores(run.model, codec, test, config.max_new_tokens)
            items[arm] = {"acc": np.asarray(test_items)}
            m = {"acc": statistics.fmean(test_items), "dev_acc": dev_acc, "lr": best}
            m["gain_base"] = m["acc"] - base_acc
            m["n_selected"] = float(len(idx))
            m.update({f"share_{g}": v for g, v in pool.shares(idx).items()})
            metrics[arm] = m
            ctx.log(f"{arm}: " + ", ".join(f"{k} {v:.3g}" for k, v in m.items()))
        seconds["retrain"] = time.perf_counter() - t0 - sum(seconds.values())
        series["seconds"] = seconds
        ctx.log("seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in seconds.items()))
        for f in config.fractions:
            for name in ("nice", config.variant):
                m = metrics[_arm(name, f)]
                m["gap_less"] = m["acc"] - metrics[_arm("less", f)]["acc"]
                m["gap_random"] = m["acc"] - metrics[_arm("random", f)]["acc"]
                m["scores_finite"] = float(bool(torch.isfinite(scores[name]).all()))
        f0 = config.fractions[0]
        metrics[_arm("oracle", f0)]["gap_random"] = (
            metrics[_arm("oracle", f0)]["acc"] - metrics[_arm("random", f0)]["acc"]
        )
        series["scores_by_group"] = {
            name: {g: float(s[[i for i, x in enumerate(pool.groups) if x == g]].mean()) for g in GROUPS}
            for name, s in scores.items()
        }
        notes = (
            f"model {config.model} ({n_params} LoRA parameters, projection d={config.proj_dim}); "
            f"pool {len(pool)}; base test accuracy {base_acc:.3f}; mean reward of NICE samples "
            f"{statistics.fmean(reward_rates):.3f}; {config.retrain_steps} retraining steps x batch "
            f"{config.retrain_batch} for every arm; lr grid {config.lrs}",
        )
        return SeedOutcome(metrics=metrics, series=series, notes=notes, items=items)

    def make_figures(self, config: NICECheckConfig, outcomes: Sequence[SeedOutcome], ctx: RunContext) -> None:
        from icml25.core.plotting import new_figure

        claim = build_claim(config)
        f0 = config.fractions[0]
        arms = [*(_arm(s, f0) for s in ("nice", config.variant, "less", "random", "oracle")), "full", "base"]
        fig, axes = new_figure(ncols=2, width=4.2, height=3.2)
        colors = ("C3", "C1", "C0", "C7", "C2", "C5", "k")
        for i, (arm, col) in enumerate(zip(arms, colors, strict=True)):
            vals = [float(o.metrics[arm]["acc"]) for o in outcomes]
            axes[0].bar(i, statistics.fmean(vals), 0.7, color=col, alpha=0.8)
            axes[0].scatter([i] * len(vals), vals, color="k", s=6, zorder=3)
        axes[0].set_xticks(range(len(arms)))
        axes[0].set_xticklabels(arms, rotation=30, fontsize=7)
        axes[0].set_ylabel("held-out accuracy after LoRA retraining")
        sel = arms[:5]
        bottom = [0.0] * len(sel)
        for g, col in zip(GROUPS, ("C2", "C3", "C9", "C7"), strict=True):
            vals = [statistics.fmean(float(o.metrics[n][f"share_{g}"]) for o in outcomes) for n in sel]
            axes[1].bar(range(len(sel)), vals, bottom=bottom, color=col, label=g)
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        axes[1].set_xticks(range(len(sel)))
        axes[1].set_xticklabels(sel, rotation=30, fontsize=7)
        axes[1].set_ylabel(f"composition of the {_pct(f0)}% selection")
        axes[1].legend(
            fontsize=7, title="P1 terse ok, P2 verbose wrong,\nP3 verbose ok, P4 other", title_fontsize=6
        )
        ctx.save_figure(
            fig,
            "accuracy_and_composition",
            "Left: test accuracy per arm (bars: mean; dots: seeds; oracle and base are references). "
            f"Right: group shares of the {_pct(f0)}% selections ({claim.ours} is ours).",
        )


CHECK = NICECheck()
