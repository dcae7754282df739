#!/usr/bin/env bash
# Set up, lint, build the docs site, and run the test suite (claim checks at small scale are not part of it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests
.venv/bin/mypy src
# the documentation site: a docstring griffe cannot parse or a broken reference fails the build
DISABLE_MKDOCS_2_WARNING=true NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict -q -d "$(mktemp -d)"
.venv/bin/python -m pytest "$@"
