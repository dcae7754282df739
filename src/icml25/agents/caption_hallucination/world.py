"""Scenes with skewed priors, the caption grammar, atomic propositions and the exact evaluation of
*Toward Robust Hyper-Detailed Image Captioning: A Multiagent Approach and Dual Evaluation Metrics
for Factuality and Coverage* (Lee et al., ICML 2025, arXiv:2412.15484).

The paper's benchmark needs photographs and GPT-4o as judge. Here the images are multi-object scenes
of :mod:`icml25.data.shape_world` (3x3 grid, sizes, colours, backgrounds) whose scene graph is the
ground truth, so both of the paper's metrics (Sec. 4) are exact:

* **factuality** = sum of true atomic propositions / sum of propositions over all captions (the
  released ``eval_factuality.py`` micro-average, with the scene graph in place of GPT-4o);
* **coverage** = fraction of multiple-choice questions about the image answered correctly by a
  reader that sees only the caption and answers "I don't know" when the caption is silent
  (``eval_coverage.py``, with a rule-based reader in place of GPT-4o).

Co-occurrence priors are skewed on purpose (each shape has a typical colour it takes with
probability ``prior_strength``), which gives a captioner a language prior to hallucinate from.

Notation: a caption is a sequence of sentences, one per object in reading order ("a large red
triangle at the top left.") and a final background sentence ("black background."); an atomic
proposition is one of ``exists`` ("there is a triangle at the top left."), ``colour`` ("the
triangle at the top left is red."), ``size`` ("the triangle at the top left is large.") or
``background`` ("the background is black.").
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from icml25.core.validate import check_in_range, check_positive, check_str
from icml25.data.shape_world import (
    BACKGROUNDS,
    COLOURS,
    SHAPES,
    SIZES,
    Scene,
    ShapeObject,
    cell_name,
    describe,
    random_scene,
)

__all__ = [
    "TYPICAL_COLOUR",
    "KINDS",
    "Proposition",
    "MCQ",
    "WorldConfig",
    "sample_scene",
    "caption_of",
    "split_sentences",
    "parse_sentence",
    "parse_caption",
    "parse_proposition",
    "proposition_text",
    "object_sentence",
    "proposition_true",
    "perturb_proposition",
    "inject_hallucinations",
    "make_mcqs",
    "read_caption",
    "read_propositions",
    "factuality",
    "coverage",
    "WordVocab",
]

#: the colour each shape takes with probability ``prior_strength`` (the skewed prior)
TYPICAL_COLOUR: dict[str, str] = {
    "circle": "yellow",
    "square": "blue",
    "triangle": "red",
    "diamond": "purple",
    "cross": "green",
    "ring": "orange",
    "bar": "red",
}

KINDS: tuple[str, ...] = ("exists", "colour", "size", "background")
GRID = 3
_ROWS = {"top": 0, "middle": 1, "bottom": 2}
_COLS = {"left": 0, "centre": 1, "center": 1, "right": 2}


@dataclass(frozen=True)
class WorldConfig:
    """The scene distribution.

    Args:
        image_size: rendered side in pixels (a multiple of 4 keeps the 3x3 cells aligned with the
            encoders' 9 cell tokens when it is a multiple of 12).
        min_objects, max_objects: objects per scene (inclusive), on the 3x3 grid.
        shapes: the shapes used.
        prior_strength: probability that an object takes its shape's typical colour.
    """

    image_size: int = 36
    min_objects: int = 2
    max_objects: int = 6
    shapes: tuple[str, ...] = SHAPES[:5]
    prior_strength: float = 0.75

    def __post_init__(self) -> None:
        check_positive("WorldConfig.image_size", self.image_size, integer=True)
        check_positive("WorldConfig.min_objects", self.min_objects, integer=True)
        check_positive("WorldConfig.max_objects", self.max_objects, integer=True)
        if not self.min_objects <= self.max_objects <= GRID * GRID:
            raise ValueError(
                "WorldConfig needs min_objects <= max_objects <= 9, "
                f"got {self.min_objects}, {self.max_objects}"
            )
        if not self.shapes or any(s not in SHAPES for s in self.shapes):
            raise ValueError(f"WorldConfig.shapes must be a non-empty subset of {SHAPES}, got {self.shapes}")
        check_in_range("WorldConfig.prior_strength", self.prior_strength, 0.0, 1.0)


def sample_scene(rng: np.random.Generator, config: WorldConfig = WorldConfig()) -> Scene:
    """A 3x3-grid scene whose colours follow the skewed shape -> colour prior."""
    base = random_scene(
        rng, n_objects=(config.min_objects, config.max_objects), grid=GRID, shapes=config.shapes
    )
    colours = tuple(COLOURS)
    objects = []
    for obj in base.objects:
        if rng.random() < config.prior_strength:
            colour = TYPICAL_COLOUR[obj.shape]
        else:
            colour = colours[int(rng.integers(len(colours)))]
        objects.append(dataclasses.replace(obj, colour=colour))
    return Scene(objects=tuple(objects), background=base.background, grid=GRID)


def caption_of(scene: Scene) -> str:
    """The ground-truth hyper-detailed caption (every object, reading order, then the background)."""
    if not isinstance(scene, Scene):
        raise TypeError(f"scene must be a Scene, got {type(scene).__name__}")
    return describe(scene)


# ----------------------------------------------------------------------------------------------
# propositions
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proposition:
    """One atomic proposition (paper Sec. 3: the smallest unit that can be true or false).

    Args:
        kind: ``exists``, ``colour``, ``size`` or ``background``.
        shape: the object's shape (None for ``background``).
        cell: its ``(row, col)`` cell, or None when the sentence named no place.
        value: the colour / size / background colour asserted (None for ``exists``).
        sentence: index of the caption sentence it came from (-1 when unknown).
    """

    kind: str
    shape: str | None = None
    cell: tuple[int, int] | None = None
    value: str | None = None
    sentence: int = -1

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind != "background" and self.shape not in SHAPES:
            raise ValueError(
                f"shape must be one of {SHAPES} for a {self.kind} proposition, got {self.shape!r}"
            )
        if self.kind in ("colour", "size", "background") and self.value is None:
            raise ValueError(f"a {self.kind} proposition needs a value")

    @property
    def key(self) -> tuple[str, str | None, tuple[int, int] | None, str | None]:
        """Identity without the sentence index (for matching propositions across captions)."""
        return (self.kind, self.shape, self.cell, self.value)

    @property
    def text(self) -> str:
        return proposition_text(self)


def _where(cell: tuple[int, int] | None) -> str:
    if cell is None:
        return ""
    name = cell_name(cell, GRID)
    return f" in the {name}" if name == "centre" else f" at the {name}"


def proposition_text(p: Proposition) -> str:
    """The proposition as the sentence the decomposer emits and the verifier is asked about."""
    if p.kind == "background":
        return f"the background is {p.value}."
    if p.kind == "exists":
        return f"there is a {p.shape}{_where(p.cell)}."
    return f"the {p.shape}{_where(p.cell)} is {p.value}."


def object_sentence(obj: ShapeObject) -> str:
    """The caption sentence of one object (the ``describe`` grammar)."""
    return f"a {obj.size} {obj.colour} {obj.shape}{_where(obj.cell)}."


_WORD = re.compile(r"[a-z]+")


def split_sentences(caption: str) -> list[str]:
    """The caption's sentences (split at full stops), stripped, each ending in ``"."``."""
    check_str("caption", caption)
    return [s.strip() + "." for s in caption.split(".") if s.strip()]


def _cell(words: Sequence[str]) -> tuple[int, int] | None:
    row = next((_ROWS[w] for w in words if w in _ROWS), None)
    col = next((_COLS[w] for w in words if w in _COLS), None)
    if row is None and col is None:
        return None
    return (1 if row is None else row, 1 if col is None else col)


def parse_sentence(sentence: str, index: int = -1) -> list[Proposition]:
    """Atomic propositions stated by one caption sentence (exact, tolerant of dropped words).

    An object sentence needs a shape word; its place is read from the row/column words; every
    colour and size word it holds becomes a proposition. A sentence with the word ``background``
    gives the background proposition. Anything else states nothing checkable and gives ``[]``.
    """
    check_str("sentence", sentence)
    words = _WORD.findall(sentence.lower())
    if "background" in words:
        bg = next((w for w in words if w in BACKGROUNDS), None)
        return [] if bg is None else [Proposition("background", value=bg, sentence=index)]
    shape = next((w for w in words if w in SHAPES), None)
    if shape is None:
        return []
    cell = _cell(words)
    out = [Proposition("exists", shape=shape, cell=cell, sentence=index)]
    out += [Proposition("colour", shape, cell, w, index) for w in dict.fromkeys(words) if w in COLOURS]
    out += [Proposition("size", shape, cell, w, index) for w in dict.fromkeys(words) if w in SIZES]
    return out


def parse_caption(caption: str) -> list[Proposition]:
    """The evaluator's exact decomposition of a caption (every sentence, in order)."""
    props: list[Proposition] = []
    for i, sentence in enumerate(split_sentences(caption)):
        props += parse_sentence(sentence, i)
    return props


def parse_proposition(text: str, sentence: int = -1) -> Proposition | None:
    """Read one proposition sentence (``"the triangle at the top left is red."``); None if it states
    no single checkable fact (no shape and no background, or several attribute words)."""
    check_str("text", text)
    props = parse_sentence(text, sentence)
    if not props:
        return None
    if props[0].kind == "background":
        return props[0]
    attributes = [p for p in props if p.kind != "exists"]
    if len(attributes) > 1:
        return None
    return attributes[0] if attributes else props[0]


def _object_at(scene: Scene, shape: str | None, cell: tuple[int, int] | None) -> list[ShapeObject]:
    return [o for o in scene.objects if o.shape == shape and (cell is None or o.cell == cell)]


def proposition_true(p: Proposition, scene: Scene) -> bool:
    """Whether ``p`` holds in the scene graph (an attribute of an absent object is false)."""
    if not isinstance(p, Proposition):
        raise TypeError(f"p must be a Proposition, got {type(p).__name__}")
    if p.kind == "background":
        return scene.background == p.value
    objs = _object_at(scene, p.shape, p.cell)
    if p.kind == "exists":
        return bool(objs)
    if p.kind == "colour":
        return any(o.colour == p.value for o in objs)
    return any(o.size == p.value for o in objs)


def perturb_proposition(p: Proposition, scene: Scene, rng: np.random.Generator) -> Proposition:
    """A false proposition of the same kind (verifier training negatives)."""
    if p.kind == "background":
        return dataclasses.replace(p, value=_other(tuple(BACKGROUNDS), scene.background, rng))
    if p.kind == "colour":
        return dataclasses.replace(p, value=_other(tuple(COLOURS), p.value, rng))
    if p.kind == "size":
        return dataclasses.replace(p, value=_other(SIZES, p.value, rng))
    # exists: a shape that is not at this cell, or this shape at an empty cell
    occupied = {o.cell for o in scene.objects}
    empty = [(r, c) for r in range(GRID) for c in range(GRID) if (r, c) not in occupied]
    if empty and rng.random() < 0.5:
        return dataclasses.replace(p, cell=empty[int(rng.integers(len(empty)))])
    return dataclasses.replace(p, shape=_other(SHAPES[:5], p.shape, rng))


def _other(values: Sequence[str], current: str | None, rng: np.random.Generator) -> str:
    pool = [v for v in values if v != current]
    return pool[int(rng.integers(len(pool)))]


def inject_hallucinations(
    caption: str,
    scene: Scene,
    rng: np.random.Generator,
    *,
    rate: float,
    object_rate: float = 0.0,
    shapes: Sequence[str] = SHAPES[:5],
) -> tuple[str, int]:
    """Inject prior-following hallucinations into a caption.

    Each complete object sentence is altered with probability ``rate``: its colour becomes the
    shape's typical colour (another colour if it already has it), or its size flips, or its shape
    changes (equal odds). With probability ``object_rate`` one invented object (typical colour) is
    added in an empty cell, at its reading-order place.

    Returns:
        ``(caption, n_injected)``.
    """
    check_in_range("rate", rate, 0.0, 1.0)
    check_in_range("object_rate", object_rate, 0.0, 1.0)
    sentences = split_sentences(caption)
    injected = 0
    out: list[tuple[tuple[int, int], str]] = []
    tail: list[tuple[tuple[int, int], str]] = []
    for i, sentence in enumerate(sentences):
        props = parse_sentence(sentence, i)
        kinds = {p.kind: p for p in props}
        whole = {"exists", "colour", "size"} <= set(kinds) and kinds["exists"].cell is not None
        if not whole:
            (tail if kinds.get("background") else out).append(((9, i), sentence))
            continue
        shape, cell = kinds["exists"].shape, kinds["exists"].cell
        colour, size = kinds["colour"].value, kinds["size"].value
        assert shape is not None and cell is not None and colour is not None and size is not None
        if rng.random() < rate:
            injected += 1
            what = int(rng.integers(3))
            if what == 0:
                typical = TYPICAL_COLOUR[shape]
                colour = typical if colour != typical else _other(tuple(COLOURS), colour, rng)
            elif what == 1:
                size = _other(SIZES, size, rng)
            else:
                shape = _other(shapes, shape, rng)
            sentence = object_sentence(ShapeObject(shape, colour, size, cell))
        out.append((cell, sentence))
    if object_rate > 0 and rng.random() < object_rate:
        mentioned = {c for c, _ in out} | {o.cell for o in scene.objects}
        empty = [(r, c) for r in range(GRID) for c in range(GRID) if (r, c) not in mentioned]
        if empty:
            cell = empty[int(rng.integers(len(empty)))]
            shape = shapes[int(rng.integers(len(shapes)))]
            size = SIZES[int(rng.integers(len(SIZES)))]
            out.append((cell, object_sentence(ShapeObject(shape, TYPICAL_COLOUR[shape], size, cell))))
            injected += 1
    ordered = [s for _, s in sorted(out, key=lambda t: t[0])]
    return " ".join(ordered + [s for _, s in tail]), injected


# ----------------------------------------------------------------------------------------------
# metrics: factuality and coverage (paper Sec. 4, evaluated exactly)
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MCQ:
    """A multiple-choice question about an image: ``options[answer]`` is right."""

    kind: str
    question: str
    options: tuple[str, ...]
    answer: int
    cell: tuple[int, int] | None = None


def make_mcqs(scene: Scene, rng: np.random.Generator, shapes: Sequence[str] = SHAPES[:5]) -> list[MCQ]:
    """Coverage questions: shape, colour and size of every object, the object count and the
    background, each with up to four options (the released benchmark's question mix, reduced to
    what the scene graph holds)."""
    out: list[MCQ] = []

    def mcq(kind: str, question: str, right: str, pool: Sequence[str], cell: tuple[int, int] | None) -> MCQ:
        wrong = [v for v in pool if v != right]
        picks = [wrong[i] for i in rng.permutation(len(wrong))[:3]]
        options = [right, *picks]
        order = rng.permutation(len(options))
        options = [options[i] for i in order]
        return MCQ(kind, question, tuple(options), options.index(right), cell)

    for obj in sorted(scene.objects, key=lambda o: o.cell):
        where = cell_name(obj.cell, GRID)
        out.append(mcq("shape", f"What shape is at the {where}?", obj.shape, shapes, obj.cell))
        out.append(
            mcq("colour", f"What colour is the object at the {where}?", obj.colour, tuple(COLOURS), obj.cell)
        )
        out.append(mcq("size", f"How big is the object at the {where}?", obj.size, SIZES, obj.cell))
    counts = [str(k) for k in range(1, GRID * GRID + 1)]
    out.append(mcq("count", "How many objects are there?", str(len(scene.objects)), counts, None))
    out.append(
        mcq("background", "What colour is the background?", scene.background, tuple(BACKGROUNDS), None)
    )
    return out


def read_caption(caption: str, question: MCQ) -> int | None:
    """The caption-only reader: the option index the caption determines, or None ("I don't know")."""
    return read_propositions(parse_caption(caption), question)


def read_propositions(props: Sequence[Proposition], question: MCQ) -> int | None:
    """:func:`read_caption` on a caption already decomposed by :func:`parse_caption`."""
    answer: str | None = None
    if question.kind == "background":
        answer = next((p.value for p in props if p.kind == "background"), None)
    elif question.kind == "count":
        cells = {p.cell for p in props if p.kind == "exists"}
        answer = str(len(cells)) if cells else None
    else:
        at = [p for p in props if p.cell == question.cell and p.cell is not None]
        if question.kind == "shape":
            answer = next((p.shape for p in at if p.kind == "exists"), None)
        else:
            answer = next((p.value for p in at if p.kind == question.kind), None)
    if answer is None:
        return None
    return question.options.index(answer) if answer in question.options else -1


def factuality(captions: Sequence[str], scenes: Sequence[Scene]) -> float:
    """Sum of true propositions / sum of propositions over all captions (NaN if none is stated)."""
    if len(captions) != len(scenes):
        raise ValueError(f"captions and scenes must have the same length, got {len(captions)}, {len(scenes)}")
    if not captions:
        raise ValueError("captions is empty")
    true = total = 0
    for caption, scene in zip(captions, scenes, strict=True):
        props = parse_caption(caption)
        total += len(props)
        true += sum(proposition_true(p, scene) for p in props)
    return true / total if total else float("nan")


def coverage(captions: Sequence[str], questions: Sequence[Sequence[MCQ]]) -> float:
    """Fraction of questions the caption-only reader answers correctly (micro-average)."""
    if len(captions) != len(questions):
        raise ValueError(
            f"captions and questions must have the same length, got {len(captions)}, {len(questions)}"
        )
    if not captions:
        raise ValueError("captions is empty")
    right = total = 0
    for caption, qs in zip(captions, questions, strict=True):
        for q in qs:
            total += 1
            right += read_caption(caption, q) == q.answer
    if total == 0:
        raise ValueError("questions is empty")
    return right / total


# ----------------------------------------------------------------------------------------------
# word vocabulary of the tiny captioner and verifier
# ----------------------------------------------------------------------------------------------


def _vocab_words() -> tuple[str, ...]:
    words = ["<pad>", "<bos>", "<eos>", "<unk>", "<cls>", "<sep>", ".", "a", "the", "at", "in", "is"]
    words += ["there", "background", *SIZES, *COLOURS, *SHAPES, *BACKGROUNDS]
    words += ["top", "middle", "bottom", "left", "centre", "right"]
    return tuple(dict.fromkeys(words))


_VOCAB_INDEX = {w: i for i, w in enumerate(_vocab_words())}


class WordVocab:
    """Word-level tokens of the caption and proposition grammar (``<unk>`` for anything else)."""

    PAD, BOS, EOS, UNK, CLS, SEP = 0, 1, 2, 3, 4, 5

    def __init__(self) -> None:
        self.words = _vocab_words()
        self.index = dict(_VOCAB_INDEX)

    def __len__(self) -> int:
        return len(self.words)

    @classmethod
    def index_of(cls, word: str) -> int:
        """The id of ``word`` in the fixed vocabulary."""
        return _VOCAB_INDEX[word]

    def encode(self, text: str) -> list[int]:
        check_str("text", text)
        tokens = re.findall(r"[a-z]+|\.", text.lower())
        return [self.index.get(t, self.UNK) for t in tokens]

    def decode(self, ids: Sequence[int]) -> str:
        words: list[str] = []
        for i in ids:
            i = int(i)
            if i == self.EOS:
                break
            if i in (self.PAD, self.BOS, self.CLS, self.SEP):
                continue
            words.append(self.words[i] if 0 <= i < len(self.words) else "<unk>")
        return " ".join(words).replace(" .", ".")
