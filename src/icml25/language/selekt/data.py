"""A verified code-edit data pipeline in the spirit of *Robust Learning of Diverse Code Edits*
(Aggarwal et al., ICML 2025, arXiv 2503.03656), Section 2 (synthetic data generation).

The paper asks a strong LLM to (1) invent a problem and flawed "original" code from a seed snippet,
with deficiencies in chosen improvement areas ("Bug Fixes" always), (2) write improved versions,
(3) write edit instructions at several verbosity levels and (4) judge the result. Offline and at
135M parameters we keep the structure but replace the parts a small model cannot do reliably by
program transformations, and verify every sample by execution:

1. Seeds: small pure functions of the Python standard library, read with :func:`inspect.getsource`
   (a function qualifies when its source is short, it reads no module globals other than builtins
   and it takes only plain positional parameters). Docstrings are stripped and the code normalised
   with :func:`ast.unparse`.
2. Tests: for each seed a program run in :func:`icml25.llm.sandbox.run_python` calls the real
   function on random arguments from typed pools (ints, floats, strings, lists) and records the
   results; the first pool on which the function succeeds with non-constant outputs gives the tests.
3. Editing criteria (the paper's improvement areas, our executable versions): ``bug_fix`` (one
   operator, comparison, boolean or integer constant is mutated; the mutant must fail a test in the
   sandbox) and ``rename`` (maintainability: parameters and locals get meaningless names; behaviour
   is unchanged, checked in the sandbox). The *original* is the flawed code, the *edited* code is the
   normalised seed, which passes every test.
4. Instructions in three styles (``detailed``, ``concise``, ``human``; the paper's multi-turn style is
   not built). With a :class:`icml25.llm.ChatModel` the LLM writes them (the embedded SmolLM2 plays
   the paper's GPT-4o); without one, templates write them and the sample is labelled
   ``instruction_source="template"``. An LLM instruction that is empty falls back to the template
   (labelled ``"template-fallback"``).
"""

from __future__ import annotations

import ast
import builtins
import dis
import importlib
import inspect
import json
import random
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from icml25.llm.sandbox import run_python

__all__ = [
    "DEFAULT_MODULES",
    "EDIT_CATEGORIES",
    "INSTRUCTION_STYLES",
    "SeedFunction",
    "CodeEditSample",
    "find_seed_functions",
    "generate_tests",
    "run_tests",
    "mutate_bug",
    "rename_variables",
    "template_instruction",
    "llm_instruction",
    "build_edit_dataset",
    "edit_messages",
    "extract_function",
    "edit_success",
    "edit_success_many",
    "edit_target",
    "make_seed_functions",
]

DEFAULT_MODULES = (
    "colorsys",
    "calendar",
    "datetime",
    "difflib",
    "ipaddress",
    "html",
    "string",
    "email.utils",
    "textwrap",
    "statistics",
    "fractions",
    "heapq",
    "bisect",
    "base64",
    "quopri",
    "posixpath",
    "shlex",
    "_pydecimal",
)
EDIT_CATEGORIES = ("bug_fix", "rename")
INSTRUCTION_STYLES = ("detailed", "concise", "human")
Category = Literal["bug_fix", "rename"]
Style = Literal["detailed", "concise", "human"]


@dataclass(frozen=True)
class SeedFunction:
    """A standard-library function and its generated tests.

    Args:
        qualname: ``"module.function"``.
        name: the function name (the tests call it).
        source: the normalised source (docstring stripped, :func:`ast.unparse`).
        tests: ``(args_literal, expected_literal)`` pairs; ``args_literal`` is a tuple literal.
    """

    qualname: str
    name: str
    source: str
    tests: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class CodeEditSample:
    """One verified edit: apply ``instruction`` to ``original`` to get ``edited``."""

    task_id: str
    function: str
    category: str
    style: str
    instruction: str
    original: str
    edited: str
    tests: tuple[tuple[str, str], ...]
    detail: str
    instruction_source: str


def _strip_docstring(fn: ast.FunctionDef) -> None:
    body = fn.body
    first = body[0] if body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        fn.body = body[1:] or [ast.Pass()]


def _normalise(source: str) -> tuple[str, str] | None:
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        return None
    fn = tree.body[0]
    fn.decorator_list = []
    _strip_docstring(fn)
    for node in ast.walk(fn):
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
            and node is not fn
        ):
            return None
    return ast.unparse(tree), fn.name


def _only_builtin_globals(func: Any) -> bool:
    names = {
        ins.argval
        for ins in dis.get_instructions(func.__code__)
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL")
    }
    return all(isinstance(n, str) and hasattr(builtins, n) for n in names)


def find_seed_functions(
    modules: Sequence[str] = DEFAULT_MODULES, *, max_lines: int = 12, max_params: int = 3
) -> list[tuple[str, str, str]]:
    """Small pure standard-library functions as ``(qualname, name, normalised source)``, sorted.

    Args:
        modules: module names to scan (top-level functions only).
        max_lines: longest normalised source, in lines.
        max_params: most parameters (all plain positional, none with ``*``/``**``).
    """
    if isinstance(modules, str) or not modules:
        raise ValueError("modules must be a non-empty sequence of module names")
    if max_lines < 2 or max_params < 1:
        raise ValueError(f"max_lines must be >= 2 and max_params >= 1, got {max_lines}, {max_params}")
    out: dict[str, tuple[str, str, str]] = {}
    for mod_name in modules:
        if not isinstance(mod_name, str) or not mod_name:
            raise ValueError(f"modules: every entry must be a non-empty string, got {mod_name!r}")
        try:
            mod = importlib.import_module(mod_name)
        except ImportError:
            continue
        for attr, func in sorted(vars(mod).items()):
            if not inspect.isfunction(func) or func.__module__ != mod.__name__:
                continue
            if func.__code__.co_flags & (inspect.CO_GENERATOR | inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
                continue
            code = func.__code__
            if code.co_kwonlyargcount or not 1 <= code.co_argcount <= max_params or code.co_freevars:
                continue
            if not _only_builtin_globals(func):
                continue
            try:
                raw = inspect.getsource(func)
            except (OSError, TypeError):
                continue
            norm = _normalise(raw)
            if norm is None or norm[1] != attr:
                continue
            source, name = norm
            if len(source.splitlines()) > max_lines:
                continue
            out[f"{mod_name}.{name}"] = (f"{mod_name}.{name}", name, source)
    return [out[k] for k in sorted(out)]


_DRIVER = r"""
import json, random
{source}
_rng = random.Random({seed})
_words = ["", "a", "abc", "Hello World", "x y", "  pad ", "a-b_c", "Quote\"s", "1.5", "tab\tsep", "<&>"]
def _int(): return _rng.choice([0, 1, 2, 3, 5, 7, 10, 12, 100, 1900, 2000, 2023, -1, -4])
def _float(): return round(_rng.random(), 3)
def _str(): return _rng.choice(_words)
def _list(): return [_rng.randint(-5, 9) for _ in range(_rng.randint(0, 5))]
def _bytes(): return _rng.choice([b"", b"a", b"0F", b"=3D", b"ab c"])
_ok = None
for _pool in (_int, _float, _str, _list, _bytes):
    _cases = []
    for _ in range({tries}):
        _args = tuple(_pool() for _ in range({n_args}))
        try:
            _res = {name}(*_args)
        except Exception:
            continue
        if isinstance(_res, float):
            _res = round(_res, 9)
        if isinstance(_res, tuple):
            _res = tuple(round(v, 9) if isinstance(v, float) else v for v in _res)
        _cases.append((repr(_args), repr(_res)))
    _cases = list(dict.fromkeys(_cases))
    if len(_cases) >= {n_cases} and len({{c[1] for c in _cases}}) >= 2:
        _ok = _cases[:{n_cases}]
        break
print(json.dumps(_ok))
"""


def _literal_ok(text: str) -> bool:
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


def generate_tests(
    source: str, name: str, *, n_cases: int = 6, seed: int = 0, timeout_s: float = 5.0
) -> tuple[tuple[str, str], ...] | None:
    """Tests for ``name`` in ``source``, by running it in the sandbox on random typed arguments.

    Returns ``(args_literal, expected_literal)`` pairs, or None when no argument pool gives
    ``n_cases`` distinct successful calls with at least two distinct results.
    """
    if not isinstance(source, str) or not source.strip():
        raise ValueError("source must be a non-empty string")
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be an identifier, got {name!r}")
    if isinstance(n_cases, bool) or not isinstance(n_cases, int) or n_cases < 1:
        raise ValueError(f"n_cases must be a positive int, got {n_cases!r}")
    tree = ast.parse(source)
    fn = tree.body[0]
    if not isinstance(fn, ast.FunctionDef):
        raise ValueError("source must define one function")
    n_args = len(fn.args.args) - len(fn.args.defaults)
    program = _DRIVER.format(
        source=source, seed=int(seed), tries=8 * n_cases, n_args=max(n_args, 1), n_cases=n_cases, name=name
    )
    result = run_python(program, timeout_s=timeout_s, memory_mb=256)
    if not result.ok:
        return None
    try:
        cases = json.loads(result.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return None
    if not cases:
        return None
    out = tuple((str(a), str(e)) for a, e in cases)
    if not all(_literal_ok(a) and _literal_ok(e) for a, e in out):
        return None
    return out


def _test_program(codes: Sequence[str], name: str, tests: Sequence[tuple[str, str]]) -> str:
    lines = ["import json", "_results = []"]
    cases = ", ".join(f"({a}, {e})" for a, e in tests)
    lines.append(f"_cases = [{cases}]")
    lines.append(
        "def _same(x, y):\n"
        "    if isinstance(x, float) or isinstance(y, float):\n"
        "        return isinstance(x, (int, float)) and isinstance(y, (int, float)) and abs(x - y) <= 1e-6\n"
        "    if isinstance(x, tuple) and isinstance(y, tuple):\n"
        "        return len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y))\n"
        "    return x == y and type(x) is type(y)"
    )
    for i, code in enumerate(codes):
        lines.append(f"_src{i} = {code!r}")
        lines.append(
            f"try:\n    _ns = {{}}\n    exec(_src{i}, _ns)\n    _f = _ns[{name!r}]\n"
            "    _ok = True\n    for _a, _e in _cases:\n        _r = _f(*_a)\n"
            "        if isinstance(_r, float): _r = round(_r, 9)\n"
            "        if isinstance(_r, tuple):\n"
            "            _r = tuple(round(v, 9) if isinstance(v, float) else v for v in _r)\n"
            "        if not _same(_r, _e):\n            _ok = False\n            break\n"
            "except BaseException:\n    _ok = False\n_results.append(_ok)"
        )
    lines.append("print(json.dumps(_results))")
    return "\n".join(lines) + "\n"


def run_tests(
    codes: Sequence[str], name: str, tests: Sequence[tuple[str, str]], *, timeout_s: float = 5.0
) -> list[bool]:
    """Whether each code string defines ``name`` passing every test; one sandbox run for all of them."""
    if isinstance(codes, str):
        raise TypeError("codes must be a sequence of code strings, not one string")
    if not tests:
        raise ValueError("tests must not be empty")
    if not codes:
        return []
    result = run_python(_test_program(codes, name, tests), timeout_s=timeout_s, memory_mb=256)
    if result.ok:
        try:
            flags = json.loads(result.stdout.strip().splitlines()[-1])
            if isinstance(flags, list) and len(flags) == len(codes):
                return [bool(f) for f in flags]
        except (json.JSONDecodeError, IndexError):
            pass
    return [False] * len(codes)


_BIN_SWAP: dict[type, type] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.FloorDiv: ast.Mod,
    ast.Mod: ast.FloorDiv,
    ast.Div: ast.Mult,
}
_CMP_SWAP: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}
_SYMBOL: dict[type, str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Div: "/",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.And: "and",
    ast.Or: "or",
}


def mutate_bug(source: str, rng: random.Random) -> tuple[str, str, str] | None:
    """Inject one bug into ``source``: ``(flawed_source, kind, description)`` or None if nothing mutates.

    The mutation replaces one arithmetic operator, comparison, boolean operator, or adds one to an
    integer constant; the description names the line and the correct token (for instructions).
    """
    tree = ast.parse(source)
    sites: list[tuple[ast.AST, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and type(node.op) in _BIN_SWAP:
            sites.append((node, "operator"))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP_SWAP:
            sites.append((node, "comparison"))
        elif isinstance(node, ast.BoolOp):
            sites.append((node, "boolean"))
        elif isinstance(node, ast.Constant) and type(node.value) is int and not isinstance(node.value, bool):
            sites.append((node, "constant"))
    if not sites:
        return None
    node, kind = sites[rng.randrange(len(sites))]
    line = getattr(node, "lineno", 1)
    if isinstance(node, ast.BinOp):
        good = type(node.op)
        node.op = _BIN_SWAP[good]()
        desc = f"line {line} uses `{_SYMBOL[type(node.op)]}` where `{_SYMBOL[good]}` is correct"
    elif isinstance(node, ast.Compare):
        good_cmp = type(node.ops[0])
        node.ops = [_CMP_SWAP[good_cmp]()]
        desc = (
            f"the comparison on line {line} uses `{_SYMBOL[type(node.ops[0])]}` instead of "
            f"`{_SYMBOL[good_cmp]}`"
        )
    elif isinstance(node, ast.BoolOp):
        good_bool = type(node.op)
        node.op = ast.Or() if good_bool is ast.And else ast.And()
        desc = f"line {line} uses `{_SYMBOL[type(node.op)]}` where `{_SYMBOL[good_bool]}` is correct"
    else:
        assert isinstance(node, ast.Constant)
        value = int(node.value)  # type: ignore[arg-type]
        desc = f"the constant on line {line} is {value + 1} but should be {value}"
        node.value = value + 1
    return ast.unparse(tree), kind, desc


def rename_variables(source: str, rng: random.Random) -> tuple[str, dict[str, str]] | None:
    """Give parameters and locals meaningless names: ``(renamed_source, {bad: good})`` or None."""
    tree = ast.parse(source)
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    names = [a.arg for a in fn.args.args]
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in names:
            names.append(node.id)
    names = [n for n in names if len(n) > 1][:3]
    if not names:
        return None
    start = rng.randrange(5)
    mapping = {good: f"v{start + i}" for i, good in enumerate(names)}
    used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | {a.arg for a in fn.args.args}
    if any(bad in used for bad in mapping.values()):
        return None
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id in mapping:
            node.id = mapping[node.id]
        elif isinstance(node, ast.arg) and node.arg in mapping:
            node.arg = mapping[node.arg]
    return ast.unparse(tree), {bad: good for good, bad in mapping.items()}


def template_instruction(category: str, style: str, name: str, detail: str) -> str:
    """A templated instruction (labelled ``template``; the paper has an LLM write these)."""
    if category not in EDIT_CATEGORIES:
        raise ValueError(f"category must be one of {EDIT_CATEGORIES}, got {category!r}")
    if style not in INSTRUCTION_STYLES:
        raise ValueError(f"style must be one of {INSTRUCTION_STYLES}, got {style!r}")
    if category == "bug_fix":
        return {
            "detailed": f"Fix the bug in `{name}`: {detail}. Change only that token and keep the rest "
            "of the function as it is, so that it returns the correct results again.",
            "concise": f"Fix the bug in `{name}` ({detail}).",
            "human": f"hey, `{name}` gives wrong answers, I think {detail}. can you fix it?",
        }[style]
    return {
        "detailed": f"Improve the readability of `{name}` by renaming its variables: {detail}. Do not "
        "change the behaviour or anything else in the function.",
        "concise": f"In `{name}`, rename {detail}.",
        "human": f"the names in `{name}` are unreadable, please rename {detail}",
    }[style]


_STYLE_HINT = {
    "detailed": "Write a detailed instruction of two or three sentences.",
    "concise": "Write one short sentence.",
    "human": "Write it the way a busy developer would type it in a chat, casually, in one line.",
}


def llm_instruction(chat: Any, category: str, style: str, name: str, original: str, detail: str) -> str:
    """Ask ``chat`` (an :class:`icml25.llm.ChatModel`) to write the edit instruction (greedy, short)."""
    if style not in _STYLE_HINT:
        raise ValueError(f"style must be one of {INSTRUCTION_STYLES}, got {style!r}")
    what = "fix a bug" if category == "bug_fix" else "rename variables"
    prompt = (
        f"Here is a Python function:\n```python\n{original}\n```\nThe needed change is to {what}: {detail}.\n"
        f"Write the instruction a user would give to ask for exactly this change. {_STYLE_HINT[style]} "
        "Reply with the instruction only."
    )
    reply = chat.chat([{"role": "user", "content": prompt}], temperature=0.0, max_tokens=48)[0]
    return " ".join(reply.strip().strip('"').split())


def _rename_detail(mapping: dict[str, str]) -> str:
    return ", ".join(f"`{bad}` to `{good}`" for bad, good in mapping.items())


def build_edit_dataset(
    seeds: Sequence[SeedFunction],
    *,
    edits_per_function: int = 2,
    styles: Sequence[str] = INSTRUCTION_STYLES,
    categories: Sequence[str] = EDIT_CATEGORIES,
    chat: Any = None,
    seed: int = 0,
) -> list[CodeEditSample]:
    """Verified edit samples for each seed function (Section 2's pipeline, executable version).

    Each sample draws a category and a style; a bug-fix mutant is kept only if it fails a test in
    the sandbox, a rename only if it still passes them all; the edited code must pass them all.
    """
    if (
        isinstance(edits_per_function, bool)
        or not isinstance(edits_per_function, int)
        or edits_per_function < 1
    ):
        raise ValueError(f"edits_per_function must be a positive int, got {edits_per_function!r}")
    if not styles or any(s not in INSTRUCTION_STYLES for s in styles):
        raise ValueError(f"styles must be a non-empty subset of {INSTRUCTION_STYLES}, got {styles!r}")
    if not categories or any(c not in EDIT_CATEGORIES for c in categories):
        raise ValueError(f"categories must be a non-empty subset of {EDIT_CATEGORIES}, got {categories!r}")
    rng = random.Random(seed)
    out: list[CodeEditSample] = []
    for sf in seeds:
        drafts: list[tuple[str, str, str]] = []  # (category, original, detail)
        seen: set[str] = set()
        for _ in range(4 * edits_per_function):
            if len(drafts) >= edits_per_function:
                break
            category = categories[rng.randrange(len(categories))]
            if category == "bug_fix":
                mutated = mutate_bug(sf.source, rng)
                if mutated is None:
                    continue
                flawed, detail = mutated[0], mutated[2]
            else:
                renamed = rename_variables(sf.source, rng)
                if renamed is None:
                    continue
                flawed, detail = renamed[0], _rename_detail(renamed[1])
            if flawed in seen or flawed == sf.source:
                continue
            seen.add(flawed)
            drafts.append((category, flawed, detail))
        if not drafts:
            continue
        verdicts = run_tests([sf.source] + [d[1] for d in drafts], sf.name, sf.tests)
        if not verdicts[0]:
            continue
        for (category, flawed, detail), passes in zip(drafts, verdicts[1:], strict=True):
            if passes != (category == "rename"):
                continue  # a bug that no test catches, or a rename that broke the function
            style = styles[rng.randrange(len(styles))]
            instruction, source = "", "template"
            if chat is not None:
                instruction = llm_instruction(chat, category, style, sf.name, flawed, detail)
                source = "llm" if instruction else "template-fallback"
            if not instruction:
                instruction = template_instruction(category, style, sf.name, detail)
            out.append(
                CodeEditSample(
                    task_id=f"{sf.qualname}/{len(out)}",
                    function=sf.name,
                    category=category,
                    style=style,
                    instruction=instruction,
                    original=flawed,
                    edited=sf.source,
                    tests=sf.tests,
                    detail=detail,
                    instruction_source=source,
                )
            )
    return out


def edit_messages(sample: CodeEditSample) -> list[dict[str, str]]:
    """The user turn of an edit request: instruction, then the code in a fenced block."""
    return [{"role": "user", "content": f"{sample.instruction}\n\n```python\n{sample.original}\n```"}]


def edit_target(sample: CodeEditSample) -> str:
    """The assistant turn the model is trained to produce: the edited code in a fenced block."""
    return f"```python\n{sample.edited}\n```"


def extract_function(reply: str) -> str:
    """The code of a reply: the first fenced block if any, else the whole reply."""
    if "```" in reply:
        part = reply.split("```", 2)[1]
        return part.removeprefix("python").lstrip("\n")
    return reply


def _names(code: str) -> set[str] | None:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)
    }


def edit_success(sample: CodeEditSample, reply: str, *, timeout_s: float = 5.0) -> bool:
    """Whether ``reply`` carries out the edit: its code passes the tests in the sandbox and, for a
    rename, uses the requested names and none of the meaningless ones."""
    return edit_success_many([sample], [reply], timeout_s=timeout_s)[0]


def edit_success_many(
    samples: Sequence[CodeEditSample], replies: Sequence[str], *, timeout_s: float = 5.0
) -> list[bool]:
    """:func:`edit_success` for many replies (one sandbox run per sample)."""
    if len(samples) != len(replies):
        raise ValueError(f"samples and replies differ in length: {len(samples)} vs {len(replies)}")
    out = []
    for sample, reply in zip(samples, replies, strict=True):
        code = extract_function(reply)
        ok = run_tests([code], sample.function, sample.tests, timeout_s=timeout_s)[0]
        if ok and sample.category == "rename":
            names = _names(code) or set()
            pairs = [p.split("` to `") for p in sample.detail.strip("`").split("`, `")]
            ok = all(good in names and bad not in names for bad, good in pairs)
        out.append(ok)
    return out


def make_seed_functions(
    modules: Sequence[str] = DEFAULT_MODULES, *, max_lines: int = 12, n_cases: int = 6, seed: int = 0
) -> list[SeedFunction]:
    """:func:`find_seed_functions` plus :func:`generate_tests`; functions without tests are dropped."""
    out = []
    for qualname, name, source in find_seed_functions(modules, max_lines=max_lines):
        tests = generate_tests(source, name, n_cases=n_cases, seed=seed)
        if tests is not None:
            out.append(SeedFunction(qualname, name, source, tests))
    return out
