"""Tests for SeleKT (Robust Learning of Diverse Code Edits, arXiv 2503.03656): the sparse projection,
the verified edit pipeline, fine-tuning on a tiny random Llama, and bad input."""

from __future__ import annotations

import random

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from icml25.language.selekt import (
    ChatCodec,
    FinetuneConfig,
    SeleKT,
    build_edit_dataset,
    changed_fraction,
    completion_loss,
    edit_messages,
    edit_success,
    edit_target,
    encode_pairs,
    find_seed_functions,
    finetune,
    generate_tests,
    greedy_generate,
    make_seed_functions,
    mutate_bug,
    rename_variables,
    run_tests,
    snapshot_base,
    sparse_project_,
    template_instruction,
    topk_mask,
)
from icml25.nn.train import FitConfig, fit

MODULES = ("calendar", "colorsys", "difflib", "_pydecimal")


def _net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))


def _perturb(model: nn.Module, scale: float = 0.1) -> None:
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(scale * torch.randn(p.shape, generator=gen))


def test_topk_mask_matches_sort_reference() -> None:
    d = torch.tensor([[0.1, -3.0, 2.0], [0.5, -0.2, 1.0]])
    m = topk_mask(d, 3)
    assert m.dtype == torch.bool and m.shape == d.shape
    assert m.sum() == 3
    ref = torch.zeros(6, dtype=torch.bool)
    ref[torch.argsort(d.abs().reshape(-1), descending=True)[:3]] = True
    assert torch.equal(m.reshape(-1), ref)


def test_per_tensor_projection_resets_rest_to_base() -> None:
    model = _net()
    base = snapshot_base(model)
    _perturb(model)
    dense = {n: p.detach().clone() for n, p in model.named_parameters()}
    fr = sparse_project_(model, base, 0.25)
    for name, p in model.named_parameters():
        k = int(0.25 * p.numel())
        delta = dense[name] - base[name]
        keep = topk_mask(delta, k)
        assert torch.equal(p[~keep], base[name][~keep])  # outside the mask exactly base
        assert torch.equal(p[keep], dense[name][keep])  # inside the mask the dense value
        assert fr[name] <= 0.25 + 1e-12
    assert changed_fraction(model, base) == fr


def test_global_scope_keeps_alpha_n_entries() -> None:
    model = _net()
    base = snapshot_base(model)
    _perturb(model)
    sparse_project_(model, base, 0.1, scope="global")
    n = sum(p.numel() for p in model.parameters())
    changed = sum(int((p != base[name]).sum()) for name, p in model.named_parameters())
    assert changed == int(0.1 * n)


def test_alpha_one_is_identity_and_small_alpha_resets_everything() -> None:
    model = _net()
    base = snapshot_base(model)
    _perturb(model)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    sparse_project_(model, base, 1.0)
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())
    sparse_project_(model, base, 1e-9)
    assert all(torch.equal(p, base[n]) for n, p in model.named_parameters())


@settings(max_examples=25, deadline=None)
@given(
    alpha=st.floats(0.01, 1.0), seed=st.integers(0, 10_000), scope=st.sampled_from(["per_tensor", "global"])
)
def test_projection_property(alpha: float, seed: int, scope: str) -> None:
    torch.manual_seed(seed)
    model = nn.Linear(5, 4)
    base = snapshot_base(model)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape))
    sparse_project_(model, base, alpha, scope=scope)  # type: ignore[arg-type]
    n_total = sum(p.numel() for p in model.parameters())
    changed = sum(int((p != base[n]).sum()) for n, p in model.named_parameters())
    if scope == "global":
        assert changed <= int(alpha * n_total)
    else:
        for n, p in model.named_parameters():
            assert int((p != base[n]).sum()) <= int(alpha * p.numel())
    again = {n: p.detach().clone() for n, p in model.named_parameters()}
    sparse_project_(model, base, alpha, scope=scope)  # type: ignore[arg-type]
    assert all(torch.equal(p, again[n]) for n, p in model.named_parameters())  # idempotent


def test_selekt_hook_in_fit_projects_every_m_steps() -> None:
    model = _net()
    base = snapshot_base(model)
    x = torch.randn(32, 6)
    y = torch.randn(32, 3)
    proj = SeleKT(base, alpha=0.2, period_steps=3)

    def loss_fn(m: nn.Module, batch: tuple[torch.Tensor, ...], _g: torch.Generator) -> torch.Tensor:
        return ((m(batch[0]) - batch[1]) ** 2).mean()

    hist = fit(model, loss_fn, (x, y), FitConfig(steps=9, batch_size=8, lr=0.05), post_step=proj)
    assert proj.n_projections == 3  # steps 3, 6, 9
    assert max(changed_fraction(model, base).values()) <= 0.2
    assert hist.train_loss[-1] < hist.train_loss[0]


def test_bad_input_raises() -> None:
    model = _net()
    base = snapshot_base(model)
    with pytest.raises(ValueError, match="alpha"):
        sparse_project_(model, base, 0.0)
    with pytest.raises(ValueError, match="alpha"):
        SeleKT(base, alpha=1.5)
    with pytest.raises(ValueError, match="period_steps"):
        SeleKT(base, alpha=0.1, period_steps=0)
    with pytest.raises(ValueError, match="scope"):
        sparse_project_(model, base, 0.1, scope="rows")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shape"):
        sparse_project_(model, {"0.weight": torch.zeros(2, 2)}, 0.1)
    with pytest.raises(ValueError, match="base_state"):
        sparse_project_(model, {}, 0.1)
    with pytest.raises(TypeError, match="floating"):
        topk_mask(torch.ones(3, dtype=torch.long), 1)
    with pytest.raises(ValueError, match="finite"):
        topk_mask(torch.tensor([1.0, float("nan")]), 1)
    with pytest.raises(ValueError, match="empty"):
        topk_mask(torch.ones(0), 0)
    with pytest.raises(ValueError, match="steps"):
        FinetuneConfig(steps=0)
    with pytest.raises(ValueError, match="method"):
        FinetuneConfig(method="dora")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def seeds():  # type: ignore[no-untyped-def]
    return make_seed_functions(MODULES, max_lines=8)


def test_seed_functions_are_pure_and_tested(seeds) -> None:  # type: ignore[no-untyped-def]
    found = find_seed_functions(MODULES, max_lines=8)
    assert any(q == "calendar.isleap" for q, _, _ in found)
    assert len(seeds) >= 4
    for sf in seeds:
        assert '"""' not in sf.source  # docstrings stripped
        assert len(sf.tests) == 6
        assert run_tests([sf.source], sf.name, sf.tests) == [True]


def test_bug_mutation_is_caught_and_rename_preserves_behaviour() -> None:
    source = "def isleap(year):\n    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)"
    tests = generate_tests(source, "isleap", seed=0)
    assert tests is not None
    rng = random.Random(0)
    caught = 0
    for _ in range(10):
        mutated = mutate_bug(source, rng)
        assert mutated is not None and mutated[0] != source
        caught += not run_tests([mutated[0]], "isleap", tests)[0]
    assert caught >= 5
    renamed = rename_variables(source, rng)
    assert renamed is not None
    code, mapping = renamed
    assert "year" not in code and set(mapping.values()) == {"year"}
    assert run_tests([code], "isleap", tests) == [True]


def test_edit_dataset_is_verified(seeds) -> None:  # type: ignore[no-untyped-def]
    samples = build_edit_dataset(seeds, edits_per_function=2, seed=0)
    assert samples
    assert {s.category for s in samples} <= {"bug_fix", "rename"}
    for s in samples[:4]:
        assert s.instruction_source == "template"
        assert s.instruction and s.original != s.edited
        assert edit_success(s, edit_target(s))  # the reference edit passes
        assert not edit_success(s, s.original)  # leaving the code unchanged fails


def test_llm_path_uses_chat_model(seeds) -> None:  # type: ignore[no-untyped-def]
    from icml25.llm.chat import ScriptedChatModel

    chat = ScriptedChatModel(lambda m, c, i: "Please fix it.")
    samples = build_edit_dataset(seeds[:2], edits_per_function=1, chat=chat, seed=0)
    assert samples and all(
        s.instruction == "Please fix it." and s.instruction_source == "llm" for s in samples
    )
    assert chat.calls


def test_template_instruction_styles() -> None:
    texts = {template_instruction("bug_fix", s, "f", "line 2") for s in ("detailed", "concise", "human")}
    assert len(texts) == 3
    with pytest.raises(ValueError, match="style"):
        template_instruction("bug_fix", "poem", "f", "x")


def _tiny_llama() -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=257,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=512,
        eos_token_id=256,
        pad_token_id=256,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg)


def test_encode_pairs_masks_prompt(seeds) -> None:  # type: ignore[no-untyped-def]
    samples = build_edit_dataset(seeds[:2], edits_per_function=1, seed=0)
    codec = ChatCodec(None)
    ids, labels, attn = encode_pairs(
        codec, [edit_messages(s) for s in samples], [edit_target(s) for s in samples], 400
    )
    assert ids.shape == labels.shape == attn.shape and ids.dtype == torch.long
    target = codec.encode(edit_target(samples[0])) + [256]
    row = labels[0][labels[0] != -100].tolist()
    assert row == target[: len(row)]


@pytest.mark.parametrize("method", ["selekt", "sft", "lora", "sft_then_project"])
def test_finetune_methods_on_tiny_llama(method: str) -> None:
    model = _tiny_llama()
    codec = ChatCodec(None)
    msgs = [[{"role": "user", "content": f"say {i}"}] for i in range(4)]
    data = encode_pairs(codec, msgs, [f"ok {i}" for i in range(4)], 64)
    cfg = FinetuneConfig(method=method, steps=6, batch_size=2, lr=1e-2, alpha=0.1, period_steps=2, lora_r=2)  # type: ignore[arg-type]
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    res = finetune(model, data, cfg, seed=0)
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())  # input untouched
    assert res.history.train_loss[-1] < res.history.train_loss[0]
    if method in ("selekt", "sft_then_project"):
        assert max(v for k, v in res.changed.items() if k != "__total__") <= 0.1
        assert res.n_projections == (3 if method == "selekt" else 1)  # steps 2, 4, 6 (the last is final)
    else:
        assert res.changed_total > 0.1


def test_tiny_check_runs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from icml25.core.results import ResultStore
    from icml25.language.selekt.check import CHECK

    result = CHECK.run("tiny", n_seeds=2, overrides={"lrs": (3e-3, 1e-3)}, store=ResultStore(tmp_path))
    assert "inconclusive" in str(result.verdict)
    series = result.to_json()["series"]
    # lr_tuning="first_seed": seed 0 sweeps the grid for every arm, seed 1 reuses each arm's choice
    assert len(series["0"]["lr_val_loss"]) == 6 and len(series["1"]["lr_val_loss"]) == 3
    chosen = {k.split("@")[0]: float(k.split("@")[1]) for k in series["1"]["lr_val_loss"]}
    for arm, lr in chosen.items():
        grid = {float(k.split("@")[1]): v for k, v in series["0"]["lr_val_loss"].items() if k.startswith(arm)}
        assert lr == min(grid, key=lambda x: grid[x])
    # the precision chosen from the processor is stored with the result, with its reason
    from icml25.language.selekt import choose_precision

    expected = choose_precision(CHECK.config("tiny").precision)
    assert (series["0"]["precision"], series["0"]["precision_reason"]) == expected


def test_completion_loss_matches_hf_loss() -> None:
    model = _tiny_llama()
    codec = ChatCodec(None)
    msgs = [[{"role": "user", "content": "say " + "x" * i}] for i in range(4)]
    ids, labels, attn = encode_pairs(codec, msgs, [f"ok {i}" * (i + 1) for i in range(4)], 200)
    for sl in (slice(0, 4), slice(0, 1), slice(2, 4)):
        w = int(attn[sl].sum(1).max())
        with torch.no_grad():
            ref = model(input_ids=ids[sl, :w], attention_mask=attn[sl, :w], labels=labels[sl, :w]).loss
            ours = completion_loss(model, (ids[sl], labels[sl], attn[sl]))
        assert torch.allclose(ours, ref, rtol=1e-5, atol=1e-6)


def test_bf16_finetune_keeps_constraint() -> None:
    model = _tiny_llama()
    codec = ChatCodec(None)
    msgs = [[{"role": "user", "content": f"say {i}"}] for i in range(4)]
    data = encode_pairs(codec, msgs, [f"ok {i}" for i in range(4)], 64)
    cfg = FinetuneConfig(
        method="selekt", steps=6, batch_size=2, lr=1e-2, alpha=0.1, period_steps=4, precision="bf16"
    )
    res = finetune(model, data, cfg, seed=0)
    assert res.n_projections == 2  # step 4, then the final one
    assert max(v for k, v in res.changed.items() if k != "__total__") <= 0.1
    assert res.history.train_loss[-1] < res.history.train_loss[0]
    assert all(p.dtype == torch.float32 for p in res.model.parameters())  # fp32 master weights
    with pytest.raises(ValueError, match="precision"):
        FinetuneConfig(precision="fp8")  # type: ignore[arg-type]


def test_check_config_validation() -> None:
    from icml25.language.selekt.check import SeleKTCheckConfig

    with pytest.raises(ValueError, match="lr_tuning"):
        SeleKTCheckConfig(lr_tuning="never")
    with pytest.raises(ValueError, match="precision"):
        SeleKTCheckConfig(precision="fp16")
    with pytest.raises(ValueError, match="gen_batch"):
        SeleKTCheckConfig(gen_batch=0)


def test_corpus_ids_is_a_prefix_of_the_whole_text() -> None:
    from icml25.language.selekt.check import _corpus_ids

    codec = ChatCodec(None)
    text = "héllo wörld, " * 50
    assert _corpus_ids(codec, text, 40).tolist() == codec.encode(text)[:40]
    assert _corpus_ids(codec, "abc", 40).tolist() == codec.encode("abc")


def test_full_preset_constructs() -> None:
    from icml25.language.selekt.check import CHECK

    cfg = CHECK.config("full")
    assert cfg.model == "smollm2-135m-instruct" and cfg.alpha == 0.05 and cfg.instructions == "llm"
    FinetuneConfig(
        method="selekt", steps=cfg.steps, lr=cfg.lrs[0], alpha=cfg.alpha, period_steps=cfg.period_steps
    )


def _gen_model() -> nn.Module:
    from icml25.llm.models import tiny_random_llama

    return tiny_random_llama(eos_token_id=256, pad_token_id=256, init_std=0.3)


def test_batched_greedy_equals_one_by_one() -> None:
    model = _gen_model()
    rng = random.Random(0)
    prompts = [[rng.randrange(256) for _ in range(rng.randint(3, 20))] for _ in range(7)]
    budgets = [rng.randint(1, 12) for _ in prompts]
    batched = greedy_generate(model, prompts, budgets, pad_id=256, eos_id=256, batch_size=4)
    assert [len(b) <= n for b, n in zip(batched, budgets, strict=True)] == [True] * 7
    for p, n, b in zip(prompts, budgets, batched, strict=True):
        ids = torch.tensor([p])
        ref = model.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, do_sample=False, pad_token_id=256
        )[0, len(p) :].tolist()
        assert b == ref
        assert greedy_generate(model, [p], n, pad_id=256, eos_id=256) == [ref]


def test_stopping_on_the_completion_text_leaves_the_cut_completion_unchanged() -> None:
    model = _gen_model()
    rng = random.Random(1)
    prompts = [[rng.randrange(256) for _ in range(rng.randint(3, 12))] for _ in range(5)]

    def decode(ids: list[int]) -> str:
        return bytes(i for i in ids if i < 256).decode("latin-1")

    full = greedy_generate(model, prompts, 24, pad_id=256, eos_id=None, batch_size=5)
    texts = [decode(t) for t in full]
    stops = sorted({t[8:10] for t in texts if len(t) >= 10})  # pairs that do occur mid-completion
    stopped = greedy_generate(
        model, prompts, 24, pad_id=256, eos_id=None, batch_size=5, stop_in_completion=stops, decode=decode
    )

    def cut(text: str) -> str:
        for s in stops:
            text = text.split(s)[0]
        return text

    assert [cut(decode(t)) for t in stopped] == [cut(t) for t in texts]
    assert sum(len(t) for t in stopped) < sum(len(t) for t in full)  # it did stop early
    with pytest.raises(ValueError, match="decode"):
        greedy_generate(model, prompts, 4, pad_id=256, eos_id=None, stop_in_completion=["x"])


def test_greedy_generate_bad_input() -> None:
    model = _gen_model()
    with pytest.raises(ValueError, match="prompts"):
        greedy_generate(model, [], 4, pad_id=256, eos_id=256)
    with pytest.raises(ValueError, match="prompts"):
        greedy_generate(model, [[]], 4, pad_id=256, eos_id=256)
    with pytest.raises(TypeError, match="prompts"):
        greedy_generate(model, [[1.5]], 4, pad_id=256, eos_id=256)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="max_new_tokens"):
        greedy_generate(model, [[1]], 0, pad_id=256, eos_id=256)
    with pytest.raises(ValueError, match="max_new_tokens"):
        greedy_generate(model, [[1], [2]], [3], pad_id=256, eos_id=256)
    with pytest.raises(ValueError, match="batch_size"):
        greedy_generate(model, [[1]], 2, pad_id=256, eos_id=256, batch_size=0)
    with pytest.raises(ValueError, match="stop"):
        greedy_generate(model, [[1]], 2, pad_id=256, eos_id=256, stop="x")


_AVX2_FLAGS = frozenset({"fpu", "sse2", "avx", "avx2", "fma"})
_AMX_FLAGS = _AVX2_FLAGS | {"avx512f", "avx512_bf16", "amx_tile", "amx_bf16"}


def test_auto_precision_follows_the_processor() -> None:
    from icml25.language.selekt import choose_precision

    def never() -> str:
        raise AssertionError("measured although the CPU flags were readable")

    # an AVX2-only CPU: emulated bfloat16 is far slower, so float32
    prec, why = choose_precision("auto", "cpu", flags=lambda: _AVX2_FLAGS, measure=never)
    assert prec == "fp32" and "no native bfloat16" in why
    # AMX / AVX512-BF16, or an Arm core with BF16: bfloat16
    prec, why = choose_precision("auto", "cpu", flags=lambda: _AMX_FLAGS, measure=never)
    assert prec == "bf16" and "amx_bf16" in why and "avx512_bf16" in why
    assert choose_precision("auto", "cpu", flags=lambda: frozenset({"fp", "asimd", "bf16"}))[0] == "bf16"
    # unreadable flags: the matmul measurement decides
    assert choose_precision("auto", "cpu", flags=lambda: None, measure=lambda: "fp32")[0] == "fp32"
    prec, why = choose_precision("auto", "cpu", flags=lambda: None, measure=lambda: "bf16")
    assert prec == "bf16" and "measured faster" in why
    # a GPU: its own bfloat16 support, whatever the CPU has
    assert choose_precision("auto", "cuda", flags=lambda: _AVX2_FLAGS, cuda_bf16=lambda: True)[0] == "bf16"
    assert choose_precision("auto", "cuda", flags=lambda: _AMX_FLAGS, cuda_bf16=lambda: False)[0] == "fp32"
    # explicit choices are kept; anything else is refused
    assert choose_precision("bf16", "cpu", flags=lambda: _AVX2_FLAGS) == ("bf16", "set in the config")
    assert choose_precision("fp32", "cpu", flags=lambda: _AMX_FLAGS)[0] == "fp32"
    with pytest.raises(ValueError, match="precision"):
        choose_precision("fp16")


def test_cpu_flags_reads_x86_and_arm_cpuinfo(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from icml25.language.selekt.precision import cpu_flags

    x86 = tmp_path / "x86"
    x86.write_text("processor\t: 0\nmodel name\t: test\nflags\t\t: fpu avx2 amx_bf16\n\nprocessor\t: 1\n")
    assert cpu_flags(x86) == frozenset({"fpu", "avx2", "amx_bf16"})
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd bf16\n")
    assert cpu_flags(arm) == frozenset({"fp", "asimd", "bf16"})
    none = tmp_path / "none"
    none.write_text("processor\t: 0\n")
    assert cpu_flags(none) is None and cpu_flags(tmp_path / "missing") is None


def test_finetune_auto_precision_resolves_from_the_processor(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import importlib

    ft = importlib.import_module("icml25.language.selekt.finetune")
    pr = importlib.import_module("icml25.language.selekt.precision")

    seen: list[str] = []
    monkeypatch.setattr(pr, "cpu_flags", lambda: _AVX2_FLAGS)
    real = ft._bf16_completion_loss
    monkeypatch.setattr(ft, "_bf16_completion_loss", lambda *a: seen.append("bf16") or real(*a))
    model = _tiny_llama()
    codec = ChatCodec(None)
    msgs = [[{"role": "user", "content": f"say {i}"}] for i in range(4)]
    data = encode_pairs(codec, msgs, [f"ok {i}" for i in range(4)], 64)
    cfg = FinetuneConfig(method="sft", steps=2, batch_size=2, lr=1e-3, precision="auto")
    finetune(model, data, cfg, seed=0)
    assert seen == []  # AVX2 only: float32
    monkeypatch.setattr(pr, "cpu_flags", lambda: _AMX_FLAGS)
    finetune(model, data, cfg, seed=0)
    assert seen == ["bf16", "bf16"]  # native bfloat16: autocast


# ---- issue 40: enough held-out edits, a retention probe the base model passes, paired criteria ----


def test_teacher_forced_exact_match_is_greedy_exact_match() -> None:
    """An edit counts as exact under teacher forcing exactly when greedy decoding reproduces it."""
    from icml25.language.selekt.scoring import target_scores

    model = _gen_model()
    codec = ChatCodec(None)
    msgs = [[{"role": "user", "content": f"edit {i}: x = {i}"}] for i in range(6)]
    prompts = [codec.encode(codec.prompt_text(m)) for m in msgs]
    outs = greedy_generate(model, prompts, 8, pad_id=codec.pad_id, eos_id=-1, batch_size=3)
    # a target equal to greedy's own output is exact; a target with its last token changed is not
    width = max(len(p) for p in prompts) + 8
    ids = torch.full((6, width), codec.pad_id, dtype=torch.long)
    labels = torch.full((6, width), -100, dtype=torch.long)
    attn = torch.zeros((6, width), dtype=torch.long)
    expected = []
    for i, (p, o) in enumerate(zip(prompts, outs, strict=True)):
        t = list(o)
        assert len(t) == 8
        if i % 2:
            t[-1] = (t[-1] + 1) % 256
        ids[i, : len(p) + 8] = torch.tensor(p + t)
        labels[i, len(p) : len(p) + 8] = torch.tensor(t)
        attn[i, : len(p) + 8] = 1
        expected.append(float(i % 2 == 0))
    exact, loss = target_scores(model, (ids, labels, attn), batch_size=4)
    assert exact.tolist() == expected
    assert loss.shape == (6,) and (loss > 0).all()
    # batch size and row order do not change the scores
    exact1, loss1 = target_scores(model, (ids, labels, attn), batch_size=1)
    assert exact1.tolist() == expected and loss1 == pytest.approx(loss, rel=1e-4, abs=1e-5)


class _PositionLM(nn.Module):
    """A fake causal LM whose argmax at position t is ``text[t + 1]`` (byte ids), whatever the input."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.seq = list(text.encode()) + [0] * 256
        self.dummy = nn.Parameter(torch.zeros(1))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        b, t = input_ids.shape
        logits = torch.zeros(b, t, 257)
        logits[:, torch.arange(t), torch.tensor(self.seq[1 : t + 1])] = 5.0
        return logits + 0 * self.dummy


def test_token_line_index_and_line_scores() -> None:
    from icml25.language.selekt.scoring import encode_completions, line_scores, token_line_index

    codec = ChatCodec(None)
    assert token_line_index(codec, codec.encode("ab\ncd\n\nx")) == [0, 0, 0, 1, 1, 1, 2, 3]
    prompt, own = "def f(x):\n", "    y = x\n    return y"
    model = _PositionLM(prompt + own)
    data, index = encode_completions(
        codec, [prompt, prompt, prompt], [own, "#" + own[1:], own[:-1] + "z"], 64
    )
    scores = line_scores(model, data, index, batch_size=2)
    assert [(r, line) for r, line, _ in scores] == [(r, k) for r in (0, 1, 2) for k in (0, 1)]
    assert [ok for *_, ok in scores] == [True, True, False, True, True, False]


def test_probe_keeps_only_lines_the_base_completes(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The retention probe is built from lines the base model completes, so the base retains all of
    them and a model that forgot can score below it (the earlier HumanEval subset: 0 of 4 solved)."""
    import icml25.data.humaneval as he
    from icml25.language.selekt import check as chk

    codec = ChatCodec(None)
    prompt, own = "def g(a, b):\n", "    c = a\n    return c + b\n"
    base = _PositionLM(prompt + own)
    problems = [
        he.HumanEvalProblem("HumanEval/0", prompt, "g", "    return 1\n", ""),  # not the base's text
        he.HumanEvalProblem("HumanEval/1", prompt, "g", own, ""),  # the base's own text: all exact
    ]
    monkeypatch.setattr(he, "load_humaneval", lambda: problems)
    cfg = chk.SeleKTCheckConfig(model="random-tiny", probe_pool=2, probe_max_len=64, eval_batch=2)
    probe = chk._build_probe(base, codec, cfg, bf16=False)
    data, lines, keys = probe
    assert data[0].shape[0] == 1 and keys == [(0, 0), (0, 1)]  # only the problem the base completes
    assert chk._probe_retained(base, probe, 2, False).tolist() == [1.0, 1.0]
    forgot = _PositionLM(prompt + own.replace("return", "yield "))
    assert chk._probe_retained(forgot, probe, 2, False).tolist() == [1.0, 0.0]


def test_split_gives_enough_test_edits_on_disjoint_functions() -> None:
    from icml25.language.selekt.check import SeleKTCheckConfig, split_edit_data

    seeds = make_seed_functions(MODULES, max_lines=12, seed=0)
    cfg = SeleKTCheckConfig(
        n_val_functions=2, n_test_edits=6, test_edits_per_function=3, edits_per_function=1
    )
    splits, fns = split_edit_data(seeds, cfg, seed=1)
    assert len(splits["test"]) >= 6 and fns["train"] >= 2
    names = {k: {s.task_id.rsplit("/", 1)[0] for s in v} for k, v in splits.items()}
    assert not (names["test"] & names["train"]) and not (names["val"] & names["train"])
    assert not (names["test"] & names["val"])
    again, _ = split_edit_data(seeds, cfg, seed=1)
    assert [s.original for s in again["test"]] == [s.original for s in splits["test"]]
    with pytest.raises(ValueError, match="test edits"):
        split_edit_data(seeds, SeleKTCheckConfig(n_test_edits=10_000), seed=0)


def test_small_check_is_on_the_protocol() -> None:
    """Issue 40: at least 40 held-out edits per seed, a reference arm, gates (positive control, a
    probe the base model passes), and a paired headline with a declared smallest effect."""
    from icml25.language.selekt.check import CHECK

    cfg = CHECK.config("small")
    assert cfg.n_test_edits >= 40 and cfg.edit_eval == "exact" and cfg.probe_pool > 0
    claim = CHECK.claim_for(cfg)
    assert claim.references == ("base",)
    gates = {g.name: g for g in claim.gates_at("small")}
    assert {"sft_learns_edits", "probe_has_lines", "sft_forgets"} <= set(gates)
    assert gates["probe_has_lines"].threshold >= 40
    head = claim.headline_criterion()
    assert head.other_arm == "sft" and head.comparison == "non_inferiority" and head.smallest_effect
    for c in claim.criteria_at("small"):
        if c.other_arm is not None:
            assert c.smallest_effect and c.effect_source


def test_medium_preset_is_small_on_a_gpu_with_the_seeds_to_resolve_it_and_runs_one_short_seed() -> None:
    """Issue 40, item 3: small's headline needs about 15x its units; medium is the same experiment
    on one GPU with 16x the seeds. Here it constructs and runs one shortened seed on the CPU."""
    import dataclasses
    from pathlib import Path

    from icml25.core.check import RunContext
    from icml25.core.progress import NullReporter
    from icml25.language.selekt.check import CHECK, SeleKTCheckConfig

    medium, small = CHECK.config("medium"), CHECK.config("small")
    assert medium.device == "cuda" and small.device == "cpu"
    # the same experiment (the recorded small run's 60 test edits and 120-problem probe pool) ...
    assert dataclasses.replace(small, device="cuda", n_test_edits=60, probe_pool=120) == medium
    assert CHECK.default_seeds["medium"] >= 15 * CHECK.default_seeds["small"]  # ... with the seeds it needs
    assert {c.name for c in CHECK.claim_for(medium).criteria_at("medium")} == {
        c.name for c in CHECK.claim_for(small).criteria_at("small")
    }
    assert {g.name for g in CHECK.claim_for(medium).gates_at("medium")} == {
        g.name for g in CHECK.claim_for(small).gates_at("small")
    }
    with pytest.raises(ValueError, match="device"):
        SeleKTCheckConfig(device="gpu0")
    short = dataclasses.replace(
        CHECK.config("tiny"), device="cpu", steps=1, period_steps=1, lrs=(3e-3,), probe_pool=2,
        n_humaneval=0,
    )  # fmt: skip
    ctx = RunContext(slug="selekt", scale="medium", run_dir=Path("."), reporter=NullReporter())
    CHECK.begin_run(short)
    outcome = CHECK.run_seed(short, 0, ctx)
    assert set(outcome.metrics) == set(CHECK.claim.arms)
    assert outcome.metrics["selekt"]["projections"] == 1.0
