"""A small built-in AAAR-style set made in code, and the trivial baselines of the benchmark.

Paper: *AAAR-1.0: Assessing AI's Potential to Assist Research* (Lou et al., ICML 2025,
arXiv 2410.22394). The real benchmark (arXiv LaTeX and ICLR-2023 reviews) cannot be shipped, so
:func:`make_benchmark` writes seeded synthetic "micro-papers" from a grammar of machine-learning
building blocks, in the release's schema:

* EquationInference: each paper describes its equations in words; one display equation is masked.
  The three wrong candidates follow the paper's negative types: an easy edit (an operator or
  function swap), a hard edit in the same notation (an index, transpose or square error), and a
  near miss (one term dropped).
* ExperimentDesign: the paper's component, baseline, datasets and hyperparameter determine gold
  experiments (ablation, baseline comparison, sensitivity, cross-dataset) with template
  explanations.
* PaperWeakness: flaws are injected into the text as cues (one dataset, missing baseline, no
  ablation, unclear symbol, single run); 2-4 simulated reviewers each list a subset in their own
  wording and add one generic complaint.

Baselines (Sec. 5 of the paper and arXiv v1 Table 2): random and majority answers for equations,
the "copy input" predictions (five random input sentences; an experiment copied as its own
explanation), a fixed generic list, and known-quality controls (a paraphrase of the gold list,
another paper's gold list) used to check that the metrics rank gold above corrupted predictions.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from icml25.core.validate import check_positive

from .schema import EquationInstance, ExperimentInstance, WeaknessInstance

__all__ = [
    "SynthPaper",
    "SynthBenchmark",
    "make_benchmark",
    "GENERIC_EXPERIMENTS",
    "GENERIC_WEAKNESSES",
    "copy_input",
    "paraphrase",
    "lengthen",
    "is_flaw_cue",
    "extractive_review",
]

METHODS = ["GateNet", "NormFlowX", "SparseMix", "ResAttn", "ScaleGrad", "DropPathX", "HyperLin", "CoRe"]
COMPONENTS = [
    "gating unit",
    "residual branch",
    "attention pooling",
    "temperature scaling",
    "layer normalisation",
    "auxiliary contrastive loss",
    "curriculum schedule",
    "weight sharing",
]
BASELINES = ["a standard Transformer", "an LSTM", "ResNet-18", "a linear probe", "mixup", "label smoothing"]
DATASETS = ["CIFAR-10", "ImageNet", "SST-2", "MNIST", "WikiText-103", "QM9", "Cora", "Atari"]
HYPERS = ["the learning rate", "the dropout rate", "the hidden width", "the temperature", "the batch size"]
TOPICS = [
    "image classification",
    "language modelling",
    "graph learning",
    "reinforcement learning",
    "molecular property prediction",
    "sentiment analysis",
]
SYMBOLS = [("x", "W", "b", "h"), ("u", "A", "c", "z"), ("v", "M", "d", "s"), ("a", "U", "e", "r")]
ACTS = [("\\sigma", "sigmoid"), ("\\tanh", "hyperbolic tangent"), ("\\mathrm{ReLU}", "ReLU")]
OTHER_ACT = {"\\sigma": "\\tanh", "\\tanh": "\\sigma", "\\mathrm{ReLU}": "\\sigma"}


def _equations(sym: tuple[str, str, str, str], act: tuple[str, str]) -> list[tuple[str, str, list[str]]]:
    """(description, gold LaTeX, [easy, hard, near-miss]) for one paper's notation."""
    x, w, b, h = sym
    f, fname = act
    g = OTHER_ACT[f]
    return [
        (
            f"The hidden representation ${h}$ applies the {fname} to an affine map of the input ${x}$ "
            f"with weight matrix ${w}$ and bias ${b}$.",
            f"{h} = {f}({w} {x} + {b})",
            [f"{h} = {g}({w} {x} + {b})", f"{h} = {f}({w}^\\top {x} + {b})", f"{h} = {f}({w} {x})"],
        ),
        (
            f"The attention weight of position $i$ is the softmax of the score between the query ${x}$ "
            "and the key $k_i$, normalised over all positions $j$.",
            f"\\alpha_i = \\frac{{\\exp({x}^\\top k_i)}}{{\\sum_j \\exp({x}^\\top k_j)}}",
            [
                f"\\alpha_i = \\frac{{\\log({x}^\\top k_i)}}{{\\sum_j \\log({x}^\\top k_j)}}",
                f"\\alpha_i = \\frac{{\\exp({x}^\\top k_i)}}{{\\sum_j \\exp({x}^\\top k_i)}}",
                f"\\alpha_i = \\exp({x}^\\top k_i)",
            ],
        ),
        (
            f"The output ${h}$ adds the block's transformation $F({x})$ back to its input ${x}$ "
            "through a skip connection.",
            f"{h} = {x} + F({x})",
            [f"{h} = {x} - F({x})", f"{h} = {x} + F({h})", f"{h} = F({x})"],
        ),
        (
            f"Each feature of ${x}$ is normalised by subtracting the batch mean $\\mu$ and dividing "
            "by the square root of the variance plus a small constant $\\epsilon$.",
            f"\\hat{{{x}}} = \\frac{{{x} - \\mu}}{{\\sqrt{{\\varsigma^2 + \\epsilon}}}}",
            [
                f"\\hat{{{x}}} = \\frac{{{x} + \\mu}}{{\\sqrt{{\\varsigma^2 + \\epsilon}}}}",
                f"\\hat{{{x}}} = \\frac{{{x} - \\mu}}{{\\sqrt{{\\varsigma + \\epsilon}}}}",
                f"\\hat{{{x}}} = \\frac{{{x} - \\mu}}{{\\sqrt{{\\varsigma^2}}}}",
            ],
        ),
        (
            "The training loss is the cross-entropy between the labels $y_i$ and the predicted "
            "probabilities $p_i$, plus an L2 penalty on the weights weighted by $\\lambda$.",
            f"L = -\\sum_i y_i \\log p_i + \\lambda \\|{w}\\|_2^2",
            [
                f"L = \\sum_i y_i \\log p_i + \\lambda \\|{w}\\|_2^2",
                f"L = -\\sum_i p_i \\log y_i + \\lambda \\|{w}\\|_2^2",
                "L = -\\sum_i y_i \\log p_i",
            ],
        ),
        (
            f"A gate ${b}$ computed by a sigmoid of ${w}$ applied to ${x}$ mixes the candidate ${h}$ "
            f"with the input ${x}$.",
            f"y = {b} \\odot {h} + (1 - {b}) \\odot {x}",
            [
                f"y = {b} \\odot {h} - (1 - {b}) \\odot {x}",
                f"y = {b} \\odot {x} + (1 - {b}) \\odot {h}",
                f"y = {b} \\odot {h}",
            ],
        ),
    ]


FLAWS = {
    "single_dataset": (
        "All experiments are run on {d1} only.",
        [
            "The evaluation uses only {d1}, so it is unclear whether {m} generalises to other datasets.",
            "Experiments are limited to a single dataset ({d1}).",
            "Only {d1} is used; results on more datasets would strengthen the claims about {m}.",
        ],
    ),
    "missing_baseline": (
        "We do not compare with {base} because it is too expensive to tune.",
        [
            "The paper does not compare {m} with {base}, the most natural baseline.",
            "A comparison against {base} is missing.",
            "Why is {base} not included as a baseline? Without it the gains of {m} are hard to judge.",
        ],
    ),
    "no_ablation": (
        "We keep the {comp} fixed in all runs.",
        [
            "There is no ablation of the {comp}, so its contribution to {m} is unknown.",
            "The role of the {comp} is never isolated by an ablation study.",
            "An ablation removing the {comp} is needed to support the design of {m}.",
        ],
    ),
    "unclear_symbol": (
        "The quantity $\\lambda$ is set as described in the appendix.",
        [
            "The notation is unclear: how $\\lambda$ in the loss of {m} is chosen is never explained.",
            "The meaning and value of $\\lambda$ are not defined in the main text.",
            "The weighting $\\lambda$ appears without definition, which makes the method hard to reproduce.",
        ],
    ),
    "single_run": (
        "Each number is from a single training run with {hyp} fixed.",
        [
            "Results come from one run without error bars, and {hyp} is never varied for {m}.",
            "No variance over seeds is reported; a sensitivity study of {hyp} is also missing.",
            "Single-seed results on {d1} make the small improvements of {m} unconvincing.",
        ],
    ),
}
GENERIC_REVIEW = [
    "The writing could be improved and some parts are hard to follow.",
    "The novelty of the approach is limited.",
    "More experiments would make the paper stronger.",
    "The related work section should discuss more prior work.",
]
GENERIC_WEAKNESSES = (
    "The novelty of the method is limited.",
    "The experiments are not sufficient to support the claims.",
    "The presentation is unclear in several places.",
    "Comparisons with more baselines are needed.",
    "The paper lacks a discussion of limitations.",
)
GENERIC_EXPERIMENTS = (
    "Evaluate the method on more datasets.",
    "Compare with more baselines.",
    "Run an ablation study.",
    "Report results over multiple random seeds.",
)

EXP_TEMPLATES = [  # (three wordings of the experiment, its explanation)
    (
        (
            "Ablate the {comp} of {m} on {d1} and compare accuracy with and without it.",
            "Remove the {comp} from {m} and measure the drop on {d1}.",
            "Train a variant of {m} without its {comp} on {d1} to isolate what it contributes.",
        ),
        "This shows whether the {comp} is responsible for the improvement of {m}.",
    ),
    (
        (
            "Compare {m} with {base} on {d1} and {d2} under the same training budget.",
            "Benchmark {m} against {base} on {d1} and {d2} with equal compute.",
            "Run {base} and {m} side by side on {d1} and {d2}, matching the number of updates.",
        ),
        "This tests whether {m} actually outperforms the standard baseline {base}.",
    ),
    (
        (
            "Vary {hyp} of {m} over a wide range on {d1}.",
            "Sweep {hyp} for {m} on {d1} to study sensitivity.",
            "Report how the accuracy of {m} on {d1} changes as {hyp} is increased or decreased.",
        ),
        "This reveals how sensitive {m} is to {hyp} and whether the gains are robust.",
    ),
    (
        (
            "Train {m} on {d1} and test it on {d2} to measure transfer.",
            "Evaluate transfer of {m} from {d1} to {d2}.",
            "Fit {m} on {d1} only and report its accuracy on the unseen {d2}.",
        ),
        "This checks whether the representation learned by {m} generalises beyond {d1}.",
    ),
]

DISTRACTORS = [
    "Recent years have seen rapid progress in {topic}.",
    "Deep networks are now the default approach for {topic}.",
    "Our code will be released upon publication.",
    "We thank the anonymous reviewers for their comments.",
    "The rest of the paper is organised as follows.",
    "Prior work has studied related questions in {topic}.",
]


FILLER = [
    "Earlier work on {topic} relied on hand-designed features and small models.",
    "A second line of work studies how {base} behaves when the data grow.",
    "Several surveys compare methods for {topic} under different budgets.",
    "We follow common practice and report the standard metric for {topic}.",
    "The {comp} has a long history in the design of neural networks.",
    "Our implementation builds on a widely used open-source library.",
    "Table 1 lists the notation used in the rest of the paper.",
    "Figure 1 gives an overview of {m} and of its training loop.",
    "The computational cost of {m} grows linearly with the input length.",
    "We describe the training objective in the next paragraph.",
    "Related methods differ mainly in how they treat the input.",
    "This design keeps the number of parameters close to that of {base}.",
    "The appendix gives the proofs of the statements in this section.",
    "Data preprocessing follows the scripts released with {d1}.",
    "We discuss the broader impact of this work in the conclusion.",
    "Intuitively, {m} spends more computation on harder inputs.",
]
#: Sentences of the injected flaw cues, as the rule-based reviewer recognises them.
_CUE_RULE = re.compile(
    r"\b(?:only|do not compare|fixed|set as described in the appendix|single training run)\b", re.I
)


@dataclass(frozen=True)
class SynthPaper:
    """One synthetic micro-paper with its three task instances."""

    equation: EquationInstance
    experiment: ExperimentInstance
    weakness: WeaknessInstance
    flaws: tuple[str, ...]
    fields: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class SynthBenchmark:
    """The built-in set: ``papers`` and convenience views of each task."""

    papers: tuple[SynthPaper, ...]

    @property
    def equations(self) -> list[EquationInstance]:
        return [p.equation for p in self.papers]

    @property
    def experiments(self) -> list[ExperimentInstance]:
        return [p.experiment for p in self.papers]

    @property
    def weaknesses(self) -> list[WeaknessInstance]:
        return [p.weakness for p in self.papers]


def _paper(index: int, rng: random.Random) -> SynthPaper:
    m = f"{rng.choice(METHODS)}{index}"
    d1, d2 = rng.sample(DATASETS, 2)
    fields = {
        "m": m,
        "comp": rng.choice(COMPONENTS),
        "base": rng.choice(BASELINES),
        "d1": d1,
        "d2": d2,
        "hyp": rng.choice(HYPERS),
        "topic": rng.choice(TOPICS),
    }
    eqs = _equations(rng.choice(SYMBOLS), rng.choice(ACTS))
    order = rng.sample(range(len(eqs)), 3)
    masked = order[0]
    flaws = tuple(sorted(rng.sample(sorted(FLAWS), rng.randint(2, 3))))
    fmt = lambda s: s.format(**fields)  # noqa: E731

    intro = [
        fmt("We study {topic} and propose {m}, a method built around a {comp}."),
        fmt("Unlike {base}, {m} adapts its computation to the input."),
        fmt(rng.choice(DISTRACTORS)),
        fmt(
            "We evaluate {m} on {d1} and {d2}."
            if "single_dataset" not in flaws
            else "We evaluate {m} on {d1}."
        ),
    ]
    method_before: list[str] = []
    method_after: list[str] = []
    for pos, e in enumerate(order):
        desc, gold, _ = eqs[e]
        block = [
            desc,
            f"\\begin{{equation}} {gold} \\end{{equation}}" if e != masked else "[MASKED EQUATION]",
        ]
        (method_before if pos == 0 or e == masked else method_after).extend(block)
    cues = [fmt(FLAWS[f][0]) for f in flaws]
    after_tail = [fmt(rng.choice(DISTRACTORS)), *cues, fmt("In summary, {m} improves {topic}.")]
    before_text = " ".join(intro + method_before[:-1])
    after_text = " ".join(method_after + after_tail)
    desc, gold, wrong = eqs[masked]
    options = [gold, *wrong]
    perm = rng.sample(range(4), 4)
    equation = EquationInstance(
        paper_id=f"synth-{index}",
        context_before=before_text,
        context_after=after_text,
        options=tuple(options[i] for i in perm),
        answer=perm.index(0),
    )
    full_text = f"{before_text} \\begin{{equation}} {gold} \\end{{equation}} {after_text}"

    templates = rng.sample(EXP_TEMPLATES, rng.randint(2, 4))
    experiment = ExperimentInstance(
        paper_id=f"synth-{index}",
        text=full_text,
        experiments=tuple(fmt(rng.choice(t[0])) for t in templates),
        explanations=tuple(fmt(t[1]) for t in templates),
    )
    reviews = []
    for _ in range(rng.randint(2, 4)):
        picked = rng.sample(list(flaws), rng.randint(1, len(flaws)))
        items = [fmt(rng.choice(FLAWS[f][1])) for f in picked]
        items.insert(rng.randint(0, len(items)), rng.choice(GENERIC_REVIEW))
        reviews.append(tuple(items))
    weakness = WeaknessInstance(paper_id=f"synth-{index}", text=full_text, reviews=tuple(reviews))
    return SynthPaper(equation, experiment, weakness, flaws, tuple(sorted(fields.items())))


def make_benchmark(n_papers: int, seed: int = 0) -> SynthBenchmark:
    """``n_papers`` seeded synthetic micro-papers with one instance of each task."""
    check_positive("n_papers", n_papers, integer=True)
    rng = random.Random(seed)
    return SynthBenchmark(tuple(_paper(i, rng) for i in range(n_papers)))


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= 3]


def copy_input(text: str, k: int, rng: random.Random) -> list[str]:
    """The "copy input" baseline: ``k`` random sentences of the input (all if fewer)."""
    check_positive("k", k, integer=True)
    sentences = _sentences(text) or [text]
    return rng.sample(sentences, min(k, len(sentences)))


def paraphrase(paper: SynthPaper, task: str) -> list[str]:
    """A gold-quality prediction in different wording (the oracle control): for ``"experiment"``
    another of the three wordings of each gold experiment, for ``"weakness"`` the last of the three
    reviewer wordings of every injected flaw (no generic complaint)."""
    fields = dict(paper.fields)
    if task == "experiment":
        out = []
        for gold in paper.experiment.experiments:
            for wordings, _ in EXP_TEMPLATES:
                texts = [w.format(**fields) for w in wordings]
                if gold in texts:
                    out.append(texts[(texts.index(gold) + 1) % len(texts)])
        return out
    if task == "weakness":
        return [FLAWS[f][1][-1].format(**fields) for f in paper.flaws]
    raise ValueError(f"task must be 'experiment' or 'weakness', got {task!r}")


def lengthen(paper: SynthPaper, n_filler: int, rng: random.Random) -> WeaknessInstance:
    """The paper's PaperWeakness instance made longer, for the split-combine comparison.

    ``n_filler`` filler sentences (related work, notation, implementation remarks: no flaw cues)
    are added to the paper's own sentences, and every injected flaw cue is moved to a uniformly
    random position of the result, so a reader of only the first part of a long paper misses the
    cues that happen to lie later (the situation split-combine addresses: real papers are longer
    than the model's window). The reviews are unchanged.
    """
    if n_filler < 0:
        raise ValueError(f"n_filler must be non-negative, got {n_filler}")
    fields = dict(paper.fields)
    cues = [FLAWS[f][0].format(**fields) for f in paper.flaws]
    body = [s for s in _split_sentences(paper.weakness.text) if s not in cues]
    filler = [rng.choice(FILLER).format(**fields) for _ in range(n_filler)]
    for sentence in filler:
        body.insert(rng.randint(1, len(body)), sentence)  # the opening sentence stays first
    for cue in cues:
        body.insert(rng.randint(1, len(body)), cue)
    return WeaknessInstance(
        paper_id=paper.weakness.paper_id, text=" ".join(body), reviews=paper.weakness.reviews
    )


def _split_sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def is_flaw_cue(sentence: str) -> bool:
    """Whether the rule-based reviewer flags ``sentence`` as a weakness cue."""
    return bool(_CUE_RULE.search(sentence))


def extractive_review(chunk: str, generic_per_chunk: int = 1) -> list[str]:
    """A rule-based reviewer of controlled quality (a control, not an LLM).

    It lists every flaw-cue sentence of ``chunk`` (recognised by :func:`is_flaw_cue`) as a weakness,
    worded as a complaint about the sentence, and adds ``generic_per_chunk`` generic complaints per
    chunk, as a language model tends to do for any text it reads. Everything it names is in the
    chunk it is shown: the only thing that differs between split-combine and no-split is the text
    the reviewer sees.
    """
    if generic_per_chunk < 0:
        raise ValueError(f"generic_per_chunk must be non-negative, got {generic_per_chunk}")
    sentences = _split_sentences(chunk)
    items = [f"This is a weakness: {s}" for s in sentences if is_flaw_cue(s)]
    start = sum(len(s) for s in sentences) % len(GENERIC_WEAKNESSES)
    items += [GENERIC_WEAKNESSES[(start + i) % len(GENERIC_WEAKNESSES)] for i in range(generic_per_chunk)]
    return items
