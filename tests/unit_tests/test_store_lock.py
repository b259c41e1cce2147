"""One writer process per embedded store: a second process gets a typed error that points to the server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_session_rag import SemanticCache, SessionVectorMemory
from langchain_session_rag.errors import InvalidStorePathError, StoreLockedError

pytestmark = pytest.mark.slow  # a second process on the store

OPEN_IN_CHILD = """
import sys
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.errors import StoreLockedError
try:
    memory = SessionVectorMemory.local(path=sys.argv[1], user_id="bob", embeddings=DeterministicFakeEmbedding(size=8))
    memory.add_messages([{"role": "user", "content": "child wrote this"}], session_id="c")
    print("opened", memory.count())
except StoreLockedError as exc:
    print("locked:", exc)
"""


def run_child(path: Path) -> str:
    return subprocess.run(
        [sys.executable, "-c", OPEN_IN_CHILD, str(path)], capture_output=True, text=True, check=True, timeout=120
    ).stdout


def test_a_second_process_on_the_same_embedded_path_gets_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "store"
    memory = SessionVectorMemory.local(path=path, user_id="alice", embeddings=DeterministicFakeEmbedding(size=8))
    memory.add_messages([{"role": "user", "content": "My passport number is X123."}], session_id="s")
    out = run_child(path)
    assert out.startswith("locked:"), out
    assert "SessionVectorMemory.server" in out
    # The same process opens the folder as often as it likes (memories and caches share the lock).
    again = SessionVectorMemory.local(path=path, user_id="alice", embeddings=DeterministicFakeEmbedding(size=8))
    assert again.count() == 1
    SemanticCache.local(path=path, user_id="alice", embeddings=DeterministicFakeEmbedding(size=8))


def test_the_lock_ends_with_the_process(tmp_path: Path) -> None:
    path = tmp_path / "store"
    assert run_child(path).startswith("opened 1")
    after = SessionVectorMemory.local(path=path, user_id="bob", embeddings=DeterministicFakeEmbedding(size=8))
    assert after.count() == 1, "the child's lock ended with it: this process opens the store"


def test_a_file_is_not_a_store_folder(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello", encoding="utf-8")
    with pytest.raises(InvalidStorePathError, match=r"notes\.txt"):
        SessionVectorMemory.local(path=path, user_id="alice", embeddings=DeterministicFakeEmbedding(size=8))
    assert isinstance(StoreLockedError("x"), RuntimeError)
