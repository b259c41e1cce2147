"""The Search page: a question and the memories the graph would put in its prompt, with every part of their score."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from langchain_core.documents import Document

from langchain_session_rag.errors import SessionRAGError
from langchain_session_rag.memory.ranking import decayed_score
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.prompt.budget import TokenBudget
from langchain_session_rag.server.schemas import RETRYABLE
from langchain_session_rag.server.ui.html import esc, field, notice, session_url, table, url

SECONDS_PER_DAY = 86_400.0
SNIPPET_CHARS = 220
"""The most characters of a memory the results show (its session's page shows it whole)."""


@dataclass(frozen=True)
class SearchSettings:
    """What the graph's retrieval uses: top ``k`` at least ``min_similarity`` similar, laid out in ``budget``."""

    budget: TokenBudget
    k: int = 4
    min_similarity: float = 0.1


def _number(value: object, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "-"


def recency_factor(memory: SessionVectorMemory, doc: Document, now: float) -> float | None:
    """What recency multiplied the memory's relevance by (``None``: no decay configured)."""
    if memory.half_life_days is None:
        return None
    epoch = doc.metadata.get("timestamp_epoch")
    age = (now - float(epoch)) / SECONDS_PER_DAY if isinstance(epoch, int | float) else 0.0
    return decayed_score(1.0, age_days=age, half_life_days=memory.half_life_days, recency_weight=memory.recency_weight)


def _row(mine: SessionVectorMemory, rank: int, doc: Document, kept: set[str], budget: TokenBudget) -> list[str]:
    meta = doc.metadata
    boost = f"+{mine.time_boost:.2f}" if meta.get("time_window") else "0"
    session = str(meta.get("session_id") or "")
    opens = f'aria-label="{esc(meta.get("marker", ""))}: open its session"'
    where = f'<a href="{session_url(session)}" {opens}>{esc(meta.get("marker", ""))}</a>' if session else ""
    snippet = " ".join(doc.page_content.split())
    snippet = snippet if len(snippet) <= SNIPPET_CHARS else snippet[: SNIPPET_CHARS - 1] + "…"
    return [
        str(rank),
        f'{where} <span class="memory">{esc(snippet)}</span>',
        _number(meta.get("similarity")),
        _number(meta.get("lexical")),
        _number(recency_factor(mine, doc, time.time()), 2),
        esc(boost),
        _number(meta.get("score")),
        str(budget.count(doc.page_content)),
        "yes" if doc.id in kept else "no (over the budget)",
    ]


async def search_body(mine: SessionVectorMemory, question: str, settings: SearchSettings) -> str:
    """The search form and, for a question, its memories with their scores and the tokens they take."""
    form = (
        f'<form method="get" action="{url("search")}" role="search" aria-label="Search memories" class="filters">'
        + field(
            "q",
            "Question",
            value=question,
            kind="search",
            hint="What you would ask; the memories shown are those the graph would recall for it.",
        )
        + '<button type="submit">Search</button></form>'
    )
    if not question.strip():
        return form
    try:
        docs = await mine.ainvoke(
            question, k=settings.k, score_threshold=settings.min_similarity, source_type=["session", "note"]
        )
        core = await asyncio.to_thread(mine.core.render) if docs else ""
        prompt = settings.budget.assemble(question, memories=docs, core_memory=core or None)
    except RETRYABLE:
        raise  # the store does not answer: 503 with Retry-After, the API's rule
    except SessionRAGError as exc:
        return form + notice(str(exc), kind="error")
    report = prompt.report
    kept = {r.id for r in report.recalled if r.id}
    section = report.sections["memories"]
    rows = [_row(mine, i, d, kept, settings.budget) for i, d in enumerate(docs, 1)]
    heads = ["Rank", "Memory", "Similarity", "Lexical", "Recency ×", "Time boost", "Score", "Tokens", "In the prompt"]
    summary = (
        f'<p role="status">{len(docs)} memories at least {settings.min_similarity:g} similar (top {settings.k}); '
        f"the prompt keeps {section.kept}, taking {section.tokens:,} tokens. The whole prompt would be "
        f"{report.total:,} of {report.limit:,} tokens ({report.context_window:,}-token window, "
        f"{report.reserve_for_answer:,} kept for the answer).</p>"
    )
    explain = (
        '<p class="hint">Score = similarity fused with the lexical (BM25) score, times the recency factor, plus the '
        "time boost when the question names a time the memory lies in. Recency “-”: the memory has no "
        "<code>half_life_days</code>, so age does not count.</p>"
    )
    results = table(f"Memories recalled for “{question}”", heads, rows,
                    empty="Nothing in memory is similar enough to this question.")  # fmt: skip
    return form + summary + results + explain
