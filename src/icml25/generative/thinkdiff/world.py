"""The toy world of the ThinkDiff check: a word vocabulary, single-object renders and CoBSAT-like tasks.

*I Think, Therefore I Diffuse: Enabling Multimodal In-Context Reasoning in Diffusion Models*
(ThinkDiff; Mi et al.; ICML 2025; arXiv:2502.10458).

The paper evaluates on CoBSAT (Zeng et al., 2024): N (text, image) demonstrations share a latent
attribute; the model must generate the image for a query text. Here the images come from
:mod:`icml25.data.shape_world` (one object, ``grid=1``), the captions are its canonical
``"a {colour} {shape} on {bg} background"``, and the four tasks are (Sec. 4.1, Table 1 themes):

    color_i         text = shape,      latent colour;      query shape       -> query shape in the colour
    color_ii        text = colour,     latent shape;       query colour      -> the shape in the query colour
    background_i    text = shape,      latent background;  query shape       -> query shape on the background
    background_ii   text = background, latent shape;       query background  -> the shape on that background

Attributes that are neither given nor latent (the background in colour tasks, the colour in
background tasks) are shared by all demonstrations and the target, so every answer is one full
caption. Images are precomputed once for all (shape, colour, background, size) combinations.

Token layout (one word = one token): the VLM sees ``<bos> [word <img>xP]*N word infer <sep>`` for an
in-context prompt and ``<bos> <img>xP describe <sep>`` for captioning, where ``<img>`` is a
placeholder replaced by the P patch embeddings of the image in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from icml25.core.validate import check_positive

__all__ = [
    "TASKS",
    "CAPTION_ORDERS",
    "SPECIALS",
    "Vocab",
    "ToyWorld",
    "Prompt",
    "cobsat_like_tasks",
    "sample_prompts",
]

CAPTION_ORDERS: tuple[str, ...] = ("fixed", "random")
TASKS: tuple[str, ...] = ("color_i", "color_ii", "background_i", "background_ii")
SPECIALS: tuple[str, ...] = ("<pad>", "<bos>", "<eos>", "<img>", "<sep>")
_FILLER = ("a", "on", "background", "describe", "infer")


@dataclass(frozen=True)
class Vocab:
    """A word-level vocabulary: special tokens, caption words and the two instruction words."""

    words: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.words)

    def id(self, word: str) -> int:
        try:
            return self.words.index(word)
        except ValueError:
            raise ValueError(f"word {word!r} is not in the vocabulary") from None

    @property
    def pad(self) -> int:
        return 0

    @property
    def bos(self) -> int:
        return 1

    @property
    def eos(self) -> int:
        return 2

    @property
    def img(self) -> int:
        return 3

    @property
    def sep(self) -> int:
        return 4

    def encode(self, text: str) -> list[int]:
        """Word ids of ``text`` (split on spaces), without specials."""
        return [self.id(w) for w in text.split()]

    def decode(self, ids: Sequence[int]) -> str:
        """Words of ``ids`` up to the first ``<eos>``, specials dropped."""
        out: list[str] = []
        for i in ids:
            if int(i) == self.eos:
                break
            if 0 <= int(i) < len(SPECIALS) or int(i) >= self.size:
                continue
            out.append(self.words[int(i)])
        return " ".join(out)


class ToyWorld:
    """Single-object shape world: attributes, a render table and caption helpers.

    Args:
        image_size: side of the rendered images.
        shapes, colours, backgrounds: attribute values (subsets of :mod:`icml25.data.shape_world`'s).
        sizes: object sizes used (a nuisance attribute: captions do not mention it).
        caption_order: ``"fixed"``: every caption is ``"a {colour} {shape} on {bg} background"``;
            ``"random"``: a caption names the three attributes as the phrases ``{colour}``, ``{shape}``
            and ``{bg} background`` in an order drawn per caption (as varied VLM answers are), so the
            state that emits a word must still carry every attribute not yet named.
    """

    def __init__(
        self,
        image_size: int = 16,
        *,
        shapes: Sequence[str] | None = None,
        colours: Sequence[str] | None = None,
        backgrounds: Sequence[str] | None = None,
        sizes: Sequence[str] = ("small", "large"),
        caption_order: str = "fixed",
    ) -> None:
        from icml25.data import shape_world as sw

        check_positive("image_size", image_size, integer=True)
        self.image_size = int(image_size)
        self.shapes = tuple(shapes if shapes is not None else sw.SHAPES)
        self.colours = tuple(colours if colours is not None else sw.COLOURS)
        self.backgrounds = tuple(backgrounds if backgrounds is not None else sw.BACKGROUNDS)
        self.sizes = tuple(sizes)
        if caption_order not in CAPTION_ORDERS:
            raise ValueError(f"caption_order must be one of {CAPTION_ORDERS}, got {caption_order!r}")
        self.caption_order = caption_order
        for name, vals, allowed in (
            ("shapes", self.shapes, sw.SHAPES),
            ("colours", self.colours, tuple(sw.COLOURS)),
            ("backgrounds", self.backgrounds, tuple(sw.BACKGROUNDS)),
            ("sizes", self.sizes, sw.SIZES),
        ):
            if len(vals) < (1 if name == "sizes" else 2) or any(v not in allowed for v in vals):
                raise ValueError(f"{name} must be >= 2 distinct values from {allowed}, got {vals}")
        self.vocab = Vocab(SPECIALS + _FILLER + self.shapes + self.colours + self.backgrounds)
        scenes = [
            sw.Scene(objects=(sw.ShapeObject(s, c, z),), background=b)
            for s in self.shapes
            for c in self.colours
            for b in self.backgrounds
            for z in self.sizes
        ]
        #: (n_shapes, n_colours, n_backgrounds, n_sizes, 3, H, W) render table
        self.table: Tensor = sw.render_batch(scenes, self.image_size).reshape(
            len(self.shapes),
            len(self.colours),
            len(self.backgrounds),
            len(self.sizes),
            3,
            image_size,
            image_size,
        )

    @property
    def n_combos(self) -> int:
        return len(self.shapes) * len(self.colours) * len(self.backgrounds)

    def images(self, attrs: Tensor, size: Tensor | None = None) -> Tensor:
        """Renders ``(..., 3, H, W)`` of attribute indices ``attrs (..., 3)`` = (shape, colour, bg)."""
        if size is None:
            size = torch.full(attrs.shape[:-1], len(self.sizes) - 1, dtype=torch.long)
        return self.table[attrs[..., 0], attrs[..., 1], attrs[..., 2], size]

    def caption(self, shape: int, colour: int, bg: int) -> str:
        """The canonical caption, as :func:`icml25.data.shape_world.describe` writes it."""
        return f"a {self.colours[colour]} {self.shapes[shape]} on {self.backgrounds[bg]} background"

    @property
    def caption_length(self) -> int:
        """Words per full caption (6 fixed, 4 random)."""
        return 6 if self.caption_order == "fixed" else 4

    def _phrase_ids(self, attrs: Tensor) -> list[Tensor]:
        """``[(B, 1) colour, (B, 1) shape, (B, 2) "{bg} background"]`` ids (the random-order phrases)."""
        v = self.vocab
        b = attrs.shape[0]
        return [
            (attrs[:, 1] + v.id(self.colours[0]))[:, None],
            (attrs[:, 0] + v.id(self.shapes[0]))[:, None],
            torch.stack([attrs[:, 2] + v.id(self.backgrounds[0]), torch.full((b,), v.id("background"))], 1),
        ]

    def caption_ids(self, attrs: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """``(B, caption_length)`` word ids of the captions of ``attrs (B, 3)``.

        With ``caption_order="random"`` every row draws its own phrase order from ``generator``.
        """
        v = self.vocab
        b = attrs.shape[0]
        if self.caption_order == "fixed":
            return torch.stack(
                [
                    torch.full((b,), v.id("a")),
                    attrs[:, 1] + v.id(self.colours[0]),
                    attrs[:, 0] + v.id(self.shapes[0]),
                    torch.full((b,), v.id("on")),
                    attrs[:, 2] + v.id(self.backgrounds[0]),
                    torch.full((b,), v.id("background")),
                ],
                dim=1,
            )
        phrases = self._phrase_ids(attrs)
        orders = torch.argsort(torch.rand(b, 3, generator=generator), dim=1)
        out = torch.empty(b, self.caption_length, dtype=torch.long)
        for i, order in enumerate(orders.tolist()):
            out[i] = torch.cat([phrases[j][i] for j in order])
        return out

    def partial_caption(
        self, shape: int | None, colour: int | None, bg: int | None, order: Sequence[int] | None = None
    ) -> str:
        """A caption naming only the given attributes (``"a cross"``, ``"on teal background"``).

        With ``caption_order="random"`` the named phrases follow ``order`` (a permutation of
        0 colour, 1 shape, 2 background; default that order): ``"cross teal background"``.
        """
        if self.caption_order == "random":
            words = {0: self.colours[colour] if colour is not None else None,
                     1: self.shapes[shape] if shape is not None else None,
                     2: f"{self.backgrounds[bg]} background" if bg is not None else None}  # fmt: skip
            return " ".join(w for j in (order if order is not None else (0, 1, 2)) if (w := words[j]))
        head = " ".join(w for w in (self.colours[colour] if colour is not None else None,
                                    self.shapes[shape] if shape is not None else None) if w)  # fmt: skip
        parts = [f"a {head}"] if head else []
        if bg is not None:
            parts.append(f"on {self.backgrounds[bg]} background")
        return " ".join(parts)

    def parse(self, text: str) -> tuple[int, int, int]:
        """``(shape, colour, bg)`` indices named in ``text`` (-1 where none is named)."""
        words = text.split()

        def find(values: tuple[str, ...]) -> int:
            return next((values.index(w) for w in words if w in values), -1)

        return find(self.shapes), find(self.colours), find(self.backgrounds)


@dataclass(frozen=True)
class Prompt:
    """A batch of CoBSAT-like prompts of one task and shot count.

    Attributes:
        task: one of :data:`TASKS`.
        shots: demonstrations per prompt N.
        demo_attrs: ``(B, N, 3)`` (shape, colour, bg) of the demonstration images.
        demo_words: ``(B, N)`` word ids of the demonstration texts.
        query_word: ``(B,)`` word id of the query text.
        target: ``(B, 3)`` attributes of the correct image.
        sizes: ``(B, N)`` object-size indices of the demonstration images.
    """

    task: str
    shots: int
    demo_attrs: Tensor
    demo_words: Tensor
    query_word: Tensor
    target: Tensor
    sizes: Tensor

    def __len__(self) -> int:
        return int(self.target.shape[0])

    @property
    def given(self) -> int:
        """Attribute index (0 shape, 1 colour, 2 bg) named by the query text."""
        return {"color_i": 0, "color_ii": 1, "background_i": 0, "background_ii": 2}[self.task]

    @property
    def latent(self) -> int:
        """Attribute index inferred from the demonstrations."""
        return {"color_i": 1, "color_ii": 0, "background_i": 2, "background_ii": 0}[self.task]


def _distinct(n_values: int, k: int, b: int, gen: torch.Generator) -> Tensor:
    """``(b, k)`` indices, distinct within a row (k <= n_values)."""
    return torch.argsort(torch.rand(b, n_values, generator=gen), dim=1)[:, :k]


def sample_prompts(world: ToyWorld, task: str, shots: int, n: int, gen: torch.Generator) -> Prompt:
    """``n`` random prompts of ``task`` with ``shots`` demonstrations.

    The texts of a prompt are distinct while the attribute has values left; beyond that they cycle.

    Raises:
        ValueError: unknown task or non-positive sizes.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    check_positive("shots", shots, integer=True)
    check_positive("n", n, integer=True)
    counts = (len(world.shapes), len(world.colours), len(world.backgrounds))
    given = {"color_i": 0, "color_ii": 1, "background_i": 0, "background_ii": 2}[task]
    latent = {"color_i": 1, "color_ii": 0, "background_i": 2, "background_ii": 0}[task]
    other = 3 - given - latent
    # distinct texts while values last (4 backgrounds: a 4-shot background_ii query repeats a demo's text)
    perm = _distinct(counts[given], counts[given], n, gen)
    texts = perm[:, torch.arange(shots + 1) % counts[given]]  # (n, N+1): demos then query
    lat = torch.randint(counts[latent], (n, 1), generator=gen).expand(n, shots + 1)
    oth = torch.randint(counts[other], (n, 1), generator=gen).expand(n, shots + 1)
    attrs = torch.zeros(n, shots + 1, 3, dtype=torch.long)
    attrs[..., given], attrs[..., latent], attrs[..., other] = texts, lat, oth
    offsets = [
        world.vocab.id(world.shapes[0]),
        world.vocab.id(world.colours[0]),
        world.vocab.id(world.backgrounds[0]),
    ]
    words = texts + offsets[given]
    sizes = torch.randint(len(world.sizes), (n, shots), generator=gen)
    return Prompt(
        task=task,
        shots=shots,
        demo_attrs=attrs[:, :shots].contiguous(),
        demo_words=words[:, :shots].contiguous(),
        query_word=words[:, shots].contiguous(),
        target=attrs[:, shots].contiguous(),
        sizes=sizes,
    )


def cobsat_like_tasks(
    world: ToyWorld, shots: Sequence[int] = (2, 4), n: int = 100, seed: int = 0
) -> list[Prompt]:
    """The evaluation set: ``n`` prompts for every task in :data:`TASKS` and every shot count."""
    gen = torch.Generator().manual_seed(int(seed))
    return [sample_prompts(world, task, int(k), n, gen) for k in shots for task in TASKS]
