"""Text generation (Converse API) and embeddings (Titan text v2, Cohere Embed) on Amazon Bedrock."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from chatmemory.adapters.model_io import (
    JsonApi,
    clip_to_token_bound,
    cut_at_stop,
    embed_in_batches,
    invoke_json,
    read_answer,
    server_stops,
)
from chatmemory.adapters.retry import model_errors, stop_retrying_read_timeouts
from chatmemory.errors import ModelUnavailable
from chatmemory.ports import (
    CONTENT_FILTER,
    END,
    LENGTH,
    STOP_SEQUENCE,
    Finish,
    GenerationOptions,
    Piece,
    TextGenerator,
)
from chatmemory.schema import foundation_model

# InvokeModel's names for a request's parts (and its answer's body).
_MISSING = "is not available: check the model id, the region and that model access is enabled"
_INVOKE_MODEL = JsonApi("body", content_type="contentType", accept="accept", missing=_MISSING)
# Bedrock chat models read far more than this, but a prompt is also clipped to
# PROMPT_TOKEN_BUDGET, and cost and latency grow with it; 4096 is a safe floor for every
# current Converse model.
DEFAULT_CONTEXT_TOKENS = 4096
TITAN_V2_DIMENSIONS = (256, 512, 1024)
# Titan Text Embeddings read at most 8,192 tokens or 50,000 characters and refuse a longer input
# ("Too many input tokens"): a text is clipped to a bound that holds for any script (a CJK
# character can be 3 tokens, model_io.token_bound), less room for the tokens the model adds.
# English loses nothing it would use well: past ~8,000 characters an embedding says little more
# of a text's start, and AWS recommends embedding paragraph-sized segments.
TITAN_MAX_INPUT_TOKENS = 8192
TITAN_INPUT_BOUND = TITAN_MAX_INPUT_TOKENS - 192
# Cohere Embed on Bedrock: at most 96 texts per request and 2048 characters per text.
COHERE_MAX_BATCH = 96
COHERE_MAX_CHARS = 2048


def _target(model_id: str) -> str:
    if not model_id:
        raise ValueError("a Bedrock model id is required")
    return f"Bedrock model {model_id!r}"


# Converse's stopReason as this project's (ports.Finish.stop_reason); any other is END.
_STOP_REASONS = {
    "stop_sequence": STOP_SEQUENCE,
    "max_tokens": LENGTH,
    "model_context_window_exceeded": LENGTH,
    "guardrail_intervened": CONTENT_FILTER,
    "content_filtered": CONTENT_FILTER,
}
# Converse takes a temperature from 0 to 1 (InferenceConfiguration).
MAX_TEMPERATURE = 1.0


# The model families Bedrock caches prompts for with a cachePoint (explicit prompt caching):
# Claude 3.5 Haiku, 3.7 Sonnet and the Claude 4 models, and Amazon Nova. A cachePoint sent to
# another model is refused, so only these get one.
_CACHING = re.compile(
    r"(?:^|[.:/])(?:anthropic\.claude-(?:3-5-haiku|3-7-sonnet|(?:opus|sonnet|haiku)-4)|"
    r"amazon\.nova-(?:micro|lite|pro|premier))"
)


def caches_prompts(model_id: str) -> bool:
    """Whether Bedrock caches prompt prefixes of this model (an inference profile's id too)."""
    return bool(_CACHING.search(model_id))


class BedrockTextGenerator(TextGenerator):
    """TextGenerator on any Bedrock model that supports the Converse API: Converse for a whole
    answer, ConverseStream for a streamed one."""

    honours = frozenset({"max_new_tokens", "stop", "temperature"})

    def __init__(
        self, client: Any, model_id: str, *, context_tokens: int = DEFAULT_CONTEXT_TOKENS
    ) -> None:
        self._target = _target(model_id)
        stop_retrying_read_timeouts(client)
        self._client = client
        self.name = model_id
        self.context_tokens = context_tokens

    def unsupported(self, options: GenerationOptions) -> dict[str, str]:
        refused = super().unsupported(options)
        if options.temperature is not None and not 0 <= options.temperature <= MAX_TEMPERATURE:
            refused["temperature"] = f"{self._target} takes a temperature from 0 to 1"
        return refused

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        config: dict[str, Any] = {"maxTokens": options.max_new_tokens}
        if stops := server_stops(options.stop):
            config["stopSequences"] = stops
        if options.temperature is not None:
            config["temperature"] = options.temperature
        request = {
            "modelId": self.name,
            "messages": [{"role": "user", "content": self._content(prompt, options)}],
            "inferenceConfig": config,
        }
        answer = self._streamed(request) if stream else self._whole(request)
        return cut_at_stop(answer, options.stop)

    def _content(self, prompt: str, options: GenerationOptions) -> list[dict[str, Any]]:
        """The prompt as one text, or, for a model that caches prompts, its constant start
        (the system line and the profile block) and a cache point before the rest: a turn
        within the cache's lifetime (5 minutes) reads that start from the cache. Below the
        model's minimum (1,024 tokens for most Claude models) Bedrock answers as without it."""
        prefix = options.constant_prefix
        if not (0 < prefix < len(prompt)) or not caches_prompts(self.name):
            return [{"text": prompt}]
        return [
            {"text": prompt[:prefix]},
            {"cachePoint": {"type": "default"}},
            {"text": prompt[prefix:]},
        ]

    def _whole(self, request: dict[str, Any]) -> Iterator[Piece]:
        with model_errors(self._target, missing=_MISSING):
            answer = self._client.converse(**request)
        # Reasoning models put other blocks before the text; keep only the text.
        yield read_answer(
            self._target,
            answer,
            lambda a: "".join(b.get("text", "") for b in a["output"]["message"]["content"]),
        )
        yield self._finish(answer.get("stopReason"), answer.get("usage"))

    def _streamed(self, request: dict[str, Any]) -> Iterator[Piece]:
        stop_reason, usage = None, None
        with model_errors(self._target, missing=_MISSING):
            events = self._client.converse_stream(**request)["stream"]
            try:
                for event in events:
                    if "contentBlockDelta" in event:
                        # Text deltas only (a reasoning model's reasoning is not the answer).
                        text = event["contentBlockDelta"]["delta"].get("text")
                        if text:
                            yield text
                    elif "messageStop" in event:
                        stop_reason = event["messageStop"]["stopReason"]
                    elif "metadata" in event:
                        usage = event["metadata"].get("usage")
            finally:
                events.close()
        if stop_reason is None:
            raise ModelUnavailable(f"{self._target} ended its answer before it was finished")
        yield self._finish(stop_reason, usage)

    def _finish(self, stop_reason: str | None, usage: dict[str, Any] | None) -> Finish:
        usage = usage or {}
        return Finish(
            _STOP_REASONS.get(stop_reason or "", END),
            self.name,
            usage.get("inputTokens"),
            usage.get("outputTokens"),
        )


class BedrockEmbedder:
    """Embedder on Titan text embeddings (one text per request) or Cohere Embed (batches)."""

    def __init__(
        self, client: Any, model_id: str = "amazon.titan-embed-text-v2:0", *, dimension: int
    ) -> None:
        self._target = _target(model_id)
        # An inference profile id ("eu.cohere.embed-v4:0") takes its model's request format.
        family = foundation_model(model_id)
        self._cohere = family.startswith("cohere.embed")
        if family.startswith("amazon.titan-embed-text-v2") and dimension not in TITAN_V2_DIMENSIONS:
            raise ValueError(
                f"{self._target} makes 256, 512 or 1024-dimensional embeddings, not {dimension}:"
                " set EMBED_DIMENSION to one of them"
            )
        stop_retrying_read_timeouts(client)
        self._client = client
        self.name = model_id
        self.dimension = dimension
        self.max_batch = COHERE_MAX_BATCH if self._cohere else 1
        # A model id names one version of one model (a new version gets a new id).
        self.pins_model = True

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return embed_in_batches(
            texts,
            max_batch=self.max_batch,
            dimension=self.dimension,
            target=self._target,
            embed_batch=self._embed_cohere if self._cohere else self._embed_titan,
        )

    def _invoke(self, payload: dict[str, Any]) -> Any:
        """InvokeModel with `payload` as JSON, its answer parsed."""
        call = self._client.invoke_model
        return invoke_json(call, _INVOKE_MODEL, payload, self._target, modelId=self.name)

    def _embed_titan(self, texts: list[str]) -> list[Any]:
        (text,) = texts
        answer = self._invoke(
            {
                "inputText": clip_to_token_bound(text, TITAN_INPUT_BOUND),
                "dimensions": self.dimension,
                "normalize": True,
            }
        )
        return [read_answer(self._target, answer, lambda a: a["embedding"])]

    def _embed_cohere(self, texts: list[str]) -> list[Any]:
        # Longer texts are refused, not truncated, so clip them; "END" truncates by tokens.
        answer = self._invoke(
            {
                "texts": [t[:COHERE_MAX_CHARS] for t in texts],
                "input_type": "search_document",
                "truncate": "END",
            }
        )
        return read_answer(self._target, answer, _cohere_rows)


def _cohere_rows(answer: dict[str, Any]) -> list[Any]:
    rows = answer["embeddings"]
    # Embed v4 (and v3 when embedding_types is set) answers {"float": [[...]], ...}.
    return list(rows["float"] if isinstance(rows, dict) else rows)
