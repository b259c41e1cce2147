"""``import langchain_session_rag`` stays light: no torch, onnxruntime, chromadb or sentence-transformers.

The import time is measured in ``benchmarks/`` (a wall-clock bound in a test fails on a loaded machine).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # a fresh interpreter (a subprocess)


def test_import_is_lazy() -> None:
    code = (
        "import sys; import langchain_session_rag; "
        "print(sorted(m for m in ('torch', 'chromadb', 'sentence_transformers', 'tiktoken', 'langgraph', 'xllamacpp', 'onnxruntime', 'tokenizers') if m in sys.modules))"
    )
    heavy = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert heavy == "[]", f"heavy modules imported at package import: {heavy}"
