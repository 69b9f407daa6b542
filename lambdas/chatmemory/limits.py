"""The documented limits of the AWS services the runtime calls, in one place, and the batching
that keeps every bulk request within them by count and by bytes.

Plain data (no boto3): the adapters batch with these, and the AWS contract check in the test
suite (tests/aws) judges every recorded request by the same numbers. Each value names its
source; where a service documents several values, the smallest one that applies to a supported
configuration is used (an OpenSearch domain of the smallest instance types accepts 10 MiB per
request, larger ones 100 MiB: batches of 10 MiB work on all of them).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

T = TypeVar("T")

MiB = 1024 * 1024


class Room(NamedTuple, Generic[T]):
    """What one answer may carry of a listing: its items as `size_of` measures them, `bytes`
    of them in all (at least one item: see fitting)."""

    size_of: Callable[[T], int]
    bytes: int


@dataclass(frozen=True)
class BatchLimit:
    """How much one request may carry: at most `count` items and `bytes` of payload (the
    serialized request body, `overhead` of which is taken by what surrounds the items)."""

    count: int
    bytes: int
    overhead: int = 0


# --- DynamoDB (Developer Guide, "Service, account, and table quotas in Amazon DynamoDB") -------
DYNAMODB_ITEM_BYTES = 400 * 1024  # one item, attribute names included
DYNAMODB_BATCH_WRITE = BatchLimit(count=25, bytes=16 * MiB)
DYNAMODB_BATCH_GET = BatchLimit(count=100, bytes=16 * MiB)
DYNAMODB_TRANSACTION = BatchLimit(count=100, bytes=4 * MiB)
DYNAMODB_PARTITION_KEY_BYTES = 2048
DYNAMODB_SORT_KEY_BYTES = 1024
DYNAMODB_NUMBER_DIGITS = 38  # significant digits of a Number
DYNAMODB_EXPRESSION_BYTES = 4096  # each expression string

# --- Amazon S3 Vectors (S3 User Guide, "Limitations and restrictions") --------------------------
S3VECTORS_PUT = BatchLimit(count=500, bytes=20 * MiB, overhead=1024)
S3VECTORS_DELETE = BatchLimit(count=500, bytes=20 * MiB, overhead=1024)
S3VECTORS_GET_KEYS = 100
S3VECTORS_LIST_PAGE = 1000  # vectors per ListVectors page
S3VECTORS_TOP_K = 100
S3VECTORS_KEY_CHARS = 1024
S3VECTORS_METADATA_BYTES = 40 * 1024
S3VECTORS_FILTERABLE_METADATA_BYTES = 2 * 1024
S3VECTORS_METADATA_KEYS = 50
S3VECTORS_MAX_DIMENSION = 4096
S3VECTORS_INDEXES_PER_BUCKET = 10_000
S3VECTORS_BUCKETS_PER_REGION = 10_000  # per account
S3VECTORS_VECTORS_PER_INDEX = 2_000_000_000
# Per index: PutVectors and DeleteVectors requests a second together, and vectors inserted and
# deleted a second together ("Limitations and restrictions"); queries: "hundreds of
# QueryVectors, GetVectors, or ListVectors requests per second per vector index" (S3 Vectors
# best practices: a range, not a number; the capacity model reads it as 100).
S3VECTORS_WRITE_REQUESTS_PER_SECOND = 1_000
S3VECTORS_WRITE_VECTORS_PER_SECOND = 2_500
S3VECTORS_QUERIES_PER_SECOND = 100

# --- Amazon OpenSearch Service (Developer Guide, "Network quotas": the maximum size of HTTP
# request payloads is 10 MiB on t2 and t3 instance types, 100 MiB on the others). Serverless
# collections are held to the same 10 MiB. -----------------------------------------------------
OPENSEARCH_SMALL_INSTANCE_BYTES = 10 * MiB
OPENSEARCH_LARGE_INSTANCE_BYTES = 100 * MiB
OPENSEARCH_BULK = BatchLimit(count=500, bytes=OPENSEARCH_SMALL_INSTANCE_BYTES)
# A document's _id ("_id field": larger values are rejected), counted in UTF-8 bytes.
OPENSEARCH_ID_BYTES = 512
# An index's primary shards (index.number_of_shards: at most 1,024), and a domain's instances
# (OpenSearch Service quotas: 80 a domain; "Petabyte scale": up to 1,000 on a request to AWS
# Support).
OPENSEARCH_SHARDS_PER_INDEX = 1024
OPENSEARCH_INSTANCES_PER_DOMAIN = 80
OPENSEARCH_INSTANCES_PER_DOMAIN_MAX = 1000


def opensearch_payload_limit(instance_type: str) -> int:
    """The request payload a domain of `instance_type` ("t3.small.search") accepts."""
    family = instance_type.split(".", 1)[0]
    small = family in ("t2", "t3") or instance_type == "m3.medium.search"
    return OPENSEARCH_SMALL_INSTANCE_BYTES if small else OPENSEARCH_LARGE_INSTANCE_BYTES


# --- Amazon API Gateway (Developer Guide, "Amazon API Gateway quotas": throttle quota per
# account, per Region across REST, HTTP, WebSocket and WebSocket callback APIs; adjustable) ---
APIGATEWAY_ACCOUNT_RATE = 10_000  # requests per second
APIGATEWAY_ACCOUNT_BURST = 5_000
APIGATEWAY_INTEGRATION_TIMEOUT_SECONDS = 29

# --- Amazon EventBridge (User Guide, "Amazon EventBridge quotas": PutEvents) ---------------------
EVENTBRIDGE_PUT_EVENTS = BatchLimit(count=10, bytes=256 * 1024)

# --- Amazon SageMaker (Developer Guide, "Amazon SageMaker endpoints and quotas") ----------------
SAGEMAKER_REALTIME_PAYLOAD_BYTES = 6 * MiB  # InvokeEndpoint request and response
SAGEMAKER_SERVERLESS_PAYLOAD_BYTES = 4 * MiB

# --- AWS Lambda (Developer Guide, "Lambda quotas": invocation payload, request and response,
# 6 MB each for synchronous invocations; API Gateway's proxy integration is one) --------------
LAMBDA_PAYLOAD_BYTES = 6 * MiB
# What the items of one API answer may take as sent (api_models.answer_bytes): the proxy
# answer's envelope (status, headers) and the answer's other fields (a session, a token) take
# the rest of the 6 MiB.
LAMBDA_ANSWER_ITEMS_BYTES = LAMBDA_PAYLOAD_BYTES - MiB // 2

# AWS Lambda quotas: concurrent executions per Region and account (adjustable; a function's
# reserved concurrency comes out of it, and 100 stay unreserved), and how fast concurrency may
# grow beyond the initial burst ("Lambda scaling behavior": 1,000 execution environments every
# 10 seconds per function). A DynamoDB stream mapping runs at most `parallelization factor`
# batches of a shard at once (1 to 10), one shard after another in order.
LAMBDA_CONCURRENT_EXECUTIONS = 1_000
LAMBDA_UNRESERVED_MINIMUM = 100
LAMBDA_SCALING_PER_10_SECONDS = 1_000
LAMBDA_MAX_PARALLELIZATION_FACTOR = 10

# --- Amazon DynamoDB throughput (Developer Guide, "Throughput default quotas": on-demand tables
# take up to 40,000 read and 40,000 write request units a second each, per table and adjustable;
# a partition serves 3,000 read and 1,000 write units a second; a stream shard is read by at
# most 2 processes at once) -----------------------------------------------------------------
DYNAMODB_TABLE_READ_UNITS = 40_000
DYNAMODB_TABLE_WRITE_UNITS = 40_000
DYNAMODB_PARTITION_READ_UNITS = 3_000
DYNAMODB_PARTITION_WRITE_UNITS = 1_000

# --- Amazon Bedrock (Converse and InvokeModel request bodies) -----------------------------------
BEDROCK_REQUEST_BYTES = 25 * MiB


def fitted_key(key: str, room: int, *, size: Callable[[str], int] = len) -> str:
    """`key` when `size(key)` is at most `room`, else "sha256:" and the hex SHA-256 of `key`
    (71 ASCII characters): deterministic, so rewriting an entry still replaces it, and never
    a key the schema makes (those all hold a "#"). The stores that cap their keys use it."""
    if size(key) <= room:
        return key
    return f"sha256:{hashlib.sha256(key.encode()).hexdigest()}"


def utf8_bytes(text: str) -> int:
    return len(text.encode())


def fitting(items: Sequence[T], size_of: Callable[[T], int], room: int) -> int:
    """How many of the first `items` add up to at most `room` by `size_of`, and at least one
    (an answer always carries its first item: a page without one would never end)."""
    used = 0
    for count, item in enumerate(items):
        used += size_of(item)
        if used > room:
            return max(count, 1)
    return len(items)


def batches(
    items: Sequence[T], size_of: Callable[[T], int], limit: BatchLimit
) -> Iterator[list[T]]:
    """`items` in order, cut into runs that each fit `limit`: at most `limit.count` items whose
    sizes (as `size_of` counts them, separators included) add up to at most `limit.bytes`
    with the overhead. An item too large for a request on its own raises ValueError: no split
    can send it."""
    room = limit.bytes - limit.overhead
    batch: list[T] = []
    used = 0
    for item in items:
        size = size_of(item)
        if size > room:
            raise ValueError(f"one item of {size} bytes is more than a request may carry ({room})")
        if batch and (len(batch) == limit.count or used + size > room):
            yield batch
            batch, used = [], 0
        batch.append(item)
        used += size
    if batch:
        yield batch
