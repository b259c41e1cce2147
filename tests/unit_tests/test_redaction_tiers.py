"""A pasted secret, with ``redact_secrets=True``, never reaches the store, the embedding call, the cache, the daily
log, the graph's checkpoint or the prompt of a later turn (plumbing: fake embeddings that record their inputs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_session_rag import SemanticCache, SessionVectorMemory
from langchain_session_rag.graph import create_session_rag_graph
from tests.unit_tests.test_encryption import Recording, scan

AWS_KEY = "AKIAZ7QKXW4RTV2MNB3L"
CARD = "4111 1111 1111 1111"
PASSWORD = "Sup3rS3cretPw"  # noqa: S105 - a fake secret the test pastes


class Prompts(FakeListChatModel):
    """A fake chat model that keeps every prompt it was sent."""

    prompts: list[str] = []  # noqa: RUF012 - one instance per test

    def _call(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> str:
        self.prompts.append("\n".join(m.text for m in messages))
        return super()._call(messages, *args, **kwargs)


def test_a_pasted_key_reaches_no_tier_and_no_later_prompt(tmp_path: Path) -> None:
    embeddings = Recording(size=16, seen=[])
    memory = SessionVectorMemory.local(path=tmp_path / "m", user_id="alice", embeddings=embeddings,
                                       daily_log_dir=tmp_path / "logs", redact_secrets=True)  # fmt: skip
    cache = SemanticCache.local(path=tmp_path / "c", user_id="alice", embeddings=embeddings, redact_secrets=True)
    model = Prompts(responses=["Rotate it now.", "You use boto3.", "Noted.", "Done."], prompts=[])
    with SqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite")) as saver:
        app = create_session_rag_graph(model, memory, cache=cache, background_writes=False).compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "t1"}}
        context = {"user_id": "alice", "session_id": "s1"}
        for question in (f"Why does boto3 refuse my key {AWS_KEY}?", "Which library do I use?",
                         [{"type": "text", "text": f"Card {CARD} expires 09/29, note it."},
                          {"type": "image_url", "image_url": {"url": f"https://bob:{PASSWORD}@img.example/a.png"}},
                          {"type": "tool_result", "content": [{"type": "text", "text": f"Got {AWS_KEY}"}]}]):  # fmt: skip
            app.invoke({"messages": [HumanMessage(question)]}, config, context=context)  # a text, then content parts
        with saver.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        state = app.get_state(config).values
    memory.add_note(f"Backup key {AWS_KEY}")
    memory.flush()
    for secret in (AWS_KEY, CARD, CARD.replace(" ", ""), PASSWORD):
        assert scan([tmp_path], secret) == [], secret
        assert not any(secret in text for text in embeddings.seen), secret
        assert not any(secret in prompt for prompt in model.prompts), secret
        assert not any(secret in m.text for m in state["messages"]), secret
    assert "[secret:aws-access-key]" in state["messages"][0].text
    assert any("[secret:aws-access-key]" in d.page_content for d in memory.list_memories())
    assert cache.lookup(f"Why does boto3 refuse my key {AWS_KEY}?") is None
    assert dict(cache.stats.misses).get("secret") == 1


def test_redaction_is_off_by_default_in_the_library(tmp_path: Path) -> None:
    memory = SessionVectorMemory.local(
        path=tmp_path / "m", user_id="alice", embeddings=DeterministicFakeEmbedding(size=16)
    )
    memory.add_messages([{"role": "user", "content": f"My key is {AWS_KEY}."}], session_id="s1")
    assert AWS_KEY in memory.list_memories()[0].page_content


def test_every_write_path_redacts_core_memory_metadata_documents_and_imports(tmp_path: Path) -> None:
    embeddings = Recording(size=16, seen=[])
    plain = SessionVectorMemory.local(path=tmp_path / "p", user_id="alice", embeddings=embeddings)
    plain.add_messages([{"role": "user", "content": f"Key {AWS_KEY}"}], session_id="s0")
    plain.export_jsonl(tmp_path / "plain.jsonl")
    memory = SessionVectorMemory.local(path=tmp_path / "m", user_id="alice", embeddings=embeddings, redact_secrets=True)
    memory.core.write("memory", f"AWS key {AWS_KEY}")
    memory.core.propose("append", "memory", f"Card {CARD}")
    memory.add_messages([{"role": "user", "content": "Deploy notes"}], session_id="s1", metadata={"token": AWS_KEY})
    memory.add_note("Staging", metadata={"where": f"key {AWS_KEY}"})
    memory.add_documents([Document("Runbook", metadata={"source": f"https://bob:{PASSWORD}@intranet/runbook.md",
                                                        "headers": {"Authorization": f"token {AWS_KEY}"}})])  # fmt: skip
    assert memory.import_jsonl(tmp_path / "plain.jsonl") == 1
    memory.flush()
    for secret in (AWS_KEY, CARD, PASSWORD):
        assert scan([tmp_path / "m"], secret) == [], secret
    assert "[secret:aws-access-key]" in memory.core.read("memory")
    assert "[secret:card-number]" in memory.core.pending()[0].text
    imported = [d for d in memory.list_memories() if d.metadata["session_id"] == "s0"]
    assert imported[0].page_content == "User: Key [secret:aws-access-key]"
