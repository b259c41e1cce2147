"""The memory browser's markup: one page shell, escaped values, forms; plain HTML and one stylesheet, no script.

Every value that comes from a user or the store goes through :func:`esc`; the pages carry a Content-Security-Policy
that allows no script at all and no request to another origin, so stored text can never run or call out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from html import escape
from urllib.parse import quote, urlencode

from starlette.responses import HTMLResponse

from langchain_session_rag.server.schemas import RETRY_AFTER_SECONDS

PREFIX = "/ui"
"""Where the pages are served."""
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; "
        "base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # "no-referrer" makes Chromium send "Origin: null" with forms
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}
"""Sent with every page: no script, nothing fetched from elsewhere, not framed, not cached (it is private data)."""
NAV = (("sessions", "Sessions"), ("search", "Search"), ("relations", "Relations"), ("forget", "Forget"),
       ("core", "Core memory"), ("import", "Import"))  # fmt: skip


def esc(value: object) -> str:
    """Text as HTML (quotes escaped too: safe in attributes)."""
    return escape(str(value), quote=True)


def url(path: str, **query: object) -> str:
    """A page's address with its query (empty values left out), escaped for an attribute."""
    given = {k: v if isinstance(v, list | tuple) else str(v) for k, v in query.items() if v not in (None, "")}
    return esc(f"{PREFIX}/{quote(path)}" + (f"?{urlencode(given, doseq=True)}" if given else ""))


def session_url(session_id: str) -> str:
    """A session's page, its id in the query (a ``/``, ``.`` or ``..`` id stays whole), escaped."""
    return esc(f"{PREFIX}/session?{urlencode({'id': session_id})}")


def when(value: datetime | None) -> str:
    """A time as ``2026-03-05 14:02 UTC`` in a ``<time>`` element (``-`` when unknown)."""
    if value is None:
        return "-"
    return f'<time datetime="{esc(value.isoformat())}">{esc(value.strftime("%Y-%m-%d %H:%M UTC"))}</time>'


def table(caption: str, head: Sequence[str], rows: Iterable[Sequence[str]], *, empty: str) -> str:
    """A data table (cells already HTML); ``empty`` is said instead when there are no rows."""
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    if not body:
        return f'<p class="empty">{esc(empty)}</p>'
    heads = "".join(f'<th scope="col">{esc(h)}</th>' for h in head)
    return f"<table><caption>{esc(caption)}</caption><thead><tr>{heads}</tr></thead><tbody>{body}</tbody></table>"


def hidden(**fields: object) -> str:
    """Hidden form fields (a list: one field per value)."""
    pairs = [(k, x) for k, v in fields.items() for x in (v if isinstance(v, list | tuple) else [v]) if x is not None]
    return "".join(f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">' for k, v in pairs)


def post_form(action: str, csrf: str, inner: str, *, label: str | None = None, css: str = "") -> str:
    """A POST form with its anti-forgery token; ``label`` names it for screen readers."""
    named = f' aria-label="{esc(label)}"' if label else ""
    return (
        f'<form method="post" action="{esc(PREFIX + "/" + action)}" class="{esc(css)}"{named}>'
        f"{hidden(csrf=csrf)}{inner}</form>"
    )


def field(name: str, label: str, *, value: str = "", kind: str = "text", hint: str = "", extra: str = "") -> str:
    """A labelled input, its hint tied to it (``aria-describedby``)."""
    ident = f"f-{name}"
    described = f' aria-describedby="{ident}-hint"' if hint else ""
    hint_html = f'<span class="hint" id="{ident}-hint">{esc(hint)}</span>' if hint else ""
    return (
        f'<div class="field"><label for="{ident}">{esc(label)}</label>'
        f'<input id="{ident}" name="{esc(name)}" type="{esc(kind)}" value="{esc(value)}"{described}{extra}>'
        f"{hint_html}</div>"
    )


def notice(text: str, *, kind: str = "info") -> str:
    """A message read out by screen readers when the page loads (``role=status``, or ``alert`` for errors)."""
    role = "alert" if kind == "error" else "status"
    return f'<p class="notice {esc(kind)}" role="{role}">{esc(text)}</p>'


def shell(title: str, *, user: str | None, active: str = "", csrf: str = "", then: str = "") -> tuple[str, str]:
    """A page's markup before and after its body: skip link, navigation (the current page marked), heading.

    ``then``: a page of these to go on to at once (``<meta http-equiv="refresh">``, no script).
    """
    links = "".join(
        f'<li><a href="{url(key)}"' + (' aria-current="page"' if key == active else "") + f">{esc(name)}</a></li>"
        for key, name in NAV
    )
    who = nav = ""
    if user is not None:
        leave = post_form("logout", csrf, '<button type="submit" class="link">Sign out</button>', css="inline")
        who = f'<p class="who">Memory of <strong>{esc(user)}</strong> {leave}</p>'
        nav = f'<nav aria-label="Main"><ul>{links}</ul></nav>'
    reload = f'<meta http-equiv="refresh" content="0;url={PREFIX}/{esc(then)}">' if then else ""
    head = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"{reload}<title>{esc(title)} · session-rag memory</title>"
        f'<link rel="stylesheet" href="{PREFIX}/static/ui.css"></head><body>'
        '<a class="skip" href="#main">Skip to the content</a>'
        f'<header><p class="brand">session-rag memory</p>{nav}{who}</header>'
        f'<main id="main" tabindex="-1"><h1>{esc(title)}</h1>'
    )
    return head, "</main></body></html>"


def page(
    title: str,
    body: str,
    *,
    user: str | None,
    active: str = "",
    csrf: str = "",
    status: int = 200,
    then: str = "",
) -> HTMLResponse:
    """A whole page (see :func:`shell`) with the headers every page carries."""
    head, tail = shell(title, user=user, active=active, csrf=csrf, then=then)
    retry = {"Retry-After": str(RETRY_AFTER_SECONDS)} if status == 503 else {}  # noqa: PLR2004 - as the API answers
    return HTMLResponse(head + body + tail, status_code=status, headers={**HEADERS, **retry})
