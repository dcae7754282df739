"""Tests for icml25.language.turing_programs (Turing Programs, Hou et al., ICML 2025, arXiv 2407.03310)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.language.turing_programs import (
    FORMATS,
    AdditionTask,
    Config,
    DecoderConfig,
    TinyDecoder,
    Tokenizer,
    TrainConfig,
    TuringMachine,
    addition_program,
    default_windows,
    greedy_decode,
    hard_alibi_attention,
    hard_alibi_bias,
    hard_alibi_mask,
    length_generalization_eval,
    multiplication_program,
    parse_answer,
    random_tm_program,
    random_turing_machine,
    render_config,
    render_program,
    teacher_forced_exact_match,
    trace,
    train_decoder,
    verify_addition_program,
)
from icml25.language.turing_programs.check import CHECK, TuringProgramsCheckConfig, _tf_greedy_agreement

numbers = st.integers(min_value=0, max_value=10**12).map(str)


def flipper() -> TuringMachine:
    """Flips every bit left to right, halts on the first blank."""
    delta = {
        ("q0", "0"): ("q0", "1", "R"),
        ("q0", "1"): ("q0", "0", "R"),
        ("q0", "_"): ("qH", "_", "S"),
    }
    return TuringMachine(["q0", "qH"], ["0", "1", "_"], delta=delta, start="q0", halt=["qH"])


# ---- the tracer ------------------------------------------------------------------------------


def test_trace_of_a_hand_checked_machine() -> None:
    tm = flipper()
    configs = trace(tm, tm.initial("011"))
    assert [c.tape for c in configs] == [
        ("0", "1", "1"),
        ("1", "1", "1"),
        ("1", "0", "1"),
        ("1", "0", "0", "_"),  # the head stepped past the right end: the tape grew a blank
        ("1", "0", "0", "_"),
    ]
    assert [c.heads for c in configs] == [(0,), (1,), (2,), (3,), (3,)]
    assert [c.state for c in configs] == ["q0", "q0", "q0", "q0", "qH"]
    assert render_config(configs[2]) == ["1", "0", "q0", "^1"]
    assert render_config(configs[4], hide=("_",), marks={"0": "a"}) == ["1", "0", "0", "qH"]
    prog = render_program(configs[:2], sep="|")
    assert prog == ["q0", "^0", "1", "1", "|", "1", "q0", "^1", "1", "|"]
    assert render_program(configs[:1], mark_head=False, show_state=False, sep="|") == ["0", "1", "1", "|"]


def test_left_moves_prepend_blanks_and_nonhalting_runs() -> None:
    tm = TuringMachine(
        ["a"], ["0", "_"], delta={("a", "0"): ("a", "0", "L"), ("a", "_"): ("a", "_", "L")}, start="a"
    )
    with pytest.raises(ValueError, match="did not halt"):
        trace(tm, tm.initial("0"), max_steps=3)
    configs = trace(tm, tm.initial("0"), max_steps=3, truncate=True)
    assert len(configs) == 4
    assert configs[-1].tape == ("_", "_", "_", "0") and configs[-1].heads == (0,)


def test_machine_and_trace_bad_input() -> None:
    with pytest.raises(ValueError, match="blank"):
        TuringMachine(["q"], ["0"], delta={}, start="q")
    with pytest.raises(ValueError, match="start"):
        TuringMachine(["q"], ["0", "_"], delta={}, start="r")
    with pytest.raises(ValueError, match="outside the alphabet"):
        TuringMachine(["q"], ["0", "_"], delta={("q", "0"): ("q", "2", "R")}, start="q")
    with pytest.raises(ValueError, match="moves"):
        TuringMachine(["q"], ["0", "_"], delta={("q", "0"): ("q", "0", "X")}, start="q")
    with pytest.raises(ValueError, match="one entry per head"):
        TuringMachine(["q"], ["0", "_"], delta={("q", ("0",)): ("q", ("0", "0"), ("R",))}, start="q")
    with pytest.raises(ValueError, match="n_heads"):
        TuringMachine(["q"], ["0", "_"], delta={}, start="q", n_heads=0)
    tm = flipper()
    with pytest.raises(ValueError, match="not in the alphabet"):
        tm.initial("012")
    with pytest.raises(ValueError, match="max_steps"):
        trace(tm, tm.initial("0"), max_steps=0)
    with pytest.raises(ValueError, match="outside the tape"):
        Config(("0",), (3,), "q0")
    with pytest.raises(ValueError, match="non-empty"):
        render_program([])


def test_random_machines_render() -> None:
    tm = random_turing_machine(3, seed=1)
    prog = random_tm_program(tm, list("0110"), max_steps=10)
    assert prog[0] == "BOS" and prog[-1] == "EOS"
    assert sum(t == "SEP" for t in prog) >= 2
    assert sum(t.startswith("^") for t in prog) == sum(t == "SEP" for t in prog) - 1  # one marked cell a line
    assert random_turing_machine(3, seed=1) == tm
    with pytest.raises(ValueError, match="n_states"):
        random_turing_machine(0)


# ---- programs ------------------------------------------------------------------------------


def test_addition_program_matches_the_worked_example() -> None:
    assert " ".join(addition_program("57", "68")) == (
        "BOS 5 7 + 6 8 SEP 5 h + 6 i | C0 SEP f 7 + g 8 | C1 5 SEP 5 7 + 6 8 | C1 2 5 SEP "
        "5 7 + 6 8 | H 1 2 5 SEP 1 2 5 EOS"
    )
    assert " ".join(addition_program("57", "68", fmt="direct_reversed")) == "BOS 5 7 + 6 8 SEP 5 2 1 EOS"
    assert " ".join(addition_program("57", "68", fmt="scratchpad")) == (
        "BOS 5 7 + 6 8 SEP | C0 SEP | C1 5 SEP | C1 2 5 SEP | H 1 2 5 SEP 1 2 5 EOS"
    )


@settings(max_examples=60, deadline=None)
@given(a=numbers, b=numbers)
def test_addition_answer_is_the_sum(a: str, b: str) -> None:
    for fmt in ("turing", "scratchpad", "direct_reversed"):
        toks = addition_program(a, b, fmt=fmt)
        assert int(parse_answer(toks, fmt)) == int(a) + int(b)  # type: ignore[arg-type]
        check = verify_addition_program(toks, fmt=fmt)
        assert check.valid and check.first_error is None
    lines = " ".join(addition_program(a, b)).split(" SEP ")[1:-1]
    n = max(len(a), len(b))
    assert len(lines) == n + 2  # initial configuration, one per digit, the halted one
    for prev, nxt in zip(lines[:-1], lines[1:], strict=True):  # a local edit: same operands, one more digit
        p, q = prev.split(), nxt.split()
        assert len(q) - len(p) in (0, 1)
        assert sum(x != y for x, y in zip(p[: 2 * n + 1], q[: 2 * n + 1], strict=True)) <= 4


@settings(max_examples=30, deadline=None)
@given(a=numbers, m=st.integers(0, 9))
def test_multiplication_answer_is_the_product(a: str, m: int) -> None:
    toks = multiplication_program(a, str(m))
    assert int(parse_answer(toks)) == int(a) * m  # type: ignore[arg-type]


def test_verifier_finds_the_wrong_step() -> None:
    toks = addition_program("57", "68")
    bad = list(toks)
    bad[bad.index("C1")] = "C0"  # the carry of step 1
    check = verify_addition_program(bad)
    assert not check.valid and check.first_error == 1 and check.answer_correct
    truncated = toks[: toks.index("H")]
    assert not verify_addition_program(truncated).valid
    with pytest.raises(ValueError, match="prompt"):
        verify_addition_program(["5", "+", "6"])
    assert parse_answer(["BOS", "1", "SEP", "x", "EOS"]) is None
    assert parse_answer(["BOS", "1", "SEP", "2"]) is None


def test_program_bad_input() -> None:
    with pytest.raises(ValueError, match="digits"):
        addition_program("1a", "2")
    with pytest.raises(ValueError, match="digits"):
        addition_program("", "2")
    with pytest.raises(ValueError, match="fmt"):
        addition_program("1", "2", fmt="binary")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="single digit"):
        multiplication_program("12", "34")


def test_tokenizer_and_task() -> None:
    tok = Tokenizer()
    toks = addition_program("905", "17")
    assert tok.decode(tok.encode(toks)) == toks
    assert tok.pad == 0
    with pytest.raises(ValueError, match="vocabulary"):
        tok.encode(["BOS", "7", "?"])
    task = AdditionTask(1, 3)
    batch = task.sample(5, torch.Generator().manual_seed(0), tok, n=3)
    assert batch.tokens.dtype == torch.long and batch.tokens.shape[0] == 5
    assert (batch.prompt_len == 9).all()
    mask = batch.target_mask()
    assert mask.shape == (5, batch.tokens.shape[1] - 1)
    assert mask.sum(1).tolist() == (batch.length - batch.prompt_len).tolist()
    for row in batch.tokens:
        assert verify_addition_program(tok.decode(row)).valid
    with pytest.raises(ValueError, match="max_len"):
        AdditionTask(3, 2)
    with pytest.raises(ValueError, match="min_len"):
        AdditionTask(0, 2)
    with pytest.raises(ValueError, match="batch"):
        task.sample(0, torch.Generator(), tok)


# ---- Hard-ALiBi ------------------------------------------------------------------------------


def test_hard_alibi_mask_per_head() -> None:
    windows = (1, 2, 3, None)
    T = 7
    mask = hard_alibi_mask(T, windows)
    assert mask.shape == (4, T, T) and mask.dtype == torch.bool
    for h, w in enumerate(windows):
        for i in range(T):
            seen = [j for j in range(T) if mask[h, i, j]]
            expected = list(range(i + 1)) if w is None else list(range(max(0, i - w + 1), i + 1))
            assert seen == expected
    full = hard_alibi_mask(T, windows)
    assert torch.equal(hard_alibi_mask(3, windows, offset=4), full[:, 4:])
    bias = hard_alibi_bias(windows, 3, T)
    assert bias.shape == (4, 3, T)
    causal = torch.arange(T)[None, :] <= torch.arange(4, T)[:, None]
    assert torch.equal(torch.isfinite(bias) & causal, full[:, 4:])
    assert set(bias.unique().tolist()) <= {0.0, float("-inf")}
    assert default_windows(8, 4) == (1, 2, 3, 4, None, None, None, None)


def _official_hard_alibi_weights(scores: torch.Tensor, num_masked_heads: int) -> torch.Tensor:
    """The masking of the Hard-ALiBi reference (``sjelassi/transformers_ssm_copy``,
    ``synthetic_exps/models/hard_alibi_model.py``, ``GPTHardAlibiAttention._attn``), transcribed:
    causal mask, then for head i < num_masked_heads a mask that is 0 on the diagonals j = 0 … i
    (key i − j) and the dtype's minimum elsewhere, added to the scores; softmax."""
    n = scores.shape[-1]
    mask_value = torch.finfo(scores.dtype).min
    causal = torch.tril(torch.ones(n, n, dtype=torch.bool))
    scores = torch.where(causal, scores, torch.tensor(mask_value))
    new = scores.clone()
    for i in range(num_masked_heads):
        mask_head = torch.ones_like(scores[:, 0]) * mask_value
        for j in range(i + 1):
            mask_head[:, range(j, n), range(0, n - j)] = 0
        new[:, i] = scores[:, i] + mask_head
    return torch.softmax(new, dim=-1)


def test_hard_alibi_equals_the_reference_code_masking() -> None:
    """Our bias + causal mask gives the reference code's attention weights (8 heads, 4 masked)."""
    from icml25.nn.attention import attention_mask

    torch.manual_seed(0)
    n, heads, masked = 11, 8, 4
    scores = torch.randn(2, heads, n, n, dtype=torch.float64)
    bias = hard_alibi_bias(default_windows(heads, masked), n).double()
    ours = torch.softmax(scores + attention_mask(n, n, causal=True, bias=bias, dtype=torch.float64), dim=-1)
    torch.testing.assert_close(ours, _official_hard_alibi_weights(scores, masked), atol=1e-12, rtol=0)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0, (1,)), "seq_len"),
        ((4, ()), "windows"),
        ((4, (0,)), "windows"),
        ((4, (1.5,)), "windows"),
        ((4, (True,)), "windows"),
    ],
)
def test_hard_alibi_bad_input(args, match) -> None:
    with pytest.raises(ValueError, match=match):
        hard_alibi_mask(*args)


@pytest.mark.parametrize(("windows", "n"), [((1, 2, 3, None), 9), ((None, 5, None, 1), 3), ((8, 8), 1)])
def test_windowed_attention_equals_the_masked_attention(windows, n) -> None:
    """hard_alibi_attention (window by window) equals softmax(q k^T / sqrt(e) + bias, causal) v."""
    from icml25.nn.attention import scaled_dot_product_attention

    torch.manual_seed(0)
    q, k, v = (torch.randn(3, len(windows), n, 4, dtype=torch.float64) for _ in range(3))
    bias = hard_alibi_bias(windows, n).double()
    ref = scaled_dot_product_attention(q, k, v, causal=True, bias=bias)
    torch.testing.assert_close(hard_alibi_attention(q, k, v, windows), ref, atol=1e-12, rtol=0)


def test_windowed_attention_bad_input() -> None:
    q = torch.zeros(1, 2, 3, 4)
    with pytest.raises(ValueError, match="one entry per head"):
        hard_alibi_attention(q, q, q, (1, 2, 3))
    with pytest.raises(ValueError, match="q, k, v"):
        hard_alibi_attention(q, q[:, :, :2], q, (1, 2))
    with pytest.raises(ValueError, match="windows"):
        hard_alibi_attention(q, q, q, (0, None))


def test_inference_forward_equals_the_training_forward() -> None:
    """Without gradients the Hard-ALiBi decoder takes the windowed path: same logits to round-off."""
    model = _model("hard_alibi")
    tokens = torch.randint(0, len(Tokenizer()), (5, 23))
    with torch.enable_grad():
        ref = model(tokens).detach()
    with torch.no_grad():
        fast = model(tokens)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("n", [1, 7, 30])
def test_training_forward_is_the_shared_attention_bit_for_bit(n) -> None:
    """With gradients the Hard-ALiBi decoder skips the shared attention's guards but not its arithmetic:
    logits and gradients equal those of the blocks called with the bias, bit for bit."""
    model = _model("hard_alibi")
    tokens = torch.randint(0, len(Tokenizer()), (4, n))

    def shared(m: TinyDecoder) -> torch.Tensor:
        x = m.embed(tokens)
        bias = hard_alibi_bias(m.cfg.windows, n)
        for block in m.blocks:
            x = block(x, causal=True, bias=bias)
        return m.head(m.norm(x))

    outs, grads = [], []
    for f in (model, shared):
        model.zero_grad()
        out = f(tokens) if f is model else f(model)
        out.square().sum().backward()
        outs.append(out.detach())
        grads.append([p.grad.clone() for p in model.parameters()])
    assert torch.equal(outs[0], outs[1])
    assert all(torch.equal(a, b) for a, b in zip(*grads, strict=True))


def test_default_windows_bad_input() -> None:
    with pytest.raises(ValueError, match="n_hard"):
        default_windows(4, 5)
    with pytest.raises(ValueError, match="m \\(keys"):
        hard_alibi_bias((1,), 4, 3)


# ---- the decoder -----------------------------------------------------------------------------


def _model(pos: str, **kw) -> TinyDecoder:
    torch.manual_seed(0)
    return TinyDecoder(
        DecoderConfig(
            vocab_size=len(Tokenizer()),
            d_model=32,
            n_layers=2,
            n_heads=4,
            n_hard=2,
            pos=pos,
            max_len=64,
            **kw,
        )
    )  # type: ignore[arg-type]


@pytest.mark.parametrize("pos", ["hard_alibi", "nope", "learned", "rope"])
def test_decoder_causal_cached_and_differentiable(pos: str) -> None:
    model = _model(pos).eval()
    x = torch.randint(0, 20, (2, 12))
    logits = model(x)
    assert logits.shape == (2, 12, model.cfg.vocab_size) and logits.dtype == torch.float32
    y = x.clone()
    y[:, 8:] = (y[:, 8:] + 1) % 20
    torch.testing.assert_close(model(y)[:, :8], logits[:, :8])  # the future does not leak
    caches = model.new_caches()
    steps = [model(x[:, :5], caches=caches)] + [model(x[:, i : i + 1], caches=caches) for i in range(5, 12)]
    torch.testing.assert_close(torch.cat(steps, dim=1), logits, atol=1e-5, rtol=1e-5)
    model.train()
    model(x).logsumexp(-1).mean().backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


def test_all_hard_heads_have_a_bounded_receptive_field() -> None:
    """With windows (1, 2) in each of 2 layers the last token sees back 2 tokens, no further."""
    torch.manual_seed(0)
    cfg = DecoderConfig(vocab_size=30, d_model=16, n_layers=2, n_heads=2, n_hard=2, pos="hard_alibi")
    model = TinyDecoder(cfg).eval()
    x = torch.randint(0, 30, (1, 6))
    far = x.clone()
    far[0, :3] = (far[0, :3] + 3) % 30
    torch.testing.assert_close(model(far)[0, -1], model(x)[0, -1])
    near = x.clone()
    near[0, 3] = (near[0, 3] + 3) % 30
    assert not torch.allclose(model(near)[0, -1], model(x)[0, -1])


def test_decoder_bad_input() -> None:
    model = _model("learned")
    with pytest.raises(TypeError, match="long"):
        model(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="token ids"):
        model(torch.full((1, 3), 99))
    with pytest.raises(ValueError, match="max_len"):
        model(torch.zeros(1, 65, dtype=torch.long))
    with pytest.raises(ValueError, match="divisible"):
        DecoderConfig(vocab_size=10, d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="pos"):
        DecoderConfig(vocab_size=10, pos="alibi")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_hard"):
        DecoderConfig(vocab_size=10, n_heads=4, n_hard=5)
    with pytest.raises(ValueError, match="vocab_size"):
        DecoderConfig(vocab_size=0)
    with pytest.raises(TypeError, match="DecoderConfig"):
        TinyDecoder({"vocab_size": 10})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_new"):
        greedy_decode(model, torch.zeros(1, 3, dtype=torch.long), max_new=0, eos=3)


# ---- training and evaluation -------------------------------------------------------------------


def test_teacher_forced_exact_match_equals_greedy_on_a_trained_toy() -> None:
    torch.set_num_threads(1)
    tok = Tokenizer()
    task = AdditionTask(1, 2, "turing")
    model = TinyDecoder(DecoderConfig(len(tok), d_model=32, n_layers=2, n_heads=4, n_hard=2))
    hist = train_decoder(model, task, tok, TrainConfig(steps=80, batch_size=16, lr=3e-3, warmup_steps=10))
    assert hist.train_loss[-1] < hist.train_loss[0]
    cfg = TuringProgramsCheckConfig(train_max_len=2, d_model=32, n_heads=4, n_hard=2)
    assert _tf_greedy_agreement(model, cfg, seed=0) == 1.0
    batch = task.encode(task.problems(8, 2, torch.Generator().manual_seed(1)), tok)
    exact, tok_acc = teacher_forced_exact_match(model, batch)
    assert exact.dtype == torch.bool and tok_acc.shape == (8,) and ((tok_acc >= 0) & (tok_acc <= 1)).all()
    assert (exact == (tok_acc == 1)).all()
    ev = length_generalization_eval(model, task, tok, lengths=(2, 3), n_per_length=8, n_greedy=4)
    assert set(ev) == {2, 3} and set(ev[2]) == {"exact", "token_acc", "greedy_answer", "greedy_valid"}
    with pytest.raises(ValueError, match="lengths"):
        length_generalization_eval(model, task, tok, lengths=())


def test_check_config_validation_and_full_preset_constructs() -> None:
    with pytest.raises(ValueError, match="arms"):
        TuringProgramsCheckConfig(arms=("tp_nope", "direct_hard_alibi"))
    with pytest.raises(ValueError, match="arms"):
        TuringProgramsCheckConfig(arms=("tp_hard_alibi",))
    with pytest.raises(ValueError, match="headline baseline"):  # the headline's baseline is always run
        TuringProgramsCheckConfig(arms=("tp_hard_alibi", "tp_learned"))
    with pytest.raises(ValueError, match="lr_grid"):
        TuringProgramsCheckConfig(lr_grid=())
    with pytest.raises(ValueError, match="train_max_len"):
        TuringProgramsCheckConfig(train_min_len=5, train_max_len=4)
    small = CHECK.config("small")
    assert small.multiple_lengths() == {"1x": 2, "1p5x": 3, "2x": 4}
    assert small.test_lengths() == (2, 3, 4)
    for scale in ("small", "medium", "full"):  # the reference code's split: 8 of 16 heads hard, windows 1..8
        dec = CHECK.config(scale).decoder(len(Tokenizer()), "hard_alibi", 64)
        assert dec.windows == (1, 2, 3, 4, 5, 6, 7, 8) + (None,) * 8, scale
    claim = CHECK.claim_for(CHECK.config("small", {"arms": ("tp_hard_alibi", "tp_nope", "tp_rope")}))
    assert [c.name for c in claim.criteria_at("small")][-1] == "beats_tp_rope_2x"
    full = CHECK.config("full")
    assert full.multiple_lengths() == {"1x": 50, "1p5x": 75, "2x": 100}
    dcfg = full.decoder(len(Tokenizer()), "hard_alibi", 128)
    assert dcfg.windows == (1, 2, 3, 4, 5, 6, 7, 8) + (None,) * 8


def test_full_preset_builds_the_paper_model_and_takes_one_step() -> None:
    """``full`` (12 layers, width 1024, 16 heads, 8 hard) constructs and trains one step here."""
    from icml25.language.turing_programs.check import train_arm

    overrides = {"train.steps": 1, "train.batch_size": 1, "train_max_len": 1, "extra_lengths": (), "n_val": 1}
    cfg = CHECK.config("full", {**overrides, "threads": 1})
    run = train_arm(cfg, "tp_hard_alibi", 1e-5, 0)
    assert len(run.losses) == 1 and all(torch.isfinite(torch.tensor(run.losses)))
    assert sum(v.numel() for v in run.state.values()) > 100_000_000


def test_claim_follows_the_verdict_protocol() -> None:
    """References, gates and a paired headline with its smallest effect (issue 40)."""
    claim = CHECK.claim_for(CHECK.config("small"))
    assert claim.references == ("untrained",)
    assert {g.name for g in claim.gates_at("small")} == {"ours_fits_training_length", "ours_above_untrained"}
    head = claim.headline_criterion()
    assert head.name == "beats_tp_nope_2x" and head.other_arm == "tp_nope" and head.metric == "exact_2x"
    assert head.smallest_effect == pytest.approx(0.3) and head.effect_source
    assert all(c.smallest_effect for c in claim.criteria_at("small") if c.other_arm is not None)


def test_every_format_is_scored_on_the_same_problems_item_by_item() -> None:
    """Per-problem exact match pairs across arms: the problems depend on (seed, n), not the format."""
    torch.manual_seed(0)
    tok = Tokenizer()
    model = TinyDecoder(DecoderConfig(len(tok), d_model=16, n_layers=1, n_heads=2, n_hard=1))
    draws = {f: AdditionTask(1, 2, f).problems(6, 3, torch.Generator().manual_seed(7)) for f in FORMATS}
    assert all(p == draws["turing"] for p in draws.values())
    for fmt in FORMATS:
        ev = length_generalization_eval(
            model, AdditionTask(1, 2, fmt), tok, lengths=(2, 3), n_per_length=6, n_greedy=0, per_item=True
        )
        for row in ev.values():
            assert row["exact_items"].shape == (6,) and set(np.unique(row["exact_items"])) <= {0.0, 1.0}
            assert row["exact_items"].mean() == pytest.approx(row["exact"])


def test_an_unfitted_run_fails_the_fit_gate_with_its_measurement(tmp_path) -> None:
    """Before issue 40 an unfitted seed turned every criterion metric into NaN ("could not evaluate");
    now the fit gate is measured and fails, the verdict is inconclusive, and the headline's paired
    interval and the untrained reference are still reported."""
    from icml25.core.results import ResultStore

    overrides = {
        "train_max_len": 2,
        "n_test": 8,
        "n_greedy": 0,
        "n_val": 4,
        "d_model": 16,
        "n_layers": 1,
        "n_heads": 2,
        "n_hard": 1,
        "train.steps": 3,
        "train.batch_size": 4,
        "lr_grid": (3e-3,),
        "arms": ("tp_hard_alibi", "tp_nope"),
        "workers": 1,
    }
    result = CHECK.run("small", seeds=[0], overrides=overrides, store=ResultStore(tmp_path))
    gates = {c.name: c for c in result.criteria if c.role == "gate"}
    fit = gates["ours_fits_training_length"]
    assert fit.passed is False and fit.value is not None and 0.0 <= fit.value < 0.9
    assert str(result.verdict).startswith("inconclusive")
    head = next(c for c in result.criteria if c.name == "beats_tp_nope_2x")
    assert head.value is not None and np.isfinite(head.value)
    assert result.metrics["untrained"]["exact_1x"].mean == 0.0


def test_medium_preset_constructs_and_takes_one_step_on_the_cpu() -> None:
    from icml25.language.turing_programs.check import train_arm

    cfg = CHECK.config("medium", {"device": "cpu", "threads": 1, "train.steps": 1, "train.batch_size": 2})
    assert cfg.multiple_lengths() == {"1x": 5, "1p5x": 8, "2x": 10} and cfg.device == "cpu"
    assert CHECK.config("medium").device == "cuda"
    run = train_arm(cfg, "tp_hard_alibi", 1e-3, 0)
    assert len(run.losses) == 1 and np.isfinite(run.losses[0])


def test_runs_on_worker_processes_equal_the_runs_trained_here(monkeypatch) -> None:
    """With two workers allowed, _ensure_trained queues the runs on spawned processes (WorkerPool) and
    collects the same trained runs as training them here."""
    import dataclasses
    from pathlib import Path

    from icml25.core.check import RunContext
    from icml25.core.progress import NullReporter
    from icml25.language.turing_programs.check import CHECK, train_arm

    monkeypatch.setenv("ICML25_THREADS", "2")
    config = dataclasses.replace(CHECK.config("tiny"), workers=2)
    jobs = [(arm, float(config.lr_grid[0]), 0) for arm in config.arms[:2]]
    ctx = RunContext(slug="turing_programs", scale="tiny", run_dir=Path("."), reporter=NullReporter())
    CHECK.begin_run(config)
    try:
        CHECK._submit(config, jobs)
        assert CHECK._pool is not None and CHECK._pool.active
        assert all(CHECK._pool.queued((config, *j)) for j in jobs)
        CHECK._ensure_trained(config, jobs, ctx)
        got = {j: CHECK._cache.runs[(config, *j)] for j in jobs}
    finally:
        CHECK.end_run()
    for job, run in got.items():
        want = train_arm(config, *job)
        assert (run.losses, run.val_exact, run.val_loss) == (want.losses, want.val_exact, want.val_loss)
