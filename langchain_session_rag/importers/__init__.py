"""Importers: conversations from ChatGPT exports, OpenAI-format chats, LangChain dumps and markdown files."""
