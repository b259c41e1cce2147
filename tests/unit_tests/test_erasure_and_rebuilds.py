"""Forgetting erases (a byte scan of the store's files), and store rebuilds survive kill -9 at any moment."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.errors import EmbeddingModelMismatchError, UnsupportedOperationError
from langchain_session_rag.stores.migration import NEXT_SUFFIX

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


# -- re-embedding killed with SIGKILL ---------------------------------------------------------------------

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
for u in range(40):
    turns = [{"role": role, "content": f"{role} {u} turn {i}: {filler}"} for i in range(30) for role in ("user", "assistant")]
    memory.for_user(f"u{u}").add_messages(turns, session_id="s", chunking="exchange")
memory.flush()
"""


def _fill(folder: Path) -> None:
    """40 users x 30 exchange chunks, written by another process (this one must not hold the store's lock)."""
    subprocess.run([sys.executable, "-c", FILL, str(folder)], check=True, timeout=300)


def _state(folder: Path) -> tuple[str, int, int]:
    code = (
        "import sys, json\n"
        "from langchain_session_rag.stores.adapter import open_chroma_client\n"
        "from langchain_session_rag.stores.chroma import ChromaBackend\n"
        "b = ChromaBackend(open_chroma_client(path=sys.argv[1]))\n"
        "names = [c.name for c in b.client.list_collections()]\n"
        "print(json.dumps([b.manifest.get('embedding_model'), b.count(), sum(n.endswith('-next') for n in names)]))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, check=True)
    model, count, leftovers = json.loads(out.stdout.strip().splitlines()[-1])
    return str(model), int(count), int(leftovers)


@pytest.mark.parametrize("trial", range(4))
def test_a_reembed_killed_at_a_random_moment_resumes_and_converges(tmp_path: Path, trial: int) -> None:
    folder = tmp_path / "store"
    _fill(folder)
    total = 40 * 30
    child = subprocess.Popen([sys.executable, "-c", REEMBED, str(folder)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "start"
    time.sleep(random.Random(trial).uniform(0.0, 2.5))  # noqa: S311 - a kill moment, not a secret
    child.send_signal(signal.SIGKILL)
    child.wait()
    model, count, _ = _state(folder)  # opening the store repairs it
    assert count == total, "no chunk is lost whatever the kill moment"
    assert model in {"fake-16", "fake-24"}
    out = subprocess.run([sys.executable, "-c", REEMBED, str(folder)], capture_output=True, text=True, check=True)
    assert "done 1200" in out.stdout
    assert _state(folder) == ("fake-24", total, 0)
    with pytest.raises(EmbeddingModelMismatchError):
        SessionVectorMemory.local(path=folder, user_id="u1", embeddings=fake(), embedding_model_id="fake-16")
    new = SessionVectorMemory.local(path=folder, user_id="u7", embeddings=DeterministicFakeEmbedding(size=24),
                                    embedding_model_id="fake-24")  # fmt: skip
    assert new.count() == 30


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


INGEST = """
import sys
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_session_rag import SessionVectorMemory
memory = SessionVectorMemory.local(path=sys.argv[1], user_id="alice", embeddings=DeterministicFakeEmbedding(size=16))
print("start", flush=True)
filler = " ".join(f"word{k}" for k in range(30))
for s in range(60):
    turns = [{"role": role, "id": f"{s}-{i}-{role}", "content": f"{role} {s} {i}: {filler}"}
             for i in range(5) for role in ("user", "assistant")]
    memory.add_messages(turns, session_id=f"s{s}", chunking="exchange")
print("done", memory.count(), flush=True)
"""


@pytest.mark.parametrize("trial", range(2))
def test_an_ingest_killed_at_a_random_moment_converges_on_rerun(tmp_path: Path, trial: int) -> None:
    folder = tmp_path / "store"
    child = subprocess.Popen([sys.executable, "-c", INGEST, str(folder)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "start"
    time.sleep(random.Random(100 + trial).uniform(0.2, 2.0))  # noqa: S311 - a kill moment, not a secret
    child.send_signal(signal.SIGKILL)
    child.wait()
    out = subprocess.run([sys.executable, "-c", INGEST, str(folder)], capture_output=True, text=True, check=True)
    assert "done 300" in out.stdout, out.stdout  # 60 sessions x 5 exchanges, each exactly once
