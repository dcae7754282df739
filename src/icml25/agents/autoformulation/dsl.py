"""Formulation DSL, compilation to a linear model and HiGHS solving, for *Autoformulation of
Mathematical Optimization Models Using LLMs* (Astorga et al., ICML 2025, arXiv 2411.01679).

The paper (Sec. 3, the hierarchical hypothesis space) builds a formulation component by component:
parameters and decision variables, objective, equality constraints, inequality constraints. The
official code writes each component as a Python dict and executes generated gurobipy code. Here a
component is plain text in a small line-based language and nothing is executed: expressions are
parsed with :mod:`ast` (numbers, names, ``+ - * /``, unary signs, one comparison), turned into
``sympy`` expressions (our canonical form) and linearised into rows; the model is solved with
HiGHS through :func:`scipy.optimize.milp`.

Text format (one section per tree level)::

    VARIABLES:
    x: integer        # chairs           (types: continuous, integer, binary)
    cap = 100         # a named parameter (optional)
    OBJECTIVE:
    max: 30*x + 50*y
    EQUALITIES:
    none
    INEQUALITIES:
    2*x + 4*y <= cap

All decision variables are non-negative (binary ones lie in [0, 1]): our convention, so that
non-negativity constraints are implicit. Indexed variable families and ``sum`` comprehensions of
the official DSL are not supported (every shipped problem has scalar variables).
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "LEVELS",
    "VAR_TYPES",
    "Formulation",
    "LinearModel",
    "SolveResult",
    "compile_formulation",
    "linear_form",
    "parse_section",
    "parse_formulation_text",
    "solve",
]

LEVELS = ("variables", "objective", "equalities", "inequalities")
HEADERS = {level: level.upper() + ":" for level in LEVELS}
VAR_TYPES = ("continuous", "integer", "binary")
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_NUMBER = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_VAR_LINE = re.compile(rf"^\s*[-*]?\s*({_NAME})\s*:\s*(continuous|integer|binary)\b", re.IGNORECASE)
_PAR_LINE = re.compile(rf"^\s*[-*]?\s*({_NAME})\s*=\s*({_NUMBER})\s*(?:#.*)?$")
_OBJ_LINE = re.compile(r"^\s*[-*]?\s*(max|min)(?:imi[sz]e)?\s*:?\s*(.+)$", re.IGNORECASE)
_IMPLICIT_MUL = re.compile(r"(?<![A-Za-z_\d.])(\d+(?:\.\d+)?)\s*([A-Za-z_])")


@dataclass(frozen=True)
class Formulation:
    """A (partial) formulation: the components chosen so far, as normalised text lines.

    Args:
        variables: ``(name, type)`` pairs.
        parameters: ``(name, value)`` pairs.
        objective: ``(sense, expression)`` with sense ``"max"`` or ``"min"``, or ``None``.
        equalities, inequalities: constraint lines; ``None`` while the level is not filled,
            ``()`` for "none".
    """

    variables: tuple[tuple[str, str], ...] | None = None
    parameters: tuple[tuple[str, float], ...] = ()
    objective: tuple[str, str] | None = None
    equalities: tuple[str, ...] | None = None
    inequalities: tuple[str, ...] | None = None

    @property
    def depth(self) -> int:
        """How many levels are filled (0 to 4)."""
        filled = (self.variables, self.objective, self.equalities, self.inequalities)
        return next((i for i, c in enumerate(filled) if c is None), len(LEVELS))

    @property
    def complete(self) -> bool:
        return self.depth == len(LEVELS)

    def with_component(self, level: str, value: Any) -> Formulation:
        """A copy with ``level`` set; raises ``ValueError`` when ``level`` is not the next one."""
        if level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
        if LEVELS.index(level) != self.depth:
            raise ValueError(f"level {level!r} cannot be filled at depth {self.depth}")
        if level == "variables":
            variables, parameters = value
            return Formulation(tuple(variables), tuple(parameters))
        kwargs: dict[str, Any] = {
            "variables": self.variables,
            "parameters": self.parameters,
            "objective": self.objective,
            "equalities": self.equalities,
            "inequalities": self.inequalities,
        }
        kwargs[level] = value
        return Formulation(**kwargs)

    def section_text(self, level: str) -> str:
        """The lines of one section (without its header)."""
        if level == "variables":
            lines = [f"{n}: {t}" for n, t in self.variables or ()]
            lines += [f"{n} = {v:g}" for n, v in self.parameters]
            return "\n".join(lines)
        if level == "objective":
            return "" if self.objective is None else f"{self.objective[0]}: {self.objective[1]}"
        rows = getattr(self, level)
        return "" if rows is None else ("\n".join(rows) if rows else "none")

    def to_text(self) -> str:
        """The filled sections with headers (the text the prompts show)."""
        return "\n".join(f"{HEADERS[lv]}\n{self.section_text(lv)}" for lv in LEVELS[: self.depth])


def _clean_lines(text: str) -> list[str]:
    lines = []
    for raw in text.replace("```", "\n").splitlines():
        line = raw.split("#", 1)[0].strip().rstrip(",;.")
        if line and line.upper() not in HEADERS.values():
            lines.append(line)
    return lines


def parse_section(level: str, text: str) -> object:
    """Parse one level's text into the component :meth:`Formulation.with_component` takes.

    Lenient: lines that do not fit the level's grammar are skipped. Raises ``ValueError`` when
    nothing usable is left (an empty or unparsable sample is dropped by the search).
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    if level == "variables":
        variables: dict[str, str] = {}
        parameters: dict[str, float] = {}
        for raw in text.replace("```", "\n").splitlines():
            if m := _VAR_LINE.match(raw):
                variables.setdefault(m.group(1), m.group(2).lower())
            elif m := _PAR_LINE.match(raw):
                parameters.setdefault(m.group(1), float(m.group(2)))
        for name in variables:
            parameters.pop(name, None)
        if not variables:
            raise ValueError("variables: no 'name: type' line found")
        return tuple(variables.items()), tuple(parameters.items())
    lines = _clean_lines(text)
    if level == "objective":
        for line in lines:
            if m := _OBJ_LINE.match(line):
                expr = m.group(2).strip()
                if expr and not any(op in expr for op in ("<", ">", "==")):
                    return m.group(1).lower(), _normalise_expr(expr)
        raise ValueError("objective: no 'max: ...' or 'min: ...' line found")
    rows = []
    for line in lines:
        if line.lower() in ("none", "{none: none}"):
            continue
        if ":" in line and not re.search(r"[<>=]", line.split(":", 1)[0]):
            line = line.split(":", 1)[1].strip()  # drop "name:" labels
        wanted = ("==",) if level == "equalities" else ("<=", ">=", "<", ">")
        if any(op in line for op in wanted) and (level == "equalities" or "==" not in line):
            rows.append(_normalise_expr(line))
    if not rows and not any(line.lower().startswith("none") for line in lines):
        raise ValueError(f"{level}: no constraint line and no 'none'")
    return tuple(dict.fromkeys(rows))


def _normalise_expr(expr: str) -> str:
    expr = expr.replace("×", "*").replace("≤", "<=").replace("≥", ">=").replace("−", "-")
    expr = _IMPLICIT_MUL.sub(r"\1*\2", expr)
    return re.sub(r"\s+", " ", expr).strip()


def parse_formulation_text(text: str) -> Formulation:
    """Parse a complete formulation written with all four section headers (flat sampling)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    positions = []
    upper = text.upper()
    for level in LEVELS:
        i = upper.find(HEADERS[level])
        if i < 0:
            raise ValueError(f"section {HEADERS[level]} missing")
        positions.append((i, level))
    positions.sort()
    form = Formulation()
    chunks = {}
    for k, (i, level) in enumerate(positions):
        end = positions[k + 1][0] if k + 1 < len(positions) else len(text)
        chunks[level] = text[i + len(HEADERS[level]) : end]
    for level in LEVELS:
        form = form.with_component(level, parse_section(level, chunks[level]))
    return form


# -- expressions -> sympy -> linear rows ---------------------------------------------------------


def _to_sympy(node: ast.AST, names: dict[str, object]) -> object:
    import sympy

    if isinstance(node, ast.Expression):
        return _to_sympy(node.body, names)
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        if not math.isfinite(node.value):
            raise ValueError("non-finite constant")
        return sympy.nsimplify(node.value, rational=True)
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise ValueError(f"unknown name {node.id!r}")
        return names[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _to_sympy(node.operand, names)
        return -inner if isinstance(node.op, ast.USub) else inner  # type: ignore[operator]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div):
        a, b = _to_sympy(node.left, names), _to_sympy(node.right, names)
        if isinstance(node.op, ast.Add):
            return a + b  # type: ignore[operator]
        if isinstance(node.op, ast.Sub):
            return a - b  # type: ignore[operator]
        if isinstance(node.op, ast.Mult):
            return a * b  # type: ignore[operator]
        if getattr(b, "free_symbols", set()) or b == 0:
            raise ValueError("division by a variable or by zero")
        return a / b  # type: ignore[operator]
    raise ValueError(f"unsupported syntax {type(node).__name__}")


def linear_form(
    expr: str, variables: tuple[str, ...], parameters: dict[str, float] | None = None
) -> tuple[np.ndarray, float]:
    """``expr`` as ``(coefficients over variables, constant)``; ``ValueError`` if not linear.

    The expression is parsed with :mod:`ast` and expanded with ``sympy`` (the canonical form the
    symbolic pruning compares).
    """
    import sympy

    if not isinstance(expr, str) or not expr.strip():
        raise ValueError("expr must be a non-empty string")
    symbols = {v: sympy.Symbol(v) for v in variables}
    names: dict[str, object] = {k: sympy.nsimplify(v, rational=True) for k, v in (parameters or {}).items()}
    names.update(symbols)
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as err:
        raise ValueError(f"cannot parse {expr!r}: {err.msg}") from err
    value = sympy.expand(_to_sympy(tree, names))
    coefs = np.zeros(len(variables))
    for i, v in enumerate(variables):
        d = sympy.diff(value, symbols[v])
        if d.free_symbols:
            raise ValueError(f"{expr!r} is not linear in {v}")
        coefs[i] = float(d)
    const = value.subs({s: 0 for s in symbols.values()})
    if getattr(const, "free_symbols", set()):
        raise ValueError(f"{expr!r} is not linear")
    return coefs, float(const)


@dataclass(frozen=True)
class LinearModel:
    """``sense c·x + c0`` s.t. ``A_ub x <= b_ub``, ``A_eq x == b_eq``, ``x >= 0``, integrality."""

    names: tuple[str, ...]
    types: tuple[str, ...]
    sense: str
    c: np.ndarray
    c0: float
    A_ub: np.ndarray
    b_ub: np.ndarray
    A_eq: np.ndarray
    b_eq: np.ndarray

    @property
    def upper_bounds(self) -> np.ndarray:
        return np.array([1.0 if t == "binary" else np.inf for t in self.types])


def _rows(lines: tuple[str, ...], names: tuple[str, ...], params: dict[str, float], equality: bool):
    out_a, out_b = [], []
    for line in lines:
        tree = ast.parse(line, mode="eval")  # a SyntaxError is converted by the caller
        if not isinstance(tree.body, ast.Compare) or len(tree.body.ops) != 1:
            raise ValueError(f"{line!r} must hold exactly one comparison")
        op = tree.body.ops[0]
        lhs = ast.unparse(tree.body.left)
        rhs = ast.unparse(tree.body.comparators[0])
        a, k = linear_form(f"({lhs}) - ({rhs})", names, params)
        if equality != isinstance(op, ast.Eq):
            raise ValueError(f"{line!r}: wrong comparison for this section")
        if isinstance(op, ast.GtE | ast.Gt):
            a, k = -a, -k
        elif not isinstance(op, ast.LtE | ast.Lt | ast.Eq):
            raise ValueError(f"{line!r}: unsupported comparison")
        out_a.append(a)
        out_b.append(-k)
    n = len(names)
    return np.array(out_a, dtype=float).reshape(-1, n), np.array(out_b, dtype=float)


def compile_formulation(form: Formulation) -> LinearModel:
    """Compile the filled levels of ``form`` into a :class:`LinearModel` (Sec. 3: executability).

    Unfilled constraint levels count as empty; an unfilled objective compiles to ``min 0``.
    Raises ``ValueError`` for anything that does not compile (unknown names, non-linear terms).
    """
    if not isinstance(form, Formulation):
        raise TypeError(f"form must be a Formulation, got {type(form).__name__}")
    if not form.variables:
        raise ValueError("form has no decision variables")
    names = tuple(n for n, _ in form.variables)
    types = tuple(t for _, t in form.variables)
    params = dict(form.parameters)
    if form.objective is None:
        sense, c, c0 = "min", np.zeros(len(names)), 0.0
    else:
        sense = form.objective[0]
        c, c0 = linear_form(form.objective[1], names, params)
    try:
        A_eq, b_eq = _rows(form.equalities or (), names, params, True)
        A_ub, b_ub = _rows(form.inequalities or (), names, params, False)
    except SyntaxError as err:
        raise ValueError(f"cannot parse a constraint: {err.msg}") from err
    return LinearModel(names, types, sense, c, c0, A_ub, b_ub, A_eq, b_eq)


@dataclass(frozen=True)
class SolveResult:
    """Outcome of :func:`solve`.

    ``status`` is ``"optimal"``, ``"infeasible"``, ``"unbounded"`` or ``"error"``.
    """

    status: str
    value: float | None = None
    x: np.ndarray | None = field(default=None, compare=False)

    @property
    def optimal(self) -> bool:
        return self.status == "optimal"


def solve(model: LinearModel, *, time_limit: float = 5.0) -> SolveResult:
    """Solve with HiGHS (:func:`scipy.optimize.milp`); the objective value in the model's sense."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    if not isinstance(model, LinearModel):
        raise TypeError(f"model must be a LinearModel, got {type(model).__name__}")
    sign = -1.0 if model.sense == "max" else 1.0
    constraints = []
    if len(model.b_ub):
        constraints.append(LinearConstraint(model.A_ub, -np.inf, model.b_ub))
    if len(model.b_eq):
        constraints.append(LinearConstraint(model.A_eq, model.b_eq, model.b_eq))
    integrality = np.array([0 if t == "continuous" else 1 for t in model.types])
    res = milp(
        sign * model.c,
        constraints=constraints,
        integrality=integrality,
        bounds=Bounds(np.zeros(len(model.names)), model.upper_bounds),
        options={"time_limit": time_limit, "presolve": True},
    )
    if res.status == 0 and res.x is not None:
        return SolveResult("optimal", float(model.c @ res.x + model.c0), np.asarray(res.x))
    if res.status == 2:
        return SolveResult("infeasible")
    if res.status == 3 or "unbounded" in str(res.message).lower():
        return SolveResult("unbounded")
    return SolveResult("error")
