"""Token-budgeted prompt assembly: one exact budget across instructions, history and retrieved context.

The prompt is laid out as: a system message (instructions, then the pinned core memory and the running summary,
each in its own delimited, quoted data block), the recent history (whole turns, in order), then one user message
holding the retrieved context in a delimited block followed by the current question.

Everything that is data (memory and document text, markers and sources from any retriever's metadata, pinned
notes, the summary) goes through :func:`quote_data` / :func:`safe_marker`: every line is quoted and no angle
bracket (nor a look-alike) survives, so data can neither open nor close a block, nor start an unquoted line.

Counting: each message costs ``tokens_per_message`` (3) plus its text's tokens, plus ``tokens_per_name`` (1)
when it has a name, and the reply is primed with ``reply_priming`` (3) tokens: the OpenAI chat format, which
is an upper bound for most chat templates. The assembled prompt never exceeds
``context_window − reserve_for_answer`` by this count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from langchain_session_rag._checks import check_documents, check_messages, check_text
from langchain_session_rag.errors import BudgetExceededError, InvalidArgumentError
from langchain_session_rag.models.tokens import DEFAULT_ENCODING, TokenCounter, get_encoding
from langchain_session_rag.prompt.history import split_turns
from langchain_session_rag.prompt.quoting import quote_data, safe_marker
from langchain_session_rag.prompt.report import AssembledPrompt, BudgetReport, SectionReport, recalled_memory
from langchain_session_rag.prompt.texts import (
    CONTEXT_CLOSE,
    CONTEXT_INTRO,
    CONTEXT_OPEN,
    CORE_CLOSE,
    CORE_MEMORY_HEADER,
    CORE_OPEN,
    DEFAULT_SYSTEM,
    MEMORY_INSTRUCTIONS,
    SUMMARY_CLOSE,
    SUMMARY_HEADER,
    SUMMARY_OPEN,
    UNCONFIRMED_CLOSE,
    UNCONFIRMED_HEADER,
    UNCONFIRMED_OPEN,
    context_intro,
)
from langchain_session_rag.prompt.truncation import truncate

Section = Literal["core_memory", "history", "summary", "relations", "memories", "documents"]
SECTIONS: tuple[Section, ...] = ("core_memory", "history", "summary", "relations", "memories", "documents")
"""The droppable sections, in default priority order (the system instructions are never dropped)."""
_TRUNCATABLE = frozenset({"core_memory", "summary", "memories", "documents"})
_MIN_TRUNCATED = 8  # never keep a truncated stub of fewer tokens than this
RELATIONS_MARK = "[R: relations from memory, with the markers of their sessions]"
DEFAULT_ALLOCATIONS: dict[str, float] = {
    "core_memory": 0.15,
    "history": 0.4,
    "summary": 0.1,
    "relations": 0.1,
    "memories": 0.3,
    "documents": 0.2,
}


@dataclass
class _Item:
    section: str
    rank: int
    pieces: list[str] | None = None  # head, body, tail (core, summary, memories, documents)
    messages: list[BaseMessage] | None = None  # a history turn
    cost: int = 0
    kept: bool = True
    truncated: bool = False


class TokenBudget(BaseModel):
    """An exact token budget for one prompt: instructions, history and retrieved context.

    Sections, in default priority order: pinned ``core_memory``, recent ``history`` (newest turns first, whole
    turns only), a running ``summary`` of older turns, retrieved ``memories`` (by score) and ``documents``.
    The system instructions and the question are never dropped. Each section may use its allocation (a
    fraction of what the instructions and the question leave, or an absolute number of tokens) plus whatever
    earlier sections left unused. If the result is still over the limit, the lowest-priority whole items are
    dropped first; only the last kept item of a section is ever truncated, at a token boundary, with a
    visible mark.

    Example:
        .. code-block:: python

            from langchain_core.documents import Document
            from langchain_core.messages import AIMessage, HumanMessage
            from langchain_session_rag import TokenBudget

            budget = TokenBudget(context_window=8192, reserve_for_answer=1024)
            prompt = budget.assemble(
                "Which database did we pick?",
                history=[HumanMessage("Hi"), AIMessage("Hello! How can I help?")],
                memories=[Document("User: We moved analytics to ClickHouse.",
                                   metadata={"marker": "[S: 2026-03-09]"})],
            )
            print(prompt.report)
            assert prompt.report.total <= 8192 - 1024
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    context_window: int = Field(gt=0)
    """The model's context window in tokens."""
    reserve_for_answer: int = Field(default=1024, ge=0)
    """Tokens kept free for the model's answer."""
    allocations: dict[str, float | int] | None = Field(default_factory=lambda: dict(DEFAULT_ALLOCATIONS))
    """Per-section caps: a float in (0, 1] is a share of the droppable budget, an int a number of tokens.
    ``None`` (or a missing section) means uncapped: pure priority order."""
    priorities: tuple[Section, ...] = SECTIONS
    """Section order, most important first."""
    token_counter: TokenCounter | None = None
    """Counts tokens of a text; defaults to tiktoken ``encoding_name``."""
    encoding_name: str = DEFAULT_ENCODING
    """The tiktoken encoding used when no ``token_counter`` is given (offline ``cl100k_base`` by default)."""
    tokens_per_message: int = Field(default=3, ge=0)
    tokens_per_name: int = Field(default=1, ge=0)
    reply_priming: int = Field(default=3, ge=0)
    system_prompt: str = DEFAULT_SYSTEM
    """The base instructions."""
    memory_instructions: str = MEMORY_INSTRUCTIONS
    """How to treat retrieved records (quoted data, cite markers, prefer the current conversation)."""

    _count: TokenCounter = PrivateAttr()

    @field_validator("allocations")
    @classmethod
    def _check_allocations(cls, value: dict[str, float | int] | None) -> dict[str, float | int] | None:
        for name, share in (value or {}).items():
            if name not in SECTIONS:
                msg = f"Unknown section {name!r} in allocations; sections are {list(SECTIONS)}."
                raise InvalidArgumentError(msg)
            if isinstance(share, bool) or share <= 0 or (isinstance(share, float) and share > 1):
                msg = f"Allocation of {name!r} must be a share in (0, 1] or a positive token count, got {share!r}."
                raise InvalidArgumentError(msg)
        return value

    @field_validator("priorities")
    @classmethod
    def _check_priorities(cls, value: tuple[Section, ...]) -> tuple[Section, ...]:
        if "relations" not in value and "memories" in value:  # an order written before the section existed
            at = list(value).index("memories")
            value = (*value[:at], "relations", *value[at:])
        if sorted(value) != sorted(SECTIONS):
            msg = f"priorities must order exactly the sections {list(SECTIONS)}, got {list(value)}."
            raise InvalidArgumentError(msg)
        return value

    @model_validator(mode="after")
    def _setup(self) -> TokenBudget:
        if self.reserve_for_answer >= self.context_window:
            msg = (
                f"reserve_for_answer ({self.reserve_for_answer}) must be smaller than context_window "
                f"({self.context_window})."
            )
            raise InvalidArgumentError(msg)
        if self.token_counter is not None:
            self._count = self.token_counter
        else:
            encoding = get_encoding(self.encoding_name)
            self._count = lambda text: len(encoding.encode(text, disallowed_special=()))
        return self

    @classmethod
    def from_tiktoken_encoder(cls, encoding_name: str = DEFAULT_ENCODING, **kwargs: Any) -> TokenBudget:
        """A budget counting with a tiktoken encoding (any name tiktoken knows; cl100k_base works offline)."""
        return cls(encoding_name=encoding_name, **kwargs)

    @property
    def limit(self) -> int:
        """Tokens the prompt may use."""
        return self.context_window - self.reserve_for_answer

    # -- counting -------------------------------------------------------------------------------
    def count_messages(self, messages: Sequence[BaseMessage], cache: dict[str, int] | None = None) -> int:
        """Exact token count of chat messages, formatting overhead included (see the module docs).

        ``cache`` maps texts to their counts, so a text counted earlier in the same turn is not counted again.
        """
        memo = {} if cache is None else cache
        return self.reply_priming + sum(self._message_cost(m, memo) for m in messages)

    def _message_cost(self, message: BaseMessage, cache: dict[str, int]) -> int:
        name_cost = self.tokens_per_name if message.name else 0
        return self.tokens_per_message + self._cached(message.text, cache) + name_cost

    # -- assembly -------------------------------------------------------------------------------
    def _items(  # noqa: PLR0917 - private, one argument per section
        self,
        history: Sequence[BaseMessage],
        core_memory: Sequence[str],
        summary: str | None,
        memories: Sequence[Document],
        documents: Sequence[Document],
        cache: dict[str, int],
        *,
        unconfirmed: str | None = None,
        relations: Sequence[str] = (),
    ) -> dict[str, list[_Item]]:
        def text_item(section: str, rank: int, head: str, body: str, tail: str = "") -> _Item:
            pieces = [head, body, tail]
            return _Item(section, rank, pieces=pieces, cost=sum(self._cached(p, cache) for p in pieces if p))

        items: dict[str, list[_Item]] = {name: [] for name in SECTIONS}
        for rank, note in enumerate(core_memory):
            head = f"\n\n{CORE_OPEN}\n{CORE_MEMORY_HEADER}\n"
            items["core_memory"].append(text_item("core_memory", rank, head, quote_data(note), f"\n{CORE_CLOSE}"))
        for rank, turn in enumerate(reversed(split_turns(history))):
            cost = sum(self._message_cost(m, cache) for m in turn)
            items["history"].append(_Item("history", rank, messages=list(turn), cost=cost))
        if summary:
            head = f"\n\n{SUMMARY_OPEN}\n{SUMMARY_HEADER}\n"
            items["summary"].append(text_item("summary", 0, head, quote_data(summary), f"\n{SUMMARY_CLOSE}"))
        if unconfirmed:  # a model's pending core memory edits: after the summary, dropped before it
            head = f"\n\n{UNCONFIRMED_OPEN}\n{UNCONFIRMED_HEADER}\n"
            body = quote_data(unconfirmed)
            items["summary"].append(text_item("summary", 1, head, body, f"\n{UNCONFIRMED_CLOSE}"))
        for rank, line in enumerate(relations):  # one item a line: the budget drops the last lines first
            head = "\n" if rank else f"\n\n{RELATIONS_MARK}\n"
            items["relations"].append(text_item("relations", rank, head, quote_data(line)))
        for section, docs in (("memories", memories), ("documents", documents)):
            for rank, doc in enumerate(docs):
                mark = safe_marker(doc.metadata.get("marker") or doc.metadata.get("source") or "[D: record]")
                items[section].append(text_item(section, rank, f"\n\n{mark}\n", quote_data(doc.page_content)))
        return items

    def _cached(self, text: str, cache: dict[str, int]) -> int:
        if text not in cache:
            cache[text] = self._count(text)
        return cache[text]

    def _render(self, system: str, items: dict[str, list[_Item]], question: str) -> list[BaseMessage]:
        core = "".join("".join(i.pieces or []) for i in items["core_memory"] if i.kept)
        summary = "".join("".join(i.pieces or []) for i in items["summary"] if i.kept)
        messages: list[BaseMessage] = [SystemMessage(system + core + summary)]
        kept_turns = [i.messages or [] for i in items["history"] if i.kept]
        for turn in reversed(kept_turns):
            messages.extend(turn)
        context = [i for s in ("relations", "memories", "documents") for i in items[s] if i.kept]
        if context:
            body = "".join("".join(i.pieces or []) for i in context)
            marks = [i.pieces[0] for i in context if i.pieces and i.section in {"memories", "documents"}]
            question = f"{CONTEXT_OPEN}\n{context_intro(marks)}{body}\n{CONTEXT_CLOSE}\n\n{question}"
        messages.append(HumanMessage(question))
        return messages

    def _cap(self, section: str, available: int) -> int | None:
        share = (self.allocations or {}).get(section)
        if share is None:
            return None
        return int(share * available) if isinstance(share, float) else int(share)

    def _allocate(self, items: dict[str, list[_Item]], available: int, report: dict[str, SectionReport]) -> None:
        """Phase 1: each section keeps the longest prefix of its items within its cap (plus carry)."""
        carry = 0
        for section in self.priorities:
            cap = self._cap(section, available)
            limit = None if cap is None else min(cap + carry, available)
            used = 0
            stop = False
            for item in items[section]:
                if stop:
                    item.kept = False
                    report[section].dropped_by_allocation += 1
                    continue
                if limit is None or used + item.cost <= limit:
                    used += item.cost
                    continue
                stop = True
                if not self._shrink(item, limit - used):
                    item.kept = False
                    report[section].dropped_by_allocation += 1
                else:
                    used += item.cost
            report[section].allocation = limit
            if limit is not None:  # an uncapped section passes the unused allocation on untouched
                carry = max(limit - used, 0)

    def _shrink(self, item: _Item, room: int) -> bool:
        """Truncate a text item to fit ``room`` tokens; False if it cannot keep a useful stub."""
        if item.section not in _TRUNCATABLE or item.pieces is None:
            return False
        head, body, tail = item.pieces
        frame_cost = self._count(head) + (self._count(tail) if tail else 0)
        if room - frame_cost < _MIN_TRUNCATED:
            return False
        cut = truncate(body, room - frame_cost, self._count, None if self.token_counter else self.encoding_name)
        if not cut:
            return False
        item.pieces = [head, cut, tail]
        item.cost = frame_cost + self._count(cut)
        item.truncated = True
        return True

    def _instructions(self, system: str | None) -> str:
        return f"{system if system is not None else self.system_prompt}\n\n{self.memory_instructions}"

    def _fixed_cost(self, base: str, question: str, cache: dict[str, int]) -> int:
        """Tokens of the parts never dropped (instructions, question, formatting); raises if over the limit."""
        system_cost = self._cached(base, cache)
        question_cost = self._cached(question, cache)
        fixed = self.reply_priming + 2 * self.tokens_per_message + system_cost + question_cost
        if fixed > self.limit:
            msg = (
                f"The instructions ({system_cost} tokens) and the question ({question_cost} tokens) need {fixed} "
                f"tokens with formatting, over the prompt limit of {self.limit} (context_window "
                f"{self.context_window} − reserve_for_answer {self.reserve_for_answer}). Shorten the question or "
                "the instructions, or raise the window."
            )
            raise BudgetExceededError(msg)
        return fixed

    def check_question(self, question: str, *, system: str | None = None) -> int:
        """The tokens the instructions and ``question`` need, checked before any retrieval or model call.

        :meth:`assemble` with the same question and instructions fails exactly when this does.

        Raises:
            BudgetExceededError: The instructions and the question alone do not fit the prompt limit.
            InvalidArgumentError: The question or the instructions are not text.
        """
        check_text("question", question)
        check_text("system", system, optional=True)
        return self._fixed_cost(self._instructions(system), question, {})

    def assemble(
        self,
        question: str,
        *,
        history: Sequence[BaseMessage] = (),
        memories: Sequence[Document] = (),
        documents: Sequence[Document] = (),
        core_memory: str | Sequence[str] | None = None,
        summary: str | None = None,
        system: str | None = None,
        unconfirmed_notes: str | None = None,
        relations: Sequence[str] = (),
    ) -> AssembledPrompt:
        """Lay out a prompt within the budget and report where the tokens went.

        Args:
            question: The current user message (never dropped).
            history: Recent conversation, oldest first; kept newest-first in whole turns.
            memories: Retrieved memories, best first (``metadata["marker"]`` is shown, e.g. ``[S: 2026-02-06]``).
            documents: Retrieved documents, best first (``[D: name]`` markers).
            core_memory: Pinned text always worth including (a user's MEMORY.md), or several notes.
            summary: The running summary of turns older than ``history``.
            system: Base instructions; defaults to ``system_prompt``.
            unconfirmed_notes: Core memory edits a model proposed and nobody confirmed yet: shown after the summary
                in their own block (``<unconfirmed_notes>``), apart from the pinned notes; dropped (counted in
                the ``summary`` section) when they do not fit.
            relations: Relation lines of the entities the question names (``memory.relation_lines``), each
                ending with its markers; shown first in the context block under ``[R: relations]``.

        Returns:
            The messages and the :class:`BudgetReport`.

        Raises:
            BudgetExceededError: If the instructions and the question alone do not fit.
            InvalidArgumentError: The question, system prompt or summary is not text.
        """
        check_text("question", question)
        check_text("system", system, optional=True)
        check_text("summary", summary, optional=True)
        check_text("unconfirmed_notes", unconfirmed_notes, optional=True)
        check_messages("history", history)
        check_documents("memories", memories)
        check_documents("documents", documents)
        for line in relations:
            check_text("relations line", line)
        if core_memory is not None and not isinstance(core_memory, str):
            if isinstance(core_memory, bytes) or not isinstance(core_memory, Sequence):
                msg = f"core_memory must be a string or a list of strings, got {type(core_memory).__name__}."
                raise InvalidArgumentError(msg)
            for note in core_memory:
                check_text("core_memory note", note)
        cache: dict[str, int] = {}
        base = self._instructions(system)
        notes = [core_memory] if isinstance(core_memory, str) else list(core_memory or [])
        items = self._items(
            history, [n for n in notes if n], summary, memories, documents, cache,
            unconfirmed=unconfirmed_notes, relations=[r for r in relations if r],
        )  # fmt: skip
        fixed = self._fixed_cost(base, question, cache)
        system_cost, question_cost = cache[base], cache[question]
        framing = self._count(f"{CONTEXT_OPEN}\n{CONTEXT_INTRO}\n{CONTEXT_CLOSE}\n\n")
        has_context = any(items["memories"]) or any(items["documents"]) or any(items["relations"])
        available = max(self.limit - fixed - (framing if has_context else 0), 0)
        sections: dict[str, SectionReport] = {name: SectionReport(allocation=None) for name in self.priorities}
        self._allocate(items, available, sections)
        # Phase 2: over the limit, drop the lowest-priority whole items first (truncating the last one if that
        # is enough), until the exact count of the rendered messages fits.
        messages = self._render(base, items, question)
        total = self.count_messages(messages, cache)
        while total > self.limit:
            kept = [i for s in self.priorities for i in items[s] if i.kept]  # most to least important
            if not kept:  # pragma: no cover - the fixed part fits, so an empty prompt fits
                break
            last = kept[-1]
            excess = total - self.limit
            if last.truncated or not self._shrink(last, last.cost - excess):
                last.kept = False
                sections[last.section].dropped_by_overflow += 1
            messages = self._render(base, items, question)
            total = self.count_messages(messages, cache)
        for section, section_report in sections.items():
            kept_items = [i for i in items[section] if i.kept]
            section_report.kept = len(kept_items)
            section_report.tokens = sum(i.cost for i in kept_items)
            section_report.truncated = any(i.truncated for i in kept_items)
        used = sum(r.tokens for r in sections.values())
        report = BudgetReport(
            context_window=self.context_window,
            reserve_for_answer=self.reserve_for_answer,
            limit=self.limit,
            total=total,
            system=system_cost,
            question=question_cost,
            overhead=total - used - system_cost - question_cost,
            sections=sections,
            recalled=[recalled_memory(memories[i.rank]) for i in items["memories"] if i.kept],
        )
        return AssembledPrompt(messages=messages, report=report)

    def count(self, text: str) -> int:
        """Tokens of a text with this budget's counter."""
        return self._count(check_text("text", text))
