#!/usr/bin/env bash
# The whole test suite: lint, types, then the fast tier (fake embeddings, no sockets; fails fast), then the slow
# rest: the real model, a Chroma server started by the tests, subprocesses, the standard suites, the notebooks.
# Both tiers run on every core (pytest-xdist, -n auto; a module's tests stay on one worker, --dist loadscope, so a
# module's shared store and servers are set up once). Set PYTEST_WORKERS=0 to run in one process.
# (pytest's exit status 5 means that a tier had nothing to run among the tests given as arguments.)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh test
.venv/bin/ruff check langchain_session_rag tests benchmarks examples
.venv/bin/ruff format --check langchain_session_rag tests benchmarks examples
# mypy keeps its cache on the machine, outside the checkout (like the installer's): a fresh clone of a tree it
# has seen checks in seconds; a changed file is checked again (the cache compares contents, not only times).
.venv/bin/mypy --cache-dir "${XDG_CACHE_HOME:-$HOME/.cache}/langchain-session-rag/mypy" langchain_session_rag
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir "$(mktemp -d)"  # not --quiet: mkdocs 1.6 then ignores --strict
workers=(-n "${PYTEST_WORKERS:-auto}" --dist loadscope)
.venv/bin/python -m pytest -m "not slow" "${workers[@]}" --durations=15 "$@" || test $? -eq 5
.venv/bin/python -m pytest -m slow --nbmake "${workers[@]}" --durations=40 "$@" || test $? -eq 5
