"""Text generation and embeddings on SageMaker real-time endpoints.

Payload formats (TEXT_FORMAT / EMBED_FORMAT):
- "jumpstart-flan-t5": {"text_inputs", "max_length"} -> {"generated_texts": [...]}
- "tgi" (Hugging Face Text Generation Inference): {"inputs", "parameters"} -> [{"generated_text"}]
- "jumpstart-gpt-j": {"text_inputs": [...]} -> {"embedding": [[...], ...]}
- "tei" (Hugging Face Text Embeddings Inference): {"inputs": [...], "normalize"} -> [[...], ...]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from chatmemory import limits
from chatmemory.adapters.model_io import (
    cut_at_stop,
    embed_in_batches,
    invoke_json,
    read_answer,
    server_stops,
)
from chatmemory.adapters.retry import stop_retrying_read_timeouts
from chatmemory.ports import Generation
from chatmemory.schema import EmbedFormat, TextFormat

F = TypeVar("F", TextFormat, EmbedFormat)

_MISSING = "does not exist or is not InService"
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

    def invoke(self, payload: Any) -> Any:
        def send(body: bytes) -> Any:
            return self._client.invoke_endpoint(
                EndpointName=self.endpoint_name,
                ContentType="application/json",
                Accept="application/json",
                Body=body,
            )["Body"]

        return invoke_json(send, payload, target=self.target, missing=_MISSING)


def _check_format(payload_format: str, allowed: type[F]) -> F:
    try:
        return allowed(payload_format)
    except ValueError:
        names = ", ".join(allowed)
        raise ValueError(
            f"unknown SageMaker payload format {payload_format!r}; use one of {names}"
        ) from None


class SageMakerTextGenerator:
    """TextGenerator on a JumpStart FLAN-T5 or a TGI endpoint."""

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

    def generate(self, prompt: str, *, max_new_tokens: int, stop: Sequence[str] = ()) -> Generation:
        target = self._endpoint.target
        if self.payload_format == TextFormat.TGI:
            answer = self._endpoint.invoke(
                {
                    "inputs": prompt,
                    "parameters": {
                        "max_new_tokens": max_new_tokens,
                        "stop": server_stops(stop),
                        "return_full_text": False,
                    },
                }
            )
            text = read_answer(target, answer, _tgi_text)
        else:
            answer = self._endpoint.invoke({"text_inputs": prompt, "max_length": max_new_tokens})
            text = read_answer(target, answer, _flan_text)
        # FLAN-T5 has no stop sequences, and TGI returns the stop sequence it stopped at.
        return Generation(cut_at_stop(text, stop), model=self.name)


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
