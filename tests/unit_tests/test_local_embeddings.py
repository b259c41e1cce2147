"""The embedded default embedding model: all-MiniLM-L6-v2 (int8) on onnxruntime.

Its agreement with the torch route is tested in ``test_model_integrity.py``, the one module that imports torch.
"""

from __future__ import annotations

import json
import shutil
import threading
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from langchain_session_rag import LocalEmbeddings, SessionVectorMemory, TopicSegmenter
from langchain_session_rag.errors import FileAccessError, InvalidArgumentError
from langchain_session_rag.models import _int8_graph, _integrity, onnx_encoder
from langchain_session_rag.models.embeddings import DEFAULT_EMBEDDING_MODEL, TORCH_EMBEDDING_MODEL

pytestmark = pytest.mark.slow  # the real model


def _sample_texts() -> list[str]:
    text = resources.files("langchain_session_rag").joinpath("data/sample_sessions.json").read_text(encoding="utf-8")
    sample = json.loads(text)
    return [m["content"] for s in sample["sessions"] for m in s["messages"]] + list(sample["questions"])


def test_default_is_the_onnx_route_with_its_own_identity(real_embeddings: LocalEmbeddings) -> None:
    assert real_embeddings.backend == "onnx"
    assert real_embeddings.model_id == DEFAULT_EMBEDDING_MODEL != TORCH_EMBEDDING_MODEL
    vectors = np.array(real_embeddings.embed_documents(_sample_texts()))
    assert vectors.shape[1] == 384
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_vectors_do_not_depend_on_the_batch(real_embeddings: LocalEmbeddings) -> None:
    texts = _sample_texts()
    together = np.array(real_embeddings.embed_documents(texts))
    alone = np.array([real_embeddings.embed_query(t) for t in texts])
    reversed_order = np.array(real_embeddings.embed_documents(texts[::-1]))[::-1]
    assert np.allclose(together, alone, atol=1e-5)
    assert np.allclose(together, reversed_order, atol=1e-5)


def test_long_texts_are_cut_at_the_models_limit_and_counted(real_embeddings: LocalEmbeddings) -> None:
    words = " ".join(f"topic{i}" for i in range(400))
    counts = real_embeddings.count_tokens(["hello world", words])
    assert counts[0] == 4  # [CLS] hello world [SEP]
    assert counts[1] > real_embeddings.max_tokens == 256
    cut = real_embeddings.embed_query(words)
    longer = real_embeddings.embed_query(words + " and a tail that the model never reads")
    assert np.allclose(cut, longer, atol=1e-6)


def test_threads_share_one_model(real_embeddings: LocalEmbeddings) -> None:
    texts = _sample_texts()[::3]  # short and long messages and questions: the four threads' calls overlap
    expected = real_embeddings.embed_documents(texts)
    results: list[list[list[float]]] = []

    def work() -> None:
        results.append(real_embeddings.embed_documents(texts))

    workers = [threading.Thread(target=work) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(results) == 4
    assert all(np.allclose(r, expected, atol=1e-6) for r in results)


async def test_async_matches_sync(real_embeddings: LocalEmbeddings) -> None:
    texts = _sample_texts()[:5]
    assert np.allclose(await real_embeddings.aembed_documents(texts), real_embeddings.embed_documents(texts))
    assert np.allclose(await real_embeddings.aembed_query(texts[0]), real_embeddings.embed_query(texts[0]))


def test_warm_up_loads_the_model_and_returns_self() -> None:
    embeddings = LocalEmbeddings(batch_size=8)
    assert embeddings.warm_up() is embeddings
    assert embeddings.encoder.dimension == 384


def test_a_damaged_bundled_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    damaged = tmp_path / "model.onnx"
    shutil.copyfile(onnx_encoder.bundled_onnx_model(), damaged)
    with damaged.open("r+b") as handle:
        handle.seek(4096)
        handle.write(b"\x00" * 16)
    monkeypatch.setattr(onnx_encoder, "bundled_onnx_model", lambda: damaged)
    monkeypatch.setattr(onnx_encoder, "_ENCODERS", {})
    with pytest.raises(FileAccessError, match="pinned SHA-256"):
        LocalEmbeddings().embed_query("hello")


def test_a_custom_onnx_file_runs_without_the_pin(tmp_path: Path, real_embeddings: LocalEmbeddings) -> None:
    copy = tmp_path / "minilm.onnx"
    shutil.copyfile(onnx_encoder.bundled_onnx_model(), copy)
    custom = LocalEmbeddings(str(copy), threads=1)
    assert custom.model_id == str(copy)
    assert np.allclose(custom.embed_query("a custom file"), real_embeddings.embed_query("a custom file"), atol=1e-5)
    with pytest.raises(FileAccessError, match="No such model file"):
        LocalEmbeddings(str(tmp_path / "missing.onnx")).embed_query("x")
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    with pytest.raises(FileAccessError, match="onnxruntime cannot load"):
        LocalEmbeddings(str(tmp_path / "junk.onnx")).embed_query("x")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"backend": "tensorflow"}, "backend must be"),
        ({"threads": 0}, "threads must be"),
        ({"batch_size": 0}, "batch_size must be"),
        ({"batch_size": "3"}, "batch_size must be"),
        ({"threads": True}, "threads must be"),
        ({"threads": 1.5}, "threads must be"),
        ({"backend": "torch", "threads": 2}, "backend='onnx' only"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        LocalEmbeddings(**kwargs)  # type: ignore[arg-type]


def test_wrong_backend_accessors_say_so(real_embeddings: LocalEmbeddings) -> None:
    with pytest.raises(InvalidArgumentError, match="onnxruntime"):
        _ = real_embeddings.model
    with pytest.raises(InvalidArgumentError, match="torch"):
        _ = LocalEmbeddings(backend="torch").encoder


def test_both_routes_share_the_calibrated_segmentation_threshold(real_embeddings: LocalEmbeddings) -> None:
    assert TopicSegmenter(real_embeddings).threshold == TopicSegmenter(LocalEmbeddings(backend="torch")).threshold


def test_int8_products_stay_within_the_recall_check_of_the_float32_products(real_embeddings: LocalEmbeddings) -> None:
    # Issue 28: the default multiplies in int8 (no widening of every weight in every pass); unpack_weights=True keeps
    # 0.6's float32 products. The vectors differ (so the products really are int8), within the recall check.
    texts = [*_sample_texts(), "", "ok", "Ünïcödé and emoji 🙂 survive", "word " * 400]
    default = np.array(real_embeddings.embed_documents(texts))
    unpacked = np.array(LocalEmbeddings(unpack_weights=True).embed_documents(texts))
    cosines = (default * unpacked).sum(axis=1)
    assert cosines.min() >= 0.995, f"lowest cosine {cosines.min():.4f} for {texts[int(cosines.argmin())]!r}"
    assert not np.allclose(default, unpacked, atol=1e-5)
    assert (default @ default.T).argsort(axis=1)[:, -2].tolist() == (unpacked @ unpacked.T).argsort(axis=1)[
        :, -2
    ].tolist()
    with pytest.raises(InvalidArgumentError, match="backend='onnx' only"):
        LocalEmbeddings(backend="torch", unpack_weights=True)


def test_the_int8_graph_rewrites_every_product_and_keeps_the_tables_exact() -> None:
    data = onnx_encoder.bundled_onnx_model().read_bytes()
    derived, products = _int8_graph.int8_graph(data)
    assert products == 36  # 6 layers x (query, key, value, output, 2 feed-forward)
    assert _int8_graph.int8_graph(derived)[1] == 0  # nothing left to rewrite
    with pytest.raises(_int8_graph.UnreadableGraphError):
        _int8_graph.int8_graph(b"\x0f not a model")
    # The embedding tables are gathered as int8 and widened after: the same rows, bit for bit.
    ort = pytest.importorskip("onnxruntime")
    options = ort.SessionOptions()
    options.log_severity_level = 3
    old = ort.InferenceSession(data, options, disabled_optimizers=["ConstantFolding"])
    new = ort.InferenceSession(derived, options)
    ids = np.array([[101, 2054, 2106, 1045, 2360, 102]], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    cosine = float((_pooled(old.run(None, feed)[0]) * _pooled(new.run(None, feed)[0])).sum())
    assert 0.995 <= cosine < 1.0 - 1e-9


def _pooled(tokens: np.ndarray) -> np.ndarray:
    vector = tokens[0].mean(axis=0)
    return vector / np.linalg.norm(vector)


def test_a_model_swapped_after_its_check_is_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The attack: a damaged copy whose verification record was forged (someone who can write the user's cache
    # folder). The record passes; the int8 graph is derived only from bytes that match the pin, so it is refused.
    monkeypatch.setenv("SESSION_RAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_integrity, "_VERIFIED", set())
    damaged = tmp_path / "model.onnx"
    shutil.copyfile(onnx_encoder.bundled_onnx_model(), damaged)
    with damaged.open("r+b") as handle:  # one weight byte, deep in the file: onnxruntime would load it
        handle.seek(damaged.stat().st_size // 2)
        byte = handle.read(1)[0]
        handle.seek(-1, 1)
        handle.write(bytes([byte ^ 0x40]))
    key = _integrity._key(damaged, onnx_encoder.BUNDLED_MODEL_SHA256)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "verified-models.json").write_text(json.dumps([list(key)]), encoding="utf-8")
    monkeypatch.setattr(onnx_encoder, "bundled_onnx_model", lambda: damaged)
    monkeypatch.setattr(onnx_encoder, "_ENCODERS", {})
    with pytest.raises(FileAccessError, match="pinned SHA-256"):
        LocalEmbeddings().embed_query("hello")


class _Recording:
    """Stands in for the onnxruntime session, recording each batch's shape."""

    def __init__(self, session: object) -> None:
        self.session = session
        self.shapes: list[tuple[int, int]] = []

    def run(self, names: object, feed: dict[str, np.ndarray]) -> object:
        self.shapes.append(feed["input_ids"].shape)
        return self.session.run(names, feed)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self.session, name)


def test_batches_are_bounded_in_padded_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    encoder = LocalEmbeddings().encoder
    recording = _Recording(encoder.session)
    monkeypatch.setattr(encoder, "session", recording)
    texts = ["short one"] * 40 + [" ".join(f"w{i}" for i in range(n * 7)) for n in range(1, 60, 4)]  # to 399 words
    vectors = encoder.encode(texts, 32)
    assert vectors.shape == (len(texts), 384)
    assert sum(rows for rows, _ in recording.shapes) == len(texts)
    assert all(rows <= 32 for rows, _ in recording.shapes)
    assert all(rows * width <= onnx_encoder.MAX_BATCH_TOKENS or rows == 1 for rows, width in recording.shapes)
    assert max(width for _, width in recording.shapes) == onnx_encoder.MAX_TOKENS
    monkeypatch.undo()
    one_by_one = np.array([encoder.encode([t], 1)[0] for t in texts[::10]])
    assert np.allclose(vectors[::10], one_by_one, atol=1e-5)


def test_odd_and_huge_texts_are_embedded_with_bounded_work(real_embeddings: LocalEmbeddings) -> None:
    odd = ["lone \udfff surrogate", "nul\x00inside", "x" * (onnx_encoder.MAX_CHARS * 30)]
    vectors = np.array(real_embeddings.embed_documents(odd))
    assert vectors.shape == (3, 384)
    assert np.all(np.isfinite(vectors))
    assert onnx_encoder.readable("a\udfffb") == "a?b"
    assert len(onnx_encoder.readable("y" * 10**6)) == onnx_encoder.MAX_CHARS
    # Cutting at MAX_CHARS changes nothing the model reads: 256 word pieces end long before.
    words = " ".join(f"w{i}" for i in range(20_000))
    assert np.allclose(real_embeddings.embed_query(words), real_embeddings.embed_query(words[: 4 * 256 * 8]), atol=1e-6)


def test_a_lone_surrogate_in_a_question_is_answered_not_a_type_error(tmp_path: Path, real_embeddings) -> None:
    memory = SessionVectorMemory.local(path=tmp_path, user_id="u", embeddings=real_embeddings)
    assert memory.invoke("which \udfff database?") == []
