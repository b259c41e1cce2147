"""What replica coherence costs a read on a Chroma server, at 1,000 and 10,000 chunks of one user.

Usage::

    python benchmarks/replica_coherence.py

Starts ``chroma run`` on a loopback port, stores one user's chunks, and times the reads a warm replica makes
before answering (median of 20): the change log (every read), the log plus one changed record (a read after
another process's edit), the ids listing a replica made on every read in 0.6.0, and the ids-and-revisions
listing a replica falls back to (a write of more than 500 chunks, or a last read over 30 minutes old).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from langchain_session_rag.stores.adapter import open_chroma_client
from langchain_session_rag.stores.chroma import ChromaBackend
from langchain_session_rag.stores.records import session_record

DIM = 384


def serve(folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    """A Chroma server on a free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    chroma = Path(sys.executable).parent / "chroma"
    proc = subprocess.Popen(
        [str(chroma), "run", "--path", str(folder), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1):
                return proc, port
        except OSError:  # noqa: PERF203 - polling until the server answers
            time.sleep(0.1)
    proc.kill()
    msg = "chroma server did not start"
    raise RuntimeError(msg)


def median_ms(call: object, runs: int = 20) -> float:
    """Median wall time of ``call()`` in milliseconds."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()  # type: ignore[operator]
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 1)


def main() -> None:
    """Measure at 1,000 and 10,000 chunks."""
    folder = Path(tempfile.mkdtemp(prefix="coherence-bench-"))
    proc, port = serve(folder)
    try:
        backend = ChromaBackend(open_chroma_client(host="127.0.0.1", port=port), name="bench")
        gen, stored, user = np.random.default_rng(0), 0, "bench"
        for size in (1_000, 10_000):
            while stored < size:
                part = [
                    session_record(
                        user_id=user,
                        session_id=f"s{n // 20}",
                        kind="exchange",
                        text=f"exchange {n} " * 30,
                        message_ids=[f"u{n}", f"a{n}"],
                        timestamp=datetime(2026, 1, 1, tzinfo=timezone.utc),
                        token_count=60,
                        model_id="bench",
                        vector=gen.normal(size=DIM).astype(np.float32).tolist(),
                    )
                    for n in range(stored, min(size, stored + 1_000))
                ]
                backend.add(user, part)
                stored += len(part)
            seen = backend.change_log(user) or set()
            edit = part[-1]
            edit.text += " (edited)"
            backend.add(user, [edit])  # another process's edit under the same id
            new = sorted((backend.change_log(user) or set()) - seen)

            def after_edit(new: list[str] = new) -> None:
                backend.change_log(user)
                touched = backend.changed_ids(user, new) or set()
                list(backend.pages(user, sorted(touched), with_embeddings=True))

            row = {
                "chunks": size,
                "log_ms (every read, nothing changed)": median_ms(lambda: backend.change_log(user)),
                "after_an_edit_ms (log, entry, one record)": median_ms(after_edit),
                "ids_listing_ms (every read in 0.6.0)": median_ms(lambda: backend.all_ids(user)),
                "revisions_listing_ms (fallback only)": median_ms(lambda: backend.listing(user), runs=3),
            }
            print(json.dumps(row))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
