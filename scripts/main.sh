#!/usr/bin/env bash
# The main job: set up, run every implemented paper's small-scale claim check, write the report.
# Exit code: that of `icml25 check` (0 all reproduced, 1 some not, 2 error); the report is written either way.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 2
status=0
.venv/bin/icml25 check --all --scale "${ICML25_SCALE:-small}" "$@" || status=$?
.venv/bin/icml25 report || exit 2
echo "report: $(pwd)/report/index.html and report/REPORT.md" >&2
exit "$status"
