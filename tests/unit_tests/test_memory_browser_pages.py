"""The memory browser's pages in process (TestClient, fake embeddings, an embedded store): who may see what, forged
forms, stored text shown as text, the forget and core pages' outcomes. The real-browser tests are in
``tests/integration_tests/test_memory_browser.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.privacy import generate_master_key
from langchain_session_rag.server import Authenticator, create_app
from langchain_session_rag.server.ui import create_ui_app
from langchain_session_rag.server.ui.access import COOKIE

TOKEN = "launch-token-0123456789"  # noqa: S105 - a test token
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


@pytest.fixture
def memory(tmp_path: Path, fake_embeddings: DeterministicFakeEmbedding) -> SessionVectorMemory:
    memory = SessionVectorMemory.local(path=tmp_path / "store", user_id="alice", embeddings=fake_embeddings)
    march, may = "2026-03-05T10:00:00+00:00", "2026-05-01T10:00:00+00:00"
    trip = [("user", "I am planning a trip to Lisbon in May."), ("assistant", "OK.")]
    hostile = [("user", f"Remember {HOSTILE} please"), ("assistant", "Noted.")]
    memory.add_messages([{"role": r, "content": c, "timestamp": march} for r, c in trip], session_id="trip")
    memory.add_messages([{"role": r, "content": c, "timestamp": may} for r, c in hostile], session_id="hostile")
    memory.for_user("bob").add_messages(
        [{"role": "user", "content": "My cat is called Miso."}, {"role": "assistant", "content": "Nice."}],
        session_id="bob-cat",
    )
    memory.flush()
    return memory


def client(memory: SessionVectorMemory, user: str = "alice") -> TestClient:
    app = create_ui_app(memory, auth=Authenticator.for_one_user(TOKEN, user))
    return TestClient(app, base_url="http://127.0.0.1:8765", follow_redirects=False)


def signed_in(memory: SessionVectorMemory, user: str = "alice") -> TestClient:
    http = client(memory, user)
    answer = http.get(f"/ui/login?token={TOKEN}")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/ui/sessions"
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/ui" in cookie
    return http


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found, "a page with a form carries its anti-forgery value"
    return found.group(1)


def test_without_a_token_every_page_sends_the_browser_to_sign_in(memory: SessionVectorMemory) -> None:
    http = client(memory)
    for path in ("/ui/", "/ui/sessions", "/ui/sessions/trip", "/ui/search?q=Lisbon", "/ui/core", "/ui/forget"):
        answer = http.get(path)
        assert (answer.status_code, answer.headers["location"]) == (303, "/ui/login"), path
    assert http.post("/ui/forget", data={"all": "1", "sure": "1"}).headers["location"] == "/ui/login"
    refused = http.get("/ui/login?token=not-the-token-at-all")
    assert refused.status_code == 401
    assert "not known to the server" in refused.text
    http.cookies.set(COOKIE, "a-guessed-token-value", path="/ui")
    assert http.get("/ui/sessions").status_code == 303
    assert memory.count() == 2  # nothing changed


def test_a_foreign_host_name_is_refused(memory: SessionVectorMemory) -> None:
    """A page on another site whose name resolves to 127.0.0.1 (DNS rebinding) gets nothing."""
    http = signed_in(memory)
    answer = http.get("/ui/sessions", headers={"host": "attacker.example:8765"})
    assert answer.status_code == 403
    assert "Lisbon" not in answer.text
    assert http.get(f"/ui/login?token={TOKEN}", headers={"host": "attacker.example"}).status_code == 403


def test_stored_text_is_shown_as_text_and_no_page_may_run_script(memory: SessionVectorMemory) -> None:
    http = signed_in(memory)
    for path in ("/ui/sessions", "/ui/sessions/hostile", "/ui/search?q=Remember+please", "/ui/sessions?q=script"):
        page = http.get(path)
        assert page.status_code == 200, path
        assert "<script" not in page.text, path
        assert "<img" not in page.text, path
        assert "script-src" not in page.headers["content-security-policy"]  # default-src 'none': no script at all
        assert "default-src 'none'" in page.headers["content-security-policy"]
    assert "&lt;script&gt;" in http.get("/ui/sessions/hostile").text


def test_titles_sizes_and_filters(memory: SessionVectorMemory) -> None:
    http = signed_in(memory)
    page = http.get("/ui/sessions").text
    assert "I am planning a trip to Lisbon in May." in page  # the first question is the title
    assert "2 sessions." in page
    assert "Miso" not in page
    assert "1 session match the filter." in http.get("/ui/sessions?q=lisbon").text
    assert "1 session match the filter." in http.get("/ui/sessions?when=2026-03").text
    assert "0 sessions match the filter." in http.get("/ui/sessions?when=2025").text
    unknown = http.get("/ui/sessions?when=whenever")
    assert unknown.status_code == 200
    assert "names no time" in unknown.text
    (trip,) = [s for s in memory.list_sessions() if s.session_id == "trip"]
    assert trip.title == "I am planning a trip to Lisbon in May."
    assert trip.tokens > 0


def test_another_users_session_is_not_found_and_cannot_be_forgotten(memory: SessionVectorMemory) -> None:
    http = signed_in(memory)
    assert http.get("/ui/sessions/bob-cat").status_code == 404
    assert "Nothing stored matches" in http.get("/ui/forget/confirm?session=bob-cat").text
    csrf = csrf_of(http.get("/ui/core").text)
    answer = http.post("/ui/forget", data={"session": "bob-cat", "csrf": csrf})
    assert "Chunks removed" in answer.text
    assert memory.for_user("bob").count() == 1


def test_forged_forms_change_nothing(memory: SessionVectorMemory) -> None:
    http = signed_in(memory)
    csrf = csrf_of(http.get("/ui/core").text)
    form = {"session": "trip", "csrf": csrf}
    assert http.post("/ui/forget", data={"session": "trip"}).status_code == 403  # no anti-forgery value
    assert http.post("/ui/forget", data={**form, "csrf": "0" * 32}).status_code == 403
    assert http.post("/ui/forget", data=form, headers={"sec-fetch-site": "cross-site"}).status_code == 403
    assert http.post("/ui/forget", data=form, headers={"origin": "http://attacker.example"}).status_code == 403
    assert http.post("/ui/forget", data=form, headers={"origin": "null"}).status_code == 403
    assert http.post("/ui/core/memory", data={"text": "pinned by a forgery"}).status_code == 403
    assert memory.count() == 2
    assert memory.core.read("memory") == ""
    other = signed_in(memory, "bob")  # bob's own value does not work for alice's session either
    assert csrf_of(other.get("/ui/core").text) != csrf


@pytest.mark.slow  # the compaction copies the store in a subprocess
def test_forget_a_time_range_with_a_receipt(memory: SessionVectorMemory) -> None:
    http = signed_in(memory)
    confirm = http.get("/ui/forget/confirm?since=2026-03&until=2026-03")
    assert "1 chunk(s)" in confirm.text
    assert "Lisbon" in confirm.text
    receipt = http.post(
        "/ui/forget", data={"since": "2026-03", "until": "2026-03", "compact": "1", "csrf": csrf_of(confirm.text)}
    )
    assert receipt.status_code == 200
    assert re.search(r"Chunks removed</td><td>1<", receipt.text)
    assert "yes: the store was compacted" in receipt.text
    assert [s.session_id for s in memory.list_sessions()] == ["hostile"]
    assert memory.for_user("bob").count() == 1


def test_forgetting_everything_needs_the_box_ticked(memory: SessionVectorMemory) -> None:
    http = signed_in(memory)
    memory.core.write("memory", "I live in Porto.")
    csrf = csrf_of(http.get("/ui/forget/confirm?all=1").text)
    unticked = http.post("/ui/forget", data={"all": "1", "csrf": csrf})
    assert unticked.status_code == 400
    assert memory.count() == 2
    done = http.post("/ui/forget", data={"all": "1", "sure": "1", "csrf": csrf})
    assert done.status_code == 200
    assert "Core memory and daily logs" in done.text
    assert memory.count() == 0
    assert memory.core.read("memory") == ""
    assert memory.for_user("bob").count() == 1
    assert http.get("/ui/forget/confirm?session=trip&all=1").status_code == 400  # one kind at a time


def test_core_memory_edit_undo_and_limits(memory: SessionVectorMemory) -> None:
    http = signed_in(memory)
    page = http.get("/ui/core").text
    assert "of 700 tokens used" in page
    assert "of 300 tokens used" in page
    csrf = csrf_of(page)
    saved = http.post("/ui/core/memory", data={"text": "I am vegetarian.\r\nI live in Porto.", "csrf": csrf})
    assert "Saved memory: version 1." in saved.text
    assert memory.core.read("memory") == "I am vegetarian.\nI live in Porto."
    too_long = http.post("/ui/core/now", data={"text": "word " * 2000, "csrf": csrf})
    assert too_long.status_code == 400
    assert memory.core.read("now") == ""
    assert http.post("/ui/core/nosuchblock", data={"text": "x", "csrf": csrf}).status_code == 400
    undone = http.post("/ui/core/memory/undo", data={"csrf": csrf})
    assert "Undid the last change of memory" in undone.text
    assert memory.core.read("memory") == ""
    assert memory.for_user("bob").core.read("memory") == ""


def test_served_by_serve_behind_a_proxy_no_compaction_under_chat_writes(memory: SessionVectorMemory) -> None:
    """``session-rag serve`` serves the pages to the user its proxy names; it never compacts under chat turns."""
    model = GenericFakeChatModel(messages=iter([AIMessage("ok")]))
    app = create_app(memory, model, auth=Authenticator(trusted_header="X-Forwarded-User"))
    http = TestClient(app, follow_redirects=False)
    assert http.get("/ui/sessions").status_code == 401  # no user header: the proxy did not authenticate
    alice = {"X-Forwarded-User": "alice"}
    page = http.get("/ui/sessions", headers=alice)
    assert "I am planning a trip to Lisbon in May." in page.text
    assert "Miso" not in page.text
    assert "Miso" in http.get("/ui/sessions", headers={"X-Forwarded-User": "bob"}).text
    confirm = http.get("/ui/forget/confirm?session=trip", headers=alice)
    assert 'name="compact"' not in confirm.text
    assert "next compaction" in confirm.text
    receipt = http.post("/ui/forget", data={"session": "trip", "compact": "1", "csrf": csrf_of(confirm.text)},
                        headers=alice)  # fmt: skip
    assert "no: the text leaves the store" in receipt.text
    assert [s.session_id for s in memory.list_sessions()] == ["hostile"]
    assert http.get("/ui/login", headers=alice).headers["location"] == "/ui/sessions"  # nothing to sign in to


def test_an_encrypted_store_reads_as_text_in_the_pages(
    tmp_path: Path, fake_embeddings: DeterministicFakeEmbedding
) -> None:
    key = generate_master_key()
    memory = SessionVectorMemory.local(
        path=tmp_path / "sealed", user_id="alice", embeddings=fake_embeddings, encryption_key=key
    )
    messages = [{"role": "user", "content": "My bike is a blue Gazelle."}, {"role": "assistant", "content": "OK."}]
    memory.add_messages(messages, session_id="bike")
    memory.flush()
    http = signed_in(memory)
    assert "My bike is a blue Gazelle." in http.get("/ui/sessions").text  # the title, decrypted
    assert "blue Gazelle" in http.get("/ui/sessions/bike").text
    assert "1 session match the filter." in http.get("/ui/sessions?q=gazelle").text
    assert not [p for p in (tmp_path / "sealed").rglob("*") if p.is_file() and b"blue Gazelle" in p.read_bytes()]
