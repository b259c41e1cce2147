"""A cache linked to a memory blocks, and deletes, answers built from memories another process forgot.

Process A (another process of the session: ``other_processes``) writes and forgets on a real Chroma server;
process B (this one) holds an embedded cache linked to its own memory object on the same server. A's ``forget``
never passes through B's in-process links, so only the cache's source check can see it.
"""

from __future__ import annotations

from pathlib import Path

from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_session_rag import SemanticCache, SessionVectorMemory

SECRET, ANSWER = "XLOCKER99", "XCACHEANS99"
QUESTION = "what is my locker code"
OPEN_A = """
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_session_rag import SessionVectorMemory
m = SessionVectorMemory.server(host, port, user_id="dora", embeddings=DeterministicFakeEmbedding(size=16),
                               collection_name="cachexproc")
m.add_messages([{"role": "user", "content": "my locker code is XLOCKER99"},
                {"role": "assistant", "content": "noted"}], session_id="s1")
m.flush()
"""
"""Process A's first step: its memory of dora's, and a secret in it."""


def scan(folder: Path, needle: str) -> list[str]:
    """Every file under ``folder`` whose bytes hold ``needle``."""
    return [str(f) for f in folder.rglob("*") if f.is_file() and needle.encode() in f.read_bytes()]


def test_an_answer_from_a_memory_another_process_forgot_misses_and_is_erased(
    chroma_server: tuple[str, int], tmp_path: Path, other_processes
) -> None:
    host, port = chroma_server
    fake = DeterministicFakeEmbedding(size=16)
    [process_a] = other_processes(1)
    process_a.run(OPEN_A, host=host, port=port)
    memory = SessionVectorMemory.server(host, port, user_id="dora", embeddings=fake, collection_name="cachexproc")
    cache = SemanticCache.local(tmp_path / "cache", user_id="dora", embeddings=fake)
    cache.link_memory(memory)
    sources = memory.invoke("locker code")
    assert any(SECRET in d.page_content for d in sources)
    assert cache.update(QUESTION, f"It is {ANSWER}", sources=sources)
    assert cache.decide(QUESTION).hit, "served while its memory lives"

    process_a.run('m.forget(session_id="s1")\nm.flush()')

    decision = cache.decide(QUESTION)
    assert not decision.hit, "an answer built from a forgotten memory is served"
    assert decision.reason == "stale_version"
    cache.compact()
    assert scan(tmp_path / "cache", ANSWER) == [], "the cache's files keep the forgotten answer"
