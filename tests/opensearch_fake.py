"""An in-memory OpenSearch domain behind a real opensearch-py client: only the connection is
fake, so the adapter's requests (paths, parameters, NDJSON bodies) are the ones it sends in AWS.

It keeps what the adapter relies on: indexes created from a body (its shard count, and its
mapping's `_source.excludes`, so a vector is kept for k-NN but not returned in `_source` unless
the index was made without the exclusion), documents by `_id` with their routing, bulk writes,
searches (match_all, term/terms/exists filters, a k-NN query scored as faiss `innerproduct`, a
naive BM25 stand-in for match and multi_match, sort on a keyword with search_after), msearch and
delete-by-query. `hooks` and `after` let a test act before or after a request is served (a
failure, a deletion racing a copy).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from opensearchpy import Connection, OpenSearch


@dataclass
class Document:
    source: dict[str, Any]
    routing: str | None
    vector: list[float] | None


@dataclass
class Index:
    shards: int
    excludes: tuple[str, ...]
    properties: dict[str, Any]
    docs: dict[str, Document] = field(default_factory=dict)


@dataclass
class Domain:
    """The domain's state, and every request sent as (method, path, params)."""

    indexes: dict[str, Index] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    # Called with (method, path) before a request is served (may raise to fail it), and after.
    hooks: list[Callable[[str, str], None]] = field(default_factory=list)
    after: list[Callable[[str, str], None]] = field(default_factory=list)

    def client(self) -> OpenSearch:
        return OpenSearch(
            hosts=[{"host": "search-fake.eu-west-1.es.amazonaws.com", "port": 443}],
            connection_class=InMemoryConnection,
            domain=self,
            max_retries=0,
        )

    def create(self, name: str, body: dict[str, Any]) -> None:
        mappings = body.get("mappings", {})
        self.indexes[name] = Index(
            shards=int(body.get("settings", {}).get("index", {}).get("number_of_shards", 1)),
            excludes=tuple(mappings.get("_source", {}).get("excludes", ())),
            properties=dict(mappings.get("properties", {})),
        )

    def sources(self, name: str) -> dict[str, dict[str, Any]]:
        """Each document of an index as stored: its full source, vector included."""
        return {
            _id: {**doc.source, **({"embedding": doc.vector} if doc.vector else {})}
            for _id, doc in self.indexes[name].docs.items()
        }


class _Answer(Exception):
    def __init__(self, status: int, body: Any) -> None:
        self.status, self.body = status, body


def _missing(name: str) -> _Answer:
    error = {"type": "index_not_found_exception", "reason": f"no such index [{name}]"}
    return _Answer(404, {"error": error, "status": 404})


class AnsweringConnection(Connection):
    """A connection that answers in this process, as Urllib3HttpConnection would (no socket):
    `answer` says what, given the request with its parameters and body decoded; an answer that
    is not 2xx (and not in `ignore`) raises through this very method, as the real classes do."""

    def perform_request(
        self,
        method: str,
        url: str,
        params: Any = None,
        body: bytes | None = None,
        timeout: float | None = None,
        ignore: Any = (),
        headers: Any = None,
    ) -> Any:
        decoded = {k: v.decode() if isinstance(v, bytes) else v for k, v in (params or {}).items()}
        text = body.decode() if isinstance(body, bytes) else body
        status, answered_headers, answer = self.answer(method, url, decoded, text)
        raw = "" if answer is None else json.dumps(answer)
        if not 200 <= status < 300 and status not in ignore:
            self._raise_error(status, raw, answered_headers.get("content-type"))
        return status, answered_headers, raw

    def answer(
        self, method: str, url: str, params: dict[str, Any], body: str | None
    ) -> tuple[int, dict[str, str], Any]:
        """(status, headers, the body as JSON data: None for none)."""
        raise NotImplementedError


class InMemoryConnection(AnsweringConnection):
    def __init__(self, *, domain: Domain, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.domain = domain

    def answer(
        self, method: str, url: str, params: dict[str, Any], body: str | None
    ) -> tuple[int, dict[str, str], Any]:
        path = url.split("?")[0]
        self.domain.requests.append((method, path, params))
        for hook in self.domain.hooks:
            hook(method, path)
        try:
            status, answer = 200, self._serve(method, path, params, body)
        except _Answer as refused:
            status, answer = refused.status, refused.body
        for hook in self.domain.after:
            hook(method, path)
        return status, {"content-type": "application/json"}, answer

    def _serve(self, method: str, path: str, params: dict[str, str], body: str | None) -> Any:
        parts = [p for p in path.split("/") if p]
        name, action = parts[0], (parts[1] if len(parts) > 1 else None)
        indexes = self.domain.indexes
        if action is None and method == "HEAD":
            if name not in indexes:
                raise _Answer(404, None)
            return None
        if action is None and method == "PUT":
            if name in indexes:
                error = {"type": "resource_already_exists_exception", "reason": name}
                raise _Answer(400, {"error": error, "status": 400})
            self.domain.create(name, json.loads(body or "{}"))
            return {"acknowledged": True, "index": name}
        if name not in indexes:
            raise _missing(name)
        index = indexes[name]
        if action == "_mapping" and method == "GET":
            return {name: {"mappings": {"dynamic": "strict", "properties": index.properties}}}
        if action == "_mapping" and method == "PUT":
            index.properties.update(json.loads(body or "{}")["properties"])
            return {"acknowledged": True}
        if action == "_bulk":
            return self._bulk(index, body or "")
        if action == "_search":
            return self._search(index, json.loads(body or "{}"), params.get("routing"))
        if action == "_msearch":
            lines = [json.loads(line) for line in (body or "").splitlines() if line]
            return {
                "responses": [
                    self._search(index, query, header.get("routing"))
                    for header, query in zip(lines[::2], lines[1::2], strict=True)
                ]
            }
        if action == "_delete_by_query":
            query = json.loads(body or "{}")["query"]
            doomed = [
                _id
                for _id, doc in index.docs.items()
                if _routed(doc, params.get("routing"), index) and _matches(doc, query)
            ]
            for _id in doomed:
                del index.docs[_id]
            return {"deleted": len(doomed), "failures": []}
        raise AssertionError(f"the fake does not serve {method} {path}")

    def _bulk(self, index: Index, body: str) -> Any:
        lines = [json.loads(line) for line in body.splitlines() if line]
        items = []
        for action, source in zip(lines[::2], lines[1::2], strict=True):
            meta = action["index"]
            unknown = set(source) - set(index.properties)
            if unknown:  # dynamic: strict
                error = {"type": "strict_dynamic_mapping_exception", "reason": sorted(unknown)}
                items.append({"index": {"status": 400, "error": error}})
                continue
            vector = source.get("embedding")
            kept = {k: v for k, v in source.items() if k not in index.excludes}
            index.docs[meta["_id"]] = Document(kept, meta.get("routing"), vector)
            items.append({"index": {"_id": meta["_id"], "status": 201, "result": "created"}})
        return {"errors": any("error" in i["index"] for i in items), "items": items}

    def _search(self, index: Index, body: dict[str, Any], routing: str | None) -> Any:
        query = body.get("query", {"match_all": {}})
        docs = [(i, d) for i, d in index.docs.items() if _routed(d, routing, index)]
        if "knn" in query:
            knn = query["knn"]["embedding"]
            scored = [
                (_knn_score(d.vector, knn["vector"]), i, d)
                for i, d in docs
                if d.vector and _matches(d, knn.get("filter", {"match_all": {}}))
            ]
        elif "bool" in query and "must" in query["bool"]:
            scored = [
                (_text_score(d, query["bool"]["must"][0]), i, d)
                for i, d in docs
                if _matches(d, {"bool": {"filter": query["bool"].get("filter", [])}})
            ]
            scored = [s for s in scored if s[0] > 0]
        else:
            scored = [(1.0, i, d) for i, d in docs if _matches(d, query)]
        if "sort" in body:
            [(key, order)] = body["sort"][0].items()
            assert order == "asc"
            scored.sort(key=lambda s: s[2].source[key])
            after = body.get("search_after")
            if after:
                scored = [s for s in scored if s[2].source[key] > after[0]]
        else:
            scored.sort(key=lambda s: -s[0])
        hits = [
            {"_id": i, "_score": score, "_source": _returned(d, body.get("_source"))}
            for score, i, d in scored[: body.get("size", 10)]
        ]
        return {"hits": {"total": {"value": len(scored)}, "hits": hits}}


def _routed(doc: Document, routing: str | None, index: Index) -> bool:
    """Whether a search or deletion with `routing` reaches the document: with one shard every
    routing reaches everything; with more, a routed request reads its routing's shard only
    (modelled as: the document was written with that routing)."""
    return routing is None or index.shards == 1 or doc.routing == routing


def _returned(doc: Document, source: Any) -> dict[str, Any]:
    excludes = set(source.get("excludes", ())) if isinstance(source, dict) else set()
    return {k: v for k, v in doc.source.items() if k not in excludes}


def _matches(doc: Document, query: dict[str, Any]) -> bool:
    [(kind, spec)] = query.items()
    value = doc.source
    if kind == "match_all":
        return True
    if kind == "term":
        [(f, v)] = spec.items()
        return v in _values(value.get(f))
    if kind == "terms":
        [(f, vs)] = spec.items()
        return bool(set(vs) & set(_values(value.get(f))))
    if kind == "exists":
        return value.get(spec["field"]) is not None
    if kind == "bool":
        return all(_matches(doc, q) for q in _list(spec.get("filter"))) and not any(
            _matches(doc, q) for q in _list(spec.get("must_not"))
        )
    raise AssertionError(f"the fake does not match {kind}")


def _values(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _list(value: Any) -> list[Any]:
    return [] if value is None else value if isinstance(value, list) else [value]


def _knn_score(vector: list[float], query: list[float]) -> float:
    ip = sum(a * b for a, b in zip(vector, query, strict=True))
    return 1.0 + ip if ip > 0 else 1.0 / (1.0 - ip)


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def _text_score(doc: Document, match: dict[str, Any]) -> float:
    if "match" in match:
        query, fields = match["match"]["text"]["query"], ["text"]
    else:
        query, fields = match["multi_match"]["query"], match["multi_match"]["fields"]
    return float(max(len(_words(query) & _words(str(doc.source.get(f, "")))) for f in fields))
