"""What the relational layer costs: extraction per exchange at ingest, the graph's build, a question's lines.

On LoCoMo dev (every conversation stored under one user, once and four times over, exchanges as the memory stores
them, the bundled embedding model), through the public API:

- **extraction**: ``PatternExtractor().extract`` on every stored chunk's text (ms per chunk, median and p95);
- **graph build**: the first ``relation_lines`` after a write (the user's graph rebuilt from every chunk's
  findings), and a later one with nothing changed (the graph reused, only the chunks' revisions compared);
- **chat turn**: one more exchange stored, then ``relation_lines`` of a question (what the graph's node pays per
  turn when the user's memory changed).

Data: ``--data PATH``, else ``$LOCOMO_PATH``. Run:
    python benchmarks/relations_cost.py [--copies 1 4] [--out benchmarks/results/relations_cost.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.evaluation import load_locomo
from langchain_session_rag.relations import PatternExtractor

RESULTS = Path(__file__).parent / "results"
QUESTIONS = ("What did Caroline research for her career?", "Where did Melanie go camping with her kids?",
             "What does Jon's dance studio use?", "Who did Gina meet at the fair?", "What did John buy?")  # fmt: skip


def _ms(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {"median_ms": round(1000 * statistics.median(ordered), 3),
            "p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 3)}  # fmt: skip


def measure(data: str, copies: int) -> dict[str, Any]:
    """Store every conversation ``copies`` times for one user and time the layer."""
    memory = SessionVectorMemory.local(path=tempfile.mkdtemp(), user_id="bench", chunking="exchange")
    for copy in range(copies):
        for conv in load_locomo(data):
            for session in conv.sessions:
                messages = [{k: v for k, v in m.items() if k != "id"} for m in session.messages]
                memory.add_messages(messages, session_id=f"{copy}-{conv.sample_id}-{session.session_id}")
    total = memory.count()
    texts = [d.page_content for at in range(0, total, 1000) for d in memory.list_memories(limit=1000, offset=at)]
    extractor = PatternExtractor()
    times = []
    for text in texts:
        started = time.perf_counter()
        extractor.extract(text)
        times.append(time.perf_counter() - started)
    started = time.perf_counter()
    memory.relation_lines(QUESTIONS[0])
    build = time.perf_counter() - started
    reuse = []
    for question in QUESTIONS:
        started = time.perf_counter()
        memory.relation_lines(question)
        reuse.append(time.perf_counter() - started)
    turns = []
    for n, question in enumerate(QUESTIONS):
        memory.add_messages([{"role": "user", "content": f"We moved the app number {n} from Heroku to Fly.io."}],
                            session_id=f"turn-{n}")  # fmt: skip
        started = time.perf_counter()
        memory.relation_lines(question)
        turns.append(time.perf_counter() - started)
    return {"copies": copies, "chunks": memory.count(), "extraction_per_chunk": _ms(times),
            "graph_build_ms": round(1000 * build, 1), "unchanged_lines": _ms(reuse), "after_a_turn": _ms(turns),
            "entities": len(memory.entities()), "relations": len(memory.relations("Caroline"))}  # fmt: skip


def main() -> None:
    """Measure at each size and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("LOCOMO_PATH"))
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--out", default=str(RESULTS / "relations_cost.json"))
    args = parser.parse_args()
    if not args.data:
        parser.error("give --data PATH or set LOCOMO_PATH")
    rows = []
    for copies in args.copies:
        rows.append(measure(args.data, copies))
        print(json.dumps(rows[-1]), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
