"""Feature extraction from code into feature trees, after *EpiCoder: Encompassing Diversity and
Complexity in Code Generation* (Wang et al., ICML 2025, arXiv 2501.04694), Sec. 2.1.

The paper asks an LLM to describe each code snippet as a nested JSON of features over a fixed list
of categories (functionality, data processing, file operation, error handling, dependency
relations, ...). Two extractors share that output type here:

* :class:`AstFeatureExtractor` reads the structural levels straight from Python's ``ast``: which
  modules are imported, which containers, loops, exceptions, string methods, math and file calls
  the code uses. It is deterministic and needs no model, so it is also what re-extracts features
  from *generated* code when the check scores diversity (never the sampler's own labels).
* :class:`LLMFeatureExtractor` sends the paper's kind of extraction prompt to any
  :class:`~icml25.llm.chat.ChatModel` and parses the nested JSON it returns
  (:func:`tree_from_json` accepts the released format, where lists hold leaf names).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from icml25.llm.chat import ChatModel, GenerationConfig

from .tree import FeatureTree, validate_tree

__all__ = [
    "CATEGORIES",
    "AstFeatureExtractor",
    "LLMFeatureExtractor",
    "tree_from_json",
    "parse_json_block",
    "salvage_parse",
]

#: The feature categories of the paper's extraction schema (Sec. 2.1 / Appendix prompt).
CATEGORIES = (
    "workflow",
    "implementation style",
    "functionality",
    "resource usage",
    "data processing",
    "computation operation",
    "security",
    "user interaction",
    "file operation",
    "error handling",
    "logging",
    "dependency relations",
    "algorithm",
    "data structures",
    "implementation logic",
    "advanced techniques",
)

_STR_METHODS = frozenset(n for n in dir(str) if not n.startswith("_"))
_CONVERSIONS = frozenset(
    {"int", "float", "str", "bool", "list", "dict", "set", "tuple", "bytes", "frozenset"}
)
_AGGREGATES = frozenset({"sum", "min", "max", "len", "abs", "round", "divmod", "pow"})
_ALGORITHMIC = frozenset({"sorted", "reversed", "enumerate", "zip", "range", "any", "all"})
_FUNCTIONAL = frozenset({"map", "filter"})
_VALIDATION = frozenset({"isinstance", "issubclass", "hasattr", "callable"})
_MODULE_GROUPS: dict[str, tuple[str, str]] = {
    # module -> (category, subcategory) for calls "module.attr"
    "math": ("computation operation", "mathematical"),
    "cmath": ("computation operation", "mathematical"),
    "fractions": ("computation operation", "mathematical"),
    "decimal": ("computation operation", "mathematical"),
    "random": ("computation operation", "randomness"),
    "statistics": ("computation operation", "statistical"),
    "bisect": ("computation operation", "algorithmic"),
    "heapq": ("computation operation", "algorithmic"),
    "itertools": ("computation operation", "algorithmic"),
    "functools": ("implementation style", "functional"),
    "operator": ("implementation style", "functional"),
    "re": ("data processing", "string manipulation"),
    "string": ("data processing", "string manipulation"),
    "textwrap": ("data processing", "string manipulation"),
    "json": ("file operation", "serialization"),
    "csv": ("file operation", "serialization"),
    "pickle": ("file operation", "serialization"),
    "pathlib": ("file operation", "path handling"),
    "os.path": ("file operation", "path handling"),
    "shutil": ("file operation", "path handling"),
    "os": ("resource usage", "operating system"),
    "sys": ("resource usage", "interpreter"),
    "time": ("resource usage", "time"),
    "datetime": ("data processing", "date and time"),
    "collections": ("data structures", "library containers"),
    "dataclasses": ("data structures", "library containers"),
    "array": ("data structures", "library containers"),
    "enum": ("data structures", "library containers"),
    "typing": ("implementation style", "type hints"),
    "logging": ("logging", "logging calls"),
    "argparse": ("user interaction", "command line"),
    "hashlib": ("security", "cryptography"),
    "hmac": ("security", "cryptography"),
    "secrets": ("security", "cryptography"),
    "ssl": ("security", "transport"),
    "threading": ("advanced techniques", "concurrency"),
    "multiprocessing": ("advanced techniques", "concurrency"),
    "concurrent.futures": ("advanced techniques", "concurrency"),
    "asyncio": ("advanced techniques", "concurrency"),
    "subprocess": ("resource usage", "processes"),
    "socket": ("resource usage", "network"),
    "struct": ("data processing", "binary data"),
    "base64": ("data processing", "binary data"),
    "zlib": ("data processing", "binary data"),
}
_OPERATORS = {
    ast.Pow: "power",
    ast.Mod: "modulo",
    ast.FloorDiv: "floor division",
    ast.Div: "division",
    ast.Mult: "multiplication",
    ast.BitAnd: "bitwise and",
    ast.BitOr: "bitwise or",
    ast.BitXor: "bitwise xor",
    ast.LShift: "bit shift",
    ast.RShift: "bit shift",
    ast.MatMult: "matrix multiplication",
}


def salvage_parse(code: str) -> ast.Module | None:
    """``ast.parse(code)``, or of the longest prefix of whole lines that parses (generated code is
    often cut off by the token budget); ``None`` if no prefix with at least one statement parses."""
    if not isinstance(code, str):
        raise TypeError(f"code must be a string, got {type(code).__name__}")
    try:
        whole = ast.parse(code)
    except (SyntaxError, ValueError):
        pass
    else:
        return whole if whole.body else None
    lines = code.splitlines()
    for end in range(len(lines) - 1, 0, -1):
        try:
            module = ast.parse("\n".join(lines[:end]))
        except (SyntaxError, ValueError):
            continue
        return module if module.body else None
    return None


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


class _Collector(ast.NodeVisitor):
    def __init__(self) -> None:
        self.tree: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        self.aliases: dict[str, str] = {}  # local name -> dotted module (or module.attr)
        self.functions: list[str] = []

    def add(self, category: str, sub: str, item: str) -> None:
        self.tree.setdefault(category, {}).setdefault(sub, {})[item] = {}

    # imports ----------------------------------------------------------------------------------
    def _dependency(self, module: str) -> None:
        top = module.split(".")[0]
        if not top:
            return
        kind = "standard library" if top in sys.stdlib_module_names else "third party"
        self.add("dependency relations", kind, top)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._dependency(alias.name)
            if alias.asname:  # "import os.path as osp": osp -> os.path
                self.aliases[alias.asname] = alias.name
            else:  # "import os.path" binds os
                self.aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and not node.level:
            self._dependency(node.module)
            for alias in node.names:
                self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        self.generic_visit(node)

    # definitions ------------------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node.name)
        for deco in node.decorator_list:
            name = _dotted(deco.func if isinstance(deco, ast.Call) else deco)
            if name:
                self.add("implementation logic", "decorators", name.split(".")[-1])
        if any(isinstance(n, ast.Yield | ast.YieldFrom) for n in ast.walk(node)):
            self.add("implementation logic", "generators", "generator function")
        calls = {_dotted(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
        if node.name in calls or f"self.{node.name}" in calls:
            self.add("implementation logic", "recursion", "recursive call")
        if node.args.defaults or node.args.kw_defaults:
            self.add("implementation style", "interfaces", "default arguments")
        if node.args.vararg or node.args.kwarg:
            self.add("implementation style", "interfaces", "variadic arguments")
        if node.returns is not None or any(a.annotation is not None for a in node.args.args):
            self.add("implementation style", "type hints", "annotations")
        self.generic_visit(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self.add("advanced techniques", "concurrency", "async function")
        self.visit_FunctionDef(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.add("data structures", "user-defined", "class")
        methods = [n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        if methods:
            self.add("implementation style", "object-oriented", "methods")
        if node.bases:
            self.add("implementation style", "object-oriented", "inheritance")
        for deco in node.decorator_list:
            name = _dotted(deco.func if isinstance(deco, ast.Call) else deco)
            if name and name.split(".")[-1] == "dataclass":
                self.add("data structures", "user-defined", "dataclass")
        if any(m.name.startswith("__") and m.name.endswith("__") and m.name != "__init__" for m in methods):
            self.add("implementation style", "object-oriented", "special methods")
        self.generic_visit(node)

    # control flow -----------------------------------------------------------------------------
    def visit_For(self, node: ast.For) -> None:
        self.add("implementation logic", "control flow", "for loop")
        self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        self.add("implementation logic", "control flow", "while loop")
        self.generic_visit(node)

    def visit_If(self, node: ast.If) -> None:
        self.add("implementation logic", "control flow", "conditional branch")
        self.generic_visit(node)

    def visit_Break(self, node: ast.Break) -> None:
        self.add("implementation logic", "control flow", "break")

    def visit_Continue(self, node: ast.Continue) -> None:
        self.add("implementation logic", "control flow", "continue")

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        self.add("implementation logic", "context managers", "with statement")
        self.generic_visit(node)

    visit_AsyncWith = visit_With  # noqa: N815 - the ast.NodeVisitor method name

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.add("implementation style", "functional", "lambda")
        self.generic_visit(node)

    def visit_Yield(self, node: ast.Yield) -> None:
        self.add("implementation logic", "generators", "yield")
        self.generic_visit(node)

    def visit_YieldFrom(self, node: ast.YieldFrom) -> None:
        self.add("implementation logic", "generators", "yield from")
        self.generic_visit(node)

    def visit_Await(self, node: ast.Await) -> None:
        self.add("advanced techniques", "concurrency", "await")
        self.generic_visit(node)

    # errors -----------------------------------------------------------------------------------
    def visit_Try(self, node: ast.Try) -> None:
        for handler in node.handlers:
            types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            for t in types:
                name = _dotted(t) if t is not None else "bare except"
                self.add("error handling", "exception catching", (name or "expression").split(".")[-1])
        if node.finalbody:
            self.add("error handling", "cleanup", "finally")
        if node.orelse:
            self.add("error handling", "cleanup", "try else")
        self.generic_visit(node)

    visit_TryStar = visit_Try  # type: ignore[assignment]  # noqa: N815

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        name = _dotted(exc) if exc is not None else "re-raise"
        self.add("error handling", "raising", (name or "expression").split(".")[-1])
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        self.add("error handling", "assertions", "assert")
        self.generic_visit(node)

    # containers and expressions -----------------------------------------------------------------
    def visit_List(self, node: ast.List) -> None:
        self.add("data structures", "built-in containers", "list")
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        self.add("data structures", "built-in containers", "dict")
        self.generic_visit(node)

    def visit_Set(self, node: ast.Set) -> None:
        self.add("data structures", "built-in containers", "set")
        self.generic_visit(node)

    def visit_Tuple(self, node: ast.Tuple) -> None:
        if isinstance(node.ctx, ast.Load):
            self.add("data structures", "built-in containers", "tuple")
        else:
            self.add("implementation logic", "assignment", "tuple unpacking")
        self.generic_visit(node)

    def visit_ListComp(self, node: ast.ListComp) -> None:
        self.add("implementation logic", "comprehensions", "list comprehension")
        self.generic_visit(node)

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self.add("implementation logic", "comprehensions", "dict comprehension")
        self.generic_visit(node)

    def visit_SetComp(self, node: ast.SetComp) -> None:
        self.add("implementation logic", "comprehensions", "set comprehension")
        self.generic_visit(node)

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> None:
        self.add("implementation logic", "generators", "generator expression")
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self.add("data processing", "string manipulation", "f-string")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        name = _OPERATORS.get(type(node.op))
        if name:
            sub = "bitwise" if name.startswith("bit") else "mathematical"
            self.add("computation operation", sub, name)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.slice, ast.Slice):
            self.add("data processing", "transformation", "slicing")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        for op in node.ops:
            if isinstance(op, ast.In | ast.NotIn):
                self.add("data processing", "validation", "membership test")
            elif isinstance(op, ast.Is | ast.IsNot):
                self.add("data processing", "validation", "identity test")
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.add("resource usage", "state", "global variable")

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.add("implementation logic", "closures", "nonlocal")

    def visit_Call(self, node: ast.Call) -> None:
        name = _dotted(node.func)
        if name is not None:
            self._call(name, node)
        elif isinstance(node.func, ast.Attribute) and node.func.attr in _STR_METHODS:
            self.add("data processing", "string manipulation", node.func.attr)
        self.generic_visit(node)

    def _call(self, name: str, node: ast.Call) -> None:
        head, _, rest = name.partition(".")
        resolved = self.aliases.get(head, head) + (f".{rest}" if rest else "")
        if "." not in name and head not in self.aliases:  # a builtin or local function
            if head == "open":
                mode = "r"
                if len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                    mode = str(node.args[1].value)
                for kw in node.keywords:
                    if kw.arg == "mode" and isinstance(kw.value, ast.Constant):
                        mode = str(kw.value.value)
                kind = "write" if any(c in mode for c in "wax+") else "read"
                self.add("file operation", "file access", f"open for {kind}")
            elif head in {"print", "input"}:
                self.add("user interaction", "console", head)
            elif head in _CONVERSIONS:
                self.add("data processing", "transformation", f"{head} conversion")
            elif head in _AGGREGATES:
                self.add("computation operation", "statistical", head)
            elif head in _ALGORITHMIC:
                self.add("computation operation", "algorithmic", head)
            elif head in _FUNCTIONAL:
                self.add("implementation style", "functional", head)
            elif head in _VALIDATION:
                self.add("data processing", "validation", head)
            return
        module = resolved.rsplit(".", 1)[0]
        attr = resolved.rsplit(".", 1)[-1]
        for key in (module, module.split(".")[0]):
            if key in _MODULE_GROUPS:
                category, sub = _MODULE_GROUPS[key]
                self.add(category, sub, f"{key}.{attr}")
                return
        if resolved.split(".")[0] in _MODULE_GROUPS:  # "from math import sqrt" then sqrt(x)
            category, sub = _MODULE_GROUPS[resolved.split(".")[0]]
            self.add(category, sub, resolved)
            return
        if attr in _STR_METHODS and head not in self.aliases:
            self.add("data processing", "string manipulation", attr)


class AstFeatureExtractor:
    """Python source -> feature tree (category -> subcategory -> feature), from ``ast`` alone.

    Deterministic and model-free: the structural levels of the paper's extraction schema
    (dependencies, data structures, control flow, error handling, file and string operations,
    mathematics, logging, user interaction, security). Code that does not parse is cut to the
    longest parsable prefix of lines (:func:`salvage_parse`); code with no parsable prefix gives
    the empty tree.
    """

    def extract(self, code: str) -> FeatureTree:
        if not isinstance(code, str):
            raise TypeError(f"code must be a string, got {type(code).__name__}")
        module = salvage_parse(code)
        if module is None:
            return {}
        collector = _Collector()
        collector.visit(module)
        top_functions = [n for n in module.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        if top_functions:
            collector.add("implementation style", "procedural", "module-level functions")
        return {c: {s: dict(items) for s, items in subs.items()} for c, subs in collector.tree.items()}

    def extract_many(self, codes: Sequence[str]) -> list[FeatureTree]:
        if isinstance(codes, str) or not isinstance(codes, Sequence):
            raise TypeError(f"codes must be a sequence of source strings, got {type(codes).__name__}")
        return [self.extract(c) for c in codes]


def tree_from_json(obj: Any) -> FeatureTree:
    """Convert the paper's JSON feature format to a feature tree: dicts recurse, list items and
    scalar values become leaves; empty lists and empty names are dropped."""
    if isinstance(obj, Mapping):
        out: FeatureTree = {}
        for key, value in obj.items():
            name = " ".join(str(key).split())
            if not name:
                continue
            if isinstance(value, Mapping | list):
                child = tree_from_json(value)
                if child or isinstance(value, Mapping):
                    out[name] = child
            else:
                out[name] = {}
                text = " ".join(str(value).split()) if value is not None else ""
                if text and not isinstance(value, bool):
                    out[name] = {text: {}}
        return out
    if isinstance(obj, list):
        out = {}
        for item in obj:
            if isinstance(item, Mapping):
                for k, v in tree_from_json(item).items():
                    out.setdefault(k, {}).update(v)
            elif item is not None:
                name = " ".join(str(item).split())
                if name:
                    out[name] = {}
        return out
    return {}


_BLOCK = re.compile(r"<begin>(.*?)(?:<end>|\Z)", re.DOTALL)


def parse_json_block(reply: str) -> Any | None:
    """The JSON object in a model reply: between ``<begin>``/``<end>`` if present, else the text
    from the first ``{`` to the last ``}``; ``None`` when nothing parses."""
    if not isinstance(reply, str):
        raise TypeError(f"reply must be a string, got {type(reply).__name__}")
    match = _BLOCK.search(reply)
    text = match.group(1) if match else reply
    text = re.sub(r"^\s*```(?:json)?\s*|\s*```\s*$", "", text.strip())
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        return json.loads(text[start : end + 1])
    except json.JSONDecodeError:
        return None


class LLMFeatureExtractor:
    """Feature extraction by a chat model with the paper's kind of prompt (Sec. 2.1).

    The model is asked for a nested JSON of the code's features over :data:`CATEGORIES`, between
    ``<begin>`` and ``<end>``. Replies that do not parse give the empty tree (counted in
    :attr:`failures`).
    """

    def __init__(
        self, model: ChatModel, *, max_tokens: int = 512, categories: Sequence[str] = CATEGORIES
    ) -> None:
        if not isinstance(model, ChatModel):
            raise TypeError(f"model must be a ChatModel, got {type(model).__name__}")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        if isinstance(categories, str) or not categories:
            raise ValueError("categories must be a non-empty sequence of names")
        self.model = model
        self.max_tokens = max_tokens
        self.categories = tuple(categories)
        self.failures = 0

    def prompt(self, code: str) -> list[dict[str, str]]:
        cats = ", ".join(self.categories)
        text = (
            "Extract the features of the following code as a nested JSON object. Use these top-level "
            f"categories: {cats}. Go from coarse to fine: each category maps to subcategories, "
            "which map to lists of specific features. Use [] for a category the code does not touch "
            "and do not repeat a feature under two categories. Write full library names for "
            "dependencies. Put the JSON between <begin> and <end>.\n\n"
            f"```python\n{code}\n```"
        )
        return [{"role": "user", "content": text}]

    def extract_many(self, codes: Sequence[str]) -> list[FeatureTree]:
        if isinstance(codes, str) or not isinstance(codes, Sequence):
            raise TypeError(f"codes must be a sequence of source strings, got {type(codes).__name__}")
        for i, c in enumerate(codes):
            if not isinstance(c, str):
                raise TypeError(f"codes[{i}] must be a string, got {type(c).__name__}")
        if not codes:
            return []
        replies = self.model.generate(
            [self.prompt(c) for c in codes], GenerationConfig(max_tokens=self.max_tokens)
        )
        out = []
        for reply in replies:
            obj = parse_json_block(reply[0])
            tree = tree_from_json(obj) if isinstance(obj, Mapping) else {}
            if not tree:
                self.failures += 1
            out.append(validate_tree("extracted", tree, nonempty=False))
        return out

    def extract(self, code: str) -> FeatureTree:
        return self.extract_many([code])[0]
