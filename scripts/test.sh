#!/usr/bin/env bash
# The whole test suite: lint, types, unit and integration tests (a Chroma server is started by the tests),
# and the notebooks, executed with nbmake.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh test
.venv/bin/ruff check langchain_session_rag tests benchmarks
.venv/bin/ruff format --check langchain_session_rag tests benchmarks
.venv/bin/mypy langchain_session_rag
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$(mktemp -d)"
exec .venv/bin/python -m pytest --nbmake "$@"
