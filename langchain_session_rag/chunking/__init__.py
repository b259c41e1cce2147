"""Turning conversations into chunks: messages, exchange chunks (a user turn and its reply), topic segments."""

from langchain_session_rag.chunking.exchanges import Chunk, ExchangeChunker
from langchain_session_rag.chunking.messages import Turn, normalize_messages
from langchain_session_rag.chunking.segmenter import Segment, SimilarityProfile, TopicSegmenter

__all__ = ["Chunk", "ExchangeChunker", "Segment", "SimilarityProfile", "TopicSegmenter", "Turn", "normalize_messages"]
