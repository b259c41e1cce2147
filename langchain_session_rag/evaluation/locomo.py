"""LoCoMo evidence recall: how much of what a question needs does the memory retrieve?

:func:`evaluate_locomo` measures a memory (see its docstring and :func:`score_question`); the scoring functions are
public so that other sweeps (``benchmarks/locomo.py``) score the same way.

Example:
    .. code-block:: python

        from langchain_session_rag.evaluation import evaluate_locomo, load_locomo

        report = evaluate_locomo(load_locomo("locomo10.json"), source="locomo10.json")
        print(report.data)
        print(report.recall_at_tokens[512])
        # {'single': ..., 'multi': ..., 'temporal': ..., 'open': ..., 'adv': ..., 'overall': ...}
"""

from __future__ import annotations

import functools
import os
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from langchain_session_rag.errors import InvalidArgumentError, InvalidStorePathError, UnknownOptionError
from langchain_session_rag.evaluation.locomo_data import (
    CATEGORIES,
    LocomoConversation,
    describe_locomo,
)
from langchain_session_rag.memory.retriever import SessionVectorMemory
from langchain_session_rag.models.embeddings import get_default_embeddings
from langchain_session_rag.models.tokens import tiktoken_counter
from langchain_session_rag.stores.base import decode_message_ids

DEFAULT_KS = (1, 5, 10, 25)
"""Retrieved-chunk counts recall is reported at."""
DEFAULT_BUDGETS = (256, 512, 1024)
"""Prompt-token budgets recall is reported within."""
_RESERVED = {
    "user_id": "each conversation is stored under its sample id",
    "embeddings": "pass embeddings= instead",
    "vectorstore": "the evaluation uses its own temporary store",
    "chroma_client": "the evaluation uses its own temporary store",
    "user_from_run": "each conversation is stored under its sample id",
}


# -- scoring -----------------------------------------------------------------------------------
def prompt_tokens(docs: Sequence[Document], count: Callable[[str], int], *, with_marker: bool = True) -> list[int]:
    """The prompt tokens each retrieved chunk costs: its ``metadata["marker"]`` and its text, or the text only."""
    return [count(_prompt_text(d) if with_marker else d.page_content) for d in docs]


def recall_within_budget(
    evidence: Collection[str], docs: Sequence[Document], costs: Sequence[int], budget: int
) -> float:
    """Recall (0-1) of the longest rank-order prefix of whole chunks whose ``costs`` fit ``budget``.

    Raises:
        InvalidArgumentError: No evidence, or not one cost per document.
    """
    wanted = _evidence_set(evidence)
    if len(costs) != len(docs):
        msg = f"One cost per document is needed: {len(costs)} costs for {len(docs)} documents."
        raise InvalidArgumentError(msg)
    got: set[str] = set()
    spent = 0
    for doc, cost in zip(docs, costs, strict=True):
        if spent + cost > budget:
            break
        spent += cost
        got.update(_message_ids(doc))
    return len(wanted & got) / len(wanted)


def score_question(
    evidence: Collection[str],
    docs: Sequence[Document],
    count: Callable[[str], int],
    *,
    ks: Sequence[int] = DEFAULT_KS,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    with_markers: bool = True,
) -> dict[str, float]:
    """Recall (0-1) of one question's evidence turns by its retrieved chunks, in rank order.

    A chunk covers the turns of its ``metadata["message_ids"]``.

    Args:
        evidence: The ids of the turns that answer the question (at least one).
        docs: The retrieved chunks, best first.
        count: Counts the tokens of a text (e.g. :func:`~langchain_session_rag.models.tokens.tiktoken_counter`).
        ks: Chunk counts: ``"k5"`` is the recall of the first 5 chunks.
        budgets: Prompt-token budgets: ``"t512"`` is the recall of the whole chunks, in rank order, that fit 512
            tokens, each costing its marker and text (see :func:`prompt_tokens`).
        with_markers: Count each chunk's ``[S: date]`` marker with its text (the prompt's cost); ``False`` counts
            the text only (chunk text tokens, as LoCoMo comparisons usually do).

    Returns:
        ``{"k1": ..., "k5": ..., "t256": ..., "t512": ...}``, one key per k and per budget.

    Raises:
        InvalidArgumentError: No evidence, or a k or budget that is not a positive integer.
    """
    wanted = _evidence_set(evidence)
    scores: dict[str, float] = {}
    for k in _sizes("ks", ks):
        got = {m for d in docs[:k] for m in _message_ids(d)}
        scores[f"k{k}"] = len(wanted & got) / len(wanted)
    costs = prompt_tokens(docs, count, with_marker=with_markers)
    for budget in _sizes("budgets", budgets):
        scores[f"t{budget}"] = recall_within_budget(wanted, docs, costs, budget)
    return scores


def recall_table(scores: Iterable[Mapping[str, Any]], key: str) -> dict[str, float]:
    """Mean recall in percent, one decimal, per category and ``"overall"`` (every question weighs the same).

    Args:
        scores: One row per question: its ``"category"`` name and its scores (see :func:`score_question`).
        key: The score to average, e.g. ``"t512"``.

    Raises:
        InvalidArgumentError: No rows, or a row without ``key`` or ``"category"``.
    """
    rows = list(scores)
    if not rows or any(key not in row or "category" not in row for row in rows):
        msg = f"recall_table needs rows with 'category' and {key!r}, got {len(rows)} rows."
        raise InvalidArgumentError(msg)
    by_category: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        by_category[row["category"]].append(row[key])
    table = {
        name: round(100 * statistics.fmean(by_category[name]), 1) for name in CATEGORIES.values() if by_category[name]
    }
    table["overall"] = round(100 * statistics.fmean(row[key] for row in rows), 1)
    return table


def _prompt_text(doc: Document) -> str:
    marker = doc.metadata.get("marker")
    return f"{marker} {doc.page_content}" if marker else doc.page_content


def _message_ids(doc: Document) -> list[str]:
    return decode_message_ids(doc.metadata.get("message_ids"))


def _evidence_set(evidence: Collection[str]) -> set[str]:
    wanted = set(evidence)
    if not wanted:
        msg = "A question without evidence cannot be scored: give the ids of the turns that answer it."
        raise InvalidArgumentError(msg)
    return wanted


def _sizes(name: str, values: Sequence[int]) -> tuple[int, ...]:
    """Distinct positive integers, ascending."""
    if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
        msg = f"{name} must be positive integers (at least one), got {list(values)!r}."
        raise InvalidArgumentError(msg)
    return tuple(sorted(set(values)))


# -- the evaluation ----------------------------------------------------------------------------
@dataclass(frozen=True)
class LocomoReport:
    """Evidence recall of one configuration of the memory on LoCoMo conversations."""

    data: str
    """The data measured, in one line: name, conversations, turns, questions with evidence."""
    conversations: list[str]
    """The sample ids evaluated."""
    questions: int
    """Questions with evidence, all scored."""
    chunks: int
    """Units the memory stored."""
    mean_chunk_tokens: float
    """Mean cl100k tokens of a stored unit's text."""
    recall_at_k: dict[int, dict[str, float]]
    """k → recall % (one decimal) per category present and ``"overall"``, of the first k chunks retrieved."""
    recall_at_tokens: dict[int, dict[str, float]]
    """Prompt-token budget → recall % of the whole chunks, in rank order, whose marker and text fit it (the text
    only when ``with_markers`` is false)."""
    seconds: float
    """Wall-clock time of the evaluation (ingest and retrieval)."""
    with_markers: bool = True
    """Whether the budgets counted each chunk's marker with its text."""

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (the tables' keys as text)."""
        data = asdict(self)
        for table in ("recall_at_k", "recall_at_tokens"):
            data[table] = {str(size): row for size, row in data[table].items()}
        return data


def evaluate_locomo(
    conversations: Sequence[LocomoConversation],
    *,
    path: str | os.PathLike[str] | None = None,
    embeddings: Embeddings | None = None,
    memory_options: Mapping[str, Any] | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    progress: Callable[[int, int], None] | None = None,
    source: str | None = None,
    with_markers: bool = True,
) -> LocomoReport:
    """Ingest each conversation into a fresh embedded store and score every question with evidence.

    Each conversation is stored under its own ``user_id`` (its sample id), one ``add_messages`` call per session,
    by a ``SessionVectorMemory`` with the package's defaults unless ``memory_options`` says otherwise; each
    question retrieves ``memory.invoke(question, k=2 * max(ks))``. Tokens are counted with cl100k.

    Args:
        conversations: From :func:`load_locomo`.
        path: A folder to create the temporary store in (created if missing); the system's temporary folder by
            default. The store is removed afterwards either way.
        embeddings: The embedding model; the bundled all-MiniLM-L6-v2 by default.
        memory_options: ``SessionVectorMemory`` options, e.g. ``{"chunking": "exchange", "lexical_weight": 0.5}``
            (a ``segmenter`` must be built with the same ``embeddings`` object).
        ks: Chunk counts to report recall at.
        budgets: Prompt-token budgets to report recall within.
        progress: Called after each question with (questions done, questions to score).
        source: How the report names the data (e.g. the file name).
        with_markers: Budgets count each chunk's marker and text (the default, the prompt's real cost), or its text
            only (``False``).

    Returns:
        The report.

    Raises:
        InvalidArgumentError: No question with evidence, two conversations with one sample id, a bad k or budget,
            or a ``memory_options`` key the evaluation sets itself.
        UnknownOptionError: A ``memory_options`` key that is no ``SessionVectorMemory`` option.
        InvalidStorePathError: ``path`` cannot be a folder.
    """
    ks, budgets = _sizes("ks", ks), _sizes("budgets", budgets)
    options = _memory_options(memory_options)
    ids = [c.sample_id for c in conversations]
    if len(set(ids)) != len(ids):
        msg = f"Each conversation needs its own sample id (it is the user id), got {ids!r}."
        raise InvalidArgumentError(msg)
    total = sum(1 for c in conversations for q in c.questions if q.evidence)
    if total == 0:
        msg = f"No question with evidence to score in {describe_locomo(conversations, source=source)}."
        raise InvalidArgumentError(msg)
    model = embeddings or get_default_embeddings()
    count = functools.cache(tiktoken_counter())  # each retrieved text counted once
    rows: list[dict[str, Any]] = []
    unit_tokens: list[int] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="locomo-eval-", dir=_parent(path), ignore_cleanup_errors=True) as root:
        for conv in conversations:
            memory = SessionVectorMemory.local(root, user_id=conv.sample_id, embeddings=model, **options)
            for session in conv.sessions:
                memory.add_messages(session.messages, session_id=session.session_id)
            unit_tokens.extend(count(r.text) for r in memory.backend.get(conv.sample_id, {}))
            for q in conv.questions:
                if not q.evidence:
                    continue
                docs = memory.invoke(q.question, k=max(ks) * 2)
                rows.append(
                    {
                        "category": q.category,
                        **score_question(q.evidence, docs, count, ks=ks, budgets=budgets, with_markers=with_markers),
                    }
                )
                if progress is not None:
                    progress(len(rows), total)
    return LocomoReport(
        data=describe_locomo(conversations, source=source),
        conversations=ids,
        questions=len(rows),
        chunks=len(unit_tokens),
        mean_chunk_tokens=round(statistics.fmean(unit_tokens), 1) if unit_tokens else 0.0,
        recall_at_k={k: recall_table(rows, f"k{k}") for k in ks},
        recall_at_tokens={b: recall_table(rows, f"t{b}") for b in budgets},
        seconds=round(time.perf_counter() - started, 1),
        with_markers=with_markers,
    )


def _memory_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    chosen = dict(options or {})
    for key in chosen:
        if key in _RESERVED:
            msg = f"memory_options cannot set {key!r}: {_RESERVED[key]}."
            raise InvalidArgumentError(msg)
        if key not in SessionVectorMemory.model_fields:
            msg = f"memory_options has {key!r}, which is no SessionVectorMemory option ('chunking', 'k', ...)."
            raise UnknownOptionError(msg)
    return chosen


def _parent(path: str | os.PathLike[str] | None) -> str | None:
    """The folder to create the temporary store in (created when missing), or ``None`` for the system's."""
    if path is None:
        return None
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        msg = f"Cannot create the evaluation's store in {str(folder)!r}: {exc.strerror or exc}; give a folder path."
        raise InvalidStorePathError(msg) from exc
    return str(folder)
