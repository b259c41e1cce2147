"""Cutting a text to a token allowance at a token boundary, with the truncation mark."""

from __future__ import annotations

from collections.abc import Callable

from langchain_session_rag.models.tokens import get_encoding
from langchain_session_rag.prompt.texts import TRUNCATION_MARK


def truncate(text: str, tokens: int, count: Callable[[str], int], encoding_name: str | None) -> str:
    """The longest prefix of ``text`` that, with the truncation mark, fits ``tokens`` by ``count``.

    With ``encoding_name`` (a tiktoken encoding) the cut is made on that encoding's tokens; otherwise (a custom
    counter) on characters, by bisection.
    """
    room = tokens - count(TRUNCATION_MARK)
    if room <= 0:
        return ""
    if encoding_name is not None:
        encoding = get_encoding(encoding_name)
        ids = encoding.encode(text, disallowed_special=())
        cut = encoding.decode(ids[:room])
        while cut and count(cut + TRUNCATION_MARK) > tokens:
            room -= 1
            cut = encoding.decode(ids[:room])
    else:
        lo, hi = 0, len(text)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count(text[:mid] + TRUNCATION_MARK) <= tokens:
                lo = mid
            else:
                hi = mid - 1
        cut = text[:lo]
    return cut + TRUNCATION_MARK if cut else ""
