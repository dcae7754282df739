"""Prompting and parsing of AAAR-1.0's three tasks for any chat model.

Paper: *AAAR-1.0: Assessing AI's Potential to Assist Research* (Lou et al., ICML 2025,
arXiv 2410.22394), Sec. 4 (settings). The prompts say what the paper's templates say, in our own
words:

* EquationInference, binary (ICML protocol): the context truncated to the last K words before and
  the first K words after the gap, one candidate per query, answer only "0" or "1"; an unparsable
  answer is retried, then counted as the wrong label. Multiple choice (arXiv v1): all candidates
  as lettered options, answer one letter; an unparsable answer counts as wrong.
* ExperimentDesign: the pre-experiment text truncated to ``max_words`` words, asked to recover the
  deleted experiments as a numbered list (items parsed with the pattern ``\\d+\\..*``);
  explanations in the "oracle" setting, one query per gold experiment.
* PaperWeakness: split-combine - cut the paper into floor(len / window) + 1 near-equal word chunks,
  ask for a numbered weakness list per chunk (or "No research content"), concatenate.

Models are :class:`icml25.llm.chat.ChatModel` instances: the embedded SmolLM2, any local Hugging
Face folder or GGUF, or an OpenAI-compatible endpoint (``load_chat_model``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from icml25.core.validate import check_positive
from icml25.llm.chat import ChatModel, GenerationConfig

from .schema import LETTERS, EquationInstance, ExperimentInstance, WeaknessInstance

__all__ = [
    "truncate_context",
    "split_chunks",
    "equation_binary_prompt",
    "equation_choice_prompt",
    "EXPERIMENT_STYLES",
    "experiment_prompt",
    "explanation_prompt",
    "weakness_prompt",
    "parse_binary",
    "parse_choice",
    "parse_numbered_list",
    "predict_equation_binary",
    "predict_equation_choice",
    "predict_experiments",
    "explain_experiments",
    "predict_weaknesses",
]

Messages = list[dict[str, str]]


def truncate_context(before: str, after: str, k: int | None) -> tuple[str, str]:
    """The last ``k`` whitespace words of ``before`` and the first ``k`` of ``after`` (all if None)."""
    if k is None:
        return before, after
    check_positive("k", k, integer=True)
    return " ".join(before.split()[-k:]), " ".join(after.split()[:k])


def split_chunks(text: str, window: int) -> list[str]:
    """floor(len / window) + 1 near-equal chunks of ``text``'s words (the split-combine setting)."""
    check_positive("window", window, integer=True)
    words = text.split()
    n = len(words) // window + 1
    size, extra = divmod(len(words), n)
    chunks, start = [], 0
    for i in range(n):
        stop = start + size + (i < extra)
        chunks.append(" ".join(words[start:stop]))
        start = stop
    return [c for c in chunks if c] or [""]


def _user(text: str) -> Messages:
    return [{"role": "user", "content": text}]


def equation_binary_prompt(instance: EquationInstance, option: int, k: int | None = 1000) -> Messages:
    """One binary query: is candidate ``option`` the equation missing between the two contexts?"""
    if not 0 <= option < len(instance.options):
        raise ValueError(f"option must index the instance's options, got {option}")
    before, after = truncate_context(instance.context_before, instance.context_after, k)
    return _user(
        "You are given the text of a paper around a missing equation and one candidate equation. "
        "Decide whether the candidate is exactly the equation that was removed. "
        'Answer with only "1" (correct) or "0" (wrong).\n\n'
        f"Context before:\n{before}\n\nContext after:\n{after}\n\n"
        f"Candidate equation:\n{instance.options[option]}\n\nAnswer (0 or 1):"
    )


def equation_choice_prompt(instance: EquationInstance, k: int | None = 1000) -> Messages:
    """One multiple-choice query over all candidates, answered by a letter."""
    before, after = truncate_context(instance.context_before, instance.context_after, k)
    options = "\n".join(f"({LETTERS[i]}) {eq}" for i, eq in enumerate(instance.options))
    letters = ", ".join(LETTERS[: len(instance.options)])
    return _user(
        "You are given the text of a paper around a missing equation and several candidate "
        "equations. Exactly one candidate is the equation that was removed. "
        f"Answer with only its letter ({letters}).\n\n"
        f"Context before:\n{before}\n\nContext after:\n{after}\n\nCandidates:\n{options}\n\nAnswer:"
    )


def _words(text: str, max_words: int | None) -> str:
    if max_words is None:
        return text
    check_positive("max_words", max_words, integer=True)
    return " ".join(text.split()[:max_words])


EXPERIMENT_SYSTEM = (
    "You are an expert in machine learning. Your job is to help the user design experiments and "
    "develop new ideas."
)
EXPERIMENT_EXAMPLE = (
    "1. Cross-label generalisation compared with earlier work. The paper proposes a new way to discover "
    "relation types, so it should be tested on widely used benchmarks such as FewRel.\n"
    "2. Visualisation of the learned representations on the test set. The authors should project them "
    "with a dimension-reduction method (for example t-SNE) on the common cross-label test set.\n"
    "3. and so on ..."
)
#: ``"official"``: the structure of the release's ``Exp_eval`` template (a system role, a two-item
#: worked example, and a reply opener that primes the list); ``"short"``: one user message with a
#: one-line instruction (this package's first version, kept for comparison).
EXPERIMENT_STYLES = ("official", "short")


def experiment_prompt(text: str, max_words: int | None = 2000, style: str = "official") -> Messages:
    """Ask for the experiments deleted from a paper, as a numbered list.

    ``style="official"`` follows the release's template in our words: a system message, the task,
    a two-item example list, the paper, "only the list", and an opener ``### Your Experiment
    List:`` followed by a code fence. ``style="short"`` is a single short user message.
    """
    if style not in EXPERIMENT_STYLES:
        raise ValueError(f"style must be one of {EXPERIMENT_STYLES}, got {style!r}")
    paper = _words(text, max_words)
    if style == "short":
        return _user(
            "Below is the beginning of a research paper whose experiment sections were deleted. "
            "Recover the experiments the authors should run to support their claims. "
            "Write them as a numbered list (1. ..., 2. ...), one experiment per line.\n\n"
            f"Paper:\n{paper}\n\nExperiments:"
        )
    return [
        {"role": "system", "content": EXPERIMENT_SYSTEM},
        {
            "role": "user",
            "content": (
                "You are given part of a machine-learning paper: the sections that introduce the research "
                "(such as the abstract and introduction). Every section about experiments was deleted.\n\n"
                "First read it carefully and work out what the authors want to propose or show and how "
                "their work differs from earlier work.\n\n"
                "Then imagine you are the authors: which experiments must you run to support the research? "
                "That is, **recover the deleted experiments** as **a list of experiment ideas** that briefly "
                "summarises the experiments the authors should run.\n\n"
                f"Here is an example:\n```\n{EXPERIMENT_EXAMPLE}\n```\n\n"
                f"Here is the paper (partial content):\n```\n{paper}\n```\n\n"
                "Now give the list of experiments the authors have to run. Give only the list, with no "
                "other words.\n\n### Your Experiment List:\n```\n"
            ),
        },
    ]


def explanation_prompt(text: str, experiment: str, max_words: int | None = 2000) -> Messages:
    """Ask why one (gold) experiment is needed for the paper (the oracle setting)."""
    return _user(
        "Below is the beginning of a research paper and one experiment the authors ran. "
        "Explain in one or two sentences why this experiment is needed.\n\n"
        f"Paper:\n{_words(text, max_words)}\n\nExperiment: {experiment}\n\nExplanation:"
    )


def weakness_prompt(chunk: str) -> Messages:
    """Ask a reviewer-style numbered weakness list for one chunk of a paper."""
    return _user(
        "You are reviewing a research paper. Below is a part of it. List the weaknesses of the "
        "work as a numbered list (1. ..., 2. ...). If the part has no research content, answer "
        '"No research content".\n\n'
        f"Paper part:\n{chunk}\n\nWeaknesses:"
    )


_BINARY = re.compile(r"(?<![\d.])([01])(?!\d|\.\d)")


def parse_binary(reply: str) -> int | None:
    """The first standalone ``0`` or ``1`` in a reply, or None."""
    match = _BINARY.search(reply)
    return int(match.group(1)) if match else None


def parse_choice(reply: str, n_options: int) -> int | None:
    """The option index of the first standalone letter A.. in a reply (``(B)``, ``B.``, ``B``), or None."""
    check_positive("n_options", n_options, integer=True)
    letters = LETTERS[:n_options]
    match = re.search(rf"(?<![A-Za-z])([{letters}])(?![A-Za-z])", reply)
    return letters.index(match.group(1)) if match else None


def parse_numbered_list(reply: str, *, first_number_given: bool = False) -> list[str]:
    """Items of a numbered list (lines matching ``\\d+\\..*``), numbers stripped.

    ``first_number_given``: the reply continues a ``"1."`` the caller wrote, so its first line is
    item 1. Items of only digits and dots (``"1.1.1."``) are dropped.
    """
    text = ("1." + reply) if first_number_given else reply
    if text.strip().lower().startswith(("1. no research content", "no research content")):
        return []
    items = []
    for match in re.finditer(r"\d+\.(.*)", text):
        item = match.group(1).strip()
        if re.sub(r"[\d.\s]", "", item) and "no research content" not in item.lower():
            items.append(item)
    return items


def _config(max_tokens: int, temperature: float, seed: int | None) -> GenerationConfig:
    return GenerationConfig(max_tokens=max_tokens, temperature=temperature, seed=seed)


def predict_equation_binary(
    model: ChatModel,
    instances: Sequence[EquationInstance],
    *,
    k: int | None = 1000,
    retries: int = 3,
    max_tokens: int = 8,
    temperature: float = 0.0,
    seed: int | None = None,
) -> tuple[list[int], list[int], int]:
    """Binary decisions for every (instance, candidate) pair.

    Returns ``(predicted, gold, n_unparsed)``; a reply still unparsable after ``retries`` extra
    queries is set to the wrong label, as the official script does.
    """
    if retries < 0:
        raise ValueError(f"retries must be non-negative, got {retries}")
    pairs = [(inst, j) for inst in instances for j in range(len(inst.options))]
    gold = [inst.labels[j] for inst, j in pairs]
    pred: list[int | None] = [None] * len(pairs)
    todo = list(range(len(pairs)))
    for attempt in range(retries + 1):
        if not todo:
            break
        conversations = [equation_binary_prompt(pairs[i][0], pairs[i][1], k) for i in todo]
        cfg = _config(max_tokens, temperature, None if seed is None else seed + attempt)
        replies = model.generate(conversations, cfg)
        for i, reply in zip(todo, replies, strict=True):
            pred[i] = parse_binary(reply[0])
        todo = [i for i in todo if pred[i] is None]
    unparsed = len(todo)
    final = [p if p is not None else 1 - g for p, g in zip(pred, gold, strict=True)]
    return final, gold, unparsed


def predict_equation_choice(
    model: ChatModel,
    instances: Sequence[EquationInstance],
    *,
    k: int | None = 1000,
    max_tokens: int = 4,
    temperature: float = 0.0,
    seed: int | None = None,
) -> list[int | None]:
    """Multiple-choice answers (option indices; None where the reply named no option)."""
    replies = model.generate(
        [equation_choice_prompt(x, k) for x in instances], _config(max_tokens, temperature, seed)
    )
    return [parse_choice(r[0], len(x.options)) for r, x in zip(replies, instances, strict=True)]


def predict_experiments(
    model: ChatModel,
    instances: Sequence[ExperimentInstance],
    *,
    max_words: int | None = 2000,
    max_tokens: int = 200,
    temperature: float = 0.0,
    seed: int | None = None,
    style: str = "official",
) -> list[list[str]]:
    """Predicted experiment lists, one per paper (``style``: see :func:`experiment_prompt`)."""
    replies = model.generate(
        [experiment_prompt(x.text, max_words, style) for x in instances],
        _config(max_tokens, temperature, seed),
    )
    return [parse_numbered_list(r[0]) for r in replies]


def explain_experiments(
    model: ChatModel,
    instances: Sequence[ExperimentInstance],
    *,
    max_words: int | None = 2000,
    max_tokens: int = 80,
    temperature: float = 0.0,
    seed: int | None = None,
) -> list[list[str]]:
    """Explanations of each paper's gold experiments, one query per experiment (oracle setting)."""
    conversations = [explanation_prompt(x.text, e, max_words) for x in instances for e in x.experiments]
    replies = iter(model.generate(conversations, _config(max_tokens, temperature, seed)))
    return [[next(replies)[0].strip() or "-" for _ in x.experiments] for x in instances]


def predict_weaknesses(
    model: ChatModel,
    instances: Sequence[WeaknessInstance],
    *,
    window: int = 2000,
    split: bool = True,
    max_tokens: int = 200,
    temperature: float = 0.0,
    seed: int | None = None,
) -> list[list[str]]:
    """Weakness lists: split-combine over ``window``-word chunks, or the first ``window`` words."""
    check_positive("window", window, integer=True)
    chunks = [split_chunks(x.text, window) if split else [_words(x.text, window)] for x in instances]
    flat = [weakness_prompt(c) for cs in chunks for c in cs]
    replies = iter(model.generate(flat, _config(max_tokens, temperature, seed)))
    out = []
    for cs in chunks:
        items: list[str] = []
        for _ in cs:
            items.extend(parse_numbered_list(next(replies)[0]))
        out.append(items)
    return out
