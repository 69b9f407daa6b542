"""Text generation and embeddings on any OpenAI-compatible HTTP server (Ollama, vLLM, llama.cpp
server, LM Studio), with the standard library only so the Lambda asset gains no dependency."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

from chatmemory.adapters.model_io import (
    cut_at_stop,
    embed_in_batches,
    parse_json,
    read_answer,
    server_stops,
)
from chatmemory.adapters.retry import (
    RETRYABLE_STATUS,
    backoff_delay,
    classify,
    parse_retry_after,
)
from chatmemory.errors import ChatMemoryError, ModelUnavailable
from chatmemory.ports import Generation

_MISSING = "was not found (is the model pulled, e.g. `ollama pull <model>`, and the URL right?)"


class OpenAICompatClient:
    """POSTs JSON to one server; retries 429, 5xx and failed connections with exponential
    backoff and jitter (or the server's Retry-After), never a read timeout."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str = "",
        timeout: float = 20.0,
        attempts: int = 3,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._timeout = timeout
        self._attempts = max(1, attempts)
        self._sleep = sleep

    def post(self, path: str, payload: dict[str, Any], *, target: str) -> Any:
        """The parsed JSON answer of POST {base_url}/{path}."""
        body = json.dumps(payload).encode("utf-8")
        url = f"{self.base_url}/{path}"
        attempt = 0
        while True:
            attempt += 1
            retry_after: float | None = None
            request = urllib.request.Request(url, data=body, headers=self._headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self._timeout) as answer:
                    raw = answer.read()
            except urllib.error.HTTPError as error:
                failure = classify(
                    target, status=error.code, message=_server_message(error), missing=_MISSING
                )
                if error.code not in RETRYABLE_STATUS:
                    raise failure from error
                failure.__cause__ = error
                retry_after = parse_retry_after(error.headers.get("Retry-After"))
            except urllib.error.URLError as error:  # no connection was made
                failure = self._unreachable(error.reason)
                failure.__cause__ = error
            except TimeoutError as error:
                # Connected but the model is too slow: another try would only be as slow.
                raise ModelUnavailable(
                    f"{target} did not answer within {self._timeout:g} s"
                ) from error
            except (ConnectionError, http.client.HTTPException) as error:
                failure = ModelUnavailable(f"{target}: the connection broke ({error!r})")
                failure.__cause__ = error
            else:
                return parse_json(raw, target)
            delay = backoff_delay(attempt, retry_after) if attempt < self._attempts else None
            if delay is None:
                raise failure
            self._sleep(delay)

    def _unreachable(self, reason: object) -> ChatMemoryError:
        if isinstance(reason, ConnectionRefusedError):
            return ModelUnavailable(
                f"no model server answers at {self.base_url} (is Ollama or your model server "
                "running?)"
            )
        if isinstance(reason, TimeoutError):
            return ModelUnavailable(
                f"the model server at {self.base_url} did not accept a connection"
            )
        return ModelUnavailable(f"cannot reach the model server at {self.base_url}: {reason}")


def _server_message(error: urllib.error.HTTPError) -> str:
    """The error message of an OpenAI-style ({"error": {"message"}}), Ollama ({"error": "..."}),
    vLLM ({"message"}) or FastAPI ({"detail"}) error body, else its text."""
    try:
        raw = error.read()
    except OSError:
        return error.reason if isinstance(error.reason, str) else ""
    try:
        data = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")[:300]
    if isinstance(data, dict):
        inner = data.get("error", data)
        if isinstance(inner, dict):
            return str(inner.get("message") or inner.get("detail") or inner)[:300]
        return str(inner)[:300]
    return str(data)[:300]


class OpenAICompatTextGenerator:
    """TextGenerator on POST {base_url}/chat/completions, the prompt as one user message."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        timeout: float = 20.0,
        attempts: int = 3,
        context_tokens: int = 4096,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not model:
            raise ValueError("an OpenAI-compatible text model name is required")
        self._http = OpenAICompatClient(
            base_url, api_key=api_key, timeout=timeout, attempts=attempts, sleep=sleep
        )
        self._target = f"model {model!r} at {self._http.base_url}"
        self.name = model
        self.context_tokens = context_tokens

    def generate(self, prompt: str, *, max_new_tokens: int, stop: Sequence[str] = ()) -> Generation:
        payload: dict[str, Any] = {
            "model": self.name,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_new_tokens,
        }
        if stops := server_stops(stop):
            payload["stop"] = stops
        answer = self._http.post("chat/completions", payload, target=self._target)
        text = read_answer(
            self._target, answer, lambda a: a["choices"][0]["message"]["content"] or ""
        )
        usage = answer.get("usage") or {}
        return Generation(
            cut_at_stop(text, stop),
            model=str(answer.get("model") or self.name),
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
        )


class OpenAICompatEmbedder:
    """Embedder on POST {base_url}/embeddings; unit-length vectors."""

    max_batch = 64

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        dimension: int,
        api_key: str = "",
        timeout: float = 20.0,
        attempts: int = 3,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not model:
            raise ValueError("an OpenAI-compatible embedding model name is required")
        self._http = OpenAICompatClient(
            base_url, api_key=api_key, timeout=timeout, attempts=attempts, sleep=sleep
        )
        self._target = f"model {model!r} at {self._http.base_url}"
        self.name = model
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return embed_in_batches(
            texts,
            max_batch=self.max_batch,
            dimension=self.dimension,
            target=self._target,
            embed_batch=self._embed_batch,
        )

    def _embed_batch(self, texts: list[str]) -> list[Any]:
        answer = self._http.post(
            "embeddings", {"model": self.name, "input": texts}, target=self._target
        )
        # The order of `data` is not guaranteed by every server: `index` is.
        return read_answer(
            self._target,
            answer,
            lambda a: [d["embedding"] for d in sorted(a["data"], key=lambda d: d["index"])],
        )
