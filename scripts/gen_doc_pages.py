"""Build-time pages for the documentation site (run by mkdocs-gen-files, never imported by icml25).

Writes the home page from the top-level README, one page per paper (its README, then the API of its
package from the docstrings), the verdict rules and the command line (from the parser's own help).
"""

from __future__ import annotations

import re
from pathlib import Path

import mkdocs_gen_files

from icml25.catalog import PAPERS
from icml25.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent  # scripts/ -> the repository
REPO_LINK = re.compile(r"\]\((?!https?://|#|mailto:)([^)]+)\)")


def _plain_links(text: str) -> str:
    """Links into the repository (source files, figures) become code spans: the site holds pages only."""
    return REPO_LINK.sub(lambda m: f"] (`{m.group(1)}`)", text)


def _write(path: str, text: str) -> None:
    with mkdocs_gen_files.open(path, "w") as f:
        f.write(text)


_write("index.md", _plain_links((ROOT / "README.md").read_text(encoding="utf-8")))

for paper in sorted((p for p in PAPERS if p.implemented), key=lambda p: (p.domain, p.slug)):
    readme = paper.readme_text() or f"# {paper.slug}\n"
    _write(f"papers/{paper.slug}.md", f"{_plain_links(readme)}\n\n## API\n\n::: {paper.module}\n")

parser = build_parser()
sections = ["# Command line\n", "```text", parser.format_help().rstrip(), "```\n"]
for action in parser._subparsers._group_actions:  # noqa: SLF001 - argparse keeps subparsers here only
    for name, sub in action.choices.items():
        sections += [f"## icml25 {name}\n", "```text", sub.format_help().rstrip(), "```\n"]
_write("cli.md", "\n".join(sections))
