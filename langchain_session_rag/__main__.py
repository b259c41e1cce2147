"""``python -m langchain_session_rag``: the ``session-rag`` command."""

from langchain_session_rag.cli import run

run()
