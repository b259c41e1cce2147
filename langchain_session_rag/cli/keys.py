"""``session-rag keys``: make a master key, rotate it, re-encrypt a store under new data keys."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from langchain_session_rag.cli.app import cli
from langchain_session_rag.cli.options import StoreOptions, out, status, store_options


@cli.group()
def keys() -> None:
    """Encryption keys: `new` makes a master key, `rotate` re-wraps the data keys, `reencrypt` renews them."""


@keys.command()
@click.option("--out", "out_file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the key to this new file (mode 600) instead of printing it.")  # fmt: skip
def new(out_file: Path | None) -> None:
    """Make a new random master key (keep it in a secret manager, never beside the store)."""
    from langchain_session_rag.privacy.keyring import generate_master_key  # noqa: PLC0415

    key = generate_master_key()
    if out_file is None:
        click.echo(key)
        return
    try:
        fd = os.open(out_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        msg = f"{out_file} exists: a key file is never overwritten (its store would become unreadable)."
        raise click.UsageError(msg) from None
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(key + "\n")
    out.print(f"Wrote a new master key to {out_file}. Use it with --key-file {out_file} (or SESSION_RAG_KEY_FILE).")


def _encrypted(options: StoreOptions) -> Any:
    from langchain_session_rag.stores.encrypted import EncryptedBackend  # noqa: PLC0415

    memory = options.memory(embeds=False, create=False)
    backend = memory.backend
    if not isinstance(backend, EncryptedBackend):
        msg = "This store is not encrypted: pass its master key with --key-file (or SESSION_RAG_MASTER_KEY)."
        raise click.UsageError(msg)
    return memory, backend


@keys.command()
@click.option("--new-key-file", type=click.Path(path_type=Path, dir_okay=False, exists=True), required=True,
              help="The new master key (from `session-rag keys new --out FILE`).")  # fmt: skip
@store_options
def rotate(new_key_file: Path, **store: Any) -> None:
    """Re-wrap every user's data key under a new master key (quick: the data is not rewritten)."""
    from langchain_session_rag.privacy.keyring import master_key_from  # noqa: PLC0415

    new_key = master_key_from(new_key_file)
    _, backend = _encrypted(StoreOptions.of(store))
    with status("Re-wrapping the data keys …"):
        count = backend.rotate_master_key(new_key)
    out.print(
        f"Re-wrapped the data keys of {count} user(s) under the new master key (fingerprint "
        f"{backend.keyring.fingerprint}). From now on open the store with --key-file {new_key_file}."
    )


@keys.command()
@store_options
def reencrypt(**store: Any) -> None:
    """Re-encrypt the user's memories under a new data key and destroy the old key (stop writers first).

    Memories stored before encryption was turned on are encrypted too.
    """
    options = StoreOptions.of(store)
    memory, _ = _encrypted(options)
    with status(f"Re-encrypting the memories of {memory.user_id!r} …"):
        count = memory.service.reencrypt(memory.user_id)
    out.print(f"Re-encrypted {count} record(s) of {memory.user_id!r} under a new data key; the old key is destroyed.")
    out.print(
        "Exports taken before are unreadable now (their key is gone); memories stored before encryption was turned "
        "on leave the store's files at the next `session-rag stats --compact`."
    )
