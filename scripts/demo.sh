#!/usr/bin/env bash
# The main job: ingest a bundled multi-session sample into an embedded store and answer recall questions.
# Offline: embedded Chroma and the bundled all-MiniLM-L6-v2 model; no Ollama, no network.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
exec .venv/bin/session-rag demo "$@"
