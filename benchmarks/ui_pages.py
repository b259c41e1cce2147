"""How long the memory browser's pages take to render as the memory grows (not a timed test).

Usage::

    python benchmarks/ui_pages.py [--data PATH] [--copies 1 4] [--repeats 5] [--questions 20]

Stores LoCoMo's sessions (``--data``, ``$LOCOMO_PATH``, else the bundled sample), each conversation's sessions
``COPIES`` times under new session ids (the store grows, the text stays real), in an embedded store with the bundled
embedding model (vectors computed once per text; the Search page's questions are embedded live). Then asks the
pages in process (FastAPI's TestClient, no network), signed in as the store's user: the sessions list, the list
filtered by text and by time, the largest session, Search with LoCoMo's questions, the core memory page. Each page
once unmeasured, then ``--repeats`` times; medians.

Writes ``benchmarks/results/ui_pages.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).parent))

from bench_embeddings import CachedEmbeddings
from fastapi.testclient import TestClient
from locomo_data import add_data_argument, data_path, describe, load

from langchain_session_rag import SessionVectorMemory, get_default_embeddings
from langchain_session_rag.server import Authenticator
from langchain_session_rag.server.ui import create_ui_app

RESULTS = Path(__file__).resolve().parent / "results" / "ui_pages.json"
TOKEN = "benchmark-token-0123456789"  # noqa: S105 - a local benchmark's token


def timed_get(http: TestClient, path: str, repeats: int) -> float:
    """Median milliseconds of ``GET path`` (after one unmeasured request); refuses a page that is not a 200."""
    first = http.get(path)
    if first.status_code != 200:
        msg = f"{path}: {first.status_code}"
        raise RuntimeError(msg)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        http.get(path)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def measure(memory: SessionVectorMemory, questions: list[str], repeats: int) -> dict[str, Any]:
    app = create_ui_app(memory, auth=Authenticator.for_one_user(TOKEN, memory.user_id))
    http = TestClient(app, base_url="http://127.0.0.1")
    http.get(f"/ui/login?token={TOKEN}")
    sessions = memory.list_sessions()
    largest = max(sessions, key=lambda s: s.chunks)
    search = [timed_get(http, f"/ui/search?q={quote(q)}", 1) for q in questions]
    return {
        "sessions": len(sessions),
        "chunks": memory.count(),
        "sessions_ms": timed_get(http, "/ui/sessions", repeats),
        "filter_text_ms": timed_get(http, "/ui/sessions?q=painting+kids", repeats),
        "filter_time_ms": timed_get(http, "/ui/sessions?when=2023-05", repeats),
        "largest_session_ms": timed_get(http, f"/ui/sessions/{quote(largest.session_id)}", repeats),
        "largest_session_chunks": largest.chunks,
        "search_ms": statistics.median(search),
        "core_ms": timed_get(http, "/ui/core", repeats),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(parser)
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 4], help="Store sizes: copies of each session.")
    parser.add_argument("--repeats", type=int, default=5, help="Measured requests per page.")
    parser.add_argument("--questions", type=int, default=20, help="LoCoMo questions asked on the Search page.")
    args = parser.parse_args()
    path = data_path(args.data)
    conversations = load(path)
    sessions = [(f"{c.sample_id}-{s.session_id}", s.messages) for c in conversations for s in c.sessions]
    questions = [q.question for c in conversations for q in c.questions][: args.questions]
    embeddings = CachedEmbeddings(get_default_embeddings())
    embeddings.live_queries = True
    results: dict[str, Any] = {
        "data": describe(path, conversations),
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "sizes": [],
    }
    for copies in args.copies:
        with tempfile.TemporaryDirectory() as folder:
            memory = SessionVectorMemory.local(path=Path(folder) / "store", user_id="bench", embeddings=embeddings)
            for copy in range(copies):
                for session_id, messages in sessions:
                    renamed = [{**m, "id": f"{m.get('id', '')}-{copy}"} for m in messages]
                    memory.add_messages(renamed, session_id=f"{session_id}-{copy}")
            memory.flush()
            row = measure(memory, questions, args.repeats)
            results["sizes"].append({"copies": copies, **row})
            print(f"  {copies} copies: {row['sessions']} sessions, {row['chunks']} chunks measured", file=sys.stderr)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"{results['data']}\n")
    print("| sessions | chunks | Sessions | filter: text | filter: time | largest session | Search | Core memory |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results["sizes"]:
        print(
            f"| {r['sessions']:,} | {r['chunks']:,} | {r['sessions_ms']:.0f} ms | {r['filter_text_ms']:.0f} ms | "
            f"{r['filter_time_ms']:.0f} ms | {r['largest_session_ms']:.0f} ms ({r['largest_session_chunks']} chunks) "
            f"| {r['search_ms']:.0f} ms | {r['core_ms']:.0f} ms |"
        )


if __name__ == "__main__":
    main()
