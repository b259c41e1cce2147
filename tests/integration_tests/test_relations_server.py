"""The relational layer on a Chroma server: processes share it, and a forget in one is seen by the others."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.agents import create_relations_tool

QUESTION = "What does the analytics service use now, and what did it use before?"
LINE = "analytics service — uses → ClickHouse [S: 2026-03-09] (before: PostgreSQL until 2026-03-09)"


def _lines_in_another_process(host: str, port: int) -> str:
    code = textwrap.dedent(f"""
        from langchain_session_rag import SessionVectorMemory
        m = SessionVectorMemory.server({host!r}, {port}, user_id="ana", collection_name="relations")
        print("|".join(m.relation_lines({QUESTION!r})))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, check=True)
    return done.stdout.strip()


def test_relations_written_by_one_process_are_read_and_forgotten_by_others(
    chroma_server: tuple[str, int], real_embeddings
) -> None:
    host, port = chroma_server
    writer = SessionVectorMemory.server(
        host, port, user_id="ana", embeddings=real_embeddings, collection_name="relations"
    )
    writer.add_messages(
        [
            {
                "role": "user",
                "content": "The analytics service stores events in PostgreSQL.",
                "timestamp": "2026-01-12T09:00:00",
            }
        ],
        session_id="kickoff",
    )
    reader = SessionVectorMemory.server(
        host, port, user_id="ana", embeddings=real_embeddings, collection_name="relations"
    )
    assert reader.relation_lines(QUESTION) == ["analytics service — uses → PostgreSQL [S: 2026-01-12]"]
    writer.add_messages(
        [{"role": "user", "content": "We moved the analytics service from Postgres to ClickHouse.",
          "timestamp": "2026-03-09T10:00:00"}],
        session_id="switch",
    )  # fmt: skip
    assert reader.relation_lines(QUESTION) == [LINE]  # the reader's graph follows another client's write
    assert _lines_in_another_process(host, port) == LINE
    assert reader.for_user("bob").relation_lines(QUESTION) == []
    reader.forget(session_id="switch")
    assert writer.relation_lines(QUESTION) == ["analytics service — uses → PostgreSQL [S: 2026-01-12]"]
    assert "ClickHouse" not in _lines_in_another_process(host, port)


def test_the_relations_tool_serves_the_runs_user(chroma_server: tuple[str, int], real_embeddings) -> None:
    host, port = chroma_server
    memory = SessionVectorMemory.server(
        host, port, user_id="default", user_from_run=True, embeddings=real_embeddings, collection_name="reltool"
    )
    memory.for_user("alice").add_note("The billing API uses Kafka. Kafka runs on Kubernetes.", timestamp="2026-04-01")
    tool = create_relations_tool(memory)
    alice = {"configurable": {"user_id": "alice"}}
    assert tool.invoke({"entity": "billing API"}, alice) == "> billing API — uses → Kafka [S: 2026-04-01]"
    linked = tool.invoke({"entity": "billing API", "other": "Kubernetes"}, alice)
    assert "Kafka — runs on → Kubernetes" in linked
    assert tool.invoke({"entity": "billing API"}, {"configurable": {"user_id": "bob"}}).startswith("Nothing about")
    assert "Invalid as_of" in tool.invoke({"entity": "billing API", "as_of": "soon"}, alice)
