"""Tests for ThinkDiff (Mi et al., ICML 2025, arXiv 2502.10458): the aligner and its random split, the
toy world's tasks, the small frozen modules, the Hugging Face adapters on tiny random models and the
check at tiny scale."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.generative.thinkdiff import (
    TASKS,
    Aligner,
    DiffusersPromptEmbedDecoder,
    HFT5Decoder,
    HFVisionLM,
    ThinkDiffLVLM,
    TinyFlowDecoder,
    TinyFlowDecoderConfig,
    TinyT5,
    TinyT5Config,
    TinyVLM,
    TinyVLMConfig,
    ToyWorld,
    VLMInputs,
    WorldTrainConfig,
    alignment_data,
    answer_ids,
    caption_inputs,
    cobsat_like_tasks,
    empty_world_modules,
    icl_inputs,
    judge_accuracy,
    random_split_batch,
    round_trip_ok,
    sample_prompts,
    train_aligner,
    train_tiny_t5,
)
from icml25.generative.thinkdiff.check import CHECK


@pytest.fixture(autouse=True, scope="module")
def _one_thread():  # type: ignore[no-untyped-def]
    """Tiny convolutions on two threads slow down many times when the other core is busy; use one."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def world() -> ToyWorld:
    return ToyWorld(8, shapes=("circle", "square", "cross", "bar"), colours=("red", "green", "blue"),
                    backgrounds=("black", "white", "gray"))  # fmt: skip


def _vlm(world: ToyWorld, d: int = 16) -> TinyVLM:
    torch.manual_seed(0)
    cfg = TinyVLMConfig(world.vocab.size, d_model=d, num_heads=2, layers=2, image_size=8, patch=4)
    return TinyVLM(cfg, img_id=world.vocab.img, eos_id=world.vocab.eos).eval()


def _t5(world: ToyWorld, d: int = 16) -> TinyT5:
    torch.manual_seed(1)
    t5 = TinyT5(TinyT5Config(world.vocab.size, d_model=d, num_heads=2, enc_layers=1, dec_layers=1)).eval()
    with torch.no_grad():
        assert t5.encoder_norm.weight is not None
        t5.encoder_norm.weight.uniform_(0.5, 2.0)  # a non-trivial gain to copy
    return t5


# ----------------------------------------------------------------------------------------------
# world
# ----------------------------------------------------------------------------------------------


def test_vocab_round_trip_and_captions(world: ToyWorld) -> None:
    text = world.caption(2, 1, 0)
    assert text == "a green cross on black background"
    assert world.vocab.decode(world.vocab.encode(text) + [world.vocab.eos, 5]) == text
    ids = world.caption_ids(torch.tensor([[2, 1, 0]]))
    assert world.vocab.decode(ids[0].tolist()) == text
    assert world.parse(text) == (2, 1, 0)
    assert world.partial_caption(None, None, 1) == "on white background"
    with pytest.raises(ValueError, match="not in the vocabulary"):
        world.vocab.encode("a purple blob")


def test_random_order_captions_name_every_attribute_in_every_order() -> None:
    """Issue 41: with one fixed template the state that emits a word needs to know only that word, so the
    answer states carried no content. Random phrase order makes every first word possible."""
    w = ToyWorld(8, shapes=("circle", "square"), colours=("red", "green"), backgrounds=("black", "white"),
                 sizes=("large",), caption_order="random")  # fmt: skip
    attrs = torch.tensor([[1, 0, 1]]).expand(300, 3)
    ids = w.caption_ids(attrs, torch.Generator().manual_seed(0))
    assert ids.shape == (300, w.caption_length) == (300, 4)
    texts = {w.vocab.decode(r) for r in ids.tolist()}
    assert texts == {"red square white background", "red white background square",
                     "square red white background", "square white background red",
                     "white background red square", "white background square red"}  # fmt: skip
    assert all(w.parse(t) == (1, 0, 1) for t in texts)
    again = w.caption_ids(attrs, torch.Generator().manual_seed(0))
    assert torch.equal(ids, again)  # the generator decides the orders
    assert w.partial_caption(0, None, 1, order=(2, 1, 0)) == "white background circle"
    assert w.partial_caption(None, 1, None) == "green"
    with pytest.raises(ValueError, match="caption_order"):
        ToyWorld(8, caption_order="shuffled")


def test_random_order_answers_include_eos(world: ToyWorld) -> None:
    w = ToyWorld(8, shapes=world.shapes, colours=world.colours, backgrounds=world.backgrounds,
                 sizes=("large",), caption_order="random")  # fmt: skip
    a = answer_ids(w, torch.tensor([[0, 1, 2], [1, 2, 0]]), torch.Generator().manual_seed(3))
    assert a.shape == (2, 5) and (a[:, -1] == w.vocab.eos).all()
    assert answer_ids(world, torch.tensor([[0, 1, 2]])).shape == (1, 7)  # fixed order: 6 words + eos


def test_render_table_matches_shape_world(world: ToyWorld) -> None:
    from icml25.data.shape_world import Scene, ShapeObject, render

    img = render(Scene(objects=(ShapeObject("bar", "blue", "small"),), background="gray"), 8)
    got = world.images(torch.tensor([3, 2, 2]), torch.tensor(0))
    assert torch.allclose(got.permute(1, 2, 0), torch.from_numpy(img))


@settings(max_examples=25, deadline=None)
@given(task=st.sampled_from(TASKS), shots=st.sampled_from([1, 2, 4]), seed=st.integers(0, 10_000))
def test_prompts_share_the_latent_attribute(world: ToyWorld, task: str, shots: int, seed: int) -> None:
    p = sample_prompts(world, task, shots, 5, torch.Generator().manual_seed(seed))
    assert p.demo_attrs.shape == (5, shots, 3) and p.target.shape == (5, 3)
    lat, g = p.latent, p.given
    other = 3 - lat - g
    assert (p.demo_attrs[..., lat] == p.target[:, None, lat]).all()  # the latent attribute is shared
    assert (p.demo_attrs[..., other] == p.target[:, None, other]).all()
    offsets = [
        world.vocab.id(world.shapes[0]),
        world.vocab.id(world.colours[0]),
        world.vocab.id(world.backgrounds[0]),
    ]
    assert (p.demo_words == p.demo_attrs[..., g] + offsets[g]).all()  # texts name the given attribute
    assert (p.query_word == p.target[:, g] + offsets[g]).all()
    n_values = (len(world.shapes), len(world.colours), len(world.backgrounds))[g]
    texts = torch.cat([p.demo_words, p.query_word[:, None]], 1)
    for row in texts.tolist():
        assert len(set(row)) == min(len(row), n_values)  # distinct while values last


def test_cobsat_like_tasks_covers_every_task_and_shot(world: ToyWorld) -> None:
    prompts = cobsat_like_tasks(world, shots=(2, 4), n=3, seed=0)
    assert {(p.task, p.shots) for p in prompts} == {(t, k) for t in TASKS for k in (2, 4)}
    again = cobsat_like_tasks(world, shots=(2, 4), n=3, seed=0)
    assert all(torch.equal(a.target, b.target) for a, b in zip(prompts, again, strict=True))


# ----------------------------------------------------------------------------------------------
# aligner and random split
# ----------------------------------------------------------------------------------------------


def test_aligner_shapes_and_norm_init() -> None:
    gain = torch.linspace(0.5, 2.0, 12)
    al = Aligner(20, 12, norm_init=gain)
    assert al.norm is not None and torch.equal(al.norm.weight.detach(), gain)
    out = al(torch.randn(3, 5, 20))
    assert out.shape == (3, 5, 12) and out.dtype == torch.float32
    # RMSNorm output: rms over features equals the gain's scale when the gain is 1
    plain = Aligner(20, 12)(torch.randn(3, 5, 20))
    assert torch.allclose(plain.pow(2).mean(-1), torch.ones(3, 5), atol=1e-3)
    assert Aligner(20, 12, norm=None).norm is None
    with pytest.raises(ValueError, match="norm_init"):
        Aligner(20, 12, norm_init=torch.ones(5))
    with pytest.raises(ValueError, match="d_in"):
        al(torch.randn(3, 5, 7))
    with pytest.raises(ValueError, match="NaN"):
        al(torch.full((1, 2, 20), float("nan")))


@settings(max_examples=30, deadline=None)
@given(lengths=st.lists(st.integers(2, 9), min_size=1, max_size=5), max_split=st.integers(1, 10),
       seed=st.integers(0, 1000))  # fmt: skip
def test_random_split_keeps_prefix_and_targets_continuation(
    lengths: list[int], max_split: int, seed: int
) -> None:
    gen = torch.Generator().manual_seed(seed)
    feats = [torch.randn(n, 4, generator=gen) for n in lengths]
    ids = [list(range(10, 10 + n)) for n in lengths]
    sb = random_split_batch(feats, ids, max_split=max_split, generator=gen)
    for i, n in enumerate(lengths):
        s = int(sb.splits[i])
        assert 1 <= s <= min(n - 1, max_split)
        assert sb.mask[i].sum() == s and torch.equal(sb.features[i, :s], feats[i][:s])
        assert (sb.features[i, s:] == 0).all()
        tgt = sb.targets[i][sb.targets[i] != -100].tolist()
        assert tgt == ids[i][s:]  # the decoder must produce what comes after the kept features


def test_random_split_retokenizes_and_validates() -> None:
    sb = random_split_batch([torch.zeros(3, 2)], [[5, 6, 7]], retokenize=lambda t: [x + 100 for x in t],
                            generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert (sb.targets[sb.targets != -100] >= 100).all()
    with pytest.raises(ValueError, match="at least 2"):
        random_split_batch([torch.zeros(1, 2)], [[5]])
    with pytest.raises(ValueError, match="rows"):
        random_split_batch([torch.zeros(3, 2)], [[5, 6]])
    with pytest.raises(ValueError, match="one entry per example"):
        random_split_batch([torch.zeros(3, 2)], [])


# ----------------------------------------------------------------------------------------------
# small modules
# ----------------------------------------------------------------------------------------------


def test_vlm_image_placeholders_are_filled_in_order(world: ToyWorld) -> None:
    vlm = _vlm(world)
    p = sample_prompts(world, "color_i", 2, 3, torch.Generator().manual_seed(0))
    inp = icl_inputs(world, p, vlm.config.patches)
    assert inp.ids.shape == (3, 1 + 2 * (1 + 4) + 3) and inp.images.shape == (3, 2, 3, 8, 8)
    # naive reference: embed every position by hand
    from icml25.nn.embeddings import patchify

    x = vlm.embed(inp.ids).clone()
    for b in range(3):
        pos = (inp.ids[b] == world.vocab.img).nonzero().flatten().tolist()
        toks = torch.cat(
            [vlm.patch_embed(patchify(inp.images[b, k : k + 1], 4))[0] + vlm.patch_pos for k in range(2)]
        )
        for j, q in enumerate(pos):
            x[b, q] = toks[j]
    x = x + vlm.pos(torch.arange(inp.ids.shape[1]))
    for block in vlm.blocks:
        x = block(x, causal=True)
    assert torch.allclose(vlm.hidden(inp), vlm.norm(x), atol=1e-5)


def test_vlm_generation_features_follow_the_transformers_convention(world: ToyWorld) -> None:
    vlm = _vlm(world)
    attrs = torch.tensor([[0, 1, 2], [3, 0, 1]])
    inp = caption_inputs(world, attrs, torch.tensor([0, 1]), vlm.config.patches)
    gen = vlm.generate(inp, max_new_tokens=4, decode=world.vocab.decode)
    n0 = inp.ids.shape[1]
    for i in range(2):
        full = torch.cat([inp.ids[i : i + 1], torch.tensor([gen.tokens[i]])], 1)
        h = vlm.hidden(VLMInputs(full, inp.images[i : i + 1]))[0]
        L = len(gen.tokens[i])
        # feature j is the state at the position that emitted token j
        assert torch.allclose(gen.features[i], h[n0 - 1 : n0 - 1 + L], atol=1e-5)
    # an image placeholder is never generated, however likely
    head = torch.nn.Linear(vlm.d_model, world.vocab.size)
    with torch.no_grad():
        head.weight.zero_()
        head.bias.zero_()
        head.bias[world.vocab.img], head.bias[world.vocab.eos] = 100.0, 1.0
    vlm.head = head
    assert vlm.generate(inp, max_new_tokens=3).tokens == [[world.vocab.eos]] * 2
    with pytest.raises(ValueError, match="placeholders"):
        vlm.generate(VLMInputs(inp.ids[:, :-3], inp.images))
    with pytest.raises(TypeError, match="integer"):
        vlm.generate(VLMInputs(inp.ids.float(), inp.images))


def test_vlm_sampling_at_temperature(world: ToyWorld) -> None:
    """The alignment answers are sampled (official: temperature 0.6, top_p 0.9), not greedy."""
    vlm = _vlm(world)
    with torch.no_grad():  # a flat head: every word equally likely, so sampling must vary the answers
        vlm.head.weight.zero_()
    attrs = torch.tensor([[0, 1, 2]]).expand(64, 3)
    inp = caption_inputs(world, attrs, torch.zeros(64, dtype=torch.long), vlm.config.patches)
    greedy = vlm.generate(inp, max_new_tokens=3)
    assert len({tuple(t) for t in greedy.tokens}) == 1
    a = vlm.generate(inp, max_new_tokens=3, temperature=0.6, generator=torch.Generator().manual_seed(0))
    b = vlm.generate(inp, max_new_tokens=3, temperature=0.6, generator=torch.Generator().manual_seed(0))
    assert a.tokens == b.tokens and len({tuple(t) for t in a.tokens}) > 10
    assert all(world.vocab.img not in t for t in a.tokens)  # the placeholder stays forbidden
    tight = vlm.generate(inp, max_new_tokens=3, temperature=0.6, top_p=1e-6,
                         generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert len({tuple(t) for t in tight.tokens}) == 1  # a tiny nucleus keeps only the top token
    with pytest.raises(ValueError, match="temperature"):
        vlm.generate(inp, temperature=-1.0)


def test_t5_loss_matches_manual_cross_entropy_and_ignores_padded_memory(world: ToyWorld) -> None:
    t5 = _t5(world)
    mem = torch.randn(2, 4, 16)
    mask = torch.tensor([[True, True, False, False], [True, True, True, True]])
    tgt = torch.tensor([[7, 8, 2], [9, 2, -100]])
    loss = t5.loss(mem, mask, tgt)
    dec_in = torch.tensor([[1, 7, 8], [1, 9, 2]])
    logits = t5.decoder_logits(mem, mask, dec_in)
    ref = F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=-100)
    assert torch.allclose(loss, ref)
    mem2 = mem.clone()
    mem2[0, 2:] = 100.0  # padded memory must not matter
    assert torch.allclose(t5.loss(mem2, mask, tgt), loss, atol=1e-6)
    out = t5.generate(mem, mask, max_new_tokens=3)
    assert out.shape[0] == 2 and out.shape[1] <= 3
    with pytest.raises(ValueError, match="memory"):
        t5.loss(torch.randn(2, 4, 5), None, tgt)


def test_thinkdiff_trains_only_the_aligner(world: ToyWorld) -> None:
    vlm, t5 = _vlm(world), _t5(world)
    model = ThinkDiffLVLM(vlm, t5)
    assert model.aligner.norm is not None
    assert torch.equal(model.aligner.norm.weight.detach(), t5.encoder_norm_weight)
    attrs = torch.tensor([[0, 1, 2], [1, 2, 0], [2, 0, 1]])
    gen = vlm.generate(caption_inputs(world, attrs, torch.zeros(3, dtype=torch.long), 4), max_new_tokens=5)
    feats = [torch.randn(4, 16) for _ in range(3)]  # stand-in features (random VLM may stop early)
    ids = [answer_ids(world, attrs)[i, :4].tolist() for i in range(3)]
    sb = random_split_batch(feats, ids, generator=torch.Generator().manual_seed(0))
    loss = model.training_loss(sb)
    loss.backward()
    assert all(p.grad is not None for p in model.aligner.parameters())
    assert all(p.grad is None for p in vlm.parameters()) and all(p.grad is None for p in t5.parameters())
    p = sample_prompts(world, "background_i", 2, 2, torch.Generator().manual_seed(1))
    embeds, mask, texts = model.condition(icl_inputs(world, p, 4), max_new_tokens=4)
    assert embeds.shape[:2] == mask.shape and embeds.shape[-1] == 16 and len(texts) == 2
    assert len(gen.tokens) == 3


def test_flow_decoder_sampling_and_loss() -> None:
    torch.manual_seed(0)
    dec = TinyFlowDecoder(TinyFlowDecoderConfig(text_dim=16, channels=(8, 16), queries=2, num_heads=2,
                                                cond_dim=16, image_size=8))  # fmt: skip
    emb, mask = torch.randn(3, 5, 16), torch.ones(3, 5, dtype=torch.bool)
    g = torch.Generator().manual_seed(0)
    loss = dec.loss(torch.rand(3, 3, 8, 8), emb, mask, g)
    assert loss.ndim == 0 and torch.isfinite(loss)
    x = dec.sample(emb, mask, steps=2, cfg=2.0, generator=torch.Generator().manual_seed(1))
    y = dec.sample(emb, mask, steps=2, cfg=2.0, generator=torch.Generator().manual_seed(1))
    assert x.shape == (3, 3, 8, 8) and torch.equal(x, y) and x.min() >= 0 and x.max() <= 1
    # cfg = 1 is the plain conditional flow
    a = dec.sample(emb, mask, steps=2, cfg=1.0, generator=torch.Generator().manual_seed(2))
    assert a.shape == x.shape
    with pytest.raises(ValueError, match="embeds"):
        dec.sample(torch.randn(3, 5, 7))


def test_judge_accuracy_needs_given_and_latent(world: ToyWorld) -> None:
    class Oracle(torch.nn.Module):
        def predict(self, images: torch.Tensor) -> torch.Tensor:
            return self.answers

    p = sample_prompts(world, "color_i", 2, 4, torch.Generator().manual_seed(0))
    oracle = Oracle()
    pred = p.target.clone()
    pred[1, p.latent] = (pred[1, p.latent] + 1) % 3  # wrong latent
    pred[2, p.given] = (pred[2, p.given] + 1) % 4  # wrong given
    pred[3, 3 - p.latent - p.given] = (pred[3, 3 - p.latent - p.given] + 1) % 3  # other attribute: ignored
    oracle.answers = pred
    acc = judge_accuracy(oracle, torch.zeros(4, 3, 8, 8), p)  # type: ignore[arg-type]
    assert acc.tolist() == [1.0, 0.0, 0.0, 1.0]


# ----------------------------------------------------------------------------------------------
# Hugging Face adapters on tiny random models
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hf_models():  # type: ignore[no-untyped-def]
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    vc = transformers.CLIPVisionConfig(
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=8,
        patch_size=4,
        projection_dim=16,
    )
    tc = transformers.LlamaConfig(
        vocab_size=50,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    vlm = transformers.LlavaForConditionalGeneration(
        transformers.LlavaConfig(
            vision_config=vc,
            text_config=tc,
            image_token_id=40,
            vision_feature_select_strategy="default",
        )
    ).eval()
    t5 = transformers.T5ForConditionalGeneration(transformers.T5Config(
        vocab_size=50, d_model=12, d_kv=6, d_ff=24, num_layers=1, num_decoder_layers=1, num_heads=2,
        decoder_start_token_id=0, pad_token_id=0,
    )).eval()  # fmt: skip
    return vlm, t5


def test_hf_vision_lm_features_are_final_norm_states(hf_models) -> None:  # type: ignore[no-untyped-def]
    vlm, _ = hf_models
    ids = torch.tensor([[1] + [40] * 4 + [5, 6]] * 2)
    inputs = {
        "input_ids": ids,
        "pixel_values": torch.randn(2, 3, 8, 8),
        "attention_mask": torch.ones_like(ids),
    }
    wrapped = HFVisionLM(vlm, eos_token_id=7)
    gen = wrapped.generate(inputs, max_new_tokens=4)
    assert wrapped.d_model == 16
    for i in range(2):
        seq = torch.cat([ids[i : i + 1], torch.tensor([gen.tokens[i]])], 1)
        with torch.no_grad():
            out = vlm(
                input_ids=seq, pixel_values=inputs["pixel_values"][i : i + 1], output_hidden_states=True
            )
        h = out.hidden_states[-1][0]
        n = len(gen.tokens[i])
        assert torch.allclose(gen.features[i], h[ids.shape[1] - 1 : ids.shape[1] - 1 + n], atol=1e-5)
        assert torch.allclose(vlm.lm_head(h), out.logits[0], atol=1e-5)  # last hidden state is post-norm
    assert wrapped.input_features(inputs).shape == (2, ids.shape[1], 16)
    with pytest.raises(ValueError, match="input_ids"):
        wrapped.generate({"pixel_values": torch.zeros(1)})


def test_hf_t5_decoder_and_thinkdiff_on_real_classes(hf_models) -> None:  # type: ignore[no-untyped-def]
    vlm, t5 = hf_models
    from transformers.modeling_outputs import BaseModelOutput

    dec = HFT5Decoder(t5)
    mem, tgt = torch.randn(2, 3, 12), torch.tensor([[3, 4, -100], [5, 6, 7]])
    ref = t5(encoder_outputs=BaseModelOutput(last_hidden_state=mem), labels=tgt).loss
    assert torch.allclose(dec.loss(mem, None, tgt), ref)
    assert torch.equal(dec.encoder_norm_weight, t5.encoder.final_layer_norm.weight.detach())
    assert dec.encode(torch.tensor([[3, 4]])).shape == (1, 2, 12)
    model = ThinkDiffLVLM(HFVisionLM(vlm, eos_token_id=7), dec)
    ids = torch.tensor([[1] + [40] * 4 + [5, 6]] * 2)
    inputs = {
        "input_ids": ids,
        "pixel_values": torch.randn(2, 3, 8, 8),
        "attention_mask": torch.ones_like(ids),
    }
    gen = model.vlm.generate(inputs, max_new_tokens=4)
    sb = random_split_batch(gen.features, [[t % 50 for t in x] for x in gen.tokens],
                            generator=torch.Generator().manual_seed(0))  # fmt: skip
    loss = model.training_loss(sb)
    loss.backward()
    assert torch.isfinite(loss) and model.aligner.net[0].weight.grad is not None
    embeds, mask, _ = model.condition(inputs, max_new_tokens=4)
    calls = {}

    def pipe(**kw):  # type: ignore[no-untyped-def]
        calls.update(kw)
        return "images"

    out = DiffusersPromptEmbedDecoder(pipe, num_inference_steps=2)(embeds, mask)
    assert (
        out == "images" and calls["prompt_embeds"].shape == embeds.shape and calls["num_inference_steps"] == 2
    )
    with pytest.raises(ValueError, match="encoder_norm_weight"):
        HFT5Decoder(type("NoEnc", (), {"config": t5.config, "encoder": None})())


# ----------------------------------------------------------------------------------------------
# training and the check
# ----------------------------------------------------------------------------------------------


def test_round_trip_ranks_continuations_by_decoder_likelihood(world: ToyWorld) -> None:
    """The gate's round trip: the decoder reads aligned z_1 and must prefer the right attribute values."""
    w = world
    v = w.vocab

    class StubT5(torch.nn.Module):  # favours green/white after a positive memory, blue/black after a negative
        bos_id = 1

        def decoder_logits(self, memory, mask, dec_in):  # type: ignore[no-untyped-def]
            logits = torch.zeros(*dec_in.shape, v.size)
            pos = memory[:, 0, 0] > 0
            for words, rows in ((("green", "white"), pos), (("blue", "black"), ~pos)):
                for word in words:
                    logits[rows, :, v.id(word)] = 5.0
            return logits

    modules = empty_world_modules(w, WorldTrainConfig(image_size=8, patch=4, t5_width=16, vlm_width=16))
    modules.t5 = StubT5()  # type: ignore[assignment]

    class Identity(torch.nn.Module):
        def forward(self, z: torch.Tensor) -> torch.Tensor:
            return z

    feats = [torch.full((5, 16), 1.0), torch.full((5, 16), -1.0), torch.full((5, 16), -1.0)]
    tokens = [v.encode("circle green white background") + [v.eos], v.encode("square blue black background"),
              v.encode("square blue black background")]  # fmt: skip
    target = torch.tensor([[0, 1, 1], [1, 0, 0], [1, 2, 0]])  # (shape, colour, bg)
    ok = round_trip_ok(modules, Identity(), feats, tokens, target)  # type: ignore[arg-type]
    assert ok.tolist() == [1.0, 0.0, 1.0]  # the second target is red, the decoder prefers blue


def test_claim_follows_the_protocol_and_holds_out_images() -> None:
    from icml25.generative.thinkdiff.check import _alignment_split

    claim = CHECK.claim_for(CHECK.config("small"))
    assert claim.references == ("untrained", "text_bridge") and claim.controls == ("text_bridge",)
    assert {g.name for g in claim.gates_at("small")} >= {"aligner_round_trip", "bridge_reaches_answers"}
    head = claim.headline_criterion()
    assert head.name == "beats_recon" and head.other_arm == "recon" and head.smallest_effect == 0.10
    assert all(c.smallest_effect for c in claim.criteria_at("small") if c.other_arm is not None)
    cfg = CHECK.config("tiny")
    assert (
        CHECK.config("small").caption_order == "random" and CHECK.config("small").caption_temperature == 0.6
    )
    w = ToyWorld(8, shapes=cfg.shapes, colours=cfg.colours, backgrounds=cfg.backgrounds, sizes=cfg.sizes,
                 caption_order="random")  # fmt: skip
    torch.manual_seed(0)
    modules = empty_world_modules(w, cfg.world).freeze()
    with torch.no_grad():  # a flat head: answers are sampled among all words and rarely stop at once
        modules.vlm.head.weight.zero_()
    train, val = _alignment_split(modules, dataclasses.replace(cfg, captions_per_image=3), seed=0)
    seen, held_out = {tuple(a) for a in train.attrs.tolist()}, {tuple(a) for a in val.attrs.tolist()}
    assert seen.isdisjoint(held_out) and len(seen | held_out) == w.n_combos  # held-out combinations
    assert len(held_out) == round(cfg.val_fraction * w.n_combos)
    assert len(seen) < len(train) <= 3 * len(seen)  # several sampled answers per image
    assert len({tuple(t) for t in train.gen_tokens}) > len(seen)  # ... and they differ


def test_full_preset_constructs_and_trains_one_step() -> None:
    cfg = CHECK.config("full")
    world = ToyWorld(cfg.world.image_size)
    one = dataclasses.replace(cfg.world, t5_steps=1)
    t5, hist = train_tiny_t5(world, one)
    assert len(hist.train_loss) == 1
    torch.manual_seed(0)
    modules = empty_world_modules(world, cfg.world).freeze()
    assert modules.vlm.config.patches == 16 and modules.decoder.config.image_size == 16
    attrs = torch.tensor([[0, 1, 2], [1, 2, 3], [2, 3, 0], [3, 0, 1]])
    data = alignment_data(modules, attrs, torch.tensor([0, 1, 0, 1]))
    if len(data) >= 2:  # the untrained VLM may stop at <eos> at once; then there is nothing to align
        half = torch.arange(len(data))
        one_step = dataclasses.replace(cfg.fit_config(cfg.lrs[0]), steps=1, warmup_steps=0, batch_size=2)
        _, hist, val = train_aligner("thinkdiff", modules, data.subset(half), data.subset(half), one_step)
        assert len(hist.train_loss) == 1 and val == val
    assert cfg.fit_config(cfg.lrs[0]).warmup_steps == 2000 and cfg.lrs == (1e-4,)
    with pytest.raises(ValueError, match="patch"):
        WorldTrainConfig(image_size=10, patch=4)


def test_tiny_check_runs_end_to_end(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from icml25.core.results import ResultStore

    result = CHECK.run("tiny", store=ResultStore(tmp_path))
    metrics = result.to_json()["metrics"]
    assert set(metrics) >= {"thinkdiff", "recon", "input_token", "query_only", "untrained", "text_bridge"}
    for arm in ("thinkdiff", "recon", "input_token", "query_only", "untrained", "text_bridge"):
        assert 0.0 <= metrics[arm]["acc"]["mean"] <= 1.0
    assert metrics["thinkdiff"]["norm_init_error"]["mean"] == 0.0
