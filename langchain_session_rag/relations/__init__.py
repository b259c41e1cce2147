"""The relational layer: who and what the memories are about, how they relate, and since when.

Extractors find entities and relations in a chunk's text (:class:`PatternExtractor`, no model;
:class:`LLMExtractor`, any chat model); a user's :class:`RelationGraph` aggregates them with validity and provenance.
"""

from langchain_session_rag.relations.graph import EntityInfo, Relation, RelationGraph, Source
from langchain_session_rag.relations.llm import LLMExtractor
from langchain_session_rag.relations.model import Extraction, Extractor, Mention, Statement
from langchain_session_rag.relations.patterns import PatternExtractor
from langchain_session_rag.relations.vocabulary import PREDICATES

__all__ = [
    "PREDICATES",
    "EntityInfo",
    "Extraction",
    "Extractor",
    "LLMExtractor",
    "Mention",
    "PatternExtractor",
    "Relation",
    "RelationGraph",
    "Source",
    "Statement",
]
