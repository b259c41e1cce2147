"""Import time of ``langchain_session_rag`` in a fresh process (median of 7), and what it imports.

Run: bash scripts/benchmark.sh import_time
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

CODE = (
    "import sys, time; t = time.perf_counter(); import langchain_session_rag; "
    "print(time.perf_counter() - t); print(len(sys.modules))"
)


def main() -> None:
    runs = [subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True).stdout.split()
            for _ in range(7)]  # fmt: skip
    seconds = [float(r[0]) for r in runs]
    print(json.dumps({"import_seconds_median": round(statistics.median(seconds), 3), "max": round(max(seconds), 3),
                      "modules_loaded": int(runs[0][1])}))  # fmt: skip


if __name__ == "__main__":
    main()
