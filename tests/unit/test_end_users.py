"""A backend authenticated by IAM names its end users (X-ChatMemory-End-User): each end user a
caller of their own, isolated from the others and from the backend's own identity; the header
refused from any role not allowed to name end users, and from a Cognito user."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chatmemory import schema, wiring
from chatmemory.services.conversation.chat import ChatDeps
from local.gateway import load_routes, proxy_event
from tests.fakes import FakeGenerator

BACKEND = "arn:aws:iam::123456789012:role/apps/Backend"
SESSION = "arn:aws:sts::123456789012:assumed-role/Backend/i-0abc"
OTHER = "arn:aws:sts::123456789012:assumed-role/Reporting/i-0def"


class IamApi:
    """The chat Lambda as API Gateway calls it with IAM auth (the caller's ARN in identity)."""

    def __init__(self, lambda_context: Any) -> None:
        from handlers import chat_api

        self._handler, self._context, self._routes = chat_api.handler, lambda_context, load_routes()

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        arn: str | None = SESSION,
        end_user: str | None = None,
        cognito: str | None = None,
    ) -> tuple[int, Any]:
        headers = [("Content-Type", "application/json")]
        if end_user is not None:
            headers.append((schema.END_USER_HEADER.lower(), end_user))  # any case
        event = proxy_event(
            method=method,
            target=path,
            headers=headers,
            body=None if body is None else json.dumps(body),
            user_id=cognito or "unused",
            routes=self._routes,
        )
        if cognito is None:
            event["requestContext"]["authorizer"] = None
            event["requestContext"]["identity"]["userArn"] = arn
        answer = self._handler(event, self._context)
        text = answer.get("body")
        return answer["statusCode"], json.loads(text) if text else None


@pytest.fixture
def api(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> IamApi:
    monkeypatch.setenv(schema.ENV_END_USER_ROLE_ARNS, BACKEND)
    wiring.clear_caches()
    deps = ChatDeps(memory=wiring.short_term_memory(), generator=FakeGenerator())
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    return IamApi(lambda_context)


def test_each_end_user_of_an_allowed_role_is_a_caller_of_their_own(api: IamApi) -> None:
    status, created = api.call("POST", "/sessions", {"name": "mine"}, end_user="u-1")
    assert status == 201
    sid = created["session"]["session_id"]
    stored = wiring.chat_deps().memory.get_session(sid)
    assert stored is not None and stored.user_id == f"{BACKEND}/end-user/u-1"

    status, turn = api.call(
        "POST", f"/sessions/{sid}/messages", {"content": "I live in Porto."}, end_user="u-1"
    )
    assert status == 200, turn
    # Another end user of the same backend, and the backend itself, see none of it.
    for other in ({"end_user": "u-2"}, {}):
        assert api.call("GET", f"/sessions/{sid}", **other)[0] == 404
        assert api.call("GET", f"/sessions/{sid}/messages", **other)[0] == 404
        assert (
            api.call("POST", f"/sessions/{sid}/messages", {"content": "hello"}, **other)[0] == 404
        )
        assert api.call("GET", "/sessions", **other)[1]["sessions"] == []
    assert [
        s["session_id"] for s in api.call("GET", "/sessions", end_user="u-1")[1]["sessions"]
    ] == [sid]
    # One end user's "forget everything" is theirs alone.
    mine = api.call("POST", "/sessions", {"name": "kept"}, end_user="u-2")[1]["session"]
    assert api.call("DELETE", "/memories", end_user="u-1")[0] == 204
    assert api.call("GET", f"/sessions/{sid}", end_user="u-1")[0] == 404
    assert api.call("GET", f"/sessions/{mine['session_id']}", end_user="u-2")[0] == 200


@pytest.mark.parametrize(
    "caller",
    [
        {"arn": OTHER},  # a role not allowed to name end users
        {"cognito": "alice"},  # a Cognito user: one caller, never someone else
    ],
    ids=["another-role", "cognito-user"],
)
def test_the_header_is_refused_from_anyone_else(api: IamApi, caller: dict[str, Any]) -> None:
    for method, path, body in (
        ("POST", "/sessions", {"name": "x"}),
        ("POST", "/sessions/s-1/messages", {"content": "hello"}),  # the message's own path
    ):
        status, answer = api.call(method, path, body, end_user="u-1", **caller)
        assert status == 403, answer
        assert answer["error"]["code"] == "forbidden"


@pytest.mark.parametrize("named", ["", "..", "a/b", "u#1", "x" * 129, "ü"])
def test_an_end_user_id_outside_the_identifier_rule_is_a_bad_request(
    api: IamApi, named: str
) -> None:
    status, answer = api.call("POST", "/sessions", {"name": "x"}, end_user=named)
    assert status == 400, answer
