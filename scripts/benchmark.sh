#!/usr/bin/env bash
# Run benchmarks (after the same set-up as the other commands). Results: benchmarks/results/*.json
#   bash scripts/benchmark.sh run_all         # everything side by side: JSON, REPORT.md and plots (~10 min)
#   bash scripts/benchmark.sh locomo          # the full LoCoMo sweep (about 4 minutes on 2 cores)
#   bash scripts/benchmark.sh retrieval_scale # one part alone (also: ingest_cost, graph_overhead, cache_latency, cache_eval)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
if [ "$#" -eq 0 ]; then
  echo "usage: bash scripts/benchmark.sh NAME [args...]   (NAME: $(cd benchmarks && ls [a-z]*.py | grep -v -e locomo_data -e bench_embeddings | sed 's/\.py$//' | tr '\n' ' '))" >&2
  exit 2
fi
name="$1"
shift
exec .venv/bin/python "benchmarks/${name}.py" "$@"
