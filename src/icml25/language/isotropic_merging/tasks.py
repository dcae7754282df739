"""Code-generated classification tasks, label-token scoring and partial fine-tuning of a causal LM,
for the language-model check of *No Task Left Behind: Isotropic Model Merging with Common and
Task-Specific Subspaces* (Marczak et al., ICML 2025, arXiv 2502.04959).

Each task is classification-as-generation: a templated input, the shared cue ``"\\nAnswer:"`` and
a one-token answer word. The answer words are arbitrary (sentiment -> blue/red, animal or tool ->
up/down, language -> fruit names, topic -> compass points), so the base model is near chance and
each task must be learnt by fine-tuning. Scoring compares the next-token logits of the task's
label tokens at the end of the prompt (likelihood scoring, no sampling). Fine-tuning minimises
the cross-entropy of the label token over the full vocabulary and updates only the chosen
parameters (e.g. the attention and MLP matrices of the last layers), so the task matrices are
exactly the trained weights.
"""

from __future__ import annotations

import contextlib
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from icml25.nn.train import EvalRecord, FitConfig, fit

__all__ = [
    "TASK_NAMES",
    "LabelCodec",
    "TaskData",
    "cache_prefix",
    "encode_task",
    "finetune_subset",
    "label_accuracy",
    "label_correct",
    "make_task",
    "trainable_matrix_names",
]

_POS = (
    "wonderful",
    "great",
    "lovely",
    "excellent",
    "delightful",
    "superb",
    "pleasant",
    "brilliant",
    "charming",
)
_NEG = ("terrible", "awful", "boring", "dreadful", "horrible", "disappointing", "poor", "bad", "annoying")
_NOUNS = ("film", "meal", "hotel", "book", "concert", "service", "game", "trip", "class", "show")
_LANG_WORDS = {
    "English": (
        "the",
        "house",
        "is",
        "very",
        "small",
        "and",
        "we",
        "like",
        "water",
        "with",
        "friend",
        "today",
    ),
    "French": (
        "la",
        "maison",
        "est",
        "très",
        "petite",
        "et",
        "nous",
        "aimons",
        "eau",
        "avec",
        "ami",
        "aujourd'hui",
    ),
    "Spanish": (
        "la",
        "casa",
        "es",
        "muy",
        "pequeña",
        "y",
        "nosotros",
        "gusta",
        "agua",
        "con",
        "amigo",
        "hoy",
    ),
    "German": (
        "das",
        "Haus",
        "ist",
        "sehr",
        "klein",
        "und",
        "wir",
        "mögen",
        "Wasser",
        "mit",
        "Freund",
        "heute",
    ),
}
_TOPICS = {
    "sport": ("team", "match", "goal", "coach", "league", "player", "score", "stadium", "season", "race"),
    "science": (
        "atom",
        "cell",
        "energy",
        "experiment",
        "theory",
        "molecule",
        "physics",
        "laboratory",
        "gene",
        "orbit",
    ),
    "food": ("recipe", "soup", "bread", "cheese", "kitchen", "flavour", "dessert", "spice", "salad", "chef"),
    "music": ("guitar", "song", "melody", "concert", "album", "drum", "piano", "rhythm", "singer", "chorus"),
}


def _sentiment(rng: random.Random) -> tuple[str, str]:
    label = rng.choice(("positive", "negative"))
    adj = rng.choice(_POS if label == "positive" else _NEG)
    noun = rng.choice(_NOUNS)
    tmpl = rng.choice(("The {n} was {a}.", "What a {a} {n}!", "I found the {n} {a}.", "Honestly, a {a} {n}."))
    return tmpl.format(n=noun, a=adj), label


_OBJECTS = {
    "animal": (
        "horse",
        "rabbit",
        "eagle",
        "salmon",
        "tiger",
        "sheep",
        "spider",
        "whale",
        "fox",
        "owl",
        "frog",
    ),
    "tool": (
        "hammer",
        "wrench",
        "saw",
        "drill",
        "chisel",
        "shovel",
        "pliers",
        "axe",
        "ladder",
        "rake",
        "screw",
    ),
}


def _object(rng: random.Random) -> tuple[str, str]:
    label = rng.choice(tuple(_OBJECTS))
    return "Items: " + ", ".join(rng.sample(_OBJECTS[label], 3)), label


def _language(rng: random.Random) -> tuple[str, str]:
    label = rng.choice(tuple(_LANG_WORDS))
    words = rng.sample(_LANG_WORDS[label], 4)
    return " ".join(words), label


def _topic(rng: random.Random) -> tuple[str, str]:
    label = rng.choice(tuple(_TOPICS))
    words = rng.sample(_TOPICS[label], 3)
    return "Headline: " + ", ".join(words), label


# Each task answers with arbitrary words (class -> answer word), so the base model starts near
# chance and every task needs its fine-tuning; the four answer sets are disjoint.
_GENERATORS: dict[str, tuple[Callable[[random.Random], tuple[str, str]], dict[str, str]]] = {
    "sentiment": (_sentiment, {"positive": "blue", "negative": "red"}),
    "object": (_object, {"animal": "up", "tool": "down"}),
    "language": (_language, dict(zip(_LANG_WORDS, ("apple", "banana", "cherry", "grape"), strict=True))),
    "topic": (_topic, dict(zip(_TOPICS, ("north", "south", "east", "west"), strict=True))),
}
TASK_NAMES: tuple[str, ...] = tuple(_GENERATORS)


@dataclass(frozen=True)
class TaskData:
    """One task: its label set and (text, label) pairs per split."""

    name: str
    labels: tuple[str, ...]
    train: tuple[tuple[str, str], ...]
    val: tuple[tuple[str, str], ...]
    test: tuple[tuple[str, str], ...]


def _check_count(name: str, n: Any) -> None:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{name} must be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"{name} must be >= 1, got {n}")


def make_task(name: str, n_train: int, n_val: int, n_test: int, *, seed: int = 0) -> TaskData:
    """Draw a task's splits (balanced-at-random, seeded; inputs never repeat across splits).

    Raises:
        ValueError: unknown task name or non-positive sizes.
    """
    if name not in _GENERATORS:
        raise ValueError(f"name must be one of {TASK_NAMES}, got {name!r}")
    for nm, n in (("n_train", n_train), ("n_val", n_val), ("n_test", n_test)):
        _check_count(nm, n)
    gen, answer = _GENERATORS[name]
    labels = tuple(answer.values())
    rng = random.Random(f"{name}:{seed}")
    seen: set[str] = set()
    rows: list[tuple[str, str]] = []
    need = n_train + n_val + n_test
    tries = 0
    while len(rows) < need:
        text, label = gen(rng)
        tries += 1
        if text in seen and tries < 50 * need:
            continue
        seen.add(text)
        rows.append((text, answer[label]))
    return TaskData(
        name=name,
        labels=labels,
        train=tuple(rows[:n_train]),
        val=tuple(rows[n_train : n_train + n_val]),
        test=tuple(rows[n_train + n_val :]),
    )


class LabelCodec:
    """Prompt and label tokens for a Hugging Face tokenizer, or UTF-8 bytes when it is ``None``.

    With a tokenizer the label token is the first token of ``" " + label`` after ``"\\nAnswer:"``;
    with bytes the prompt ends in ``"\\nAnswer: "`` and the label token is the label's first byte.
    """

    def __init__(self, tokenizer: Any = None) -> None:
        self.tokenizer = tokenizer
        self.pad_id = 0 if tokenizer is None else int(tokenizer.pad_token_id or tokenizer.eos_token_id or 0)

    def prompt_ids(self, text: str) -> list[int]:
        if self.tokenizer is None:
            return list((text + "\nAnswer: ").encode("utf-8"))
        return list(self.tokenizer(text + "\nAnswer:", add_special_tokens=False)["input_ids"])

    def label_ids(self, labels: Sequence[str]) -> list[int]:
        if self.tokenizer is None:
            ids = [label.encode("utf-8")[0] for label in labels]
        else:
            ids = [
                int(self.tokenizer(" " + label, add_special_tokens=False)["input_ids"][0]) for label in labels
            ]
        if len(set(ids)) != len(ids):
            raise ValueError(f"labels {tuple(labels)} do not start with distinct tokens")
        return ids


def encode_task(
    codec: LabelCodec, rows: Sequence[tuple[str, str]], labels: Sequence[str]
) -> tuple[Tensor, Tensor, Tensor]:
    """``(input_ids [N, L] right-padded, last position [N], label index [N])``."""
    if not rows:
        raise ValueError("rows is empty")
    prompts = [codec.prompt_ids(text) for text, _ in rows]
    width = max(len(p) for p in prompts)
    ids = torch.full((len(rows), width), codec.pad_id, dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, : len(p)] = torch.tensor(p)
    last = torch.tensor([len(p) - 1 for p in prompts], dtype=torch.long)
    index = {label: i for i, label in enumerate(labels)}
    y = torch.tensor([index[label] for _, label in rows], dtype=torch.long)
    return ids, last, y


class _StopForwardError(Exception):
    """Raised by the pre-hook of :func:`cache_prefix` once the wanted hidden states are captured."""


def _body(model: nn.Module) -> Any:
    body: Any = model
    if hasattr(model, "get_base_model"):
        body = model.get_base_model()  # type: ignore[operator]
    return body.model


def _last_hidden(model: nn.Module, ids: Tensor, last: Tensor, start_layer: int = 0) -> Tensor:
    width = int(last.max()) + 1
    ids = ids[:, :width]
    attn = (torch.arange(width)[None, :] <= last[:, None]).long()
    inner = _body(model)
    if start_layer == 0:
        hidden = inner(input_ids=ids, attention_mask=attn, use_cache=False).last_hidden_state
    else:
        # ``ids`` holds the cached hidden states entering layer ``start_layer``: run only the rest.
        layers = inner.layers
        inner.layers = nn.ModuleList(list(layers)[start_layer:])
        try:
            hidden = inner(inputs_embeds=ids, attention_mask=attn, use_cache=False).last_hidden_state
        finally:
            inner.layers = layers
    return hidden[torch.arange(ids.shape[0]), last]


@torch.no_grad()
def cache_prefix(
    model: nn.Module, data: tuple[Tensor, Tensor, Tensor], start_layer: int, *, batch_size: int = 32
) -> tuple[Tensor, Tensor, Tensor]:
    """The hidden states entering decoder layer ``start_layer`` for every row of ``data``.

    When only the layers from ``start_layer`` on differ between models (fine-tuned and merged
    weights of the last layers), these states are the same for all of them; passing the returned
    triple to :func:`label_accuracy` with the same ``start_layer`` then runs only the remaining
    layers and gives the same scores as the full forward pass, several times faster.

    Returns:
        ``(hidden [N, L, D] float, last position [N], label index [N])``.
    """
    inner = _body(model)
    n_layers = len(inner.layers)
    if isinstance(start_layer, bool) or not isinstance(start_layer, int) or not 0 < start_layer < n_layers:
        raise ValueError(f"start_layer must be an int in [1, {n_layers}), got {start_layer!r}")
    if not isinstance(data, tuple) or len(data) != 3:
        raise TypeError("data must be the (input_ids, last, label index) triple of encode_task")
    ids, last, y = data
    if not isinstance(ids, Tensor) or ids.ndim != 2 or ids.dtype != torch.long:
        raise TypeError("data[0] must be a 2-D tensor of token ids (torch.long)")
    if ids.shape[0] == 0 or ids.shape[1] == 0:
        raise ValueError("data is empty")
    model.eval()
    width = ids.shape[1]
    chunks: list[Tensor] = []

    def grab(_mod: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        chunks.append((args[0] if args else kwargs["hidden_states"]).detach().clone())
        raise _StopForwardError

    handle = inner.layers[start_layer].register_forward_pre_hook(grab, with_kwargs=True)
    try:
        for i in range(0, ids.shape[0], batch_size):
            part = ids[i : i + batch_size]
            attn = (torch.arange(width)[None, :] <= last[i : i + batch_size, None]).long()
            with contextlib.suppress(_StopForwardError):
                inner(input_ids=part, attention_mask=attn, use_cache=False)
    finally:
        handle.remove()
    return torch.cat(chunks), last, y


def _head(model: nn.Module) -> Tensor:
    return model.get_output_embeddings().weight  # type: ignore[operator, union-attr, no-any-return]


@torch.no_grad()
def label_accuracy(
    model: nn.Module,
    data: tuple[Tensor, Tensor, Tensor],
    label_ids: Sequence[int],
    *,
    batch_size: int = 32,
    start_layer: int = 0,
) -> float:
    """Share of rows whose gold label token has the highest logit among ``label_ids``.

    With ``start_layer > 0``, ``data`` is the output of :func:`cache_prefix` for that layer.
    """
    return float(label_correct(model, data, label_ids, batch_size=batch_size, start_layer=start_layer).mean())


@torch.inference_mode()
def label_correct(
    model: nn.Module,
    data: tuple[Tensor, Tensor, Tensor],
    label_ids: Sequence[int],
    *,
    batch_size: int = 32,
    start_layer: int = 0,
) -> Tensor:
    """Per row, 1.0 where the gold label token has the highest logit among ``label_ids``, else 0.0
    (:func:`label_accuracy` is its mean); rows in ``data``'s order."""
    model.eval()
    ids, last, y = data
    cand = torch.tensor(list(label_ids), dtype=torch.long)
    head = _head(model)[cand]
    out = []
    for i in range(0, ids.shape[0], batch_size):
        h = _last_hidden(model, ids[i : i + batch_size], last[i : i + batch_size], start_layer)
        pred = (h @ head.T).argmax(-1)
        out.append((pred == y[i : i + batch_size]).float())
    return torch.cat(out)


def trainable_matrix_names(model: nn.Module, layers: Sequence[int]) -> list[str]:
    """Names of the 2-D weights of the given decoder layers (attention and MLP projections)."""
    n_layers = len(model.model.layers)  # type: ignore[union-attr, arg-type]
    bad = [i for i in layers if not -n_layers <= i < n_layers]
    if not layers or bad:
        raise ValueError(f"layers must be non-empty indices in [-{n_layers}, {n_layers}), got {list(layers)}")
    wanted = {f"model.layers.{i % n_layers}." for i in layers}
    return [n for n, p in model.named_parameters() if p.ndim == 2 and any(n.startswith(w) for w in wanted)]


def finetune_subset(
    model: nn.Module,
    data: tuple[Tensor, Tensor, Tensor],
    label_ids: Sequence[int],
    names: Sequence[str],
    *,
    steps: int,
    lr: float,
    batch_size: int = 8,
    seed: int = 0,
    start_layer: int = 0,
    val: tuple[Tensor, Tensor, Tensor] | None = None,
    eval_every: int = 8,
    patience: int = 3,
    min_delta: float = 0.0,
) -> tuple[dict[str, Tensor], list[float]]:
    """Train only ``names`` of ``model`` (in place on a copy of their values) with AdamW through
    :func:`icml25.nn.fit`; returns the trained values of ``names`` and the training losses.
    ``model`` is restored to its original weights afterwards.

    With ``start_layer > 0``, ``data`` is the output of :func:`cache_prefix` and only the layers
    from ``start_layer`` on run; this is the same computation when every name in ``names`` lies in
    those layers (the frozen earlier layers get no gradient either way).

    With ``val`` (same form as ``data``), training runs until the validation loss stops improving:
    it is evaluated every ``eval_every`` steps, training stops after ``patience`` evaluations
    without an improvement larger than ``min_delta`` nats (``steps`` is then a cap), and the
    weights with the lowest validation loss are returned. Without it, all ``steps`` run and the
    last weights are returned."""
    bad_every = isinstance(eval_every, bool) or not isinstance(eval_every, int) or eval_every < 1
    if val is not None and bad_every:
        raise ValueError(f"eval_every must be a positive int when val is given, got {eval_every!r}")
    params = dict(model.named_parameters())
    missing = [n for n in names if n not in params]
    if not names or missing:
        raise ValueError(f"names must be non-empty parameter names of model; unknown: {missing}")
    original = {n: p.detach().clone() for n, p in params.items() if n in names}
    flags = {n: p.requires_grad for n, p in params.items()}
    for n, p in params.items():
        p.requires_grad_(n in original)
    label_tensor = torch.tensor(list(label_ids), dtype=torch.long)

    def loss_fn(m: nn.Module, batch: Any, _gen: Any = None) -> Tensor:
        ids, last, y = batch
        h = _last_hidden(m, ids, last, start_layer)
        logits = h @ _head(m).T
        return nn.functional.cross_entropy(logits, label_tensor[y])

    cfg = FitConfig(
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        weight_decay=0.0,
        grad_clip=1.0,
        sampling="shuffle",
        # The best weights are kept here, for ``names`` only (fit's keep_best copies the whole
        # state dict, 135M parameters, at every improvement); the same rule: the first evaluation
        # with the lowest finite validation loss wins.
        keep_best=False,
        eval_every=eval_every if val is not None else 0,
        patience=patience if val is not None else 0,
        min_delta=min_delta,
        monitor="val_loss",
        monitor_mode="min",
    )

    def evaluate(m: nn.Module) -> dict[str, float]:
        assert val is not None
        with torch.inference_mode():
            total, n = 0.0, val[0].shape[0]
            for i in range(0, n, 64):
                part = tuple(x[i : i + 64] for x in val)
                total += float(loss_fn(m, part)) * part[0].shape[0]
        return {"val_loss": total / n}

    best: dict[str, Any] = {"loss": float("nan"), "weights": None}

    def keep_best(record: EvalRecord) -> None:
        value = record.metrics["val_loss"]
        if math.isfinite(value) and not value >= best["loss"]:  # NaN best: the first finite wins
            best["loss"] = value
            best["weights"] = {n: params[n].detach().clone() for n in original}

    try:
        history = fit(
            model,
            loss_fn,
            data,
            cfg,
            seed=seed,
            evaluate=evaluate if val is not None else None,
            on_eval=keep_best if val is not None else None,
        )
        if best["weights"] is not None:
            trained = best["weights"]
        else:
            trained = {n: params[n].detach().clone() for n in original}
    finally:
        with torch.no_grad():
            for n, v in original.items():
                params[n].copy_(v)
        for n, p in params.items():
            p.requires_grad_(flags[n])
    model.eval()
    return trained, list(history.train_loss)
