"""Importers: conversations from ChatGPT exports, OpenAI-format chats, LangChain dumps and markdown files."""

from langchain_session_rag.importers.files import read_conversations
from langchain_session_rag.importers.ingest import aimport_conversations, import_conversations
from langchain_session_rag.importers.types import ImportedConversation, ImportReport

__all__ = [
    "ImportReport",
    "ImportedConversation",
    "aimport_conversations",
    "import_conversations",
    "read_conversations",
]
