"""Exception types raised by ``langchain-session-rag``.

Every error says what was wrong, shows the offending value, and says what to do.
Every one derives from :class:`SessionRAGError`, and also from the built-in exception code would have caught
before (``ValueError``, ``TypeError``, ``RuntimeError``, ``ImportError``, ``ConnectionError``), so that code keeps
working. ``tests/unit_tests/test_error_family.py`` checks that no public path raises a bare built-in.
"""

from __future__ import annotations

__all__ = [
    "BudgetExceededError",
    "CoreMemoryConflictError",
    "CoreMemoryFullError",
    "DuplicateMessageIdError",
    "EmbeddingModelMismatchError",
    "EmptyConversationError",
    "EncryptionKeyError",
    "FileAccessError",
    "IdentityConflictError",
    "ImportFormatError",
    "ImportLimitError",
    "InvalidArgumentError",
    "InvalidMessageError",
    "InvalidMetadataError",
    "InvalidRequestError",
    "InvalidStorePathError",
    "InvalidTimestampError",
    "MessageTooLargeError",
    "MissingDependencyError",
    "QuestionTooLongError",
    "ReadOnlyNamespaceError",
    "SessionRAGError",
    "StoreLockedError",
    "StoreUnavailableError",
    "StoreWriteError",
    "UnknownOptionError",
    "UnsupportedOperationError",
]


class SessionRAGError(Exception):
    """Base class of every error raised by this package."""


class InvalidArgumentError(SessionRAGError, ValueError, TypeError):
    """A bad argument to a Python call: the wrong type, out of its range, or an unfit id.

    The one error of a bad argument on every path that takes it: a ``user_id`` or ``session_id`` (blank, not text,
    too long, a control character), ``k``, a time bound (``since``/``until``), a size or limit, a threshold or
    weight outside ``[0, 1]``, a filter, a namespace, an unknown core memory block, and a bad option of a factory
    or of a class that is not a pydantic model (a pydantic model's constructor reports a bad field as pydantic's
    ``ValidationError``, whose message is this error's). Nothing was read or written.

    It is both a ``ValueError`` and a ``TypeError``, so code catching either keeps working. See ``docs/errors.md``.
    """


class InvalidMessageError(SessionRAGError, ValueError):
    """A message of a conversation batch is malformed (role, content, type).

    Nothing of the batch that contained it was stored.
    """


class EmptyConversationError(InvalidMessageError):
    """A conversation batch holds no message, or no message with text."""


class DuplicateMessageIdError(InvalidMessageError):
    """Two messages of one batch carry the same ``id``."""


class ImportFormatError(InvalidMessageError):
    """A file given to an importer is not in a format it reads (or not in the one it was read as); nothing stored."""


class InvalidTimestampError(InvalidMessageError, InvalidArgumentError):
    """A timestamp could not be parsed as ISO 8601, a ``datetime`` or epoch seconds (or a phrase, where one is read).

    The one error of a time that does not parse, wherever it is given: a message's timestamp, a time bound
    (``since``, ``until``, ``before``) or a ``time_window`` phrase. Since 0.7 also an :class:`InvalidArgumentError`
    (a bound is an argument); a bound that parses but is out of order is an ``InvalidArgumentError`` itself.
    """


class MessageTooLargeError(InvalidMessageError):
    """A message is longer than the memory's ``max_message_chars``; nothing of its batch was stored."""


class InvalidMetadataError(SessionRAGError, ValueError):
    """Metadata a store cannot keep faithfully: a reserved or empty key, an operator key, NaN, a huge integer."""


class UnknownOptionError(SessionRAGError, TypeError):
    """A keyword option the call does not know: a ``TypeError``, as Python's own unknown-keyword error is.

    Not a ``ValueError``: a pydantic model given an unknown option in a settings dict (``search_kwargs``) raises
    it as is, rather than inside a ``ValidationError``.
    """


class EmbeddingModelMismatchError(SessionRAGError, RuntimeError):
    """The store was written by a different embedding model than the one in use.

    Vectors of different models are incompatible: similarity between them is noise.
    """


class EncryptionKeyError(SessionRAGError, RuntimeError):
    """A master key that is malformed, missing for an encrypted store, or not the key the store was encrypted with.

    Nothing is written when it is raised: a wrong key never re-encrypts or overwrites what is stored.
    """


class UnsupportedOperationError(SessionRAGError, RuntimeError):
    """The configured vector store cannot perform the requested operation."""


class MissingDependencyError(SessionRAGError, ImportError):
    """An optional dependency is not installed; the message names the install command."""


class BudgetExceededError(SessionRAGError, ValueError):
    """The parts of a prompt that cannot be dropped (instructions and the question) do not fit its budget."""


class CoreMemoryFullError(BudgetExceededError):
    """A core memory block would go over its token limit; nothing was changed (core memory is never truncated)."""


class CoreMemoryConflictError(SessionRAGError, RuntimeError):
    """Other processes kept editing the same core memory block while this edit was applied; retry it."""


class InvalidRequestError(InvalidArgumentError):
    """A graph run's input that cannot be answered: the HTTP 422 of a server running the graph.

    Raised by the graphs of ``create_session_rag_graph`` and ``create_memory_agent_graph`` for their input only
    (no messages, a last message that is not a user turn or is empty, a malformed message, a missing or unfit
    ``user_id``/``session_id`` in ``context`` or ``config["configurable"]``), before any work: no cache lookup,
    retrieval or model call ran, nothing was streamed, stored or checkpointed.

    Since 0.7 it is a subclass of :class:`InvalidArgumentError` (a graph's input is the argument of its run): code
    catching ``InvalidArgumentError`` catches it too. A bad argument to any other call raises
    ``InvalidArgumentError`` itself (before 0.7 some raised this class).
    """


class StoreLockedError(SessionRAGError, RuntimeError):
    """Another process has this embedded store open: an embedded Chroma store has one writer process.

    Run a Chroma server for several processes (``SessionVectorMemory.server(...)``).
    """


class StoreUnavailableError(SessionRAGError, ConnectionError):
    """The Chroma server did not answer in time (down, restarting, unreachable, frozen past a call's deadline).

    Retryable: try again when the server is back. A write cut off by its deadline may still be applied by the server;
    sending it again is safe, since records are stored by ids derived from their content.
    """


class FileAccessError(SessionRAGError, OSError):
    """A file given to the package cannot be read or written (missing, a folder, no permission); nothing changed."""


class InvalidStorePathError(SessionRAGError, ValueError):
    """The path given for an embedded store cannot be a store folder (it is a file, or cannot be created)."""


class StoreWriteError(SessionRAGError, RuntimeError):
    """A write sent to the store in the background failed; its chunks were not stored."""


class IdentityConflictError(SessionRAGError, ValueError):
    """A run names two different users (or sessions), or a user other than the one a memory serves.

    Either its ``context`` and ``config["configurable"]`` disagree, or a memory bound to one user is run for another.

    Nothing was read or written: guessing which user was meant could show one user's memories to another.
    """


class ImportLimitError(ImportFormatError):
    """A file to import goes over a reading limit (its size, a line, a zip's ratio, JSON nesting); nothing stored.

    ``path`` is the file, ``limit`` the limit it went over and ``seen`` the bytes (or levels) read when it was refused:
    reading stops at the limit, so ``seen`` is never more than ``limit`` plus one read.
    """

    def __init__(self, message: str, *, path: str = "", limit: int = 0, seen: int = 0) -> None:
        """Keep the message, the file, the limit and what was read when it was refused."""
        super().__init__(message)
        self.path = path
        self.limit = limit
        self.seen = seen


class ReadOnlyNamespaceError(InvalidRequestError):
    """A write (put or delete) into a shared store namespace that runs may only read; nothing was changed.

    The application grants writes with ``SessionMemoryStore(..., writable_shared=[prefix])`` or writes itself with
    ``store.put_shared(...)``.
    """


class QuestionTooLongError(InvalidRequestError, BudgetExceededError):
    """A graph run's question that cannot fit the prompt budget with the instructions (an HTTP 413).

    Raised before the run starts (and again by the graph's first node), before any retrieval, model call or
    streamed token. An :class:`InvalidRequestError` (a graph input) and a :class:`BudgetExceededError`.
    OpenAI-compatible servers answer it as OpenAI does, 400 ``context_length_exceeded`` (``session-rag serve``);
    LangGraph's server reports it as the run's error.
    """
