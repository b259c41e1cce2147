"""Checkpoint growth of the graph with ``SqliteSaver``: bytes on disk per turn, by configuration.

One thread of N turns (default 1,000) through ``create_session_rag_graph`` with the real embedded memory, a
fake zero-latency chat model (answers of about 60 words), and questions drawn from the bundled sample sessions.
Configurations: the prompt kept in the state (the behaviour before it was dropped) or not, and LangGraph's
durability ``"async"`` (the default: a checkpoint per super-step) or ``"exit"`` (one per turn).
Run: bash scripts/benchmark.sh checkpoint_growth [turns]
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
import time
from importlib.resources import files
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_embeddings import CachedEmbeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_session_rag import SessionVectorMemory, get_default_embeddings
from langchain_session_rag.graph import create_session_rag_graph

RESULTS = Path(__file__).parent / "results"
ANSWER = ("That is a good question. " * 12).strip()


def questions() -> list[str]:
    sessions = json.loads(files("langchain_session_rag").joinpath("data/sample_sessions.json").read_text("utf-8"))
    return [m["content"] for s in sessions["sessions"] for m in s["messages"] if m["role"] == "user"]


def db_bytes(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def run(turns: int, *, keep_prompt: bool, durability: str, embeddings: CachedEmbeddings) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp())
    memory = SessionVectorMemory.local(path=folder / "m", user_id="anyone", embeddings=embeddings)
    model = GenericFakeChatModel(messages=iter([AIMessage(ANSWER)] * turns))
    qs = questions()
    db = folder / "cp.sqlite"
    sizes = {}
    t0 = time.perf_counter()
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = create_session_rag_graph(model, memory, keep_prompt=keep_prompt).compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "t"}}
        for turn in range(turns):
            question = f"{qs[turn % len(qs)]} (turn {turn})"
            graph.invoke({"messages": [HumanMessage(question)]}, config, context={"user_id": "u", "session_id": "s"},
                         durability=durability)  # fmt: skip
            if turn + 1 in (20, turns):
                sizes[turn + 1] = db_bytes(db)
        memory.flush()
    return {
        "keep_prompt": keep_prompt,
        "durability": durability,
        "turns": turns,
        "db_bytes": sizes[turns],
        "bytes_per_turn": round(sizes[turns] / turns),
        "bytes_per_turn_after_20": round((sizes[turns] - sizes[20]) / (turns - 20)),
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    embeddings = CachedEmbeddings(get_default_embeddings())
    rows = [
        run(turns, keep_prompt=True, durability="async", embeddings=embeddings),
        run(turns, keep_prompt=False, durability="async", embeddings=embeddings),
        run(turns, keep_prompt=False, durability="exit", embeddings=embeddings),
    ]
    payload = {"benchmark": "checkpoint_growth", "date": time.strftime("%Y-%m-%d"), "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "checkpoint_growth.json").write_text(json.dumps(payload, indent=1) + "\n")
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
