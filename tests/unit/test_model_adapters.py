"""SageMaker and Bedrock model adapters: the exact request each payload format sends, parsing of
each answer shape, stop words, vector checks, batching and the mapping of every failure to
ModelUnavailable (503) or ModelError (502).

Requests and answers go through botocore's Stubber (real clients, real parameter validation);
timeouts, retries and refused connections through a real client against a local HTTP server.
"""

from __future__ import annotations

import io
import json
import math
import unicodedata
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from chatmemory import wiring
from chatmemory.adapters.bedrock import BedrockEmbedder, BedrockTextGenerator
from chatmemory.adapters.openai_compat import OpenAICompatEmbedder, OpenAICompatTextGenerator
from chatmemory.adapters.retry import model_client_config
from chatmemory.adapters.sagemaker import SageMakerEmbedder, SageMakerTextGenerator
from chatmemory.errors import ModelError, ModelUnavailable
from chatmemory.ports import GenerationOptions, collect
from chatmemory.services.conversation.chat import ChatDeps
from chatmemory.settings import Settings
from tests.model_server import Reply, ScriptedServer, closed_port_url

STOPS = ["User:", "Assistant:"]


@pytest.fixture
def model_server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


ENDPOINT = "chat-flan-t5"


class JsonBody:
    """Matches a request body (bytes) whose JSON equals `expected`, whatever its key order."""

    def __init__(self, expected: Any) -> None:
        self.expected = expected

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (bytes, str)) and json.loads(other) == self.expected

    def __repr__(self) -> str:
        return f"JsonBody({self.expected!r})"


def stream(answer: Any) -> StreamingBody:
    raw = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


@pytest.fixture
def sagemaker() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("sagemaker-runtime", region_name="us-east-1")
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


@pytest.fixture
def bedrock() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


def expect_invoke(stub: Stubber, request: Any, answer: Any, endpoint: str = ENDPOINT) -> None:
    stub.add_response(
        "invoke_endpoint",
        {"Body": stream(answer), "ContentType": "application/json"},
        {
            "EndpointName": endpoint,
            "ContentType": "application/json",
            "Accept": "application/json",
            "Body": JsonBody(request),
        },
    )


def norm(vector: list[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


class _Http:
    status_code = 200
    headers: dict[str, str] = {}
    content = b""
    raw = None


class Answered:
    """Answers every call of a real client from `answer(payload)` (the request body's JSON) and
    keeps each serialized body, for tests whose requests are not known in advance."""

    def __init__(self, client: Any, answer: Any) -> None:
        self.bodies: list[bytes] = []
        self._answer = answer
        client.meta.events.register("before-call", self._call)

    def _call(self, params: dict[str, Any], **_: Any) -> Any:
        body = params["body"]
        self.bodies.append(body)
        return _Http(), self._answer(json.loads(body))

    @property
    def payloads(self) -> list[Any]:
        return [json.loads(b) for b in self.bodies]


# A consolidation window of two 32,000-character messages, in English, in Chinese, in emoji
# (12 bytes each once JSON-escaped) and in a character NFKC turns into 18.
WINDOWS = {
    "english": "User: " + "word " * 6400 + "\nAssistant: " + "more " * 6400,
    "cjk": "User: " + "汉字" * 16_000 + "\nAssistant: " + "回答" * 16_000,
    "emoji": "\U0001f600" * 64_000,
    "nfkc": "\ufdfa" * 64_000,
}


# --- SageMaker text ---------------------------------------------------------------------------


def test_flan_t5_gets_the_jumpstart_payload_and_its_answer_is_cut_at_the_first_stop_word(
    sagemaker,
) -> None:
    client, stub = sagemaker
    expect_invoke(
        stub,
        {"text_inputs": "User: hi\nAssistant:", "max_length": 64},
        {"generated_texts": ["Hello! How can I help?\nUser: tell me a joke"]},
    )
    generator = SageMakerTextGenerator(client, ENDPOINT)
    out = generator.generate("User: hi\nAssistant:", max_new_tokens=64, stop=STOPS)
    assert out.text == "Hello! How can I help?"
    assert out.model == ENDPOINT and generator.context_tokens == 512


def test_flan_t5_prompts_never_exceed_its_512_token_input_whatever_the_budget(sagemaker) -> None:
    client, _ = sagemaker
    flan = SageMakerTextGenerator(client, ENDPOINT, context_tokens=2048)
    tgi = SageMakerTextGenerator(client, ENDPOINT, payload_format="tgi", context_tokens=2048)
    assert (flan.context_tokens, tgi.context_tokens) == (512, 2048)


def test_flan_t5_answer_of_older_jumpstart_versions_is_read_too(sagemaker) -> None:
    client, stub = sagemaker
    expect_invoke(stub, {"text_inputs": "Q", "max_length": 8}, {"generated_text": "A"})
    assert SageMakerTextGenerator(client, ENDPOINT).generate("Q", max_new_tokens=8).text == "A"


@pytest.mark.parametrize("shape", [list, dict], ids=["list-answer", "dict-answer"])
def test_tgi_gets_its_parameters_and_the_returned_stop_sequence_is_removed(
    sagemaker, shape
) -> None:
    client, stub = sagemaker
    item = {"generated_text": " Sure, Tom is a nice name for a cat.\nUser:"}
    expect_invoke(
        stub,
        {
            "inputs": "prompt",
            "parameters": {"max_new_tokens": 100, "stop": STOPS, "return_full_text": False},
        },
        [item] if shape is list else item,
    )
    generator = SageMakerTextGenerator(client, ENDPOINT, payload_format="tgi", context_tokens=2048)
    out = generator.generate("prompt", max_new_tokens=100, stop=STOPS)
    assert out.text == "Sure, Tom is a nice name for a cat."
    assert generator.context_tokens == 2048


def test_tgi_receives_at_most_four_stop_sequences_and_the_others_are_still_honoured(
    sagemaker,
) -> None:
    client, stub = sagemaker
    stops = ["A:", "B:", "C:", "D:", "E:"]
    expect_invoke(
        stub,
        {
            "inputs": "p",
            "parameters": {"max_new_tokens": 5, "stop": stops[:4], "return_full_text": False},
        },
        [{"generated_text": "kept E: dropped"}],
    )
    generator = SageMakerTextGenerator(client, ENDPOINT, payload_format="tgi")
    assert generator.generate("p", max_new_tokens=5, stop=stops).text == "kept"


def test_an_unknown_payload_format_is_refused_when_the_adapter_is_built(sagemaker) -> None:
    client, _ = sagemaker
    with pytest.raises(ValueError, match="jumpstart-flan-t5"):
        SageMakerTextGenerator(client, ENDPOINT, payload_format="gpt-j")


# --- SageMaker embeddings ---------------------------------------------------------------------


def test_gpt_j_embeddings_are_requested_as_a_list_and_scaled_to_unit_length(sagemaker) -> None:
    client, stub = sagemaker
    expect_invoke(
        stub,
        {"text_inputs": ["a cat", "a dog"]},
        {"embedding": [[3.0, 4.0, 0.0], [0.0, 0.0, 2.0]]},
        endpoint="embed",
    )
    embedder = SageMakerEmbedder(client, "embed", dimension=3)
    assert embedder.embed(["a cat", "a dog"]) == [[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]]


def test_tei_embeddings_are_requested_normalized_and_truncated_in_batches_of_32(
    sagemaker,
) -> None:
    client, stub = sagemaker
    texts = [f"text {i}" for i in range(70)]
    for start, end in ((0, 32), (32, 64), (64, 70)):
        expect_invoke(
            stub,
            {"inputs": texts[start:end], "normalize": True, "truncate": True},
            [[float(i), 1.0] for i in range(start, end)],
            endpoint="tei",
        )
    embedder = SageMakerEmbedder(client, "tei", payload_format="tei", dimension=2)
    vectors = embedder.embed(texts)
    assert embedder.max_batch == 32 and len(vectors) == 70
    assert all(abs(norm(v) - 1.0) < 1e-9 for v in vectors)
    # Order is kept across batches: vector i came from text i.
    assert vectors[69] == pytest.approx([69 / math.hypot(69, 1), 1 / math.hypot(69, 1)])


@pytest.mark.parametrize(
    ("payload_format", "limit"),
    [
        # An existing GPT-J endpoint may be real-time (6 MB) or serverless (4 MB).
        ("jumpstart-gpt-j", 4 * 1024 * 1024),
        # Deploy mode's TEI endpoint is serverless (4 MB) and TEI takes 2,000,000 bytes.
        ("tei", 2_000_000),
    ],
)
def test_sagemaker_embedding_requests_stay_within_the_payload_limits_whatever_the_script(
    payload_format, limit
) -> None:
    client = boto3.client("sagemaker-runtime", region_name="us-east-1")
    texts = [f"{i} {WINDOWS['cjk']}" for i in range(32)]

    def answer(payload: dict[str, Any]) -> Any:
        inputs = payload.get("inputs") or payload["text_inputs"]
        rows = [[float(text.split()[0]), 1.0] for text in inputs]
        return {"Body": stream(rows if payload_format == "tei" else {"embedding": rows})}

    calls = Answered(client, answer)
    embedder = SageMakerEmbedder(client, "e", payload_format=payload_format, dimension=2)
    vectors = embedder.embed(texts)
    assert max(len(body) for body in calls.bodies) <= limit
    # Every text is embedded once, in order.
    assert [v[0] / v[1] for v in vectors] == pytest.approx(list(range(32)))


def test_embeddings_of_another_dimension_are_a_model_error_that_says_what_to_set(
    sagemaker,
) -> None:
    client, stub = sagemaker
    expect_invoke(stub, {"text_inputs": ["x"]}, {"embedding": [[0.1] * 4096]}, endpoint="gptj")
    with pytest.raises(ModelError, match="4096-dimensional.*EMBED_DIMENSION=4096") as caught:
        SageMakerEmbedder(client, "gptj", dimension=384).embed(["x"])
    assert caught.value.status == 502


def test_fewer_embeddings_than_texts_is_a_model_error(sagemaker) -> None:
    client, stub = sagemaker
    expect_invoke(stub, {"text_inputs": ["a", "b"]}, {"embedding": [[1.0, 0.0]]}, endpoint="e")
    with pytest.raises(ModelError, match="1 embeddings for 2 texts"):
        SageMakerEmbedder(client, "e", dimension=2).embed(["a", "b"])


# --- SageMaker failures -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status", "message", "extra", "expected", "says"),
    [
        ("ThrottlingException", 400, "Rate exceeded", {}, ModelUnavailable, "throttling"),
        ("ServiceUnavailable", 503, "try again", {}, ModelUnavailable, "unavailable"),
        ("InternalFailure", 500, "oops", {}, ModelUnavailable, "unavailable"),
        ("ModelNotReadyException", 429, "loading", {}, ModelUnavailable, "loading"),
        (
            "ValidationError",
            400,
            f"Endpoint {ENDPOINT} of account 123456789012 not found.",
            {},
            ModelUnavailable,
            "does not exist or is not InService",
        ),
        (
            "ValidationError",
            400,
            "1 validation error detected: Value at 'body' failed to satisfy constraint",
            {},
            ModelError,
            "failed to satisfy constraint",
        ),
        (
            "ModelError",
            424,
            "Received client error (400) from primary",
            {"OriginalStatusCode": 400, "OriginalMessage": "'text_inputs' is required"},
            ModelError,
            "'text_inputs' is required",
        ),
        (
            "ModelError",
            424,
            "Received server error (503) from primary",
            {"OriginalStatusCode": 503, "OriginalMessage": "overloaded"},
            ModelUnavailable,
            "overloaded",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and " " not in v else None,
)
def test_sagemaker_failures_map_to_503_or_502_naming_the_endpoint(
    sagemaker, code, status, message, extra, expected, says
) -> None:
    client, stub = sagemaker
    stub.add_client_error("invoke_endpoint", code, message, status, modeled_fields=extra or None)
    with pytest.raises(expected) as caught:
        SageMakerTextGenerator(client, ENDPOINT).generate("hi", max_new_tokens=5)
    assert caught.value.status == (503 if expected is ModelUnavailable else 502)
    assert ENDPOINT in str(caught.value) and says in str(caught.value)


@pytest.mark.parametrize(
    "answer", [b"<html>502 Bad Gateway</html>", {"unexpected": "shape"}], ids=["html", "shape"]
)
def test_an_answer_that_cannot_be_read_is_a_model_error(sagemaker, answer) -> None:
    client, stub = sagemaker
    stub.add_response("invoke_endpoint", {"Body": stream(answer)})
    with pytest.raises(ModelError, match=ENDPOINT):
        SageMakerTextGenerator(client, ENDPOINT).generate("hi", max_new_tokens=5)


def _runtime_client(url: str, *, timeout: float, attempts: int) -> Any:
    """A real SageMaker runtime client with the adapters' config, talking to `url`."""
    return boto3.client(
        "sagemaker-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        config=model_client_config(timeout, attempts),
    )


def test_a_transient_503_is_retried_and_then_answered(model_server: ScriptedServer) -> None:
    model_server.script(
        Reply(503, {"message": "busy"}, {"x-amzn-ErrorType": "ServiceUnavailable"}),
        Reply(200, {"generated_texts": ["fine"]}),
    )
    client = _runtime_client(model_server.url, timeout=2, attempts=3)
    out = SageMakerTextGenerator(client, ENDPOINT).generate("hi", max_new_tokens=5)
    assert out.text == "fine"
    assert [r.path for r in model_server.received] == [f"/endpoints/{ENDPOINT}/invocations"] * 2


def test_503s_past_the_attempts_are_model_unavailable(model_server: ScriptedServer) -> None:
    busy = Reply(503, {"message": "busy"}, {"x-amzn-ErrorType": "ServiceUnavailable"})
    model_server.script(busy, busy, busy)
    client = _runtime_client(model_server.url, timeout=2, attempts=2)
    with pytest.raises(ModelUnavailable, match="unavailable"):
        SageMakerTextGenerator(client, ENDPOINT).generate("hi", max_new_tokens=5)
    assert len(model_server.received) == 2


def test_a_slow_model_times_out_once_without_retries(model_server: ScriptedServer) -> None:
    model_server.script(Reply(200, {"generated_texts": ["late"]}, delay=1.0))
    client = _runtime_client(model_server.url, timeout=0.3, attempts=3)
    with pytest.raises(ModelUnavailable, match="did not answer in time") as caught:
        SageMakerTextGenerator(client, ENDPOINT).generate("hi", max_new_tokens=5)
    assert caught.value.status == 503
    # A retry would wait as long again and push the call past API Gateway's 29 s.
    assert len(model_server.received) == 1


def test_an_unreachable_endpoint_is_model_unavailable() -> None:
    client = _runtime_client(closed_port_url(), timeout=1, attempts=2)
    with pytest.raises(ModelUnavailable, match=f"{ENDPOINT}.*unreachable"):
        SageMakerEmbedder(client, ENDPOINT, dimension=2).embed(["x"])


def test_the_client_config_keeps_a_call_under_api_gateways_limit() -> None:
    config = model_client_config(20.0, 3)
    assert config.read_timeout == 20.0 and config.connect_timeout <= 3.0
    assert config.retries == {"mode": "standard", "total_max_attempts": 3}


# --- Bedrock ----------------------------------------------------------------------------------

CLAUDE = "anthropic.claude-3-haiku-20240307-v1:0"


def converse_answer(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": list(blocks)}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 12, "outputTokens": 5, "totalTokens": 17},
        "metrics": {"latencyMs": 300},
    }


def test_bedrock_converse_gets_the_prompt_token_limit_and_stop_sequences(bedrock) -> None:
    client, stub = bedrock
    stub.add_response(
        "converse",
        converse_answer({"text": "Hello"}, {"text": " there.\nUser: more"}),
        {
            "modelId": CLAUDE,
            "messages": [{"role": "user", "content": [{"text": "User: hi\nAssistant:"}]}],
            "inferenceConfig": {"maxTokens": 100, "stopSequences": STOPS},
        },
    )
    generator = BedrockTextGenerator(client, CLAUDE)
    out = generator.generate("User: hi\nAssistant:", max_new_tokens=100, stop=STOPS)
    assert out.text == "Hello there."
    assert (out.model, out.input_tokens, out.output_tokens) == (CLAUDE, 12, 5)
    assert generator.context_tokens == 4096


NOVA = "us.amazon.nova-micro-v1:0"


def test_bedrock_caches_the_constant_start_of_a_prompt_for_a_model_that_caches(bedrock) -> None:
    """The system line and the profile block, the same from turn to turn, come before a
    cachePoint (a request the botocore model of Converse accepts: the Stubber checks it)."""
    client, stub = bedrock
    prompt = "Be kind.\nAbout the user:\n- I'm vegan.\nUser: hi\nAssistant:"
    constant = len("Be kind.\nAbout the user:\n- I'm vegan.")
    stub.add_response(
        "converse",
        converse_answer({"text": "Hello"}),
        {
            "modelId": NOVA,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"text": prompt[:constant]},
                        {"cachePoint": {"type": "default"}},
                        {"text": prompt[constant:]},
                    ],
                }
            ],
            "inferenceConfig": {"maxTokens": 50},
        },
    )
    options = GenerationOptions(50, constant_prefix=constant)
    assert collect(BedrockTextGenerator(client, NOVA).pieces(prompt, options)).text == "Hello"
    stub.assert_no_pending_responses()


def test_bedrock_sends_no_cache_point_to_a_model_that_does_not_cache(bedrock) -> None:
    client, stub = bedrock
    stub.add_response(
        "converse",
        converse_answer({"text": "Hello"}),
        {
            "modelId": CLAUDE,
            "messages": [{"role": "user", "content": [{"text": "Be kind.\nUser: hi"}]}],
            "inferenceConfig": {"maxTokens": 50},
        },
    )
    options = GenerationOptions(50, constant_prefix=len("Be kind."))
    generator = BedrockTextGenerator(client, CLAUDE)
    assert collect(generator.pieces("Be kind.\nUser: hi", options)).text == "Hello"
    assert generator.unsupported(options) == {}  # a hint, never refused


def test_bedrock_converse_without_stop_words_sends_no_stop_sequences(bedrock) -> None:
    client, stub = bedrock
    stub.add_response(
        "converse",
        converse_answer({"text": "chat"}),
        {
            "modelId": CLAUDE,
            "messages": [{"role": "user", "content": [{"text": "Label:"}]}],
            "inferenceConfig": {"maxTokens": 4},
        },
    )
    assert BedrockTextGenerator(client, CLAUDE).generate("Label:", max_new_tokens=4).text == "chat"


@pytest.mark.parametrize(
    ("code", "status", "message", "expected"),
    [
        ("ThrottlingException", 429, "Too many requests", ModelUnavailable),
        ("ServiceUnavailableException", 503, "busy", ModelUnavailable),
        ("InternalServerException", 500, "oops", ModelUnavailable),
        ("ModelTimeoutException", 408, "took too long", ModelUnavailable),
        ("ModelNotReadyException", 429, "not ready", ModelUnavailable),
        ("ResourceNotFoundException", 404, "Model not found", ModelUnavailable),
        ("AccessDeniedException", 403, "no access to the model", ModelUnavailable),
        ("ValidationException", 400, "The provided model identifier is invalid.", ModelUnavailable),
        ("ValidationException", 400, "Input is too long for requested model.", ModelError),
        ("ModelErrorException", 424, "model failed", ModelError),
    ],
    ids=lambda v: v if isinstance(v, str) and " " not in v else None,
)
def test_bedrock_failures_map_to_503_or_502_naming_the_model(
    bedrock, code, status, message, expected
) -> None:
    client, stub = bedrock
    stub.add_client_error("converse", code, message, status)
    with pytest.raises(expected) as caught:
        BedrockTextGenerator(client, CLAUDE).generate("hi", max_new_tokens=5)
    assert CLAUDE in str(caught.value) and message in str(caught.value)


def test_titan_v2_embeds_one_text_per_request_with_the_configured_dimension(bedrock) -> None:
    client, stub = bedrock
    for text, first in (("a cat", 3.0), ("a dog", 0.0)):
        stub.add_response(
            "invoke_model",
            {
                "body": stream({"embedding": [first, 4.0] + [0.0] * 254}),
                "contentType": "application/json",
            },
            {
                "modelId": "amazon.titan-embed-text-v2:0",
                "contentType": "application/json",
                "accept": "application/json",
                "body": JsonBody({"inputText": text, "dimensions": 256, "normalize": True}),
            },
        )
    embedder = BedrockEmbedder(client, dimension=256)
    vectors = embedder.embed(["a cat", "a dog"])
    assert embedder.max_batch == 1
    assert vectors[0][:2] == [0.6, 0.8] and vectors[1][:2] == [0.0, 1.0]


@pytest.mark.parametrize("window", WINDOWS.values(), ids=WINDOWS.keys())
def test_titan_gets_at_most_8192_tokens_and_50000_characters_whatever_the_script(
    window,
) -> None:
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    calls = Answered(client, lambda _: {"body": stream({"embedding": [1.0] * 256})})
    BedrockEmbedder(client, dimension=256).embed([window])
    (sent,) = [p["inputText"] for p in calls.payloads]
    # A subword token covers at least one UTF-8 byte of the (NFKC-normalized) text.
    size = len(unicodedata.normalize("NFKC", sent).encode())
    assert 4000 < size <= 8192 and len(sent) <= 50_000 and window.startswith(sent)


def test_titan_v2_refuses_a_dimension_it_cannot_make(bedrock) -> None:
    client, _ = bedrock
    with pytest.raises(ValueError, match="256, 512 or 1024"):
        BedrockEmbedder(client, dimension=384)


@pytest.mark.parametrize("v4_shape", [False, True], ids=["embed-v3", "embed-v4"])
def test_cohere_embeds_in_batches_of_96_with_long_texts_clipped(bedrock, v4_shape) -> None:
    client, stub = bedrock
    model = "cohere.embed-v4:0" if v4_shape else "cohere.embed-english-v3"
    texts = ["x" * 3000] + [f"text {i}" for i in range(99)]
    for batch in (texts[:96], texts[96:]):
        rows = [[1.0, 1.0] for _ in batch]
        stub.add_response(
            "invoke_model",
            {
                "body": stream({"embeddings": {"float": rows} if v4_shape else rows}),
                "contentType": "application/json",
            },
            {
                "modelId": model,
                "contentType": "application/json",
                "accept": "application/json",
                "body": JsonBody(
                    {
                        "texts": [t[:2048] for t in batch],
                        "input_type": "search_document",
                        "truncate": "END",
                    }
                ),
            },
        )
    vectors = BedrockEmbedder(client, model, dimension=2).embed(texts)
    assert len(vectors) == 100 and vectors[0] == pytest.approx([math.sqrt(0.5)] * 2)


@pytest.mark.parametrize(
    "model", ["eu.cohere.embed-v4:0", "us.cohere.embed-english-v3", "global.cohere.embed-v4:0"]
)
def test_cohere_through_a_cross_region_inference_profile_gets_the_cohere_request(
    bedrock, model
) -> None:
    client, stub = bedrock
    texts = [f"text {i}" for i in range(97)]
    for batch in (texts[:96], texts[96:]):
        stub.add_response(
            "invoke_model",
            {
                "body": stream({"embeddings": {"float": [[1.0, 0.0] for _ in batch]}}),
                "contentType": "application/json",
            },
            {
                "modelId": model,
                "contentType": "application/json",
                "accept": "application/json",
                "body": JsonBody(
                    {"texts": batch, "input_type": "search_document", "truncate": "END"}
                ),
            },
        )
    embedder = BedrockEmbedder(client, model, dimension=2)
    assert embedder.max_batch == 96
    assert len(embedder.embed(texts)) == 97


def test_bedrock_embedding_failures_are_mapped_too(bedrock) -> None:
    client, stub = bedrock
    stub.add_client_error("invoke_model", "ThrottlingException", "slow down", 429)
    with pytest.raises(ModelUnavailable, match="throttling"):
        BedrockEmbedder(client, dimension=1024).embed(["x"])


# --- wiring -----------------------------------------------------------------------------------


def test_wiring_builds_sagemaker_adapters_with_the_configured_formats_and_timeouts() -> None:
    cfg = Settings(
        text_backend="sagemaker",
        text_endpoint="flan",
        text_format="tgi",
        embed_backend="sagemaker",
        embed_endpoint="tei",
        embed_format="tei",
        embed_dimension=768,
        model_timeout_seconds=12.0,
        model_max_attempts=2,
    )
    generator = wiring.text_generator(cfg)
    embedder = wiring.embedder(cfg)
    assert isinstance(generator, SageMakerTextGenerator) and generator.payload_format == "tgi"
    assert isinstance(embedder, SageMakerEmbedder) and embedder.payload_format == "tei"
    assert embedder.dimension == 768 and embedder.max_batch == 32
    client = wiring.model_client("sagemaker-runtime", cfg)
    assert client.meta.config.read_timeout == 12.0
    assert client.meta.config.retries["total_max_attempts"] == 2


def test_wiring_defaults_to_the_jumpstart_formats() -> None:
    cfg = Settings(
        text_backend="sagemaker",
        text_endpoint="x",
        embed_backend="sagemaker",
        embed_endpoint="y",
        embed_dimension=4096,
    )
    assert wiring.text_generator(cfg).payload_format == "jumpstart-flan-t5"
    assert wiring.embedder(cfg).payload_format == "jumpstart-gpt-j"


def test_wiring_builds_bedrock_and_openai_compatible_adapters() -> None:
    bedrock_cfg = Settings(
        text_backend="bedrock", text_model_id=CLAUDE, embed_backend="bedrock", embed_dimension=512
    )
    assert isinstance(wiring.text_generator(bedrock_cfg), BedrockTextGenerator)
    titan = wiring.embedder(bedrock_cfg)
    assert isinstance(titan, BedrockEmbedder) and titan.name == "amazon.titan-embed-text-v2:0"
    openai_cfg = Settings(
        text_backend="openai",
        embed_backend="openai",
        text_model_id="llama3.2",
        embed_model_id="nomic-embed-text",
        embed_dimension=768,
    )
    assert isinstance(wiring.text_generator(openai_cfg), OpenAICompatTextGenerator)
    assert isinstance(wiring.embedder(openai_cfg), OpenAICompatEmbedder)


# --- through the chat API ---------------------------------------------------------------------


def test_a_throttled_sagemaker_model_answers_503_keeps_the_message_and_a_retry_completes_it(
    dynamodb, sagemaker, monkeypatch, lambda_context
) -> None:
    """Without the adapter's mapping a botocore ClientError would be a 500 and the message lost."""
    from handlers import chat_api
    from tests.unit.test_chat_api import Api, _turn_items

    client, stub = sagemaker
    deps = ChatDeps(
        memory=wiring.short_term_memory(), generator=SageMakerTextGenerator(client, ENDPOINT)
    )
    monkeypatch.setattr(wiring, "chat_deps", lambda: deps)
    api = Api(chat_api.handler, lambda_context)
    sid = api.new_session()
    stub.add_client_error("invoke_endpoint", "ThrottlingException", "Rate exceeded", 400)
    status, err = api.call(
        "POST", f"/sessions/{sid}/messages", {"content": "my cat is Tom", "client_message_id": "m"}
    )
    assert status == 503 and err["error"]["code"] == "model_unavailable"
    assert ENDPOINT in err["error"]["message"]
    items = _turn_items(dynamodb, sid)
    assert len(items) == 1 and items[0]["pending"] == {"BOOL": True}

    stub.add_response(
        "invoke_endpoint", {"Body": stream({"generated_texts": ["Nice to meet Tom.\nUser: hi"]})}
    )
    turn = api.say(sid, "my cat is Tom", client_message_id="m")
    assert turn["turn"] == 1 and turn["response"] == "Nice to meet Tom."
    assert len(_turn_items(dynamodb, sid)) == 1
