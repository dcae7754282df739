"""Task synthesis from feature subtrees and from snippets, and sandboxed validation, after
*EpiCoder: Encompassing Diversity and Complexity in Code Generation* (Wang et al., ICML 2025,
arXiv 2501.04694), Sec. 2.3.

:func:`feature_task_prompt` is the paper's generation prompt in our words: a sampled feature subtree
with its mandatory leaves; the model picks a coherent subset, invents a concrete scenario, states a
task and writes a solution with tests (one file at function level; several files, the last a test
file, at multi-file level). :func:`snippet_task_prompt` is the snippet-seeded baseline the paper
compares against (OSS-Instruct, Wei et al. 2024: "gain inspiration from this random snippet").
Both ask for the same output format, so one parser (:func:`parse_generation`) and one sandbox
harness (:func:`test_program`, :func:`run_own_tests`) judge them alike. Generated code never runs
in-process: only in :func:`icml25.llm.sandbox.run_python`.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from icml25.llm.chat import ChatModel, Conversation, GenerationConfig
from icml25.llm.sandbox import ExecutionResult, run_python

from .extract import salvage_parse
from .tree import FeatureTree, Path, leaf_paths, validate_tree

__all__ = [
    "GeneratedTask",
    "render_tree",
    "feature_task_prompt",
    "snippet_task_prompt",
    "parse_generation",
    "has_tests",
    "test_program",
    "run_own_tests",
    "TaskSynthesizer",
    "subtree_features",
]

_OPEN = re.compile(r"^\s*```[ \t]*(?:python|py|Python|python3)?[ \t]*$")
_CLOSE = re.compile(r"^\s*```[ \t]*$")
_FILE_TAG = re.compile(r"^\s*#\s*file:\s*([A-Za-z_][A-Za-z0-9_]*\.py)\s*$")


@dataclass
class GeneratedTask:
    """One synthesized task: the model's reply split into the task text and source files.

    ``files`` maps file names to source (``solution.py`` for a single unnamed block); the test file
    of a multi-file task is the last one. ``features`` are the features the prompt was seeded with
    (sampler labels or the seed snippet's), kept for reference only.
    """

    reply: str
    task: str
    files: dict[str, str]
    features: list[str] = field(default_factory=list)

    @property
    def code(self) -> str:
        """All files joined (each behind its ``# file:`` tag when there are several)."""
        if len(self.files) == 1:
            return next(iter(self.files.values()))
        return "\n\n".join(f"# file: {name}\n{src}" for name, src in self.files.items())


def render_tree(tree: Mapping[str, object], indent: int = 0) -> str:
    """A feature tree as an indented bullet list (shorter than JSON in a prompt)."""
    lines: list[str] = []
    for key, child in tree.items():
        lines.append(f"{'  ' * indent}- {key}")
        if isinstance(child, Mapping) and child:
            lines.append(render_tree(child, indent + 1))
    return "\n".join(lines)


_FORMAT_SINGLE = (
    "Answer in this format:\n"
    "Task: <the task in two or three sentences, with concrete names and values>\n"
    "```python\n<the solution, then tests of it written as assert statements>\n```"
)
_FORMAT_MULTI = (
    "Answer in this format:\n"
    "Task: <the task in two or three sentences, with concrete names and values>\n"
    "Then the project as several ```python blocks. The first line of each block is a comment "
    "'# file: NAME.py'. The last block is '# file: test_main.py'; it imports the other files and "
    "tests them with assert statements."
)


def feature_task_prompt(
    subtree: FeatureTree,
    mandatory: Sequence[Path] = (),
    *,
    multi_file: bool = False,
    language: str = "Python",
) -> list[dict[str, str]]:
    """The feature-tree generation prompt (Sec. 2.3) for one sampled subtree."""
    validate_tree("subtree", subtree)
    must = ", ".join(" > ".join(p) for p in mandatory) or "none"
    text = (
        f"Here are programming features of {language} code, as a tree:\n{render_tree(subtree)}\n"
        f"Mandatory features: {must}.\n"
        "Choose a coherent subset of these features that includes every mandatory one, imagine a "
        "concrete real-world scenario that needs them, and write a self-contained programming task "
        f"for it, then solve it in {language}. Do not mention the feature list in the task.\n"
        + (_FORMAT_MULTI if multi_file else _FORMAT_SINGLE)
    )
    return [{"role": "user", "content": text}]


def snippet_task_prompt(
    snippet: str, *, multi_file: bool = False, max_lines: int = 40
) -> list[dict[str, str]]:
    """The snippet-seeded (OSS-Instruct-style) baseline prompt for one seed snippet."""
    if not isinstance(snippet, str) or not snippet.strip():
        raise ValueError("snippet must be a non-empty string of code")
    if not isinstance(max_lines, int) or isinstance(max_lines, bool) or max_lines < 1:
        raise ValueError(f"max_lines must be a positive integer, got {max_lines!r}")
    code = "\n".join(snippet.splitlines()[:max_lines])
    text = (
        "Gain inspiration from the following random code snippet to create a high-quality, "
        "self-contained programming task, then solve it in Python.\n"
        f"Code snippet:\n```python\n{code}\n```\n" + (_FORMAT_MULTI if multi_file else _FORMAT_SINGLE)
    )
    return [{"role": "user", "content": text}]


def _fenced_blocks(reply: str) -> list[str]:
    """Fenced code blocks, line-based: a fence line opens a block, a bare fence line closes it, a
    language-tagged fence inside a block is dropped (models often repeat the opening fence), and an
    unclosed block runs to the end of the reply."""
    blocks: list[list[str]] = []
    inside = False
    for line in reply.splitlines():
        if not inside:
            if _OPEN.match(line):
                inside = True
                blocks.append([])
        elif _CLOSE.match(line):
            inside = False
        elif not _OPEN.match(line):
            blocks[-1].append(line)
    return ["\n".join(b) for b in blocks]


def parse_generation(reply: str, *, features: Sequence[str] = ()) -> GeneratedTask:
    """Split a reply into task text (before the first code fence) and files (fenced blocks; a block
    whose first line is ``# file: NAME.py`` is that file, unnamed blocks are joined into
    ``solution.py``). A reply without fences counts as code if some prefix of it parses to a
    function or class definition."""
    if not isinstance(reply, str):
        raise TypeError(f"reply must be a string, got {type(reply).__name__}")
    blocks = _fenced_blocks(reply)
    first = reply.find("```")
    task = (reply[:first] if first >= 0 else "").strip()
    task = re.sub(r"^\s*Task:\s*", "", task)
    if not task and blocks:  # the task stated as a leading "# Task:" comment of the code
        comment = re.match(r"\s*#\s*Task:\s*(.*)", blocks[0])
        task = comment.group(1).strip() if comment else ""
    files: dict[str, str] = {}
    unnamed: list[str] = []
    for block in blocks:
        lines = block.splitlines()
        match = _FILE_TAG.match(lines[0]) if lines else None
        if match:
            files[match.group(1)] = "\n".join(lines[1:]).strip("\n") + "\n"
        elif block.strip():
            unnamed.append(block.strip("\n"))
    if unnamed:
        files = (
            {"solution.py": "\n\n".join(unnamed) + "\n", **files}
            if files
            else {"solution.py": "\n\n".join(unnamed) + "\n"}
        )
    if not blocks:
        module = salvage_parse(reply)
        if module is not None and any(
            isinstance(n, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef) for n in module.body
        ):
            files = {"solution.py": reply.strip("\n") + "\n"}
    return GeneratedTask(reply=reply, task=task, files=files, features=list(features))


def _tests_in(module: ast.Module) -> bool:
    for node in ast.walk(module):
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            return True
    return False


def _complete(src: str) -> str:
    """The longest whole-line prefix of ``src`` that parses ('' if none)."""
    module = salvage_parse(src)
    if module is None:
        return ""
    try:
        ast.parse(src)
        return src
    except (SyntaxError, ValueError):
        end = max((getattr(n, "end_lineno", 0) or 0) for n in module.body)
        return "\n".join(src.splitlines()[:end]) + "\n"


def has_tests(task: GeneratedTask) -> bool:
    """Whether the parsable part of the task's code holds an ``assert`` or a ``test*`` function."""
    for src in task.files.values():
        module = salvage_parse(src)
        if module is not None and _tests_in(module):
            return True
    return False


_RUN_TESTS = """
for _name, _obj in list(globals().items()):
    if _name.startswith("test") and callable(_obj) and getattr(_obj, "__module__", None) == __name__:
        _obj()
"""


def test_program(task: GeneratedTask) -> str:
    """One program that runs the task's own tests: each file cut to its longest parsable prefix of
    lines (a reply cut by the token budget keeps its complete statements); ``test*`` functions are
    called. Several files are written to the sandbox's work folder and the last one is run."""
    if not task.files:
        raise ValueError("task has no code files to test")
    files = {name: _complete(src) for name, src in task.files.items()}
    if len(files) == 1:
        return next(iter(files.values())) + _RUN_TESTS
    names = list(files)
    return (
        "import pathlib, runpy, sys\n"
        f"_files = {json.dumps(files)}\n"
        "for _n, _t in _files.items():\n    pathlib.Path(_n).write_text(_t)\n"
        "sys.path.insert(0, '.')\n"
        f"_g = runpy.run_path({names[-1]!r}, run_name='__main__')\n"
        "for _name, _obj in list(_g.items()):\n"
        "    if _name.startswith('test') and callable(_obj) \\\n"
        "            and getattr(_obj, '__module__', None) == '__main__':\n"
        "        _obj()\n"
    )


def run_own_tests(
    task: GeneratedTask, *, timeout_s: float = 10.0, memory_mb: int = 256
) -> ExecutionResult | None:
    """Run the task's program in the sandbox; ``None`` when it has no code or no tests (nothing to
    validate). The paper's execution filter (10 s timeout) without its LLM debugging rounds."""
    if not isinstance(timeout_s, int | float) or not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
    if not isinstance(memory_mb, int) or isinstance(memory_mb, bool) or memory_mb < 1:
        raise ValueError(f"memory_mb must be a positive integer, got {memory_mb!r}")
    if not task.files or not has_tests(task):
        return None
    return run_python(test_program(task), timeout_s=float(timeout_s), memory_mb=memory_mb)


@dataclass
class TaskSynthesizer:
    """One model call per task: task text, solution and tests in one reply (both arms alike).

    Args:
        model: any :class:`~icml25.llm.chat.ChatModel` (embedded SmolLM2, a local HF folder / GGUF
            or an OpenAI-compatible endpoint).
        max_tokens: new tokens per reply (the generation budget per task).
        temperature, top_p: sampling.
        calls: model conversations sent so far (the budget actually spent).
    """

    model: ChatModel
    max_tokens: int = 256
    temperature: float = 0.7
    top_p: float = 0.95
    calls: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.model, ChatModel):
            raise TypeError(f"model must be a ChatModel, got {type(self.model).__name__}")
        if not isinstance(self.max_tokens, int) or isinstance(self.max_tokens, bool) or self.max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer, got {self.max_tokens!r}")

    def generate(
        self, prompts: Sequence[Conversation], *, seed: int, features: Sequence[Sequence[str]] | None = None
    ) -> list[GeneratedTask]:
        if isinstance(prompts, str) or not isinstance(prompts, Sequence):
            raise TypeError("prompts must be a sequence of conversations")
        if features is not None and len(features) != len(prompts):
            raise ValueError(f"features must have one entry per prompt ({len(prompts)}), got {len(features)}")
        if not prompts:
            return []
        config = GenerationConfig(
            max_tokens=self.max_tokens, temperature=self.temperature, top_p=self.top_p, seed=int(seed)
        )
        replies = self.model.generate(list(prompts), config)
        self.calls += len(prompts)
        feats = features if features is not None else [()] * len(prompts)
        return [parse_generation(r[0], features=f) for r, f in zip(replies, feats, strict=True)]


def subtree_features(subtree: FeatureTree) -> list[str]:
    """The leaf paths of a sampled subtree as ``a > b > c`` strings (the sampler's labels)."""
    return [" > ".join(p) for p in leaf_paths(subtree)]
