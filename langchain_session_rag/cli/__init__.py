"""The ``session-rag`` command line: chat with memory, import chat exports, search, forget, export, stats, eval."""

from langchain_session_rag.cli import chat, core, demo, evaluate, keys, relations, serve, store_commands, ui
from langchain_session_rag.cli.app import cli, main, run
from langchain_session_rag.cli.demo import load_sample, run_demo

__all__ = [
    "chat",
    "cli",
    "core",
    "demo",
    "evaluate",
    "keys",
    "load_sample",
    "main",
    "relations",
    "run",
    "run_demo",
    "serve",
    "store_commands",
    "ui",
]
