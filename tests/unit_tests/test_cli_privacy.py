"""The command line's privacy: secrets redacted by default, encryption with a key file, keys rotated, forgetting
that destroys the key (real commands in subprocesses, byte scans of what they wrote)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit_tests.test_cli import run
from tests.unit_tests.test_encryption import scan

pytestmark = pytest.mark.slow  # the CLI in subprocesses, on the real model

AWS_KEY = "AKIAZ7QKXW4RTV2MNB3L"
MARK = "ORCHIDMARKER5531"


def chat_file(folder: Path) -> Path:
    path = folder / "chat.json"
    messages = [
        {"role": "user", "content": f"Deploys fail; my AWS key is {AWS_KEY}, and my cat is called {MARK}."},
        {"role": "assistant", "content": "Rotate that key: it is now in this chat."},
    ]
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def test_secrets_are_redacted_by_default_and_kept_only_when_asked(tmp_path: Path) -> None:
    source = chat_file(tmp_path)
    run("ingest", str(source), "--path", str(tmp_path / "redacted"))
    run("ingest", str(source), "--path", str(tmp_path / "kept"), "--keep-secrets")
    assert scan([tmp_path / "redacted"], AWS_KEY) == []
    assert scan([tmp_path / "redacted"], MARK), "the rest of the message is stored"
    assert scan([tmp_path / "kept"], AWS_KEY), "--keep-secrets stores the key as typed"
    found = run("search", "what is my cat called?", "--path", str(tmp_path / "redacted"), "--json").stdout
    assert "[secret:aws-access-key]" in found
    assert AWS_KEY not in found


def test_an_encrypted_store_from_a_key_file_keys_rotated_and_forget_all_destroys_the_key(tmp_path: Path) -> None:
    store, old, new = tmp_path / "store", tmp_path / "old.key", tmp_path / "new.key"
    run("keys", "new", "--out", str(old))
    assert old.stat().st_mode & 0o777 == 0o600
    assert run("keys", "new", "--out", str(old), check=2).stderr.count("never overwritten") == 1
    run("ingest", str(chat_file(tmp_path)), "--path", str(store), "--key-file", str(old))
    assert scan([store, Path(f"{store}.keys")], MARK) == []
    refused = run("search", "cat", "--path", str(store), check=1)
    assert "is encrypted" in refused.stderr
    wrong = run("search", "cat", "--path", str(store), "--key-file", str(chat_file(tmp_path)), check=1)
    assert "32 bytes" in wrong.stderr
    run("keys", "new", "--out", str(new))
    rotated = run("keys", "rotate", "--new-key-file", str(new), "--path", str(store), "--key-file", str(old))
    assert "Re-wrapped the data keys of 1 user(s)" in rotated.stdout
    run("search", "cat", "--path", str(store), "--key-file", str(old), check=1)
    env = {"SESSION_RAG_MASTER_KEY": new.read_text().strip()}
    assert MARK in run("search", "what is my cat called?", "--path", str(store), "--json", env=env).stdout
    renewed = run("keys", "reencrypt", "--path", str(store), env=env)
    assert "under a new data key; the old key is destroyed" in renewed.stdout
    run("export", str(tmp_path / "me.jsonl"), "--path", str(store), env=env)
    assert scan([tmp_path / "me.jsonl"], MARK) == []
    forgot = run("forget", "--all", "--yes", "--path", str(store), env=env)
    assert "Destroyed the user's data key(s)" in forgot.stdout
    refused_import = run("import", str(tmp_path / "me.jsonl"), "--path", str(store), env=env, check=1)
    assert "destroyed since" in refused_import.stderr
