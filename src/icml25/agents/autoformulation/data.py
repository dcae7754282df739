"""Word problems with reference optima, for *Autoformulation of Mathematical Optimization Models
Using LLMs* (Astorga et al., ICML 2025, arXiv 2411.01679).

The paper evaluates on NL4OPT, IndustryOR, ComplexOR and MAMO (Sec. 5). Offline we generate
NL4OPT-style LP/MILP word problems from templates (six families, several wordings each, random
numbers), each with its reference formulation in our DSL and the optimal value HiGHS finds for it.
The set is generated in code from a seed (deterministic), not shipped as a file.
:func:`load_problem_file` reads NL4OPT / IndustryOR files a user has (JSON list or JSON lines with
``en_question`` / ``en_answer``, or ``question`` / ``answer``).

Correctness (Sec. 5 and ``check_ground_truth`` in the official code): the returned optimal value
matches the reference within a relative tolerance (absolute when the reference is 0).
"""

from __future__ import annotations

import json
import math
import os
import random
from dataclasses import dataclass

from .dsl import Formulation, compile_formulation, solve

__all__ = ["ORProblem", "FAMILIES", "synthetic_problems", "load_problem_file", "is_correct"]


@dataclass(frozen=True)
class ORProblem:
    """One word problem: ``text``, reference optimal ``answer``, and (for synthetic ones) the
    reference ``formulation`` and ``family``."""

    uid: str
    text: str
    answer: float
    formulation: Formulation | None = None
    family: str = ""


def is_correct(value: float | None, reference: float, *, rel_tol: float = 1e-2) -> bool:
    """``|value - reference| <= rel_tol * |reference|`` (``<= rel_tol`` when the reference is 0)."""
    if not isinstance(rel_tol, int | float) or not rel_tol >= 0:
        raise ValueError(f"rel_tol must be a non-negative number, got {rel_tol!r}")
    if not math.isfinite(reference):
        raise ValueError(f"reference must be finite, got {reference!r}")
    if value is None or not math.isfinite(value):
        return False
    scale = abs(reference) if reference != 0 else 1.0
    return abs(value - reference) <= rel_tol * scale


def _form(variables, objective, inequalities, equalities=()) -> Formulation:
    return Formulation(tuple(variables), (), objective, tuple(equalities), tuple(inequalities))


def _production(rng: random.Random, wording: int):
    items = rng.choice(
        [("chairs", "tables"), ("bikes", "scooters"), ("cakes", "pies"), ("shirts", "jackets")]
    )
    p = [rng.randint(2, 9) * 5 for _ in items]
    h = [rng.randint(1, 5) for _ in items]
    m = [rng.randint(1, 4) for _ in items]
    H, M = rng.randint(8, 20) * 10, rng.randint(6, 15) * 10
    a, b = items
    texts = [
        f"A workshop makes {a} and {b}. Each {a[:-1]} brings a profit of ${p[0]} and each {b[:-1]} "
        f"${p[1]}. "
        f"A {a[:-1]} needs {h[0]} hours of labour and {m[0]} units of wood; a {b[:-1]} needs {h[1]} hours "
        f"of labour and {m[1]} units of wood. There are {H} hours of labour and {M} units of wood available. "
        f"How many of each should be made to maximise profit?",
        f"Profit per unit: {a} ${p[0]}, {b} ${p[1]}. Labour per unit: {h[0]} h and {h[1]} h, at most {H} h "
        f"in total. Wood per unit: {m[0]} and {m[1]}, at most {M} units. Decide the whole number of {a} and "
        f"{b} to produce for maximum profit.",
    ]
    form = _form(
        [(a, "integer"), (b, "integer")],
        ("max", f"{p[0]}*{a} + {p[1]}*{b}"),
        [f"{h[0]}*{a} + {h[1]}*{b} <= {H}", f"{m[0]}*{a} + {m[1]}*{b} <= {M}"],
    )
    return texts[wording % len(texts)], form


def _diet(rng: random.Random, wording: int):
    c = [rng.randint(2, 9), rng.randint(2, 9)]
    pr = [rng.randint(2, 8), rng.randint(2, 8)]
    vi = [rng.randint(1, 6), rng.randint(1, 6)]
    P, V = rng.randint(20, 60), rng.randint(15, 40)
    texts = [
        f"A patient can eat food A and food B. A serving of food A costs ${c[0]} and contains "
        f"{pr[0]} grams of "
        f"protein and {vi[0]} units of vitamins; a serving of food B costs ${c[1]} and contains "
        f"{pr[1]} grams "
        f"of protein and {vi[1]} units of vitamins. The patient needs at least {P} grams of protein and at "
        f"least {V} units of vitamins. Servings can be fractional. Minimise the cost.",
        f"Minimise the cost of a diet of two foods, A (${c[0]} per serving) and B (${c[1]} per serving). "
        f"Protein: A has {pr[0]} g, B has {pr[1]} g, need at least {P} g. Vitamins: A has {vi[0]}, B has "
        f"{vi[1]}, need at least {V}. Servings may be fractional.",
    ]
    form = _form(
        [("a", "continuous"), ("b", "continuous")],
        ("min", f"{c[0]}*a + {c[1]}*b"),
        [f"{pr[0]}*a + {pr[1]}*b >= {P}", f"{vi[0]}*a + {vi[1]}*b >= {V}"],
    )
    return texts[wording % len(texts)], form


def _knapsack(rng: random.Random, wording: int):
    n = 3
    v = [rng.randint(3, 20) for _ in range(n)]
    w = [rng.randint(2, 9) for _ in range(n)]
    W = max(w) + rng.randint(2, sum(w) - max(w))
    names = ["x1", "x2", "x3"]
    items = ", ".join(f"item {i + 1} (value {v[i]}, weight {w[i]})" for i in range(n))
    texts = [
        f"A hiker can pack each of three items at most once: {items}. The backpack holds a weight of at "
        f"most {W}. Which items should be packed to maximise the total value?",
        f"Choose a subset of three items to maximise total value; {items}; the total weight may not "
        f"exceed {W}.",
    ]
    form = _form(
        [(x, "binary") for x in names],
        ("max", " + ".join(f"{v[i]}*{names[i]}" for i in range(n))),
        [" + ".join(f"{w[i]}*{names[i]}" for i in range(n)) + f" <= {W}"],
    )
    return texts[wording % len(texts)], form


def _staffing(rng: random.Random, wording: int):
    cs = [rng.randint(80, 150), rng.randint(100, 200)]
    hrs = [rng.randint(4, 6), rng.randint(7, 10)]
    need = rng.randint(40, 120)
    min_full = rng.randint(2, 5)
    texts = [
        f"A store hires part-time workers who work {hrs[0]} hours a day for ${cs[0]} and full-time workers "
        f"who work {hrs[1]} hours a day for ${cs[1]}. It needs at least {need} worker-hours a day "
        f"and at least "
        f"{min_full} full-time workers. Minimise the daily wage cost.",
        f"Part-time staff: {hrs[0]} h/day, ${cs[0]}/day. Full-time staff: {hrs[1]} h/day, "
        f"${cs[1]}/day. Cover "
        f"at least {need} hours per day with at least {min_full} full-time staff at minimum cost.",
    ]
    form = _form(
        [("p", "integer"), ("f", "integer")],
        ("min", f"{cs[0]}*p + {cs[1]}*f"),
        [f"{hrs[0]}*p + {hrs[1]}*f >= {need}", f"f >= {min_full}"],
    )
    return texts[wording % len(texts)], form


def _blending(rng: random.Random, wording: int):
    pa, pb = rng.randint(3, 9), rng.randint(2, 8)
    total = rng.randint(5, 20) * 10
    ratio = rng.randint(2, 4)
    texts = [
        f"A juice maker mixes orange juice (profit ${pa} per litre) and apple juice (profit ${pb} per litre) "
        f"into exactly {total} litres of blend. The amount of apple juice must be at least {ratio} times "
        f"the amount of orange juice. Maximise the profit.",
        f"Blend exactly {total} litres from orange juice (${pa}/l profit) and apple juice (${pb}/l profit); "
        f"apple juice must be at least {ratio} times orange juice. Maximise profit.",
    ]
    form = _form(
        [("o", "continuous"), ("a", "continuous")],
        ("max", f"{pa}*o + {pb}*a"),
        [f"a >= {ratio}*o"],
        equalities=[f"o + a == {total}"],
    )
    return texts[wording % len(texts)], form


def _transport(rng: random.Random, wording: int):
    cost = [[rng.randint(1, 9) for _ in range(2)] for _ in range(2)]
    s = [rng.randint(30, 60), rng.randint(30, 60)]
    d = [rng.randint(10, 25), rng.randint(10, 25)]
    texts = [
        f"Two warehouses W1 and W2 hold {s[0]} and {s[1]} units. Store S1 needs exactly {d[0]} units and "
        f"store S2 exactly {d[1]} units. Shipping one unit costs {cost[0][0]} from W1 to S1, {cost[0][1]} "
        f"from W1 to S2, {cost[1][0]} from W2 to S1 and {cost[1][1]} from W2 to S2. Minimise the "
        f"shipping cost.",
        f"Ship goods from W1 (supply {s[0]}) and W2 (supply {s[1]}) to S1 (demand exactly {d[0]}) and S2 "
        f"(demand exactly {d[1]}). Unit costs: W1-S1 {cost[0][0]}, W1-S2 {cost[0][1]}, W2-S1 {cost[1][0]}, "
        f"W2-S2 {cost[1][1]}. Find the cheapest plan.",
    ]
    v = ["x11", "x12", "x21", "x22"]
    form = _form(
        [(x, "continuous") for x in v],
        ("min", f"{cost[0][0]}*x11 + {cost[0][1]}*x12 + {cost[1][0]}*x21 + {cost[1][1]}*x22"),
        [f"x11 + x12 <= {s[0]}", f"x21 + x22 <= {s[1]}"],
        equalities=[f"x11 + x21 == {d[0]}", f"x12 + x22 == {d[1]}"],
    )
    return texts[wording % len(texts)], form


FAMILIES = {
    "production": _production,
    "diet": _diet,
    "knapsack": _knapsack,
    "staffing": _staffing,
    "blending": _blending,
    "transport": _transport,
}


def synthetic_problems(n: int, *, seed: int = 0, families: tuple[str, ...] | None = None) -> list[ORProblem]:
    """``n`` generated problems cycling over ``families`` (all six by default) from position ``seed``;
    deterministic in ``seed``."""
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    fams = tuple(FAMILIES) if families is None else tuple(families)
    if not fams or any(f not in FAMILIES for f in fams):
        raise ValueError(f"families must be a non-empty subset of {tuple(FAMILIES)}, got {families!r}")
    rng = random.Random(seed)
    out = []
    for i in range(n):
        fam = fams[(i + seed) % len(fams)]  # the family cycle starts at the seed
        text, form = FAMILIES[fam](rng, rng.randrange(2))
        result = solve(compile_formulation(form))
        if not result.optimal or result.value is None:  # pragma: no cover - templates are feasible
            raise RuntimeError(f"template {fam} produced an unsolvable instance")
        out.append(ORProblem(f"{fam}-{seed}-{i}", text, round(result.value, 6), form, fam))
    return out


def load_problem_file(path: str | os.PathLike[str]) -> list[ORProblem]:
    """Read an NL4OPT / IndustryOR style file: a JSON list or JSON lines of objects with
    ``en_question``/``en_answer`` (or ``question``/``answer``); rows without a numeric answer are skipped."""
    with open(path, encoding="utf-8") as fh:
        raw = fh.read()
    if not raw.strip():
        raise ValueError(f"{path}: empty file")
    try:
        data = json.loads(raw)
        rows = data if isinstance(data, list) else list(data.values()) if isinstance(data, dict) else None
    except json.JSONDecodeError:
        rows = [json.loads(line) for line in raw.splitlines() if line.strip()]
    if not isinstance(rows, list):
        raise ValueError(f"{path}: expected a list of problems")
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            continue
        text = row.get("en_question", row.get("question"))
        answer = row.get("en_answer", row.get("answer"))
        try:
            value = float(answer)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
        if isinstance(text, str) and text.strip() and math.isfinite(value):
            out.append(ORProblem(str(row.get("id", i)), text.strip(), value))
    if not out:
        raise ValueError(f"{path}: no problem with a text and a numeric answer")
    return out
