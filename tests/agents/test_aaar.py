"""Tests for the AAAR-1.0 pipeline (arXiv 2410.22394): schema, loader, metrics, prompts, check."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.agents.aaar import (
    EquationInstance,
    ExperimentInstance,
    TfidfEmbedder,
    WeaknessInstance,
    binary_prf,
    choice_accuracy,
    experiment_prompt,
    itf_idf,
    load_records,
    make_benchmark,
    paraphrase,
    parse_binary,
    parse_choice,
    parse_numbered_list,
    predict_equation_binary,
    predict_equation_choice,
    predict_experiments,
    predict_weaknesses,
    rouge_scores,
    sn_prf,
    soft_match,
    soft_prf,
    split_chunks,
    truncate_context,
)
from icml25.agents.aaar.check import CHECK, copies_example, modal_share, review, usable_list
from icml25.agents.aaar.synth import GENERIC_WEAKNESSES, extractive_review, is_flaw_cue, lengthen
from icml25.llm.chat import ScriptedChatModel

WORDS = ["ablation", "baseline", "dataset", "seed", "variance", "notation", "scaling", "transfer", "gate"]


def onehot(vocab: list[str]):
    """An embedder mapping each known string to its own axis (cos = 1 if equal, else 0)."""

    def embed(texts):
        out = np.zeros((len(texts), len(vocab)))
        for i, t in enumerate(texts):
            out[i, vocab.index(t)] = 1.0
        return out

    return embed


# -- schema and loader ------------------------------------------------------------------------------


def test_equation_record_letters_and_labels() -> None:
    inst = EquationInstance.from_record(
        {
            "context_before": "a",
            "context_after": "b",
            "options_list": ["x=1", "x=2", "x=3", "x=4"],
            "answer": "C",
        }
    )
    assert inst.answer == 2 and inst.letter == "C" and inst.labels == (0, 0, 1, 0)
    with pytest.raises(ValueError, match="answer"):
        EquationInstance("p", "a", "b", ("x", "y"), 2)
    with pytest.raises(TypeError, match="options"):
        EquationInstance("p", "a", "b", "xy", 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="explanations"):
        ExperimentInstance("p", "text", ("e1", "e2"), ("why",))
    with pytest.raises(ValueError, match="reviews"):
        WeaknessInstance("p", "text", ())


def test_loader_reads_json_and_jsonl_in_the_release_schema(tmp_path: Path) -> None:
    eq = [
        {
            "paper_id": "1",
            "context_before": "We define",
            "context_after": "where y",
            "options_list": ["a", "b", "c", "d"],
            "answer": "B",
        },
        {
            "paper_id": "2",
            "context_before": "Then",
            "context_after": "so",
            "options_list": ["e", "f", "g", "h"],
            "answer": "(A)",
        },
    ]
    (tmp_path / "eq.jsonl").write_text("\n".join(json.dumps(r) for r in eq))
    loaded = load_records(tmp_path / "eq.jsonl", "equation")
    assert [x.answer for x in loaded] == [1, 0]  # type: ignore[union-attr]
    exp = {"2201.0001": {"input": "paper text", "experiments": ["e1"], "explanations": ["why"]}}
    (tmp_path / "exp.json").write_text(json.dumps(exp))
    (x,) = load_records(tmp_path / "exp.json", "experiment")
    assert x.paper_id == "2201.0001" and x.experiments == ("e1",)  # type: ignore[union-attr]
    weak = [{"id": "a", "text": "paper", "weaknesses": [["w1", "w2"], ["w3"]]}]
    (tmp_path / "weak.json").write_text(json.dumps(weak))
    (w,) = load_records(tmp_path / "weak.json", "weakness")
    assert w.reviews == (("w1", "w2"), ("w3",))  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="task"):
        load_records(tmp_path / "weak.json", "review")  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError):
        load_records(tmp_path / "missing.json", "weakness")
    (tmp_path / "bad.json").write_text(json.dumps([{"text": "x"}]))
    with pytest.raises(ValueError, match="weaknesses"):
        load_records(tmp_path / "bad.json", "weakness")


# -- metrics --------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1)), min_size=1, max_size=40))
def test_binary_prf_matches_sklearn(pairs: list[tuple[int, int]]) -> None:
    from sklearn.metrics import f1_score, precision_score, recall_score

    pred, gold = [p for p, _ in pairs], [g for _, g in pairs]
    ours = binary_prf(pred, gold)
    assert ours["f1"] == pytest.approx(f1_score(gold, pred, zero_division=0))
    assert ours["precision"] == pytest.approx(precision_score(gold, pred, zero_division=0))
    assert ours["recall"] == pytest.approx(recall_score(gold, pred, zero_division=0))


def test_all_positive_f1_is_point_four_and_accuracy() -> None:
    gold = [1, 0, 0, 0] * 25
    assert binary_prf([1] * 100, gold) == {"precision": 0.25, "recall": 1.0, "f1": pytest.approx(0.4)}
    assert choice_accuracy([0, None, 2], [0, 1, 1]) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="0 and 1"):
        binary_prf([2], [1])
    with pytest.raises(TypeError, match="dtype"):
        binary_prf([0.5], [1])  # type: ignore[list-item]


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6, unique=True),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6, unique=True),
)
def test_soft_prf_against_a_naive_loop(pred: list[str], gold: list[str]) -> None:
    embed = TfidfEmbedder([*WORDS, "ablation baseline", "seed variance"])
    ours = soft_prf(pred, gold, embed)
    vp, vg = embed(pred), embed(gold)
    cos = [[float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) for b in vg] for a in vp]
    p = float(np.mean([max(r) for r in cos]))
    r = float(np.mean([max(cos[i][j] for i in range(len(pred))) for j in range(len(gold))]))
    assert ours["precision"] == pytest.approx(p) and ours["recall"] == pytest.approx(r)
    assert ours["f1"] == pytest.approx(2 * p * r / (p + r) if p + r else 0.0)
    assert soft_prf(gold, gold, embed)["f1"] == pytest.approx(1.0)
    swapped = soft_prf(gold, pred, embed)
    assert swapped["precision"] == pytest.approx(ours["recall"])
    # SN-F1 with one reviewer is the soft F1
    assert sn_prf(pred, [gold], embed)["f1"] == pytest.approx(ours["f1"])


def test_soft_match_rouge_and_empty_predictions() -> None:
    embed = onehot(WORDS)
    assert soft_match(["ablation", "seed"], ["ablation", "dataset", "gate"], embed) == pytest.approx(0.5)
    assert soft_prf([], ["seed"], embed) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    r = rouge_scores(["the cats are running"], ["the cat runs"])
    assert 0 < r["rougeL"] <= r["rouge1"] <= 1
    assert rouge_scores(["same text"], ["same text"])["rouge1"] == pytest.approx(1.0)
    # ROUGE-L is the longest common subsequence: 3 of 4 tokens in order here, ROUGE-1 all 4
    swapped = rouge_scores(["a b c d"], ["a c b d"])
    assert swapped["rouge1"] == pytest.approx(1.0) and swapped["rougeL"] == pytest.approx(0.75)
    # stemming: "runs"/"running" -> "run" (Porter), short tokens are kept as they are
    assert rouge_scores(["dogs running"], ["dog runs"])["rouge1"] == pytest.approx(1.0)


def test_sn_prf_two_reviewers_by_hand() -> None:
    embed = onehot(WORDS)
    out = sn_prf(["ablation", "seed"], [["ablation", "gate"], ["seed"]], embed)
    # recall: reviewer 1 -> (1 + 0)/2, reviewer 2 -> 1; mean 0.75
    # precision: "ablation" -> (1 + 0)/2, "seed" -> (0 + 1)/2; mean 0.5
    assert out["recall"] == pytest.approx(0.75) and out["precision"] == pytest.approx(0.5)


def test_itf_idf_by_hand_and_generic_lists_score_zero() -> None:
    embed = onehot(WORDS)
    # paper 0: two distinct specific items; paper 1 shares "seed" with paper 0; paper 2 unrelated.
    lists = [["ablation", "seed"], ["seed", "gate"], ["notation", "scaling"]]
    out = itf_idf(lists, embed, tau=0.5)
    n = 3
    # O_j = 1 (self only, distinct items); P = 1 + 1 for "seed" (in another paper), 1 otherwise
    paper0 = (math.log(2 / 1) * math.log(n / 1) + math.log(2 / 1) * math.log(n / 2)) / 2
    assert out["per_paper"][0] == pytest.approx(paper0)
    assert out["per_paper"][2] == pytest.approx(math.log(2) * math.log(3))
    # a duplicated item within a list raises O_j (self-similarity counted with its copy)
    dup = itf_idf([["ablation", "ablation"], ["gate", "seed"]], embed)["per_paper"][0]
    assert dup == pytest.approx(0.0)
    same = itf_idf([["seed", "gate"]] * 4, embed)
    assert same["score"] == pytest.approx(0.0)  # P_j = N: every paper has the same list
    with pytest.raises(ValueError, match="at least 2"):
        itf_idf([["seed"]], embed)
    with pytest.raises(ValueError, match="tau"):
        itf_idf(lists, embed, tau=float("nan"))


# -- prompts and parsing --------------------------------------------------------------------------


def test_parsers_and_truncation() -> None:
    assert parse_binary("1") == 1 and parse_binary("Answer: 0.") == 0 and parse_binary("maybe") is None
    assert parse_binary("10 or 0.5") is None
    assert (
        parse_choice("(C) because", 4) == 2
        and parse_choice("Answer: B", 4) == 1
        and parse_choice("E", 4) is None
    )
    assert parse_numbered_list(" ablate x\n2. compare y\nnoise", first_number_given=True) == [
        "ablate x",
        "compare y",
    ]
    assert parse_numbered_list(" No research content", first_number_given=True) == []
    assert truncate_context("a b c d", "e f g", 2) == ("c d", "e f")
    with pytest.raises(ValueError, match="k"):
        truncate_context("a", "b", 0)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 300), st.integers(1, 50))
def test_split_chunks_count_and_content(n_words: int, window: int) -> None:
    words = [f"w{i}" for i in range(n_words)]
    chunks = split_chunks(" ".join(words), window)
    assert " ".join(chunks).split() == words
    if n_words:
        assert len(chunks) == min(n_words // window + 1, n_words)
        sizes = [len(c.split()) for c in chunks]
        assert max(sizes) - min(sizes) <= 1


def test_predictions_with_a_scripted_model_retries_and_fallback() -> None:
    bench = make_benchmark(3, seed=1)
    replies = iter(["?"] * 12 + ["1"] * 4 + ["?"] * 16)

    def respond(messages, config, i):
        text = messages[-1]["content"]
        if text.endswith("Answer (0 or 1):"):
            return next(replies)
        if text.endswith("Answer:"):
            return "(B)"
        return "1. first thing\n2. second thing"

    model = ScriptedChatModel(respond)
    pred, gold, unparsed = predict_equation_binary(model, bench.equations, retries=2)
    assert len(pred) == 12 and sum(gold) == 3
    # 4 parsed as "1" on the first retry; 8 stay unparsed after the second and get the wrong label
    assert unparsed == 8
    assert predict_equation_choice(model, bench.equations) == [1, 1, 1]
    assert predict_experiments(model, bench.experiments) == [["first thing", "second thing"]] * 3
    weak = predict_weaknesses(model, bench.weaknesses, window=20)
    assert all(
        len(w) == 2 * (len(x.text.split()) // 20 + 1) for w, x in zip(weak, bench.weaknesses, strict=True)
    )


# -- synthetic set and check ----------------------------------------------------------------------


def test_synthetic_set_is_deterministic_and_well_formed() -> None:
    a, b = make_benchmark(6, seed=3), make_benchmark(6, seed=3)
    assert a == b and a != make_benchmark(6, seed=4)
    for paper in a.papers:
        eq = paper.equation
        assert len(set(eq.options)) == 4
        assert eq.options[eq.answer] in paper.experiment.text  # the gold equation is the paper's
        assert "[MASKED" not in eq.context_before + eq.context_after
        assert paraphrase(paper, "experiment") and len(paraphrase(paper, "weakness")) == len(paper.flaws)
    assert sorted({e.answer for e in make_benchmark(40, seed=0).equations}) == [0, 1, 2, 3]


def test_tiny_check_runs_and_metric_sanity_holds(tmp_path: Path) -> None:
    from icml25.core.results import ResultStore

    result = CHECK.run("tiny", store=ResultStore(tmp_path))
    crit = {c.name: c for c in result.criteria}
    assert crit["split_combine_raises_recall"].role == "headline"
    assert all(crit[name].passed for name in crit), {n: c.outcome for n, c in crit.items()}
    assert result.metrics["generic"]["weak_itf_idf"].mean == pytest.approx(0.0)
    assert result.metrics["majority"]["eq_binary_f1"].mean == pytest.approx(0.4)


def test_claim_follows_the_protocol() -> None:
    claim = CHECK.claim_for(CHECK.config("small"))
    assert claim.ours == "split_combine" and "oracle" in claim.controls
    assert {"random", "majority", "generic", "other_paper", "oracle"} <= set(claim.references)
    head = claim.headline_criterion()
    assert head.name == "split_combine_raises_recall" and head.paired and head.other_arm == "no_split"
    assert all(c.smallest_effect for c in claim.criteria_at("small") if c.other_arm is not None)
    gates = {g.name: g for g in claim.gates_at("small")}
    # the LLM's quality claims sit behind scoped gates; the control criteria decide the verdict
    assert gates["llm_answers_vary"].guards == ("eq_near_chance",)
    assert gates["llm_lists_usable"].guards == ("llm_beats_copy_input",)
    assert gates["llm_weakness_lists_parse"].guards == ("llm_weakness_generic",)
    assert not gates["papers_exceed_window"].guards and not gates["all_positive_f1_exact"].guards


def test_a_constant_answer_model_is_not_judged_near_chance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first version passed ``eq_near_chance`` for a model that answers "A" to every question;
    now the scoped gate ``llm_answers_vary`` sets that criterion aside, and the example-copying and
    empty-list gates do the same for the other LLM criteria, while the controls decide."""
    from icml25.core.results import ResultStore

    def respond(messages, config, i):
        text = messages[-1]["content"]
        if text.endswith("Answer:"):
            return "A"
        if "Experiment List" in text:  # copies the worked example, as SmolLM2 did
            return "1. Cross-label generalisation compared with earlier work.\n2. Ablate it."
        return "I cannot review this."

    from icml25.agents.aaar import check as check_module

    monkeypatch.setattr(check_module, "_model", lambda spec: ScriptedChatModel(respond))
    result = CHECK.run(
        "small",
        seeds=[0, 1, 2],
        overrides={"n_papers": 8, "n_equation_papers": 8, "n_llm_papers": 4},
        store=ResultStore(tmp_path),
    )
    crit = {c.name: c for c in result.criteria}
    assert result.metrics["llm"]["eq_modal_share"].mean == pytest.approx(1.0)
    assert crit["llm_answers_vary"].passed is False and crit["llm_lists_usable"].passed is False
    assert crit["llm_weakness_lists_parse"].passed is False
    assert result.metrics["llm"]["exp_example_copy_share"].mean == pytest.approx(1.0)
    for name in ("eq_near_chance", "llm_beats_copy_input", "llm_weakness_generic"):
        assert name in result.verdict.reason and "not judged" in result.verdict.reason
    assert crit["papers_exceed_window"].passed and crit["split_combine_raises_recall"].passed
    assert str(result.verdict) in ("reproduced", "inconclusive")


def test_official_experiment_prompt_keeps_the_release_structure() -> None:
    """The first version's prompt dropped the system role, the worked example and the opener."""
    messages = experiment_prompt("one two three four", max_words=2)
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert "Here is an example" in user and "1. Cross-label" in user and "2. Visualisation" in user
    assert user.endswith("### Your Experiment List:\n```\n")
    assert "one two" in user and "three" not in user
    short = experiment_prompt("one two", style="short")
    assert [m["role"] for m in short] == ["user"] and short[0]["content"].endswith("Experiments:")
    with pytest.raises(ValueError, match="style"):
        experiment_prompt("x", style="long")


def test_temperature_setting_reaches_every_llm_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from icml25.agents.aaar import check as check_module
    from icml25.core.results import ResultStore

    seen: list[tuple[float, int | None]] = []

    def respond(messages, config, i):
        seen.append((config.temperature, config.seed))
        return "1. Ablate the gating unit.\n2. Compare with a baseline." if i % 2 else "B"

    monkeypatch.setattr(check_module, "_model", lambda spec: ScriptedChatModel(respond))
    CHECK.run("tiny", seeds=[4], overrides={"temperature": 1.0}, store=ResultStore(tmp_path))
    assert seen and set(seen) == {(1.0, 4)}
    with pytest.raises(ValueError, match="temperature"):
        CHECK.config("small", {"temperature": -1.0})


def test_gate_measures_modal_share_and_example_copies() -> None:
    assert modal_share([0, 0, 0, 0]) == 1.0 and modal_share([0, 1, 2, 3]) == 0.25
    assert modal_share([None, None, 1]) == pytest.approx(2 / 3)
    copied = ["Cross-label generalisation compared with earlier work. Since ...", "Ablate the gate."]
    assert copies_example(copied) and not usable_list(copied)
    assert usable_list(["Ablate the gating unit on CIFAR-10."]) and not usable_list([])


def test_lengthen_moves_cues_and_the_reviewer_finds_them() -> None:
    import random

    bench = make_benchmark(12, seed=5)
    seen_late = False
    for i, paper in enumerate(bench.papers):
        long = lengthen(paper, 40, random.Random(i))
        assert long.reviews == paper.weakness.reviews and long.paper_id == paper.weakness.paper_id
        assert len(long.text.split()) > 2 * len(paper.weakness.text.split())
        assert long.text.split()[:3] == paper.weakness.text.split()[:3]
        cues = [c for c in extractive_review(long.text, generic_per_chunk=0)]
        assert len(cues) == len(paper.flaws)  # every injected cue, nothing else
        split_items, chunks = review(long.text, 200, split=True)
        first_items, one = review(long.text, 200, split=False)
        assert one == 1 and chunks == len(long.text.split()) // 200 + 1
        assert len(split_items) == len(paper.flaws) + chunks  # one generic complaint per chunk
        assert set(first_items) - set(GENERIC_WEAKNESSES) <= set(split_items)
        seen_late |= len(first_items) - 1 < len(paper.flaws)
    assert seen_late  # some cues lie beyond the first window
    assert not any(is_flaw_cue(s) for s in ("Our code will be released.", "The appendix gives the proofs."))
    with pytest.raises(ValueError, match="n_filler"):
        lengthen(bench.papers[0], -1, random.Random(0))


def test_full_preset_constructs_and_runs_one_step(tmp_path: Path) -> None:
    from icml25.core.results import ResultStore

    full = CHECK.config("full")
    assert full.k_words == 1000 and full.window == 2000 and full.n_equation_papers == 1049
    assert full.experiment_style == "official" and full.explain
    result = CHECK.run(
        "full",
        seeds=[0],
        overrides={
            "model": "scripted",
            "n_equation_papers": 4,
            "n_papers": 3,
            "n_llm_papers": 3,
            "filler_sentences": 20,
            "window": 100,
        },
        store=ResultStore(tmp_path),
    )
    assert 0 <= result.metrics["llm"]["eq_accuracy"].mean <= 1
    assert "expl_s_match" in result.metrics["llm"]
    with pytest.raises(ValueError, match="tau"):
        CHECK.config("small", {"tau": 1.5})
    with pytest.raises(ValueError, match="n_llm_papers"):
        CHECK.config("small", {"n_llm_papers": 50})
    with pytest.raises(ValueError, match="experiment_style"):
        CHECK.config("small", {"experiment_style": "long"})
