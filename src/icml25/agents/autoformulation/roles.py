"""LLM roles (formulator, ranker, judge), their prompts and budget accounting, and a labelled
scripted control model, for *Autoformulation of Mathematical Optimization Models Using LLMs*
(Astorga et al., ICML 2025, arXiv 2411.01679).

Roles, as in the paper's Sec. 3 and the official ``prompts.py`` (our wording, shorter, with one
worked example because the embedded model is small):

* formulator: for the next level, ``n`` samples of that section given the problem and the partial
  formulation (one request with ``n`` completions, as ``N_USED_GPT`` in the official code);
* ranker (local value, "ranking" mode): the unique children are listed, the LLM orders them best to
  worst, ``n_rank`` samples; summed positions give priors ``linspace(0, 1, K + 2)[1:-1]``;
* judge (global value, "score" mode): a 1-100 score of a complete formulation, averaged over samples.

Every role talks to a :class:`~icml25.llm.chat.ChatModel` through :class:`Budget`, which counts
requests and completions. :func:`scripted_control_model` is a ``ScriptedChatModel`` that answers the
same prompts from the reference formulations with controlled errors: a labelled control that
isolates the search, never the default LLM.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from icml25.llm.chat import ChatModel, GenerationConfig, ScriptedChatModel

from .data import ORProblem, is_correct
from .dsl import HEADERS, LEVELS, Formulation, compile_formulation, parse_section, solve

__all__ = [
    "Budget",
    "BudgetExhausted",
    "LLMRoles",
    "harmful_corruption",
    "rank_priors",
    "scripted_control_model",
]

SYSTEM = (
    "You are an expert in optimization modelling. You turn word problems into linear programs in this "
    "format:\n"
    "VARIABLES:\n<name>: <continuous|integer|binary>\n"
    "OBJECTIVE:\n<max|min>: <linear expression>\n"
    "EQUALITIES:\n<linear expression> == <linear expression>, or none\n"
    "INEQUALITIES:\n<linear expression> <= or >= <linear expression>, or none\n"
    "Variables are non-negative. Use * for products."
)
#: The worked example shown as a previous turn of the conversation (one shot).
EXAMPLE_PROBLEM = (
    "A bakery sells bread for $3 and cake for $8. Bread needs 1 kg of flour and cake 2 kg; 40 kg of flour "
    "are available. At most 15 cakes can be sold. Maximise revenue."
)
EXAMPLE = Formulation(
    (("bread", "integer"), ("cake", "integer")),
    (),
    ("max", "3*bread + 8*cake"),
    (),
    ("1*bread + 2*cake <= 40", "cake <= 15"),
)
LEVEL_HINTS = {
    "variables": "one line per decision variable, 'name: type'",
    "objective": "one line 'max: ...' or 'min: ...' using the variable names",
    "equalities": "one line per equality constraint with ==, or the word none",
    "inequalities": "one line per inequality constraint with <= or >=, or the word none",
}
_MARK_LEVEL = "Write the {header} section"
_MARK_RANK = "Candidates for the"
_MARK_JUDGE = "Rate this formulation"
_MARK_FLAT = "Write the complete formulation"


class BudgetExhausted(Exception):  # noqa: N818 - reads as a condition
    """Raised when a role would exceed the completion budget."""


@dataclass
class Budget:
    """Counts LLM requests and completions against ``limit`` completions (``None``: unlimited).

    ``counted`` names the roles whose completions count against ``limit`` (``None``: every role).
    The paper compares methods by the number of formulation generations (its "three orders of
    magnitude fewer generations"), so :class:`~.search.FlatSampler` and
    :class:`~.search.AutoformulationMCTS` are compared at ``counted=("formulate",)`` with ranking
    and judge samples reported in ``total``. A flat complete formulation counts as four field
    generations (``len(LEVELS)``), one per level, as in the paper's budget comparison.
    """

    limit: int | None = None
    counted: tuple[str, ...] | None = None
    requests: int = 0
    completions: int = 0
    total: int = 0
    by_role: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.limit is not None and (not isinstance(self.limit, int) or self.limit < 0):
            raise ValueError(f"limit must be a non-negative integer or None, got {self.limit!r}")
        if isinstance(self.counted, str):
            raise ValueError("counted must be a tuple of role names, not a string")

    def counts(self, role: str) -> bool:
        """Whether ``role``'s completions count against ``limit``."""
        return self.counted is None or role in self.counted

    def remaining(self) -> float:
        return float("inf") if self.limit is None else self.limit - self.completions

    def charge(self, role: str, n: int) -> None:
        if self.counts(role) and n > self.remaining():
            raise BudgetExhausted(role)
        self.requests += 1
        self.total += n
        if self.counts(role):
            self.completions += n
        self.by_role[role] = self.by_role.get(role, 0) + n


@dataclass
class LLMRoles:
    """The three LLM roles over one ``ChatModel``.

    Args:
        model: any chat backend (embedded SmolLM2, HF folder, OpenAI-compatible endpoint, or the
            scripted control).
        temperature, top_p: sampling for the formulator and ranker; the judge samples too.
        level_tokens, flat_tokens, rank_tokens, judge_tokens: new-token limits.
        seed: base seed; each request gets a distinct derived seed.
    """

    model: ChatModel
    temperature: float = 0.8
    top_p: float = 0.95
    level_tokens: int = 48
    flat_tokens: int = 160
    rank_tokens: int = 16
    judge_tokens: int = 6
    seed: int = 0
    unparsed_rankings: int = 0
    _asked: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.model, ChatModel):
            raise TypeError(f"model must be a ChatModel, got {type(self.model).__name__}")
        for name in ("level_tokens", "flat_tokens", "rank_tokens", "judge_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")

    def reset(self, seed: int) -> None:
        """Start a new problem: set the base seed and forget which prompts were asked."""
        self.seed = seed
        self._asked.clear()

    def _ask(
        self,
        user: str,
        n: int,
        max_tokens: int,
        stop: Sequence[str] = (),
        shot: tuple[str, str] | None = None,
    ) -> list[str]:
        # the sampling seed depends on (base seed, prompt, how often this prompt was asked), so an
        # identical request in two arms gets identical samples (common random numbers)
        repeat = self._asked.get(user, 0)
        self._asked[user] = repeat + 1
        digest = hashlib.sha256(f"{self.seed}|{repeat}|{user}".encode()).digest()
        config = GenerationConfig(
            n=n,
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=max_tokens,
            seed=int.from_bytes(digest[:4], "little"),
            stop=tuple(stop),
        )
        messages = [{"role": "system", "content": SYSTEM}]
        if shot is not None:
            messages += [{"role": "user", "content": shot[0]}, {"role": "assistant", "content": shot[1]}]
        messages.append({"role": "user", "content": user})
        return self.model.generate([messages], config)[0]

    @staticmethod
    def _level_prompt(problem: str, partial: Formulation) -> str:
        level = LEVELS[partial.depth]
        so_far = partial.to_text() or "(nothing yet)"
        return (
            f"Problem: {problem}\n\nFormulation so far:\n{so_far}\n\n"
            f"{_MARK_LEVEL.format(header=HEADERS[level])} only: {LEVEL_HINTS[level]}."
        )

    def propose(self, problem: str, partial: Formulation, n: int, budget: Budget) -> list[str]:
        """``n`` raw samples of the next level's section (Sec. 3.2, expansion)."""
        level = LEVELS[partial.depth]
        budget.charge("formulate", n)
        example_partial = Formulation()
        for lv in LEVELS[: partial.depth]:
            value = (EXAMPLE.variables, EXAMPLE.parameters) if lv == "variables" else getattr(EXAMPLE, lv)
            example_partial = example_partial.with_component(lv, value)
        shot = (self._level_prompt(EXAMPLE_PROBLEM, example_partial), EXAMPLE.section_text(level))
        stops = ["\n\n", *(h for lv, h in HEADERS.items() if lv != level)]
        return self._ask(self._level_prompt(problem, partial), n, self.level_tokens, stops, shot)

    def propose_flat(self, problem: str, n: int, budget: Budget) -> list[str]:
        """``n`` complete formulations in one shot each (the flat best-of-N baseline)."""
        budget.charge("formulate", n * len(LEVELS))
        ask = "\n\n" + _MARK_FLAT + " with all four sections."
        shot = (f"Problem: {EXAMPLE_PROBLEM}{ask}", EXAMPLE.to_text())
        return self._ask(f"Problem: {problem}{ask}", n, self.flat_tokens, ("\n\n",), shot)

    def rank(
        self, problem: str, partial: Formulation, candidates: Sequence[Formulation], n: int, budget: Budget
    ) -> np.ndarray:
        """Priors for ``candidates`` (children of ``partial``) from ``n`` LLM rankings."""
        k = len(candidates)
        if k == 1:
            return np.array([1.0])
        budget.charge("rank", n)
        level = LEVELS[partial.depth]
        listing = "\n".join(f"[{i}]\n{c.section_text(level)}" for i, c in enumerate(candidates))
        user = (
            f"Problem: {problem}\n\nFormulation so far:\n{partial.to_text() or '(nothing yet)'}\n\n"
            f"{_MARK_RANK} {HEADERS[level]} section:\n{listing}\n\n"
            f"Order the candidate numbers from best to worst fit to the problem, e.g. "
            f"{', '.join(str(i) for i in reversed(range(k)))}.\nOrder:"
        )
        replies = self._ask(user, n, self.rank_tokens)
        # the official ``_get_children_reward`` skips a reply it cannot parse; with no parsed reply
        # every child gets the uniform prior (the official code then favours the last-sampled child,
        # an artefact of ``argsort`` on all-zero sums)
        orders = [o for o in (_parse_order(r, k) for r in replies) if o is not None]
        self.unparsed_rankings += len(replies) - len(orders)
        if not orders:
            return np.full(k, 0.5)
        return rank_priors(orders, k)

    def judge(self, problem: str, form: Formulation, n: int, budget: Budget) -> float:
        """Mean 1-100 score of a complete formulation over ``n`` samples, divided by 100."""
        budget.charge("judge", n)
        user = (
            f"Problem: {problem}\n\nFormulation:\n{form.to_text()}\n\n"
            f"{_MARK_JUDGE} from 1 (wrong) to 100 (correct). Reply with the number only.\nScore:"
        )
        scores = [_parse_score(r) for r in self._ask(user, n, self.judge_tokens)]
        return float(np.mean(scores)) / 100.0


def _parse_order(reply: str, k: int) -> list[int] | None:
    """The candidate order a ranking reply names (unnamed candidates appended in sample order), or
    ``None`` when it names no candidate: such a reply is skipped, as in the official code."""
    order = []
    for tok in re.findall(r"\d+", reply):
        i = int(tok)
        if i < k and i not in order:
            order.append(i)
    if not order:
        return None
    return order + [i for i in range(k) if i not in order]


def _parse_score(reply: str) -> float:
    m = re.search(r"\d+(?:\.\d+)?", reply)
    return float(np.clip(float(m.group()), 1, 100)) if m else 50.0


def rank_priors(orders: Sequence[Sequence[int]], k: int) -> np.ndarray:
    """Priors from rankings (official ``ranking`` local scoring, ``update_rank`` and
    ``get_normalized_rank``): sum each candidate's positions over the rankings; by descending sum,
    candidates get ``linspace(0, 1, k + 2)[1:-1]`` ascending. Equal sums are broken as the official
    ``argsort`` does (numpy's default sort; for a few equal sums the later-sampled candidate gets
    the higher prior)."""
    if not isinstance(k, int) or k <= 0:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if not orders:
        raise ValueError("orders must be non-empty")
    totals = np.zeros(k, dtype=np.int64)
    for order in orders:
        if sorted(order) != list(range(k)):
            raise ValueError(f"each order must be a permutation of 0..{k - 1}, got {list(order)}")
        for pos, i in enumerate(order):
            totals[i] += pos + 1  # official ranks are 1-based integers
    values = np.linspace(0, 1, k + 2)[1:-1]
    ranks = np.empty(k, dtype=int)
    # worst (largest sum) first, with numpy's default sort as in the official code (its order of
    # equal sums is numpy's, not guaranteed stable)
    ranks[np.argsort(-totals)] = np.arange(k)
    return values[ranks]


# -- labelled scripted control ------------------------------------------------------------------


def _corrupt(level: str, form: Formulation, rng: random.Random) -> Formulation:
    """One modelling error at ``level`` (the simulated proposer's corruption)."""
    if level == "variables":
        flip = {
            "integer": ("continuous", "binary"),
            "continuous": ("integer", "binary"),
            "binary": ("continuous",),
        }
        vs = list(form.variables or ())
        i = rng.randrange(len(vs))
        vs[i] = (vs[i][0], rng.choice(flip[vs[i][1]]))
        return dataclasses.replace(form, variables=tuple(vs))
    if level == "objective":
        sense, expr = form.objective  # type: ignore[misc]
        if rng.random() < 0.5:
            return dataclasses.replace(form, objective=("min" if sense == "max" else "max", expr))
        return dataclasses.replace(form, objective=(sense, _perturb_number(expr, rng)))
    rows = list(getattr(form, level))
    if not rows:  # an invented constraint on a random variable
        name = rng.choice(form.variables or (("x", ""),))[0]
        value = rng.choice((0, 1, 2, 3))
        rows = [f"{name} <= {value}"] if level == "inequalities" else [f"{name} == {value}"]
    elif len(rows) > 1 and rng.random() < 0.4:
        rows.pop(rng.randrange(len(rows)))
    else:
        i = rng.randrange(len(rows))
        row = rows[i]
        if level == "inequalities" and rng.random() < 0.5:
            row = row.replace("<=", "#").replace(">=", "<=").replace("#", ">=")
        else:
            row = _perturb_number(row, rng)
        rows[i] = row
    return dataclasses.replace(form, **{level: tuple(rows)})


def _perturb_number(text: str, rng: random.Random) -> str:
    nums = list(re.finditer(r"(?<![A-Za-z_\d.])\d+(?:\.\d+)?", text))
    if not nums:
        return text + " + 1"
    m = rng.choice(nums)
    new = float(m.group()) * rng.choice([0.5, 2.0]) + 1
    return text[: m.start()] + f"{new:g}" + text[m.end() :]


def _rewrite(level: str, form: Formulation, rng: random.Random) -> str:
    """The section text after equivalence-preserving rewrites (scale rows, move terms, reorder)."""
    if level == "variables":
        lines = [f"{n}: {t}" for n, t in form.variables or ()]
        return "\n".join(lines)
    if level == "objective":
        sense, expr = form.objective  # type: ignore[misc]
        if rng.random() < 0.3:
            return f"{sense}: 2*({expr})/2"
        if rng.random() < 0.3:
            return f"{sense}: 1*({expr})"
        return f"{sense}: {expr}"
    rows = list(getattr(form, level))
    if not rows:
        return "none"
    out = []
    for row in rows:
        op = next(o for o in ("==", "<=", ">=") if o in row)
        lhs, rhs = (s.strip() for s in row.split(op, 1))
        r = rng.random()
        if r < 0.25:
            factor = rng.choice([2, 3, 10])
            row = f"{factor}*({lhs}) {op} {factor}*({rhs})"
        elif r < 0.5:
            flipped = {"==": "==", "<=": ">=", ">=": "<="}[op]
            row = f"{rhs} {flipped} {lhs}"
        elif r < 0.7:
            row = f"{lhs} - ({rhs}) {op} 0"
        out.append(row)
    rng.shuffle(out)
    return "\n".join(out)


def harmful_corruption(level: str, problem: ORProblem, rng: random.Random, tries: int = 20) -> Formulation:
    """The reference formulation with one error at ``level`` that changes the answer: put into the
    reference, it moves the optimal value outside the correctness tolerance or leaves no optimum.

    A random corruption is often harmless (a flipped integrality on an integral LP optimum, a
    perturbed slack constraint); drawing until it is harmful makes ``epsilon`` the per-step rate of
    answer-changing errors. After ``tries`` harmless draws the last one is returned.
    """
    ref = problem.formulation
    if ref is None:
        raise ValueError("problem has no reference formulation")
    bad = ref
    for _ in range(tries):
        bad = _corrupt(level, ref, rng)
        try:
            res = solve(compile_formulation(bad))
        except ValueError:
            return bad
        if not res.optimal or not is_correct(res.value, problem.answer):
            return bad
    return bad


def scripted_control_model(
    problems: Sequence[ORProblem],
    *,
    epsilon: float = 0.35,
    judge_noise: float = 1.0,
    seed: int = 0,
    harmful_errors: bool = True,
) -> ScriptedChatModel:
    """A ``ScriptedChatModel`` that answers the roles' prompts from the reference formulations.

    Formulator: each sample is the reference component with probability ``1 - epsilon``, else a
    corrupted one (with ``harmful_errors``, one that changes the answer: :func:`harmful_corruption`;
    without, any random corruption, many of them harmless), then passed through
    equivalence-preserving rewrites (many samples then mean the same but read differently).
    Ranker and judge: a candidate's quality (1 if its formulation so far matches the reference,
    judged by the solver, else 0) plus Gaussian noise of sd ``judge_noise``.
    A control arm that isolates the search; not a language model.
    """
    if not 0 <= epsilon <= 1:
        raise ValueError(f"epsilon must lie in [0, 1], got {epsilon!r}")
    if judge_noise < 0:
        raise ValueError(f"judge_noise must be non-negative, got {judge_noise!r}")
    refs = {p.text: p for p in problems if p.formulation is not None}
    if not refs:
        raise ValueError("problems must include synthetic problems with reference formulations")
    rng = random.Random(seed)

    def corrupt(level: str, prob: ORProblem) -> Formulation:
        assert prob.formulation is not None
        if harmful_errors:
            return harmful_corruption(level, prob, rng)
        return _corrupt(level, prob.formulation, rng)

    def reference(text: str) -> ORProblem:
        return next(p for t, p in refs.items() if f"Problem: {t}\n" in text)

    cache: dict[tuple[str, Formulation], float] = {}

    def quality(prob: ORProblem, form: Formulation) -> float:
        key = (prob.uid, form)
        if key not in cache:
            cache[key] = _quality(prob, form)
        return cache[key]

    def _quality(prob: ORProblem, form: Formulation) -> float:
        ref = prob.formulation
        assert ref is not None
        try:
            if form.complete:
                res = solve(compile_formulation(form))
                return float(is_correct(res.value, prob.answer))
            level = LEVELS[form.depth - 1]
            text = form.section_text(level)
            return float(text == ref.section_text(level) or _same(level, form, ref))
        except ValueError:
            return 0.0

    def respond(messages: list[dict[str, str]], config: GenerationConfig, i: int) -> str:
        text = messages[-1]["content"]
        prob = reference(text)
        ref = prob.formulation
        assert ref is not None
        if _MARK_FLAT in text:
            form = Formulation()
            for level in LEVELS:
                src = ref if rng.random() >= epsilon else corrupt(level, prob)
                form = form.with_component(level, parse_section(level, _rewrite(level, src, rng)))
            return form.to_text()
        if _MARK_RANK in text or _MARK_JUDGE in text:
            body = text.split("Formulation so far:\n", 1)[-1] if _MARK_RANK in text else text
            if _MARK_JUDGE in text:
                form_text = text.split("Formulation:\n", 1)[1].split(f"\n\n{_MARK_JUDGE}")[0]
                judged = _parse_full(form_text)
                q = quality(prob, judged) if judged is not None else 0.0
                return (
                    f"{int(np.clip(100 / (1 + np.exp(-4 * (q - 0.5) - rng.gauss(0, judge_noise))), 1, 100))}"
                )
            partial_text, rest = body.split(f"\n\n{_MARK_RANK} ", 1)
            partial = _parse_full(partial_text) or Formulation()
            level = LEVELS[partial.depth]
            cands = re.split(r"\n\[\d+\]\n", "\n" + rest.split(" section:", 1)[1].split("\n\nOrder the")[0])[
                1:
            ]
            scores = []
            for c in cands:
                try:
                    q = quality(prob, partial.with_component(level, parse_section(level, c)))
                except ValueError:
                    q = 0.0
                scores.append(q + rng.gauss(0, judge_noise))
            return ", ".join(str(j) for j in np.argsort(-np.array(scores), kind="stable"))
        partial_text = text.split("Formulation so far:\n", 1)[1].split("\n\nWrite the ", 1)[0]
        partial = _parse_full(partial_text) or Formulation()
        level = LEVELS[partial.depth]
        src = ref if rng.random() >= epsilon else corrupt(level, prob)
        return _rewrite(level, src, rng)

    return ScriptedChatModel(
        respond, name=f"scripted-control(eps={epsilon},noise={judge_noise},harmful={harmful_errors})"
    )


def _same(level: str, form: Formulation, ref: Formulation) -> bool:
    from .equivalence import components_equivalent

    trial = ref
    if level != "variables":
        trial = dataclasses.replace(ref, **{lv: None for lv in LEVELS[LEVELS.index(level) + 1 :]})  # type: ignore[arg-type]
        if form.variables != ref.variables:
            return False
    else:
        return sorted(form.variables or ()) == sorted(ref.variables or ())
    return components_equivalent(level, form, trial)


def _parse_full(text: str) -> Formulation | None:
    if "(nothing yet)" in text:
        return Formulation()
    form = Formulation()
    upper = text.upper()
    for k, level in enumerate(LEVELS):
        start = upper.find(HEADERS[level])
        if start < 0:
            return form
        nxt = upper.find(HEADERS[LEVELS[k + 1]]) if k + 1 < len(LEVELS) else -1
        chunk = text[start + len(HEADERS[level]) : nxt if nxt >= 0 else len(text)]
        try:
            form = form.with_component(level, parse_section(level, chunk))
        except ValueError:
            return None
    return form
