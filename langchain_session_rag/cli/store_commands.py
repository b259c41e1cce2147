"""The commands that read and change a store: ingest, search, sessions, forget, export, import, stats, reembed."""

from __future__ import annotations

import json
import stat
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from langchain_session_rag.cli.app import cli
from langchain_session_rag.cli.lookup import resolve_sessions
from langchain_session_rag.cli.options import (
    COLLECTION,
    StoreOptions,
    default_store_path,
    err,
    out,
    print_skipped,
    printable,
    shorten,
    status,
    store_options,
)
from langchain_session_rag.importers.types import FORMAT_NAMES
from langchain_session_rag.memory.recall_policy import DEFAULT_SCORE_THRESHOLD

_WHEN = click.DateTime(["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M"])


class _Period(click.ParamType):  # type: ignore[type-arg]  # generic in the click this venv has; plain in older ones
    """A date or time (as ``_WHEN``) or a phrase ("last tuesday", "two weeks ago"): its first and last instants.

    A date is its whole day, a phrase the whole day, week, month or year it names (UTC); a time is that instant.
    """

    name = "period"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        try:
            when = _WHEN.convert(value, param, ctx).replace(tzinfo=timezone.utc)
        except click.BadParameter:
            from langchain_session_rag._time import utcnow  # noqa: PLC0415 - keeps the CLI's start light
            from langchain_session_rag.errors import InvalidTimestampError  # noqa: PLC0415
            from langchain_session_rag.memory.timewindow import EXAMPLE_PHRASES, resolve_time_phrase  # noqa: PLC0415

            examples = ", ".join(EXAMPLE_PHRASES)
            try:
                window = resolve_time_phrase(str(value), now=utcnow())
            except InvalidTimestampError:
                self.fail(f"{value!r} names a time out of range (the calendar ends in the year 9999).")
            if window is None:
                self.fail(f"{value!r} is neither a date (YYYY-MM-DD) nor a phrase such as {examples}.")
            return window.start, window.end - timedelta(microseconds=1)
        return when, _day_end(when)


_PERIOD = _Period()


def _snippet(text: str, width: int = 90) -> str:
    return shorten(printable(" ".join(text.split())), width)


def _date(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value else "-"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _day_end(value: datetime | None) -> datetime | None:
    """``--until 2025-03-02`` means up to the end of that day (dates are UTC)."""
    if value is None or value.time() != datetime.min.time():
        return value
    return value.replace(hour=23, minute=59, second=59, microsecond=999999)  # no overflow on 9999-12-31


def _json_out(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def readable_files(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A click callback: refuse, before any store is opened, a path that is neither a folder nor a regular file.

    A device (``/dev/zero``), a FIFO or a socket would never end (or never start) being read.
    """
    del ctx
    for path in value if isinstance(value, tuple) else (value,):
        mode = Path(path).stat().st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            msg = f"{path} is not a regular file (a device, FIFO or socket): save its content to a file first."
            raise click.BadParameter(msg, param=param)
    return value


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path),
                callback=readable_files)  # fmt: skip
@click.option("--format", "file_format", type=click.Choice(["auto", *FORMAT_NAMES]), default="auto", show_default=True,
              help="Read every file as this format.")  # fmt: skip
@click.option("--strict", is_flag=True, help="Import nothing if any conversation would be skipped.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@store_options
def ingest(files: tuple[Path, ...], file_format: str, strict: bool, as_json: bool, **store: Any) -> None:
    """Import chat history from FILES (folders: every importable file inside).

    \b
    Formats (found from each file): a ChatGPT export (conversations.json or the zip), OpenAI-format
    .jsonl/.json chats, LangChain message dumps, session-rag daily logs, markdown notes.
    Each conversation becomes a session; importing the same file again stores nothing new.
    Files over 256 MiB (a zip's conversations.json: decompressed) are refused: set
    SESSION_RAG_MAX_FILE_BYTES to raise the limit.
    """
    from langchain_session_rag.importers.ingest import import_conversations  # noqa: PLC0415

    memory = StoreOptions.of(store).memory()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task("Importing", total=None)

        def progress(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total, description=f"Importing {_snippet(label, 40)}")

        try:
            report = import_conversations(
                memory, list(files), file_format=file_format, strict=strict, progress=progress
            )
        except KeyboardInterrupt:
            done = int(bar.tasks[0].completed)
            err.print(
                f"Interrupted after {done} session(s); run the same command again to finish (nothing is stored twice)."
            )
            raise
    if as_json:
        _json_out(report.as_dict())
        return
    table = Table("file", "read as", title=printable(f"Imported into the memory of {memory.user_id!r}"))
    for name, fmt in report.files.items():
        table.add_row(printable(name), fmt)
    out.print(table)
    out.print(
        f"Sessions: {len(report.new_sessions)} new, {len(report.updated_sessions)} added to, "
        f"{len(report.unchanged_sessions)} already stored; {report.messages} messages read, "
        f"{report.chunks_added} chunks stored."
    )
    if report.chunks_removed:
        out.print(
            f"{report.chunks_removed} chunk(s) replaced (answers regenerated, questions or notes edited since the last "
            "import); their old text stays in the store's files until `session-rag stats --compact`."
        )
    if report.renamed_sessions:
        renamed = Table(
            "session id in the file", "stored as", title=f"Session ids renamed ({len(report.renamed_sessions)})"
        )
        for original, stored in report.renamed_sessions.items():
            renamed.add_row(printable(repr(original)), printable(stored))
        out.print(renamed)
        out.print("An id with a line break or control character cannot be stored: it was stored under the new id.")
    print_skipped(report.skipped, report.skipped_count)


@cli.command()
@click.argument("query")
@click.option("-k", "--k", "k", type=click.IntRange(1, 1000), default=5, show_default=True, help="Memories to show.")
@click.option("--threshold", type=click.FloatRange(-1.0, 1.0), default=DEFAULT_SCORE_THRESHOLD, show_default=True,
              help="Show only memories at least this similar (cosine), as chat recalls them; -1: all.")  # fmt: skip
@click.option("--session", "session_ids", multiple=True, help="Only this session (repeatable).")
@click.option("--since", type=_PERIOD, metavar="WHEN", default=None,
              help="Only memories from then on (YYYY-MM-DD, or a phrase: 'last tuesday', 'last month').")  # fmt: skip
@click.option("--until", type=_PERIOD, metavar="WHEN", default=None,
              help="Only memories up to then, included (YYYY-MM-DD, or a phrase: 'yesterday').")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@store_options
def search(query: str, k: int, threshold: float | None, session_ids: tuple[str, ...],
           since: tuple[datetime, datetime] | None, until: tuple[datetime, datetime] | None, as_json: bool,
           **store: Any) -> None:  # fmt: skip
    """Show what the memory recalls for QUERY, best first."""
    if not query.strip():
        msg = "The query is empty: give the words to search for."
        raise click.UsageError(msg)
    start, end = since[0] if since else None, until[1] if until else None
    if start is not None and end is not None and start > end:
        msg = f"--since {start:%Y-%m-%d} is after --until {end:%Y-%m-%d}: nothing can match."
        raise click.UsageError(msg)
    memory = StoreOptions.of(store).memory(create=False)
    options: dict[str, Any] = {"k": k, "score_threshold": threshold, "since": start, "until": end}
    if session_ids:
        options["session_ids"] = list(session_ids)
    docs = memory.invoke(query, **{key: v for key, v in options.items() if v is not None})
    if as_json:
        _json_out([{"id": d.id, "text": d.page_content, **d.metadata} for d in docs])
        return
    if not docs:
        err.print(f"Nothing in the memory of {memory.user_id!r} matches {query!r}.")
        return
    table = Table("", "score", title=printable(f"Memories of {memory.user_id!r} for {query!r}"))
    table.add_column("session", overflow="fold")  # whole ids: what `forget --session` takes
    table.add_column("memory")
    for doc in docs:
        meta = doc.metadata
        session = printable(meta.get("session_id") or "-")
        table.add_row(printable(meta["marker"]), f"{meta['score']:.2f}", session, _snippet(doc.page_content))
    out.print(table)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the sessions as JSON.")
@store_options
def sessions(as_json: bool, **store: Any) -> None:
    """List the stored sessions, most recent first."""
    memory = StoreOptions.of(store).memory(embeds=False, create=False)
    found = memory.list_sessions()
    if as_json:
        _json_out([{**vars(s), "started": _iso(s.started), "last_active": _iso(s.last_active)} for s in found])
        return
    table = Table(title=printable(f"Sessions of {memory.user_id!r}"))
    table.add_column("session", overflow="fold")  # whole ids: they are what `forget --session` takes
    for name in ("title", "started", "last active", "chunks", "messages"):
        table.add_column(name, overflow="fold" if name == "title" else "ellipsis")
    for s in found:
        row = (printable(s.session_id), printable(s.title), _date(s.started), _date(s.last_active))
        table.add_row(*row, str(s.chunks), str(s.messages))
    out.print(table if found else printable(f"{memory.user_id!r} has no stored session."))


@cli.command()
@click.option("--session", "session_ids", multiple=True, metavar="ID|TITLE",
              help="Forget this session: its id, the start of its id, or words of its title (repeatable).")  # fmt: skip
@click.option(
    "--before", type=_WHEN, metavar="DATE", default=None, help="Forget memories older than this date (YYYY-MM-DD)."
)
@click.option("--all", "everything", is_flag=True, help="Forget everything of the user, core memory included.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--no-compact", is_flag=True, help="Skip erasing the forgotten text from the store's files now.")
@store_options
def forget(session_ids: tuple[str, ...], before: datetime | None, everything: bool, yes: bool, no_compact: bool,
           **store: Any) -> None:  # fmt: skip
    """Forget sessions, memories older than a date (of those sessions, if given), or everything of the user.

    The forgotten text is then erased from the store's files (a compaction of the whole store).
    """
    if everything == bool(session_ids or before):
        msg = "Say what to forget: --session ID (repeatable) and/or --before DATE, or --all alone."
        raise click.UsageError(msg)
    from langchain_session_rag._checks import check_session_id  # noqa: PLC0415 - keeps the CLI's start light

    for session_id in session_ids:  # before asking: an unfit id names no session
        check_session_id(session_id)
    _refuse_unconfirmed_script(yes=yes, command="forget")  # before anything is opened
    options = StoreOptions.of(store)
    memory = options.memory(embeds=False, create=False)
    session_ids = resolve_sessions(memory, session_ids, refused="nothing was forgotten")  # named in the question
    scope = f"session(s) {', '.join(session_ids)}" if session_ids else "every session"
    dated = f", memories before {before:%Y-%m-%d}," if before else ""
    what = "EVERYTHING stored for" if everything else f"{scope}{dated} of"
    _confirm(f"Forget {what} user {options.user_id!r} in {options.location}?", yes=yes, command="forget",
             refused="Nothing was forgotten.")  # fmt: skip
    keys: tuple[str, ...] = ()
    removed: int
    if everything:
        receipt = memory.forget_all()
        removed, keys = int(receipt), receipt.key_ids
    elif session_ids:
        removed = sum(memory.forget(session_id=s, before=before) for s in session_ids)
    else:
        removed = memory.forget(before=before)
    core = ", core memory included" if everything else ""
    out.print(f"Forgot {removed} chunk(s): {what} user {memory.user_id!r}{core}.")
    if keys:
        out.print(
            f"Destroyed the user's data key(s) {', '.join(keys)}: every earlier copy of their data from this store "
            "(free pages, the write-ahead log, backups, encrypted exports) is unreadable from now on."
        )
    if options.server is not None:  # rebuilding a server's collections under other clients loses their writes
        out.print(
            "On a Chroma server the forgotten text stays in the server's files until a compaction when no other "
            "client writes: `session-rag stats --compact --server ...`, then `chroma vacuum` on its host."
        )
        return
    if no_compact or (removed == 0 and not everything):  # --all may have erased core memory alone: compact anyway
        if removed or everything:
            out.print("The forgotten text stays in the store's files until `session-rag stats --compact` runs.")
        return
    try:
        with status("Erasing the forgotten text from the store's files …"):
            kept = memory.compact()
    except KeyboardInterrupt:
        err.print(
            "Interrupted: the forgotten text is NOT erased from the files yet; run `session-rag stats --compact`."
        )
        raise
    out.print(f"Erased from the store's files; {kept} chunk(s) of all users kept.")


def _refuse_unconfirmed_script(*, yes: bool, command: str) -> None:
    """Refuse a script (no terminal) that did not pass --yes, before the command opens or changes anything."""
    if not yes and not sys.stdin.isatty():
        msg = f"{command} asks for confirmation on a terminal; pass --yes to confirm from a script."
        raise click.UsageError(msg)


def _confirm(question: str, *, yes: bool, command: str, refused: str) -> None:
    """Ask on a terminal; a script must say --yes. A no prints ``refused`` and ends the command with 1, nothing done."""
    _refuse_unconfirmed_script(yes=yes, command=command)
    if yes:
        return
    if not click.confirm(question):
        err.print(refused)
        raise click.exceptions.Exit(1)


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False, writable=True, path_type=Path))
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@click.option("--plaintext", is_flag=True, help="From an encrypted store, write readable lines (else each is sealed).")
@store_options
def export(file: Path, force: bool, plaintext: bool, **store: Any) -> None:
    """Write the user's memories (texts, metadata, vectors) to FILE as JSON Lines.

    From an encrypted store every line is sealed under the user's data key, readable by an import into the same
    store only, and by nothing once the user is forgotten; --plaintext writes readable lines.
    """
    if file.exists() and not force:
        msg = f"{file} exists; pass --force to replace it."
        raise click.UsageError(msg)
    options = StoreOptions.of(store)
    folder = (options.path or default_store_path()).resolve()
    if options.server is None and folder in file.resolve().parents:
        msg = f"{file} is inside the store's own folder {folder}; write the export elsewhere."
        raise click.UsageError(msg)
    memory = options.memory(embeds=False, create=False)
    count = memory.export_jsonl(file, encrypt=False if plaintext else None)
    out.print(printable(f"Exported {count} chunk(s) of user {memory.user_id!r} to {file} (core memory: not included)."))


@cli.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path), callback=readable_files)
@click.option("--reassign-user", is_flag=True, help="Import another user's export as this user's memories.")
@click.option(
    "--trust-provenance",
    is_flag=True,
    help="Keep who wrote each note and each chunk's exchange count as the file says (your own export, kept where "
    "no one else can edit it). Without it, imported notes are the model's claims.",
)
@store_options
def import_(file: Path, reassign_user: bool, trust_provenance: bool, **store: Any) -> None:
    """Add the chunks of a `session-rag export` FILE to the user's memory (chat histories: use `ingest`)."""
    memory = StoreOptions.of(store).memory()
    added = memory.import_jsonl(file, reassign=reassign_user, trust_provenance=trust_provenance)
    out.print(printable(f"Imported {added} new chunk(s) into the memory of {memory.user_id!r} from {file}."))


@cli.command()
@click.option("--compact", "compact_now", is_flag=True, help="Also erase forgotten text from the store's files.")
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@store_options
def stats(compact_now: bool, as_json: bool, **store: Any) -> None:
    """Show the store: its users, this user's sessions and chunks, the embedding model, disk use."""
    from langchain_session_rag.stores.base import USER_LISTING  # noqa: PLC0415

    options = StoreOptions.of(store)
    memory = options.memory(embeds=False, create=False)
    if compact_now:
        with status("Compacting …"):
            memory.compact()
    backend = memory.backend
    users = backend.users() if USER_LISTING in backend.capabilities else {}
    found = memory.list_sessions()
    folder = None if options.server else Path(options.location)
    data = {
        "store": options.location,
        "embedding_model": memory.model_id,
        "users": len(users),
        "chunks_all_users": sum(users.values()),
        "user": memory.user_id,
        "sessions": len(found),
        "chunks": memory.count(),
        "messages": sum(s.messages for s in found),
        "core_memory_tokens": sum(memory.chunker.count(t) for t in memory.core.blocks().values()),
        "disk_bytes": sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder else None,
    }
    if as_json:
        _json_out(data)
        return
    table = Table("", "", show_header=False, title="session-rag store", title_justify="left")
    for key, value in data.items():
        shown = f"{value / 1e6:.1f} MB" if key == "disk_bytes" and isinstance(value, int) else str(value)
        table.add_row(key.replace("_", " "), shown)
    out.print(table)


@cli.command()
@click.option("--session", "session_ids", multiple=True, help="This session only (repeatable; default: every one).")
@store_options
def consolidate(session_ids: tuple[str, ...], **store: Any) -> None:
    """Group the exchanges of finished sessions into topic segments (chat stores one chunk per exchange)."""
    memory = StoreOptions.of(store).memory(create=False)
    session_ids = resolve_sessions(memory, session_ids)
    targets = list(session_ids) or [s.session_id for s in memory.list_sessions()]
    table = Table("session", "exchanges", "segments", "embedded", title="Consolidated")
    for session in targets:
        result = memory.consolidate(session)
        if result.exchanges:
            table.add_row(session, str(result.exchanges), str(result.segments), str(result.texts_embedded))
    out.print(table if table.row_count else "Nothing to consolidate: no session holds separate exchanges.")


@cli.command()
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (needed in scripts).")
@store_options
def reembed(yes: bool, **store: Any) -> None:
    """Re-embed the whole store (every user) with --embeddings (default: the bundled model), from its texts.

    \b
    For a store written by another model, e.g. the torch route of all-MiniLM-L6-v2 (the default before 0.6).
    Crash-safe: the old vectors serve until the new copy is complete.
    """
    from langchain_session_rag.memory.retriever import SessionVectorMemory  # noqa: PLC0415
    from langchain_session_rag.models.embeddings import embedding_model_id, get_default_embeddings  # noqa: PLC0415
    from langchain_session_rag.stores.chroma import ChromaBackend  # noqa: PLC0415

    options = StoreOptions.of(store)
    client = options.existing_client()
    recorded = ChromaBackend(client, name=COLLECTION).manifest.get("embedding_model")
    target = options.embeddings_for(options.embeddings) or get_default_embeddings()
    model = embedding_model_id(target)
    if recorded == model:
        out.print(f"The store is already embedded with {recorded}: nothing to do.")
        return
    _confirm(f"Re-embed every chunk of {options.location} with {model}?", yes=yes, command="reembed",
             refused="Nothing was re-embedded.")  # fmt: skip
    with status(f"Re-embedding {options.location} with {model} …"):
        keys = {k: v for k, v in options.privacy.items() if k != "redact_secrets"}
        count = SessionVectorMemory.reembed(client, embeddings=target, collection_name=COLLECTION, **keys)
    out.print(f"Re-embedded {count} chunks: {recorded or 'no model'} → {model}.")
