"""Forgetting erases (a byte scan of the store's files); store rebuilds and writes survive kill -9 at named points."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import chromadb
import pytest
from chromadb.config import Settings
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag._faults import FAULT_ENV
from langchain_session_rag.errors import EmbeddingModelMismatchError, UnsupportedOperationError
from langchain_session_rag.stores.adapter import open_chroma_client
from langchain_session_rag.stores.chroma import ChromaBackend
from langchain_session_rag.stores.migration import NEXT_SUFFIX

REPO = Path(__file__).resolve().parents[2]
SECRETS = [f"SECRET{n:04d}QZX" for n in range(40)]


def scan(folder: Path, needles: list[str]) -> dict[str, int]:
    """Occurrences of any needle in any file of the folder, case-insensitively (indexes lower-case text)."""
    found: dict[str, int] = {}
    lowered = [n.lower().encode() for n in needles]
    for file in folder.rglob("*"):
        if file.is_file():
            data = file.read_bytes().lower()
            hits = sum(data.count(n) for n in lowered)
            if hits:
                found[str(file.relative_to(folder))] = hits
    return found


def fake() -> DeterministicFakeEmbedding:
    return DeterministicFakeEmbedding(size=16)


@pytest.mark.slow  # compaction runs `chroma vacuum`
def test_forgotten_texts_are_gone_from_every_file_after_compact(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    alice = SessionVectorMemory.local(path=folder, user_id="alice", embeddings=fake())
    for n in range(0, 40, 4):
        alice.add_messages([{"role": "user", "content": f"My code is {SECRETS[n]}."},
                            {"role": "assistant", "content": f"Noted: {SECRETS[n + 1]}."}], session_id=f"s{n}")  # fmt: skip
        alice.for_user("bob").add_messages([{"role": "user", "content": f"Bob's note {SECRETS[n + 2]}."},
                                            {"role": "user", "content": f"Bob keeps {SECRETS[n + 3]}."}], session_id=f"b{n}")  # fmt: skip
    alice.add_messages([{"role": "user", "content": "Alice keeps KEEPME0001 as a note."}], session_id="keep")
    alice.flush()
    forgotten = [s for n in range(0, 40, 4) for s in SECRETS[n : n + 2]]
    assert scan(folder, forgotten), "the secrets were written"
    for n in range(0, 40, 4):
        alice.forget(session_id=f"s{n}")
    assert alice.invoke("My code is", k=20) == [] or all("SECRET" not in d.page_content for d in alice.invoke("code"))
    assert alice.compact() == 11  # Bob's ten sessions (two user turns each form one chunk) and Alice's note
    assert scan(folder, forgotten) == {}, "no byte of a forgotten text is left"
    kept = [s for n in range(0, 40, 4) for s in SECRETS[n + 2 : n + 4]]
    assert sum(scan(folder, kept).values()) > 0, "Bob's memories are still there"
    bob = alice.for_user("bob")
    assert bob.count() == 10
    assert any("KEEPME0001" in d.page_content for d in alice.invoke("Alice keeps a note", k=3))
    bob.forget_all()
    alice.forget_all()
    alice.compact()
    assert scan(folder, [*SECRETS, "KEEPME0001"]) == {}
    alice.add_messages([{"role": "user", "content": "Life goes on after compaction."}], session_id="new")
    assert alice.count() == 1


def test_compact_needs_a_chroma_store(tmp_path: Path) -> None:
    from langchain_core.vectorstores import InMemoryVectorStore

    memory = SessionVectorMemory(vectorstore=InMemoryVectorStore(fake()), user_id="alice")
    with pytest.raises(UnsupportedOperationError, match="Chroma store"):
        memory.compact()


# -- re-embedding killed with SIGKILL at a named point -------------------------------------------------------
# The child kills itself where SESSION_RAG_FAULT says (langchain_session_rag._faults), and the test reads the store
# as the kill left it, with chromadb alone, before anything repairs it: the kill provably landed mid-operation.
# Then this process opens it (the repair), resumes the re-embedding and checks the result.

USERS, CHUNKS = 10, 12
"""Ten users (ten shards) of twelve exchange chunks: every shard fits one page of the copy."""

REEMBED = """
import sys
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_session_rag import SessionVectorMemory
print("start", flush=True)
n = SessionVectorMemory.reembed(sys.argv[1], embeddings=DeterministicFakeEmbedding(size=24), embedding_model_id="fake-24")
print("done", n, flush=True)
"""


FILL = """
import sys
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_session_rag import SessionVectorMemory
memory = SessionVectorMemory.local(path=sys.argv[1], user_id="u0", embeddings=DeterministicFakeEmbedding(size=16),
                                   embedding_model_id="fake-16")
filler = " ".join(f"word{k}" for k in range(30))
for u in range(int(sys.argv[2])):
    turns = [{"role": role, "content": f"{role} {u} turn {i}: {filler}"}
             for i in range(int(sys.argv[3])) for role in ("user", "assistant")]
    memory.for_user(f"u{u}").add_messages(turns, session_id="s", chunking="exchange")
memory.flush()
"""


def _fill(folder: Path) -> None:
    """The users' chunks, written by another process (this one must not hold the store's lock)."""
    subprocess.run([sys.executable, "-c", FILL, str(folder), str(USERS), str(CHUNKS)], check=True, timeout=300)


def _raw(folder: Path) -> dict[str, Any]:
    """The store as Chroma holds it, read with chromadb alone (this package's open would repair a rebuild)."""
    client = chromadb.PersistentClient(path=str(folder), settings=Settings(anonymized_telemetry=False))
    names = sorted(c.name for c in client.list_collections())
    manifest = client.get_collection("session_memory-manifest").metadata or {}
    counts = {n: client.get_collection(n).count() for n in names if not n.endswith("-manifest")}
    return {"migration": json.loads(str(manifest.get("migration") or "null")), "counts": counts}


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """A filled store, written once, and its collections' counts; each test kills a re-embedding of its own copy."""
    folder = tmp_path_factory.mktemp("filled") / "store"
    _fill(folder)
    return folder, _copies_and_sources(_raw(folder))[1]


def _opened(folder: Path) -> tuple[str, int, int, int]:
    """Open the store with this package (which repairs it): the recorded model, the records, leftover copies, and
    how many users' shards answer a query of the recorded model's dimension (``fake-N``: N)."""
    backend = ChromaBackend(open_chroma_client(path=folder))
    names = [c.name for c in backend.client.list_collections()]
    model = str(backend.manifest.get("embedding_model"))
    vector = [1.0] * int(model.rpartition("-")[2])
    answering = sum(bool(backend.query(f"u{u}", "q", vector, 1, {})) for u in range(USERS))
    return model, backend.count(), sum(n.endswith(NEXT_SUFFIX) for n in names), answering


def _killed_at(point: str, code: str, folder: Path) -> None:
    """Run ``code`` on the store in a child that kills itself (SIGKILL) at the named point; check that it did."""
    env = {**os.environ, FAULT_ENV: point}
    child = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, env=env,
                           cwd=REPO, timeout=300, check=False)  # fmt: skip
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    assert f"[fault point: {point.partition('@')[0]}]" in child.stderr
    assert child.stdout.startswith("start"), child.stderr[-2000:]
    assert "done" not in child.stdout


def _copies_and_sources(raw: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    counts: dict[str, int] = raw["counts"]
    copies = {n[: -len(NEXT_SUFFIX)]: c for n, c in counts.items() if n.endswith(NEXT_SUFFIX)}
    return copies, {n: c for n, c in counts.items() if not n.endswith(NEXT_SUFFIX)}


@pytest.mark.slow  # subprocesses
@pytest.mark.parametrize("point", ["rebuild:copy-page@3", "rebuild:copied", "rebuild:switch", "rebuild:switched-one@2"])
def test_a_reembed_killed_at_a_named_point_resumes_and_converges(
    tmp_path: Path, filled: tuple[Path, dict[str, int]], point: str
) -> None:
    folder = tmp_path / "store"
    shutil.copytree(filled[0], folder)
    total, sources = USERS * CHUNKS, filled[1]
    assert len(sources) == USERS, "one shard per user: enough collections for a kill between two of them"
    _killed_at(point, REEMBED, folder)
    raw = _raw(folder)
    copies, now = _copies_and_sources(raw)
    assert raw["migration"] is not None, "the kill landed inside the rebuild"
    assert set(raw["migration"]["sources"]) == set(sources)
    if point.startswith(("rebuild:copy-page", "rebuild:copied")):
        assert raw["migration"]["phase"] == "copy"
        assert now == sources, "during the copy the old collections are untouched"
        expected = 3 if point == "rebuild:copy-page@3" else len(sources)
        assert len(copies) == expected, "the copies written so far exist; nothing is switched"
        assert all(copies[n] == sources[n] for n in copies), "each collection fits one page: a copy is whole"
        recovered_model = "fake-16"  # the partial copies are dropped, the old model stays
    else:
        assert raw["migration"]["phase"] == "switch"
        switched = 2 if point == "rebuild:switched-one@2" else 0
        assert len(copies) == len(sources) - switched, "the switch is under way"
        assert sum(now.values()) == total
        assert all(copies[n] == now[n] for n in copies), "the copies waiting for their switch are complete"
        recovered_model = "fake-24"  # every copy is complete: the switch is finished
    assert _opened(folder) == (recovered_model, total, 0, USERS), "opening repairs it; no chunk lost; all answer"
    assert SessionVectorMemory.reembed(str(folder), embeddings=DeterministicFakeEmbedding(size=24),
                                       embedding_model_id="fake-24") == total  # fmt: skip
    with pytest.raises(EmbeddingModelMismatchError):
        SessionVectorMemory.local(path=folder, user_id="u1", embeddings=fake(), embedding_model_id="fake-16")
    new = SessionVectorMemory.local(path=folder, user_id="u7", embeddings=DeterministicFakeEmbedding(size=24),
                                    embedding_model_id="fake-24")  # fmt: skip
    assert _opened(folder) == ("fake-24", total, 0, USERS)
    assert new.count() == CHUNKS


class Exploding(DeterministicFakeEmbedding):
    calls: int = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.calls == 3:
            msg = "model server went away"
            raise ConnectionError(msg)
        return super().embed_documents(texts)


def test_a_model_that_fails_half_way_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    memory = SessionVectorMemory.local(path=folder, user_id="u0", embeddings=fake(), embedding_model_id="fake-16")
    for u in range(40):
        memory.for_user(f"u{u}").add_messages([{"role": "user", "content": f"fact of {u}"}], session_id="s")
    memory.flush()
    with pytest.raises(ConnectionError):
        SessionVectorMemory.reembed(memory.chroma_client, embeddings=Exploding(size=24), embedding_model_id="x")
    assert {c.name for c in memory.chroma_client.list_collections() if c.name.endswith(NEXT_SUFFIX)} == set()
    again = SessionVectorMemory.local(path=folder, user_id="u5", embeddings=fake(), embedding_model_id="fake-16")
    assert [d.page_content for d in again.invoke("fact of 5", k=1)] == ["User: fact of 5"]
    assert json.loads(json.dumps(again.backend.manifest))["embedding_model"] == "fake-16"


def ingest(memory: SessionVectorMemory) -> None:
    """Twenty-four sessions of five exchanges each (the child killed mid-way and the rerun here both write them)."""
    filler = " ".join(f"word{k}" for k in range(30))
    for s in range(24):
        turns = [{"role": role, "id": f"{s}-{i}-{role}", "content": f"{role} {s} {i}: {filler}"}
                 for i in range(5) for role in ("user", "assistant")]  # fmt: skip
        memory.add_messages(turns, session_id=f"s{s}", chunking="exchange")


INGEST = """
import sys
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_session_rag import SessionVectorMemory
from tests.unit_tests.test_erasure_and_rebuilds import ingest
memory = SessionVectorMemory.local(path=sys.argv[1], user_id="alice", embeddings=DeterministicFakeEmbedding(size=16))
print("start", flush=True)
ingest(memory)
print("done", memory.count(), flush=True)
"""


@pytest.mark.slow  # subprocesses
def test_an_ingest_killed_after_a_stored_write_converges_on_rerun(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    _killed_at("write:stored@8", INGEST, folder)
    memory = SessionVectorMemory.local(path=folder, user_id="alice", embeddings=fake())
    assert memory.count() == 8 * 5, "killed mid-ingest: the first 8 sessions (5 exchanges each) are stored, no more"
    ingest(memory)
    assert memory.count() == 24 * 5  # 24 sessions x 5 exchanges, each exactly once
