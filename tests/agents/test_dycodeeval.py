"""DyCodeEval: helpers, roles over a scripted model, validation, metrics, contamination, presets."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.agents.dycodeeval import (
    CodeTask,
    DyCodeEvalConfig,
    DyCodeEvalGenerator,
    ExecutionValidator,
    LLMValidator,
    char_mutation,
    contaminate,
    dynamic_pass_at_1,
    dypass_at_k,
    external_diversity,
    extract_function_params,
    extract_tag,
    function_signature,
    grouped_pass_at_k,
    infer_detailed_types,
    internal_diversity,
    literal_call_inputs,
    normalize_scenario,
    replace_docstring,
    sentence_bleu,
    solve_and_judge,
    split_docstring,
    stability,
    template_role_model,
    tfidf_cosine,
)
from icml25.agents.dycodeeval.check import CHECK
from icml25.data.humaneval import load_humaneval
from icml25.llm.chat import GenerationConfig, ScriptedChatModel
from icml25.llm.code_eval import pass_at_k


@pytest.fixture(scope="module")
def tasks() -> list[CodeTask]:
    return [
        CodeTask.from_humaneval(p) for p in load_humaneval(["HumanEval/0", "HumanEval/53", "HumanEval/23"])
    ]


# -- helpers (no LLM) --------------------------------------------------------------------------


def test_task_split_and_params(tasks: list[CodeTask]) -> None:
    t = tasks[0]
    assert t.instruction.startswith("Check if in given list of numbers")
    assert t.demo_str.startswith(">>> has_close_elements")
    assert extract_function_params(t.prompt, t.entry_point) == ["numbers", "threshold"]
    assert infer_detailed_types(literal_call_inputs(t)) == ["list of float", "float"]
    assert split_docstring("Do X.\nExample:\nf(1) == 2") == ("Do X.", "Example:\nf(1) == 2")


def test_infer_detailed_types_cases() -> None:
    assert infer_detailed_types([(1, "a"), (2, "b")]) == ["int", "str"]
    assert infer_detailed_types([([1, "x"],), ({1: [2.0]},)]) == [
        "mixed(dict of int to list of float, list of int, str)"
    ]
    assert infer_detailed_types([(1,), (2, 3), (4, 5), ({1, 2}, 3)]) == ["mixed(int, set of int)", "int"]
    assert infer_detailed_types([]) == []


def test_replace_docstring_keeps_signature_and_examples(tasks: list[CodeTask]) -> None:
    t = tasks[0]
    v = t.with_instruction(
        "In banking, check whether two amounts are too close.", task_id="v", scenario="Banking: x"
    )
    assert function_signature(v.prompt, v.entry_point) == function_signature(t.prompt, t.entry_point)
    assert "In banking" in v.prompt and ">>> has_close_elements([1.0, 2.0, 3.0], 0.5)" in v.prompt
    assert "Check if in given list" not in v.prompt
    assert v.test == t.test and v.seed_id == t.seed_id
    src = "def f(a):\n    'old'\n    return a\n"
    out = replace_docstring(src, "f", "new")
    assert "new" in out and "old" not in out and "return a" in out
    with pytest.raises(ValueError, match="no function"):
        replace_docstring(src, "g", "x")


def test_extract_tag_and_normalize() -> None:
    assert extract_tag("a <s>x</s> b <s>\ny\n</s>", "s") == ["x", "y"]
    assert extract_tag("nothing", "s") == []
    assert normalize_scenario("1. Healthcare: triage queues.") == "Healthcare: triage queues"
    assert normalize_scenario("no colon here") is None
    assert normalize_scenario(" : empty") is None
    assert normalize_scenario("Domain: banking, fraud") is None


# -- validation --------------------------------------------------------------------------------


def test_execution_validator(tasks: list[CodeTask]) -> None:
    t = tasks[1]
    good = t.with_instruction("Sum two ledger amounts.", task_id="g", scenario="Banking: ledger")
    assert ExecutionValidator().check(t, good) == (True, "")
    renamed = replace(good, prompt=good.prompt.replace("x: int", "a: int"))
    ok, reason = ExecutionValidator().check(t, renamed)
    assert not ok and reason == "signature changed"
    broken = replace(good, canonical_solution="    return x - y\n")
    ok, reason = ExecutionValidator().check(t, broken)
    assert not ok and reason.startswith("execution")


def test_llm_validator_rule() -> None:
    assert (
        LLMValidator.accepts(" Yes, they match")
        and not LLMValidator.accepts("No")
        and not LLMValidator.accepts("")
    )


# -- the pipeline over scripted models ---------------------------------------------------------


def test_template_control_pipeline_accepts_equivalent_variants(tasks: list[CodeTask]) -> None:
    gen = DyCodeEvalGenerator(template_role_model(), DyCodeEvalConfig(scenario_num=5, context_num=2), seed=1)
    report = gen.generate(tasks)
    assert report.stats["proposed"] == 6 and report.stats["accepted"] == 6
    for t in tasks:
        vs = report.variants[t.task_id]
        assert len(vs) == 2 and len({v.scenario for v in vs}) == 2
        assert all(v.task_id != t.task_id and v.seed_id == t.task_id for v in vs)
    again = DyCodeEvalGenerator(
        template_role_model(), DyCodeEvalConfig(scenario_num=5, context_num=2), seed=1
    )
    assert [v.prompt for v in again.generate(tasks).variants[tasks[0].task_id]] == [
        v.prompt for v in report.variants[tasks[0].task_id]
    ]


def _responder(*, rewrite: str, validator: str, fail_context: bool = False) -> Any:
    def respond(messages: list[dict[str, str]], config: GenerationConfig, i: int) -> str:
        system = messages[0]["content"]
        if "proposer" in system:
            return "Here are some:\nRetail: shelf restocking\nnot a scenario"  # no tags: lenient parse
        if "context" in system:
            if fail_context:
                raise TimeoutError("endpoint timed out")
            return "values of the shop"  # no tags
        if "rewriter" in system:
            return rewrite
        return validator

    return respond


def test_wrong_format_llm_rejection_and_model_errors(tasks: list[CodeTask]) -> None:
    cfg = DyCodeEvalConfig(scenario_num=1, context_num=1, max_rounds=1, prompts_per_round=2)
    model = ScriptedChatModel(
        _responder(rewrite="<new_problem>Add two shelf counts.</new_problem>", validator="No")
    )
    report = DyCodeEvalGenerator(model, cfg, seed=0).generate(tasks[1:2])
    assert report.scenarios == ("Retail: shelf restocking",)
    assert report.proposer_fallbacks == 2
    # the context reply has no <context> tag: rejected, as the official code, and never rewritten
    assert [(r.stage, r.reason) for r in report.records] == [("format", "no <context> tag")]
    assert not any("rewriter" in m[0]["content"] for m in model.calls)

    lenient = ScriptedChatModel(
        _responder(rewrite="<new_problem>Add two shelf counts.</new_problem>", validator="No")
    )
    report = DyCodeEvalGenerator(lenient, replace(cfg, lenient_tags=True), seed=0).generate(tasks[1:2])
    assert [r.stage for r in report.records] == ["llm_validator"]
    assert report.records[0].context_fallback and not report.records[0].rewrite_fallback
    assert any("Problem B: Add two shelf counts." in m[-1]["content"] for m in lenient.calls)
    cfg = replace(cfg, lenient_tags=True)  # the cases below test the later stages

    empty = ScriptedChatModel(_responder(rewrite="```python\nx```", validator="Yes"))
    report = DyCodeEvalGenerator(empty, cfg, seed=0).generate(tasks[1:2])
    assert [r.stage for r in report.records] == ["format"]

    down = ScriptedChatModel(_responder(rewrite="x", validator="Yes", fail_context=True))
    report = DyCodeEvalGenerator(down, cfg, seed=0).generate(tasks[1:2])
    assert [r.stage for r in report.records] == ["model_error"] and "TimeoutError" in report.records[0].reason
    assert report.stats["rejected_model_error"] == 1


def test_generator_bad_input() -> None:
    with pytest.raises(ValueError, match="tasks"):
        DyCodeEvalGenerator(template_role_model()).generate([])
    with pytest.raises(ValueError, match="context_num"):
        DyCodeEvalConfig(context_num=0)


def test_solve_and_judge_with_scripted_models(tasks: list[CodeTask]) -> None:
    solutions = {t.prompt: t.canonical_solution for t in tasks}

    def respond(messages: list[dict[str, str]], config: GenerationConfig, i: int) -> str:
        text = messages[-1]["content"]
        hit = next((s for p, s in solutions.items() if p in text), "    return None\n")
        return f"```python\n{hit}```"

    passed, completions, results = solve_and_judge(ScriptedChatModel(respond), tasks)
    assert all(passed.values()) and len(completions) == 3 and all(r.status == "ok" for r in results)
    variant = tasks[1].with_instruction("Add.", task_id="v", scenario="s")
    passed, _, _ = solve_and_judge(ScriptedChatModel(respond), [variant])
    assert passed == {"v": False}


# -- metrics -----------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=1, max_size=6), min_size=1, max_size=5), st.integers(1, 3))
def test_dypass_matches_pass_at_k_per_seed(groups: list[list[bool]], k: int) -> None:
    outcomes = {f"s{i}": g for i, g in enumerate(groups)}
    eligible = [pass_at_k(len(g), sum(g), k) for g in groups if len(g) >= k]
    got = dypass_at_k(outcomes, k)
    if eligible:
        assert got == pytest.approx(float(np.mean(eligible)))
    else:
        assert math.isnan(got)
    d1 = dynamic_pass_at_1(outcomes, seed=3)
    assert 0.0 <= d1 <= 1.0 and d1 == dynamic_pass_at_1(outcomes, seed=3)


def test_dynamic_metrics_special_cases() -> None:
    all_pass = {"a": [True, True], "b": [True]}
    assert dynamic_pass_at_1(all_pass) == 1.0 and stability(all_pass) == (1.0, 0.0)
    assert dypass_at_k({"a": [True, False, False]}, 1) == pytest.approx(1 / 3)
    assert grouped_pass_at_k({"a": [(2, 1), (2, 2)], "b": [(2, 0)]}, 1) == pytest.approx((0.75 + 0.0) / 2)
    assert math.isnan(dynamic_pass_at_1({"a": []}))
    with pytest.raises(ValueError):
        dypass_at_k({}, 1)


def test_diversity_measures() -> None:
    s = "return the sum of two integers"
    assert sentence_bleu(s, s) == pytest.approx(1.0)
    assert sentence_bleu(s, "completely unrelated words here now") < 0.05
    assert tfidf_cosine([(s, s)]) == pytest.approx(1.0)
    ext = external_diversity({"x": s}, {"x": [s, "in banking, add two deposits"]})
    assert ext["pairs"] == 2 and 0 < ext["bleu"] < 1
    inner = internal_diversity({"x": ["a b c d e", "a b c d e", "z y x w v"]})
    assert inner["pairs"] == 3
    assert math.isnan(internal_diversity({"x": ["one"]})["bleu"])
    mutated = char_mutation(s, rate=0.5, seed=0)
    assert mutated != s and sorted(mutated) == sorted(s)
    assert char_mutation(s, rate=0.0) == s


# -- contamination and presets -----------------------------------------------------------------


class _CharTokenizer:
    eos_token_id = 1

    def apply_chat_template(
        self, messages: list[dict[str, str]], tokenize: bool, add_generation_prompt: bool
    ) -> str:
        return "".join(m["content"] for m in messages) + "\n>"

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": [2 + (ord(c) % 60) for c in text]}


class _TinyCausalLM:
    """A minimal causal LM with the transformers surface ``contaminate`` uses (no transformers import)."""

    def __new__(cls) -> Any:
        import torch
        from torch import nn

        class LM(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.embed = nn.Embedding(64, 16)
                self.mix = nn.GRU(16, 32, batch_first=True)
                self.head = nn.Linear(32, 64)

            def get_input_embeddings(self) -> nn.Module:
                return self.embed

            def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> Any:
                hidden, _ = self.mix(self.embed(input_ids))
                logits = self.head(hidden)[:, :-1]
                loss = nn.functional.cross_entropy(logits.reshape(-1, 64), labels[:, 1:].reshape(-1))
                return type("Out", (), {"loss": loss})()

        return LM()


def test_contaminate_fits_leaked_solutions_and_leaves_the_original(tasks: list[CodeTask]) -> None:
    import torch

    torch.manual_seed(0)
    model = _TinyCausalLM()
    before = [p.detach().clone() for p in model.parameters()]
    tuned, history = contaminate(
        model, _CharTokenizer(), tasks[1:3], epochs=4, lr=1e-2, seed=0, method="full"
    )
    assert len(history) == 4 and history[-1] < history[0]
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert torch.equal(tuned.embed.weight, model.embed.weight)  # embeddings frozen by default
    assert not torch.equal(tuned.head.weight, model.head.weight)
    assert not tuned.training
    with pytest.raises(ValueError, match="epochs"):
        contaminate(model, _CharTokenizer(), tasks[1:2], epochs=0)
    with pytest.raises(ValueError, match="method"):
        contaminate(model, _CharTokenizer(), tasks[1:2], method="qlora")


def test_full_preset_constructs_and_runs_one_shortened_step() -> None:
    full = CHECK.config("full")
    assert full.n_problems == 164 and full.scenario_num == 50 and full.context_num == 10
    result = CHECK.run(
        "full",
        seeds=[0],
        overrides={
            "model": "simulated",
            "n_problems": 4,
            "context_num": 1,
            "template_variants": 1,
            "preservation_check": False,
        },
    )
    assert result.metrics["dycodeeval"]["proposed"].mean == 2
    assert "inflation" in result.metrics["static"]
    with pytest.raises(ValueError, match="leak_fraction"):
        replace(full, leak_fraction=1.0)


def test_leak_split_depends_on_seed() -> None:
    ids = [f"HumanEval/{i}" for i in range(8)]
    assert random.Random(0).sample(ids, 4) != random.Random(1).sample(ids, 4)


class _RolesEndpoint:
    """A minimal OpenAI-compatible /v1/chat/completions server on 127.0.0.1 (answers with one line)."""

    def __init__(self, answer: str) -> None:
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.requests: list[tuple[dict[str, Any], str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                outer.requests.append((payload, self.headers.get("Authorization", "")))
                n = payload.get("n", 1)
                message = {"role": "assistant", "content": answer}
                body = json.dumps({"choices": [{"index": i, "message": message} for i in range(n)]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_roles_from_an_openai_compatible_endpoint_end_to_end(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    import json

    endpoint = _RolesEndpoint("I would rather not rewrite this problem.")  # no variant is ever accepted
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", endpoint.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-never-stored-123")
        monkeypatch.setenv("ICML25_CACHE", str(tmp_path))
        result = CHECK.run("tiny", seeds=[0], overrides={"roles_model": "openai:roles-under-test"})
    finally:
        endpoint.close()
    assert endpoint.requests, "the roles never reached the endpoint"
    assert {p["model"] for p, _ in endpoint.requests} == {"roles-under-test"}
    assert all(auth == "Bearer sk-never-stored-123" for _, auth in endpoint.requests)
    stored = json.dumps(result.to_json())
    assert "sk-never-stored-123" not in stored  # the key is never stored
    assert "openai:roles-under-test" in result.claim["setup_notes"]
    assert any("llm_rewrite roles: openai:roles-under-test" in n for n in result.notes)
    assert str(result.verdict) == "inconclusive"  # nothing accepted: measured what it could, no crash


def test_an_endpoint_cannot_be_the_fine_tuned_code_model() -> None:
    with pytest.raises(ValueError, match="roles_model"):
        CHECK.config("tiny", {"model": "openai:some-model"})


def test_lora_contamination_trains_adapters_and_merges_them() -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=512,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config).eval()
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    leaked = [CodeTask.from_humaneval(p) for p in load_humaneval(["HumanEval/53"])]
    tuned, history = contaminate(model, _CharTokenizer(), leaked, epochs=6, lr=1e-2, seed=0)
    assert history[-1] < history[0]
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())  # original untouched
    after = tuned.state_dict()
    assert set(after) == set(before)  # adapters merged away: a plain model again
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and all(("q_proj" in k or "v_proj" in k) for k in changed)  # only the adapted layers


def test_humaneval_115_keeps_its_import_and_loses_its_old_text() -> None:
    (problem,) = load_humaneval(["HumanEval/115"])
    task = CodeTask.from_humaneval(problem)
    assert task.instruction.startswith("You are given a rectangular grid of wells")
    variant = task.with_instruction("Count bucket lowerings for the farm.", task_id="v", scenario="s")
    assert "import math" in variant.prompt and "Count bucket lowerings" in variant.prompt
    assert "rectangular grid of wells" not in variant.prompt
    assert "Example 1:" in variant.prompt  # the examples stay
    assert ExecutionValidator().check(task, variant) == (True, "")


def test_signature_only_control_swaps_the_instruction_only(tasks: list[CodeTask]) -> None:
    from icml25.agents.dycodeeval.check import signature_only_tasks

    controls = signature_only_tasks(tasks[:2], donors=tasks)
    for task, control in zip(tasks[:2], controls, strict=True):
        assert control.task_id == task.task_id + "#sig" and control.seed_id == task.seed_id
        assert control.instruction != task.instruction
        assert control.instruction in {t.instruction for t in tasks}
        assert function_signature(control.prompt, control.entry_point) == function_signature(
            task.prompt, task.entry_point
        )
        assert control.demo_str == task.demo_str and control.test == task.test
    with pytest.raises(ValueError, match="donor"):
        signature_only_tasks(tasks[:1], donors=tasks[:1])


def test_tiny_pairs_the_same_leaked_seeds_in_every_arm() -> None:
    result = CHECK.run("tiny", seeds=[0])
    static = result.metrics["static"]["inflation"].mean
    assert static == 1.0  # the simulated memoriser recalls every leaked original
    assert result.metrics["dycodeeval"]["inflation"].mean == 0.0  # and none of their variants
    assert result.metrics["signature_only"]["inflation"].mean == 0.0
    assert result.metrics["unleaked"]["inflation"].mean == 0.0
    assert result.metrics["dycodeeval"]["leaked_coverage"].mean == 1.0
    claim = CHECK.claim_for(CHECK.config("small"))
    assert claim.references == ("signature_only", "unleaked")
    assert claim.headline_criterion().smallest_effect == 0.2
    assert {g.name for g in claim.gates_at("small")} == {
        "contamination_shows",
        "variants_cover_leaked",
        "llm_rewrites_validated",
    }


def test_medium_preset_constructs_and_runs_one_shortened_step_here() -> None:
    medium = CHECK.config("medium")
    assert medium.n_problems == 40 and medium.finetune_method == "lora" and medium.template_variants == 3
    result = CHECK.run(
        "medium",
        seeds=[0],
        overrides={"model": "simulated", "n_problems": 4, "context_num": 1, "preservation_check": False},
    )
    assert result.metrics["dycodeeval"]["proposed"].mean == 2 * medium.template_variants
    assert result.metrics["static"]["inflation"].mean == 1.0


def test_clean_static_replies_are_computed_once_per_run(tasks: list[CodeTask]) -> None:
    from icml25.agents.dycodeeval import check as check_module

    calls: list[int] = []

    def reply(messages: list[dict[str, str]], config: GenerationConfig, i: int) -> str:
        calls.append(i)
        return "```python\n    return None\n```"

    coder = ScriptedChatModel(reply, "counting")
    config = replace(CHECK.config("small"), model="counting-test", n_problems=len(tasks))
    check_module._CLEAN_STATIC.pop(
        (config.model, config.n_problems, config.solve_tokens, config.batch_size), None
    )
    first = check_module._clean_static(config, coder, tasks)
    first["HumanEval/0"] = True  # callers get a copy: mutating it must not change the cache
    second = check_module._clean_static(config, coder, tasks)
    assert len(calls) == len(tasks)  # the second call is served from the cache
    assert second == dict.fromkeys((t.task_id for t in tasks), False)
