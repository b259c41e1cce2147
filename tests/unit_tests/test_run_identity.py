"""Who a run is for, as LangGraph's server and LangMem name users (issue 28).

The server puts the authenticated user in ``configurable["langgraph_auth_user_id"]``; a client's own ``user_id``
(context or configurable) must not override it. LangMem names the user ``langgraph_user_id``.
"""

from __future__ import annotations

import pytest

from langchain_session_rag.errors import IdentityConflictError, InvalidArgumentError
from langchain_session_rag.identity import run_identity


def test_langmem_key_names_the_user() -> None:
    ids = run_identity({"configurable": {"langgraph_user_id": "ana", "session_id": "s"}}, use_run_context=False)
    assert (ids.user_id, ids.session_id) == ("ana", "s")
    assert run_identity(context={"langgraph_user_id": "ana"}).user_id == "ana"


def test_langmem_key_and_user_id_must_agree() -> None:
    assert run_identity({"configurable": {"langgraph_user_id": "ana", "user_id": "ana"}}).user_id == "ana"
    with pytest.raises(IdentityConflictError, match="langgraph_user_id"):
        run_identity({"configurable": {"langgraph_user_id": "ana", "user_id": "bob"}})
    with pytest.raises(IdentityConflictError):
        run_identity({"configurable": {"langgraph_user_id": "ana"}}, context={"user_id": "bob"})


def test_authenticated_user_is_the_run_user() -> None:
    ids = run_identity({"configurable": {"langgraph_auth_user_id": "ana", "session_id": "s"}}, use_run_context=False)
    assert ids.user_id == "ana"
    same = run_identity({"configurable": {"langgraph_auth_user_id": "ana"}}, context={"user_id": "ana"})
    assert same.user_id == "ana"


@pytest.mark.parametrize(
    ("configurable", "context"),
    [
        ({"user_id": "bob"}, None),
        ({"langgraph_user_id": "bob"}, None),
        ({}, {"user_id": "bob"}),
        ({}, {"langgraph_user_id": "bob"}),
    ],
)
def test_client_cannot_name_another_user_than_the_authenticated_one(configurable: dict, context: dict | None) -> None:
    config = {"configurable": {"langgraph_auth_user_id": "ana", **configurable}}
    with pytest.raises(IdentityConflictError, match="authenticated as user 'ana'"):
        run_identity(config, context=context, use_run_context=False)


def test_unauthenticated_server_run_names_no_user() -> None:
    assert run_identity({"configurable": {"langgraph_auth_user_id": ""}}, use_run_context=False).user_id is None


def test_unfit_authenticated_id_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="authenticated user"):
        run_identity({"configurable": {"langgraph_auth_user_id": "a\x00b"}}, use_run_context=False)
