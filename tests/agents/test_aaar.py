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
from icml25.agents.aaar.check import CHECK
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
    assert crit["all_positive_f1_exact"].passed
    assert result.metrics["generic"]["weak_itf_idf"].mean == pytest.approx(0.0)
    assert result.metrics["majority"]["eq_binary_f1"].mean == pytest.approx(0.4)


def test_full_preset_constructs_and_runs_one_step(tmp_path: Path) -> None:
    from icml25.core.results import ResultStore

    full = CHECK.config("full")
    assert full.k_words == 1000 and full.window == 2000 and full.n_equation_papers == 1049
    result = CHECK.run(
        "full",
        seeds=[0],
        overrides={"model": "scripted", "n_equation_papers": 4, "n_papers": 3},
        store=ResultStore(tmp_path),
    )
    assert 0 <= result.metrics["llm"]["eq_accuracy"].mean <= 1
    with pytest.raises(ValueError, match="tau"):
        CHECK.config("small", {"tau": 1.5})
