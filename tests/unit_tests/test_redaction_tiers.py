"""A pasted secret, with ``redact_secrets=True``, never reaches the store, the embedding call, the cache, the daily
log, the graph's checkpoint or the prompt of a later turn (plumbing: fake embeddings that record their inputs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_session_rag import SemanticCache, SemanticLLMCache, SessionMemoryStore, SessionVectorMemory
from langchain_session_rag.errors import InvalidArgumentError, InvalidRequestError
from langchain_session_rag.graph import create_memory_agent_graph, create_session_rag_graph
from langchain_session_rag.privacy._folding import drop_invisible
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


def test_a_session_id_or_note_key_holding_a_secret_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    memory = SessionVectorMemory.local(
        path=tmp_path / "m", user_id="alice", embeddings=DeterministicFakeEmbedding(size=16), redact_secrets=True
    )
    memory.add_messages([{"role": "user", "content": "Deploy on Friday"}], session_id="s0")
    hello = [{"role": "user", "content": "hello"}]
    disguised = "\u200b".join(AWS_KEY)  # quoting would drop the zero-width spaces: the id still holds the key
    attempts: dict[str, Callable[[], object]] = {
        "session id": lambda: memory.add_messages(hello, session_id=f"deploy-{AWS_KEY}"),
        "disguised session id": lambda: memory.add_messages(hello, session_id=f"s-{disguised}"),
        "note key": lambda: memory.add_note("Staging is eu-west-1", key=f"aws {AWS_KEY}"),
        "note session id": lambda: memory.add_note("Staging is eu-west-1", session_id=f"s-{AWS_KEY}"),
        "document session id": lambda: memory.add_documents([Document("Runbook")], session_id=f"s-{AWS_KEY}"),
        "store key": lambda: SessionMemoryStore(memory).put(("memories", "alice"), f"k-{AWS_KEY}", {"content": "x"}),
        "store namespace": lambda: SessionMemoryStore(memory).put(
            ("memories", "alice", AWS_KEY), "k", {"content": "x"}
        ),
    }
    for what, attempt in attempts.items():
        with pytest.raises(InvalidArgumentError, match=r"\[secret:aws-access-key\]") as caught:
            attempt()
        assert AWS_KEY not in str(caught.value), what
        assert "\u200b" not in str(caught.value), what
    memory.flush()
    assert scan([tmp_path / "m"], AWS_KEY) == []
    assert [d.metadata["session_id"] for d in memory.list_memories(source_type="session")] == ["s0"]
    for random_id in ("Zk39sLqP0aXv7TnR2wYb5cHdQ8", "session-123e4567-e89b-12d3-a456-426614174000"):
        memory.add_messages(hello, session_id=random_id)  # random ids are the norm: not taken for secrets
        memory.add_note("Random ids are fine", key=random_id)
    plain = SessionVectorMemory.local(
        path=tmp_path / "p", user_id="alice", embeddings=DeterministicFakeEmbedding(size=16)
    )
    plain.add_messages(hello, session_id=f"deploy-{AWS_KEY}")  # without redaction an id is anything fit
    assert plain.list_memories()[0].metadata["session_id"] == f"deploy-{AWS_KEY}"


def test_a_graph_run_whose_session_id_holds_a_secret_is_refused_before_it_starts(tmp_path: Path) -> None:
    memory = SessionVectorMemory.local(
        path=tmp_path / "m", user_id="alice", embeddings=DeterministicFakeEmbedding(size=16), redact_secrets=True
    )
    model = Prompts(responses=["Hello."], prompts=[])
    with SqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite")) as saver:
        app = create_session_rag_graph(model, memory, background_writes=False).compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "t1"}}
        with pytest.raises(InvalidRequestError, match=r"session_id .*\[secret:aws-access-key\]") as caught:
            app.invoke(
                {"messages": [("user", "Hi")]},
                config,
                context={"user_id": "alice", "session_id": "\u200b".join(AWS_KEY)},
            )
        assert AWS_KEY not in str(caught.value)
        assert app.get_state(config).values == {}
    assert model.prompts == []
    assert memory.list_memories() == []


def _agent(answer: str) -> Any:
    """An agent that calls a tool with the key, gets it back from the tool, and repeats it in its answer."""
    call = {"name": "rotate", "args": {"key": AWS_KEY}, "id": "c1", "type": "tool_call"}
    return RunnableLambda(lambda s: {"messages": [*s["messages"], AIMessage("", tool_calls=[call]),
                                                  ToolMessage(f"rotated {AWS_KEY}", tool_call_id="c1"),
                                                  AIMessage(answer)]})  # fmt: skip


@pytest.mark.parametrize("graph", ["rag", "agent"])
def test_the_models_answer_is_redacted_before_the_checkpoint(tmp_path: Path, graph: str) -> None:
    memory = SessionVectorMemory.local(
        path=tmp_path / "m", user_id="alice", embeddings=DeterministicFakeEmbedding(size=16), redact_secrets=True
    )
    answer = f"Your old key {AWS_KEY} is revoked; card {CARD} too."
    with SqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite")) as saver:
        if graph == "rag":
            builder = create_session_rag_graph(Prompts(responses=[answer], prompts=[]), memory, background_writes=False)
        else:
            builder = create_memory_agent_graph(_agent(answer), memory, background_writes=False)
        app = builder.compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "t1"}}
        out = app.invoke({"messages": [("user", "Is my old key still valid?")]}, config,
                         context={"user_id": "alice", "session_id": "s1"})  # fmt: skip
        with saver.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        history = [step.values for step in app.get_state_history(config)]
    assert out["messages"][-1].text == "Your old key [secret:aws-access-key] is revoked; card [secret:card-number] too."
    for secret in (AWS_KEY, CARD):
        assert scan([tmp_path], secret) == [], secret
        assert not any(secret in str(values) for values in history), secret


def test_a_cache_linked_to_a_redacting_memory_redacts_too(tmp_path: Path) -> None:
    embeddings = DeterministicFakeEmbedding(size=16)
    memory = SessionVectorMemory.local(path=tmp_path / "m", user_id="alice", embeddings=embeddings, redact_secrets=True)
    cache = SemanticCache.local(path=tmp_path / "c", user_id="alice", embeddings=embeddings)  # its own flag: off
    cache.link_memory(memory)  # what the graphs do with their cache=
    assert cache.update("How do I rotate a key?", f"Run rotate --key {AWS_KEY}.")
    assert cache.lookup("How do I rotate a key?") == "Run rotate --key [secret:aws-access-key]."
    assert cache.update(f"Is {AWS_KEY} still valid?", "No.") is False
    assert cache.for_user("bob").update("How do I rotate a token?", f"Use {AWS_KEY}.")
    assert scan([tmp_path / "c"], AWS_KEY) == []


@pytest.mark.parametrize("key", [AWS_KEY, "\u200b".join(AWS_KEY)], ids=["plain", "zero-width spaces"])
def test_an_llm_cache_used_in_a_redacting_graph_stores_no_secret(tmp_path: Path, key: str) -> None:
    embeddings = DeterministicFakeEmbedding(size=16)
    memory = SessionVectorMemory.local(path=tmp_path / "m", user_id="alice", embeddings=embeddings, redact_secrets=True)
    llm_cache = SemanticLLMCache(SemanticCache.local(path=tmp_path / "llm", user_id="anyone", embeddings=embeddings))
    model = Prompts(responses=[f"Use the key {key} for boto3."], prompts=[], cache=llm_cache)
    app = create_session_rag_graph(model, memory, background_writes=False).compile()
    out = app.invoke({"messages": [("user", "How do I configure boto3?")]},
                     context={"user_id": "alice", "session_id": "s1"})  # fmt: skip
    assert out["messages"][-1].text == "Use the key [secret:aws-access-key] for boto3."
    assert scan([tmp_path / "llm"], AWS_KEY) == []
    stored = llm_cache.cache._backend.get("user:alice", {})  # the entry the model call wrote
    assert len(stored) == 1
    assert "Use the key [secret:aws-access-key] for boto3." in stored[0].metadata["answer"]  # its JSON escapes no key


def test_a_disguised_key_in_a_store_value_or_nested_metadata_is_redacted(tmp_path: Path) -> None:
    memory = SessionVectorMemory.local(
        path=tmp_path / "m", user_id="alice", embeddings=DeterministicFakeEmbedding(size=16), redact_secrets=True
    )
    disguised = "\u200b".join(AWS_KEY)  # JSON writes it as A\u200bK\u200b...: the key is in the escapes
    store = SessionMemoryStore(memory)
    store.put(("memories", "alice"), "aws", {"content": f"key {disguised}", "extra": {"nested": disguised}})
    memory.add_messages([{"role": "user", "content": "Deploy"}], session_id="s1", metadata={"vault": {"k": disguised}})
    item = store.get(("memories", "alice"), "aws")
    assert item is not None
    assert item.value == {"content": "key [secret:aws-access-key]", "extra": {"nested": "[secret:aws-access-key]"}}
    stored = [d for d in memory.list_memories() if d.metadata["session_id"] == "s1"]
    assert AWS_KEY not in drop_invisible(str(stored[0].metadata))
