"""Text generation and embeddings on SageMaker real-time endpoints.

Payload formats (TEXT_FORMAT / EMBED_FORMAT):
- "jumpstart-flan-t5": {"text_inputs", "max_length"} -> {"generated_texts": [...]}
- "tgi" (Hugging Face Text Generation Inference): {"inputs", "parameters"} -> [{"generated_text"}],
  or with "stream": true, server-sent events of one token each
- "jumpstart-gpt-j": {"text_inputs": [...]} -> {"embedding": [[...], ...]}
- "tei" (Hugging Face Text Embeddings Inference): {"inputs": [...], "normalize"} -> [[...], ...]
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator, Sequence
from contextlib import closing
from typing import Any, TypeVar

from chatmemory import limits
from chatmemory.adapters.model_io import (
    JsonApi,
    cut_at_stop,
    embed_in_batches,
    invoke_json,
    parse_json,
    read_answer,
    server_sent_events,
    server_stops,
)
from chatmemory.adapters.retry import model_errors, stop_retrying_read_timeouts
from chatmemory.errors import ModelError, ModelUnavailable
from chatmemory.ports import (
    END,
    LENGTH,
    STOP_SEQUENCE,
    Finish,
    GenerationOptions,
    Piece,
    TextGenerator,
)
from chatmemory.schema import EmbedFormat, TextFormat

F = TypeVar("F", TextFormat, EmbedFormat)

# InvokeEndpoint's names for a request's parts (and its answer's body).
_MISSING = "does not exist or is not InService"
_INVOKE = JsonApi("Body", content_type="ContentType", accept="Accept", missing=_MISSING)
FLAN_T5_CONTEXT_TOKENS = 512
# Requests per call: the GPT-J container takes a list, and 16 vectors of 4096 floats keep the
# answer far below SageMaker's 6 MB payload limit; TEI refuses more than its default
# --max-client-batch-size of 32.
_MAX_BATCH = {EmbedFormat.JUMPSTART_GPT_J: 16, EmbedFormat.TEI: 32}
# And by size: InvokeEndpoint takes 6 MB on a real-time endpoint and 4 MB on a serverless one
# (deploy mode's TEI endpoint is serverless; an existing endpoint may be either), and TEI
# refuses a body over its --payload-limit, 2,000,000 bytes unless the container sets another
# (the SageMaker image does not). Sizes count the JSON as sent: json.dumps escapes each non-ASCII
# character to 6 bytes (12 for an emoji), so 32 CJK windows overflow long before 32 English ones.
TEI_PAYLOAD_BYTES = 2_000_000
_MAX_BODY = {
    EmbedFormat.JUMPSTART_GPT_J: limits.SAGEMAKER_SERVERLESS_PAYLOAD_BYTES,
    EmbedFormat.TEI: min(limits.SAGEMAKER_SERVERLESS_PAYLOAD_BYTES, TEI_PAYLOAD_BYTES),
}
# What surrounds the texts in a request body ({"inputs": [...], "normalize": ...}).
_BODY_OVERHEAD = 256
# A text is clipped to this many characters: no model behind these containers reads more (GPT-J
# reads 2,048 tokens, TEI's models at most 8,192, ~32,000 characters of English; TEI truncates to
# its model's input, though TEI 1.5.0 refused over 250 characters per input token even so), and
# every text then fits a request on its own, escaped (at most 384 KB).
EMBED_MAX_CHARS = 32_000


class _Endpoint:
    """One SageMaker endpoint spoken to in JSON."""

    def __init__(self, client: Any, endpoint_name: str) -> None:
        if not endpoint_name:
            raise ValueError("a SageMaker endpoint name is required")
        stop_retrying_read_timeouts(client)
        self._client = client
        self.endpoint_name = endpoint_name
        self.target = f"SageMaker endpoint {endpoint_name!r}"

    def stream(self, payload: Any) -> Generator[bytes]:
        """The bytes of a streamed answer as they come (InvokeEndpointWithResponseStream)."""
        with model_errors(self.target, missing=_MISSING):
            events = self._client.invoke_endpoint_with_response_stream(
                EndpointName=self.endpoint_name,
                ContentType="application/json",
                Accept="application/json",
                Body=json.dumps(payload).encode("utf-8"),
            )["Body"]
            try:
                for event in events:
                    if "PayloadPart" in event:
                        yield event["PayloadPart"]["Bytes"]
            finally:
                events.close()

    def invoke(self, payload: Any) -> Any:
        """InvokeEndpoint with `payload` as JSON, its answer parsed."""
        call = self._client.invoke_endpoint
        return invoke_json(call, _INVOKE, payload, self.target, EndpointName=self.endpoint_name)


def _check_format(payload_format: str, allowed: type[F]) -> F:
    try:
        return allowed(payload_format)
    except ValueError:
        names = ", ".join(allowed)
        raise ValueError(
            f"unknown SageMaker payload format {payload_format!r}; use one of {names}"
        ) from None


# TGI's finish_reason as this project's (ports.Finish.stop_reason); "eos_token" is END.
_TGI_STOP_REASONS = {"length": LENGTH, "stop_sequence": STOP_SEQUENCE}
# TGI's error types of a request it could not serve for now (the others are the request's).
_TGI_UNAVAILABLE = frozenset({"overloaded"})


class SageMakerTextGenerator(TextGenerator):
    """TextGenerator on a JumpStart FLAN-T5 or a TGI endpoint. A TGI answer streams (SageMaker's
    InvokeEndpointWithResponseStream of TGI's server-sent events); FLAN-T5's container cannot
    stream, so its answer is one piece either way."""

    honours = frozenset({"max_new_tokens", "stop", "temperature"})

    def __init__(
        self,
        client: Any,
        endpoint_name: str,
        *,
        payload_format: str = TextFormat.JUMPSTART_FLAN_T5,
        context_tokens: int = 512,
    ) -> None:
        self.payload_format = _check_format(payload_format, TextFormat)
        self._endpoint = _Endpoint(client, endpoint_name)
        self.name = endpoint_name
        # FLAN-T5 reads 512 tokens whatever the prompt budget; a TGI model's limit is whatever
        # its deployment allows (MAX_INPUT_TOKENS), so the configured budget is trusted.
        if self.payload_format == TextFormat.JUMPSTART_FLAN_T5:
            context_tokens = min(context_tokens, FLAN_T5_CONTEXT_TOKENS)
        self.context_tokens = context_tokens

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        if self.payload_format == TextFormat.TGI:
            answer = self._tgi_streamed(prompt, options) if stream else self._tgi(prompt, options)
        else:
            answer = self._flan_t5(prompt, options)
        # FLAN-T5 has no stop sequences, and TGI returns the stop sequence it stopped at.
        return cut_at_stop(answer, options.stop)

    def _flan_t5(self, prompt: str, options: GenerationOptions) -> Iterator[Piece]:
        payload: dict[str, Any] = {"text_inputs": prompt, "max_length": options.max_new_tokens}
        payload.update(_sampling(options))
        answer = self._endpoint.invoke(payload)
        yield read_answer(self._endpoint.target, answer, _flan_text)
        yield Finish(END, self.name)

    def _tgi_payload(self, prompt: str, options: GenerationOptions) -> dict[str, Any]:
        parameters: dict[str, Any] = {
            "max_new_tokens": options.max_new_tokens,
            "stop": server_stops(options.stop),
            "return_full_text": False,
        }
        parameters.update(_sampling(options))
        return {"inputs": prompt, "parameters": parameters}

    def _tgi(self, prompt: str, options: GenerationOptions) -> Iterator[Piece]:
        answer = self._endpoint.invoke(self._tgi_payload(prompt, options))
        yield read_answer(self._endpoint.target, answer, _tgi_text)
        yield Finish(END, self.name)

    def _tgi_streamed(self, prompt: str, options: GenerationOptions) -> Iterator[Piece]:
        """TGI's server-sent events out of the stream's payload parts (which split them
        anywhere): each brings a token, and the last one the whole text and (asked for) the
        details of the answer."""
        target = self._endpoint.target
        payload = self._tgi_payload(prompt, options)
        payload["parameters"]["details"] = True
        payload["stream"] = True
        with closing(self._endpoint.stream(payload)) as parts:
            for data in server_sent_events(parts):
                event = parse_json(data, target)
                if isinstance(event, dict) and "error" in event:
                    failed = event.get("error_type") in _TGI_UNAVAILABLE
                    kind = ModelUnavailable if failed else ModelError
                    raise kind(f"{target} failed while answering: {event['error']}")
                text, details = read_answer(target, event, _tgi_event)
                if text:
                    yield text
                if details is not None:
                    yield Finish(
                        _TGI_STOP_REASONS.get(str(details.get("finish_reason")), END),
                        self.name,
                        details.get("input_length"),
                        details.get("generated_tokens"),
                    )
                    return
        raise ModelUnavailable(f"{target} ended its answer before it was finished")


def _tgi_event(event: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """A TGI stream event's text (none for a special token such as the end of text) and, on
    the last event (the one with the whole text), its details ({} when not sent)."""
    token = event["token"]
    text = "" if token.get("special") else str(token.get("text") or "")
    last = event.get("generated_text") is not None
    return text, (dict(event.get("details") or {}) if last else None)


def _sampling(options: GenerationOptions) -> dict[str, Any]:
    """A temperature as FLAN-T5's and TGI's containers take it: sampling at that temperature;
    0 is their default, greedy decoding (TGI refuses a temperature of 0)."""
    if not options.temperature:
        return {}
    return {"do_sample": True, "temperature": options.temperature}


def _tgi_text(answer: Any) -> str:
    first = answer[0] if isinstance(answer, list) else answer
    return str(first["generated_text"])


def _flan_text(answer: dict[str, Any]) -> str:
    if "generated_texts" in answer:
        return str(answer["generated_texts"][0])
    return str(answer["generated_text"])  # older JumpStart versions answer one string


def _tei_rows(answer: Any) -> list[Any]:
    if not isinstance(answer, list):
        raise TypeError("expected a list of vectors")
    return answer


class SageMakerEmbedder:
    """Embedder on a JumpStart GPT-J embedding or a TEI endpoint; unit-length vectors."""

    def __init__(
        self,
        client: Any,
        endpoint_name: str,
        *,
        payload_format: str = EmbedFormat.JUMPSTART_GPT_J,
        dimension: int,
    ) -> None:
        self.payload_format = _check_format(payload_format, EmbedFormat)
        self._endpoint = _Endpoint(client, endpoint_name)
        self.name = endpoint_name
        self.dimension = dimension
        self.max_batch = _MAX_BATCH[self.payload_format]
        self.max_body_bytes = _MAX_BODY[self.payload_format]
        self.pins_model = False  # an endpoint's name outlives the model deployed behind it

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return embed_in_batches(
            [text[:EMBED_MAX_CHARS] for text in texts],
            max_batch=self.max_batch,
            dimension=self.dimension,
            target=self._endpoint.target,
            embed_batch=self._embed_batch,
            max_bytes=self.max_body_bytes - _BODY_OVERHEAD,
        )

    def _embed_batch(self, texts: list[str]) -> list[Any]:
        target = self._endpoint.target
        if self.payload_format == EmbedFormat.TEI:
            # truncate: a passage longer than the model's input is embedded from its start
            # instead of being refused.
            answer = self._endpoint.invoke({"inputs": texts, "normalize": True, "truncate": True})
            return read_answer(target, answer, _tei_rows)
        answer = self._endpoint.invoke({"text_inputs": texts})
        return read_answer(target, answer, lambda a: list(a["embedding"]))
