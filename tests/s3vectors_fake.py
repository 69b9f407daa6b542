"""An in-memory Amazon S3 Vectors behind a real botocore client, for service-level tests of the
S3 Vectors adapter (moto has the control plane but no QueryVectors).

Requests are serialized by botocore exactly as for AWS and caught before they are sent; answers
are JSON bodies (and error types in `x-amzn-errortype`) that botocore parses as it would the
service's. The documented limits are enforced: a request body up to 20 MiB, 500 vectors per
PutVectors and DeleteVectors,
100 keys per GetVectors, topK up to 100, keys up to 1,024 characters, 2 KB of filterable and
40 KB of all metadata per vector (counted as the adapter counts them: keys and values as
JSON with non-ASCII characters escaped),
filters only on filterable keys. Cosine distance is 1 - cosine similarity."""

from __future__ import annotations

import json
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from botocore.awsrequest import AWSResponse


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body


class Refused(Exception):
    def __init__(self, code: str, status: int, message: str) -> None:
        super().__init__(message)
        self.code, self.status = code, status


@dataclass
class Index:
    spec: dict[str, Any]
    vectors: dict[str, tuple[list[float], dict[str, Any]]] = field(default_factory=dict)

    @property
    def non_filterable(self) -> set[str]:
        config = self.spec.get("metadataConfiguration") or {}
        return set(config.get("nonFilterableMetadataKeys") or [])


def _size(values: dict[str, Any]) -> int:
    return sum(len(k.encode()) + len(json.dumps(v)) for k, v in values.items())


class FakeS3Vectors:
    """The vector buckets of one account and region: `bucket` exists from the start (the
    stack's), others once CreateVectorBucket made them. `calls` lists (operation, request body)
    in order; `fail_next` makes the next call of an operation answer an error."""

    def __init__(self, client: Any, bucket: str, *, page_size: int | None = None) -> None:
        self.bucket = bucket
        self.page_size = page_size
        self.buckets: dict[str, dict[str, Index]] = {bucket: {}}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._failures: deque[tuple[str, str, int]] = deque()
        client.meta.events.register_first("before-send.s3vectors", self.answer)

    @property
    def indexes(self) -> dict[str, Index]:
        """The indexes of the stack's bucket."""
        return self.buckets[self.bucket]

    def fail_next(self, operation: str, code: str, status: int) -> None:
        self._failures.append((operation, code, status))

    def keys(self, index: str) -> set[str]:
        """Keys of an index of the stack's bucket; for the memory index, of every owner's
        index (per-user indexes) and of a shared one."""
        if index == "conversation-memories":
            return {key for found in self.memory_indexes() for key in found.vectors}
        return set(self.indexes[index].vectors) if index in self.indexes else set()

    def metadata(self, index: str) -> list[dict[str, Any]]:
        if index == "conversation-memories":
            return [meta for found in self.memory_indexes() for _, meta in found.vectors.values()]
        return [meta for _, meta in self.indexes[index].vectors.values()]

    def memory_indexes(self) -> list[Index]:
        """Every index holding memories: the owners' indexes of every bucket, and a shared one."""
        return [
            index
            for bucket in self.buckets.values()
            for name, index in bucket.items()
            if name.startswith("m-") or name == "conversation-memories"
        ]

    def user_indexes(self) -> dict[tuple[str, str], Index]:
        """The owners' indexes by (bucket, index name)."""
        return {
            (bucket, name): index
            for bucket, indexes in self.buckets.items()
            for name, index in indexes.items()
            if name.startswith("m-")
        }

    # --- the wire ---------------------------------------------------------------------------

    def answer(self, request: Any, **_: Any) -> AWSResponse:
        operation = urlsplit(request.url).path.strip("/")
        raw = request.body or b"{}"
        body = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
        self.calls.append((operation, body))
        try:
            if len(raw) > 20 * 1024 * 1024:
                raise Refused("ValidationException", 413, "request payload over 20 MiB")
            for failure in list(self._failures):
                if failure[0] == operation:
                    self._failures.remove(failure)
                    raise Refused(failure[1], failure[2], "injected failure")
            if (
                operation != "CreateVectorBucket"
                and body.get("vectorBucketName") not in self.buckets
            ):
                raise Refused("NotFoundException", 404, "The specified vector bucket not found")
            answer = getattr(self, f"_{operation}")(body)
            status, headers = 200, {"content-type": "application/json"}
        except Refused as refused:
            answer = {"message": str(refused)}
            status = refused.status
            headers = {"content-type": "application/json", "x-amzn-errortype": refused.code}
        return AWSResponse(request.url, status, headers, _Raw(json.dumps(answer).encode()))

    def _index(self, body: dict[str, Any]) -> Index:
        index = self.buckets[body["vectorBucketName"]].get(body.get("indexName", ""))
        if index is None:
            raise Refused("NotFoundException", 404, "The specified index could not be found")
        return index

    # --- operations -------------------------------------------------------------------------

    def _CreateVectorBucket(self, body: dict[str, Any]) -> dict[str, Any]:
        name = body["vectorBucketName"]
        if name in self.buckets:
            raise Refused("ConflictException", 409, "A vector bucket with this name exists")
        self.buckets[name] = {}
        return {"vectorBucketArn": f"arn:aws:s3vectors:us-east-1:123456789012:bucket/{name}"}

    def _CreateIndex(self, body: dict[str, Any]) -> dict[str, Any]:
        name, bucket = body["indexName"], self.buckets[body["vectorBucketName"]]
        if name in bucket:
            raise Refused("ConflictException", 409, "An index with this name already exists")
        if len(bucket) >= 10_000:
            raise Refused("ServiceQuotaExceededException", 402, "10,000 indexes in the bucket")
        spec = {k: v for k, v in body.items() if k not in ("vectorBucketName", "indexName")}
        bucket[name] = Index(spec)
        return {"indexArn": self._arn(body["vectorBucketName"], name)}

    def _DeleteIndex(self, body: dict[str, Any]) -> dict[str, Any]:
        self._index(body)
        del self.buckets[body["vectorBucketName"]][body["indexName"]]
        return {}

    @staticmethod
    def _arn(bucket: str, name: str) -> str:
        return f"arn:aws:s3vectors:us-east-1:123456789012:bucket/{bucket}/index/{name}"

    def _GetIndex(self, body: dict[str, Any]) -> dict[str, Any]:
        index = self._index(body)
        name = body["indexName"]
        return {
            "index": {
                "vectorBucketName": body["vectorBucketName"],
                "indexName": name,
                "indexArn": self._arn(body["vectorBucketName"], name),
                "creationTime": 1767225600,
                "indexMode": "ENHANCED",
                **index.spec,
            }
        }

    def _PutVectors(self, body: dict[str, Any]) -> dict[str, Any]:
        index = self._index(body)
        vectors = body["vectors"]
        if not 1 <= len(vectors) <= 500:
            raise Refused("ValidationException", 400, "vectors: 1 to 500 items")
        for vector in vectors:
            key, data = vector["key"], vector["data"]["float32"]
            metadata = vector.get("metadata") or {}
            if not 1 <= len(key) <= 1024:
                raise Refused("ValidationException", 400, "key: 1 to 1024 characters")
            if len(data) != index.spec["dimension"]:
                raise Refused("ValidationException", 400, "dimension mismatch")
            filterable = {k: v for k, v in metadata.items() if k not in index.non_filterable}
            if _size(filterable) > 2048:
                raise Refused("ValidationException", 400, "filterable metadata over 2 KB")
            if _size(metadata) > 40 * 1024 or len(metadata) > 50:
                raise Refused("ValidationException", 400, "metadata over 40 KB or 50 keys")
            index.vectors[key] = ([float(x) for x in data], metadata)
        return {}

    def _DeleteVectors(self, body: dict[str, Any]) -> dict[str, Any]:
        index = self._index(body)
        if not 1 <= len(body["keys"]) <= 500:
            raise Refused("ValidationException", 400, "keys: 1 to 500 items")
        for key in body["keys"]:
            index.vectors.pop(key, None)  # an absent key is no error
        return {}

    def _GetVectors(self, body: dict[str, Any]) -> dict[str, Any]:
        index = self._index(body)
        if not 1 <= len(body["keys"]) <= 100:
            raise Refused("ValidationException", 400, "keys: 1 to 100 items")
        return {
            "vectors": [_listed(index, key, body) for key in body["keys"] if key in index.vectors]
        }

    def _ListVectors(self, body: dict[str, Any]) -> dict[str, Any]:
        index = self._index(body)
        limit = body.get("maxResults", 500)
        if not 1 <= limit <= 1000:
            raise Refused("ValidationException", 400, "maxResults: 1 to 1000")
        keys = sorted(index.vectors)
        start = int(body.get("nextToken") or 0)
        page = keys[start : start + limit]
        answer: dict[str, Any] = {"vectors": [_listed(index, key, body) for key in page]}
        if start + limit < len(keys):
            answer["nextToken"] = str(start + limit)
        return answer

    def _QueryVectors(self, body: dict[str, Any]) -> dict[str, Any]:
        index = self._index(body)
        top_k = body["topK"]
        if not 1 <= top_k <= 100:
            raise Refused("ValidationException", 400, "topK: 1 to 100")
        query = body["queryVector"]["float32"]
        if len(query) != index.spec["dimension"]:
            raise Refused("ValidationException", 400, "dimension mismatch")
        condition = body.get("filter")
        if condition is not None:
            for name in _keys_of(condition):
                if name in index.non_filterable:
                    raise Refused("ValidationException", 400, f"{name} is not filterable")
        scored = sorted(
            (1.0 - _cosine(query, data), key, metadata)
            for key, (data, metadata) in index.vectors.items()
            if condition is None or _matches(condition, metadata)
        )[:top_k]
        start = int(body.get("nextToken") or 0)
        end = len(scored) if self.page_size is None else start + self.page_size
        answer: dict[str, Any] = {"distanceMetric": index.spec["distanceMetric"], "vectors": []}
        for distance, key, metadata in scored[start:end]:
            hit: dict[str, Any] = {"key": key}
            if body.get("returnDistance"):
                hit["distance"] = distance
            if body.get("returnMetadata"):
                hit["metadata"] = metadata
            answer["vectors"].append(hit)
        if end < len(scored):
            answer["nextToken"] = str(end)
        return answer


def _listed(index: Index, key: str, body: dict[str, Any]) -> dict[str, Any]:
    """A vector as GetVectors and ListVectors answer it: its key, and its data and metadata
    when the request asks for them."""
    data, metadata = index.vectors[key]
    item: dict[str, Any] = {"key": key}
    if body.get("returnData"):
        item["data"] = {"float32": data}
    if body.get("returnMetadata"):
        item["metadata"] = metadata
    return item


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0


def _keys_of(condition: Any) -> set[str]:
    if isinstance(condition, list):
        return set().union(*(_keys_of(c) for c in condition)) if condition else set()
    if not isinstance(condition, dict):
        return set()
    found: set[str] = set()
    for key, value in condition.items():
        if key in ("$and", "$or"):
            found |= _keys_of(value)
        elif not key.startswith("$"):
            found.add(key)
    return found


def _matches(condition: dict[str, Any], metadata: dict[str, Any]) -> bool:
    for key, value in condition.items():
        if key == "$and":
            if not all(_matches(c, metadata) for c in value):
                return False
        elif key == "$or":
            if not any(_matches(c, metadata) for c in value):
                return False
        elif isinstance(value, dict):
            for operator, operand in value.items():
                if operator == "$exists":
                    if (key in metadata) != operand:
                        return False
                elif operator == "$eq":
                    if metadata.get(key) != operand:
                        return False
                elif operator == "$ne":
                    if metadata.get(key) == operand:
                        return False
                elif operator == "$in":
                    if metadata.get(key) not in operand:
                        return False
                else:
                    raise Refused("ValidationException", 400, f"operator {operator}")
        elif metadata.get(key) != value:
            return False
    return True
