#!/usr/bin/env bash
# Run benchmarks (after the same set-up as the other commands). Results (generated, not committed): benchmarks/results/
# The LoCoMo-based parts read --data PATH, else $LOCOMO_PATH, else the small sample bundled in benchmarks/data/.
#   LOCOMO_PATH=/path/to/locomo_dev.json bash scripts/benchmark.sh run_all   # everything side by side: JSON, REPORT.md, plots (~1 h on 2 cores)
#   LOCOMO_PATH=/path/to/locomo_dev.json bash scripts/benchmark.sh locomo    # the LoCoMo sweep with its tuning split (~10 min)
#   bash scripts/benchmark.sh retrieval_scale # one part alone (also: ingest_cost, graph_overhead, cache_latency, cache_eval)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh test
if [ "$#" -eq 0 ]; then
  echo "usage: bash scripts/benchmark.sh NAME [args...]   (NAME: $(cd benchmarks && ls [a-z]*.py | grep -v -e locomo_data -e bench_embeddings | sed 's/\.py$//' | tr '\n' ' '))" >&2
  exit 2
fi
name="$1"
shift
exec .venv/bin/python "benchmarks/${name}.py" "$@"
