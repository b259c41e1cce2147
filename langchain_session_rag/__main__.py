"""``python -m langchain_session_rag demo``."""

from langchain_session_rag.cli import main

main()
