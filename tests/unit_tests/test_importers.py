"""Importers, checked against fixtures and a specification written independently of them (tests/data/imports)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag._time import parse_timestamp
from langchain_session_rag.chunking.messages import normalize_messages
from langchain_session_rag.errors import FileAccessError, ImportFormatError, InvalidArgumentError
from langchain_session_rag.importers.files import read_conversations
from langchain_session_rag.importers.ingest import aimport_conversations, import_conversations

DATA = Path(__file__).parents[1] / "data" / "imports"
SPEC = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))
CONVERSATION_FILES = [f for f in SPEC["files"] if f["format"] != "markdown-notes"]
NOTE_FILES = [f for f in SPEC["files"] if f["format"] == "markdown-notes"]
FILE_ERRORS = {  # broken files: the whole file is refused, nothing stored
    "invalid/chatgpt_truncated.json": "not valid JSON",
    "invalid/openai_bad_third_line.jsonl": ":3: not valid JSON",
    "invalid/chatgpt_export_without_conversations.zip": "without conversations.json",
    "invalid/openai_latin1.jsonl": "not UTF-8",
    "invalid/empty.json": "is empty",
}
CONVERSATION_ERRORS = {  # one broken conversation among valid ones: skipped with the reason (strict: refused whole)
    "invalid/chatgpt_missing_current_node.json": "is not in the mapping",
    "invalid/chatgpt_parent_cycle.json": "cycle",
    "invalid/openai_unknown_role.jsonl": "unknown role 'narrator'",
}


def _turns(conv: Any) -> list[Any]:
    return normalize_messages(conv.messages, session_id=conv.session_id)


def _match(expected: list[dict[str, Any]], turns: list[Any]) -> list[str]:
    """Problems of ``turns`` against the expected messages, in order (a message with a ``decision`` is optional)."""
    problems, at = [], 0
    for want in expected:
        found = next(
            (i for i in range(at, len(turns)) if turns[i].role == want["role"] and want["contains"] in turns[i].text),
            None,
        )
        if found is None:
            if not want.get("decision"):
                problems.append(f"missing {want['role']}: {want['contains']!r}")
            continue
        problems += [f"unexpected {t.role}: {t.text[:60]!r}" for t in turns[at:found]]
        turn = turns[found]
        if want.get("timestamp"):  # a source time is kept to the millisecond
            assert turn.timestamp is not None, want
            if abs(turn.timestamp.timestamp() - parse_timestamp(want["timestamp"]).timestamp()) > 1e-3:
                problems.append(f"time of {want['contains']!r}: {turn.timestamp} != {want['timestamp']}")
        if want.get("id") and turn.id != want["id"]:
            problems.append(f"id of {want['contains']!r}: {turn.id} != {want['id']}")
        at = found + 1
    return problems + [f"unexpected {t.role}: {t.text[:60]!r}" for t in turns[at:]]


@pytest.mark.parametrize("spec", CONVERSATION_FILES, ids=lambda f: f["file"])
def test_each_format_gives_the_messages_a_person_saw_in_order(spec: dict[str, Any]) -> None:
    batch = read_conversations(DATA / spec["file"])
    assert batch.formats == {str(DATA / spec["file"]): spec["format"]}
    assert not batch.skipped
    assert len(batch.conversations) == len(spec["conversations"])
    for conv, want in zip(batch.conversations, spec["conversations"], strict=True):
        turns = _turns(conv)
        assert _match(want["messages"], turns) == [], want.get("title")
        stored = "\n".join(t.text for t in turns)
        for text in want.get("must_not_contain", []):  # abandoned branches, hidden context, reasoning
            assert text not in stored
        for skipped in want.get("skipped_by_decision", []):  # system prompts, browsing traffic: same policy here
            assert skipped["contains"] not in stored
        if want.get("title"):
            assert conv.title == want["title"]


def test_chatgpt_export_sessions_are_named_by_conversation_and_the_zip_reads_the_same() -> None:
    loose = read_conversations(DATA / "chatgpt" / "conversations.json").conversations
    zipped = read_conversations(DATA / "chatgpt" / "chatgpt-export.zip").conversations
    spec = next(f for f in SPEC["files"] if f["file"] == "chatgpt/conversations.json")
    assert [c.session_id for c in loose] == [f"chatgpt-{c['id']}" for c in spec["conversations"]]
    assert [(c.session_id, c.messages) for c in loose] == [(c.session_id, c.messages) for c in zipped]


@pytest.mark.parametrize("spec", NOTE_FILES, ids=lambda f: f["file"])
def test_markdown_notes_become_one_reference_document_per_file(spec: dict[str, Any]) -> None:
    batch = read_conversations(DATA / spec["file"])
    name = Path(spec["file"]).name
    ((session, docs),) = batch.documents.items()
    assert session.startswith(f"notes-{name}-")
    assert [d.metadata["name"] for d in docs] == [name]
    for want in spec["conversations"][0]["messages"]:
        assert want["contains"] in docs[0].page_content
        if want.get("timestamp"):
            assert parse_timestamp(docs[0].metadata["timestamp"]) == parse_timestamp(want["timestamp"])


@pytest.mark.parametrize(("name", "fragment"), FILE_ERRORS.items())
def test_a_broken_file_is_refused_whole_naming_the_problem(tmp_path: Path, name: str, fragment: str) -> None:
    memory = SessionVectorMemory.local(path=tmp_path, user_id="alice")
    memory.add_note("Kept: the boat is called Wavelet.")
    with pytest.raises(ImportFormatError) as info:
        import_conversations(memory, [DATA / "openai" / "chat.json", DATA / name])
    assert fragment in str(info.value)
    assert name.rsplit("/", maxsplit=1)[-1] in str(info.value)
    assert memory.count() == 1  # the valid file given with it was not imported either; the note is untouched


@pytest.mark.parametrize(("name", "fragment"), CONVERSATION_ERRORS.items())
def test_a_broken_conversation_is_skipped_with_its_reason_and_strict_refuses_all(
    tmp_path: Path, name: str, fragment: str
) -> None:
    memory = SessionVectorMemory.local(path=tmp_path, user_id="alice")
    with pytest.raises(ImportFormatError, match="nothing was imported"):
        import_conversations(memory, DATA / name, strict=True)
    assert memory.count() == 0
    report = import_conversations(memory, DATA / name)
    assert len(report.skipped) == 1
    assert fragment in report.skipped[0].reason
    assert len(report.new_sessions) == 1  # the valid conversation beside it
    assert memory.count() > 0


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[SessionVectorMemory, Any]:
    memory = SessionVectorMemory.local(path=tmp_path_factory.mktemp("imports"), user_id="alice")
    files = [DATA / f["file"] for f in SPEC["files"] if f["file"] != "chatgpt/chatgpt-export.zip"]
    seen: list[tuple[int, int, str]] = []
    report = import_conversations(memory, files, progress=lambda done, total, label: seen.append((done, total, label)))
    assert seen[-1][:2] == (len(seen), len(seen))
    return memory, report


def test_everything_imports_and_a_second_import_stores_nothing(imported: tuple[SessionVectorMemory, Any]) -> None:
    memory, report = imported
    expected_sessions = sum(len(f["conversations"]) for f in SPEC["files"] if f["file"] != "chatgpt/chatgpt-export.zip")
    # one session is in two daily log files (it crossed midnight); the two LangChain dumps hold one conversation
    assert len(report.new_sessions) == expected_sessions - 2
    assert not report.skipped
    assert report.chunks_added == memory.count()
    before = {d.id: d.page_content for d in memory.list_memories(limit=1000)}
    again = import_conversations(memory, [DATA / "chatgpt" / "chatgpt-export.zip", DATA / "openai", DATA / "markdown"])
    assert again.new_sessions == []
    assert again.updated_sessions == []
    assert again.chunks_added == 0
    assert {d.id: d.page_content for d in memory.list_memories(limit=1000)} == before


def test_facts_of_every_format_are_recalled(imported: tuple[SessionVectorMemory, Any]) -> None:
    memory, _ = imported
    required, cross_lingual = [], []
    for spec in SPEC["files"]:
        for conv in spec["conversations"] if spec["file"] != "chatgpt/chatgpt-export.zip" else []:
            facts = conv.get("facts", [])
            language = next((f["lang"] for f in facts if f.get("lang", "en") != "en"), "en")
            for fact in facts:
                (required if fact.get("lang", "en") == language else cross_lingual).append(fact)

    def found(fact: dict[str, Any]) -> bool:
        return any(fact["answer_contains"] in d.page_content for d in memory.invoke(fact["question"], k=5))

    # A question in the conversation's own language (English, German, Japanese, French, Spanish) finds its fact in
    # the top 5. An English question about a Japanese text need not: all-MiniLM-L6-v2 is an English model.
    assert [f["question"] for f in required if not found(f)] == []
    assert len(required) == 34  # the fixtures' same-language facts (a check that they were all read)
    assert sum(found(f) for f in cross_lingual) >= len(cross_lingual) - 1


def test_a_conversation_that_went_on_adds_to_its_session(tmp_path: Path) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "db", user_id="alice")
    first = [{"role": "user", "content": "My locker code is 4471."}, {"role": "assistant", "content": "Noted."}]
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"id": "gym", "messages": first}) + "\n", encoding="utf-8")
    assert import_conversations(memory, path).new_sessions == ["gym"]
    more = [*first, {"role": "user", "content": "The gym closes at 22:00 on Fridays."}]
    path.write_text(json.dumps({"id": "gym", "messages": more}) + "\n", encoding="utf-8")
    report = import_conversations(memory, path)
    assert report.updated_sessions == ["gym"]
    text = " ".join(d.page_content for d in memory.list_memories(session_id="gym"))
    assert "4471" in text
    assert "22:00" in text
    assert text.count("4471") == 1


def test_an_edited_note_replaces_its_earlier_version(tmp_path: Path) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "db", user_id="alice")
    note = tmp_path / "garden.md"
    note.write_text("# Garden\n\nThe greenhouse heater is set to 7 °C.\n", encoding="utf-8")
    import_conversations(memory, note)
    note.write_text("# Garden\n\nThe greenhouse heater is set to 9 °C now.\n", encoding="utf-8")
    report = import_conversations(memory, note)
    (session,) = report.updated_sessions
    assert report.chunks_removed == 1
    texts = [d.page_content for d in memory.list_memories(session_id=session)]
    assert len(texts) == 1
    assert "9 °C" in texts[0]


def test_two_notes_with_one_name_in_two_folders_are_two_notes(tmp_path: Path) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "db", user_id="alice")
    for folder, text in (("work", "WORKTODO finish the report."), ("home", "HOMETODO buy cat food.")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "todo.md").write_text(f"# TODO\n\n{text}\n", encoding="utf-8")
    import_conversations(memory, [tmp_path / "work", tmp_path / "home"])
    import_conversations(memory, tmp_path / "home")  # again, alone: the work note stays
    stored = " ".join(d.page_content for d in memory.list_memories(limit=100))
    assert "WORKTODO" in stored
    assert "HOMETODO" in stored


def _chatgpt(path: Path, branch: list[tuple[str, str, str]], current: str) -> None:
    """A one-conversation export: nodes (id, role, text), each the child of the one before."""
    mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    for node, role, text in branch:
        parent = "root" if node.endswith("1") and node.startswith("u") else node_parent[node]
        mapping[node] = {
            "id": node,
            "parent": parent,
            "children": [],
            "message": {"id": node, "author": {"role": role}, "create_time": 1.7e9 + len(mapping),
                        "content": {"content_type": "text", "parts": [text]}},
        }  # fmt: skip
        mapping[parent]["children"].append(node)
    path.write_text(json.dumps([{"id": "c-g", "title": "Bike", "current_node": current, "mapping": mapping}]))


node_parent = {"a1": "u1", "u2": "a1", "a2": "u2", "a2b": "u2", "u3": "a2b", "a3": "u3"}


def test_a_regenerated_answer_replaces_the_old_one_on_reimport(tmp_path: Path) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "db", user_id="alice")
    first = [("u1", "user", "I bought a new bike."), ("a1", "assistant", "Nice."),
             ("u2", "user", "And my bike lock code is 9182."), ("a2", "assistant", "OLDBRANCHANSWER noted.")]  # fmt: skip
    _chatgpt(tmp_path / "g.json", first, "a2")
    import_conversations(memory, tmp_path / "g.json")
    later = [*first, ("a2b", "assistant", "Noted: lock code 9182."),  # a2 stays in the tree, off the branch
             ("u3", "user", "It is a Gazelle."), ("a3", "assistant", "A Gazelle it is.")]  # fmt: skip
    _chatgpt(tmp_path / "g.json", later, "a3")
    report = import_conversations(memory, tmp_path / "g.json")
    assert report.updated_sessions == ["chatgpt-c-g"]
    assert report.chunks_removed >= 1
    stored = [d.page_content for d in memory.list_memories(session_id="chatgpt-c-g")]
    assert not any("OLDBRANCHANSWER" in text for text in stored)
    assert sum(text.count("lock code is 9182") for text in stored) == 1
    assert "A Gazelle it is." in " ".join(stored)


def test_an_import_never_removes_another_conversations_memories(tmp_path: Path) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "db", user_id="alice")
    greeting = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello! How can I help you today?"}]
    rex = [
        *greeting,
        {"role": "user", "content": "My dog is called Rex, a beagle."},
        {"role": "assistant", "content": "Rex!"},
    ]
    (tmp_path / "ab.jsonl").write_text(json.dumps({"messages": rex}) + "\n" + json.dumps({"messages": greeting}) + "\n")
    (tmp_path / "one.jsonl").write_text(json.dumps({"id": 1, "messages": rex}) + "\n")
    (tmp_path / "two.jsonl").write_text(json.dumps({"id": 1, "messages": [{"role": "user", "content": "Bonjour"}]}))
    for files in (["ab.jsonl"], ["ab.jsonl"], ["one.jsonl", "two.jsonl"], ["two.jsonl"]):
        import_conversations(memory, [tmp_path / f for f in files])
        assert any("Rex" in d.page_content for d in memory.invoke("what is my dog called", k=3))
    again = import_conversations(memory, tmp_path / "ab.jsonl")
    assert again.chunks_added == 0
    assert again.chunks_removed == 0
    ids = [{"mapping": {"r": {"id": "r", "message": None, "parent": None, "children": ["u"]},
                        "u": {"id": "u", "parent": "r", "children": [], "message": {
                            "id": f"u-{topic}", "author": {"role": "user"},
                            "content": {"content_type": "text", "parts": [text]}}}}, "current_node": "u"}
           for topic, text in (("a", "My sourdough starter is called Bubbles."), ("b", "Aurora trip in Tromsø."))]  # fmt: skip
    (tmp_path / "noid_a.json").write_text(json.dumps(ids[:1]))
    (tmp_path / "noid_b.json").write_text(json.dumps(ids[1:]))
    import_conversations(memory, tmp_path / "noid_a.json")
    assert import_conversations(memory, tmp_path / "noid_b.json").chunks_removed == 0
    assert any("Bubbles" in d.page_content for d in memory.invoke("sourdough starter", k=3))


def test_a_conversation_without_an_id_that_went_on_keeps_its_session(tmp_path: Path) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "db", user_id="alice")
    path = tmp_path / "chats.jsonl"
    opening = [{"role": "user", "content": "My dentist is Dr. Alvarez."}, {"role": "assistant", "content": "OK."}]
    other = [*opening, {"role": "user", "content": "OTHERCHAT: and my GP is Dr. Moss."}]
    path.write_text(json.dumps({"messages": opening}) + "\n", encoding="utf-8")
    (session,) = import_conversations(memory, path).new_sessions
    grown = [*opening, {"role": "user", "content": "The next check-up is on 3 June."}]
    path.write_text(json.dumps({"messages": grown}) + "\n" + json.dumps({"messages": other}) + "\n")
    report = import_conversations(memory, path)
    assert report.updated_sessions == [session]  # the same conversation, gone on
    (second,) = report.new_sessions  # same opening, another conversation: a session of its own
    assert second != session
    mine = " ".join(d.page_content for d in memory.list_memories(session_id=session))
    assert "3 June" in mine
    assert "OTHERCHAT" not in mine
    assert mine.count("Dr. Alvarez") == 1


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"create_time": 1700000000000}, None),  # milliseconds: read as such
        ({"create_time": 1e20}, None),  # no such time: the message keeps the one before it
        ({"current_node": None, "children": 5}, "no message with text"),
        ({"parent": {"x": 1}}, "not a node id"),
    ],
)
def test_one_odd_conversation_never_refuses_the_export(
    tmp_path: Path, change: dict[str, Any], reason: str | None
) -> None:
    good = [("u1", "user", "GOODCONV my kayak is red."), ("a1", "assistant", "Red kayak noted.")]
    _chatgpt(tmp_path / "good.json", good, "a1")
    odd = json.loads((tmp_path / "good.json").read_text())[0]
    odd["id"] = "odd"
    node = odd["mapping"]["a1"]
    if "create_time" in change:
        node["message"]["create_time"] = change["create_time"]
    if "children" in change:
        odd.pop("current_node")
        odd["mapping"]["root"]["children"] = change["children"]
    if "parent" in change:
        node["parent"] = change["parent"]
    export = [*json.loads((tmp_path / "good.json").read_text()), odd, "not a conversation"]
    (tmp_path / "export.json").write_text(json.dumps(export), encoding="utf-8")
    memory = SessionVectorMemory.local(path=tmp_path / "db", user_id="alice")
    report = import_conversations(memory, tmp_path / "export.json")
    assert "chatgpt-c-g" in report.new_sessions
    assert any("not a conversation" in s.reason for s in report.skipped)
    if reason is None:
        assert "chatgpt-odd" in report.new_sessions
    else:
        assert any(s.item.startswith("Bike (odd)") and reason in s.reason for s in report.skipped), report.skipped


def test_a_lone_surrogate_skips_its_conversation_only(tmp_path: Path) -> None:
    path = tmp_path / "chats.jsonl"
    lines = [{"id": "ok", "messages": [{"role": "user", "content": "fine"}]},
             {"id": "bad", "messages": [{"role": "user", "content": "\ud800 lone"}]}]  # fmt: skip
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    memory = SessionVectorMemory.local(path=tmp_path / "db", user_id="alice")
    report = import_conversations(memory, path)
    assert report.new_sessions == ["ok"]
    assert "not valid Unicode" in report.skipped[0].reason


def test_folders_are_read_and_bad_paths_and_formats_are_named(tmp_path: Path) -> None:
    batch = read_conversations(DATA / "markdown")
    assert sorted(set(batch.formats.values())) == ["daily-log", "markdown"]
    with pytest.raises(FileAccessError, match="No file or folder"):
        read_conversations(tmp_path / "missing.json")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileAccessError, match="holds no file to import"):
        read_conversations(tmp_path / "empty")
    with pytest.raises(InvalidArgumentError, match="Unknown import format 'csv'"):
        read_conversations(DATA / "openai" / "chat.json", file_format="csv")
    with pytest.raises(ImportFormatError, match=r"not a ChatGPT conversations\.json"):
        read_conversations(DATA / "openai" / "chat.json", file_format="chatgpt")
    odd = tmp_path / "history.txt"
    shutil.copy(DATA / "openai" / "chat.json", odd)
    with pytest.raises(ImportFormatError, match="Cannot tell the format"):
        read_conversations(odd)
    assert len(read_conversations(odd, file_format="openai-json").conversations) == 1


def test_an_unzipped_export_or_a_notes_vault_imports_as_a_folder(tmp_path: Path) -> None:
    import zipfile

    with zipfile.ZipFile(DATA / "chatgpt" / "chatgpt-export.zip") as archive:
        archive.extractall(tmp_path / "export")
    (tmp_path / "export" / ".obsidian").mkdir()
    (tmp_path / "export" / ".obsidian" / "app.json").write_text('{"theme": "dark"}')
    (tmp_path / "export" / ".trash").mkdir()
    (tmp_path / "export" / ".trash" / "old.md").write_text("DELETEDNOTE")
    batch = read_conversations(tmp_path / "export")
    assert len(batch.conversations) == 6
    assert {s.item for s in batch.skipped} >= {"user.json", "message_feedback.json"}  # reported, not refused
    assert not any(".obsidian" in s.source or ".trash" in s.source for s in batch.skipped)
    with pytest.raises(ImportFormatError, match=r"user\.json"):  # named itself, it refuses
        read_conversations(tmp_path / "export" / "user.json")


def test_a_session_rag_export_is_pointed_to_import(tmp_path: Path) -> None:
    memory = SessionVectorMemory.local(path=tmp_path / "db", user_id="alice")
    memory.add_note("The boat is called Wavelet.")
    memory.export_jsonl(tmp_path / "export.jsonl")
    with pytest.raises(ImportFormatError, match="session-rag import"):
        read_conversations(tmp_path / "export.jsonl")


def test_a_langchain_dump_is_read_as_data_never_instantiated(tmp_path: Path) -> None:
    hostile = [
        {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "HumanMessage"],
         "kwargs": {"content": "hello", "id": "h1"}},
        {"lc": 1, "type": "constructor", "id": ["os", "system"], "kwargs": {"command": f"touch {tmp_path}/pwned"}},
    ]  # fmt: skip
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(hostile), encoding="utf-8")
    with pytest.raises(ImportFormatError, match="not a LangChain message dump"):
        read_conversations(path, file_format="langchain")
    assert not (tmp_path / "pwned").exists()  # nothing was looked up or built: the file is read as data


async def test_async_import(tmp_path: Path) -> None:
    memory = SessionVectorMemory.local(path=tmp_path, user_id="alice")
    report = await aimport_conversations(memory, DATA / "openai" / "chat.json")
    assert len(report.new_sessions) == 1
    assert memory.count() > 0
