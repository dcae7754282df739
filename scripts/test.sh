#!/usr/bin/env bash
# Set up, lint, and run the test suite (claim checks at small scale are not part of it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests
.venv/bin/mypy src
.venv/bin/python -m pytest "$@"
