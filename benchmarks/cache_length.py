"""The semantic cache's cost against the question's length: the guards before and after, and the length limit.

Three measures per size (4 KB … 1 MB of a question, compared with itself, the worst case: every check runs):

- ``before``: ``guard_mismatch`` as released in 0.6.0 (read from git), whose order checks compared every pair of
  words; run only up to ``--before-max`` (it is quadratic: 64 KB takes seconds, 1 MB minutes);
- ``after``: today's ``guard_mismatch`` with its length limit lifted (``max_chars`` huge): the algorithm alone;
- ``cache``: ``SemanticCache.decide`` + ``update`` with the default limit (a ``too_long`` miss past 4,096
  characters), on an embedded cache with a hash-seeded fake embedding (the model's cost is not measured here).

Writes results/cache_length.json. Run: python benchmarks/cache_length.py [--before-max 65536]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_session_rag import SemanticCache
from langchain_session_rag.cache import guards

RESULTS = Path(__file__).parent / "results"
SIZES = [4_096, 16_384, 40_960, 65_536, 262_144, 1_048_576]
RELEASED = "b14ad24"
"""The commit of 0.6.0's cache guards."""


def question(size: int, seed: int = 1) -> str:
    """A question of ``size`` characters made of topic words, numbers and order words (every check runs)."""
    rng = random.Random(seed)
    words = "the how do I reset my password account email login settings page user data from to into".split()
    out, length = [], 0
    while length < size:
        word = f"{rng.choice(words)}{rng.randint(0, 50)}" if rng.random() < 0.5 else rng.choice(words)
        out.append(word)
        length += len(word) + 1
    return " ".join(out)[: size - 1] + "?"


def released_guards() -> ModuleType:
    """0.6.0's guards module, loaded from git next to today's package."""
    source = subprocess.run(
        ["git", "show", f"{RELEASED}:langchain_session_rag/cache/guards.py"],
        capture_output=True, text=True, check=True, cwd=Path(__file__).parent.parent,
    ).stdout  # fmt: skip
    spec = importlib.util.spec_from_loader("released_guards", loader=None)
    assert spec is not None  # noqa: S101
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    exec(compile(source, "released_guards.py", "exec"), module.__dict__)  # noqa: S102 - our own released source
    return module


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before-max", type=int, default=65_536, help="largest size timed with 0.6.0's guards")
    args = parser.parse_args()
    old = released_guards()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        cache = SemanticCache.local(path=folder, user_id="bench", embeddings=DeterministicFakeEmbedding(size=16))
        for size in SIZES:
            text = question(size)
            before = timed(lambda t=text: old.guard_mismatch(t, t)) if size <= args.before_max else None
            after = timed(lambda t=text: guards.guard_mismatch(t, t, max_chars=10**9))
            through = timed(lambda t=text: (cache.decide(t), cache.update(t, "answer")))
            rows.append({"chars": size, "before_s": before, "after_s": after, "cache_s": through,
                         "cache_reason": cache.decide(text).reason})  # fmt: skip
            shown = "skipped" if before is None else f"{before:8.3f} s"
            print(f"{size:>9,} chars  before {shown:>10}  after {after:7.3f} s  "
                  f"cache (limit {cache.max_question_chars}) {through:7.4f} s  {rows[-1]['cache_reason']}")  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cache_length.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
