"""``session-rag chat``: a terminal chat whose past sessions are recalled, on the package's LangGraph graph.

Each run is a new session (``chat-YYYYMMDD-HHMMSS``). Every exchange is stored as it happens; the memories a
question recalled are shown with their markers before the answer streams. At the end the session is consolidated
into topic segments. A turn cut short (Ctrl-C, SIGTERM, SIGHUP) keeps the question and the part of the answer
shown, marked ``interrupted``: nothing typed is lost. Ollama answers when it runs and has the model, else
SmolLM2-135M in process; the chat says which it uses and why.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from langchain_session_rag.cli.app import cli
from langchain_session_rag.cli.options import StoreOptions, err, out, printable, shorten, status, store_options
from langchain_session_rag.cli.terminal import read_line
from langchain_session_rag.errors import InvalidArgumentError, SessionRAGError
from langchain_session_rag.memory.lexical import tokenize
from langchain_session_rag.memory.recall_policy import DEFAULT_SCORE_THRESHOLD
from langchain_session_rag.stores.adapter import is_connection_error

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.language_models import BaseChatModel

    from langchain_session_rag.memory.retriever import SessionVectorMemory

FAULT_ENV = "SESSION_RAG_CHAT_FAULT"
"""Tests only: ``generating`` makes the chat print ``[fault point: generating]`` after the answer's first token
and wait there (up to a minute) for the signal the test sends; ``held`` prints ``[fault point: held]`` there while
the local model holds the answer open until it is stopped (an answer that would go on)."""

HELP = """Commands:
  /sessions          list the stored sessions
  /forget            forget this session (what was said since the chat started) and start a new one
  /forget SESSION    forget another session
  /core              show the core memory (pinned in every prompt) and the edits waiting for you
  /core confirm ID   pin an edit the assistant proposed (/core reject ID drops it)
  /help              this list
  /quit              leave (Ctrl-D too); the session is kept and consolidated"""


def new_session_id() -> str:
    """A session id for a chat started now."""
    return f"chat-{datetime.now(tz=timezone.utc):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


@dataclass
class ChatSession:
    """One chat: the graph, its thread, and what the person asked to forget."""

    memory: SessionVectorMemory
    model: BaseChatModel
    context_window: int
    max_tokens: int
    min_similarity: float | None = DEFAULT_SCORE_THRESHOLD
    session_id: str = field(default_factory=new_session_id)
    describe: str = "the chat model"
    """The model and where it runs, in words (for messages)."""
    forgot: int = 0
    turns: int = 0
    _graph: Any = None
    _pending: tuple[str, list[str]] | None = None
    """The question being answered and the answer's tokens so far (until the turn is stored)."""
    closing: bool = False
    """The chat is ending: a signal's handler stores nothing more (``close`` does)."""
    _kept_on_signal: bool = False
    """A signal's handler stored the interrupted question (see :func:`_leaver`)."""

    def __post_init__(self) -> None:
        """Build the graph: the package's session-RAG graph with an in-memory checkpointer for this chat's turns."""
        from langgraph.checkpoint.memory import InMemorySaver  # noqa: PLC0415

        from langchain_session_rag.graph import create_session_rag_graph  # noqa: PLC0415
        from langchain_session_rag.prompt.budget import TokenBudget  # noqa: PLC0415

        budget = TokenBudget(context_window=self.context_window, reserve_for_answer=self.max_tokens)
        graph = create_session_rag_graph(self.model, self.memory, budget=budget, score_threshold=self.min_similarity)
        self._graph = graph.compile(checkpointer=InMemorySaver())

    def turn(self, text: str) -> Iterator[tuple[str, Any]]:
        """Answer one message, as events: the memories recalled, the answer's tokens, the whole answer.

        Yields ``("memories", docs)`` once, then ``("token", text)`` as the answer streams, then ``("answer", text)``.
        """
        from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage  # noqa: PLC0415

        from langchain_session_rag.graph.names import CALL_MODEL, RETRIEVE_MEMORIES  # noqa: PLC0415

        config = {"configurable": {"thread_id": self.session_id}}
        context = {"user_id": self.memory.user_id, "session_id": self.session_id}
        streamed: list[str] = []
        self._pending = (text, streamed)
        answer = ""
        for mode, chunk in self._graph.stream(
            {"messages": [HumanMessage(text)]}, config, context=context, stream_mode=["updates", "messages"]
        ):
            if mode == "messages":
                message, meta = chunk
                if isinstance(message, AIMessageChunk) and meta.get("langgraph_node") == CALL_MODEL and message.text:
                    streamed.append(message.text)
                    yield "token", message.text
            elif RETRIEVE_MEMORIES in chunk:
                yield "memories", (chunk[RETRIEVE_MEMORIES] or {}).get("memories", [])
            elif CALL_MODEL in chunk:
                reply = (chunk[CALL_MODEL] or {}).get("messages", [])
                answer = next((m.text for m in reply if isinstance(m, AIMessage)), "")
        self.turns += 1
        self._pending = None  # stored by the graph
        yield "answer", answer or "".join(streamed)

    def keep_interrupted(self) -> bool:
        """Store the question of a turn cut short, and the part of the answer shown, marked ``interrupted``.

        Returns:
            Whether there was such a turn to store.
        """
        if self._pending is None:
            return False
        question, streamed = self._pending
        partial = "".join(streamed).strip()
        exchange = [{"role": "user", "content": question}]
        if partial:
            exchange.append({"role": "assistant", "content": partial})
        self.memory.add_messages(
            exchange, session_id=self.session_id, metadata={"interrupted": True}, chunking="exchange"
        )
        self._pending = None  # only once stored: a failed attempt is retried (and reported) by close()
        self.turns += 1
        return True

    def forget_session(self, session_id: str | None = None) -> int:
        """Forget a session (this one by default, which then starts afresh); return the chunks removed."""
        self.memory.flush()
        target = session_id or self.session_id
        removed = self.memory.forget(session_id=target)
        self.forgot += removed
        if target == self.session_id:
            self.session_id = new_session_id()  # a new thread: the forgotten turns leave the window too
            self.turns = 0
        return removed

    def close(self) -> str:
        """End the chat: erase forgotten text, store what is pending, consolidate the session; say what was done.

        Each step runs even if one before it failed (the model server gone, say): forgotten text is erased first.
        """
        said: list[str] = []
        self.closing = True
        try:
            if self.keep_interrupted() or self._kept_on_signal:
                said.append("the interrupted question is kept, marked interrupted")
        except Exception as exc:  # noqa: BLE001 - reported; the next steps still run
            said.append(f"the interrupted question could NOT be stored ({exc})")
        if self.forgot:
            try:
                self.memory.compact()
                said.append(f"{self.forgot} forgotten chunk(s) erased from the store's files")
            except Exception as exc:  # noqa: BLE001 - reported; the next steps still run
                said.append(f"forgotten text NOT erased yet ({exc}); run `session-rag stats --compact`")
        try:
            self.memory.flush()
            done = self.memory.consolidate(self.session_id)
        except Exception as exc:  # noqa: BLE001
            said.insert(0, f"Session {self.session_id}: its last exchanges may not be stored ({exc})")
        else:
            grouped = f", grouped into {done.segments} topic segment(s)" if done.exchanges > done.segments else ""
            kept = f"Session {self.session_id} kept ({self.turns} exchange(s){grouped})"
            said.insert(0, kept if self.turns else f"Nothing was said in session {self.session_id}: nothing stored")
        return "; ".join(said) + "."


def snippet(doc: Document, question: str, width: int = 110) -> str:
    """The line of a memory that shares the most words with the question (a segment holds several exchanges)."""
    lines = [" ".join(line.split()) for line in doc.page_content.splitlines() if line.strip()] or [""]
    asked = set(tokenize(question))  # the retrieval's own words: stemmed, without stop words
    best = max(lines, key=lambda line: len(asked & set(tokenize(line))))  # the first of equals: max keeps it
    return shorten(best, width)


def _show_memories(docs: list[Document], question: str) -> None:
    if not docs:
        err.print("  (no memory recalled)", style="dim")
    for doc in docs:
        first = snippet(doc, question)
        score = doc.metadata.get("similarity")
        shown = f" ({score:.2f})" if isinstance(score, float) else ""
        err.print(printable(f"  recalled {doc.metadata.get('marker', '')} {first}{shown}"), style="dim")


def _command(session: ChatSession, line: str) -> bool:
    """Run a slash command; return whether the chat goes on."""
    name, _, arg = line.partition(" ")
    arg = arg.strip()
    if name in ("/quit", "/exit", "/q"):
        return False
    if name == "/help":
        out.print(HELP)
    elif name == "/sessions":
        table = Table("session", "last active", "chunks")
        for s in session.memory.list_sessions():
            here = " (this chat)" if s.session_id == session.session_id else ""
            table.add_row(
                s.session_id + here, f"{s.last_active:%Y-%m-%d %H:%M}" if s.last_active else "-", str(s.chunks)
            )
        out.print(table)
    elif name == "/forget":
        if arg and arg not in {s.session_id for s in session.memory.list_sessions()}:
            out.print(printable(f"No session {arg!r}: nothing forgotten (/sessions lists them)."))
            return True
        removed = session.forget_session(arg or None)
        which = f"session {arg}" if arg else "this session; a new one starts"
        out.print(f"Forgot {removed} chunk(s) of {which} (erased from the files when you quit).")
    elif name == "/core":
        core_command(session.memory, arg)
    else:
        out.print(f"Unknown command {name}; /help lists them.")
    return True


def core_command(memory: SessionVectorMemory, arg: str) -> None:
    """``/core``: show the core memory and pending edits; ``/core confirm ID`` / ``/core reject ID`` settle one."""
    core = memory.core
    verb, _, proposal = arg.partition(" ")
    if verb in {"confirm", "reject"} and proposal.strip():
        try:
            done = core.confirm(proposal.strip()) if verb == "confirm" else core.reject(proposal.strip())
        except SessionRAGError as exc:
            out.print(printable(str(exc)))
            return
        out.print(printable(f"{verb.capitalize()}ed edit {proposal.strip()} of block {done.block!r}."))
        return
    out.print(printable(core.render()) or "The core memory is empty.")
    for p in core.pending():
        out.print(printable(f"pending {p.id} ({p.author}, {p.block}, {p.action}): {p.text}"))


@cli.command()
@click.option("--model", envvar="SESSION_RAG_CHAT_MODEL", default="llama3.2", show_default=True,
              help="Ollama chat model [env SESSION_RAG_CHAT_MODEL].")  # fmt: skip
@click.option("--local", is_flag=True, help="Use the in-process SmolLM2-135M even if Ollama runs.")
@click.option("--max-tokens", type=click.IntRange(16, 4096), default=256, show_default=True,
              help="Longest answer; at most half the model's window (local model 1024, Ollama 2048).")  # fmt: skip
@click.option("--min-similarity", type=click.FloatRange(-1.0, 1.0), default=DEFAULT_SCORE_THRESHOLD, show_default=True,
              help="Recall only memories at least this similar to the question (cosine).")  # fmt: skip
@store_options
def chat(model: str, local: bool, max_tokens: int, min_similarity: float, **store: Any) -> None:
    """Chat with a model that remembers your earlier sessions (and your imported history)."""
    from langchain_session_rag.models.local_llm import LocalChatModel, pick_chat_model  # noqa: PLC0415
    from langchain_session_rag.server.chat_models import check_max_tokens  # noqa: PLC0415

    options = StoreOptions.of(store)
    with status("Choosing the chat model …"):
        if local:
            chosen: Any = LocalChatModel(max_tokens=max_tokens)
            described, window = "SmolLM2-135M in process (llama.cpp), as --local asked", 2048
        else:
            try:
                choice = pick_chat_model(model, host=options.ollama_host)
            except InvalidArgumentError as exc:
                msg = f"{exc} Fix it, or pass --local to chat with the in-process model."
                raise InvalidArgumentError(msg) from exc
            window = 2048 if choice.backend == "local" else 4096
            chosen = choice.model.model_copy(
                update={"max_tokens": max_tokens} if choice.backend == "local" else {"num_predict": max_tokens,
                                                                                      "num_ctx": window}
            )  # fmt: skip
            described = choice.description + (f" — {choice.fallback_reason}" if choice.fallback_reason else "")
        try:
            check_max_tokens(max_tokens, window, described.split(" — ")[0].split(", as")[0])
        except InvalidArgumentError as exc:
            raise click.UsageError(str(exc)) from None
        memory = options.memory()
        session = ChatSession(memory, chosen, window, max_tokens, min_similarity, describe=described.split(" — ")[0])
    err.print(f"Chat model: {described}")
    err.print(f"Memory of {memory.user_id!r} at {options.location}. Session {session.session_id}.")
    err.print("Type /help for commands, /quit to leave.")
    # Closing the terminal, `kill`: as Ctrl-C, but the question is stored first and the answer not awaited.
    previous = {sig: signal.signal(sig, _leaver(session)) for sig in _SIGNALS}
    try:
        _loop(session)
    finally:  # Ctrl-C at the prompt, or an error: what was said is still stored and consolidated
        try:
            with status("Saving the session …"):
                said = session.close()
        except KeyboardInterrupt:
            if session.forgot:
                err.print(
                    "Interrupted: forgotten text is NOT erased from the files yet: run `session-rag stats --compact`"
                )
            raise
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        err.print(said)


_SIGNALS = [s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None]


class _Leave(KeyboardInterrupt):
    """The chat was asked to end (SIGTERM, SIGHUP) while it answered: end it, do not just stop the answer."""


def _leaver(session: ChatSession) -> Callable[[int, object], None]:
    """The handler of SIGTERM and SIGHUP: end the chat as Ctrl-C at the prompt does, promptly.

    During an answer it first stores the question (and the part of the answer shown), then stops the local model's
    generation without waiting for it (the graph waits for its model call before it lets go, and an answer can run
    for many seconds: past a container's stop grace), then ends the chat: the session is kept, forgotten text erased.
    """

    def leave(signum: int, frame: object) -> None:
        del signum, frame
        if not session.closing and not session._kept_on_signal:  # noqa: SLF001 - never inside a store under way
            session.closing = True
            with contextlib.suppress(Exception):  # still pending if it fails: close() tries again and says why
                session._kept_on_signal = session.keep_interrupted()  # noqa: SLF001
        from langchain_session_rag.models._llama_server import stop_requests  # noqa: PLC0415

        stop_requests()
        raise _Leave

    return leave


def _typed() -> str | None:
    """The next line typed, stripped (bytes that are not UTF-8: U+FFFD); ``None`` on Ctrl-D or Ctrl-C."""
    try:
        typed = read_line("you> ")
    except KeyboardInterrupt:
        return None
    return None if typed is None else typed.strip().encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _loop(session: ChatSession) -> None:
    while True:
        line = _typed()
        if line is None:  # Ctrl-D or Ctrl-C at the prompt: leave
            out.print()
            return
        if not line:
            continue
        if line.startswith("/"):
            if not _command(session, line):
                return
            continue
        try:
            _answer(session, line)
        except _Leave:
            out.print()
            return
        except KeyboardInterrupt:  # Ctrl-C while the model answers: stop this answer, keep the chat and the question
            session.keep_interrupted()
            out.print("\n(answer interrupted; the question is kept)")
        except Exception as exc:
            if not is_connection_error(exc) and "ResponseError" not in type(exc).__name__:
                raise
            out.print()
            err.print(f"No answer: a model server did not answer ({exc}; chat model: {session.describe}). Try again.")


def _fault_point(name: str, *, wait: bool = True) -> None:
    """Tests only: announce a named point of a turn and wait there for the test's signal (see ``FAULT_ENV``)."""
    if os.environ.get(FAULT_ENV) == name:
        err.print(f"[fault point: {name}]")
        err.file.flush()
        if wait:
            time.sleep(60)  # a signal's handler ends the wait by raising


def _answer(session: ChatSession, line: str) -> None:
    started = False
    for kind, value in session.turn(line):
        if kind == "memories":
            _show_memories(value, line)
        elif kind == "token":
            first = not started
            if first:
                out.print("assistant> ", end="")
                started = True
            out.print(printable(value), end="")
            out.file.flush()
            if first:
                _fault_point("generating")
                _fault_point("held", wait=False)  # the local model holds the answer open
        elif kind == "answer" and not started:
            out.print(printable(f"assistant> {value or '(no answer)'}"), end="")
    out.print()
