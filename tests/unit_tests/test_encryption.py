"""Encryption at rest, as attacks: byte scans of every file the package wrote, wrong keys, moved ciphertexts,
crypto-shredding of earlier copies (a backup of the store, an export) by ``forget_all``."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_session_rag import SemanticCache, SessionVectorMemory
from langchain_session_rag.cli.app import main
from langchain_session_rag.errors import EncryptionKeyError, UnsupportedOperationError
from langchain_session_rag.graph import create_session_rag_graph, encrypted_serde
from langchain_session_rag.memory import read_daily_logs
from langchain_session_rag.privacy import MASTER_KEY_ENV, Keyring, generate_master_key
from langchain_session_rag.privacy.keyring import master_key_from
from langchain_session_rag.privacy.sealing import seal, unseal
from langchain_session_rag.stores.encrypted import EncryptedBackend

MARKS = ["ZQXSECRET8841", "PLUMSESSION0042", "HELIXNOTE5521", "CORECANARY7713", "CACHEANSWER3391", "DOCNAME6603"]


def scan(folders: list[Path], needle: str) -> list[str]:
    """Every file under the folders whose bytes hold the needle (case-insensitively, also as UTF-16)."""
    wants = [needle.lower().encode(), needle.lower().encode("utf-16-le")]
    return [
        str(f)
        for folder in folders
        for f in folder.rglob("*")
        if f.is_file() and any(w in f.read_bytes().lower() for w in wants)
    ]


def memory_of(path: Path, key: Any, embeddings: Any, **kwargs: Any) -> SessionVectorMemory:
    return SessionVectorMemory.local(path=path, user_id="alice", embeddings=embeddings, encryption_key=key, **kwargs)


@pytest.fixture
def key() -> str:
    return generate_master_key()


@pytest.fixture
def stored(tmp_path: Path, key: str, fake_embeddings: DeterministicFakeEmbedding) -> SessionVectorMemory:
    """An encrypted memory in ``tmp_path / "m"`` holding one message with the first marker."""
    memory = memory_of(tmp_path / "m", key, fake_embeddings)
    memory.add_messages([{"role": "user", "content": f"The code is {MARKS[0]}."}], session_id="s1")
    memory.flush()
    return memory


# -- keys ------------------------------------------------------------------------------------------
def test_a_master_key_is_taken_in_every_documented_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = bytes(range(32))
    key_file = tmp_path / "master.key"
    key_file.write_text(base64.b64encode(raw).decode() + "\n")
    forms: list[Any] = [raw, raw.hex(), base64.urlsafe_b64encode(raw).decode(), key_file, raw.hex]
    assert all(master_key_from(form) == raw for form in forms)
    monkeypatch.setenv(MASTER_KEY_ENV, raw.hex())
    assert master_key_from(None) == raw
    monkeypatch.delenv(MASTER_KEY_ENV)
    assert master_key_from(None) is None
    for bad in ("short", b"\x00" * 31, tmp_path / "missing.key", 42):
        with pytest.raises(EncryptionKeyError):
            master_key_from(bad)


def test_a_wrong_master_key_is_refused_and_nothing_stored_changes(
    tmp_path: Path, key: str, fake_embeddings: DeterministicFakeEmbedding, stored: SessionVectorMemory
) -> None:
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with pytest.raises(EncryptionKeyError, match="another key"):
        memory_of(tmp_path / "m", generate_master_key(), fake_embeddings)
    with pytest.raises(EncryptionKeyError, match="is encrypted"):
        SessionVectorMemory.local(path=tmp_path / "m", user_id="alice", embeddings=fake_embeddings)
    with pytest.raises(EncryptionKeyError, match="does not open the keyring"):  # the keyring itself checks the key
        Keyring(tmp_path / "m.keys", master_key_from(generate_master_key()) or b"")
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before
    again = memory_of(tmp_path / "m", key, fake_embeddings)
    assert MARKS[0] in again.list_memories()[0].page_content


_OPEN = """
import sys
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_session_rag import SemanticCache, SessionVectorMemory
path = sys.argv[1]
fake = DeterministicFakeEmbedding(size=16)
for n, attempt in enumerate(sys.argv[2:]):  # KEY|WHAT: the key ("" for none); a text to store, "" or "cache"
    key, _, what = attempt.partition("|")
    print(f"=== attempt {n}", file=sys.stderr, flush=True)
    try:
        if what == "cache":
            cache = SemanticCache.local(path + ".cache", user_id="alice", embeddings=fake, encryption_key=key or None)
            cache.update("What is the code?", "It is 5521.", llm_string="m")
        else:
            memory = SessionVectorMemory.local(path=path, user_id="alice", embeddings=fake, encryption_key=key or None)
            if what:
                memory.add_messages([{"role": "user", "content": what}], session_id="s1")
                memory.flush()
        print("opened", file=sys.stderr, flush=True)
    except Exception as exc:  # a refused open: say why, and try the next one
        print(f"refused: {exc}", file=sys.stderr, flush=True)
"""


def _in_a_new_process(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != MASTER_KEY_ENV}
    return subprocess.run(
        [sys.executable, "-c", _OPEN, *args], capture_output=True, text=True, env=env, timeout=300, check=False
    )


@pytest.mark.slow
def test_a_refused_open_in_a_new_process_leaves_the_folder_byte_for_byte_unchanged(
    tmp_path: Path, key: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chroma writes to its database whenever a client opens a folder: a refused open must not get that far.

    The library's refused opens run in a new process that never opened the folder; the CLI's run in this one,
    which has not opened it either (it opens the folder only at the end, with the right key).
    """
    folder = str(tmp_path / "m")
    created = _in_a_new_process(folder, f"{key}|{MARKS[0]}", f"{key}|cache")
    assert created.returncode == 0, created.stderr
    assert created.stderr.count("opened") == 2, created.stderr[-2000:]
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    wrong = tmp_path.parent / f"{tmp_path.name}-wrong.key"
    wrong.write_text(generate_master_key())
    monkeypatch.delenv(MASTER_KEY_ENV, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")

    def cli(*args: str, key_file: Path | None = None) -> tuple[int, str]:
        code = main([*args, *(["--key-file", str(key_file)] if key_file is not None else [])])
        return code, " ".join(capsys.readouterr().err.split())

    # One new process tries the four opens in turn: none gets far enough to open the folder, so each later try is
    # still in a process that never opened it (a try that did open it would change the bytes checked below).
    refused = _in_a_new_process(folder, f"{wrong.read_text()}|", "|", f"{wrong.read_text()}|cache", "|cache")
    assert refused.returncode == 0, refused.stderr[-2000:]
    outcomes = refused.stderr.split("=== attempt ")[1:]
    assert len(outcomes) == 4, refused.stderr[-2000:]
    for outcome, said in zip(outcomes, ["another key", "is encrypted", "another key", "is encrypted"], strict=True):
        assert "\nrefused: " in outcome, outcome[-2000:]
        assert "\nopened" not in outcome, outcome[-2000:]
        assert said in outcome, outcome[-2000:]
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    for (code, printed), said in [
        (cli("sessions", "--path", folder, "--user", "alice", key_file=wrong), "another key"),
        (cli("sessions", "--path", folder, "--user", "alice"), "is encrypted"),
        (cli("reembed", "--path", folder, "--yes"), "is encrypted"),
        (cli("reembed", "--path", folder, "--yes", "--embeddings", "local"), "is encrypted"),
        (cli("reembed", "--path", folder, "--yes", key_file=wrong), "another key"),
    ]:
        assert code != 0
        assert said in printed, printed[-2000:]
        assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    opened = memory_of(tmp_path / "m", key, DeterministicFakeEmbedding(size=16))
    assert MARKS[0] in opened.list_memories()[0].page_content


def test_a_damaged_key_file_or_keyring_check_is_a_typed_error(tmp_path: Path, key: str) -> None:
    master = master_key_from(key) or b""
    ring = Keyring(tmp_path / "keys", master)
    ring.current("alice")
    key_file = next((tmp_path / "keys" / "users").glob("*.json"))
    key_file.write_text(key_file.read_text()[:40])  # cut short
    with pytest.raises(EncryptionKeyError, match="damaged"):
        Keyring(tmp_path / "keys", master).keys("alice")
    (tmp_path / "keys" / "master.json").write_text("{}")
    with pytest.raises(EncryptionKeyError, match="damaged"):
        Keyring(tmp_path / "keys", master)


def test_a_sealed_value_moved_to_another_user_or_field_does_not_open(tmp_path: Path, key: str) -> None:
    ring = Keyring(tmp_path / "keys", master_key_from(key) or b"")
    alice, bob = ring.current("alice"), ring.current("bob")
    sealed = seal(alice, "Alice's secret", "text")
    assert unseal(alice, sealed, "text") == "Alice's secret"
    with pytest.raises(EncryptionKeyError):
        unseal(alice, sealed, "metadata")
    with pytest.raises(EncryptionKeyError):
        unseal(bob, sealed, "text")
    forged = sealed[:-6] + ("A" if sealed[-6] != "A" else "B") + sealed[-5:]
    for damaged in (forged, sealed[:-3], sealed + "!"):  # altered, cut short, not base64
        with pytest.raises(EncryptionKeyError):
            unseal(alice, damaged, "text")


# -- the store --------------------------------------------------------------------------------------
def test_filters_sessions_and_search_work_on_sealed_values(
    tmp_path: Path, key: str, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    plain = SessionVectorMemory.local(path=tmp_path / "p", user_id="alice", embeddings=fake_embeddings)
    sealed = memory_of(tmp_path / "e", key, fake_embeddings)
    for memory in (plain, sealed):
        for n in range(6):
            memory.add_messages(
                [
                    {"role": "user", "content": f"Fact {n}: the locker {n} is blue."},
                    {"role": "assistant", "content": "Ok."},
                ],
                session_id=f"trip-{n % 2}",
                metadata={"project": f"p{n % 3}"},
            )
        memory.flush()
    assert isinstance(sealed.backend, EncryptedBackend)
    for options in (
        {},
        {"session_ids": ["trip-1"]},
        {"filter": {"project": "p2"}},
        {"exclude_session_ids": ["trip-0"]},
    ):
        want = [d.page_content for d in plain.invoke("which locker is blue?", k=4, **options)]
        got = [d.page_content for d in sealed.invoke("which locker is blue?", k=4, **options)]
        assert got == want, options  # the rotation keeps cosine similarity: the same ranking
    assert sorted(s.session_id for s in sealed.list_sessions()) == ["trip-0", "trip-1"]
    stored = sealed.backend.inner.get("alice", {})  # what the store holds
    assert all(r.text.startswith("srag1:") for r in stored)
    assert all(str(r.metadata["session_id"]).startswith("bi:") for r in stored)
    with pytest.raises(UnsupportedOperationError, match="equality"):  # in the store's own index
        sealed.backend.get("alice", {"project": {"$gte": "p1"}})
    with pytest.raises(UnsupportedOperationError, match="equality"):  # and in the replica alike
        sealed.invoke("locker", filter={"project": {"$gte": "p1"}})
    assert sealed.forget(session_id="trip-0") == 3
    assert {d.metadata["session_id"] for d in sealed.list_memories()} == {"trip-1"}


def test_master_key_rotation_rewraps_every_key_and_the_old_key_stops_working(
    tmp_path: Path, key: str, fake_embeddings: DeterministicFakeEmbedding, stored: SessionVectorMemory
) -> None:
    memory = stored
    memory.for_user("bob").add_messages([{"role": "user", "content": "Bob's note"}], session_id="s1")
    memory.flush()
    assert isinstance(memory.backend, EncryptedBackend)
    new = generate_master_key()
    assert memory.backend.rotate_master_key(master_key_from(new) or b"") == 2
    with pytest.raises(EncryptionKeyError):
        memory_of(tmp_path / "m", key, fake_embeddings)
    reopened = memory_of(tmp_path / "m", new, fake_embeddings)
    assert MARKS[0] in reopened.list_memories()[0].page_content


class Recording(DeterministicFakeEmbedding):
    """Fake vectors (plumbing only) of another model, recording every text it embeds."""

    model_id: str = "recording-fake"
    seen: list[str] = []  # noqa: RUF012 - one instance per test

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.seen.extend(texts)
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.seen.append(text)
        return super().embed_query(text)


def test_reembedding_an_encrypted_store_gives_the_model_plain_text_and_keeps_search(
    tmp_path: Path, key: str, stored: SessionVectorMemory
) -> None:
    model = Recording(size=16, seen=[])
    assert SessionVectorMemory.reembed(tmp_path / "m", embeddings=model, encryption_key=key) == 1
    assert model.seen == [f"User: The code is {MARKS[0]}."]
    after = memory_of(tmp_path / "m", key, model)
    assert MARKS[0] in after.invoke(f"The code is {MARKS[0]}.")[0].page_content
    assert scan([tmp_path], MARKS[0]) == []


def test_reencryption_renews_the_data_key_and_destroys_the_old_one(
    tmp_path: Path, key: str, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    memory = memory_of(tmp_path / "m", key, fake_embeddings, daily_log_dir=tmp_path / "logs")
    memory.add_messages([{"role": "user", "content": f"Code {MARKS[0]}"}], session_id="s1")
    memory.core.write("memory", f"Likes {MARKS[3]}.")
    memory.flush()
    backend = memory.backend
    assert isinstance(backend, EncryptedBackend)
    old = backend.keyring.keys("alice")[-1].key_id
    shutil.copytree(tmp_path / "m", tmp_path / "backup")
    assert memory.service.reencrypt("alice") >= 2  # the chunk and the core memory's records
    logged = read_daily_logs(tmp_path / "logs", keyring=backend.keyring)
    assert [m.text for m in logged] == [f"Code {MARKS[0]}"]  # the day file re-sealed under the new key
    assert [k.key_id for k in backend.keyring.keys("alice")] != [old]
    assert len(backend.keyring.keys("alice")) == 1
    fresh = memory_of(tmp_path / "m", key, fake_embeddings)
    assert MARKS[0] in fresh.list_memories()[0].page_content
    assert MARKS[3] in fresh.core.read("memory")
    stale = memory_of(tmp_path / "backup", key, fake_embeddings, keyring_dir=f"{tmp_path / 'm'}.keys")
    assert stale.list_memories() == []  # the backup's ciphertexts were under the destroyed key


# -- everything the package writes, scanned; forget_all shreds ---------------------------------------
def write_everything(tmp_path: Path, key: str | None, embeddings: Any) -> tuple[SessionVectorMemory, SemanticCache]:
    """A memory (daily logs, core memory, a note, a document), a cache, a graph turn checkpointed, an export."""
    store, logs, cache_dir = tmp_path / "m", tmp_path / "logs", tmp_path / "c"
    (tmp_path / "x").mkdir()
    (tmp_path / "cp").mkdir()
    memory = SessionVectorMemory.local(
        path=store, user_id="alice", embeddings=embeddings, encryption_key=key, daily_log_dir=logs
    )
    cache = SemanticCache.local(path=cache_dir, user_id="alice", embeddings=embeddings, encryption_key=key)
    model = GenericFakeChatModel(messages=iter([AIMessage(f"Your locker code is {MARKS[0]}.")] * 3))
    with SqliteSaver.from_conn_string(str(tmp_path / "cp" / "checkpoints.sqlite")) as saver:
        if key is not None:
            saver.serde = encrypted_serde(key)
        app = create_session_rag_graph(model, memory, cache=cache, background_writes=False).compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "t1"}}
        app.invoke({"messages": [HumanMessage(f"Remember my locker code {MARKS[0]}, what is it?")]}, config,
                   context={"user_id": "alice", "session_id": MARKS[1]})  # fmt: skip
        with saver.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    memory.add_note(f"Favourite editor: {MARKS[2]}")
    memory.core.write("memory", f"Prefers {MARKS[3]} tea.")
    cache.update("What is the capital of Freedonia?", f"Its capital is {MARKS[4]}.")
    memory.add_documents([Document(f"The handbook says {MARKS[0]} twice.", metadata={"name": f"{MARKS[5]}.md"})])
    memory.for_user("bob").add_messages([{"role": "user", "content": "Bob keeps KEEPSAKE4412."}], session_id="b1")
    memory.flush()
    assert memory.export_jsonl(tmp_path / "x" / "alice.jsonl") > 0
    return memory, cache


def test_the_scan_finds_every_marker_when_encryption_is_off(tmp_path: Path, real_embeddings: Any) -> None:
    write_everything(tmp_path, None, real_embeddings)
    for mark in MARKS:
        assert scan([tmp_path], mark), mark


def test_no_tier_holds_plaintext_and_forget_all_makes_earlier_copies_unreadable(
    tmp_path: Path, key: str, real_embeddings: Any
) -> None:
    memory, cache = write_everything(tmp_path, key, real_embeddings)
    store, logs = tmp_path / "m", tmp_path / "logs"
    for mark in [*MARKS, "KEEPSAKE4412"]:
        assert scan([tmp_path], mark) == [], mark
    # everything still reads back through the keys
    assert any(MARKS[2] in d.page_content for d in memory.list_memories())
    assert MARKS[3] in memory.core.read("memory")
    logged = [m.text for m in read_daily_logs(logs, keyring=memory.service.keyring)]
    assert logged[0].startswith("Remember my locker")
    assert cache.lookup("What is the capital of Freedonia?") == f"Its capital is {MARKS[4]}."
    cache.link_memory(memory)

    backup = tmp_path / "backup"
    shutil.copytree(store, backup)  # a backup of the store taken before the forget
    receipt = memory.forget_all()
    assert int(receipt) > 0
    assert receipt.key_ids
    assert len(receipt.key_files) == 2  # the memory's key and the linked cache's
    assert not any(Path(f).exists() for f in receipt.key_files)
    assert cache.lookup("What is the capital of Freedonia?") is None
    # the export taken earlier: unreadable, nothing imported
    fresh = SessionVectorMemory.local(path=tmp_path / "n", user_id="alice", embeddings=real_embeddings, encryption_key=key,
                                      keyring_dir=f"{store}.keys")  # fmt: skip
    with pytest.raises(EncryptionKeyError, match="destroyed since"):
        fresh.import_jsonl(tmp_path / "x" / "alice.jsonl")
    assert fresh.count() == 0
    # the backup, opened with the master key and the keyring: alice's records hold ciphertext no key opens
    restored = memory_of(backup, key, real_embeddings, keyring_dir=f"{store}.keys")
    assert isinstance(restored.backend, EncryptedBackend)
    raw = restored.backend.inner.get("alice", {})
    assert raw
    assert all(r.text.startswith("srag1:") for r in raw)
    assert restored.list_memories() == []
    assert restored.core.read("memory") == ""
    assert "KEEPSAKE4412" in restored.for_user("bob").list_memories()[0].page_content


def test_a_plain_store_opened_with_a_key_keeps_its_old_records_reachable_and_reencrypt_seals_them(
    tmp_path: Path, key: str, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    plain = SessionVectorMemory.local(path=tmp_path / "m", user_id="alice", embeddings=fake_embeddings)
    plain.add_messages([{"role": "user", "content": f"Old {MARKS[0]}"}], session_id="old", metadata={"tag": "t1"})
    plain.flush()
    sealed = memory_of(tmp_path / "m", key, fake_embeddings)
    sealed.add_messages([{"role": "user", "content": f"New {MARKS[1]}"}], session_id="new", metadata={"tag": "t1"})
    sealed.flush()
    assert [d.metadata["session_id"] for d in sealed.list_memories(session_id="old")] == ["old"]
    assert len(sealed.backend.get("alice", {"tag": "t1"})) == 2  # the store's own filter: plain and sealed alike
    assert isinstance(sealed.backend, EncryptedBackend)
    assert sealed.backend.reencrypt("alice") == 2
    assert all(r.text.startswith("srag1:") for r in sealed.backend.inner.get("alice", {}))
    assert sealed.forget(session_id="old") == 1
    assert [d.metadata["session_id"] for d in sealed.list_memories()] == ["new"]


def test_a_store_moved_without_its_keyring_or_given_another_refuses_instead_of_looking_empty(
    tmp_path: Path, key: str, fake_embeddings: DeterministicFakeEmbedding, stored: SessionVectorMemory
) -> None:
    shutil.copytree(tmp_path / "m", tmp_path / "moved")
    with pytest.raises(EncryptionKeyError, match="keyring"):
        memory_of(tmp_path / "moved", key, fake_embeddings)
    assert not Path(f"{tmp_path / 'moved'}.keys").exists()  # nothing created
    other = memory_of(tmp_path / "x", key, fake_embeddings)  # another store, its own keyring
    other.add_messages([{"role": "user", "content": "x"}], session_id="s1")
    with pytest.raises(EncryptionKeyError, match="not this store's"):
        memory_of(tmp_path / "moved", key, fake_embeddings, keyring_dir=f"{tmp_path / 'x'}.keys")
    shutil.copytree(f"{tmp_path / 'm'}.keys", f"{tmp_path / 'moved'}.keys")
    assert MARKS[0] in memory_of(tmp_path / "moved", key, fake_embeddings).list_memories()[0].page_content


def test_a_key_renewed_or_destroyed_by_another_process_is_never_served_from_memory(
    tmp_path: Path, key: str, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    folder, master = tmp_path / "keys", master_key_from(key) or b""
    ours, theirs = Keyring(folder, master), Keyring(folder, master)  # two processes' keyrings over one folder
    first = ours.current("alice")
    theirs.add_key("alice")
    theirs.drop_old("alice")
    assert ours.find("alice", first.key_id) is None
    assert ours.current("alice").key_id != first.key_id
    theirs.shred("alice")
    assert ours.keys("alice") == []
    theirs.rewrap(master_key_from(generate_master_key()) or b"")
    with pytest.raises(EncryptionKeyError):
        ours.current("carol")  # never wraps a new key under the rotated-away master key


def test_checkpoints_written_under_a_rotated_master_key_open_with_previous_keys(key: str) -> None:
    state = {"messages": [f"Remember {MARKS[0]}"]}
    typed = encrypted_serde(key).dumps_typed(state)
    assert MARKS[0].encode() not in typed[1]
    new = generate_master_key()
    assert encrypted_serde(new, previous_keys=[key]).loads_typed(typed) == state
    with pytest.raises(EncryptionKeyError):
        encrypted_serde(new).loads_typed(typed)


def test_a_store_that_embeds_texts_itself_is_refused_encryption_before_a_key_is_made(tmp_path: Path) -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    with pytest.raises(UnsupportedOperationError, match="embeds texts itself"):
        SessionVectorMemory(
            vectorstore=store, user_id="alice", encryption_key=generate_master_key(), keyring_dir=tmp_path / "keys"
        )
    assert not (tmp_path / "keys").exists()  # refused before the keyring folder was created
