"""Answers made of pieces: every text adapter streams (Bedrock ConverseStream, SageMaker
InvokeEndpointWithResponseStream of TGI's events, OpenAI-compatible `stream: true`, the offline
responder) or gives its whole answer as one piece (FLAN-T5), and a buffered answer is the
same pieces collected.

The streams are real: a real botocore client reads AWS's binary event stream, and urllib3 an
OpenAI-compatible server's events, from a local server that sends them chunk by chunk and
waits, where a test says, until the test has read the first piece (so a piece read is one the
model has sent, not one of a buffered answer). Failures in the middle of a stream map to
ModelUnavailable (503, worth retrying) or ModelError (502) as the buffered calls' do.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from httpx_sse._decoders import SSEDecoder, SSELineDecoder
from hypothesis import given, settings
from hypothesis import strategies as st

from chatmemory.adapters.bedrock import BedrockTextGenerator
from chatmemory.adapters.model_io import server_sent_events
from chatmemory.adapters.offline.responder import OfflineResponder
from chatmemory.adapters.openai_compat import OpenAICompatTextGenerator
from chatmemory.adapters.retry import model_client_config
from chatmemory.adapters.sagemaker import SageMakerTextGenerator
from chatmemory.errors import ModelError, ModelUnavailable
from chatmemory.ports import (
    CONTENT_FILTER,
    END,
    LENGTH,
    STOP_SEQUENCE,
    Finish,
    Generation,
    GenerationOptions,
    Piece,
    collect,
)
from tests.model_server import Reply, ScriptedServer, aws_event, aws_exception
from tests.unit.test_model_adapters import JsonBody, stream

EXAMPLES = int(os.environ.get("CHATMEMORY_PROPERTY_EXAMPLES", "100"))
CLAUDE = "anthropic.claude-3-haiku-20240307-v1:0"
ENDPOINT = "chat-tgi"
STOPS = ("User:", "Assistant:")
OPTIONS = GenerationOptions(64, STOPS)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Where a streamed reply waits until the test has read what came before it."""
    event = threading.Event()
    yield event
    event.set()  # a reply still waiting ends with the test


def _client(service: str, url: str, *, timeout: float = 5, attempts: int = 1) -> Any:
    return boto3.client(
        service,
        region_name="us-east-1",
        endpoint_url=url,
        config=model_client_config(timeout, attempts),
    )


def _text(pieces: list[Piece]) -> str:
    return "".join(p for p in pieces if isinstance(p, str))


def test_a_stream_the_server_ends_by_closing_its_connection_says_so(server: ScriptedServer) -> None:
    """The stand-in closes the connection after a streamed answer (unless told to keep it). If
    it did not say so, a client could send its next request on the socket being closed, and the
    request would fail ("Connection was closed before we received a valid response")."""
    server.script(Reply(chunks=[b"one"]), Reply(chunks=[b"two"], keep_alive=True))
    connection = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=5)
    try:
        for expected, closes in ((b"one", True), (b"two", False)):
            connection.request("POST", "/", body=b"{}")
            response = connection.getresponse()
            assert response.read() == expected
            assert response.will_close is closes
            connection.close()
    finally:
        connection.close()


# --- Bedrock ConverseStream -------------------------------------------------------------------


def converse_events(*deltas: str, stop_reason: str = "end_turn") -> list[bytes]:
    return [
        aws_event("messageStart", {"role": "assistant"}),
        *(
            aws_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": d}})
            for d in deltas
        ),
        aws_event("contentBlockStop", {"contentBlockIndex": 0}),
        aws_event("messageStop", {"stopReason": stop_reason}),
        aws_event(
            "metadata",
            {
                "usage": {"inputTokens": 12, "outputTokens": 5, "totalTokens": 17},
                "metrics": {"latencyMs": 300},
            },
        ),
    ]


def bedrock(server: ScriptedServer, **kwargs: Any) -> BedrockTextGenerator:
    return BedrockTextGenerator(_client("bedrock-runtime", server.url, **kwargs), CLAUDE)


def test_bedrock_streams_each_delta_as_the_model_sends_it_then_its_usage_and_stop_reason(
    server: ScriptedServer, gate: threading.Event
) -> None:
    first, *rest = converse_events("Hello", " there.", stop_reason="max_tokens")
    server.script(Reply(chunks=[first, rest[0], gate, *rest[1:]]))
    options = GenerationOptions(100, STOPS, temperature=0.2)
    pieces = bedrock(server).pieces("User: hi\nAssistant:", options, stream=True)
    # The model has sent "Hello" and waits: the piece is read before the rest exists.
    assert next(pieces) == "Hello"
    gate.set()
    assert list(pieces) == [" there.", Finish(LENGTH, CLAUDE, 12, 5)]
    (request,) = server.received
    assert request.path == f"/model/{CLAUDE}/converse-stream".replace(":", "%3A")
    assert request.json() == {
        "messages": [{"role": "user", "content": [{"text": "User: hi\nAssistant:"}]}],
        "inferenceConfig": {"maxTokens": 100, "stopSequences": list(STOPS), "temperature": 0.2},
    }


def test_a_bedrock_stop_word_split_across_two_deltas_never_shows(server: ScriptedServer) -> None:
    server.script(Reply(chunks=converse_events("Sure.\nUs", "er: and you?")))
    pieces = list(bedrock(server).pieces("q", OPTIONS, stream=True))
    assert _text(pieces) == "Sure."
    assert pieces[-1] == Finish(STOP_SEQUENCE, CLAUDE, 12, 5)


def test_bedrock_streams_the_answer_without_a_reasoning_models_reasoning(
    server: ScriptedServer,
) -> None:
    thinking = aws_event(
        "contentBlockDelta",
        {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Let me think."}}},
    )
    events = converse_events("Forty-two.")
    server.script(Reply(chunks=[events[0], thinking, *events[1:]]))
    assert collect(bedrock(server).pieces("q", OPTIONS, stream=True)).text == "Forty-two."


@pytest.mark.parametrize(
    ("event", "message", "expected", "says"),
    [
        ("throttlingException", "Too many tokens", ModelUnavailable, "throttling"),
        ("serviceUnavailableException", "busy", ModelUnavailable, "unavailable"),
        ("internalServerException", "oops", ModelUnavailable, "unavailable"),
        ("modelStreamErrorException", "stream failed", ModelUnavailable, "unavailable"),
        ("validationException", "Input is too long", ModelError, "answered with an error"),
    ],
)
def test_a_bedrock_error_in_the_middle_of_a_stream_maps_as_the_buffered_call_does(
    server: ScriptedServer, event: str, message: str, expected: type[Exception], says: str
) -> None:
    events = converse_events("Hel", "lo")
    server.script(Reply(chunks=[*events[:2], aws_exception(event, {"message": message})]))
    pieces = bedrock(server).pieces("q", OPTIONS, stream=True)
    assert next(pieces) == "Hel"
    with pytest.raises(expected) as caught:
        next(pieces)
    assert CLAUDE in str(caught.value) and message in str(caught.value)
    assert says in str(caught.value)


def test_a_bedrock_stream_whose_connection_drops_is_model_unavailable(
    server: ScriptedServer,
) -> None:
    server.script(Reply(chunks=converse_events("Hel", "lo")[:2], broken=True))
    pieces = bedrock(server).pieces("q", OPTIONS, stream=True)
    assert next(pieces) == "Hel"
    with pytest.raises(ModelUnavailable, match=CLAUDE):
        next(pieces)


def test_a_bedrock_stream_that_ends_without_its_stop_is_model_unavailable(
    server: ScriptedServer,
) -> None:
    server.script(Reply(chunks=converse_events("Hel", "lo")[:3]))
    with pytest.raises(ModelUnavailable, match="before it was finished"):
        collect(bedrock(server).pieces("q", OPTIONS, stream=True))


def test_a_bedrock_stream_refused_before_it_starts_is_mapped_too(server: ScriptedServer) -> None:
    server.script(
        Reply(
            403,
            {"message": "You don't have access to the model"},
            {"x-amzn-ErrorType": "AccessDeniedException"},
        )
    )
    with pytest.raises(ModelUnavailable, match="model access is enabled"):
        collect(bedrock(server).pieces("q", OPTIONS, stream=True))


def test_bedrock_maps_a_guardrail_and_the_context_window_to_their_stop_reasons(
    server: ScriptedServer,
) -> None:
    server.script(
        Reply(chunks=converse_events("No.", stop_reason="guardrail_intervened")),
        Reply(chunks=converse_events("Long", stop_reason="model_context_window_exceeded")),
    )
    generator = bedrock(server)
    assert collect(generator.pieces("q", OPTIONS, stream=True)).stop_reason == CONTENT_FILTER
    assert collect(generator.pieces("q", OPTIONS, stream=True)).stop_reason == LENGTH


def test_a_buffered_bedrock_answer_sends_the_temperature_and_says_why_it_ended() -> None:
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_response(
            "converse",
            {
                "output": {"message": {"role": "assistant", "content": [{"text": "Hi."}]}},
                "stopReason": "max_tokens",
                "usage": {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5},
                "metrics": {"latencyMs": 10},
            },
            {
                "modelId": CLAUDE,
                "messages": [{"role": "user", "content": [{"text": "q"}]}],
                "inferenceConfig": {"maxTokens": 2, "temperature": 0.0},
            },
        )
        pieces = list(
            BedrockTextGenerator(client, CLAUDE).pieces("q", GenerationOptions(2, temperature=0))
        )
    assert pieces == ["Hi.", Finish(LENGTH, CLAUDE, 3, 2)]


# --- SageMaker: TGI's stream, FLAN-T5's one piece ---------------------------------------------


def tgi_events(*tokens: str, finish: str = "eos_token", special_end: bool = True) -> bytes:
    """TGI's server-sent events for `tokens` (and its special end-of-text token)."""
    events = [{"token": {"id": i, "text": t, "special": False}} for i, t in enumerate(tokens)]
    if special_end:
        events.append({"token": {"id": 2, "text": "</s>", "special": True}})
    events[-1] |= {
        "generated_text": "".join(tokens),
        "details": {"finish_reason": finish, "generated_tokens": len(events), "input_length": 9},
    }
    return b"".join(b"data:" + json.dumps(e).encode() + b"\n\n" for e in events)


def payload_parts(raw: bytes, *cuts: int) -> list[bytes]:
    """`raw` in PayloadPart events cut at `cuts` (TGI's events and lines split anywhere)."""
    bounds = [0, *cuts, len(raw)]
    return [aws_event("PayloadPart", raw[a:b]) for a, b in itertools.pairwise(bounds)]


def tgi(server: ScriptedServer, **kwargs: Any) -> SageMakerTextGenerator:
    client = _client("sagemaker-runtime", server.url, **kwargs)
    return SageMakerTextGenerator(client, ENDPOINT, payload_format="tgi", context_tokens=2048)


def test_tgi_streams_each_token_as_it_comes_through_sagemakers_response_stream(
    server: ScriptedServer, gate: threading.Event
) -> None:
    raw = tgi_events("Sure", ",", " Tom", ".", finish="length")
    first_event = raw.index(b"\n\n") + 2
    # The first part ends in the middle of the second event: only "Sure" can be read.
    server.script(
        Reply(
            chunks=[
                *payload_parts(raw[: first_event + 7]),
                gate,
                *payload_parts(raw[first_event + 7 :], 30),
            ]
        )
    )
    options = GenerationOptions(100, STOPS, temperature=0.7)
    pieces = tgi(server).pieces("prompt", options, stream=True)
    assert next(pieces) == "Sure"
    gate.set()
    assert list(pieces) == [",", " Tom", ".", Finish(LENGTH, ENDPOINT, 9, 5)]
    (request,) = server.received
    assert request.path == f"/endpoints/{ENDPOINT}/invocations-response-stream"
    assert request.json() == {
        "inputs": "prompt",
        "parameters": {
            "max_new_tokens": 100,
            "stop": list(STOPS),
            "return_full_text": False,
            "do_sample": True,
            "temperature": 0.7,
            "details": True,
        },
        "stream": True,
    }


def test_tgi_events_split_anywhere_across_payload_parts_give_the_same_answer(
    server: ScriptedServer,
) -> None:
    raw = tgi_events("Fine", ".\n", "User", ":", " more", finish="stop_sequence", special_end=False)
    cuts = [(n,) for n in range(1, len(raw), 17)] + [(5, 6, 7), (len(raw) - 1,)]
    server.script(*(Reply(chunks=payload_parts(raw, *at)) for at in cuts))
    generator = tgi(server)
    for _ in cuts:
        answer = collect(generator.pieces("p", OPTIONS, stream=True))
        assert (answer.text, answer.stop_reason) == ("Fine.", STOP_SEQUENCE)


@pytest.mark.parametrize(
    ("part", "expected", "says"),
    [
        (
            aws_exception(
                "ModelStreamError", {"Message": "stream broke", "ErrorCode": "StreamBroken"}
            ),
            ModelUnavailable,
            "stream broke",
        ),
        (
            aws_exception("InternalStreamFailure", {"Message": "unknown failure"}),
            ModelUnavailable,
            "unknown failure",
        ),
        (
            aws_event(
                "PayloadPart",
                b'data:{"error":"Input validation error: too long","error_type":"validation"}\n\n',
            ),
            ModelError,
            "too long",
        ),
        (
            aws_event(
                "PayloadPart", b'data:{"error":"Model is overloaded","error_type":"overloaded"}\n\n'
            ),
            ModelUnavailable,
            "overloaded",
        ),
    ],
    ids=["ModelStreamError", "InternalStreamFailure", "tgi-validation", "tgi-overloaded"],
)
def test_a_failure_in_the_middle_of_a_tgi_stream_maps_as_the_buffered_call_does(
    server: ScriptedServer, part: bytes, expected: type[Exception], says: str
) -> None:
    first = tgi_events("Hello", " there")
    server.script(Reply(chunks=[*payload_parts(first[: first.index(b"\n\n") + 2]), part]))
    pieces = tgi(server).pieces("p", OPTIONS, stream=True)
    assert next(pieces) == "Hello"
    with pytest.raises(expected) as caught:
        next(pieces)
    assert ENDPOINT in str(caught.value) and says in str(caught.value)


def test_a_tgi_stream_that_ends_before_its_last_event_is_model_unavailable(
    server: ScriptedServer,
) -> None:
    raw = tgi_events("Hello", " there")
    server.script(Reply(chunks=payload_parts(raw[: raw.rindex(b"data:")])))
    with pytest.raises(ModelUnavailable, match="before it was finished"):
        collect(tgi(server).pieces("p", OPTIONS, stream=True))


def test_flan_t5_cannot_stream_so_its_answer_is_one_piece_of_its_ordinary_call(
    server: ScriptedServer,
) -> None:
    server.script(Reply(200, {"generated_texts": ["Hello! How can I help?\nUser: a joke"]}))
    client = _client("sagemaker-runtime", server.url)
    pieces = list(SageMakerTextGenerator(client, "flan").pieces("q", OPTIONS, stream=True))
    assert pieces == ["Hello! How can I help?", Finish(STOP_SEQUENCE, "flan")]
    assert [r.path for r in server.received] == ["/endpoints/flan/invocations"]


@pytest.mark.parametrize(
    ("payload_format", "temperature", "request_body"),
    [
        (
            "jumpstart-flan-t5",
            0.5,
            {"text_inputs": "q", "max_length": 8, "do_sample": True, "temperature": 0.5},
        ),
        # A temperature of 0 is greedy decoding, the containers' default (TGI refuses 0).
        ("jumpstart-flan-t5", 0.0, {"text_inputs": "q", "max_length": 8}),
        (
            "tgi",
            0.0,
            {
                "inputs": "q",
                "parameters": {"max_new_tokens": 8, "stop": [], "return_full_text": False},
            },
        ),
    ],
)
def test_sagemaker_sends_a_temperature_as_its_containers_take_it(
    payload_format: str, temperature: float, request_body: dict[str, Any]
) -> None:
    client = boto3.client("sagemaker-runtime", region_name="us-east-1")
    answer = {"generated_texts": ["ok"]} if payload_format != "tgi" else [{"generated_text": "ok"}]
    with Stubber(client) as stub:
        stub.add_response(
            "invoke_endpoint",
            {"Body": stream(answer)},
            {
                "EndpointName": "e",
                "ContentType": "application/json",
                "Accept": "application/json",
                "Body": JsonBody(request_body),
            },
        )
        generator = SageMakerTextGenerator(client, "e", payload_format=payload_format)
        options = GenerationOptions(8, temperature=temperature)
        assert collect(generator.pieces("q", options)) == Generation("ok", "e")


# --- OpenAI-compatible servers: stream: true ----------------------------------------------------


def sse(*events: Any) -> bytes:
    return b"".join(
        b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n"
        for e in events
    )


def chunk(
    content: str | None, finish: str | None = None, model: str = "llama3.2"
) -> dict[str, Any]:
    delta = {"content": content} if content is not None else {}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


USAGE = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "model": "llama3.2",
    "choices": [],
    "usage": {"prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23},
}


def openai(server: ScriptedServer, **kwargs: Any) -> OpenAICompatTextGenerator:
    return OpenAICompatTextGenerator(f"{server.url}/v1", "llama3.2", **kwargs)


def test_an_openai_compatible_answer_streams_as_the_server_sends_it_with_its_usage(
    server: ScriptedServer, gate: threading.Event
) -> None:
    server.script(
        Reply(
            content_type="text/event-stream",
            chunks=[
                sse(chunk(""), chunk("Hi")),
                gate,
                sse(chunk(" there"), chunk(None, "length"), USAGE, b"[DONE]"),
            ],
        )
    )
    options = GenerationOptions(3, STOPS, temperature=0.9)
    pieces = openai(server).pieces("User: hi\nAssistant:", options, stream=True)
    assert next(pieces) == "Hi"
    gate.set()
    assert list(pieces) == [" there", Finish(LENGTH, "llama3.2", 20, 3)]
    (request,) = server.received
    assert request.path == "/v1/chat/completions"
    assert request.json() == {
        "model": "llama3.2",
        "messages": [{"role": "user", "content": "User: hi\nAssistant:"}],
        "max_tokens": 3,
        "stop": list(STOPS),
        "temperature": 0.9,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def test_an_openai_compatible_stop_word_split_across_chunks_never_shows(
    server: ScriptedServer,
) -> None:
    body = sse(chunk("Fine.\nAssis"), chunk("tant: and"), chunk(" more", "stop"), b"[DONE]")
    # Its bytes in chunks of 7: events and lines split anywhere.
    server.script(Reply(chunks=[body[i : i + 7] for i in range(0, len(body), 7)]))
    pieces = list(openai(server).pieces("q", OPTIONS, stream=True))
    assert pieces == ["Fine.", Finish(STOP_SEQUENCE, "llama3.2")]


def test_a_server_without_usage_or_done_still_ends_its_answer(server: ScriptedServer) -> None:
    server.script(Reply(chunks=[sse(chunk("Done"), chunk(None, "content_filter"))]))
    assert collect(openai(server).pieces("q", OPTIONS, stream=True)) == Generation(
        "Done", "llama3.2", stop_reason=CONTENT_FILTER
    )


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"message": "context length exceeded", "type": "invalid_request_error"}, ModelError),
        ({"message": "server overloaded", "type": "server_error", "code": 503}, ModelUnavailable),
    ],
)
def test_an_error_event_in_the_middle_of_an_openai_compatible_stream_is_mapped(
    server: ScriptedServer, error: dict[str, Any], expected: type[Exception]
) -> None:
    server.script(Reply(chunks=[sse(chunk("Hel"), {"error": error})]))
    pieces = openai(server).pieces("q", OPTIONS, stream=True)
    assert next(pieces) == "Hel"
    with pytest.raises(expected, match=error["message"]):
        next(pieces)


def test_an_openai_compatible_stream_whose_connection_drops_is_model_unavailable(
    server: ScriptedServer,
) -> None:
    server.script(Reply(chunks=[sse(chunk("Hel"))], broken=True))
    pieces = openai(server).pieces("q", OPTIONS, stream=True)
    assert next(pieces) == "Hel"
    with pytest.raises(ModelUnavailable, match="connection broke"):
        next(pieces)


def test_an_openai_compatible_stream_that_goes_quiet_times_out_as_unavailable(
    server: ScriptedServer, gate: threading.Event
) -> None:
    server.script(Reply(chunks=[sse(chunk("Hel")), gate, sse(chunk("lo", "stop"))]))
    # Long enough for a loaded machine to send the first piece, short against the gate's wait.
    pieces = openai(server, timeout=2).pieces("q", OPTIONS, stream=True)
    assert next(pieces) == "Hel"
    with pytest.raises(ModelUnavailable, match="stopped answering"):
        next(pieces)


def test_an_openai_compatible_stream_that_ends_unfinished_is_model_unavailable(
    server: ScriptedServer,
) -> None:
    server.script(Reply(chunks=[sse(chunk("Hel"))]))
    with pytest.raises(ModelUnavailable, match="before it was finished"):
        collect(openai(server).pieces("q", OPTIONS, stream=True))


def test_a_stream_refused_with_503_is_retried_before_it_starts(server: ScriptedServer) -> None:
    server.script(
        Reply(503, {"error": {"message": "loading"}}),
        Reply(chunks=[sse(chunk("Ready.", "stop"), b"[DONE]")]),
    )
    generator = openai(server, sleep=lambda _: None)
    assert collect(generator.pieces("q", OPTIONS, stream=True)).text == "Ready."
    assert len(server.received) == 2


def test_a_buffered_openai_compatible_answer_says_why_it_ended(server: ScriptedServer) -> None:
    server.script(
        Reply(
            200,
            {
                "model": "llama3.2",
                "choices": [{"message": {"content": "Cut"}, "finish_reason": "length"}],
                "usage": {"prompt_tokens": 4, "completion_tokens": 1},
            },
        )
    )
    answer = openai(server).generate("q", max_new_tokens=1)
    assert answer == Generation("Cut", "llama3.2", 4, 1, stop_reason=LENGTH)


def _reference_events(raw: bytes) -> list[bytes]:
    """The data of each event in `raw` as httpx-sse (a maintained SSE client) reads it."""
    lines, decoder = SSELineDecoder(), SSEDecoder()
    found = []
    for line in lines.decode(raw.decode()):
        event = decoder.decode(line)
        if event is not None:
            found.append(event.data.encode())
    return found


_FIELD = st.one_of(
    st.builds(
        lambda v: b"data:" + v, st.sampled_from([b"", b" ", b" {}", b"x", b" a b", b"  two"])
    ),
    st.sampled_from([b": a comment", b"event: message", b"id: 7", b"retry: 10"]),
)
_EVENT = st.builds(
    lambda data, others: b"\n".join([data, *others]),
    st.builds(lambda v: b"data:" + v, st.sampled_from([b"", b" {}", b" [DONE]", b"x"])),
    st.lists(_FIELD, max_size=3),
)


@given(
    events=st.lists(_EVENT, max_size=5),
    newline=st.sampled_from([b"\n", b"\r\n"]),
    cuts=st.lists(st.integers(min_value=1, max_value=200), max_size=8),
)
@settings(max_examples=EXAMPLES, deadline=None)
def test_server_sent_events_split_anywhere_are_read_as_a_reference_client_reads_them(
    events: list[bytes], newline: bytes, cuts: list[int]
) -> None:
    raw = b"".join(e.replace(b"\n", newline) + newline * 2 for e in events)
    bounds = sorted({0, len(raw), *(c for c in cuts if c < len(raw))})
    chunks = [raw[a:b] for a, b in itertools.pairwise(bounds)]
    assert list(server_sent_events(chunks)) == _reference_events(raw)


# --- the offline responder, options and collecting ----------------------------------------------


def test_the_offline_responder_streams_word_by_word_what_it_says_whole() -> None:
    responder = OfflineResponder()
    prompt = "System.\nUser: my cat is Tom\nAssistant:"
    streamed = list(responder.pieces(prompt, OPTIONS, stream=True))
    assert len(streamed) > 5 and all(isinstance(p, str) for p in streamed[:-1])
    assert collect(streamed) == responder.generate(prompt, max_new_tokens=64, stop=STOPS)
    assert streamed[-1] == Finish(END, "offline-responder", remember=False)


def test_each_backend_says_which_options_of_a_request_it_cannot_honour() -> None:
    asked = GenerationOptions(50, ("###",), temperature=1.5)
    runtime = boto3.client("sagemaker-runtime", region_name="us-east-1")
    claude = BedrockTextGenerator(boto3.client("bedrock-runtime", region_name="us-east-1"), CLAUDE)
    assert claude.unsupported(asked) == {
        "temperature": f"Bedrock model {CLAUDE!r} takes a temperature from 0 to 1"
    }
    assert claude.unsupported(asked._replace(temperature=0.7)) == {}
    for generator in (
        SageMakerTextGenerator(runtime, "e"),
        SageMakerTextGenerator(runtime, "e", payload_format="tgi"),
        OpenAICompatTextGenerator("http://127.0.0.1:1/v1", "m"),
    ):
        assert generator.unsupported(asked) == {}
    # The offline responder writes what it writes: a stop word is the only thing it honours.
    assert set(OfflineResponder().unsupported(asked)) == {"max_new_tokens", "temperature"}
    assert set(OfflineResponder().unsupported(GenerationOptions(50, ("###",)))) == {
        "max_new_tokens"
    }


def test_pieces_that_end_without_their_finish_are_a_model_error() -> None:
    with pytest.raises(ModelError, match="ended before it was finished"):
        collect(iter(["half an answer"]))
