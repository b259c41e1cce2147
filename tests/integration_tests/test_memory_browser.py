"""The memory browser end to end in a real browser: Debian's Chromium driven by Playwright, real servers.

``session-rag ui`` on a local store: import a ChatGPT export, find a fact, forget its session, and the fact is gone
from search and from the store's files. ``session-rag serve``: core memory edited in the page reaches the next
turn's prompt (and an undo takes it out); two users in two browser contexts see only their own memories; forged
and foreign requests are refused.
"""

from __future__ import annotations

import http.client
import json
import re
import shutil
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from langchain_session_rag.cli.ui import launcher_file
from tests.integration_tests.browser_support import CHROMIUM_FLAGS, UiProcess, chromium_path, shoot
from tests.integration_tests.serve_support import REPO, Server, write_tokens

pytestmark = pytest.mark.slow

EXPORT_ZIP = REPO / "tests" / "data" / "imports" / "chatgpt" / "chatgpt-export.zip"
FACT = b"called Bubbles"
"""Said once, in the export's "Fridge sourdough feeding" conversation."""
ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef00"
ALICE_2, BOB_2 = "alice2-token-0123456789abcdef", "bob2-token-0123456789abcdef00"
ALICE_3 = "alice3-token-0123456789abcdef"
"""Users of their own for the tests sharing the module's server."""
PROMPT_ECHO = "tests.integration_tests.serve_support:prompt_echo"
VIEW = {"width": 1280, "height": 860}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless, for the whole module."""
    path = chromium_path()
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


def holds(folder: Path, needle: bytes) -> list[str]:
    """The files under ``folder`` whose bytes contain ``needle``."""
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


def search(page: Page, base: str, question: str) -> None:
    page.goto(f"{base}/ui/search")
    page.get_by_label("Question").fill(question)
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_role("status")).to_contain_text("memories at least")


def test_import_find_forget_and_the_files_are_clean(tmp_path: Path, browser: Browser) -> None:  # noqa: PLR0915 - one story
    store = tmp_path / "store"
    ui = UiProcess(tmp_path / "ui.log", store, "alice")
    context = browser.new_context(viewport=VIEW)
    try:
        page = context.new_page()
        page.goto(ui.address)  # the address the command printed signs in; the token leaves the address bar
        expect(page).to_have_url(re.compile(r"/ui/sessions$"))
        expect(page.get_by_text("No sessions stored yet")).to_be_visible()

        page.get_by_role("navigation").get_by_role("link", name="Import").click()
        page.get_by_label("Chat history file").set_input_files(str(EXPORT_ZIP))
        page.get_by_role("button", name="Import").click()
        report = page.get_by_role("table", name="Import report")
        expect(report).to_be_visible(timeout=120_000)
        expect(report.get_by_role("row", name="New sessions")).to_contain_text("6")
        expect(page.get_by_role("list", name="Progress")).to_contain_text("6 of 6")
        shoot(page, tmp_path, "ui-import")

        page.get_by_role("navigation").get_by_role("link", name="Sessions").click()
        expect(page.get_by_role("link", name="Fridge sourdough feeding")).to_be_visible()
        expect(page.get_by_role("status")).to_have_text("6 sessions.")
        shoot(page, tmp_path, "ui-sessions")
        page.get_by_label("Text").fill("bubbles rye")  # words of the conversation, not of its title
        page.get_by_role("button", name="Filter").click()
        expect(page.get_by_role("status")).to_have_text("1 session matches the filter with “bubbles rye”.")
        expect(page.get_by_role("link", name="Fridge sourdough feeding")).to_be_visible()

        search(page, ui.base, "What is my sourdough starter called?")
        row = page.get_by_role("row").filter(has_text="Bubbles").first
        cells = row.get_by_role("cell").all_inner_texts()
        assert cells[8] == "yes", cells  # in the prompt
        assert 0.1 <= float(cells[2]) <= 1.0, cells  # the similarity, over the floor
        shoot(page, tmp_path, "ui-search")
        assert holds(store, FACT), "the fact must be in the store's files before it is forgotten"

        page.goto(f"{ui.base}/ui/sessions")
        page.get_by_role("link", name="Fridge sourdough feeding").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Fridge sourdough feeding")
        expect(page.get_by_role("article").first).to_contain_text("[S: 2025-03-02]")
        shoot(page, tmp_path, "ui-session")
        page.get_by_role("link", name="Forget this session…").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Forget: are you sure?")
        expect(
            page.get_by_label("Erase from the store's files now (compaction: copies the store; slower)")
        ).to_be_checked()
        page.get_by_role("button", name="Forget", exact=True).click()
        receipt = page.get_by_role("table", name="Receipt")
        expect(receipt).to_be_visible(timeout=120_000)
        expect(receipt.get_by_role("row", name=re.compile("^Sessions removed"))).to_contain_text("Fridge sourdough")
        expect(receipt.get_by_role("row", name=re.compile("^Erased from"))).to_contain_text("yes")
        shoot(page, tmp_path, "ui-forget-receipt")

        search(page, ui.base, "What is my sourdough starter called?")
        expect(page.get_by_role("row").filter(has_text="Bubbles")).to_have_count(0)
        page.goto(f"{ui.base}/ui/sessions")
        expect(page.get_by_role("status")).to_have_text("5 sessions.")
    finally:
        context.close()
        ui.stop()
    assert not holds(store, FACT), "a forgotten fact is left in the store's files"


def chat(base: str, token: str, text: str) -> str:
    """One turn through the OpenAI-compatible API; the answer (the echo models say what the prompt held)."""
    body = {"model": "session-rag", "messages": [{"role": "user", "content": text}]}
    request = urllib.request.Request(
        f"{base}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        return str(json.load(answer)["choices"][0]["message"]["content"])


def pinned(prompt: str) -> str:
    """The core memory block of a prompt (a recalled earlier turn may quote an older one, escaped)."""
    found = re.search(r"<pinned_notes>(.*?)</pinned_notes>", prompt, re.DOTALL)
    return found.group(1) if found else ""


def signed_in(browser: Browser, base: str, token: str) -> tuple[BrowserContext, Page]:
    """A new browser context (its own cookies) signed in with ``token`` through the sign-in form."""
    context = browser.new_context(viewport=VIEW)
    page = context.new_page()
    page.goto(f"{base}/ui/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
    page.get_by_label("Access token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Sessions")
    return context, page


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One ``session-rag serve`` for the module's tests; each test signs in as users of its own."""
    folder = tmp_path_factory.mktemp("serve")
    users = {"alice": ALICE, "bob": BOB, "alice2": ALICE_2, "bob2": BOB_2, "alice3": ALICE_3}
    tokens = write_tokens(folder / "tokens", users)
    served = Server(folder / "serve.log", "--path", str(folder / "store"), "--token-file", str(tokens),
                    "--chat-model", PROMPT_ECHO)  # fmt: skip
    yield served
    served.stop()


def test_core_memory_edited_in_the_page_reaches_the_next_prompt(
    tmp_path: Path, browser: Browser, server: Server
) -> None:
    context, page = signed_in(browser, server.base, ALICE)
    try:
        page.get_by_role("navigation").get_by_role("link", name="Core memory").click()
        editor = page.get_by_role("form", name="Edit memory")
        editor.get_by_label("Text of memory").fill("I am vegetarian and I live in Porto.")
        editor.get_by_role("button", name="Save").click()
        expect(page.get_by_role("status")).to_have_text("Saved memory: version 1.")
        expect(page.get_by_role("table", name="History of memory, newest first")).to_contain_text("vegetarian")
        expect(page.get_by_text(re.compile(r"\d+ of 700 tokens used"))).to_be_visible()
        shoot(page, tmp_path, "ui-core")
        assert "I am vegetarian and I live in Porto." in pinned(chat(server.base, ALICE, "What should I cook tonight?"))
        assert "vegetarian" not in chat(server.base, BOB, "What should I cook tonight?")

        page.get_by_role("form", name="Undo the last change of memory").get_by_role("button").click()
        expect(page.get_by_role("status")).to_contain_text("Undid the last change of memory")
        assert "vegetarian" not in pinned(chat(server.base, ALICE, "What should I cook tonight?"))
    finally:
        context.close()


def _sessions(base: str, token: str) -> list[dict[str, Any]]:
    request = urllib.request.Request(f"{base}/v1/memory/sessions", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return list(json.load(answer)["data"])


def test_two_users_in_two_browsers_see_only_their_own(browser: Browser, server: Server) -> None:
    chat(server.base, ALICE_2, "My locker code at the gym is 4417.")
    chat(server.base, BOB_2, "My cat is called Miso and she hates the vacuum cleaner.")
    alice_session = _sessions(server.base, ALICE_2)[0]["session_id"]
    (alice, alice_page), (bob, bob_page) = (
        signed_in(browser, server.base, ALICE_2),
        signed_in(browser, server.base, BOB_2),
    )
    try:
        expect(alice_page.get_by_role("main")).to_contain_text("locker code")
        expect(alice_page.get_by_role("main")).not_to_contain_text("Miso")
        expect(bob_page.get_by_role("main")).to_contain_text("Miso")
        expect(bob_page.get_by_role("main")).not_to_contain_text("locker")
        search(bob_page, server.base, "What is my locker code?")
        expect(bob_page.get_by_role("main")).not_to_contain_text("4417")
        search(alice_page, server.base, "What is my locker code?")
        expect(alice_page.get_by_role("row").filter(has_text="4417").first).to_be_visible()

        # Bob knows the id of Alice's session: her page and her forget are not his.
        bob_page.goto(f"{server.base}/ui/sessions/{alice_session}")
        expect(bob_page.get_by_role("alert")).to_have_text("No such session in your memory.")
        bob_page.goto(f"{server.base}/ui/forget/confirm?session={alice_session}")
        expect(bob_page.get_by_role("status")).to_have_text("Nothing stored matches: nothing to forget.")

        # A form on another site, submitted in Alice's browser, changes nothing (no cookie goes, and no form passes).
        alice_page.set_content(
            f'<form method="post" action="{server.base}/ui/forget"><input name="session" value="{alice_session}">'
            '<input name="compact" value="1"><button type="submit">Win a prize</button></form>'
        )
        alice_page.get_by_role("button", name="Win a prize").click()
        expect(alice_page.get_by_role("heading", level=1)).to_have_text(re.compile("Sign in|Refused"))
        # A form posted from another site, or without the page's anti-forgery value, changes nothing.
        forged = {"session": alice_session, "compact": "1"}
        from_elsewhere = alice.request.post(f"{server.base}/ui/forget", form=forged,
                                            headers={"Origin": "http://attacker.invalid"})  # fmt: skip
        assert from_elsewhere.status == 403
        no_token = alice.request.post(f"{server.base}/ui/forget", form=forged)
        assert no_token.status == 403
        assert [s["session_id"] for s in _sessions(server.base, ALICE_2)] == [alice_session]
    finally:
        alice.close()
        bob.close()

    stranger = browser.new_context()
    try:
        page = stranger.new_page()
        page.goto(f"{server.base}/ui/sessions")  # no cookie: sent to sign in
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
        page.get_by_label("Access token").fill("not-a-token-of-this-server")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_have_text("This token is not known to the server.")
    finally:
        stranger.close()


def replayed(base: str, cookie: str, path: str = "/ui/sessions") -> tuple[int, str | None]:
    """A page fetched with a captured ``name=value`` cookie, by another program: its status and where it sends the
    browser."""
    connection = http.client.HTTPConnection("127.0.0.1", int(base.rsplit(":", 1)[1]), timeout=60)
    try:
        connection.request("GET", path, headers={"Cookie": cookie})
        answer = connection.getresponse()
        answer.read()
        return answer.status, answer.getheader("location")
    finally:
        connection.close()


class Listener(BaseHTTPRequestHandler):
    """Another program on another port of 127.0.0.1: it keeps the ``Cookie`` header of every request it gets."""

    heard: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.heard.append(self.headers.get("Cookie", ""))
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<!doctype html><title>elsewhere</title><h1>Elsewhere</h1>")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        del format, args


def test_a_cookie_heard_on_another_port_is_no_token_and_ends_at_sign_out(browser: Browser, server: Server) -> None:
    """Issue 43's attack: cookies are not port-isolated, so a listener on another port gets the sign-in cookie."""
    listener = ThreadingHTTPServer(("127.0.0.1", 0), Listener)
    threading.Thread(target=listener.serve_forever, daemon=True).start()
    context, page = signed_in(browser, server.base, ALICE_3)
    try:
        page.goto(f"http://127.0.0.1:{listener.server_port}/ui/anything")  # the signed-in browser opens its page
        expect(page.get_by_role("heading", level=1)).to_have_text("Elsewhere")
        heard = [found.group() for c in Listener.heard if (found := re.search(r"session_rag_ui_[0-9a-f]+=[^;]+", c))]
        assert heard, "Chromium sends the cookie to another port of the host (what the docs warn of)"
        cookie = heard[-1]
        value = cookie.partition("=")[2]
        assert ALICE_3 not in value
        assert replayed(server.base, cookie) == (200, None)  # while signed in, it opens the pages (the docs say so)
        stranger = urllib.request.Request(
            f"{server.base}/v1/memory/sessions", headers={"Authorization": f"Bearer {value}"}
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(stranger, timeout=30)
        assert refused.value.code == 401  # never an API key
        page.goto(f"{server.base}/ui/sessions")
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
        assert replayed(server.base, cookie) == (303, "/ui/login")  # signed out: the heard value opens nothing
    finally:
        context.close()
        listener.shutdown()
        listener.server_close()


UNLABELLED = """() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea, button, a')]
    .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.textContent.trim())
    .map(e => e.outerHTML)"""


def focus_order(page: Page, steps: int) -> list[str]:
    """What Tab reaches, in order: each focused element's label, name or text."""
    reached = []
    for _ in range(steps):
        page.keyboard.press("Tab")
        reached.append(
            page.evaluate(
                "() => { const e = document.activeElement;"
                " return (e.labels && e.labels.length ? e.labels[0].textContent : e.textContent).trim(); }"
            )
        )
    return reached


@pytest.fixture(scope="module")
def carol_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[UiProcess, Path]]:
    """One ``session-rag ui`` of carol's for the tests that need no store of their own; its ``TMPDIR``."""
    folder = tmp_path_factory.mktemp("carol-ui")
    temp = folder / "tmp"
    temp.mkdir()
    ui = UiProcess(folder / "ui.log", folder / "store", "carol", TMPDIR=str(temp))
    try:
        yield ui, temp
    finally:
        ui.stop()


def test_keyboard_and_screen_reader_use(carol_ui: tuple[UiProcess, Path], browser: Browser) -> None:
    ui, _ = carol_ui
    context = browser.new_context(viewport=VIEW)
    try:
        page = context.new_page()
        launcher = launcher_file(ui.address)  # what --open hands the browser: a file, not the address
        page.goto(launcher.as_uri())
        expect(page.get_by_role("heading", level=1)).to_have_text("Sessions")  # signed in, no question asked
        shutil.rmtree(launcher.parent)
        page.goto(ui.address)
        assert focus_order(page, 10) == [
            "Skip to the content", "Sessions", "Search", "Relations", "Forget", "Core memory", "Import", "Sign out",
            "Text", "When",
        ]  # fmt: skip
        page.goto(f"{ui.base}/ui/sessions")
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")  # the skip link: focus moves to the page's content
        assert page.evaluate("() => document.activeElement.id") == "main"
        pages = ("sessions", "search?q=anything", "relations", "relations?entity=Porto", "forget",
                 "forget/confirm?all=1", "core", "import")  # fmt: skip
        for path in pages:
            page.goto(f"{ui.base}/ui/{path}")
            assert page.evaluate(UNLABELLED) == [], path
            expect(page.get_by_role("heading", level=1)).to_have_count(1)
            expect(page.locator("html")).to_have_attribute("lang", "en")
        # Keyboard only: write core memory, and the page says so where a screen reader reads it.
        page.goto(f"{ui.base}/ui/core")
        page.get_by_label("Text of now").focus()
        page.keyboard.type("Training for the Porto half marathon.")
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")
        expect(page.get_by_role("status")).to_have_text("Saved now: version 1.")
    finally:
        context.close()


IMPORTED = 40
"""Conversations in the import the browser leaves."""


def test_an_import_the_browser_leaves_still_finishes_and_leaves_no_copy(carol_ui: tuple[UiProcess, Path]) -> None:
    """The upload's copy is removed when the import ends, even when the page was closed while it ran.

    The page is closed when it shows the first conversation imported: the others are still to come.
    """
    ui, temp = carol_ui
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    opener.open(ui.address, timeout=60).read()  # signs in: the cookie is kept by the opener
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', opener.open(f"{ui.base}/ui/import").read().decode())
    assert csrf is not None
    chats = "".join(
        json.dumps({"messages": [{"role": "user", "content": f"Reminder {n}: water the fern."},
                                 {"role": "assistant", "content": "Noted."}]}) + "\n"
        for n in range(IMPORTED)
    )  # fmt: skip
    boundary = "----session-rag-test"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n{csrf.group(1)}\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="format"\r\n\r\nauto\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="chats.jsonl"\r\n'
        f"Content-Type: application/json\r\n\r\n{chats}\r\n--{boundary}--\r\n"
    ).encode()
    jar = next(h for h in opener.handlers if isinstance(h, urllib.request.HTTPCookieProcessor)).cookiejar
    cookie = next(f"{c.name}={c.value}" for c in jar)
    connection = http.client.HTTPConnection("127.0.0.1", int(ui.base.rsplit(":", 1)[1]), timeout=60)
    connection.request("POST", "/ui/import", body=body, headers={
        "Content-Type": f"multipart/form-data; boundary={boundary}", "Cookie": cookie,
        "Origin": ui.base, "Sec-Fetch-Site": "same-origin"})  # fmt: skip
    answer = connection.getresponse()
    assert answer.status == 200
    shown = b""
    while f"<li>1 of {IMPORTED}:".encode() not in shown:  # the first step: the import runs, the rest to come
        more = answer.read1(4096)
        assert more, shown.decode(errors="replace")  # the page ended before it showed the first step
        shown += more
    connection.close()  # the browser leaves
    for _ in range(600):  # bounded: at most about a minute
        page = opener.open(f"{ui.base}/ui/sessions").read().decode()
        if f"{IMPORTED} sessions." in page:
            break
        time.sleep(0.1)
    assert f"{IMPORTED} sessions." in page  # the import finished on its own
    for _ in range(50):
        if not list(temp.glob("session-rag-upload-*")):
            break
        time.sleep(0.1)
    assert list(temp.glob("session-rag-upload-*")) == [], "the upload's copy was left behind"
