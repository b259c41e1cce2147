"""The memory browser's pages in process (TestClient, fake embeddings, an embedded store): who may see what, forged
forms, stored text shown as text, the forget and core pages' outcomes. The real-browser tests are in
``tests/integration_tests/test_memory_browser.py``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from pathlib import Path

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from langchain_session_rag import SessionVectorMemory
from langchain_session_rag.cli.serve import served_hosts
from langchain_session_rag.errors import StoreUnavailableError
from langchain_session_rag.memory.core import CoreMemory
from langchain_session_rag.memory.scoped import UserStore
from langchain_session_rag.privacy import generate_master_key
from langchain_session_rag.prompt.budget import TokenBudget
from langchain_session_rag.server import Authenticator, create_app
from langchain_session_rag.server.http import install_error_handlers
from langchain_session_rag.server.ui import SearchSettings, UiAccess, add_ui_routes, create_ui_app
from langchain_session_rag.server.ui.access import COOKIE
from langchain_session_rag.server.ui.context import Gate
from langchain_session_rag.server.ui.signin import IDLE_LIMIT, LIFETIME

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
    http.cookies.set(cookie_name(http), "a-guessed-token-value", path="/ui")
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
    assert "1 session matches the filter with “lisbon”." in http.get("/ui/sessions?q=lisbon").text
    assert (
        "1 session matches the filter between 2026-03-01 and 2026-03-31." in http.get("/ui/sessions?when=2026-03").text
    )
    nothing = http.get("/ui/sessions?when=2025").text
    assert "0 sessions match the filter between 2025-01-01 and 2025-12-31." in nothing
    assert "No session matches the filter." in nothing
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
    assert "1 chunk, stamped from 2026-03-01 to 2026-03-31 (included)" in confirm.text
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


def test_core_memory_edit_undo_restore_and_limits(memory: SessionVectorMemory) -> None:
    http = signed_in(memory)
    page = http.get("/ui/core").text
    assert "of 700 tokens used" in page
    assert "of 300 tokens used" in page
    csrf = csrf_of(page)
    saved = http.post("/ui/core/memory", data={"text": "I am vegetarian.\r\nI live in Porto.", "csrf": csrf})
    assert saved.status_code == 303  # a reload of the page that follows sends nothing again
    assert "Saved memory: version 1." in http.get(saved.headers["location"]).text
    assert memory.core.read("memory") == "I am vegetarian.\nI live in Porto."
    too_long = http.post("/ui/core/now", data={"text": "word " * 2000, "csrf": csrf})
    assert too_long.status_code == 400
    assert "word word word" in too_long.text  # what was typed stays in the editor
    assert memory.core.read("now") == ""
    assert http.post("/ui/core/nosuchblock", data={"text": "x", "csrf": csrf}).status_code == 400
    undone = http.post("/ui/core/memory/undo", data={"csrf": csrf}, follow_redirects=True)
    assert "Undid the last change of memory" in undone.text
    assert memory.core.read("memory") == ""
    restored = http.post("/ui/core/memory/restore", data={"version": "1", "csrf": csrf}, follow_redirects=True)
    assert "Restored an earlier text of memory: version 3." in restored.text
    assert memory.core.read("memory") == "I am vegetarian.\nI live in Porto."
    assert memory.for_user("bob").core.read("memory") == ""
    assert http.get("/ui/core/memory/undo").headers["location"] == "/ui/core"  # an edit's address, reopened
    assert http.get("/ui/core?done=saved&block=memory&version=1").status_code == 200
    assert "<script" not in http.get("/ui/core?done=<script>&block=<script>&version=1").text


def test_other_addresses_are_pages_not_json(memory: SessionVectorMemory) -> None:
    http = signed_in(memory)
    missing = http.get("/ui/nosuch")
    assert missing.status_code == 404
    assert missing.headers["content-type"].startswith("text/html")
    assert http.get("/ui/logout").headers["location"] == "/ui/sessions"


def test_a_sign_in_link_from_another_site_asks_first(memory: SessionVectorMemory, tmp_path: Path) -> None:
    """Login CSRF: a link elsewhere must not silently sign the browser in as the link's user."""
    bob_token = "bob-token-0123456789abcdef"  # noqa: S105 - a test token
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{TOKEN} alice\n{bob_token} bob\n")
    tokens.chmod(0o600)
    http = TestClient(
        create_ui_app(memory, auth=Authenticator.from_token_file(tokens)),
        base_url="http://127.0.0.1:8765",
        follow_redirects=False,
    )
    asked = http.get(f"/ui/login?token={bob_token}", headers={"sec-fetch-site": "cross-site"})
    assert asked.status_code == 200
    assert "set-cookie" not in asked.headers
    assert "signs you in as <strong>bob</strong>" in asked.text
    confirmed = http.post("/ui/login", data={"token": bob_token}, headers={"sec-fetch-site": "same-origin"})
    assert confirmed.status_code == 303
    assert COOKIE in confirmed.headers["set-cookie"]
    # One user (session-rag ui): the only token signs you in as yourself, from a file --open hands the browser too.
    single = client(memory).get(f"/ui/login?token={TOKEN}", headers={"sec-fetch-site": "cross-site"})
    assert single.status_code == 200  # a page of ours goes on to the sessions (the Strict cookie goes with it)
    assert '<meta http-equiv="refresh" content="0;url=/ui/sessions">' in single.text
    assert COOKIE in single.headers["set-cookie"]


def test_errors_and_odd_session_ids_are_pages(memory: SessionVectorMemory) -> None:
    memory.add_messages([{"role": "user", "content": "Dots only."}, {"role": "assistant", "content": "OK."}],
                        session_id="..")  # fmt: skip
    memory.flush()
    http = signed_in(memory)
    listed = http.get("/ui/sessions").text
    assert 'href="/ui/session?id=..' in listed
    assert "Dots only." in http.get("/ui/session?id=..").text
    newline = http.get("/ui/sessions/a%0Ab")
    assert newline.status_code == 404
    assert newline.headers["content-type"].startswith("text/html")
    csrf = csrf_of(http.get("/ui/import").text)
    files = [("file", ("a.jsonl", b"{}", "application/json")), ("file", ("b.jsonl", b"{}", "application/json"))]
    two = http.post("/ui/import", data={"csrf": csrf}, files=files)
    assert two.status_code == 400
    assert two.headers["content-type"].startswith("text/html")
    assert http.get("/v1/nosuch").status_code == 404  # outside /ui nothing changed (no API in this app)


def test_forgetting_the_sessions_a_filter_shows_is_not_bounded_by_form_fields(
    memory: SessionVectorMemory,
) -> None:
    bulk = memory.for_user("alice")
    for n in range(70):
        bulk.add_messages([{"role": "user", "content": f"zorblax note {n}"}, {"role": "assistant", "content": "OK."}],
                          session_id=f"z{n}")  # fmt: skip
    bulk.flush()
    http = signed_in(memory)
    listed = http.get("/ui/sessions?q=zorblax").text
    assert "Forget these 70 sessions…" in listed
    confirm = http.get("/ui/forget/confirm?q=zorblax&filtered=1")
    assert "70 chunks of the sessions with “zorblax”" in confirm.text
    seen = re.search(r'name="seen" value="([0-9a-f]+)"', confirm.text)
    assert seen is not None
    form = {"q": "zorblax", "filtered": "1", "csrf": csrf_of(confirm.text), "seen": seen.group(1)}
    bulk.add_messages([{"role": "user", "content": "zorblax late"}, {"role": "assistant", "content": "OK."}],
                      session_id="z-late")  # fmt: skip
    bulk.flush()
    changed = http.post("/ui/forget", data=form)
    assert changed.status_code == 409  # a session came in after the confirmation: nothing is forgotten
    assert memory.count() == 73
    memory.forget(session_id="z-late")
    done = http.post("/ui/forget", data=form)
    assert done.status_code == 200
    assert re.search(r"Chunks removed</td><td>70<", done.text)
    assert sorted(s.session_id for s in memory.list_sessions()) == ["hostile", "trip"]
    assert http.get("/ui/forget/confirm?filtered=1").status_code == 400  # a filter that filters nothing


def test_another_users_chunk_is_not_forgotten(memory: SessionVectorMemory) -> None:
    (bobs,) = memory.for_user("bob").list_memories()
    http = signed_in(memory)
    assert "Nothing stored matches" in http.get(f"/ui/forget/confirm?chunk={bobs.id}").text
    csrf = csrf_of(http.get("/ui/core").text)
    receipt = http.post("/ui/forget", data={"chunk": bobs.id, "compact": "1", "csrf": csrf})
    assert re.search(r"Chunks removed</td><td>0<", receipt.text)
    assert "nothing to erase" in receipt.text  # and no compaction for nothing
    assert memory.for_user("bob").count() == 1


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
    assert "1 session matches the filter" in http.get("/ui/sessions?q=gazelle").text
    assert not [p for p in (tmp_path / "sealed").rglob("*") if p.is_file() and b"blue Gazelle" in p.read_bytes()]


def test_behind_a_proxy_the_host_the_secret_and_the_forwarded_origin(memory: SessionVectorMemory) -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("ok")]))
    auth = Authenticator(trusted_header="X-Forwarded-User")
    hosts = ("127.0.0.1", "localhost", "[::1]")
    app = create_app(memory, model, auth=auth, pages_secret=b"k" * 32, allowed_hosts=hosts, max_upload_bytes=2048)
    http = TestClient(app, base_url="http://127.0.0.1:8080", follow_redirects=False)
    alice = {"X-Forwarded-User": "alice"}
    rebinding = {**alice, "host": "attacker.example:8080"}  # a page whose name now resolves to 127.0.0.1
    assert http.get("/ui/sessions", headers=rebinding).status_code == 403
    assert http.get("/v1/memory/sessions", headers=rebinding).status_code == 403
    assert "Lisbon" not in http.get("/v1/memory/search?q=Lisbon", headers=rebinding).text
    csrf = csrf_of(http.get("/ui/core", headers=alice).text)
    other = create_app(memory, model, auth=auth, pages_secret=b"j" * 32)
    other_csrf = csrf_of(TestClient(other, base_url="http://127.0.0.1:8080").get("/ui/core", headers=alice).text)
    assert csrf != other_csrf  # keyed by the server's secret, not computable from the user's name
    proxied = {**alice, "origin": "https://memory.example.com", "x-forwarded-host": "memory.example.com"}
    saved = http.post("/ui/core/now", data={"text": "Marathon training.", "csrf": csrf}, headers=proxied)
    assert saved.status_code == 303  # a proxy that rewrites Host: the browser's origin is the forwarded host
    assert memory.core.read("now") == "Marathon training."
    forged = {**alice, "origin": "https://attacker.example"}
    assert http.post("/ui/core/now", data={"text": "x", "csrf": csrf}, headers=forged).status_code == 403
    files = {"file": ("chats.jsonl", b"x" * 5000, "application/json")}
    too_big = http.post("/ui/import", data={"csrf": csrf}, files=files, headers=alice)
    assert too_big.status_code == 413
    assert "limit of 2,048 bytes" in too_big.text


def test_which_host_names_serve_answers_at() -> None:
    loopback = ("127.0.0.1", "::1", "[::1]", "localhost")
    assert set(served_hosts("127.0.0.1", "X-Forwarded-User", ())) == set(loopback)  # behind a proxy, on loopback
    assert served_hosts("127.0.0.1", None, ()) == ()  # bearer tokens: a rebinding page has none
    assert served_hosts("0.0.0.0", "X-Forwarded-User", ()) == ()  # noqa: S104 - listening everywhere: any name
    assert set(served_hosts("127.0.0.1", "X-Forwarded-User", ("memory.example.com",))) == {
        *loopback,
        "memory.example.com",
    }


async def test_a_compaction_waits_for_page_reads_and_holds_new_ones() -> None:
    """The gate behind the pages: no page reads the store while a compaction copies and switches it."""
    gate, events = Gate(), []

    async def read(name: str, hold: asyncio.Event) -> None:
        async with gate.reading():
            events.append(f"{name} reads")
            await hold.wait()
        events.append(f"{name} done")

    async def compact() -> None:
        async with gate.exclusive():
            events.append("compaction")
            await asyncio.sleep(0.01)
        events.append("compaction done")

    first_may_end = asyncio.Event()
    first = asyncio.create_task(read("first", first_may_end))
    await asyncio.sleep(0)
    compaction = asyncio.create_task(compact())
    await asyncio.sleep(0.01)
    second = asyncio.create_task(read("second", asyncio.Event()))
    await asyncio.sleep(0.01)
    assert events == ["first reads"]  # the compaction waits for the first read; the second waits for it
    first_may_end.set()
    await first
    await compaction
    await asyncio.sleep(0.01)
    assert events[:4] == ["first reads", "first done", "compaction", "compaction done"]
    assert events[4] == "second reads"
    second.cancel()


def test_the_relations_page_shows_the_users_own_with_validity_and_sessions(memory: SessionVectorMemory) -> None:
    said = [("user", "Our analytics service switched from PostgreSQL to ClickHouse."), ("assistant", "Noted.")]
    when = "2026-03-09T10:00:00+00:00"
    memory.add_messages([{"role": r, "content": c, "timestamp": when} for r, c in said], session_id="db-switch")
    memory.for_user("bob").add_messages(
        [{"role": "user", "content": "Our billing API runs on Kubernetes."}, {"role": "assistant", "content": "OK."}],
        session_id="bob-infra",
    )
    memory.flush()
    http = signed_in(memory)
    listed = http.get("/ui/relations").text
    assert 'href="/ui/relations?entity=analytics+service"' in listed
    assert "billing API" not in listed  # Bob's
    page = http.get("/ui/relations", params={"entity": "analytics service"})
    assert page.status_code == 200
    rows = re.findall(r"<tr><td>(.*?)</td></tr>", page.text)
    (now,) = [r for r in rows if r.split("</td><td>")[0].endswith("ClickHouse</a>")]
    (before,) = [r for r in rows if r.split("</td><td>")[0].endswith("PostgreSQL</a>")]
    assert now.split("</td><td>")[1:3] == ["yes", "2026-03-09 → now"]
    assert before.split("</td><td>")[1:4] == ["no", "unknown → 2026-03-09", "ClickHouse"]
    assert 'href="/ui/session?id=db-switch"' in now
    assert "[S: 2026-03-09]" in now
    assert "no relation of this entity" in http.get("/ui/relations", params={"entity": "billing API"}).text
    for when in ("whenever", "0001-01-01T00:00:00+01:00"):
        refused = http.get("/ui/relations", params={"entity": "analytics service", "as_of": when})
        assert refused.status_code == 200
        assert 'role="alert"' in refused.text
    closed_only = http.get("/ui/relations", params={"entity": "PostgreSQL"}).text  # said and closed by one chunk
    assert closed_only.count('href="/ui/session?id=db-switch"') == 1
    hostile = http.get("/ui/relations", params={"entity": HOSTILE})
    assert "<script" not in hostile.text
    assert "<img" not in hostile.text


# Sign-in: the browser holds a session value, never the token (issue 43).

BOB_TOKEN = "bob-token-0123456789abcdef"  # noqa: S105 - a test token
SAME_ORIGIN = {"sec-fetch-site": "same-origin"}


class Clock:
    """A clock the test moves (seconds since the epoch)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def token_file(path: Path, users: dict[str, str]) -> Path:
    path.write_text("".join(f"{token} {user}\n" for user, token in users.items()), encoding="utf-8")
    path.chmod(0o600)
    return path


def served(memory: SessionVectorMemory, auth: Authenticator) -> TestClient:
    model = GenericFakeChatModel(messages=iter([AIMessage("ok")]))
    return TestClient(create_app(memory, model, auth=auth), base_url="http://127.0.0.1:8080", follow_redirects=False)


def stranger(http: TestClient) -> TestClient:
    """Another client of the same server, with no cookie of its own (a listener on another port replaying one)."""
    return TestClient(http.app, base_url="http://127.0.0.1:8080", follow_redirects=False)


def sign_in(http: TestClient, token: str) -> str:
    """Sign in through the form; the cookie the browser got and sends back, as ``name=value``."""
    answer = http.post("/ui/login", data={"token": token}, headers=SAME_ORIGIN)
    assert answer.status_code == 303, answer.text
    [(name, value)] = [(name, value) for name, value in answer.cookies.items() if name.startswith(COOKIE)]
    return f"{name}={value}"


def cookie_name(http: TestClient, token: str = TOKEN) -> str:
    """The name of a server's sign-in cookie (one per server), learned by signing another client in."""
    return sign_in(stranger(http), token).partition("=")[0]


def replayed(http: TestClient, cookie: str, path: str = "/ui/sessions") -> int:
    """The status of a page fetched with a captured ``name=value`` cookie (another client: no cookie of its own)."""
    return http.get(path, headers={"cookie": cookie}).status_code


def test_the_cookie_is_not_the_token_never_an_api_key_and_dies_at_sign_out(
    memory: SessionVectorMemory, tmp_path: Path
) -> None:
    """A listener on another port of the host gets the cookie: it never opens the API, and not the pages after sign-out."""
    auth = Authenticator.from_token_file(token_file(tmp_path / "tokens", {"alice": TOKEN}))
    http = served(memory, auth)
    thief = stranger(http)
    value = sign_in(http, TOKEN)
    assert TOKEN not in value
    bearer = thief.get("/v1/memory/sessions", headers={"Authorization": f"Bearer {value.partition('=')[2]}"})
    assert bearer.status_code == 401  # the cookie is no API key
    assert thief.get("/v1/memory/sessions", headers={"cookie": value}).status_code == 401
    assert replayed(thief, value) == 200  # while signed in, a captured cookie opens the pages (the docs say so)
    csrf = csrf_of(http.get("/ui/core").text)
    assert http.post("/ui/logout", data={"csrf": csrf}, headers=SAME_ORIGIN).status_code == 303
    assert replayed(thief, value) == 303  # signed out: the captured value is dead
    assert http.get("/ui/sessions").headers["location"] == "/ui/login"
    forged = thief.post("/ui/forget", data={"all": "1", "sure": "1", "csrf": csrf}, headers={"cookie": value})
    assert forged.status_code == 303
    assert memory.count() == 2  # nothing changed
    assert sign_in(http, TOKEN) != value  # a new sign-in is a new session
    assert "Secure" not in http.post("/ui/login", data={"token": TOKEN}, headers=SAME_ORIGIN).headers["set-cookie"]
    tls = TestClient(http.app, base_url="https://memory.example.com", follow_redirects=False)  # behind a TLS proxy
    assert "Secure" in tls.post("/ui/login", data={"token": TOKEN}, headers=SAME_ORIGIN).headers["set-cookie"]


def test_a_tampered_or_foreign_cookie_opens_nothing(memory: SessionVectorMemory, tmp_path: Path) -> None:
    auth = Authenticator.from_token_file(token_file(tmp_path / "tokens", {"alice": TOKEN, "bob": BOB_TOKEN}))
    http = served(memory, auth)
    name, _, value = sign_in(http, BOB_TOKEN).partition("=")
    body, _, signature = value.rpartition(".")
    version, _, payload = body.partition(".")
    fields = json.loads(base64.urlsafe_b64decode(payload + "=="))
    as_alice = base64.urlsafe_b64encode(json.dumps(["alice", *fields[1:]]).encode()).decode().rstrip("=")
    assert replayed(stranger(http), f"{name}={value}") == 200
    for forged in (f"{body}.{'A' * len(signature)}", f"{version}.{as_alice}.{signature}", TOKEN, value[:-2]):
        assert replayed(stranger(http), f"{name}={forged}") == 303, forged
    other_server = served(memory, auth)  # another server (another secret): the value means nothing there
    assert replayed(other_server, f"{cookie_name(other_server)}={value}") == 303


def test_two_servers_on_one_host_keep_their_own_sign_in(memory: SessionVectorMemory, tmp_path: Path) -> None:
    """'session-rag ui' and 'session-rag serve' on 127.0.0.1: cookies ignore the port, so one browser sends each
    server the other's cookie. Signing in to one must not replace the other's sign-in, nor signing out end it."""
    ui = client(memory)  # session-rag ui, port 8765, alice
    serve = served(memory, Authenticator.from_token_file(token_file(tmp_path / "tokens", {"bob": BOB_TOKEN})))
    serve.cookies.jar = ui.cookies.jar  # one browser: one cookie jar for the host, whatever the port
    assert ui.get(f"/ui/login?token={TOKEN}").status_code == 303
    assert serve.post("/ui/login", data={"token": BOB_TOKEN}, headers=SAME_ORIGIN).status_code == 303
    assert len({cookie.name for cookie in ui.cookies.jar}) == 2, "one sign-in cookie per server"
    assert "Lisbon" in ui.get("/ui/sessions").text
    assert "Miso" in serve.get("/ui/sessions").text
    csrf = csrf_of(ui.get("/ui/core").text)
    assert ui.post("/ui/logout", data={"csrf": csrf}, headers=SAME_ORIGIN).status_code == 303
    assert ui.get("/ui/sessions").headers["location"] == "/ui/login"
    assert "Miso" in serve.get("/ui/sessions").text, "signing out of one server leaves the other signed in"
    assert cookie_name(serve, BOB_TOKEN) == cookie_name(serve, BOB_TOKEN) != cookie_name(ui)


class _TeapotError(Exception):
    """An error of the host app's own, with its own handler."""


def test_an_apps_own_error_handler_decides_under_ui_too(memory: SessionVectorMemory) -> None:
    """``add_ui_routes`` on an app with its own handler: under ``/ui`` its status and message, as a page."""
    app = FastAPI()
    install_error_handlers(app)
    handled: list[str] = []

    @app.exception_handler(_TeapotError)
    async def teapot(request: Request, exc: Exception) -> JSONResponse:
        handled.append(request.url.path)
        return JSONResponse({"error": {"message": f"the app says: {exc}"}}, status_code=418)

    async def brew() -> None:
        msg = "short and stout"
        raise _TeapotError(msg)

    for path in ("/brew", "/ui/brew"):
        app.add_api_route(path, brew)
    add_ui_routes(
        app,
        memory,
        UiAccess(auth=Authenticator.for_one_user(TOKEN, "alice")),
        SearchSettings(budget=TokenBudget(context_window=8192)),
        compaction=False,
    )
    http = TestClient(app, base_url="http://127.0.0.1:8765", raise_server_exceptions=False)
    api, page = http.get("/brew"), http.get("/ui/brew")
    assert (api.status_code, api.json()) == (418, {"error": {"message": "the app says: short and stout"}})
    assert page.status_code == 418
    assert "the app says: short and stout" in page.text
    assert page.headers["content-type"].startswith("text/html")
    assert handled == ["/brew", "/ui/brew"]


def test_a_sign_in_expires_when_idle_and_after_its_lifetime(memory: SessionVectorMemory) -> None:
    clock = Clock()
    app = FastAPI()
    install_error_handlers(app)
    access = UiAccess(auth=Authenticator.for_one_user(TOKEN, "alice"), clock=clock)
    add_ui_routes(app, memory, access, SearchSettings(budget=TokenBudget(context_window=8192)), compaction=True)
    http = TestClient(app, base_url="http://127.0.0.1:8765", follow_redirects=False)
    captured = sign_in(http, TOKEN)
    started = clock.now
    while clock.now + IDLE_LIMIT * 0.9 < started + LIFETIME:  # in use: each page renews the idle limit
        clock.now += IDLE_LIMIT * 0.9
        assert http.get("/ui/sessions").status_code == 200, (clock.now - started) / 3600
        assert replayed(stranger(http), captured) == (200 if clock.now - started < IDLE_LIMIT else 303)
    clock.now = started + LIFETIME
    assert http.get("/ui/sessions").status_code == 303  # the lifetime is absolute, however busy
    sign_in(http, TOKEN)
    clock.now += IDLE_LIMIT - 1
    assert http.get("/ui/search").status_code == 200
    clock.now += IDLE_LIMIT
    assert http.get("/ui/search").status_code == 303  # idle too long
    assert IDLE_LIMIT == 30 * 60
    assert LIFETIME == 12 * 3600


def test_a_token_file_change_is_picked_up_without_a_restart(
    memory: SessionVectorMemory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tokens = token_file(tmp_path / "tokens", {"alice": TOKEN})
    http = served(memory, Authenticator.from_token_file(tokens))
    api = "/v1/memory/sessions"

    def bearer(token: str) -> int:
        return http.get(api, headers={"Authorization": f"Bearer {token}"}).status_code

    alice = sign_in(http, TOKEN)
    assert bearer(BOB_TOKEN) == 401
    token_file(tokens, {"alice": TOKEN, "bob": BOB_TOKEN})
    assert (bearer(BOB_TOKEN), bearer(TOKEN), replayed(http, alice)) == (200, 200, 200)
    token_file(tokens, {"bob": BOB_TOKEN})  # alice's token leaves the file: her API key and her sign-in end
    assert (bearer(TOKEN), replayed(http, alice), bearer(BOB_TOKEN)) == (401, 303, 200)
    token_file(tokens, {"alice": TOKEN, "bob": BOB_TOKEN})
    assert bearer(TOKEN) == 200
    tokens.write_text(f"{TOKEN} alice\nshort bob\n", encoding="utf-8")  # a broken edit: fail closed, say so
    refused = http.get(api, headers={"Authorization": f"Bearer {TOKEN}"})
    assert refused.status_code == 503
    assert refused.json()["error"]["message"] == "The server's token file is unusable; see the server log."
    assert replayed(http, alice) == 503  # the pages too
    said = [r.getMessage() for r in caplog.records if "Refusing every request" in r.getMessage()]
    assert len(said) == 1  # one line per reason, not per request
    assert f"{tokens}, line 2" in said[0]
    tokens.chmod(0o644)
    token_file(tokens, {"alice": TOKEN})
    assert bearer(TOKEN) == 200  # fixed: served again


def test_workers_share_sign_outs_through_their_folder(memory: SessionVectorMemory, tmp_path: Path) -> None:
    """Two apps with one secret are two workers of a server: the sign-out folder is what they share."""
    auth = Authenticator.from_token_file(token_file(tmp_path / "tokens", {"alice": TOKEN}))
    model = GenericFakeChatModel(messages=iter([AIMessage("ok")]))
    folder = tmp_path / "sign-outs"
    folder.mkdir(mode=0o700)

    def worker(shared: Path | None) -> TestClient:
        app = create_app(memory, model, auth=auth, pages_secret=b"s" * 32, sign_out_dir=shared)
        return TestClient(app, base_url="http://127.0.0.1:8080", follow_redirects=False)

    for shared, ended in ((folder, 303), (None, 200)):  # without the folder the other worker cannot know
        one, other = worker(shared), worker(shared)
        value = sign_in(one, TOKEN)
        assert replayed(other, value) == 200
        csrf = csrf_of(one.get("/ui/core").text)
        assert one.post("/ui/logout", data={"csrf": csrf}, headers=SAME_ORIGIN).status_code == 303
        assert (replayed(stranger(one), value), replayed(other, value)) == (303, ended)
    assert [p.stat().st_mode & 0o777 for p in folder.iterdir()] == [0o600]  # one signed-out id, private


def test_a_store_outage_is_503_with_retry_after_on_every_page(
    memory: SessionVectorMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API's rule in the pages: a store that does not answer is 503 with Retry-After, never a 200 or a 400."""
    http = signed_in(memory)
    csrf = csrf_of(http.get("/ui/core").text)
    down = "The Chroma server at 127.0.0.1:8000 did not answer 2 s ago (ReadTimeout: timed out)"

    def no_answer(*args: object, **kwargs: object) -> None:
        del args, kwargs
        raise StoreUnavailableError(down)

    for name in ("replica", "records", "flush", "forget"):  # every read and write of a user's side of the store
        monkeypatch.setattr(UserStore, name, no_answer)
    monkeypatch.setattr(CoreMemory, "apply", no_answer)  # the core memory's edits
    answers = {
        "search": http.get("/ui/search?q=Lisbon"),
        "relations": http.get("/ui/relations?entity=Lisbon"),
        "sessions": http.get("/ui/sessions"),
        "confirm": http.get("/ui/forget/confirm?session=trip"),
        "forget": http.post("/ui/forget", data={"session": "trip", "csrf": csrf}),
        "core-edit": http.post("/ui/core/memory", data={"text": "I live in Porto.", "csrf": csrf}),
    }
    for what, answer in answers.items():
        assert (answer.status_code, answer.headers.get("retry-after")) == (503, "1"), (what, answer.text[-500:])
        assert answer.headers["content-type"].startswith("text/html"), what
        assert "did not answer" in answer.text, what
    monkeypatch.undo()
    assert memory.count() == 2  # nothing changed
    assert memory.core.read("memory") == ""
