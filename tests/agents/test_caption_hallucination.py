"""Tests for icml25.agents.caption_hallucination (CapMAS; Lee et al., ICML 2025, arXiv 2412.15484).

They check the hallucination score, the released evaluator's list parser, the exact proposition
grammar, factuality and coverage, the detectors against naive references, the LLM agents through the
scripted control model, the pipeline with an oracle verifier, and the check at tiny scale.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.agents.caption_hallucination import (
    CapMAS,
    DecomposedProposition,
    LLMDecomposer,
    LLMReviser,
    ModelConfig,
    Proposition,
    RuleDecomposer,
    RuleReviser,
    TinyCaptioner,
    TinyVQA,
    TinyVQAVerifier,
    WordVocab,
    WorldConfig,
    caption_of,
    consistency_scores,
    coverage,
    detection_auroc,
    factuality,
    hallucination_score,
    inject_hallucinations,
    make_mcqs,
    parse_caption,
    parse_numbered_list,
    parse_proposition,
    proposition_text,
    proposition_true,
    read_caption,
    sample_scene,
    scripted_control_model,
    split_sentences,
    verifier_scores,
)
from icml25.agents.caption_hallucination.check import (
    CHECK,
    CORRECTION_COLUMNS,
    ITEM_STATISTICS,
    CaptionCheckConfig,
    choose_threshold,
    correction_rows,
    decomposition_f1,
    detection_rows,
    fast_auroc,
    flag_llm_propositions,
)
from icml25.agents.caption_hallucination.models import (
    CellEncoder,
    pretrain_encoder,
    render,
    train_captioner,
    train_vqa,
)
from icml25.data.shape_world import Scene, ShapeObject
from icml25.nn.train import FitConfig

SCENE = Scene(
    objects=(
        ShapeObject("triangle", "red", "large", (0, 0)),
        ShapeObject("circle", "blue", "small", (1, 1)),
        ShapeObject("square", "green", "large", (2, 2)),
    ),
    background="black",
    grid=3,
)


# -- H(u) and the list parser ------------------------------------------------------------------


def test_hallucination_score_values_and_clamp() -> None:
    assert hallucination_score(0.9, 0.1) == pytest.approx(-math.log(0.8))
    assert hallucination_score(0.5, 0.5) == pytest.approx(-math.log(1e-8))  # clamped at eps
    assert hallucination_score(0.1, 0.9, eps=1e-3) == pytest.approx(-math.log(1e-3))
    # pi = 1 flags exactly when p(T) - p(F) < e^-1
    assert hallucination_score(0.69, 0.31) < 1.0 < hallucination_score(0.68, 0.32)
    out = hallucination_score(np.array([0.9, 0.2]), np.array([0.1, 0.8]))
    assert out.shape == (2,) and out[1] > out[0]


def test_hallucination_score_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="same shape"):
        hallucination_score(np.ones(2) * 0.5, np.ones(3) * 0.5)
    with pytest.raises(ValueError, match="NaN"):
        hallucination_score(float("nan"), 0.5)
    with pytest.raises(ValueError, match="probabilities"):
        hallucination_score(1.5, 0.0)
    with pytest.raises(ValueError, match="eps"):
        hallucination_score(0.5, 0.2, eps=0.0)


@settings(max_examples=50, deadline=None)
@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_hallucination_score_is_monotone_and_non_negative(pt: float, pf: float, shift: float) -> None:
    h = float(hallucination_score(pt, pf))
    assert 0.0 <= h <= -math.log(1e-8) + 1e-9
    pt2 = min(1.0, pt + shift)  # more belief in True never raises the score
    assert float(hallucination_score(pt2, pf)) <= h + 1e-12


def test_parse_numbered_list_follows_released_rule() -> None:
    text = (
        "Here you go:\n1. there is a cat.\n2. the cat is black.\n- bullet\n3 no dot space\n4. " + "w " * 300
    )
    assert parse_numbered_list(text) == ["there is a cat.", "the cat is black."]
    rep = "1. a.\n2. a.\n3. a.\n4. b."
    assert parse_numbered_list(rep) == ["a."]


# -- the world, propositions and metrics ---------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_ground_truth_caption_round_trips(seed: int) -> None:
    scene = sample_scene(np.random.default_rng(seed), WorldConfig())
    caption = caption_of(scene)
    props = parse_caption(caption)
    assert len(props) == 3 * len(scene.objects) + 1
    assert all(proposition_true(p, scene) for p in props)
    for p in props:  # the proposition sentence reads back as itself
        assert parse_proposition(proposition_text(p), p.sentence) == p
    qs = make_mcqs(scene, np.random.default_rng(seed))
    assert coverage([caption], [qs]) == 1.0
    assert factuality([caption], [scene]) == 1.0


def test_proposition_truth_and_validation() -> None:
    assert proposition_true(Proposition("colour", "triangle", (0, 0), "red"), SCENE)
    assert not proposition_true(Proposition("colour", "triangle", (0, 0), "blue"), SCENE)
    assert not proposition_true(Proposition("size", "triangle", (1, 1), "large"), SCENE)  # absent object
    assert proposition_true(Proposition("exists", "circle", None), SCENE)
    assert not proposition_true(Proposition("background", value="white"), SCENE)
    with pytest.raises(ValueError, match="kind"):
        Proposition("texture", "circle")
    with pytest.raises(ValueError, match="needs a value"):
        Proposition("colour", "circle", (0, 0))


def test_injection_rates() -> None:
    caption = caption_of(SCENE)
    same, k = inject_hallucinations(caption, SCENE, np.random.default_rng(0), rate=0.0)
    assert same == caption and k == 0
    wrong, k = inject_hallucinations(caption, SCENE, np.random.default_rng(0), rate=1.0, object_rate=1.0)
    assert k == 4
    props = parse_caption(wrong)
    for i in range(4):  # every object sentence now states something false
        assert any(not proposition_true(p, SCENE) for p in props if p.sentence == i)
    with pytest.raises(ValueError, match="rate"):
        inject_hallucinations(caption, SCENE, np.random.default_rng(0), rate=1.5)


def test_factuality_and_coverage_against_hand_counts() -> None:
    caption = "a large blue triangle at the top left. black background."
    # props: exists(T), colour blue(F), size large(T), background(T) -> 3/4
    assert factuality([caption], [SCENE]) == pytest.approx(0.75)
    qs = make_mcqs(SCENE, np.random.default_rng(1))
    answers = [read_caption(caption, q) for q in qs]
    right = sum(a == q.answer for a, q in zip(answers, qs, strict=True))
    # shape + size of the top-left object and the background are right; the colour is wrong;
    # the count (1) is wrong; the other objects are unknown
    assert right == 3
    assert coverage([caption], [qs]) == pytest.approx(3 / len(qs))
    assert math.isnan(factuality([""], [SCENE]))
    with pytest.raises(ValueError, match="same length"):
        factuality([caption], [])


# -- detectors -------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.floats(-5, 5), st.booleans()), min_size=2, max_size=30))
def test_auroc_matches_pairwise_count(pairs: list[tuple[float, bool]]) -> None:
    s = np.array([p[0] for p in pairs])
    y = np.array([p[1] for p in pairs])
    got = detection_auroc(s, y)
    if y.all() or not y.any():
        assert math.isnan(got)
        return
    pos, neg = s[y], s[~y]
    ref = np.mean([1.0 if a > b else 0.5 if a == b else 0.0 for a, b in itertools.product(pos, neg)])
    assert got == pytest.approx(ref)


def test_consistency_scores_count_support() -> None:
    props = parse_caption("a large red triangle at the top left.")
    samples = [
        "a large red triangle at the top left.",
        "a small red triangle at the top left.",
        "black background.",
    ]
    scores = consistency_scores([samples], [props])[0]
    assert scores.tolist() == pytest.approx([1 - 2 / 3, 1 - 2 / 3, 1 - 1 / 3])


# -- agents through the scripted control model -----------------------------------------------------


def test_llm_agents_match_rule_agents_under_scripted_control() -> None:
    chat = scripted_control_model()
    caption = caption_of(SCENE)
    llm = LLMDecomposer(chat).decompose([caption])[0]
    rule = RuleDecomposer().decompose([caption])[0]
    assert [(p.text, p.sentence) for p in llm] == [(p.text, p.sentence) for p in rule]
    flags = [p for p in rule if p.parsed is not None and p.parsed.kind in ("colour",) and p.sentence == 0]
    flags += [p for p in rule if p.parsed is not None and p.parsed.kind == "exists" and p.sentence == 1]
    a = LLMReviser(chat).revise([caption], [flags])[0]
    b = RuleReviser().revise([caption], [flags])[0]
    assert (
        a
        == b
        == "a large triangle at the top left. a large green square at the bottom right. black background."
    )
    assert len(split_sentences(a)) == 3


def test_reviser_keeps_unflagged_captions() -> None:
    caption = caption_of(SCENE)
    assert RuleReviser().revise([caption], [[]]) == [caption]
    assert LLMReviser(scripted_control_model()).revise([caption], [[]]) == [caption]


class OracleVerifier:
    """p(True) = 1 for true propositions of the scene of each image index (tests only)."""

    def __init__(self, scenes: list[Scene]) -> None:
        self.scenes = scenes

    def prob_true_false(self, images: torch.Tensor, propositions, contexts) -> np.ndarray:
        out = []
        for img, text in zip(images, propositions, strict=True):
            scene = self.scenes[int(img[0, 0, 0].item())]
            p = parse_proposition(text)
            ok = p is not None and proposition_true(p, scene)
            out.append([0.95, 0.05] if ok else [0.05, 0.95])
        return np.asarray(out)


def test_capmas_with_oracle_verifier_removes_all_hallucinations() -> None:
    rng = np.random.default_rng(3)
    scenes = [sample_scene(rng, WorldConfig()) for _ in range(6)]
    captions = [inject_hallucinations(caption_of(s), s, rng, rate=0.6, object_rate=1.0)[0] for s in scenes]
    images = torch.zeros(6, 3, 12, 12)
    images[:, 0, 0, 0] = torch.arange(6, dtype=torch.float32)  # the oracle reads the scene index
    pipe = CapMAS(
        LLMDecomposer(scripted_control_model()),
        OracleVerifier(scenes),
        LLMReviser(scripted_control_model()),
        threshold=1.0,
    )
    results = pipe.correct(images, captions)
    assert factuality(captions, scenes) < 0.9
    assert factuality([r.caption for r in results], scenes) == 1.0
    assert all(len(r.scores) == len(r.propositions) == len(r.flagged) for r in results)
    with pytest.raises(ValueError, match="one entry per image"):
        pipe.correct(images, captions[:2])


# -- the tiny models ---------------------------------------------------------------------------------


def test_models_shapes_and_bad_input() -> None:
    vocab = WordVocab()
    mc = ModelConfig(d=16, heads=2, channels=8, layers=1)
    enc = CellEncoder(8, 16)
    cap = TinyCaptioner(len(vocab), mc, encoder=enc).eval()
    vqa = TinyVQA(len(vocab), mc, encoder=enc).eval()
    images = render([SCENE, SCENE], 12)
    assert enc(images).shape == (2, 9, 16)
    tokens = torch.tensor([[WordVocab.BOS, 7, 8], [WordVocab.BOS, 9, 10]])
    assert cap(images, tokens).shape == (2, 3, len(vocab))
    gen = cap.generate(images, max_len=5)
    assert len(gen) == 2 and all(len(g) <= 5 for g in gen)
    probs = TinyVQAVerifier(vqa, vocab).prob_true_false(
        images, ["there is a circle.", "x"], ["", caption_of(SCENE)]
    )
    assert probs.shape == (2, 2) and np.allclose(probs.sum(1), 1.0)
    scores = verifier_scores(TinyVQAVerifier(vqa, vocab), images, [["the background is black."], []])
    assert scores[0].shape == (1,) and scores[1].shape == (0,)
    bad = images.clone()
    bad[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        cap.generate(bad)
    with pytest.raises(ValueError, match="shape"):
        cap.generate(images[:, :2])
    with pytest.raises(ValueError, match="same length"):
        TinyVQAVerifier(vqa, vocab).prob_true_false(images, ["a"], ["", ""])
    with pytest.raises(ValueError, match="multiple of heads"):
        ModelConfig(d=10, heads=4)


def test_vqa_context_reader_sees_the_caption() -> None:
    """With identical images, the verifier's logits depend on the context only through the caption."""
    vocab = WordVocab()
    vqa = TinyVQA(len(vocab), ModelConfig(d=16, heads=2, channels=8)).eval()
    images = render([SCENE, SCENE], 12)
    q = ["the triangle at the top left is red."] * 2
    p = TinyVQAVerifier(vqa, vocab).prob_true_false(images, q, ["", ""])
    assert np.allclose(p[0], p[1])
    p2 = TinyVQAVerifier(vqa, vocab).prob_true_false(images, q, ["", caption_of(SCENE)])
    assert not np.allclose(p2[0], p2[1])


def test_full_preset_constructs_and_takes_one_step() -> None:
    full = CHECK.config("full")
    assert full.n_train >= 10_000 and full.n_llm >= full.n_test
    rng = np.random.default_rng(0)
    world = WorldConfig(full.image_size, full.min_objects, full.max_objects)
    scenes = [sample_scene(rng, world) for _ in range(4)]
    images = render(scenes, full.image_size)
    vocab = WordVocab()
    mc = ModelConfig(d=full.d, layers=full.layers, channels=full.channels)
    enc = CellEncoder(full.channels, full.d)
    one = FitConfig(steps=1, batch_size=4, lr=full.lr)
    pretrain_encoder(enc, full.d, images, scenes, one)
    assert (
        len(
            train_captioner(TinyCaptioner(len(vocab), mc, encoder=enc), vocab, images, scenes, one).train_loss
        )
        == 1
    )
    assert len(train_vqa(TinyVQA(len(vocab), mc, encoder=enc), vocab, images, scenes, one).train_loss) == 1


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="image_size"):
        CaptionCheckConfig(image_size=20)
    with pytest.raises(ValueError, match="flag_rates"):
        CaptionCheckConfig(flag_rates=(0.0,))
    with pytest.raises(ValueError, match="n_train"):
        CaptionCheckConfig(n_train=0)


def test_tiny_check_runs() -> None:
    result = CHECK.run("tiny")
    assert {c.name for c in result.criteria} >= {"tiny/pipeline_runs", "tiny/removal_defined"}
    assert {"capmas", "no_correction", "random_filter", "oracle"} <= set(result.metrics)
    assert list(result.metrics["no_correction"]["removed_share"].values) == [0.0]


def test_decomposed_proposition_is_plain_data() -> None:
    p = DecomposedProposition("the background is black.", 3, parse_proposition("the background is black.", 3))
    assert p.parsed == Proposition("background", value="black", sentence=3)


def test_threshold_for_rate_never_splits_ties() -> None:
    from icml25.agents.caption_hallucination.check import threshold_for_rate

    clamp = -math.log(1e-8)
    scores = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, clamp, clamp, clamp, clamp])
    t = threshold_for_rate(scores, 0.4)
    assert (scores > t).mean() == pytest.approx(0.4)
    t = threshold_for_rate(scores, 0.1)  # nearest achievable: nothing (0.0) or all four clamped (0.4)
    assert (scores > t).mean() == 0.0
    t = threshold_for_rate(np.linspace(0, 1, 101), 0.2)
    assert (np.linspace(0, 1, 101) > t).mean() == pytest.approx(0.2, abs=0.011)


def test_hf_vlm_verifier_on_a_tiny_random_llava() -> None:
    """The verifier accepts a real Hugging Face VLM class (tiny, randomly initialised, byte-level ids)."""
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration

    from icml25.agents.caption_hallucination import HFVLMVerifier

    vision = CLIPVisionConfig(
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=12,
        patch_size=6,
    )
    text = LlamaConfig(
        vocab_size=260,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=512,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=257,
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
    )
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(config).eval()

    def encode(images: torch.Tensor, prompts: list[str]) -> dict[str, torch.Tensor]:
        rows = [[257] * 4 + list(p.encode()) for p in prompts]
        width = max(len(r) for r in rows)
        ids = torch.tensor([[0] * (width - len(r)) + r for r in rows])  # left padding
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
        return {"input_ids": ids, "attention_mask": mask, "pixel_values": images}

    verifier = HFVLMVerifier(model, encode, true_id=ord("T"), false_id=ord("F"))
    images = render([SCENE, SCENE], 12)
    probs = verifier.prob_true_false(
        images, ["there is a circle.", "there is a circle."], ["", caption_of(SCENE)]
    )
    assert probs.shape == (2, 2) and (probs >= 0).all() and (probs.sum(1) <= 1 + 1e-9).all()
    assert not np.allclose(probs[0], probs[1])  # the context reaches the model
    scores = verifier_scores(verifier, images, [["the background is black."], ["a."]])
    assert all(s.shape == (1,) and np.isfinite(s).all() for s in scores)
    with pytest.raises(ValueError, match="true_id and false_id"):
        HFVLMVerifier(model, encode, true_id=1, false_id=1)


# -- the protocol redesign (issue 39) ----------------------------------------------------------------


def test_claim_follows_the_protocol() -> None:
    claim = CHECK.claim_for(CHECK.config("small"))
    assert set(claim.references) == {"no_correction", "random_filter", "oracle"}
    assert claim.controls == ("oracle",)
    assert {g.name for g in claim.gates_at("small")} == {
        "verifier_learned",
        "hallucinations_present",
        "oracle_headroom",
        "context_is_read",
        "llm_decomposes",
    }
    head = claim.headline_criterion()
    assert head.name == "removal_beats_confidence" and head.paired and head.smallest_effect == 0.10
    for c in claim.criteria_at("small"):
        assert c.other_arm is None or c.paired, c.name
    # the LLM path is judged behind a gate that names the resource it needs
    llm_gate = next(g for g in claim.gates if g.name == "llm_decomposes")
    assert llm_gate.needs and "llm_removal_beats_confidence" in {c.name for c in claim.criteria_at("small")}
    # ... and the gate is scoped: a weak LLM sets aside only the LLM criterion, not the grammar path
    assert llm_gate.guards == ("llm_removal_beats_confidence",)


def test_non_isolated_verifier_reads_the_caption_not_only_its_overlap() -> None:
    """Two contexts that both state the question verbatim (word overlap 1) must not look alike: the
    earlier reader saw only the overlap, which is 1 for every proposition taken from the caption."""
    torch.manual_seed(0)
    vocab = WordVocab()
    vqa = TinyVQA(len(vocab), ModelConfig(d=16, heads=2, channels=8)).eval()
    images = render([SCENE, SCENE], 12)
    q = ["the triangle at the top left is red."] * 2
    short = "a large red triangle at the top left."
    longer = short + " a small blue circle in the centre. a large green square at the bottom right."
    p = TinyVQAVerifier(vqa, vocab).prob_true_false(images, q, [short, longer])
    assert not np.allclose(p[0], p[1])
    share = vqa.image_attention(vocab, images, q, ["", longer])
    assert share[0] == pytest.approx(1.0)  # isolated: all attention on the image
    assert 0.0 < share[1] < 1.0  # the caption competes for the same attention


def test_verifier_scores_so_far_context() -> None:
    seen: list[str] = []

    class Recorder:
        def prob_true_false(self, images, propositions, contexts):
            seen.extend(contexts)
            return np.tile([0.9, 0.1], (len(propositions), 1))

    caption = caption_of(SCENE)
    props = parse_caption(caption)
    images = render([SCENE], 12)
    verifier_scores(
        Recorder(), images, [[p.text for p in props]], [caption], sentences=[[p.sentence for p in props]]
    )
    sentences = split_sentences(caption)
    assert seen == [" ".join(sentences[: p.sentence + 1]) for p in props]
    with pytest.raises(ValueError, match="one sentence index per proposition"):
        verifier_scores(Recorder(), images, [[p.text for p in props]], [caption], sentences=[[0]])


def test_unparsed_llm_propositions_are_flagged_by_no_arm() -> None:
    """A proposition the grammar cannot read has no confidence or consistency score; the verifiers
    used to flag it anyway and the reviser deleted true content. By default no arm flags it."""
    readable = DecomposedProposition(
        "the triangle at the top left is red.",
        0,
        parse_proposition("the triangle at the top left is red.", 0),
    )
    unreadable = DecomposedProposition("it looks nice.", 0, None)
    scores = [np.array([5.0, 5.0])]
    assert flag_llm_propositions([[readable, unreadable]], scores, 1.0) == [[readable]]
    assert flag_llm_propositions([[readable, unreadable]], scores, 1.0, flag_unparsed=True) == [
        [readable, unreadable]
    ]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=2, max_size=40))
def test_fast_auroc_matches_sklearn(pairs: list[tuple[int, bool]]) -> None:
    s = np.array([float(a) for a, _ in pairs])
    y = np.array([b for _, b in pairs])
    want = detection_auroc(s, y)
    got = fast_auroc(s, y)
    assert (math.isnan(want) and math.isnan(got)) or got == pytest.approx(want)


def test_correction_rows_and_statistics_against_hand_counts() -> None:
    caption = "a large blue triangle at the top left. a small blue circle in the centre. black background."
    revised = "a large triangle at the top left. a small blue circle in the centre. black background."
    rng = np.random.default_rng(0)
    mcqs = [make_mcqs(SCENE, rng)]
    rows = correction_rows([caption], [revised], [SCENE], mcqs)
    row = dict(zip(CORRECTION_COLUMNS, rows[0], strict=True))
    # false before: the triangle's colour (blue); after: nothing false (7 props -> 6, all true)
    assert (row["h_before"], row["h_after"], row["n_after"], row["true_after"]) == (1, 0, 6, 6)
    assert row["questions"] == len(mcqs[0])
    assert ITEM_STATISTICS["removed_share"](rows) == 1.0
    assert ITEM_STATISTICS["factuality"](rows) == 1.0
    # the colour question about the triangle was wrong before and unanswered after: no coverage lost
    assert ITEM_STATISTICS["coverage_drop"](rows) == 0.0


def test_detection_rows_statistics() -> None:
    scores = [np.array([0.9, 0.1, 0.8]), np.array([0.2, 0.7])]
    labels = [np.array([True, False, True]), np.array([False, True])]
    late = [np.array([False, True, True]), np.array([False, True])]
    rows = detection_rows(scores, labels, late, [True, False], 4)
    assert rows.shape == (2, 20)
    assert ITEM_STATISTICS["auroc"](rows) == pytest.approx(1.0)
    flat_s = np.concatenate(scores)
    flat_y = np.concatenate(labels)
    assert ITEM_STATISTICS["auroc"](rows) == pytest.approx(detection_auroc(flat_s, flat_y))
    with pytest.raises(ValueError, match="row width"):
        detection_rows(scores, labels, late, [True, False], 2)


def test_choose_threshold_respects_the_coverage_budget() -> None:
    caption = "a large blue triangle at the top left. a small blue circle in the centre. black background."
    props = parse_caption(caption)
    rng = np.random.default_rng(0)
    mcqs = [make_mcqs(SCENE, rng)]
    truth = np.array([not proposition_true(p, SCENE) for p in props], dtype=float)
    # a perfect detector removes the false colour at no coverage cost
    tau, m = choose_threshold([truth], [props], [caption], [SCENE], mcqs, (0.1, 0.5), 0.05)
    assert m["removed_share"] == 1.0 and m["coverage_drop"] <= 0.05
    # a detector that scores the circle's existence highest would delete a true sentence: over budget,
    # so it flags nothing
    bad = np.array([1.0 if (p.kind == "exists" and p.shape == "circle") else 0.0 for p in props])
    tau, m = choose_threshold([bad], [props], [caption], [SCENE], mcqs, (0.1,), 0.05)
    assert m["removed_share"] == 0.0 and m["coverage_drop"] == 0.0


def test_decomposition_f1_of_the_grammar_control_is_one() -> None:
    caption = caption_of(SCENE)
    llm = LLMDecomposer(scripted_control_model()).decompose([caption])
    rule = RuleDecomposer().decompose([caption])
    assert decomposition_f1(llm, rule) == 1.0
    assert decomposition_f1([[]], rule) == 0.0


def test_margin_score_orders_as_h_and_breaks_its_clamp_ties() -> None:
    probs = np.array([[0.9, 0.05], [0.6, 0.3], [0.3, 0.6], [0.1, 0.85], [0.45, 0.45]])

    class Fixed:
        def prob_true_false(self, images, propositions, contexts):
            return probs[: len(propositions)]

    images = render([SCENE], 12)
    texts = [["p"] * len(probs)]
    h = verifier_scores(Fixed(), images, texts, None, score="h")[0]
    m = verifier_scores(Fixed(), images, texts, None, score="margin")[0]
    for pi in (0.1, 0.5, 1.0, 2.0):  # CapMAS's flag set at every pi is a margin threshold's
        assert ((h > pi) == (m > -math.exp(-pi))).all()
    clamped = np.isclose(h, -math.log(1e-8))
    assert clamped.sum() == 3 and len(set(m[clamped])) == 3  # H ties them, the margin orders them
    with pytest.raises(ValueError, match="score"):
        verifier_scores(Fixed(), images, texts, None, score="logit")


def test_oracle_scores_put_free_removals_first() -> None:
    from icml25.agents.caption_hallucination.check import oracle_scores

    # SCENE: red large triangle (0, 0), blue small circle (1, 1), green large square (2, 2), black
    caption = (
        "a large blue triangle at the top left. a small blue square in the centre. "
        "a large red circle at the top right. black background."
    )
    props = parse_caption(caption)
    labels = [np.array([not proposition_true(p, SCENE) for p in props])]
    s = dict(
        zip([(p.sentence, p.kind) for p in props], oracle_scores([props], labels, [SCENE])[0], strict=True)
    )
    assert s[(0, "exists")] == 0.0 and s[(0, "size")] == 0.0  # true
    assert s[(0, "colour")] == 2.0  # wrong colour for the object in the cell: free to remove
    assert s[(1, "exists")] == 1.0  # a misnamed object: its sentence still answers the cell's questions
    assert s[(1, "colour")] == 1.0 and s[(1, "size")] == 1.0  # blue and small are right for the cell
    assert s[(2, "exists")] == 2.0 and s[(2, "colour")] == 2.0  # an invented object in an empty cell
    assert s[(3, "background")] == 0.0


def test_untie_breaks_ties_without_reordering() -> None:
    from icml25.agents.caption_hallucination.check import untie

    rng = np.random.default_rng(0)
    a = [np.array([0.0, 0.25, 0.25, 0.25, 1.0])]
    b = [np.array([0.5, 0.75])]
    out = untie(a, b, rng)[0]
    assert len(set(out.tolist())) == 5  # the tie is split
    assert (np.argsort(out, kind="stable")[[0, -1]] == [0, 4]).all()
    assert (out[1:4] > 0.25).all() and (out[1:4] < 0.375).all()  # within half the smallest gap
