"""The relational layer on a Chroma server: processes share it, and a forget in one is seen by the others."""

from __future__ import annotations

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.agents import create_relations_tool

QUESTION = "What does the analytics service use now, and what did it use before?"
LINE = "analytics service — uses → ClickHouse [S: 2026-03-09] (before: PostgreSQL until 2026-03-09)"


OPEN = """
from langchain_session_rag import SessionVectorMemory
m = SessionVectorMemory.server(host, port, user_id="ana", collection_name="relations")
"""
ASK = 'print("|".join(m.relation_lines(question)))'


def test_relations_written_by_one_process_are_read_and_forgotten_by_others(
    chroma_server: tuple[str, int], real_embeddings, other_processes
) -> None:
    host, port = chroma_server
    [other] = other_processes(1)
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
    other.run(OPEN, host=host, port=port)
    assert other.run(ASK, question=QUESTION).strip() == LINE
    assert reader.for_user("bob").relation_lines(QUESTION) == []
    reader.forget(session_id="switch")
    assert writer.relation_lines(QUESTION) == ["analytics service — uses → PostgreSQL [S: 2026-01-12]"]
    assert "ClickHouse" not in other.run(ASK, question=QUESTION)


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
