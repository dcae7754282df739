"""Code tasks and the pure-algorithm helpers of DyCodeEval (no LLM).

*DyCodeEval: Dynamic Benchmarking of Reasoning Capabilities in Code Large Language Models Under Data
Contamination* (Chen et al., ICML 2025, https://arxiv.org/abs/2503.04149): the problem decomposition
of its Sec. 3 (a frozen algorithmic core, a rewritable narrative) and ``_utils.py`` of the
official repository: parameter extraction, recursive type inference from test inputs, docstring
replacement through ``ast``, tag extraction from model replies and scenario normalisation.

A :class:`CodeTask` splits a HumanEval-style prompt into the natural-language ``instruction`` and
the ``>>>`` examples (``demo_str``), which a variant keeps unchanged (only the narrative changes).
Test inputs for type inference are read, without running anything, from the literal arguments of
``entry(...)`` calls in the docstring examples and ``candidate(...)`` calls in the tests.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from icml25.data.humaneval import HumanEvalProblem

__all__ = [
    "CodeTask",
    "extract_function_params",
    "infer_detailed_types",
    "replace_docstring",
    "extract_tag",
    "normalize_scenario",
    "literal_call_inputs",
    "function_signature",
]


@dataclass(frozen=True)
class CodeTask:
    """A code-generation problem (paper: ``CodeTask``).

    Args:
        task_id: identifier; variants of one seed share ``seed_id`` and differ in ``task_id``.
        prompt: imports, helpers, signature and docstring (what the model completes).
        entry_point: the function the tests call.
        canonical_solution: the reference body appended to ``prompt``.
        test: defines ``check(candidate)``.
        instruction: the natural-language part of the docstring.
        demo_str: the ``>>>`` examples of the docstring (kept verbatim by variants).
        seed_id: the seed problem this task comes from (itself for a seed).
        scenario: the scenario a variant was written for (empty for a seed).
    """

    task_id: str
    prompt: str
    entry_point: str
    canonical_solution: str
    test: str
    instruction: str
    demo_str: str
    seed_id: str
    scenario: str = ""

    @classmethod
    def from_humaneval(cls, problem: HumanEvalProblem) -> CodeTask:
        instruction, demo = split_docstring(_docstring(problem.prompt, problem.entry_point))
        return cls(
            task_id=problem.task_id,
            prompt=problem.prompt,
            entry_point=problem.entry_point,
            canonical_solution=problem.canonical_solution,
            test=problem.test,
            instruction=instruction,
            demo_str=demo,
            seed_id=problem.task_id,
        )

    @property
    def solution(self) -> str:
        return self.prompt + self.canonical_solution

    def with_instruction(self, instruction: str, *, task_id: str, scenario: str) -> CodeTask:
        """The variant whose docstring is ``instruction`` + blank line + the original examples."""
        doc = instruction.strip() + ("\n\n" + self.demo_str if self.demo_str else "")
        doc = doc.replace("\n", "\n    ") + "\n    "  # indented like a top-level function's docstring
        prompt = replace_docstring(self.prompt, self.entry_point, doc)
        return replace(
            self, task_id=task_id, prompt=prompt, instruction=instruction.strip(), scenario=scenario
        )


def _function(tree: ast.AST, entry: str) -> ast.FunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == entry:
            return node
    raise ValueError(f"no function named {entry!r} in the source")


def _parse_prompt(source: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError:  # a prompt that ends after the docstring needs a body to parse
        return ast.parse(source + "    pass\n")


def _doc_index(fn: ast.FunctionDef) -> int | None:
    """Index of the entry function's docstring statement: the first string constant of the body,
    after any leading imports (HumanEval/115 starts its body with ``import math``, then the text)."""
    for i, stmt in enumerate(fn.body):
        if (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        ):
            return i
        if not isinstance(stmt, ast.Import | ast.ImportFrom):
            return None
    return None


def _docstring(source: str, entry: str) -> str:
    fn = _function(_parse_prompt(source), entry)
    i = _doc_index(fn)
    if i is None:
        return ""
    value = fn.body[i].value  # type: ignore[attr-defined]
    return inspect.cleandoc(value.value)


def split_docstring(doc: str) -> tuple[str, str]:
    """(instruction, demo_str): the text before the first example line, and the rest.

    An example starts at a line beginning with ``>>>`` or with ``Example``/``For example``.
    """
    lines = doc.splitlines()
    pattern = re.compile(r"^\s*(>>>|examples?\b|for example\b)", re.IGNORECASE)
    cut = next((i for i, line in enumerate(lines) if pattern.match(line)), len(lines))
    return "\n".join(lines[:cut]).strip(), "\n".join(lines[cut:]).strip()


def extract_function_params(code: str, entry: str) -> list[str]:
    """Positional parameter names of function ``entry`` in ``code``."""
    if not isinstance(code, str) or not isinstance(entry, str):
        raise TypeError(
            f"code and entry must be strings, got {type(code).__name__} and {type(entry).__name__}"
        )
    try:
        tree = _parse_prompt(code)
    except (SyntaxError, ValueError) as err:
        raise ValueError(f"code does not parse as Python: {err}") from err
    fn = _function(tree, entry)
    return [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]


def function_signature(code: str, entry: str) -> tuple[str, ...]:
    """The entry function's signature as source fragments (names, annotations, defaults, return)."""
    fn = _function(_parse_prompt(code), entry)
    parts = [ast.unparse(a) for a in (*fn.args.posonlyargs, *fn.args.args)]
    parts += [ast.unparse(d) for d in fn.args.defaults]
    parts.append(ast.unparse(fn.returns) if fn.returns is not None else "")
    return tuple(parts)


def _type_of(value: Any) -> str:
    if isinstance(value, list | set | tuple):
        kind = type(value).__name__
        inner = sorted({_type_of(v) for v in value})
        return f"{kind} of {', '.join(inner)}" if inner else kind
    if isinstance(value, dict):
        keys = sorted({_type_of(k) for k in value})
        vals = sorted({_type_of(v) for v in value.values()})
        return f"dict of {', '.join(keys)} to {', '.join(vals)}" if value else "dict"
    return type(value).__name__


def infer_detailed_types(test_inputs: Sequence[tuple[Any, ...]]) -> list[str]:
    """Recursive type strings per argument position (paper's ``infer_detailed_types``).

    Only input tuples of the most common arity are used; a position with several types gets
    ``mixed(t1, t2, ...)``.
    """
    if not test_inputs:
        return []
    arity = Counter(len(t) for t in test_inputs).most_common(1)[0][0]
    kept = [t for t in test_inputs if len(t) == arity]
    out = []
    for i in range(arity):
        types = sorted({_type_of(t[i]) for t in kept})
        out.append(types[0] if len(types) == 1 else f"mixed({', '.join(types)})")
    return out


def literal_call_inputs(task: CodeTask) -> list[tuple[Any, ...]]:
    """Argument tuples of literal ``entry(...)`` / ``candidate(...)`` calls in the docstring and tests."""
    names = {task.entry_point, "candidate"}
    sources = [task.test, "\n".join(line.strip().removeprefix(">>>") for line in task.demo_str.splitlines())]
    found: list[tuple[Any, ...]] = []
    for source in sources:
        for line in source.splitlines():
            try:
                tree = ast.parse(line.strip().removeprefix("assert "))
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
                    try:
                        found.append(tuple(ast.literal_eval(a) for a in node.args))
                    except (ValueError, SyntaxError, TypeError):
                        continue
    return found


class _DocstringReplacer(ast.NodeTransformer):
    def __init__(self, entry: str, doc: str) -> None:
        self.entry, self.doc, self.done = entry, doc, False

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:  # noqa: N802 - ast API
        if node.name == self.entry and not self.done:
            self.done = True
            new = ast.Expr(ast.Constant(self.doc))
            i = _doc_index(node)  # after leading imports, which stay (HumanEval/115)
            if i is None:
                node.body = [new, *node.body]
            else:
                node.body = [*node.body[:i], new, *node.body[i + 1 :]]
        return node


def replace_docstring(source: str, entry: str, new_doc: str) -> str:
    """``source`` with the entry function's docstring replaced by ``new_doc`` (via ``ast.unparse``).

    A prompt that ends after the docstring is returned the same way (signature + docstring, no body).
    """
    needs_body = False
    try:
        tree = ast.parse(source)
    except SyntaxError:
        tree, needs_body = ast.parse(source + "    pass\n"), True
    replacer = _DocstringReplacer(entry, new_doc)
    tree = replacer.visit(tree)
    if not replacer.done:
        raise ValueError(f"no function named {entry!r} in the source")
    text = ast.unparse(ast.fix_missing_locations(tree))
    if needs_body:
        text = text.rstrip()
        if not text.endswith("pass"):
            raise ValueError("the prompt's entry function must be the last definition")
        text = text[: -len("pass")].rstrip(" ")
    return text.rstrip("\n") + "\n"


def extract_tag(text: str, tag: str) -> list[str]:
    """All ``<tag>...</tag>`` contents (DOTALL), stripped."""
    return [m.strip() for m in re.findall(rf"<{re.escape(tag)}>(.*?)</{re.escape(tag)}>", text, re.DOTALL)]


def normalize_scenario(text: str) -> str | None:
    """A ``Domain: subtopic`` scenario with non-letters stripped from both ends, else None."""
    s = re.sub(r"^[^A-Za-z]+|[^A-Za-z]+$", "", text.strip())
    if ":" not in s:
        return None
    domain, _, topic = s.partition(":")
    domain, topic = domain.strip(), topic.strip()
    if not domain or not topic or len(domain.split()) > 4 or len(s) > 120:
        return None
    if domain.lower() in {"domain", "scenario", "subtopic", "example"}:  # the template's placeholders
        return None
    return f"{domain}: {topic}"
