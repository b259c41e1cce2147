"""Long-term conversational memory for LangChain and LangGraph: past sessions as a RAG corpus."""

from langchain_session_rag.conversation import ExchangeChunker
from langchain_session_rag.embeddings import LocalEmbeddings, get_default_embeddings
from langchain_session_rag.memory import SessionVectorMemory

__all__ = ["ExchangeChunker", "LocalEmbeddings", "SessionVectorMemory", "get_default_embeddings"]
