"""The stream function and its routes (issue 40): POST /sessions/{session_id}/messages/stream
(and issue 41's POST /v1/chat/completions) answered by a function of its own behind the AWS Lambda Web Adapter's layer, streamed by API
Gateway (ResponseTransferMode STREAM) with its own timeout, under the API's authorizer; every
other request still reaches the chat function."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chatmemory import schema
from stacks import packaging
from stacks.config import ARCHITECTURE, STREAM_TIMEOUT_SECONDS
from tests.infra.synth import Synth, render


def _stream_function(synth: Synth) -> dict[str, Any]:
    return synth.json["Resources"][synth.logical_id(synth.stack.api.stream_handler)]["Properties"]


def _methods(synth: Synth) -> dict[tuple[str, str], dict[str, Any]]:
    """(path, HTTP method) -> the method's properties."""
    resources = synth.resources("AWS::ApiGateway::Resource")

    def path(reference: Any) -> str:
        if isinstance(reference, dict) and "Ref" in reference:
            props = resources[reference["Ref"]]["Properties"]
            return f"{path(props['ParentId'])}/{props['PathPart']}"
        return ""  # the root

    return {
        (path(m["Properties"]["ResourceId"]) or "/", m["Properties"]["HttpMethod"]): m["Properties"]
        for m in synth.resources("AWS::ApiGateway::Method").values()
    }


def test_the_stream_function_runs_its_web_server_behind_the_web_adapter(default: Synth) -> None:
    props = _stream_function(default)
    chat = default.json["Resources"][default.logical_id(default.stack.api.handler)]["Properties"]
    assert props["Handler"] == "stream.sh"
    assert props["Timeout"] == STREAM_TIMEOUT_SECONDS == 300
    assert props["Architectures"] == chat["Architectures"] == [ARCHITECTURE]
    env = props["Environment"]["Variables"]
    assert env["AWS_LAMBDA_EXEC_WRAPPER"] == "/opt/bootstrap"
    assert env["AWS_LWA_INVOKE_MODE"] == "response_stream"
    assert env["AWS_LWA_READINESS_CHECK_PATH"] == schema.STREAM_HEALTH_PATH
    # The chat's environment otherwise: the same tables, models, index and CORS origins.
    assert {k: v for k, v in env.items() if not k.startswith(("AWS_LWA_", "AWS_LAMBDA_"))} == (
        chat["Environment"]["Variables"]
    )
    # The same one asset as every function, and the adapter as a published layer (by ARN,
    # of the functions' architecture): nothing is bundled for it, with or without Docker.
    assert props["Code"] == chat["Code"]
    layers = [render(layer) for layer in props["Layers"]]
    adapter = "LambdaAdapterLayerArm64" if ARCHITECTURE == "arm64" else "LambdaAdapterLayerX86"
    assert (
        f"arn:${{AWS::Partition}}:lambda:${{AWS::Region}}:753240598075:layer:{adapter}:26" in layers
    )
    assert len(default.resources("AWS::Lambda::LayerVersion")) == 0


@pytest.mark.parametrize(
    "route", ["/sessions/{session_id}/messages/stream", schema.OPENAI_CHAT_PATH]
)
def test_the_streamed_route_streams_from_the_stream_function_under_the_api_authorizer(
    default: Synth, route: str
) -> None:
    methods = _methods(default)
    stream = methods[(route, "POST")]
    proxy = methods[("/{proxy+}", "ANY")]
    integration = stream["Integration"]
    assert integration["Type"] == "AWS_PROXY"
    assert integration["ResponseTransferMode"] == "STREAM"
    assert integration["TimeoutInMillis"] == STREAM_TIMEOUT_SECONDS * 1000
    uri = render(integration["Uri"])
    stream_id = default.logical_id(default.stack.api.stream_handler)
    assert uri.endswith(f"functions/${{{stream_id}.Arn}}/response-streaming-invocations")
    assert (
        (stream["AuthorizationType"], stream["AuthorizerId"])
        == (
            proxy["AuthorizationType"],
            proxy["AuthorizerId"],
        )
        == ("COGNITO_USER_POOLS", proxy["AuthorizerId"])
    )


def test_every_other_request_on_the_way_still_reaches_the_chat_function(default: Synth) -> None:
    """The resources the route needs would take their paths from the root's proxy: each answers
    ANY with the chat function, with a {proxy+} below where no path variable is."""
    methods = _methods(default)
    chat_id = default.logical_id(default.stack.api.handler)
    chat_paths = {
        path
        for (path, verb), props in methods.items()
        if verb == "ANY" and f"${{{chat_id}.Arn}}" in render(props["Integration"].get("Uri", ""))
    }
    assert chat_paths == {
        "/{proxy+}",
        "/sessions",
        "/sessions/{session_id}",
        "/sessions/{session_id}/{proxy+}",
        "/sessions/{session_id}/messages",
        "/sessions/{session_id}/messages/{proxy+}",
        "/sessions/{session_id}/messages/stream",  # its other methods: the chat's 404/405
        # The OpenAI-compatible routes: GET /v1/models and the rest stay the chat function's.
        "/v1",
        "/v1/{proxy+}",
        "/v1/chat",
        "/v1/chat/{proxy+}",
        "/v1/chat/completions",
    }
    for (_, verb), props in methods.items():
        if verb != "OPTIONS":
            assert props["AuthorizationType"] == "COGNITO_USER_POOLS"


def test_with_iam_auth_the_streamed_route_takes_sigv4_as_every_route(
    synth_cache: Callable[..., Synth],
) -> None:
    synth = synth_cache(auth="iam")
    methods = _methods(synth)
    stream = methods[("/sessions/{session_id}/messages/stream", "POST")]
    assert stream["AuthorizationType"] == "AWS_IAM"
    assert methods[(schema.OPENAI_CHAT_PATH, "POST")]["AuthorizationType"] == "AWS_IAM"
    env = _stream_function(synth)["Environment"]["Variables"]
    assert schema.ENV_AGENT_ROLE_ARN in env  # it tells agents from users as the chat does


def test_the_stream_functions_handler_is_an_executable_of_the_asset(tmp_path: Path) -> None:
    """Lambda runs the handler file itself (the runtime's exec wrapper starts it): the copy
    into the asset keeps its mode."""
    source = packaging.SOURCE_DIR / "stream.sh"
    assert source.stat().st_mode & stat.S_IXUSR
    target = tmp_path / "asset"
    packaging.copy_sources(packaging.SOURCE_DIR, target)
    assert os.access(target / "stream.sh", os.X_OK)
    assert (target / "stream.sh").read_text().startswith("#!/bin/sh")
