"""Models: the bundled embeddings, the local chat model and Ollama selection, token counting."""

from langchain_session_rag.models.embeddings import LocalEmbeddings, get_default_embeddings
from langchain_session_rag.models.local_llm import LocalChatModel, default_chat_model, ollama_models, pick_chat_model
from langchain_session_rag.models.multilingual import MultilingualEmbeddings
from langchain_session_rag.models.tokens import TokenCounter, tiktoken_counter

__all__ = [
    "LocalChatModel",
    "LocalEmbeddings",
    "MultilingualEmbeddings",
    "TokenCounter",
    "default_chat_model",
    "get_default_embeddings",
    "ollama_models",
    "pick_chat_model",
    "tiktoken_counter",
]
