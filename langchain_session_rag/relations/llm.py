"""``LLMExtractor``: entities and relations by any LangChain chat model with structured output.

The same interface as :class:`~langchain_session_rag.relations.patterns.PatternExtractor`, so a memory takes either
(``SessionVectorMemory(relation_extractor=LLMExtractor(model))``). It costs a model call per stored chunk; a call that
fails or answers outside the schema falls back to the patterns for that chunk (counted in ``fallbacks``), so a
write never fails or loses its findings because the model did.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from langchain_session_rag import _fork
from langchain_session_rag.errors import InvalidArgumentError
from langchain_session_rag.relations.model import Extraction, Extractor, Mention, Statement, safe_name
from langchain_session_rag.relations.patterns import PatternExtractor
from langchain_session_rag.relations.vocabulary import ENTITY_TYPES, SPEAKER, Predicate, canonical

_LOG = logging.getLogger(__name__)

INSTRUCTIONS = """Extract the entities and relations a person states as facts in this chat excerpt.
Relations (predicate: meaning): uses (a project, team or person uses a technology or tool), runs_on (runs on, is
deployed to or hosted on a platform), caused_by (a bug or incident caused by something), fixed_by (a problem fixed by
something), decided (the decision phrase after "decided to", "went with"), lives_in, works_at, owns (a thing or
animal), named (a thing or pet is called a name), birthday (a person's birthday, as written).
The speaker saying "I" or "we" is "{speaker}". A switch or move ("from X to Y", "replaced X with Y", "left X and
joined Y") is the new relation with "closes": X. Skip questions, plans, hypotheticals, negations, and what the
assistant only suggests. Names as short as the text allows, without articles. Entity types: {types}."""


class _Entity(BaseModel):
    name: str = Field(description="The entity as written, without an article.")
    type: str = Field(description="person, project, technology, place, organisation, pet, date or thing.")


class _Relation(BaseModel):
    subject: str
    predicate: Predicate
    object: str
    closes: str | None = Field(default=None, description="The old object a switch or move replaced, if named.")


class Findings(BaseModel):
    """What the model returns: the entities and relations of the text."""

    entities: list[_Entity] = Field(default_factory=list)
    relations: list[_Relation] = Field(default_factory=list)


class LLMExtractor:
    """Entities and relations by a chat model's structured output (``with_structured_output(Findings)``).

    Example:
        .. code-block:: python

            from langchain_core.language_models import FakeListChatModel  # any chat model: ChatOllama, ...
            from langchain_session_rag.relations import LLMExtractor

            extractor = LLMExtractor(FakeListChatModel(responses=['{"entities": [], "relations": []}']))
            print(extractor.extract("User: We use Redis."))  # a model that cannot answer in the schema: patterns
    """

    def __init__(
        self, model: BaseChatModel, *, instructions: str = INSTRUCTIONS, fallback: Extractor | None = None
    ) -> None:
        """Extract with ``model`` (any LangChain chat model); ``instructions`` has ``{speaker}`` and ``{types}``.

        ``fallback`` extracts a chunk the model failed on (default: a :class:`PatternExtractor`); ``fallbacks``
        counts those chunks.

        Raises:
            InvalidArgumentError: ``model`` is not a chat model.
        """
        if not isinstance(model, BaseChatModel):
            msg = f"LLMExtractor needs a LangChain chat model, got {type(model).__name__}."
            raise InvalidArgumentError(msg)
        self.model = model
        self.instructions = instructions
        self.fallbacks = 0
        """Chunks the model failed on, extracted by the patterns instead."""
        self._fallback: Extractor = fallback if fallback is not None else PatternExtractor()
        self._lock = _fork.lock()
        self._structured: Any = None

    def _runnable(self) -> Any:
        with self._lock:
            if self._structured is None:
                self._structured = self.model.with_structured_output(Findings)
            return self._structured

    def extract(self, text: str, *, speaker: str = SPEAKER) -> Extraction:
        """The entities and relations the model finds in ``text`` (the patterns' when the model fails)."""
        prompt = self.instructions.format(speaker=speaker, types=", ".join(ENTITY_TYPES))
        try:
            found = self._runnable().invoke([SystemMessage(prompt), HumanMessage(text)])
            if isinstance(found, dict):
                found = Findings.model_validate(found)
            if not isinstance(found, Findings):
                msg = f"the model answered {type(found).__name__}, not the findings"
                raise InvalidArgumentError(msg)  # noqa: TRY301 - one fallback path for every failure
        except Exception as error:  # noqa: BLE001 - any model failure: the patterns keep the write whole
            with self._lock:
                self.fallbacks += 1
            _LOG.warning("LLMExtractor: %s; %s extracted this chunk.", error, type(self._fallback).__name__)
            return self._fallback.extract(text, speaker=speaker)
        entities = tuple(
            Mention(_name(e.name), e.type if e.type in ENTITY_TYPES else "thing")
            for e in found.entities
            if _name(e.name)
        )
        relations = tuple(
            Statement(_name(r.subject), r.predicate, _name(r.object), _name(r.closes) if r.closes else None)
            for r in found.relations
            if _name(r.subject) and _name(r.object)
        )
        return Extraction(entities, relations)


def _name(text: str) -> str:
    """A model's name for something: one line, no brackets, a known technology under its canonical name."""
    return canonical(safe_name(text))
