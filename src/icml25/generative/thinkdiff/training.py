"""Training of the toy world's frozen modules and of the aligners of every arm, and the judged evaluation.

*I Think, Therefore I Diffuse: Enabling Multimodal In-Context Reasoning in Diffusion Models*
(ThinkDiff; Mi et al.; ICML 2025; arXiv:2502.10458).

World modules (trained once, then frozen, as the paper's pretrained models are):
    TinyT5            whole-caption reconstruction + random-word-split continuation
    TinyVLM           captioning ("describe") and the CoBSAT-like in-context tasks ("infer"), giving it the
                      reasoning a real VLM brings
    TinyFlowDecoder   rectified flow on (TinyT5 encoder(caption), image), captions with attributes dropped
                      at random so that partial prompts are in-distribution, caption dropout for CFG
    AttributeJudge    cross-entropy on noisy renders

Aligner arms (captioning data only; all read the same frozen modules):
    thinkdiff     generated-token features, random split, frozen T5 decoder CE (Sec. 3.2, Eq. 1)
    input_token   the VLM's input-token features (image + instruction), same decoder CE on the caption
    recon         input-token features -> decoder conditioning with the flow-matching loss (Fig. 2a)
Arms without training: the baseline ``query_only`` (T5 encoder of the query text) and the references
``untrained`` (the thinkdiff path through a fresh aligner: a floor) and ``text_bridge`` (T5 encoder of
the VLM's generated text: the ceiling a perfect aligner could reach).

Everything here is in memory (no files); randomness comes from explicit generators.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from icml25.core.validate import check_fields
from icml25.nn.train import FitConfig, FitHistory, fit

from .aligner import Aligner, pad_features, random_split_batch
from .models import (
    AttributeJudge,
    Generation,
    TinyFlowDecoder,
    TinyFlowDecoderConfig,
    TinyT5,
    TinyT5Config,
    TinyVLM,
    TinyVLMConfig,
    VLMInputs,
)
from .world import TASKS, Prompt, ToyWorld, sample_prompts

__all__ = [
    "WorldModules",
    "WorldTrainConfig",
    "AlignmentData",
    "ARMS",
    "TRAINED_ARMS",
    "caption_inputs",
    "icl_inputs",
    "answer_ids",
    "train_tiny_t5",
    "train_tiny_vlm",
    "train_flow_decoder",
    "train_judge",
    "train_world",
    "empty_world_modules",
    "alignment_data",
    "train_aligner",
    "make_aligner",
    "arm_prompt_embeds",
    "judge_accuracy",
    "round_trip_ok",
    "texts_to_ids",
]

ARMS: tuple[str, ...] = ("thinkdiff", "input_token", "recon", "query_only", "untrained", "text_bridge")
TRAINED_ARMS: tuple[str, ...] = ("thinkdiff", "input_token", "recon")
ProgressFn = Callable[[str, int, int], None]


# ----------------------------------------------------------------------------------------------
# Prompt construction
# ----------------------------------------------------------------------------------------------


def caption_inputs(world: ToyWorld, attrs: Tensor, sizes: Tensor, patches: int) -> VLMInputs:
    """Captioning prompts ``<bos> <img>xP describe <sep>`` for images of ``attrs (b, 3)``."""
    v, b = world.vocab, attrs.shape[0]
    row = [v.bos] + [v.img] * patches + [v.id("describe"), v.sep]
    return VLMInputs(torch.tensor(row).expand(b, -1).contiguous(), world.images(attrs, sizes)[:, None])


def icl_inputs(world: ToyWorld, prompt: Prompt, patches: int) -> VLMInputs:
    """In-context prompts ``<bos> [word <img>xP]*N query infer <sep>``."""
    v, b = world.vocab, len(prompt)
    parts = [torch.full((b, 1), v.bos)]
    for k in range(prompt.shots):
        parts += [prompt.demo_words[:, k : k + 1], torch.full((b, patches), v.img)]
    parts += [prompt.query_word[:, None], torch.full((b, 1), v.id("infer")), torch.full((b, 1), v.sep)]
    return VLMInputs(torch.cat(parts, dim=1), world.images(prompt.demo_attrs, prompt.sizes))


def answer_ids(world: ToyWorld, attrs: Tensor, generator: torch.Generator | None = None) -> Tensor:
    """``(b, caption_length + 1)`` caption ids followed by ``<eos>`` (phrase orders from ``generator``)."""
    ids = world.caption_ids(attrs, generator)
    return torch.cat([ids, torch.full((ids.shape[0], 1), world.vocab.eos)], dim=1)


def texts_to_ids(world: ToyWorld, texts: list[str]) -> tuple[Tensor, Tensor]:
    """Right-padded word ids ``(b, n)`` and mask of ``texts`` (an empty text becomes one ``<pad>``)."""
    rows = [world.vocab.encode(t) for t in texts]
    n = max(1, max(len(r) for r in rows))
    ids = torch.zeros(len(rows), n, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.as_tensor(r, dtype=torch.long)
    return ids, ids != world.vocab.pad


def _random_attrs(world: ToyWorld, b: int, gen: torch.Generator) -> tuple[Tensor, Tensor]:
    attrs = torch.stack(
        [
            torch.randint(len(vals), (b,), generator=gen)
            for vals in (world.shapes, world.colours, world.backgrounds)
        ],
        dim=1,
    )
    return attrs, torch.randint(len(world.sizes), (b,), generator=gen)


# ----------------------------------------------------------------------------------------------
# World modules
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorldTrainConfig:
    """Sizes and budgets of the frozen world modules.

    Args:
        image_size, patch: renders and VLM patches.
        t5_width, vlm_width, vlm_layers: model sizes (TinyT5 has 2+2 layers).
        unet_channels: the flow decoder's UNet widths.
        t5_steps, vlm_steps, decoder_steps, judge_steps: optimiser steps of each module.
        batch_size: batch of every module.
        lr: peak learning rate of every module (warm-up 5 %, cosine).
        shots: shot counts the VLM is trained on.
        p_drop_attr: probability of dropping each attribute from a decoder training caption.
        p_uncond: caption dropout for classifier-free guidance.
    """

    image_size: int = 16
    patch: int = 4
    t5_width: int = 96
    vlm_width: int = 128
    vlm_layers: int = 4
    unet_channels: tuple[int, ...] = (32, 64)
    t5_steps: int = 600
    vlm_steps: int = 1500
    decoder_steps: int = 3000
    judge_steps: int = 400
    batch_size: int = 32
    lr: float = 2e-3
    shots: tuple[int, ...] = (2, 4)
    p_drop_attr: float = 0.3
    p_uncond: float = 0.1

    def __post_init__(self) -> None:
        check_fields(
            self,
            positive_int=("image_size", "patch", "t5_width", "vlm_width", "vlm_layers", "t5_steps",
                          "vlm_steps",
                          "decoder_steps", "judge_steps", "batch_size"),
            positive=("lr",),
            probability=("p_drop_attr", "p_uncond"),
        )  # fmt: skip
        if self.image_size % self.patch:
            raise ValueError(
                "WorldTrainConfig.image_size must be a multiple of patch, "
                f"got {self.image_size} and {self.patch}"
            )

    def fit_config(self, steps: int, batch_size: int | None = None) -> FitConfig:
        return FitConfig(
            steps=steps,
            batch_size=batch_size or self.batch_size,
            lr=self.lr,
            warmup_steps=max(1, steps // 20),
            min_lr=self.lr / 20,
            weight_decay=0.01,
            grad_clip=1.0,
            sampling="replacement",
        )


@dataclass
class WorldModules:
    """The frozen modules of one world."""

    world: ToyWorld
    t5: TinyT5
    vlm: TinyVLM
    decoder: TinyFlowDecoder
    judge: AttributeJudge

    def freeze(self) -> WorldModules:
        for m in (self.t5, self.vlm, self.decoder, self.judge):
            m.eval().requires_grad_(False)
        return self


def empty_world_modules(world: ToyWorld, config: WorldTrainConfig) -> WorldModules:
    """Untrained modules of the sizes in ``config`` (to load weights into)."""
    t5 = TinyT5(TinyT5Config(world.vocab.size, d_model=config.t5_width))
    vlm = TinyVLM(_vlm_config(world, config), img_id=world.vocab.img, eos_id=world.vocab.eos)
    dec = TinyFlowDecoder(_decoder_config(config))
    judge = AttributeJudge(len(world.shapes), len(world.colours), len(world.backgrounds))
    return WorldModules(world, t5, vlm, dec, judge)


def _vlm_config(world: ToyWorld, config: WorldTrainConfig) -> TinyVLMConfig:
    return TinyVLMConfig(world.vocab.size, d_model=config.vlm_width, layers=config.vlm_layers,
                         image_size=config.image_size, patch=config.patch)  # fmt: skip


def _decoder_config(config: WorldTrainConfig) -> TinyFlowDecoderConfig:
    return TinyFlowDecoderConfig(
        text_dim=config.t5_width, channels=config.unet_channels, image_size=config.image_size
    )


def _progress(progress: ProgressFn | None, name: str) -> Callable[[int, int], None] | None:
    if progress is None:
        return None
    return lambda done, total: progress(name, done, total)


def train_tiny_t5(
    world: ToyWorld, config: WorldTrainConfig, *, seed: int = 0, progress: ProgressFn | None = None
) -> tuple[TinyT5, FitHistory]:
    """TinyT5 on captions: reconstruction of the whole caption plus continuation after a random word."""
    torch.manual_seed(seed)
    t5 = TinyT5(TinyT5Config(world.vocab.size, d_model=config.t5_width))
    ignore = -100

    def loss_fn(model: nn.Module, idx: Tensor, gen: torch.Generator) -> Tensor:
        assert isinstance(model, TinyT5)
        attrs, _ = _random_attrs(world, len(idx), gen)
        full = answer_ids(world, attrs, gen)  # (b, caption_length + 1) with eos
        words = full[:, :-1]
        rec = model.loss(model.encode(words), words != 0, full)
        k = torch.randint(1, words.shape[1], (len(idx),), generator=gen)  # split after word k
        pos = torch.arange(words.shape[1])
        prefix = torch.where(pos[None] < k[:, None], words, 0)
        cont = torch.full_like(full, ignore)
        for i in range(len(idx)):
            rest = full[i, int(k[i]) :]
            cont[i, : rest.shape[0]] = rest
        con = model.loss(model.encode(prefix), prefix != 0, cont)
        return rec + con

    hist = fit(t5, loss_fn, config.t5_steps * config.batch_size, config.fit_config(config.t5_steps),
               seed=seed, progress=_progress(progress, "train TinyT5"))  # fmt: skip
    return t5.eval(), hist


def train_tiny_vlm(
    world: ToyWorld, config: WorldTrainConfig, *, seed: int = 0, progress: ProgressFn | None = None
) -> tuple[TinyVLM, FitHistory]:
    """TinyVLM on captioning and on the in-context tasks (answer tokens only carry loss)."""
    torch.manual_seed(seed)
    vcfg = _vlm_config(world, config)
    vlm = TinyVLM(vcfg, img_id=world.vocab.img, eos_id=world.vocab.eos)
    p = vcfg.patches

    def answer_loss(model: TinyVLM, inputs: VLMInputs, answer: Tensor) -> Tensor:
        full = VLMInputs(torch.cat([inputs.ids, answer], dim=1), inputs.images)
        n0 = inputs.ids.shape[1]
        logits = model(full)[:, n0 - 1 : -1]
        return F.cross_entropy(logits.flatten(0, 1), answer.flatten())

    def loss_fn(model: nn.Module, idx: Tensor, gen: torch.Generator) -> Tensor:
        assert isinstance(model, TinyVLM)
        b = len(idx)
        attrs, sizes = _random_attrs(world, b, gen)
        cap = answer_loss(model, caption_inputs(world, attrs, sizes, p), answer_ids(world, attrs, gen))
        task = TASKS[int(torch.randint(len(TASKS), (1,), generator=gen))]
        shots = config.shots[int(torch.randint(len(config.shots), (1,), generator=gen))]
        prompt = sample_prompts(world, task, shots, b, gen)
        icl = answer_loss(model, icl_inputs(world, prompt, p), answer_ids(world, prompt.target, gen))
        return cap + icl

    hist = fit(vlm, loss_fn, config.vlm_steps * config.batch_size, config.fit_config(config.vlm_steps),
               seed=seed, progress=_progress(progress, "train TinyVLM"))  # fmt: skip
    return vlm.eval(), hist


def _partial_texts(world: ToyWorld, attrs: Tensor, p_drop: float, gen: torch.Generator) -> list[str]:
    keep = torch.rand(attrs.shape, generator=gen) >= p_drop
    orders = torch.argsort(torch.rand(attrs.shape, generator=gen), dim=1).tolist()
    return [
        world.partial_caption(
            int(a[0]) if k[0] else None, int(a[1]) if k[1] else None, int(a[2]) if k[2] else None, order
        )
        for a, k, order in zip(attrs.tolist(), keep.tolist(), orders, strict=True)
    ]


def train_flow_decoder(
    world: ToyWorld,
    t5: TinyT5,
    config: WorldTrainConfig,
    *,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> tuple[TinyFlowDecoder, FitHistory]:
    """The text-to-image decoder on (frozen TinyT5 encoder(caption), image) with the flow-matching loss."""
    torch.manual_seed(seed)
    dec = TinyFlowDecoder(_decoder_config(config))
    t5.requires_grad_(False)

    def loss_fn(model: nn.Module, idx: Tensor, gen: torch.Generator) -> Tensor:
        assert isinstance(model, TinyFlowDecoder)
        attrs, sizes = _random_attrs(world, len(idx), gen)
        ids, mask = texts_to_ids(world, _partial_texts(world, attrs, config.p_drop_attr, gen))
        with torch.no_grad():
            emb = t5.encode(ids, mask)
        return model.loss(world.images(attrs, sizes), emb, mask, gen, p_uncond=config.p_uncond)

    hist = fit(dec, loss_fn, config.decoder_steps * config.batch_size,
               config.fit_config(config.decoder_steps, 2 * config.batch_size),
               seed=seed, progress=_progress(progress, "train flow decoder"))  # fmt: skip
    return dec.eval(), hist


def train_judge(
    world: ToyWorld, config: WorldTrainConfig, *, seed: int = 0, progress: ProgressFn | None = None
) -> tuple[AttributeJudge, FitHistory]:
    """The attribute judge on renders with Gaussian noise (sigma up to 0.15) and contrast jitter."""
    torch.manual_seed(seed)
    judge = AttributeJudge(len(world.shapes), len(world.colours), len(world.backgrounds))

    def loss_fn(model: nn.Module, idx: Tensor, gen: torch.Generator) -> Tensor:
        assert isinstance(model, AttributeJudge)
        b = len(idx)
        attrs, sizes = _random_attrs(world, b, gen)
        x = world.images(attrs, sizes)
        sigma = 0.15 * torch.rand(b, 1, 1, 1, generator=gen)
        gain = 1 + 0.2 * (torch.rand(b, 1, 1, 1, generator=gen) - 0.5)
        x = ((x - 0.5) * gain + 0.5 + sigma * torch.randn(x.shape, generator=gen)).clamp(0, 1)
        return sum((F.cross_entropy(logit, attrs[:, j]) for j, logit in enumerate(model(x))), torch.zeros(()))

    hist = fit(judge, loss_fn, config.judge_steps * config.batch_size,
               config.fit_config(config.judge_steps, 2 * config.batch_size),
               seed=seed, progress=_progress(progress, "train judge"))  # fmt: skip
    return judge.eval(), hist


def train_world(
    world: ToyWorld, config: WorldTrainConfig, *, seed: int = 0, progress: ProgressFn | None = None
) -> WorldModules:
    """Train TinyT5, TinyVLM, the flow decoder and the judge, and freeze them."""
    t5, _ = train_tiny_t5(world, config, seed=seed, progress=progress)
    vlm, _ = train_tiny_vlm(world, config, seed=seed + 1, progress=progress)
    dec, _ = train_flow_decoder(world, t5, config, seed=seed + 2, progress=progress)
    judge, _ = train_judge(world, config, seed=seed + 3, progress=progress)
    return WorldModules(world, t5, vlm, dec, judge).freeze()


# ----------------------------------------------------------------------------------------------
# Aligners
# ----------------------------------------------------------------------------------------------


@dataclass
class AlignmentData:
    """The captioning-only alignment set: the VLM's answers to "describe" for single images.

    Attributes:
        attrs, sizes: ``(n, 3)`` / ``(n,)`` of the images.
        gen_tokens / gen_features: per image the generated ids and ``(L, d)`` features.
        input_features: ``(n, n_in, d)`` final-norm states of the prompt tokens.
        images: ``(n, 3, H, W)``.
    """

    attrs: Tensor
    sizes: Tensor
    gen_tokens: list[list[int]]
    gen_features: list[Tensor]
    input_features: Tensor
    images: Tensor

    def __len__(self) -> int:
        return int(self.attrs.shape[0])

    def subset(self, idx: Tensor) -> AlignmentData:
        ii = idx.tolist()
        return AlignmentData(
            self.attrs[idx],
            self.sizes[idx],
            [self.gen_tokens[i] for i in ii],
            [self.gen_features[i] for i in ii],
            self.input_features[idx],
            self.images[idx],
        )


@torch.no_grad()
def alignment_data(
    modules: WorldModules,
    attrs: Tensor,
    sizes: Tensor,
    *,
    batch: int = 256,
    temperature: float = 0.0,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
) -> AlignmentData:
    """Run the frozen VLM on captioning prompts of the given images (answers with >= 2 tokens kept).

    ``temperature``/``top_p`` sample the answers (0: greedy); the official features come from answers
    sampled at temperature 0.6, top_p 0.9. Repeat rows of ``attrs`` to draw several answers per image.
    """
    w, vlm = modules.world, modules.vlm
    toks: list[list[int]] = []
    feats: list[Tensor] = []
    ins: list[Tensor] = []
    for i in range(0, attrs.shape[0], batch):
        inp = caption_inputs(w, attrs[i : i + batch], sizes[i : i + batch], vlm.config.patches)
        g = vlm.generate(inp, max_new_tokens=10, temperature=temperature, top_p=top_p, generator=generator)
        toks += g.tokens
        feats += g.features
        ins.append(vlm.hidden(inp))
    keep = torch.tensor([len(t) >= 2 for t in toks])
    idx = torch.nonzero(keep).flatten()
    data = AlignmentData(attrs, sizes, toks, feats, torch.cat(ins), w.images(attrs, sizes))
    return data.subset(idx)


def make_aligner(modules: WorldModules, norm_init: bool = True) -> Aligner:
    """A fresh aligner from the VLM width to the T5 width, its RMSNorm gain copied from the T5 encoder."""
    init = modules.t5.encoder_norm_weight if norm_init else None
    return Aligner(modules.vlm.d_model, modules.t5.d_model, norm_init=init)


def _arm_loss(
    arm: str, modules: WorldModules, aligner: Aligner, data: AlignmentData, idx: Tensor, gen: torch.Generator
) -> Tensor:
    ii = idx.tolist()
    if arm == "thinkdiff":
        sb = random_split_batch(
            [data.gen_features[i] for i in ii], [data.gen_tokens[i] for i in ii], generator=gen
        )
        return modules.t5.loss(aligner(sb.features) * sb.mask[..., None], sb.mask, sb.targets)
    z = data.input_features[idx]
    if arm == "input_token":
        tg = [torch.as_tensor(data.gen_tokens[i]) for i in ii]
        tgt = torch.nn.utils.rnn.pad_sequence(tg, batch_first=True, padding_value=-100)
        return modules.t5.loss(aligner(z), None, tgt)
    if arm == "recon":
        return modules.decoder.loss(data.images[idx], aligner(z), None, gen, p_uncond=0.0)
    raise ValueError(f"arm must be one of {TRAINED_ARMS}, got {arm!r}")


def train_aligner(
    arm: str,
    modules: WorldModules,
    train: AlignmentData,
    val: AlignmentData,
    fit_config: FitConfig,
    *,
    seed: int = 0,
    norm_init: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Aligner, FitHistory, float]:
    """Train one arm's aligner on captioning data; returns it, its history and its validation loss.

    The validation loss is the arm's own training objective on ``val`` with a fixed generator.
    """
    if arm not in TRAINED_ARMS:
        raise ValueError(f"arm must be one of {TRAINED_ARMS}, got {arm!r}")
    if len(train) == 0 or len(val) == 0:
        raise ValueError("train and val alignment data must be non-empty")
    torch.manual_seed(seed)
    aligner = make_aligner(modules, norm_init)

    def loss_fn(model: nn.Module, idx: Tensor, gen: torch.Generator) -> Tensor:
        assert isinstance(model, Aligner)
        return _arm_loss(arm, modules, model, train, idx, gen)

    hist = fit(aligner, loss_fn, len(train), fit_config, seed=seed, progress=progress)
    with torch.no_grad():
        g = torch.Generator().manual_seed(12345)
        idx = torch.arange(len(val))
        val_loss = float(sum(float(_arm_loss(arm, modules, aligner, val, idx, g)) for _ in range(4)) / 4)
    return aligner.eval(), hist, val_loss


# ----------------------------------------------------------------------------------------------
# Inference and judging
# ----------------------------------------------------------------------------------------------


@torch.no_grad()
def arm_prompt_embeds(
    arm: str,
    modules: WorldModules,
    prompt: Prompt,
    *,
    aligner: Aligner | None = None,
    generation: Generation | None = None,
) -> tuple[Tensor, Tensor | None]:
    """The diffusion decoder's prompt embeddings for ``prompt`` under ``arm``.

    ``generation`` (the VLM's greedy answers to the prompt) is shared by ``thinkdiff``, ``untrained``
    (the thinkdiff path through an aligner that was never trained: a floor) and ``text_bridge``; it is
    computed when not given.
    """
    w, vlm, t5 = modules.world, modules.vlm, modules.t5
    inputs = icl_inputs(w, prompt, vlm.config.patches)
    if arm in ("thinkdiff", "untrained", "text_bridge") and generation is None:
        generation = vlm.generate(inputs, max_new_tokens=10, decode=w.vocab.decode)
    if arm in ("thinkdiff", "untrained"):
        if aligner is None or generation is None:
            raise ValueError("thinkdiff needs its aligner")
        feats = [f[:-1] if (len(t) > 1 and t[-1] == w.vocab.eos) else f
                 for f, t in zip(generation.features, generation.tokens, strict=True)]  # fmt: skip
        z, mask = pad_features(feats)
        return aligner(z) * mask[..., None], mask
    if arm in ("input_token", "recon"):
        if aligner is None:
            raise ValueError(f"{arm} needs its aligner")
        return aligner(vlm.hidden(inputs)), None
    if arm == "query_only":
        q = prompt.query_word.tolist()
        word = [w.vocab.words[i] for i in q]
        given = prompt.given
        texts = [
            w.partial_caption(
                w.shapes.index(x) if given == 0 else None,
                w.colours.index(x) if given == 1 else None,
                w.backgrounds.index(x) if given == 2 else None,
            )
            for x in word
        ]
        ids, mask = texts_to_ids(w, texts)
        return t5.encode(ids, mask), mask
    if arm == "text_bridge":
        assert generation is not None
        ids, mask = texts_to_ids(w, [w.vocab.decode(t) for t in generation.tokens])
        return t5.encode(ids, mask), mask
    raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")


@torch.no_grad()
def judge_accuracy(judge: AttributeJudge, images: Tensor, prompt: Prompt) -> Tensor:
    """Per prompt 1.0 when the judge sees the right given attribute *and* the right latent attribute."""
    if images.shape[0] != len(prompt):
        raise ValueError(f"images must hold one image per prompt ({len(prompt)}), got {images.shape[0]}")
    pred = judge.predict(images)
    g, lat = prompt.given, prompt.latent
    ok = (pred[:, g] == prompt.target[:, g]) & (pred[:, lat] == prompt.target[:, lat])
    return ok.float()


@torch.no_grad()
def round_trip_ok(
    modules: WorldModules, aligner: Aligner, features: list[Tensor], tokens: list[list[int]], target: Tensor
) -> Tensor:
    """Per answer 1.0 when the frozen T5 decoder, reading the aligned *first* answer feature, prefers the
    right continuation over every continuation that names other attribute values.

    As in training with the split at s = 1: the kept prefix is ``z_1`` (the state that emitted the first
    word) and the target is the rest of the answer. The candidates keep the rest's words and phrase order
    and replace each attribute word in it by every value of that attribute, the values of ``target
    (b, 3)`` giving the correct one; the answer passes when the correct candidate has the highest
    likelihood under the decoder. Ranking (not greedy decoding) because ``z_1`` cannot know which word
    was sampled first, so the phrase order of the rest is ambiguous even for a perfect aligner, while the
    attribute values are not. Chance is one over the number of candidates. This measures whether the
    aligner carries the answer's content into the T5 encoder space, independently of the image decoder.
    """
    w, v = modules.world, modules.world.vocab
    values = [[v.id(x) for x in vals] for vals in (w.shapes, w.colours, w.backgrounds)]
    kind = {i: k for k, ids in enumerate(values) for i in ids}
    mem = aligner(torch.stack([f[:1] for f in features]))  # (b, 1, d)
    ok = torch.zeros(len(tokens))
    for i, toks in enumerate(tokens):
        rest = [t for t in toks[1:] if t != v.eos] + [v.eos]
        slots = [(j, kind[t]) for j, t in enumerate(rest) if t in kind]
        right = [int(target[i, k]) for _, k in slots]
        combos = torch.cartesian_prod(*[torch.arange(len(values[k])) for _, k in slots]) if slots else None
        if combos is None:
            continue
        combos = combos.reshape(len(combos), -1)
        cands = torch.tensor(rest).repeat(len(combos), 1)
        for c, (j, k) in enumerate(slots):
            cands[:, j] = torch.tensor(values[k])[combos[:, c]]
        logits = modules.t5.decoder_logits(
            mem[i : i + 1].expand(len(cands), -1, -1), None,
            torch.cat([torch.full((len(cands), 1), modules.t5.bos_id), cands[:, :-1]], 1),
        )  # fmt: skip
        score = torch.log_softmax(logits, -1).gather(-1, cands[..., None])[..., 0].sum(1)
        best = combos[int(score.argmax())].tolist()
        ok[i] = float(best == right)
    return ok
