"""Tests for NICE (NICE Data Selection for Instruction Tuning in LLMs with Non-differentiable
Evaluation Metric, ICML 2025): gradient features, policy-gradient vectors, influence scores,
LoRA warm-up checkpoints, the arithmetic pool, and the claim check at tiny scale."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.language.nice import (
    GROUPS,
    LoraTrainConfig,
    RandomProjector,
    adam_preconditioned_grads,
    addition_reward,
    base_corpus,
    checkpoint_features,
    checkpoint_weights,
    encode_examples,
    example_gradients,
    generate,
    heldout_pair,
    influence_scores,
    last_integer,
    make_pool,
    policy_gradient_vector,
    reward_weights,
    select_top_fraction,
    sequence_nll,
    target_prompts,
    train_lora,
    trainable_parameters,
    weighted_nll_gradient,
)


def _enc(text: str) -> list[int]:
    return list(text.encode())


def _dec(ids: list[int] | tuple[int, ...]) -> str:
    return bytes(i for i in ids if i < 256).decode("utf-8", "replace")


@pytest.fixture(scope="module")
def tiny() -> torch.nn.Module:
    from icml25.llm.models import tiny_random_llama

    return tiny_random_llama(
        hidden_size=16,
        intermediate_size=32,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        eos_token_id=256,
        pad_token_id=256,
        init_std=0.3,
    )


@pytest.fixture(scope="module")
def peft_tiny(tiny: torch.nn.Module) -> torch.nn.Module:
    import copy

    from peft import LoraConfig, get_peft_model

    torch.manual_seed(0)
    model = get_peft_model(
        copy.deepcopy(tiny),
        LoraConfig(
            r=2, lora_alpha=4, lora_dropout=0.0, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"
        ),
    )
    with torch.no_grad():  # non-zero B so that both LoRA factors get gradients
        for p in trainable_parameters(model):
            p.normal_(0, 0.2, generator=torch.Generator().manual_seed(p.numel()))
    return model.eval()


# --- features ---------------------------------------------------------------------------------


def test_projector_is_deterministic_blockwise_and_preserves_inner_products() -> None:
    x = torch.randn(5, 300, generator=torch.Generator().manual_seed(0))
    a = RandomProjector(300, 2048, seed=3, block_rows=64)
    b = RandomProjector(300, 2048, seed=3, block_rows=64)
    ya, yb = a(x), b(x)
    assert ya.shape == (5, 2048) and ya.dtype == torch.float32
    torch.testing.assert_close(ya, yb)
    torch.testing.assert_close(ya, x @ a.matrix() / math.sqrt(2048))
    assert set(a.matrix().unique().tolist()) == {-1.0, 1.0}
    gram, gram_proj = x @ x.T, ya @ ya.T
    assert (gram_proj - gram).abs().max() < 0.25 * gram.diagonal().mean()
    assert a(x[0]).shape == (2048,)


def test_adam_preconditioning_matches_the_formula() -> None:
    g = torch.tensor([[1.0, -2.0, 0.0]])
    m = torch.tensor([0.1, 0.0, -0.3])
    v = torch.tensor([0.01, 0.04, 0.0])
    out = adam_preconditioned_grads(g, m, v, betas=(0.9, 0.999), eps=1e-8)
    m2 = 0.9 * m + 0.1 * g
    v2 = 0.999 * v + 0.001 * g**2
    torch.testing.assert_close(out, m2 / torch.sqrt(v2 + 1e-8))
    with pytest.raises(ValueError, match="exp_avg"):
        adam_preconditioned_grads(g, m[:2], v)
    with pytest.raises(ValueError, match="exp_avg_sq"):
        adam_preconditioned_grads(g, m, -v - 1)


def test_sequence_nll_matches_hf_loss(tiny: torch.nn.Module) -> None:
    ids, labels, attn = encode_examples(
        [_enc("12+3="), _enc("7+8=")], [_enc("15"), _enc("x")], eos_id=256, pad_id=256
    )
    nll, count = sequence_nll(tiny, ids[:1, : int(attn[0].sum())], labels[:1, : int(attn[0].sum())])
    hf = tiny(input_ids=ids[:1, : int(attn[0].sum())], labels=labels[:1, : int(attn[0].sum())]).loss
    torch.testing.assert_close(nll / count, hf.reshape(1), rtol=1e-5, atol=1e-6)
    assert int(count) == 3  # "15" + eos


def test_example_gradients_shape_and_reference(peft_tiny: torch.nn.Module) -> None:
    data = encode_examples(
        [_enc("1+2="), _enc("33+4=")], [_enc("3"), _enc(" the sum is 37 .")], eos_id=256, pad_id=256
    )
    params = trainable_parameters(peft_tiny)
    g = example_gradients(peft_tiny, data, params=params)
    p = sum(q.numel() for q in params)
    assert g.shape == (2, p) and torch.isfinite(g).all()
    n = int(data[2][1].sum())
    loss = peft_tiny(input_ids=data[0][1:, :n], labels=data[1][1:, :n]).loss
    ref = torch.cat([x.reshape(-1) for x in torch.autograd.grad(loss, params)])
    torch.testing.assert_close(g[1], ref, rtol=1e-4, atol=1e-6)


# --- policy gradient --------------------------------------------------------------------------


def test_generate_greedy_matches_hf_and_sampling_is_seeded(tiny: torch.nn.Module) -> None:
    prompt = torch.tensor(_enc("12+34="))
    ours = generate(tiny, prompt, max_new_tokens=6)[0]
    hf = tiny.generate(prompt[None], max_new_tokens=6, do_sample=False, pad_token_id=256, eos_token_id=None)
    assert ours == hf[0, prompt.numel() :].tolist()
    s1 = generate(
        tiny,
        prompt,
        num_samples=4,
        temperature=1.0,
        max_new_tokens=5,
        generator=torch.Generator().manual_seed(1),
    )
    s2 = generate(
        tiny,
        prompt,
        num_samples=4,
        temperature=1.0,
        max_new_tokens=5,
        generator=torch.Generator().manual_seed(1),
    )
    assert s1 == s2 and len(s1) == 4
    top1 = generate(
        tiny, prompt, num_samples=2, temperature=1.0, top_k=1, max_new_tokens=6, generator=torch.Generator()
    )
    assert top1 == [ours, ours]


def test_policy_gradient_equals_manual_reinforce(peft_tiny: torch.nn.Module) -> None:
    prompt = torch.tensor(_enc("5+5="))
    params = trainable_parameters(peft_tiny)

    def reward(p: str, r: str) -> float:
        return float(len(r) % 3)  # any non-differentiable score

    out = policy_gradient_vector(
        peft_tiny,
        prompt,
        reward,
        _dec,
        num_samples=5,
        max_new_tokens=4,
        eos_id=256,
        generator=torch.Generator().manual_seed(0),
        params=params,
    )
    manual = torch.zeros_like(out.vector)
    for resp, r in zip(out.responses, out.rewards.tolist(), strict=True):
        ids = torch.tensor([prompt.tolist() + list(resp)])
        logits = peft_tiny(input_ids=ids).logits[0, :-1]
        logp = torch.log_softmax(logits, -1)[torch.arange(ids.shape[1] - 1), ids[0, 1:]]
        nll = -logp[prompt.numel() - 1 :].sum()
        manual += r * torch.cat([x.reshape(-1) for x in torch.autograd.grad(nll, params)])
    torch.testing.assert_close(out.vector, manual, rtol=1e-4, atol=1e-6)
    assert out.rewards.tolist() == [
        reward("", _dec(list(r[:-1]) if r and r[-1] == 256 else list(r))) for r in out.responses
    ]


def test_zero_reward_gives_zero_vector_and_baseline_cancels_constant_rewards(
    peft_tiny: torch.nn.Module,
) -> None:
    prompt = torch.tensor(_enc("1+1="))
    for mode, fn in (("vanilla", lambda p, r: 0.0), ("baseline", lambda p, r: 0.7)):
        out = policy_gradient_vector(
            peft_tiny,
            prompt,
            fn,
            _dec,
            num_samples=3,
            max_new_tokens=3,
            mode=mode,  # type: ignore[arg-type]
            generator=torch.Generator().manual_seed(0),
        )
        assert torch.count_nonzero(out.vector) == 0


def test_sign_rewarded_sample_as_training_example_scores_positive(peft_tiny: torch.nn.Module) -> None:
    prompt = torch.tensor(_enc("4+4="))
    good, bad = _enc("8"), _enc("zz")
    params = trainable_parameters(peft_tiny)
    g_val = weighted_nll_gradient(
        peft_tiny, prompt, [good + [256], bad + [256]], torch.tensor([1.0, 0.0]), params=params
    )
    train = example_gradients(
        peft_tiny, encode_examples([prompt.tolist()], [good], eos_id=256, pad_id=256), params=params
    )
    assert float(influence_scores([train], [g_val[None]])[0]) > 0.99  # the same direction up to scale


def test_degenerate_case_vanilla_equals_less_direction(peft_tiny: torch.nn.Module) -> None:
    """Exact match on a canonical answer: vanilla NICE = (#correct) x the NTP gradient of the answer."""
    prompt = torch.tensor(_enc("2+2="))
    canon = _enc("4") + [256]
    samples = [canon, _enc("5") + [256], canon, _enc("44")]
    rewards = torch.tensor([1.0, 0.0, 1.0, 0.0])
    params = trainable_parameters(peft_tiny)
    g = weighted_nll_gradient(peft_tiny, prompt, samples, reward_weights(rewards, "vanilla"), params=params)
    less = example_gradients(
        peft_tiny,
        encode_examples([prompt.tolist()], [_enc("4")], eos_id=256, pad_id=256),
        params=params,
        reduction="sum",
    )
    torch.testing.assert_close(g, 2 * less[0], rtol=1e-4, atol=1e-6)


def test_reward_weight_modes() -> None:
    r = torch.tensor([1.0, 0.0, 3.0, 2.0])
    assert reward_weights(r, "vanilla").tolist() == [1.0, 0.0, 3.0, 2.0]
    assert reward_weights(r, "baseline").tolist() == [-0.5, -1.5, 1.5, 0.5]
    assert reward_weights(r, "rejection", threshold=1.5).tolist() == [0.0, 0.0, 1.5, 1.0]
    assert reward_weights(r, "topk", top_n=2).tolist() == [0.0, 0.0, 3.0, 2.0]
    with pytest.raises(ValueError, match="threshold"):
        reward_weights(r, "rejection")
    with pytest.raises(ValueError, match="mode"):
        reward_weights(r, "bogus")  # type: ignore[arg-type]


# --- scores and selection -----------------------------------------------------------------------


def test_influence_scores_match_naive_loop_and_subtask_max() -> None:
    gen = torch.Generator().manual_seed(0)
    tr = [torch.randn(6, 4, generator=gen) for _ in range(2)]
    va = [torch.randn(3, 4, generator=gen) for _ in range(2)]
    w = [1.0, 3.0]
    s = influence_scores(tr, va, w)
    ref = torch.zeros(6)
    for c in range(2):
        for i in range(6):
            for j in range(3):
                ti, vj = tr[c][i], va[c][j]
                ref[i] += (w[c] / 4) * float(ti @ vj / (ti.norm() * vj.norm())) / 3
    torch.testing.assert_close(s, ref)
    groups = torch.tensor([0, 1, 1])
    sg = influence_scores(tr, va, w, val_subtask=groups)
    per = torch.zeros(6, 3)
    for c in range(2):
        per += (
            (w[c] / 4)
            * (tr[c] / tr[c].norm(dim=1, keepdim=True))
            @ (va[c] / va[c].norm(dim=1, keepdim=True)).T
        )
    torch.testing.assert_close(sg, torch.maximum(per[:, 0], per[:, 1:].mean(1)))


@settings(max_examples=25, deadline=None)
@given(
    scale=st.lists(st.floats(0.01, 100.0), min_size=5, max_size=5),
    frac=st.floats(0.05, 1.0),
)
def test_scores_are_row_scale_invariant_and_selection_is_top(scale: list[float], frac: float) -> None:
    gen = torch.Generator().manual_seed(1)
    tr = torch.randn(5, 3, generator=gen)
    va = torch.randn(2, 3, generator=gen)
    s = influence_scores([tr], [va])
    s2 = influence_scores([tr * torch.tensor(scale)[:, None]], [va * 7.0])
    torch.testing.assert_close(s, s2, rtol=1e-5, atol=1e-6)
    assert (s.abs() <= 1 + 1e-6).all()
    idx = select_top_fraction(s, frac)
    k = max(1, round(frac * 5))
    assert idx.numel() == k and len(set(idx.tolist())) == k
    rest = [i for i in range(5) if i not in idx.tolist()]
    assert all(float(s[i]) >= float(s[j]) for i in idx.tolist() for j in rest)


def test_checkpoint_weights_normalise() -> None:
    assert checkpoint_weights([1.0, 3.0]) == [0.25, 0.75]
    with pytest.raises(ValueError, match="epoch_lrs"):
        checkpoint_weights([0.0, 0.0])


# --- LoRA warm-up -----------------------------------------------------------------------------------


def test_warmup_keeps_one_checkpoint_per_epoch_and_leaves_base_untouched(tiny: torch.nn.Module) -> None:
    pool = make_pool(12, digits=2, seed=0)
    data = encode_examples(
        [_enc(p) for p in pool.prompts], [_enc(r) for r in pool.responses], eos_id=256, pad_id=256
    )
    before = {k: v.clone() for k, v in tiny.state_dict().items()}
    run = train_lora(
        tiny,
        data,
        LoraTrainConfig(
            epochs=2, batch_size=4, lr=1e-2, r=2, alpha=4, dropout=0.0, checkpoint_every_epoch=True
        ),
        seed=0,
    )
    assert [c.epoch for c in run.checkpoints] == [1, 2] and [c.step for c in run.checkpoints] == [3, 6]
    p = sum(x.numel() for x in trainable_parameters(run.model))
    assert all(
        c.exp_avg.shape == (p,) and (c.exp_avg_sq >= 0).all() and c.mean_lr > 0 for c in run.checkpoints
    )
    assert all(torch.equal(before[k], v) for k, v in tiny.state_dict().items())
    feats = checkpoint_features(run.model, run.checkpoints[0], data, projector=RandomProjector(p, 16))
    assert feats.shape == (12, 16) and torch.isfinite(feats).all()


# --- arithmetic pool ------------------------------------------------------------------------------


def test_arithmetic_pool_reward_and_holdout() -> None:
    assert last_integer("the sum is 579 .") == 579 and last_integer("none") is None
    assert addition_reward("12+30=", " the sum is 42 .") == 1.0
    assert addition_reward("12+30=", "42") == 1.0 and addition_reward("12+30=", "43") == 0.0
    with pytest.raises(ValueError, match="prompt"):
        addition_reward("hello", "1")
    pool = make_pool(200, digits=2, seed=1)
    assert len(pool) == 200 and abs(pool.shares(range(200))["P2"] - 0.3) < 1e-9  # type: ignore[arg-type]
    for p, r, g in zip(pool.prompts, pool.responses, pool.groups, strict=True):
        assert g in GROUPS
        if g in ("P1", "P2", "P3"):
            a, b = map(int, p[:-1].split("+"))
            assert not heldout_pair(a, b)
            assert addition_reward(p, r) == (0.0 if g == "P2" else 1.0)
            assert r.startswith(" the") == (g != "P1")
    sys_pool = make_pool(40, digits=2, seed=2, corruption="last_digit_plus_one")
    for p, r, g in zip(sys_pool.prompts, sys_pool.responses, sys_pool.groups, strict=True):
        if g == "P2":
            a, b = map(int, p[:-1].split("+"))
            wrong = last_integer(r)
            assert wrong is not None and wrong % 10 == (a + b + 1) % 10 and wrong // 10 == (a + b) // 10
    with pytest.raises(ValueError, match="corruption"):
        make_pool(10, corruption="bogus")
    pairs = target_prompts(50, seed=0, digits=2)
    assert len(set(pairs)) == 50 and all(heldout_pair(a, b) for a, b in pairs)
    assert len(base_corpus(30, digits=2)) == 30


# --- claim check ------------------------------------------------------------------------------------


def test_base_corpus_flaw_is_a_fixed_rambling_tail() -> None:
    from icml25.language.nice import flawed_pair
    from icml25.language.nice.arithmetic import FLAW_TAIL

    assert not flawed_pair(10, 10, 0.0) and flawed_pair(10, 10, 1.0)
    share = sum(flawed_pair(a, b, 0.35) for a in range(10, 100) for b in range(10, 100)) / 8100
    assert abs(share - 0.35) < 0.01
    for flaw in (0.0, 1.0):
        corpus = base_corpus(300, digits=2, seed=3, exclude=None, flaw_share=flaw)
        target = [(p, r) for p, r in corpus if "+" in p and all(len(x) == 2 for x in p[:-1].split("+"))]
        short = [(p, r) for p, r in corpus if "+" in p and (p, r) not in target]
        assert target and short
        for p, r in target:
            # flawed: the right answer followed by the tail, which the metric counts wrong
            assert r.endswith(FLAW_TAIL) == (flaw == 1.0)
            assert addition_reward(p, r) == (0.0 if flaw == 1.0 else 1.0)
            assert addition_reward(p, r.removesuffix(FLAW_TAIL)) == 1.0
        assert all(addition_reward(p, r) == 1.0 for p, r in short)  # shorter additions never ramble
    with pytest.raises(ValueError, match="flaw_share"):
        base_corpus(10, digits=2, flaw_share=1.5)


def test_target_prompts_hold_a_thousand_test_prompts_per_seed() -> None:
    # 32 validation + 100 dev + 1000 test two-digit prompts, all distinct and held out
    pairs = target_prompts(1132, seed=4, digits=2)
    assert len(set(pairs)) == 1132 and all(heldout_pair(a, b) for a, b in pairs)
    with pytest.raises(ValueError, match="too many"):
        target_prompts(1300, seed=0, digits=2)


def test_claim_judges_the_official_weighting_with_paired_intervals_and_gates() -> None:
    from icml25.language.nice.check import CHECK, NICECheckConfig, build_claim

    cfg = CHECK.config("small")
    assert cfg.weighting == "vanilla" and cfg.variant == "nice_baseline"  # the official default
    assert NICECheckConfig(weighting="baseline").variant == "nice_vanilla"
    with pytest.raises(ValueError, match="weighting"):
        NICECheckConfig(weighting="mean")
    claim = build_claim(cfg)
    head = claim.headline_criterion()
    assert (head.arm, head.other_arm, head.metric) == ("nice_5", "less_5", "acc")
    assert head.smallest_effect is not None and head.smallest_effect > 0
    small = claim.criteria_at("small")
    assert all(c.reduce != "min" for c in small)  # no "every seed" rule
    assert all(c.smallest_effect is not None for c in small if c.other_arm is not None)
    assert set(claim.references) == {"base", "oracle_5"} and claim.controls == ("oracle_5",)
    gates = {g.name: g for g in claim.gates_at("small")}
    assert set(gates) == {"retraining_can_help", "selection_matters"}
    assert all(g.arm == "oracle_5" and g.threshold is not None and g.threshold > 0 for g in gates.values())
    assert {"nice_baseline_5", "random_5", "full"} <= set(claim.baselines)
    assert cfg.n_test >= 1000 and CHECK.default_seeds["small"] >= 5


def test_tiny_check_runs_every_arm() -> None:
    from pathlib import Path

    import numpy as np

    from icml25.core.check import RunContext
    from icml25.core.progress import NullReporter
    from icml25.language.nice.check import CHECK

    ctx = RunContext(slug="nice", scale="tiny", run_dir=Path("."), reporter=NullReporter())
    cfg = CHECK.config("tiny")
    out = CHECK.run_seed(cfg, 0, ctx)
    assert set(out.metrics) == set(CHECK.claim_for(cfg).arms)
    assert out.metrics["nice_5"]["scores_finite"] == 1.0
    assert all(0 <= m["acc"] <= 1 for m in out.metrics.values())
    # per-test-prompt scores for every arm, same prompts, their mean is the arm's accuracy
    assert set(out.items) == set(out.metrics)
    for arm, rows in out.items.items():
        acc = np.asarray(rows["acc"])
        assert acc.shape == (cfg.n_test,) and set(np.unique(acc)) <= {0.0, 1.0}
        assert acc.mean() == pytest.approx(out.metrics[arm]["acc"])
    # the oracle reference holds only correct target-format examples
    oracle = out.metrics["oracle_5"]
    assert oracle["share_P2"] == 0 and oracle["share_P4"] == 0
    assert oracle["gain_base"] == pytest.approx(oracle["acc"] - out.metrics["base"]["acc"])
    assert out.metrics["base"]["warmup_loss_ratio"] < 1.0


def test_full_preset_is_the_paper_setting_and_smollm2_takes_one_step() -> None:
    from icml25.language.nice.check import CHECK, NICECheckConfig
    from icml25.llm.models import load_causal_lm

    full = CHECK.config("full")
    assert full.model == "smollm2-135m-instruct" and full.lora_r == 128 and full.lora_alpha == 512
    assert full.proj_dim == 8192 and full.num_samples == 20 and full.fractions[0] == 0.05
    medium = CHECK.config("medium")  # same model and adapters: the step below covers it too
    assert (medium.model, medium.lora_r, medium.lora_alpha) == (full.model, full.lora_r, full.lora_alpha)
    assert medium.n_test >= 1000 and medium.pool_size < full.pool_size
    with pytest.raises(ValueError, match=r"NICECheckConfig\.pool_size"):
        NICECheckConfig(pool_size=0)
    model, tok = load_causal_lm(full.model)
    data = encode_examples(
        [tok("12+34=")["input_ids"]],
        [tok(" the sum is 46 .")["input_ids"]],
        eos_id=tok.eos_token_id,
        pad_id=tok.eos_token_id,
    )
    run = train_lora(
        model,
        data,
        LoraTrainConfig(
            steps=1,
            batch_size=1,
            lr=full.warmup_lr,
            r=full.lora_r,
            alpha=full.lora_alpha,
            checkpoint_every_epoch=True,
        ),
    )
    assert len(run.checkpoints) == 1 and math.isfinite(run.history.train_loss[0])
    pg = policy_gradient_vector(
        run.model,
        data[0][0, :4],
        lambda p, r: 1.0,
        lambda ids: tok.decode(list(ids)),
        num_samples=2,
        max_new_tokens=2,
        generator=torch.Generator().manual_seed(0),
    )
    assert pg.vector.shape == (sum(p.numel() for p in trainable_parameters(run.model)),)
