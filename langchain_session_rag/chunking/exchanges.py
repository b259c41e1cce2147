"""Exchange chunking: a user turn plus the replies that follow it, split at logical breaks when long."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from langchain_session_rag._time import utcnow
from langchain_session_rag.chunking.messages import Turn, escape_labels
from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.models.tokens import TokenCounter, tiktoken_counter


@dataclass
class Chunk:
    """A piece of conversation text ready to embed, with the messages it covers."""

    text: str
    message_ids: list[str]
    timestamp: datetime
    token_count: int
    part: int = 0
    parts: int = 1
    skipped_blocks: int = 0
    roles: list[str] = field(default_factory=list)
    exchanges: int = 1
    """How many exchanges the chunk holds (more than one only when short exchanges were merged)."""
    speakers: list[str] = field(default_factory=list)
    """The distinct speaker labels of the chunk's messages, in order of first appearance (``Turn.label``)."""


_FENCE = re.compile(r"(^```.*?(?:\n```[^\n]*|\Z))", re.DOTALL | re.MULTILINE)
_MAX_TOKEN_CHARS = 128
"""No cl100k token spans more than 128 bytes (so more than 128 characters)."""
_STEP = re.compile(r"^\u200b?\s*(?:\d+[.)]|[-*•])\s+")


def _blocks(text: str) -> list[str]:
    """Split text at logical breaks: fenced code blocks, paragraphs, numbered or bulleted steps."""
    blocks: list[str] = []
    for piece in _FENCE.split(text):
        if not piece.strip():
            continue
        if piece.startswith("```"):
            blocks.append(piece.strip("\n"))
            continue
        for para in re.split(r"\n\s*\n", piece):
            if not para.strip():
                continue
            current: list[str] = []
            for line in para.strip("\n").split("\n"):
                if _STEP.match(line) and current:
                    blocks.append("\n".join(current))
                    current = []
                current.append(line)
            if current:
                blocks.append("\n".join(current))
    return blocks


def _iterable(value: object) -> Sequence[object]:
    return value if isinstance(value, Sequence) else [value]


class ExchangeChunker(BaseModel):
    """Cuts a conversation into exchange chunks: a user turn plus the replies that follow it.

    Rules:
        * Messages before the first user turn (a system prompt, a greeting) join the first exchange.
        * Consecutive user turns with no reply between them form one exchange.
        * An exchange under ``min_tokens`` merges with its previous neighbour (the next one if it is
          first), as long as the result stays within ``max_tokens`` and the two are adjacent in time (at most
          ``merge_within`` apart). A merged chunk says so: its ``exchanges`` count is above one. The chunker
          has no embedding model, so it cannot tell whether two short exchanges share a topic:
          ``SessionVectorMemory`` therefore uses ``min_tokens=0`` (every exchange its own chunk) and leaves the
          grouping of exchanges to its topic segmenter.
        * An exchange over ``max_tokens`` is split at fenced code blocks, numbered steps and
          paragraphs (then lines, then words); each later part starts with the user question again.
        * System messages are kept unless ``include_system=False``.

    Token counts use ``token_counter`` (tiktoken ``cl100k_base`` by default).

    Example:
        .. code-block:: python

            from langchain_session_rag.chunking import ExchangeChunker
            from langchain_session_rag.chunking import normalize_messages

            turns = normalize_messages(
                [{"role": "user", "content": "Hi, how do I persist Chroma?"},
                 {"role": "assistant", "content": "Use chromadb.PersistentClient(path=...)."}],
                session_id="s1",
            )
            chunks = ExchangeChunker().chunk(turns)
            assert chunks[0].text.startswith("User: Hi")
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    min_tokens: int = Field(default=24, ge=0)
    """Exchanges shorter than this merge with a neighbour (0: never)."""
    merge_within: timedelta = timedelta(minutes=30)
    """Short exchanges further apart in time than this are never merged (messages without a time count as
    adjacent)."""
    max_tokens: int = Field(default=256, ge=32)
    """Exchanges longer than this are split into parts (all-MiniLM reads about 256 word pieces)."""
    include_system: bool = True
    """Whether system messages are stored. With ``False`` they are left out on purpose."""
    token_counter: TokenCounter | None = None
    """Counts tokens of a text; defaults to tiktoken ``cl100k_base``."""
    _count: TokenCounter = PrivateAttr()

    @model_validator(mode="after")
    def _validate(self) -> ExchangeChunker:
        if self.min_tokens >= self.max_tokens:
            msg = f"min_tokens ({self.min_tokens}) must be smaller than max_tokens ({self.max_tokens})."
            raise InvalidArgumentError(msg)
        self._count = self.token_counter or tiktoken_counter()
        return self

    @property
    def count(self) -> TokenCounter:
        """The token counter in use."""
        return self._count

    def _size(self, text: str, limit: int) -> int:
        """Tokens of ``text``, or ``limit + 1`` when it is surely longer than ``limit`` tokens.

        With the default cl100k counter no token spans more than 128 characters, so a text of more than
        ``128 × limit`` characters is over the limit without counting it (counting a megabyte takes time).
        """
        if self.token_counter is None and len(text) > _MAX_TOKEN_CHARS * limit:
            return limit + 1
        return self._count(text)

    # -- grouping ------------------------------------------------------------------------------
    def group(self, turns: Sequence[Turn]) -> list[list[Turn]]:
        """Group turns into exchanges (before merging or splitting)."""
        groups: list[list[Turn]] = []
        answered = False  # the current group has a user turn followed by a reply
        for turn in turns:
            if turn.role == "system" and not self.include_system:
                continue
            if not groups or (turn.role == "user" and answered):
                groups.append([turn])
                answered = False
                continue
            has_user = any(t.role == "user" for t in groups[-1])
            groups[-1].append(turn)
            answered = answered or (has_user and turn.role != "user")
        return groups

    @staticmethod
    def render(turns: Sequence[Turn]) -> str:
        """Render turns as ``User: …`` / ``Assistant: …`` lines (a speaker-like line in a message is escaped)."""
        return "\n".join(t.line for t in turns)

    def _adjacent(self, before: Sequence[Turn], after: Sequence[Turn]) -> bool:
        """Whether two exchanges are at most ``merge_within`` apart (untimed messages count as adjacent)."""
        end = next((t.timestamp for t in reversed(before) if t.timestamp is not None), None)
        start = next((t.timestamp for t in after if t.timestamp is not None), None)
        return end is None or start is None or abs(start - end) <= self.merge_within

    def _merge_short(self, groups: list[list[Turn]]) -> list[tuple[list[Turn], int]]:
        """The exchanges, short ones merged with an adjacent neighbour; each with its count of exchanges."""
        if not self.min_tokens:  # nothing is short, and no exchange needs its tokens counted
            return [(list(group), 1) for group in groups]
        merged: list[tuple[list[Turn], int]] = []
        sizes: list[int] = []
        for group in groups:
            size = self._size(self.render(group), self.max_tokens)
            if (
                merged
                and (size < self.min_tokens or sizes[-1] < self.min_tokens)
                and self._adjacent(merged[-1][0], group)
            ):
                combined = merged[-1][0] + group
                combined_size = self._count(self.render(combined))
                if combined_size <= self.max_tokens:
                    merged[-1] = (combined, merged[-1][1] + 1)
                    sizes[-1] = combined_size
                    continue
            merged.append((list(group), 1))
            sizes.append(size)
        return merged

    # -- splitting -----------------------------------------------------------------------------
    def _split_hard(self, text: str, budget: int) -> list[str]:
        """Split one block that exceeds ``budget`` by lines, then by words, then by characters.

        Linear in the text: each unit is counted once, and each piece once more to confirm it fits (token
        counts of joined text are close to, but not always exactly, the sum of the parts).
        """
        sep = "\n" if "\n" in text else " "
        pieces: list[str] = []
        current: list[str] = []
        estimate = 0
        sep_cost = 1
        for unit in text.split(sep):
            cost = self._size(unit, budget)
            if cost > budget:
                pieces.extend(self._confirmed(current, sep, budget))
                current, estimate = [], 0
                pieces.extend(self._split_hard(unit, budget) if sep == "\n" else self._split_chars(unit, budget))
                continue
            if current and estimate + sep_cost + cost > budget:
                pieces.extend(self._confirmed(current, sep, budget))
                current, estimate = [], 0
            estimate += cost + (sep_cost if current else 0)
            current.append(unit)
        pieces.extend(self._confirmed(current, sep, budget))
        return [p for p in pieces if p]

    def _confirmed(self, units: list[str], sep: str, budget: int) -> list[str]:
        """Join units into one piece, or into halves when the joined text does not fit after all."""
        if not units:
            return []
        text = sep.join(units)
        if len(units) == 1 or self._count(text) <= budget:
            return [text]
        half = len(units) // 2
        return [*self._confirmed(units[:half], sep, budget), *self._confirmed(units[half:], sep, budget)]

    def _split_chars(self, word: str, budget: int) -> list[str]:
        """Split a text without separators into pieces of at most ``budget`` tokens (a few counts a piece)."""
        if not word:
            return []
        sample = word[:4096]
        per_token = max(len(sample) / max(self._count(sample), 1), 0.25)
        pieces: list[str] = []
        start = 0
        while start < len(word):
            end = self._fit(word, start, budget, per_token)
            pieces.append(word[start:end])
            start = end
        return pieces

    def _fit(self, text: str, start: int, budget: int, per_token: float) -> int:
        """An end such that ``text[start:end]`` fits ``budget`` (at least one character), near the longest."""
        rest = len(text) - start
        good, bad = 1, rest + 1
        guess = min(rest, max(1, int(budget * per_token * 0.9)))
        for _ in range(8):
            if self._count(text[start : start + guess]) <= budget:
                good = guess
                if guess == rest:
                    break
            else:
                bad = guess
            if bad - good <= max(1, good // 32):
                break
            guess = min(rest, good * 2, (good + bad) // 2) if bad <= rest else min(rest, good + max(1, good // 4))
        return start + good

    def _head(self, turns: Sequence[Turn]) -> tuple[str, str | None]:
        question = next((t for t in turns if t.role == "user"), None)
        if question is None:
            return "", None
        budget = self.max_tokens // 4
        text = question.line
        if self._count(text) > budget:
            text = self._split_hard(text, budget - 2)[0] + " …"
        return text, question.id

    def _split_long(self, turns: list[Turn]) -> list[tuple[str, list[str]]]:
        head, head_id = self._head(turns)
        head_cost = self._count(head) + 1 if head else 0
        body_budget = self.max_tokens - head_cost
        # (turn index, block text) units, each within the per-part body budget.
        units: list[tuple[int, str]] = []
        for i, turn in enumerate(turns):
            label_cost = self._count(f"{turn.label}: ") + 1
            for block in _blocks(turn.shown) or [turn.shown]:
                if self._size(block, body_budget) + label_cost <= body_budget:
                    units.append((i, block))
                else:
                    units.extend((i, piece) for piece in self._split_hard(block, body_budget - label_cost))
        parts = self._pack(turns, units, head, head_cost)
        result = []
        for n, part in enumerate(parts):
            text = self._render_units(turns, part, "" if n == 0 else head)
            ids = [turns[i].id for i in dict.fromkeys(i for i, _ in part)]
            if n > 0 and head_id is not None and head_id not in ids:
                ids.insert(0, head_id)
            result.append((text, ids))
        return result

    def _pack(
        self, turns: Sequence[Turn], units: list[tuple[int, str]], head: str, head_cost: int
    ) -> list[list[tuple[int, str]]]:
        """Pack units into parts of at most ``max_tokens``: each unit counted once, each part confirmed once."""
        parts: list[list[tuple[int, str]]] = []
        current: list[tuple[int, str]] = []
        estimate = 0
        for unit in units:
            i, block = unit
            cost = self._count(block) + (
                2 if current and current[-1][0] == i else self._count(f"{turns[i].label}: ") + 1
            )
            start = (head_cost if parts else 0) if not current else 0
            if current and estimate + cost > self.max_tokens:
                parts.extend(self._confirmed_part(turns, current, head, first=not parts))
                current, estimate = [], 0
                start = head_cost
            estimate += start + cost
            current.append(unit)
        if current or not parts:
            parts.extend(self._confirmed_part(turns, current, head, first=not parts))
        return parts

    def _confirmed_part(
        self, turns: Sequence[Turn], units: list[tuple[int, str]], head: str, *, first: bool
    ) -> list[list[tuple[int, str]]]:
        """The units as one part, or as halves when the rendered part does not fit after all."""
        text = self._render_units(turns, units, "" if first else head)
        if len(units) <= 1 or self._count(text) <= self.max_tokens:
            return [units]
        half = len(units) // 2
        left = self._confirmed_part(turns, units[:half], head, first=first)
        return [*left, *self._confirmed_part(turns, units[half:], head, first=False)]

    @staticmethod
    def _render_units(turns: Sequence[Turn], units: Sequence[tuple[int, str]], head: str) -> str:
        lines: list[str] = [head] if head else []
        last = -1
        for i, block in units:
            if i == last:
                lines[-1] = f"{lines[-1]}\n\n{escape_labels(block, first=True)}"  # a piece split at words
            else:
                lines.append(f"{turns[i].label}: {block}")
                last = i
        return "\n".join(lines)

    # -- public --------------------------------------------------------------------------------
    def split_text(self, text: str) -> list[str]:
        """Split plain text (a reference document) into pieces of at most ``max_tokens``.

        Pieces break at fenced code blocks, paragraphs and list items, then lines, then words.
        """
        pieces: list[str] = []
        current = ""
        for block in _blocks(text) or [text]:
            for unit in [block] if self._count(block) <= self.max_tokens else self._split_hard(block, self.max_tokens):
                candidate = f"{current}\n\n{unit}" if current else unit
                if current and self._count(candidate) > self.max_tokens:
                    pieces.append(current)
                    current = unit
                else:
                    current = candidate
        if current:
            pieces.append(current)
        return pieces

    def chunk(self, turns: Sequence[Turn], *, default_timestamp: datetime | None = None) -> list[Chunk]:
        """Cut validated turns into exchange chunks.

        Args:
            turns: The turns of one session, in order.
            default_timestamp: The time of chunks whose messages (and all earlier ones) carry
                none; usually the ingest time.

        Returns:
            Chunks in conversation order. Every turn (but system turns when
            ``include_system=False``) is covered by at least one chunk.
        """
        if isinstance(turns, str | bytes) or not all(isinstance(t, Turn) for t in _iterable(turns)):
            msg = "chunk() takes the turns of normalize_messages(...), a list of Turn; got " + type(turns).__name__
            raise InvalidArgumentError(msg)
        fallback = default_timestamp or utcnow()
        # A message with no timestamp inherits the latest earlier one of the batch.
        stamped: dict[str, datetime] = {}
        last: datetime | None = None
        for turn in turns:
            last = turn.timestamp or last
            if last is not None:
                stamped[turn.id] = last
        chunks: list[Chunk] = []
        for group, exchanges in self._merge_short(self.group(turns)):
            text = self.render(group)
            size = self._size(text, self.max_tokens)
            pieces = [(text, [t.id for t in group])] if size <= self.max_tokens else self._split_long(group)
            by_id = {t.id: t for t in group}
            for n, (piece, ids) in enumerate(pieces):
                first = by_id[ids[0]]
                chunks.append(
                    Chunk(
                        text=piece,
                        message_ids=ids,
                        timestamp=stamped.get(first.id, fallback),
                        token_count=size if len(pieces) == 1 else self._count(piece),
                        part=n,
                        parts=len(pieces),
                        skipped_blocks=sum(by_id[i].skipped_blocks for i in ids),
                        roles=[by_id[i].role for i in ids],
                        speakers=list(dict.fromkeys(by_id[i].label for i in ids)),
                        exchanges=exchanges,
                    )
                )
        return chunks
