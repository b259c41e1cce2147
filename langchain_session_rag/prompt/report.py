"""What a budgeted prompt holds and where its tokens went."""

from __future__ import annotations

from dataclasses import dataclass, field

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage


@dataclass
class SectionReport:
    """Where a section's tokens went."""

    allocation: int | None
    """Cap in tokens (its allocation plus what earlier sections left unused); ``None``: uncapped."""
    tokens: int = 0
    kept: int = 0
    dropped_by_allocation: int = 0
    dropped_by_overflow: int = 0
    truncated: bool = False


@dataclass
class RecalledMemory:
    """A memory the prompt kept, and why it is there."""

    id: str | None
    marker: str
    why: str
    """The recall policy's reasons (similarity, worth, repeats folded, superseded or superseding), or the score."""


def recalled_memory(doc: Document) -> RecalledMemory:
    """What the report says of a kept memory: its id, marker and reasons (``metadata["why"]``, else its score)."""
    meta = doc.metadata
    score = meta.get("score")
    why = meta.get("why") or (f"score {score:.2f}" if isinstance(score, int | float) else "given by the caller")
    return RecalledMemory(id=doc.id, marker=str(meta.get("marker") or ""), why=str(why))


@dataclass
class BudgetReport:
    """Tokens per section, items dropped or truncated, total and headroom."""

    context_window: int
    reserve_for_answer: int
    limit: int
    """``context_window − reserve_for_answer``: what the prompt may use."""
    total: int
    """Exact token count of the assembled messages, formatting overhead included."""
    system: int
    question: int
    overhead: int
    """Per-message formatting, reply priming and the context block's delimiters."""
    sections: dict[str, SectionReport] = field(default_factory=dict)
    memory_mode: str = "top_k"
    """How the memories were chosen: ``"top_k"`` (ranked retrieval) or ``"all"`` (the whole memory fitted)."""
    recalled: list[RecalledMemory] = field(default_factory=list)
    """The memories the prompt kept, best first, each with why it is there."""

    @property
    def headroom(self) -> int:
        """Tokens left under the limit."""
        return self.limit - self.total

    def __str__(self) -> str:
        """A small table, for logs and notebooks."""
        lines = [f"{'section':<13}{'tokens':>8}{'kept':>6}{'dropped':>9}  note"]
        lines.append(f"{'system':<13}{self.system:>8}{'':>6}{'':>9}")
        for name, s in self.sections.items():
            dropped = s.dropped_by_allocation + s.dropped_by_overflow
            note = "truncated" if s.truncated else ""
            if s.allocation is not None:
                note = f"cap {s.allocation} {note}".strip()
            lines.append(f"{name:<13}{s.tokens:>8}{s.kept:>6}{dropped:>9}  {note}")
        lines.append(f"{'question':<13}{self.question:>8}")
        lines.append(f"{'overhead':<13}{self.overhead:>8}")
        lines.append(
            f"total {self.total} of {self.limit} (window {self.context_window} − answer {self.reserve_for_answer}); "
            f"headroom {self.headroom}"
        )
        return "\n".join(lines)


@dataclass
class AssembledPrompt:
    """The chat messages to send, and the report of how the budget was spent."""

    messages: list[BaseMessage]
    report: BudgetReport
