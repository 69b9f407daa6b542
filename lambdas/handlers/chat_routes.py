"""The chat API's resolver: Powertools' APIGatewayRestResolver joining the routers of
handlers/routes/ (one per resource), its middlewares (JSON bodies only, request and answer
validation by the pydantic models of chatmemory/api_models/) and the mapping of the project's
errors to HTTP answers, in one place; and the OpenAPI document made from them (openapi.json).
The function's entry, handlers/chat_api.py, imports this module on the first request that is
not a chat message it answers itself."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.middlewares.openapi_validation import (
    OpenAPIRequestValidationMiddleware,
    OpenAPIResponseValidationMiddleware,
)
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)

from chatmemory import api_models as m
from chatmemory.errors import ChatMemoryError
from handlers.chat_shared import cors_origins, known_error, unexpected_error
from handlers.http import (
    UnsupportedMediaType,
    cors_config,
    error_response,
    json_bodies_only,
)
from handlers.json_body import strict_json
from handlers.routes import (
    agents,
    checkpoints,
    memories,
    sessions,
    store,
    streaming,
    turns,
)
from handlers.routes import openai as openai_routes

# The routers, by resource, in the order their routes are matched.
ROUTERS = (
    sessions.router,
    turns.router,
    streaming.router,
    memories.router,
    store.router,
    checkpoints.router,
    agents.router,
)


def _known_error(error: ChatMemoryError) -> Response:
    return error_response(*known_error(error))


def _unsupported_media_type(_: RequestUnsupportedContentType) -> Response:
    # Powertools' own check, when a route reads a body: for a request without one whose
    # Content-Type is not JSON (one with a body was refused by json_bodies_only already).
    return _known_error(UnsupportedMediaType())


def _no_route(_: NotFoundError) -> Response:
    return error_response(404, "not_found", "no such route")


def _unexpected(error: Exception) -> Response:
    return error_response(*unexpected_error())


# How a request that failed is answered, by the error it failed with (the most specific first).
_ERROR_ANSWERS: tuple[tuple[type[Exception], Any], ...] = (
    (ChatMemoryError, _known_error),
    # OpenAI's error shape on /v1, the API's own elsewhere (one handler: routers share them).
    (RequestValidationError, openai_routes.invalid_request),
    (RequestUnsupportedContentType, _unsupported_media_type),
    (NotFoundError, _no_route),
    (Exception, _unexpected),
)


@lru_cache(maxsize=1)
def api(cors_origins: tuple[str, ...]) -> APIGatewayRestResolver:
    """The resolver of every router, answering browsers of `cors_origins` (CORSConfig).

    Built on the first request from the settings of that moment, so in Lambda once per cold
    start (and again in a test that changes the settings). Powertools' data validation would
    run before any middleware; it is added after json_bodies_only instead, so a form or
    multipart body is refused with 415 before Powertools parses it."""
    resolver = APIGatewayRestResolver(
        cors=cors_config(cors_origins), json_body_deserializer=strict_json
    )
    resolver.use(
        [
            json_bodies_only,
            OpenAPIRequestValidationMiddleware(),
            OpenAPIResponseValidationMiddleware(),
        ]
    )
    for router in (*ROUTERS, openai_routes.router):
        resolver.include_router(router)
    for error, answer in _ERROR_ANSWERS:
        resolver.exception_handler(error)(answer)
    return resolver


_ERRORS = {
    400: "Malformed JSON, a missing or invalid field",
    401: "No authenticated caller",
    404: "No such session for this caller",
    409: "The session is ended, or busy with concurrent messages",
    413: "Content over the configured limit",
    415: "A body that is not sent as application/json",
    500: "Unexpected error (no details are leaked)",
    502: "The model answered with an error",
    503: (
        "A model or a store is unavailable or throttled: retry later. A message whose model "
        "call failed is kept: retry it with the same client_message_id"
    ),
}


SECURITY_SCHEMES: dict[str, Any] = {
    "CognitoIdToken": {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": (
            "An ID token of the stack's Cognito user pool (output UserPoolId), sent as it is "
            "(no 'Bearer' prefix); the caller is its `sub` claim. Deployments with auth=cognito."
        ),
        "x-amazon-apigateway-authtype": "cognito_user_pools",
    },
    "SigV4": {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": (
            "An AWS Signature Version 4 of the request (service execute-api) by an IAM "
            "principal allowed to invoke the API; the caller is its identity. Deployments "
            "with auth=iam. A session of a role the deployment allows (endUserRoleArns) may "
            "name the end user it calls for in the X-ChatMemory-End-User header (1-128 "
            "letters, digits and _ . : -): each end user is then a caller of their own; from "
            "anyone else the header is refused with 403."
        ),
        "x-amazon-apigateway-authtype": "awsSigv4",
    },
}


_AGENTS_ONLY = "The caller is not an agent (the Cognito group AGENT_GROUP, or AGENT_ROLE_ARN)"


# Powertools writes the bounds of a parameter that also has a pydantic validator (the digits
# check) under pydantic's names; JSON Schema's are these.
_BOUNDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum"}


def _json_schema_bounds(schema: dict[str, Any]) -> None:
    for name, standard in _BOUNDS.items():
        if name in schema:
            schema[standard] = schema.pop(name)


def openapi_document() -> str:
    """The API's OpenAPI 3 document, generated from the route signatures and models above.

    Powertools documents request-validation failures as 422; this API answers them with 400
    and one error envelope, so the document says that instead."""
    document = json.loads(
        api(()).get_openapi_json_schema(
            title="Chat memory API",
            version="1.0.0",
            summary="Sessions with short-term memory, recall of past sessions, verified answers.",
            description=(
                "Every route acts for the authenticated caller (the Cognito `sub` claim). "
                'Errors are JSON: {"error": {"code", "message"}}.'
            ),
        )
    )
    # Every route needs the caller's identity, which API Gateway checks before the function
    # runs: a Cognito ID token (auth=cognito, the default) or a SigV4 signature (auth=iam).
    # Named as API Gateway's own OpenAPI export names them.
    document["components"]["securitySchemes"] = SECURITY_SCHEMES
    document["security"] = [{name: []} for name in SECURITY_SCHEMES]
    schemas = document["components"]["schemas"]
    for name in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        schemas.pop(name, None)
    envelope = m.ErrorEnvelope.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas.update(envelope.pop("$defs", {}))
    schemas["ErrorEnvelope"] = envelope
    error_ref = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}
    for path, operations in document["paths"].items():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                _json_schema_bounds(parameter["schema"])
            responses = operation["responses"]
            if path.startswith("/agent/"):
                responses["403"] = {"description": _AGENTS_ONLY, "content": error_ref}
            responses.pop("422", None)
            if "204" in responses:
                responses["204"].pop("content", None)
            for status, text in _ERRORS.items():
                responses.setdefault(str(status), {"description": text, "content": error_ref})
    return json.dumps(document)


def ahead() -> None:
    """With SnapStart, what a first request would otherwise build, built before the snapshot:
    every model's validators and each route's parameters (Powertools makes them per route on
    its first request; generating the OpenAPI document makes them for every route)."""
    m.build_deferred()
    api(cors_origins()).get_openapi_schema()
