#!/usr/bin/env bash
# Create .venv (if needed) and install icml25 with the extras named in $ICML25_EXTRAS (default: dev).
# torch is installed first from $ICML25_TORCH (default torch==2.13.0: on the reference machine a CPU
# wheel on local disk), so the package's `torch>=2.2` requirement pulls nothing more.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
EXTRAS=${ICML25_EXTRAS:-dev}
TORCH_SPEC=${ICML25_TORCH:-torch==2.13.0}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  echo "setup: installing $TORCH_SPEC" >&2
  .venv/bin/python -m pip install -q --disable-pip-version-check "$TORCH_SPEC"
fi
echo "setup: installing icml25[$EXTRAS]" >&2
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$EXTRAS]"
