"""Input bounds on a real Chroma server (issue 26, finding 1): the bounded maximum is stored, the attack is refused.

On 0.6.0 one write with 5,500 metadata keys broke the server's collection for every other user of its shard, in
every client process. Here the maximum each limit allows is written and read back, the attacks are refused before
anything reaches the server, and another process then writes, reads and counts for a user of the same shard.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag._checks import MAX_SESSION_ID_CHARS
from langchain_session_rag.errors import InvalidMetadataError
from langchain_session_rag.stores import limits
from tests.unit_tests.test_input_bounds import ATTACKS, CHAT, max_metadata, neighbour_of


def test_the_maximum_is_kept_and_an_attack_leaves_the_shard_usable_on_a_server(chroma_server: tuple[str, int]) -> None:
    host, port = chroma_server
    alice = SessionVectorMemory.server(
        host, port, user_id="alice", embeddings=DeterministicFakeEmbedding(size=8), collection_name="bounds"
    )
    bob_id = neighbour_of("alice")
    alice.for_user(bob_id).add_messages([{"role": "user", "content": "bob before the attack"}], session_id="b1")

    meta = max_metadata()
    alice.add_messages(CHAT, session_id="s" * MAX_SESSION_ID_CHARS, metadata=meta)
    alice.add_note("a note at the limits", key="n" * limits.MAX_NAME_CHARS, metadata=meta)
    alice.flush()
    for attack, bad in ATTACKS.items():
        with pytest.raises(InvalidMetadataError):
            alice.add_messages(CHAT, session_id="attack", metadata=bad)
        with pytest.raises(InvalidMetadataError):
            alice.add_note("attack", key=attack, metadata=bad)
    assert alice.compact() >= 3  # the server's collections rebuild from what they hold: nothing broken in them

    code = textwrap.dedent(f"""
        import json
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_session_rag import SessionVectorMemory
        m = SessionVectorMemory.server({host!r}, {port}, user_id="alice", collection_name="bounds",
                                       embeddings=DeterministicFakeEmbedding(size=8))
        bob = m.for_user({bob_id!r})
        bob.add_messages([{{"role": "user", "content": "bob after the attack"}}], session_id="b2")
        docs = m.list_memories(limit=10)
        print(json.dumps({{
            "bob_count": bob.count(),
            "bob_found": [d.page_content for d in bob.invoke("bob after the attack", k=5)],
            "alice_count": m.count(),
            "alice_keys": [sorted(k for k in d.metadata if k[:3].isdigit()) for d in docs],
            "alice_value": [d.metadata[next(k for k in d.metadata if k.startswith("000"))] for d in docs],
        }}))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["bob_count"] == 2
    assert "User: bob after the attack" in seen["bob_found"]
    assert seen["alice_count"] == 2
    assert seen["alice_keys"] == [sorted(meta)] * 2
    assert seen["alice_value"] == [meta[next(iter(meta))]] * 2
