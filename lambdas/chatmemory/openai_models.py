"""The OpenAI-compatible routes' request and answer models (handlers/routes/openai.py): the
fields of OpenAI's chat completions API this API reads, so that openapi.json describes them.

Requests are read as OpenAI reads them, loosely typed where OpenAI is (a content that is text or
a list of parts, a stop that is one string or a list); fields it does not know are ignored, as
the providers that mimic OpenAI do (a client's provider-specific extras). Fields it knows but
cannot honour are refused by the route, each by name."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# The one model id the stack serves (GET /v1/models): the deployment's text model with memory.
MODEL_ID = "chatmemory"


class _In(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)


class ContentPart(_In):
    type: str = Field(description='"text" (the only kind of part read).')
    text: str | None = None


class ChatMessage(_In):
    role: str = Field(description="system, developer, user or assistant.")
    content: str | list[ContentPart] | None = Field(
        default=None, description="The text, or a list of text parts."
    )
    name: str | None = Field(default=None, description="Read, not used.")
    tool_calls: list[dict[str, Any]] | None = Field(
        default=None, description="Refused: the model has no tools."
    )


class StreamOptions(_In):
    include_usage: bool = Field(
        default=False, description="With stream: a last chunk with the usage and no choices."
    )


class ChatCompletionRequest(_In):
    """POST /v1/chat/completions."""

    model: str = Field(
        min_length=1,
        description=f"Any name: the stack answers with its one model ({MODEL_ID}).",
    )
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool | None = Field(
        default=False, description="Answer as server-sent chat.completion.chunk events."
    )
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1, description="As max_tokens.")
    temperature: float | None = Field(default=None, ge=0, le=2)
    stop: str | list[str] | None = Field(default=None, description="Up to 4 sequences.")
    user: str | None = Field(
        default=None,
        description=(
            "The end user, for a caller allowed to name end users (as X-ChatMemory-End-User); "
            "refused from anyone else."
        ),
    )
    n: int | None = Field(default=None, ge=1, description="1 only.")
    top_p: float | None = Field(default=None, ge=0, le=1, description="1 only.")
    presence_penalty: float | None = Field(default=None, description="0 only.")
    frequency_penalty: float | None = Field(default=None, description="0 only.")
    logit_bias: dict[str, float] | None = Field(default=None, description="Refused.")
    logprobs: bool | None = Field(default=None, description="false only.")
    top_logprobs: int | None = Field(default=None, description="Refused.")
    tools: list[dict[str, Any]] | None = Field(default=None, description="Refused (no tools).")
    tool_choice: str | dict[str, Any] | None = Field(default=None, description='"none" only.')
    functions: list[dict[str, Any]] | None = Field(default=None, description="Refused.")
    function_call: str | dict[str, Any] | None = Field(default=None, description='"none" only.')
    response_format: dict[str, Any] | None = Field(default=None, description='"text" only.')
    seed: int | None = Field(default=None, description="Read, not used.")


class AssistantMessage(BaseModel):
    role: str = "assistant"
    content: str


class Choice(BaseModel):
    index: int
    message: AssistantMessage
    finish_reason: str


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class MemorySource(BaseModel):
    kind: str
    id: str
    title: str | None = None


class ChatMemoryExtension(BaseModel):
    """Where the answer is stored, and what memory it drew on (a field OpenAI does not have;
    the SDKs keep it as an extra)."""

    session_id: str = Field(description="The caller's id of the session: send it as X-Session-Id.")
    turn: int
    sources: list[MemorySource]


class ChatCompletion(BaseModel):
    id: str
    object: str = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage
    chatmemory: ChatMemoryExtension


class ModelCard(BaseModel):
    id: str
    object: str = "model"
    created: int
    owned_by: str


class ModelList(BaseModel):
    object: str = "list"
    data: list[ModelCard]


class OpenAIErrorBody(BaseModel):
    message: str
    # Always sent by the routes; a refusal of the gateway's before them (a method, a body that
    # is not UTF-8) has the API's own envelope, {"code", "message"}.
    type: str = Field(default="invalid_request_error", description="OpenAI's error type.")
    param: str | None = Field(default=None, description="The request field at fault.")
    code: str | None = None


class OpenAIError(BaseModel):
    """Every error of the /v1 routes, as OpenAI's API writes it."""

    error: OpenAIErrorBody
