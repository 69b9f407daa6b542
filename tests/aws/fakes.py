"""Stand-ins for the AWS services DynamoDB Local does not cover, answering the requests the
recorder catches: the models (SageMaker runtime, Bedrock runtime), EventBridge and an OpenSearch
domain. They answer as the services do in shape, and well enough that every path of the
scenario runs (a summary, facts in the extractor's format, a sentiment, embeddings whose
similarity follows shared words); they judge nothing: the contract check does.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.response import StreamingBody

from chatmemory.services.longterm.lexical import bm25, document_terms

# --- models ----------------------------------------------------------------------------------


def embed(text: str, dimension: int) -> list[float]:
    """A unit vector from the text's stemmed words hashed into `dimension` buckets, over a low
    dense noise: texts that share words are near, as with a real embedding model, and every
    value is a full float, so requests are as large as a real model's vectors make them."""
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
    noise = random.Random(seed)
    vector = [noise.uniform(-0.01, 0.01) for _ in range(dimension)]
    for term in document_terms(text) or ["<empty>"]:
        digest = hashlib.blake2b(term.encode(), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "big") % dimension
        vector[slot] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


_FACT_LINE = re.compile(r"^\[(\d+)\] (.+)$", re.MULTILINE)


def generate(prompt: str) -> str:
    """What a capable text model would answer the runtime's prompts, in their formats."""
    if prompt.rstrip().endswith("Sentiment:"):
        return "negative 0.7" if re.search(r"\b(angry|awful|terrible)\b", prompt) else "neutral"
    if prompt.rstrip().endswith("Facts:"):
        facts = []
        for turn, text in _FACT_LINE.findall(prompt):
            if re.match(r"(?i)(i|my|we)\b", text):
                facts.append(
                    json.dumps(
                        {"type": "fact", "subject": "", "text": text[:200], "turn": int(turn)}
                    )
                )
        return "\n".join(facts)
    if prompt.rstrip().endswith("Summary:"):
        body = prompt.rstrip()[: -len("Summary:")]
        words = " ".join(body.split()[-60:])
        return f"The user talked about {words}"
    last = prompt.rstrip().splitlines()[-2:] if prompt.strip() else [""]
    return "Noted. " + " ".join(" ".join(last).split()[:40])


def _streaming(data: Any) -> StreamingBody:
    raw = json.dumps(data).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


class EventStream(list[dict[str, Any]]):
    """A parsed event stream as botocore hands it over (an iterable of events that closes)."""

    def close(self) -> None:
        pass


def client_error(code: str, message: str, status: int) -> dict[str, Any]:
    """A botocore parsed error answer (the recorder raises it as the service's exception)."""
    return {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }


@dataclass
class Models:
    """The text and embedding models of one deployment's environment; `fail` decides, per
    (function, text), whether a call fails as an unavailable model would (503)."""

    text_endpoint: str = ""
    text_format: str = ""
    embed_endpoint: str = ""
    embed_format: str = ""
    dimension: int = 384
    fail: Callable[[str], bool] = field(default=lambda text: False)

    def sagemaker(self, operation: str, params: dict[str, Any], body: bytes) -> Any:
        assert operation == "InvokeEndpoint", operation
        payload = json.loads(params["Body"])
        text = json.dumps(payload)
        if self.fail(text):
            return client_error("ServiceUnavailable", "the endpoint is overloaded", 503)
        name = params["EndpointName"]
        if name == self.text_endpoint:
            prompt = payload.get("text_inputs") or payload.get("inputs") or ""
            answer = generate(prompt)
            out: Any = (
                {"generated_texts": [answer]}
                if self.text_format == "jumpstart-flan-t5"
                else [{"generated_text": answer}]
            )
        elif name == self.embed_endpoint:
            texts = payload.get("text_inputs") or payload.get("inputs") or []
            vectors = [embed(t, self.dimension) for t in texts]
            out = {"embedding": vectors} if self.embed_format == "jumpstart-gpt-j" else vectors
        else:
            return client_error("ValidationError", f"Endpoint {name} not found.", 400)
        return {"Body": _streaming(out), "ContentType": "application/json"}

    def bedrock(self, operation: str, params: dict[str, Any], body: bytes) -> Any:
        if operation == "ConverseStream":
            prompt = "".join(
                block.get("text", "") for m in params["messages"] for block in m["content"]
            )
            if self.fail(prompt):
                return client_error("ServiceUnavailableException", "try again", 503)
            words = re.findall(r"\S+\s*", generate(prompt))
            return {
                "stream": EventStream(
                    [
                        {"messageStart": {"role": "assistant"}},
                        *(
                            {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": w}}}
                            for w in words
                        ),
                        {"contentBlockStop": {"contentBlockIndex": 0}},
                        {"messageStop": {"stopReason": "end_turn"}},
                        {
                            "metadata": {
                                "usage": {"inputTokens": len(prompt) // 4, "outputTokens": 20},
                                "metrics": {"latencyMs": 5},
                            }
                        },
                    ]
                )
            }
        if operation == "Converse":
            prompt = "".join(
                block.get("text", "") for m in params["messages"] for block in m["content"]
            )
            if self.fail(prompt):
                return client_error("ServiceUnavailableException", "try again", 503)
            answer = generate(prompt)
            return {
                "output": {"message": {"role": "assistant", "content": [{"text": answer}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": len(prompt) // 4, "outputTokens": 20, "totalTokens": 0},
                "metrics": {"latencyMs": 5},
            }
        assert operation == "InvokeModel", operation
        payload = json.loads(params["body"])
        if self.fail(json.dumps(payload)):
            return client_error("ServiceUnavailableException", "try again", 503)
        if "texts" in payload:  # Cohere Embed
            rows = [embed(t, self.dimension) for t in payload["texts"]]
            return {"body": _streaming({"embeddings": rows}), "contentType": "application/json"}
        vector = embed(payload["inputText"], payload.get("dimensions", self.dimension))
        answer = {"embedding": vector, "inputTextTokenCount": len(payload["inputText"]) // 4}
        return {"body": _streaming(answer), "contentType": "application/json"}


def events(operation: str, params: dict[str, Any], body: bytes) -> Any:
    assert operation == "PutEvents", operation
    entries = [{"EventId": f"event-{n}"} for n, _ in enumerate(params["Entries"])]
    return {"FailedEntryCount": 0, "Entries": entries}


# --- OpenSearch ------------------------------------------------------------------------------


def _score_of_inner_product(ip: float) -> float:
    """The k-NN plugin's score for faiss innerproduct (adapters/opensearch.py inverts it)."""
    return 1.0 + ip if ip > 0 else 1.0 / (1.0 - ip)


def _matches(query: dict[str, Any] | None, source: dict[str, Any]) -> bool:
    if not query:
        return True
    ((kind, spec),) = query.items()
    if kind == "term":
        ((name, value),) = spec.items()
        return source.get(name) == value
    if kind == "terms":
        ((name, values),) = spec.items()
        return source.get(name) in values
    if kind == "exists":
        return source.get(spec["field"]) is not None
    if kind == "match_all":
        return True
    if kind == "bool":

        def clauses(key: str) -> list[dict[str, Any]]:
            value = spec.get(key) or []
            return value if isinstance(value, list) else [value]

        return (
            all(_matches(c, source) for c in clauses("filter"))
            and all(
                _matches(c, source)
                for c in clauses("must")
                if "match" not in c and "multi_match" not in c
            )
            and not any(_matches(c, source) for c in clauses("must_not"))
        )
    raise AssertionError(f"the fake OpenSearch does not know the query {kind}")


@dataclass
class FakeOpenSearch:
    """One domain: indexes of documents, the security plugin's roles and mappings. A document
    written with a routing value is seen by a routed search or delete-by-query only when it
    names the same value (OpenSearch reads only that value's shard: with several shards a
    request routed otherwise than the write misses the document); an unrouted one sees all."""

    indexes: dict[str, dict[str, Any]] = field(default_factory=dict)
    roles: dict[str, Any] = field(default_factory=dict)
    role_mappings: dict[str, Any] = field(default_factory=dict)

    def __call__(
        self, method: str, path: str, query: dict[str, str], body: bytes
    ) -> tuple[int, Any]:
        parts = [p for p in path.split("/") if p]
        if parts[:3] == ["_plugins", "_security", "api"] and method == "PUT":
            store = self.roles if parts[3] == "roles" else self.role_mappings
            store[parts[4]] = json.loads(body)
            return 200, {"status": "OK", "message": f"'{parts[4]}' updated."}
        name = parts[0]
        action = parts[1] if len(parts) > 1 else ""
        if method in ("HEAD", "PUT") and not action:
            if method == "HEAD":
                return (200 if name in self.indexes else 404), None
            if name in self.indexes:
                return 400, _error("resource_already_exists_exception", name, 400)
            self.indexes[name] = {"body": json.loads(body), "docs": {}, "routing": {}}
            return 200, {"acknowledged": True, "index": name}
        index = self.indexes.get(name)
        if index is None:
            return 404, _error("index_not_found_exception", name, 404)
        if action == "_mapping":
            if method == "GET":
                return 200, {name: {"mappings": index["body"]["mappings"]}}
            index["body"]["mappings"]["properties"].update(json.loads(body)["properties"])
            return 200, {"acknowledged": True}
        if action == "_bulk":
            return 200, self._bulk(index, body)
        if action == "_search":
            return 200, self._search(_routed(index, query.get("routing")), json.loads(body))
        if action == "_msearch":
            lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
            answers = [
                self._search(_routed(index, header.get("routing")), search)
                for header, search in zip(lines[::2], lines[1::2], strict=True)
            ]
            return 200, {"took": 1, "responses": [{**a, "status": 200} for a in answers]}
        if action == "_delete_by_query":
            condition = json.loads(body)["query"]
            seen = _routed(index, query.get("routing"))
            doomed = [k for k, doc in seen.items() if _matches(condition, doc)]
            for key in doomed:
                del index["docs"][key]
                index["routing"].pop(key, None)
            return 200, {"took": 1, "deleted": len(doomed), "failures": []}
        raise AssertionError(f"the fake OpenSearch does not know {method} {path}")

    def _bulk(self, index: dict[str, Any], body: bytes) -> dict[str, Any]:
        docs = index["docs"]
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        items = []
        for action, source in zip(lines[::2], lines[1::2], strict=True):
            key = action["index"].get("_id") or f"auto-{len(docs)}"
            docs[key] = source
            index["routing"][key] = action["index"].get("routing")
            items.append({"index": {"_id": key, "status": 201, "result": "created"}})
        return {"took": 1, "errors": False, "items": items}

    def _search(self, docs: dict[str, Any], search: dict[str, Any]) -> dict[str, Any]:
        query = search["query"]
        size = int(search.get("size", 10))
        if "sort" in search:  # a page in a keyword's order (the migration's search_after)
            ((field_name, order),) = search["sort"][0].items()
            assert order == "asc", search["sort"]
            after = (search.get("search_after") or [None])[0]
            keys = sorted(
                (k for k, doc in docs.items() if _matches(query, doc)),
                key=lambda k: docs[k][field_name],
            )
            scored = [(1.0, k) for k in keys if after is None or docs[k][field_name] > after][:size]
        elif "knn" in query:
            spec = query["knn"]["embedding"]
            vector, k = spec["vector"], int(spec["k"])
            scored = [
                (
                    _score_of_inner_product(
                        sum(a * b for a, b in zip(vector, doc["embedding"], strict=True))
                    ),
                    key,
                )
                for key, doc in docs.items()
                if "embedding" in doc and _matches(spec.get("filter"), doc)
            ]
            scored = sorted(scored, reverse=True)[: min(k, size)]
        else:
            clauses = query["bool"]
            (words,) = [c for c in clauses.get("must") or [] if "match" in c or "multi_match" in c]
            if "match" in words:
                text, fields = words["match"]["text"]["query"], ["text"]
            else:
                text, fields = words["multi_match"]["query"], words["multi_match"]["fields"]
            matching = [k for k, doc in docs.items() if _matches(query, doc)]
            best: dict[str, float] = {}
            for name in fields:  # BM25 per field, with that field's own statistics
                keys = [k for k in matching if name in docs[k]]
                scores = bm25(text, [docs[k][name] for k in keys]) if keys else []
                for key, score in zip(keys, scores, strict=True):
                    best[key] = max(best.get(key, 0.0), score)
            scored = sorted(((s, k) for k, s in best.items() if s > 0), reverse=True)[:size]
        excluded = set((search.get("_source") or {}).get("excludes", []))
        hits = [
            {
                "_id": key,
                "_score": score,
                "_source": {f: v for f, v in docs[key].items() if f not in excluded},
            }
            for score, key in scored
        ]
        return {"took": 1, "hits": {"total": {"value": len(hits)}, "hits": hits}}


def _routed(index: dict[str, Any], routing: str | None) -> dict[str, Any]:
    """The documents a request routed by `routing` reads (None: all of them)."""
    if routing is None:
        return dict(index["docs"])
    return {k: doc for k, doc in index["docs"].items() if index["routing"].get(k) == routing}


def _error(kind: str, index: str, status: int) -> dict[str, Any]:
    return {
        "error": {"type": kind, "reason": f"{kind} [{index}]", "index": index},
        "status": status,
    }
