"""A fresh process on the defaults: no torch anywhere, and ``warm_up`` loads what the first question needs.

Start-up times are measured in ``benchmarks/cold_start.py``, never asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # fresh interpreters (subprocesses)

HEAVY = ("torch", "sentence_transformers", "transformers", "onnxruntime", "tokenizers", "dateparser", "tiktoken")


def _fresh(code: str, *args: str) -> dict[str, list[str]]:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_default_path_never_imports_torch(tmp_path: Path) -> None:
    code = f"""
import json, sys
from langchain_session_rag import SessionVectorMemory
memory = SessionVectorMemory.local(path=sys.argv[1], user_id="alice")
memory.add_messages([{{"role": "user", "content": "We picked Postgres."}}, {{"role": "assistant", "content": "OK."}}],
                    session_id="s1")
found = memory.invoke("Which database did we pick?")
print(json.dumps({{"loaded": [m for m in {HEAVY!r} if m in sys.modules], "found": [d.page_content for d in found]}}))
"""
    result = _fresh(code, str(tmp_path / "store"))
    assert "torch" not in result["loaded"]
    assert "sentence_transformers" not in result["loaded"]
    assert "onnxruntime" in result["loaded"]
    assert any("Postgres" in text for text in result["found"])


def test_warm_up_loads_the_model_index_tokenizer_and_date_parser(tmp_path: Path) -> None:
    code = f"""
import json, sys
from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.models import onnx_encoder
memory = SessionVectorMemory.local(path=sys.argv[1], user_id="alice")
before = [m for m in {HEAVY!r} if m in sys.modules]
assert memory.warm_up() is memory
print(json.dumps({{"before": before, "after": [m for m in {HEAVY!r} if m in sys.modules],
                  "encoders": [str(len(onnx_encoder._ENCODERS))]}}))
"""
    result = _fresh(code, str(tmp_path / "store"))
    assert "onnxruntime" not in result["before"]
    assert {"onnxruntime", "tokenizers", "dateparser", "tiktoken"} <= set(result["after"])
    assert result["encoders"] == ["1"]
