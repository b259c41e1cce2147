"""BM25 index and hybrid ranking."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.memory.lexical import BM25Index, stem, tokenize
from tests.conftest import chroma_session, cooking_session

Factory = Callable[..., SessionVectorMemory]


def test_tokenize_drops_stop_words_and_stems() -> None:
    assert tokenize("What are the Dogs' names? 2 dogs, Class 3") == ["dog", "nam", "2", "dog", "class", "3"]
    assert {stem(w) for w in ("painted", "painting", "paints", "paint")} == {"paint"}
    assert {stem(w) for w in ("loved", "loving", "love")} == {"lov"}
    assert [stem(w) for w in ("running", "cities", "glasses", "bus", "2023")] == ["run", "city", "glass", "bus", "2023"]


def test_bm25_ranks_rare_terms_and_tracks_removals() -> None:
    index = BM25Index()
    index.add("a", "the pottery class on Saturday", {"user_id": "u"})
    index.add("b", "we went camping with the kids", {"user_id": "u"})
    index.add("c", "the kids loved the camping trip and the pottery", {"user_id": "v"})
    assert [i for i, _ in index.top("pottery class", 3)] == ["a", "c"]
    assert [i for i, _ in index.top("pottery", 3, only={"a", "b"})] == ["a"]
    index.remove("a")
    assert [i for i, _ in index.top("pottery class", 3)] == ["c"]
    index.remove("c")
    index.add("d", "a pottery wheel")
    assert index.ids == {"b", "d"}
    assert [i for i, _ in index.top("pottery", 3)] == ["d"]


def test_hybrid_score_is_the_documented_blend(make_memory: Factory) -> None:
    m = make_memory()
    m.add_messages(chroma_session(), session_id="s1")
    m.add_messages(cooking_session(), session_id="s2")
    docs = m.invoke("EphemeralClient PersistentClient", k=2, lexical_weight=0.3)
    top = docs[0].metadata
    assert top["session_id"] == "s1"
    assert top["lexical"] == pytest.approx(1.0)
    assert top["score"] == pytest.approx(0.7 * top["similarity"] + 0.3 * top["lexical"])
    assert all("lexical" not in d.metadata for d in m.invoke("x", k=2, lexical_weight=0))
    with pytest.raises(ValueError, match="lexical_weight"):
        m.invoke("x", lexical_weight=1.5)


def test_lexical_index_follows_deletes_and_other_writers(make_memory: Factory) -> None:
    m = make_memory()
    (cid,) = m.add_messages(chroma_session(), session_id="s1")
    assert m.invoke("EphemeralClient", k=1)[0].id == cid
    other = SessionVectorMemory(
        chroma_client=m.chroma_client, collection_name=m.collection_name, user_id="alice", embeddings=m.embeddings
    )
    other.add_messages(cooking_session(), session_id="s2")
    assert m.invoke("sourdough loaf", k=1)[0].metadata["session_id"] == "s2"
    other.forget(session_id="s2")
    assert [d.metadata["session_id"] for d in m.invoke("sourdough loaf", k=5)] == ["s1"]
    assert m.for_user("bob").invoke("EphemeralClient", k=5) == []
