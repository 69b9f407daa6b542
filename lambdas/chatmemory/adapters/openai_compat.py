"""Text generation and embeddings on any OpenAI-compatible HTTP server (Ollama, vLLM, llama.cpp
server, LM Studio), over urllib3 (already in the Lambda runtime, with botocore) so the Lambda
asset gains no dependency: one pooled keep-alive connection per server, and urllib3's Retry with
this project's retry rules (adapters/retry.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import closing
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypedDict, Unpack

import urllib3
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    MaxRetryError,
    NewConnectionError,
    ReadTimeoutError,
    ResponseError,
)
from urllib3.util.retry import Retry

from chatmemory import deadline
from chatmemory.adapters.model_io import (
    clip_to_token_bound,
    cut_at_stop,
    embed_in_batches,
    parse_json,
    read_answer,
    server_sent_events,
    server_stops,
    token_bound,
)
from chatmemory.adapters.retry import (
    CONNECT_TIMEOUT_SECONDS,
    RETRYABLE_STATUS,
    backoff_delay,
    classify,
    parse_retry_after,
)
from chatmemory.errors import ChatMemoryError, ModelUnavailable
from chatmemory.ports import (
    CONTENT_FILTER,
    END,
    LENGTH,
    Finish,
    GenerationOptions,
    Piece,
    TextGenerator,
)

if TYPE_CHECKING:
    from urllib3.connectionpool import ConnectionPool
    from urllib3.response import BaseHTTPResponse

_MISSING = "was not found (is the model pulled, e.g. `ollama pull <model>`, and the URL right?)"
# OpenAI's embedding models refuse an input over 8,191 tokens and a request over 300,000 tokens
# in all; servers of other models (vLLM) refuse past their context too, Ollama truncates. Texts
# are clipped, and batched, by a token bound that holds for any script (model_io.token_bound),
# with room for the tokens a model adds. A server whose model reads fewer tokens and does not
# truncate (llama.cpp with a 512-token batch) still needs shorter texts.
OPENAI_EMBED_INPUT_BOUND = 8191 - 191
OPENAI_EMBED_REQUEST_BOUND = 300_000 - 10_000


class ModelRetry(Retry):
    """urllib3's Retry under this project's rules: full jitter on an exponential ceiling, or the
    server's Retry-After when it asks for at most MAX_BACKOFF_SECONDS (a longer one ends the
    retries at once: the wait would outlast API Gateway), and never after a read timeout (the
    server is connected but slow: another try would only be as slow). `sleep` is injectable."""

    def __init__(
        self, *args: Any, sleep: Callable[[float], None] = time.sleep, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._sleep = sleep
        self._delay = 0.0

    def new(self, **kw: Any) -> Self:
        retry = super().new(**kw)
        retry._sleep = self._sleep
        return retry

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: BaseHTTPResponse | None = None,
        error: Exception | None = None,
        _pool: ConnectionPool | None = None,
        _stacktrace: TracebackType | None = None,
    ) -> Self:
        if isinstance(error, ReadTimeoutError):
            raise error
        retry_after = None
        if response is not None:
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
        delay = backoff_delay(len(self.history) + 1, retry_after)
        if delay is None:
            # Raised here, urllib3 hands the (throttled) answer back instead of retrying.
            reason = ResponseError("Retry-After is too long to wait")
            raise MaxRetryError(_pool, url, reason)  # type: ignore[arg-type]  # as urllib3 does
        retry = super().increment(method, url, response, error, _pool, _stacktrace)
        retry._delay = delay
        return retry

    def sleep(self, response: BaseHTTPResponse | None = None) -> None:
        self._sleep(self._delay)


class OpenAICompatClient:
    """POSTs JSON to one server over a pooled keep-alive connection; retries 429, 5xx and failed
    or broken connections with exponential backoff and jitter (or the server's Retry-After),
    never a read timeout."""

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
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._timeout = timeout
        self._pool = urllib3.PoolManager(
            num_pools=1,
            maxsize=4,
            headers=headers,
            # A server that does not accept a connection within seconds is down, however slow
            # its model may be to answer.
            timeout=urllib3.Timeout(connect=min(CONNECT_TIMEOUT_SECONDS, timeout), read=timeout),
            retries=ModelRetry(
                total=max(1, attempts) - 1,
                allowed_methods=frozenset({"POST"}),
                status_forcelist=RETRYABLE_STATUS,
                # ModelRetry reads Retry-After itself: urllib3 would wait however long it says.
                respect_retry_after_header=False,
                # The last failed answer comes back and is mapped to a project error below.
                raise_on_status=False,
                sleep=sleep,
            ),
        )

    def post(self, path: str, payload: dict[str, Any], *, target: str) -> Any:
        """The parsed JSON answer of POST {base_url}/{path}."""
        return parse_json(self._send(path, payload, target=target, stream=False).data, target)

    def stream(self, path: str, payload: dict[str, Any], *, target: str) -> Generator[bytes]:
        """The body of POST {base_url}/{path} as it comes (server-sent events); a connection
        that breaks or goes quiet past the timeout meanwhile is ModelUnavailable."""
        answer = self._send(path, payload, target=target, stream=True)
        read = False
        try:
            # Chunk by chunk as the server sends them (SSE servers send chunked bodies).
            yield from answer.stream()
            read = True
        except ReadTimeoutError as error:
            raise ModelUnavailable(f"{target} stopped answering for too long") from error
        except HTTPError as error:
            raise ModelUnavailable(
                f"{target}: the connection broke while answering ({error!r})"
            ) from error
        finally:
            if not read:
                answer.close()  # the rest of the body is unread: its connection is not reused
            answer.release_conn()

    def _send(
        self, path: str, payload: dict[str, Any], *, target: str, stream: bool
    ) -> BaseHTTPResponse:
        """The successful answer of POST {base_url}/{path}, its body read unless `stream`."""
        url = f"{self.base_url}/{path}"
        # Within the request's deadline: a call that has less time than its timeout gets what
        # is left, and no retry that could not finish.
        left = deadline.current().require(deadline.MIN_CALL_SECONDS, f"call {target}")
        timeout = min(self._timeout, left)
        extra: dict[str, Any] = {}
        if timeout < self._timeout:
            extra = {
                "timeout": urllib3.Timeout(
                    connect=min(CONNECT_TIMEOUT_SECONDS, timeout), read=timeout
                ),
                "retries": False,
            }
        try:
            # A model server answers; a redirect (http to https, a moved path) means the base
            # URL is wrong, and following it would resend a POST as a GET: it is an error.
            answer = self._pool.request(
                "POST",
                url,
                body=json.dumps(payload).encode("utf-8"),
                redirect=False,
                preload_content=not stream,
                **extra,
            )
        except ReadTimeoutError as error:
            raise ModelUnavailable(f"{target} did not answer within {timeout:g} s") from error
        except MaxRetryError as error:  # attempts used up without an answer
            raise self._unreachable(target, error.reason) from error
        except HTTPError as error:
            raise ModelUnavailable(f"{target}: the connection broke ({error!r})") from error
        if 200 <= answer.status < 300:
            return answer
        try:
            raise classify(
                target, status=answer.status, message=_server_message(answer), missing=_MISSING
            )
        finally:
            answer.release_conn()

    def _unreachable(self, target: str, reason: Exception | None) -> ChatMemoryError:
        """What a request that got no answer in any of its attempts fails with."""
        # NewConnectionError (refused, unknown host) is a ConnectTimeoutError too: test it first.
        if isinstance(reason, NewConnectionError):
            if isinstance(reason.__cause__, ConnectionRefusedError):
                return ModelUnavailable(
                    f"no model server answers at {self.base_url} (is Ollama or your model "
                    "server running?)"
                )
            return ModelUnavailable(f"cannot reach the model server at {self.base_url}: {reason}")
        if isinstance(reason, ConnectTimeoutError):
            return ModelUnavailable(
                f"the model server at {self.base_url} did not accept a connection"
            )
        return ModelUnavailable(f"{target}: the connection broke ({reason!r})")


def _server_message(answer: BaseHTTPResponse) -> str:
    """The error message of an OpenAI-style ({"error": {"message"}}), Ollama ({"error": "..."}),
    vLLM ({"message"}) or FastAPI ({"detail"}) error body, else its text."""
    raw = answer.data
    try:
        data = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")[:300] or answer.reason or ""
    if isinstance(data, dict):
        inner = data.get("error", data)
        if isinstance(inner, dict):
            return str(inner.get("message") or inner.get("detail") or inner)[:300]
        return str(inner)[:300]
    return str(data)[:300]


# The chat completions API's finish_reason as this project's (ports.Finish.stop_reason); "stop"
# (the answer ended, or met a stop sequence) and any other is END.
_FINISH_REASONS = {"length": LENGTH, "content_filter": CONTENT_FILTER}


class ServerOptions(TypedDict, total=False):
    """How a model's server is reached (OpenAICompatClient's options)."""

    api_key: str
    timeout: float
    attempts: int
    sleep: Callable[[float], None]


class _ServedModel:
    """A model a server serves under its name: the client of that server, and how errors name
    the model there."""

    kind = "model"

    def __init__(self, base_url: str, model: str, **server: Unpack[ServerOptions]) -> None:
        if not model:
            raise ValueError(f"an OpenAI-compatible {self.kind} model name is required")
        self._http = OpenAICompatClient(base_url, **server)
        self._target = f"model {model!r} at {self._http.base_url}"
        self.name = model


class OpenAICompatTextGenerator(_ServedModel, TextGenerator):
    """TextGenerator on POST {base_url}/chat/completions, the prompt as one user message;
    streamed with `stream: true` (server-sent chat.completion.chunk events)."""

    honours = frozenset({"max_new_tokens", "stop", "temperature"})
    kind = "text"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        context_tokens: int = 4096,
        **server: Unpack[ServerOptions],
    ) -> None:
        super().__init__(base_url, model, **server)
        self.context_tokens = context_tokens

    def pieces(
        self, prompt: str, options: GenerationOptions, *, stream: bool = False
    ) -> Iterator[Piece]:
        payload: dict[str, Any] = {
            "model": self.name,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": options.max_new_tokens,
        }
        if stops := server_stops(options.stop):
            payload["stop"] = stops
        if options.temperature is not None:
            payload["temperature"] = options.temperature
        answer = self._streamed(payload) if stream else self._whole(payload)
        return cut_at_stop(answer, options.stop)

    def _whole(self, payload: dict[str, Any]) -> Iterator[Piece]:
        answer = self._http.post("chat/completions", payload, target=self._target)
        text, reason = read_answer(
            self._target,
            answer,
            lambda a: (
                a["choices"][0]["message"]["content"] or "",
                a["choices"][0].get("finish_reason"),
            ),
        )
        yield text
        yield self._finish(answer, reason, answer.get("usage"))

    def _streamed(self, payload: dict[str, Any]) -> Iterator[Piece]:
        # Usage comes in a last chunk of its own when asked for (OpenAI, vLLM, Ollama).
        payload = payload | {"stream": True, "stream_options": {"include_usage": True}}
        first: dict[str, Any] = {}
        reason, usage = None, None
        with closing(self._http.stream("chat/completions", payload, target=self._target)) as body:
            for data in server_sent_events(body):
                if data.strip() == b"[DONE]":
                    break
                chunk = parse_json(data, self._target)
                if isinstance(chunk, dict) and "error" in chunk:
                    raise self._failed(chunk["error"])
                first = first or chunk
                text, ended = read_answer(self._target, chunk, _delta)
                if text:
                    yield text
                reason = ended or reason
                usage = chunk.get("usage") or usage
        if reason is None:
            raise ModelUnavailable(f"{self._target} ended its answer before it was finished")
        yield self._finish(first, reason, usage)

    def _finish(self, answer: Any, reason: str | None, usage: Any) -> Finish:
        usage = usage or {}
        return Finish(
            _FINISH_REASONS.get(reason or "", END),
            str(answer.get("model") or self.name),
            usage.get("prompt_tokens"),
            usage.get("completion_tokens"),
        )

    def _failed(self, error: Any) -> ChatMemoryError:
        """The project error for an error event in the middle of a streamed answer."""
        detail = error if isinstance(error, dict) else {"message": str(error)}
        status = detail.get("code")
        return classify(
            self._target,
            status=status if isinstance(status, int) else None,
            code=str(detail.get("type") or ""),
            message=f"failed while answering: {detail.get('message') or detail}",
            missing=_MISSING,
        )


def _delta(chunk: dict[str, Any]) -> tuple[str, str | None]:
    """A chat.completion.chunk's text and finish_reason (a usage chunk has no choices)."""
    if not chunk["choices"]:
        return "", None
    choice = chunk["choices"][0]
    return str((choice.get("delta") or {}).get("content") or ""), choice.get("finish_reason")


class OpenAICompatEmbedder(_ServedModel):
    """Embedder on POST {base_url}/embeddings; unit-length vectors."""

    max_batch = 64
    pins_model = False  # a server may serve another model under the same name
    kind = "embedding"

    def __init__(
        self, base_url: str, model: str, *, dimension: int, **server: Unpack[ServerOptions]
    ) -> None:
        super().__init__(base_url, model, **server)
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return embed_in_batches(
            [clip_to_token_bound(text, OPENAI_EMBED_INPUT_BOUND) for text in texts],
            max_batch=self.max_batch,
            dimension=self.dimension,
            target=self._target,
            embed_batch=self._embed_batch,
            max_bytes=OPENAI_EMBED_REQUEST_BOUND,
            size_of=token_bound,
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
