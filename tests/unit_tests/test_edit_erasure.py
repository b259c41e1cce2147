"""An edited message leaves every tier: the old text is gone from the store's files and from the daily log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.memory import read_daily_logs

OLD, NEW, KEPT = "OLDTEXTX5521", "NEWTEXTY8830", "UNTOUCHED4417"


def scan(folder: Path, needle: str) -> list[str]:
    """Every file under ``folder`` whose bytes hold ``needle`` (case-insensitively)."""
    want = needle.lower().encode()
    return [str(f) for f in folder.rglob("*") if f.is_file() and want in f.read_bytes().lower()]


@pytest.mark.parametrize("chunking", ["exchange", "topic"])
def test_an_edited_message_leaves_the_store_files_and_the_daily_log(
    tmp_path: Path, real_embeddings: Any, chunking: str
) -> None:
    store, logs = tmp_path / "store", tmp_path / "logs"
    memory = SessionVectorMemory.local(
        path=store, user_id="alice", embeddings=real_embeddings, daily_log_dir=logs, chunking=chunking
    )
    first = [
        {"role": "user", "id": "u1", "content": f"My locker code is {OLD}.", "timestamp": "2026-11-30T10:00:00"},
        {"role": "assistant", "id": "a1", "content": "Noted.", "timestamp": "2026-11-30T10:00:05"},
        {"role": "user", "id": "u2", "content": f"Also remember {KEPT}.", "timestamp": "2026-11-30T10:01:00"},
        {"role": "assistant", "id": "a2", "content": "Will do.", "timestamp": "2026-11-30T10:01:05"},
    ]
    memory.add_messages(first, session_id="s1")
    assert scan(logs, OLD)
    edited = [dict(first[0], content=f"My locker code is {NEW}."), *first[1:]]
    memory.add_messages(edited, session_id="s1")
    memory.compact()

    assert scan(store, OLD) == []
    assert scan(logs, OLD) == [], "the daily log kept the text the edit replaced"
    logged = {(m.id, m.text) for m in read_daily_logs(logs)}
    assert ("u1", f"My locker code is {NEW}.") in logged
    assert ("u2", f"Also remember {KEPT}.") in logged  # the rest of the session's log is kept
    assert sum(1 for m in read_daily_logs(logs) if m.id == "u1") == 1
