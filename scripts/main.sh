#!/usr/bin/env bash
# The main job: set up, run every implemented paper's small-scale claim check, write the report.
# Exit code: that of `icml25 check` (0 all reproduced, 1 some not, 2 error); the report is written either way.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 2
# Two checks at a time (one torch thread each on the 2-core reference machine, as the recorded small
# runs were measured; the pool starts the longest first). ICML25_JOBS=1 runs them one by one.
jobs="${ICML25_JOBS:-$(( $(nproc) >= 2 ? 2 : 1 ))}"
status=0
.venv/bin/icml25 check --all --scale "${ICML25_SCALE:-small}" --jobs "$jobs" "$@" || status=$?
.venv/bin/icml25 report || exit 2
echo "report: $(pwd)/report/index.html and report/REPORT.md" >&2
exit "$status"
