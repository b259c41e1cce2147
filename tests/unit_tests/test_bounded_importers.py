"""Hostile files given to the importers (issue 26, finding 8), as an attacker would hand them over.

A zip bomb, ``/dev/zero``, a FIFO with no writer, a notes folder linking to files outside it, JSON nested 100,000
levels deep: each is refused with a typed error (or reported and skipped) at once, with bounded memory, and nothing is
stored. Every test that could hang on the old code carries a timeout (method ``thread``: a read stuck in C cannot
swallow it), and the CLI runs under an address-space limit so a regression cannot take the machine's memory.
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from langchain_session_rag import SessionVectorMemory, import_conversations
from langchain_session_rag.errors import FileAccessError, ImportFormatError, InvalidMessageError
from langchain_session_rag.evaluation.locomo_data import load_locomo
from langchain_session_rag.importers import read_conversations

HANG = pytest.mark.timeout(60, method="thread")
MiB = 2**20
DEEP = 100_000


def _bomb(path: Path, mib: int = 100) -> Path:
    """A ChatGPT-export-shaped zip whose conversations.json is ``mib`` MiB of spaces (about 1,000:1)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive, archive.open("conversations.json", "w") as f:
        f.write(b"[")
        for _ in range(mib):
            f.write(b" " * MiB)
        f.write(b"]")
    return path


@pytest.fixture
def memory(tmp_path: Path, real_embeddings: Any) -> SessionVectorMemory:
    mem = SessionVectorMemory.local(path=tmp_path / "store", user_id="alice", embeddings=real_embeddings)
    mem.add_messages([{"role": "user", "content": "My locker code is 4417."}], session_id="kept")
    return mem


@HANG
@pytest.mark.parametrize("max_bytes", [None, 8 * MiB], ids=["default-limits", "max_bytes-8MiB"])
def test_a_zip_bomb_is_refused_before_it_is_decompressed_past_the_limit(
    tmp_path: Path, memory: SessionVectorMemory, max_bytes: int | None
) -> None:
    bomb = _bomb(tmp_path / "export.zip")
    assert bomb.stat().st_size < MiB
    with pytest.raises(ImportFormatError) as caught:
        import_conversations(memory, bomb, max_bytes=max_bytes)
    error: Any = caught.value
    assert error.seen <= error.limit, "decompressed past the limit"
    assert error.limit <= (max_bytes or 256 * MiB)
    assert "export.zip:conversations.json" in str(error)
    assert memory.count() == 1, "nothing stored, nothing lost"


@HANG
def test_a_zip_member_that_lies_about_its_size_is_refused_at_its_declared_size(tmp_path: Path) -> None:
    """The declared sizes say 1 KiB; the data inflates to 100 MiB. Reading stops at the declared size."""
    bomb = _bomb(tmp_path / "liar.zip")
    data = bytearray(bomb.read_bytes())
    with zipfile.ZipFile(bomb) as archive:
        real = archive.getinfo("conversations.json").file_size
    forged = data.replace(real.to_bytes(4, "little"), (1024).to_bytes(4, "little"))
    assert forged != data
    bomb.write_bytes(bytes(forged))
    with pytest.raises(ImportFormatError, match=r"liar\.zip"):
        read_conversations(bomb)


@HANG
def test_a_file_over_max_bytes_is_refused_naming_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chats = tmp_path / "chats.jsonl"
    line = json.dumps({"messages": [{"role": "user", "content": "x" * 1000}]})
    chats.write_text("\n".join([line] * 100), encoding="utf-8")
    with pytest.raises(ImportFormatError, match="50,000 bytes") as caught:
        read_conversations(chats, max_bytes=50_000)
    assert caught.value.seen <= 50_000  # type: ignore[attr-defined]
    assert "max_bytes=" in str(caught.value)
    monkeypatch.setenv("SESSION_RAG_MAX_FILE_BYTES", "50000")  # the CLI's way to set it
    with pytest.raises(ImportFormatError, match="SESSION_RAG_MAX_FILE_BYTES"):
        read_conversations(chats)
    monkeypatch.delenv("SESSION_RAG_MAX_FILE_BYTES")
    assert len(read_conversations(chats).conversations) == 100


def _entry_points(memory: SessionVectorMemory) -> dict[str, Callable[[Path], object]]:
    return {
        "read_conversations": read_conversations,
        "import_conversations": lambda p: import_conversations(memory, p),
        "import_jsonl": memory.import_jsonl,
        "load_locomo": load_locomo,
    }


ENTRY_POINTS = ["read_conversations", "import_conversations", "import_jsonl", "load_locomo"]


@HANG
@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_dev_zero_is_refused_at_once(memory: SessionVectorMemory, entry: str) -> None:
    with pytest.raises(FileAccessError, match="character device, not a regular file"):
        _entry_points(memory)[entry](Path("/dev/zero"))
    assert memory.count() == 1


@HANG
@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_fifo_with_no_writer_is_refused_without_blocking(
    tmp_path: Path, memory: SessionVectorMemory, entry: str
) -> None:
    fifo = tmp_path / "conversations.json"
    os.mkfifo(fifo)
    with pytest.raises(FileAccessError, match="FIFO"):
        _entry_points(memory)[entry](fifo)
    assert memory.count() == 1


def _deep_files(tmp_path: Path) -> dict[str, Path]:
    deep = "[" * DEEP + "]" * DEEP
    files = {
        "conversations.json": deep,
        "chats.jsonl": json.dumps({"messages": []}) + "\n" + '{"messages": ' + deep + "}\n",
        "export.jsonl": '{"id": "x", "text": "t", "metadata": ' + "[" * DEEP + "]" * DEEP + "}\n",
        "locomo.json": deep,
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return {name: tmp_path / name for name in files}


@HANG
@pytest.mark.parametrize(
    ("entry", "name"),
    [
        ("read_conversations", "conversations.json"),
        ("read_conversations", "chats.jsonl"),
        ("import_conversations", "conversations.json"),
        ("import_jsonl", "export.jsonl"),
        ("load_locomo", "locomo.json"),
    ],
)
def test_json_nested_100k_deep_is_a_typed_error_not_a_recursion_error(
    tmp_path: Path, memory: SessionVectorMemory, entry: str, name: str
) -> None:
    path = _deep_files(tmp_path)[name]
    with pytest.raises(InvalidMessageError, match=r"nested 100,00[01] levels deep") as caught:
        _entry_points(memory)[entry](path)
    assert caught.value.limit == 256  # type: ignore[attr-defined]
    assert name in str(caught.value)
    assert memory.count() == 1


def test_json_with_brackets_inside_strings_is_not_counted_as_deep(tmp_path: Path) -> None:
    chats = tmp_path / "chats.json"
    deep_text = "[[[{{{" * 1000 + '\\"]]' + "}}}]]]" * 10
    chats.write_text(json.dumps([{"messages": [{"role": "user", "content": deep_text}]}]), encoding="utf-8")
    batch = read_conversations(chats)
    assert batch.conversations[0].messages[0]["content"] == deep_text


@HANG
def test_a_notes_folder_link_to_a_file_outside_it_is_not_imported_and_is_reported(
    tmp_path: Path, memory: SessionVectorMemory
) -> None:
    secret = tmp_path / "outside" / "hostname.md"
    secret.parent.mkdir()
    secret.write_text("zqsecret outside the notes folder", encoding="utf-8")
    notes = tmp_path / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "todo.md").write_text("Buy oat milk.", encoding="utf-8")
    (notes / "leak.md").symlink_to(secret)
    (notes / "etc.md").symlink_to("/etc/hostname")
    (notes / "linked-folder").symlink_to(secret.parent, target_is_directory=True)
    (notes / "sub" / "alias.md").symlink_to(notes / "todo.md")  # a link inside the folder: read
    report = import_conversations(memory, notes)
    skipped = {Path(s.source).name: s.reason for s in report.skipped}
    assert set(skipped) == {"leak.md", "etc.md"}
    assert all("outside" in reason for reason in skipped.values())
    texts = [d.page_content for d in memory.list_memories(limit=100)]
    assert not any("zqsecret" in t for t in texts)
    assert sum("oat milk" in t for t in texts) == 2  # the note and the link to it inside the folder
    assert any(Path(name).name == "alias.md" for name in report.files)


def _limited() -> None:
    """The child may not take more than 3 GB of address space: an unbounded read fails instead of eating RAM."""
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))


_COMMANDS = """
import contextlib, io, json, sys
from langchain_session_rag.cli.app import main
done = []
for args in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(args)
    done.append({"returncode": code, "stderr": err.getvalue()})
print(json.dumps(done))
"""
"""Runs each command line of the CLI in turn (in process, as ``session-rag`` would) and reports each one's end."""

COMMANDS = [["ingest"], ["import"], ["eval", "locomo"]]
TARGETS = ["/dev/zero", "fifo"]


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Each refused command line of the tests below, run in one child with bounded memory: its folder and its end.

    One process for all of them: its address space is bounded (an unbounded read fails instead of eating RAM), and
    the commands are the CLI's own ``main``, as the entry point runs it (whose exit codes a test of test_cli.py
    checks in a process of their own).
    """
    cases: dict[str, tuple[Path, list[str]]] = {}
    for command in COMMANDS:
        for target in TARGETS:
            folder = tmp_path_factory.mktemp("refused")
            path = target
            if target == "fifo":
                os.mkfifo(folder / "fifo.json")
                path = str(folder / "fifo.json")
            store = ["--path", str(folder / "store")] if command[0] != "eval" else []
            cases[f"{' '.join(command)} {target}"] = (folder, [*command, path, *store])
    folder = tmp_path_factory.mktemp("bomb")
    cases["zip bomb"] = (folder, ["ingest", str(_bomb(folder / "export.zip")), "--path", str(folder / "store")])
    env = {**os.environ, "OLLAMA_HOST": "http://127.0.0.1:9", "COLUMNS": "200", "NO_COLOR": "1"}
    child = subprocess.run(
        [sys.executable, "-c", _COMMANDS, json.dumps([args for _, args in cases.values()])],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
        preexec_fn=_limited,
    )
    assert child.returncode == 0, child.stderr[-3000:]
    ends = json.loads(child.stdout.strip().splitlines()[-1])
    return {name: (folder, end) for (name, (folder, _)), end in zip(cases.items(), ends, strict=True)}


@HANG
@pytest.mark.parametrize("command", [" ".join(c) for c in COMMANDS])
@pytest.mark.parametrize("target", TARGETS)
def test_the_cli_refuses_a_device_or_fifo_in_one_line(
    refused: dict[str, tuple[Path, dict[str, Any]]], command: str, target: str
) -> None:
    folder, done = refused[f"{command} {target}"]
    assert done["returncode"] == 2, done["stderr"]
    assert "not a regular file" in done["stderr"]
    assert "Traceback" not in done["stderr"]
    assert not (folder / "store").exists(), "refused before a store was opened"


@HANG
def test_the_cli_refuses_a_zip_bomb_in_one_line(refused: dict[str, tuple[Path, dict[str, Any]]]) -> None:
    _, done = refused["zip bomb"]
    assert done["returncode"] == 1, done["stderr"]
    lines = done["stderr"].strip().splitlines()
    assert len(lines) == 1
    assert "zip bomb" in lines[0]
    assert "Traceback" not in done["stderr"]


def _reference_depth(text: str) -> int:
    """The nesting depth of JSON text, one character at a time (slow, obviously right)."""
    best = depth = 0
    inside = escaped = False
    for char in text:
        if inside:
            escaped, inside = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            inside = True
        elif char in "[{":
            depth += 1
            best = max(best, depth)
        elif char in "]}":
            depth -= 1
    return best


@pytest.mark.parametrize("seed", range(4))
def test_the_depth_scan_matches_a_character_loop(seed: int) -> None:
    from langchain_session_rag.memory.reading import json_depth

    rng = random.Random(seed)  # noqa: S311 - a reproducible test input
    alphabet = ['"', "\\", "[", "]", "{", "}", "a", "\\\\", '\\"']

    def value(level: int) -> object:
        roll = rng.random()
        if level > 12 or roll < 0.3:
            return "".join(rng.choices(alphabet, k=rng.randint(0, 6)))
        if roll < 0.65:
            return [value(level + 1) for _ in range(rng.randint(0, 3))]
        return {f"k{i}{rng.choice(alphabet)}": value(level + 1) for i in range(rng.randint(0, 3))}

    for _ in range(60):
        text = json.dumps(value(0))
        assert json_depth(text.encode()) == _reference_depth(text), text


def test_an_encrypted_zip_member_is_a_typed_error(tmp_path: Path) -> None:
    export = tmp_path / "export.zip"
    with zipfile.ZipFile(export, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", "[]")
    data = bytearray(export.read_bytes())
    for signature, flag_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local and central headers
        start = data.index(signature)
        data[start + flag_at] |= 0x1  # "encrypted"
    export.write_bytes(bytes(data))
    with pytest.raises(ImportFormatError, match="encrypted"):
        read_conversations(export)
