"""``import langchain_session_rag`` stays light: no torch, chromadb or sentence-transformers."""

from __future__ import annotations

import subprocess
import sys


def test_import_is_lazy() -> None:
    code = (
        "import sys, time; t = time.perf_counter(); import langchain_session_rag; "
        "print(time.perf_counter() - t); "
        "print(sorted(m for m in ('torch', 'chromadb', 'sentence_transformers', 'tiktoken', 'langgraph', 'llama_cpp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    heavy = out[1]
    assert heavy == "[]", f"heavy modules imported at package import: {heavy}"
    assert float(out[0]) < 3.0
