"""Semantic cache quality on the labelled pairs of tests/data/cache_pairs.json, and hit-path latency.

For every pair, question ``a`` is cached (in its own user scope) and question ``b`` is looked up.
Paraphrases should hit; near-misses (other entity, number, negation, time, key noun) must not.
Compared with a plain cosine cache over the raw questions (the usual semantic cache), same model.
Run: bash scripts/benchmark.sh cache_eval
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

from langchain_session_rag import SemanticCache, get_default_embeddings
from langchain_session_rag.guards import is_volatile
from langchain_session_rag.ranking import cosine

PAIRS = Path(__file__).resolve().parents[1] / "tests" / "data" / "cache_pairs.json"
RESULTS = Path(__file__).parent / "results"
THRESHOLDS = (0.85, 0.88, 0.9, 0.92, 0.95, 0.98)


def rates(rows: list[dict[str, Any]], threshold: float, key: str, ok: str) -> dict[str, float]:
    para = [r for r in rows if r["label"] == "paraphrase" and not r["volatile"]]
    near = [r for r in rows if r["label"].startswith("near_miss")]

    def hit(r: dict[str, Any]) -> bool:
        return r[key] >= threshold and r[ok]

    reworded = [r for r in para if r.get("style") == "reworded"]
    return {
        "paraphrase_hit_rate": round(100 * sum(map(hit, para)) / len(para), 1),
        "reworded_paraphrase_hit_rate": round(100 * sum(map(hit, reworded)) / len(reworded), 1),
        "near_miss_false_hit_rate": round(100 * sum(map(hit, near)) / len(near), 2),
        "false_hits": sum(map(hit, near)),
    }


def main() -> None:
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))
    embeddings = get_default_embeddings()
    embeddings.embed_query("warm up")
    cache = SemanticCache.local(path=tempfile.mkdtemp(), user_id="u", embeddings=embeddings, threshold=1e-6)
    rows = []
    raw_vectors = embeddings.embed_documents([t for p in pairs for t in (p["a"], p["b"])])
    for n, pair in enumerate(pairs):
        view = cache.for_user(f"pair{n}")
        view.update(pair["a"], f"answer {n}")
        decision = view.decide(pair["b"])
        rows.append({
            **pair,
            "volatile": is_volatile(pair["a"]),
            "ours_similarity": decision.similarity or 0.0,
            "ours_ok": decision.hit,  # with a ~0 threshold: every check but the threshold passed
            "plain_similarity": cosine(raw_vectors[2 * n], raw_vectors[2 * n + 1]),
            "plain_ok": True,
        })  # fmt: skip
    table = {
        str(t): {
            "ours": rates(rows, t, "ours_similarity", "ours_ok"),
            "plain_cosine": rates(rows, t, "plain_similarity", "plain_ok"),
        }
        for t in THRESHOLDS
    }
    # Hit-path latency at the default threshold.
    default = SemanticCache.local(path=tempfile.mkdtemp(), user_id="alice", embeddings=embeddings)
    default.update("How do I reset my password?", "Settings, then Security.")
    latencies = []
    for _ in range(200):
        t0 = time.perf_counter()
        default.lookup("How can I reset my password?")
        latencies.append(time.perf_counter() - t0)
    latencies.sort()
    payload = {
        "benchmark": "cache_eval",
        "date": time.strftime("%Y-%m-%d"),
        "pairs": len(pairs),
        "paraphrases_counted": sum(r["label"] == "paraphrase" and not r["volatile"] for r in rows),
        "volatile_paraphrases_never_cached": sum(r["label"] == "paraphrase" and r["volatile"] for r in rows),
        "near_misses": sum(r["label"].startswith("near_miss") for r in rows),
        "versions": {p: version(p) for p in ("chromadb", "sentence-transformers")},
        "thresholds": table,
        "hit_path_ms": {
            "p50": round(1000 * statistics.median(latencies), 2),
            "p95": round(1000 * latencies[int(0.95 * (len(latencies) - 1))], 2),
        },
        "default_threshold_misses_by_reason": dict(default.stats.misses),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cache_eval.json").write_text(json.dumps(payload, indent=2) + "\n")
    print(json.dumps({k: v for k, v in payload.items() if k != "versions"}, indent=1))


if __name__ == "__main__":
    main()
