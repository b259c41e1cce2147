"""A cache linked to a memory blocks, and deletes, answers built from memories another process forgot.

Process A (a subprocess) writes and forgets on a real Chroma server; process B (this one) holds an embedded
cache linked to its own memory object on the same server. A's ``forget`` never passes through B's in-process
links, so only the cache's source check can see it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_session_rag import SemanticCache, SessionVectorMemory

ROOT = Path(__file__).resolve().parents[2]
SECRET, ANSWER = "XLOCKER99", "XCACHEANS99"
QUESTION = "what is my locker code"
PROCESS_A = """
import sys
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_session_rag import SessionVectorMemory
host, port, op = sys.argv[1], int(sys.argv[2]), sys.argv[3]
m = SessionVectorMemory.server(host, port, user_id="dora", embeddings=DeterministicFakeEmbedding(size=16),
                               collection_name="cachexproc")
if op == "add":
    m.add_messages([{"role": "user", "content": "my locker code is XLOCKER99"},
                    {"role": "assistant", "content": "noted"}], session_id="s1")
else:
    m.forget(session_id="s1")
m.flush()
"""


def process_a(host: str, port: int, op: str) -> None:
    """Run one step of process A to completion."""
    subprocess.run(
        [sys.executable, "-c", PROCESS_A, host, str(port), op],
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "ANONYMIZED_TELEMETRY": "False"},
        timeout=300,
    )


def scan(folder: Path, needle: str) -> list[str]:
    """Every file under ``folder`` whose bytes hold ``needle``."""
    return [str(f) for f in folder.rglob("*") if f.is_file() and needle.encode() in f.read_bytes()]


def test_an_answer_from_a_memory_another_process_forgot_misses_and_is_erased(
    chroma_server: tuple[str, int], tmp_path: Path
) -> None:
    host, port = chroma_server
    fake = DeterministicFakeEmbedding(size=16)
    process_a(host, port, "add")
    memory = SessionVectorMemory.server(host, port, user_id="dora", embeddings=fake, collection_name="cachexproc")
    cache = SemanticCache.local(tmp_path / "cache", user_id="dora", embeddings=fake)
    cache.link_memory(memory)
    sources = memory.invoke("locker code")
    assert any(SECRET in d.page_content for d in sources)
    assert cache.update(QUESTION, f"It is {ANSWER}", sources=sources)
    assert cache.decide(QUESTION).hit, "served while its memory lives"

    process_a(host, port, "forget")

    decision = cache.decide(QUESTION)
    assert not decision.hit, "an answer built from a forgotten memory is served"
    assert decision.reason == "stale_version"
    cache.compact()
    assert scan(tmp_path / "cache", ANSWER) == [], "the cache's files keep the forgotten answer"
