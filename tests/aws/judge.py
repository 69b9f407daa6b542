"""The AWS contract: what each recorded request must satisfy to succeed in AWS.

1. Its parameters pass botocore's validation against the service model.
2. It stays within the documented limits botocore does not check (chatmemory/limits.py):
   payload bytes, items per batch or transaction, item and key sizes, number digits, S3 Vectors
   metadata sizes, topK and filterable keys, OpenSearch request size for the domain's instance
   type, the model being available in the deployment's region.
3. The sending function's role allows it, as synthesized in the template: each IAM action the
   request needs on each resource it touches (per table and index, per transaction item, per
   S3 Vectors index, per model ARN, per event bus, per OpenSearch path), and on a domain with
   fine-grained access control the OpenSearch permissions of the security role its IAM role is
   mapped to.

A request the judge cannot map is a problem too: a new kind of call extends this module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chatmemory import limits
from chatmemory.schema import (
    INFERENCE_PROFILE_PREFIXES,
    PASSAGE_INDEX,
    USER_BUCKET_SUFFIX,
    USER_INDEX_PREFIX,
    inference_profile,
)
from stacks.models import ON_DEMAND_REGIONS
from tests.aws import iam
from tests.aws.recorder import Sent
from tests.aws.template import Deployment, Function

# What a request needs: an action on a resource, with the condition keys it carries (pairs).
Need = tuple[str, str] | tuple[str, str, tuple[tuple[str, str], ...]]


@dataclass
class Problem:
    sent: Sent
    kind: str  # "invalid", "limit", "iam", "model", "unmapped"
    detail: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.detail}\n    request: {self.sent.describe()}"


# --- sizes --------------------------------------------------------------------------------------


def _dynamodb_value_bytes(value: dict[str, Any]) -> int:
    """An attribute value's size as DynamoDB counts it (Developer Guide, "Item sizes")."""
    ((kind, data),) = value.items()
    if kind == "S":
        return len(data.encode())
    if kind == "N":
        digits = len(data.lstrip("-").replace(".", "").lstrip("0")) or 1
        return (digits + 1) // 2 + 1
    if kind == "B":
        return len(data) if isinstance(data, bytes) else len(str(data))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(_dynamodb_value_bytes({kind[0]: item}) for item in data)
    if kind == "L":
        return 3 + sum(1 + _dynamodb_value_bytes(item) for item in data)
    if kind == "M":
        return 3 + sum(len(k.encode()) + 1 + _dynamodb_value_bytes(v) for k, v in data.items())
    raise ValueError(f"unknown attribute type {kind}")


def dynamodb_item_bytes(item: dict[str, Any]) -> int:
    return sum(len(name.encode()) + _dynamodb_value_bytes(v) for name, v in item.items())


def _numbers(value: Any) -> Iterable[str]:
    """Every DynamoDB Number in a request's attribute values."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "N" and isinstance(inner, str):
                yield inner
            elif key == "NS" and isinstance(inner, list):
                yield from inner
            else:
                yield from _numbers(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _numbers(inner)


def _significant_digits(number: str) -> int:
    mantissa = number.lstrip("+-").lower().split("e")[0].replace(".", "").strip("0")
    return len(mantissa)


# --- the judge ----------------------------------------------------------------------------------


@dataclass
class Judge:
    """Judges requests sent by the functions of one resolved deployment."""

    deployment: Deployment
    functions: dict[str, Function]
    # OpenSearch fine-grained access control: security role name -> body, role -> mapping
    # (what the index setup created; empty without a domain).
    security_roles: dict[str, Any] = field(default_factory=dict)
    security_mappings: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        d = self.deployment
        self._arn = f"arn:{d.partition}:{{service}}:{d.region}:{d.account}:"
        self._domains = d.of_type("AWS::OpenSearchService::Domain")
        self._vector_indexes = {
            (str(d.resolve(p["Properties"]["IndexName"])), self._bucket_of(p)): p["Properties"]
            for p in d.of_type("AWS::S3Vectors::Index").values()
        }
        self._serverless_endpoints = {
            str(d.resolve(p["Properties"]["EndpointName"])).lower()
            for logical, p in d.of_type("AWS::SageMaker::Endpoint").items()
            if self._is_serverless_endpoint(p)
        }

    def _bucket_of(self, index: dict[str, Any]) -> str:
        arn = str(self.deployment.resolve(index["Properties"]["VectorBucketArn"]))
        return arn.rsplit("/", 1)[-1]

    def _is_serverless_endpoint(self, endpoint: dict[str, Any]) -> bool:
        config = endpoint["Properties"]["EndpointConfigName"]
        logical = config["Fn::GetAtt"][0] if isinstance(config, dict) else None
        variants = self.deployment.resources.get(logical, {}).get("Properties", {})
        return any("ServerlessConfig" in v for v in variants.get("ProductionVariants", []))

    # --- entry point ----------------------------------------------------------------------

    def problems(self, sent: Iterable[Sent]) -> list[Problem]:
        found: list[Problem] = []
        for request in sent:
            found += self.check(request)
        return found

    def check(self, sent: Sent) -> list[Problem]:
        problems: list[Problem] = []
        if sent.invalid:
            problems.append(Problem(sent, "invalid", sent.invalid))
        handler = getattr(self, f"_{sent.service.replace('-', '_')}", None)
        if handler is None:
            return [*problems, Problem(sent, "unmapped", f"no rules for service {sent.service}")]
        try:
            needs, limit_problems = handler(sent)
        except _Unmapped as error:
            return [*problems, Problem(sent, "unmapped", str(error))]
        problems += [Problem(sent, "limit", text) for text in limit_problems]
        problems += self._allowed(sent, needs)
        return problems

    # --- IAM ------------------------------------------------------------------------------

    def _statements(self, function_id: str) -> list[dict[str, Any]]:
        role = self.functions[function_id].role_logical_id
        return self.deployment.role_statements(role)

    def _allowed(self, sent: Sent, needs: list[Need]) -> list[Problem]:
        """Each need is (action, resource), or (action, resource, condition keys the request
        carries, as pairs)."""
        statements = self._statements(sent.function)
        problems = []
        for need in dict.fromkeys(needs):
            action, resource = need[0], need[1]
            context = dict(need[2]) if len(need) > 2 else {}  # type: ignore[misc]
            policies = [statements]
            if action.startswith("es:"):
                policies.append(self._domain_policy_for(sent.function, resource))
            decision = iam.allowed_by_any(policies, action, resource, context)
            if not decision.allowed:
                problems.append(Problem(sent, "iam", f"{action} on {resource}: {decision.why}"))
        return problems

    def _domain_policy_for(self, function_id: str, resource: str) -> list[dict[str, Any]]:
        """The statements of the domain's access policy that name this function's role."""
        role_arn = self.deployment.get_att(self.functions[function_id].role_logical_id, "Arn")
        found = []
        for domain in self._domains.values():
            policy = self.deployment.resolve(domain["Properties"].get("AccessPolicies") or {})
            for statement in policy.get("Statement", []):
                principals = statement.get("Principal", {})
                aws = principals.get("AWS") if isinstance(principals, dict) else principals
                if role_arn in ([aws] if isinstance(aws, str) else list(aws or [])):
                    found.append(statement)
        return found

    # --- DynamoDB -------------------------------------------------------------------------

    def _table(self, name: str, index: str | None = None) -> str:
        arn = self._arn.format(service="dynamodb") + f"table/{name}"
        return f"{arn}/index/{index}" if index else arn

    def _dynamodb(self, sent: Sent) -> tuple[list[tuple[str, str]], list[str]]:
        op, p = sent.operation, sent.params
        needs: list[tuple[str, str]] = []
        problems: list[str] = []
        single = ("GetItem", "PutItem", "UpdateItem", "DeleteItem", "DescribeTable")
        if op in single:
            needs.append((f"dynamodb:{op}", self._table(p["TableName"])))
        elif op in ("Query", "Scan"):
            needs.append((f"dynamodb:{op}", self._table(p["TableName"], p.get("IndexName"))))
            problems += _between(p)
        elif op == "BatchGetItem":
            keys = sum(len(spec["Keys"]) for spec in p["RequestItems"].values())
            if keys > limits.DYNAMODB_BATCH_GET.count:
                problems.append(f"BatchGetItem of {keys} keys (at most 100)")
            needs += [("dynamodb:BatchGetItem", self._table(t)) for t in p["RequestItems"]]
        elif op == "BatchWriteItem":
            count = sum(len(requests) for requests in p["RequestItems"].values())
            if count > limits.DYNAMODB_BATCH_WRITE.count:
                problems.append(f"BatchWriteItem of {count} requests (at most 25)")
            needs += [("dynamodb:BatchWriteItem", self._table(t)) for t in p["RequestItems"]]
            for requests in p["RequestItems"].values():
                for request in requests:
                    if "PutRequest" in request:
                        problems += _item_size(request["PutRequest"]["Item"])
        elif op == "TransactWriteItems":
            items = p["TransactItems"]
            if len(items) > limits.DYNAMODB_TRANSACTION.count:
                problems.append(f"TransactWriteItems of {len(items)} actions (at most 100)")
            if sent.payload_bytes > limits.DYNAMODB_TRANSACTION.bytes:
                problems.append(f"TransactWriteItems of {sent.payload_bytes} bytes (at most 4 MB)")
            actions = {
                "Put": "PutItem",
                "Update": "UpdateItem",
                "Delete": "DeleteItem",
                "ConditionCheck": "ConditionCheckItem",
            }
            for item in items:
                ((kind, spec),) = item.items()
                needs.append((f"dynamodb:{actions[kind]}", self._table(spec["TableName"])))
                if kind == "Put":
                    problems += _item_size(spec["Item"])
        elif op == "TransactGetItems":
            needs += [
                ("dynamodb:GetItem", self._table(i["Get"]["TableName"])) for i in p["TransactItems"]
            ]
        else:
            raise _Unmapped(f"DynamoDB {op}")
        if op == "PutItem":
            problems += _item_size(p["Item"])
        for number in _numbers(p):
            if _significant_digits(number) > limits.DYNAMODB_NUMBER_DIGITS:
                problems.append(f"a Number of {_significant_digits(number)} digits (at most 38)")
        for name in (
            "KeyConditionExpression",
            "ConditionExpression",
            "UpdateExpression",
            "FilterExpression",
            "ProjectionExpression",
        ):
            if len(str(p.get(name, "")).encode()) > limits.DYNAMODB_EXPRESSION_BYTES:
                problems.append(f"{name} over 4 KB")
        return needs, problems

    # --- Amazon S3 Vectors ------------------------------------------------------------------

    def _user_index_spec(self, bucket: str, index: str) -> dict[str, Any] | None:
        """An owner's memory index (made by the runtime, not the template) is made as the
        stack's indexes are (schema.s3vectors_index_spec): the passages' index stands for it,
        in a bucket named after a stack's bucket (schema.user_vector_bucket)."""
        if not index.startswith(USER_INDEX_PREFIX):
            return None
        for (name, home), spec in self._vector_indexes.items():
            suffix = bucket.removeprefix(home + USER_BUCKET_SUFFIX)
            if name == PASSAGE_INDEX and suffix != bucket and suffix.isdigit():
                return spec
        return None

    def _s3vectors(self, sent: Sent) -> tuple[list[tuple[str, str]], list[str]]:
        op, p = sent.operation, sent.params
        bucket, index = p.get("vectorBucketName"), p.get("indexName")
        if p.get("indexArn"):
            bucket, index = re.match(r".*bucket/([^/]+)/index/(.+)$", p["indexArn"]).groups()
        problems: list[str] = []
        if op == "CreateVectorBucket":
            arn = self._arn.format(service="s3vectors") + f"bucket/{bucket}"
            homes = {home for _, home in self._vector_indexes}
            if not any(bucket.removeprefix(h + USER_BUCKET_SUFFIX).isdigit() for h in homes):
                problems.append(f"a vector bucket {bucket} not named after the stack's")
            if (p.get("encryptionConfiguration") or {}).get("sseType") != "AES256":
                problems.append("a vector bucket without the stack's encryption (SSE-S3)")
            return [("s3vectors:CreateVectorBucket", arn)], problems
        arn = self._arn.format(service="s3vectors") + f"bucket/{bucket}/index/{index}"
        spec = self._vector_indexes.get((index, bucket)) or self._user_index_spec(bucket, index)
        actions = [f"s3vectors:{op}"]
        if spec is None and op not in ("ListIndexes",):
            problems.append(f"no vector index {index} in bucket {bucket} in the template")
        if op == "CreateIndex" and spec is not None:
            wanted = {
                "dataType": spec["DataType"],
                "dimension": int(spec["Dimension"]),
                "distanceMetric": spec["DistanceMetric"],
                "metadataConfiguration": {
                    "nonFilterableMetadataKeys": list(
                        spec["MetadataConfiguration"]["NonFilterableMetadataKeys"]
                    )
                },
            }
            made = {k: v for k, v in p.items() if k not in ("vectorBucketName", "indexName")}
            if made != wanted:
                problems.append(f"an index made otherwise than the stack's: {made} != {wanted}")
        non_filterable = set(
            ((spec or {}).get("MetadataConfiguration") or {}).get("NonFilterableMetadataKeys", [])
        )
        if op == "PutVectors":
            vectors = p["vectors"]
            if len(vectors) > limits.S3VECTORS_PUT.count:
                problems.append(f"PutVectors of {len(vectors)} vectors (at most 500)")
            if sent.payload_bytes > limits.S3VECTORS_PUT.bytes:
                problems.append(f"PutVectors of {sent.payload_bytes} bytes (at most 20 MiB)")
            for vector in vectors:
                problems += _vector_problems(vector, spec, non_filterable)
        elif op == "DeleteVectors":
            if len(p["keys"]) > limits.S3VECTORS_DELETE.count:
                problems.append(f"DeleteVectors of {len(p['keys'])} keys (at most 500)")
        elif op == "GetVectors":
            if len(p["keys"]) > limits.S3VECTORS_GET_KEYS:
                problems.append(f"GetVectors of {len(p['keys'])} keys (at most 100)")
        elif op == "QueryVectors":
            if p["topK"] > limits.S3VECTORS_TOP_K:
                problems.append(f"QueryVectors with topK {p['topK']} (at most 100)")
            for key in _filter_keys(p.get("filter")):
                if key in non_filterable:
                    problems.append(f"a filter on {key}, which the index declares non-filterable")
            if spec is not None and len(p["queryVector"]["float32"]) != int(spec["Dimension"]):
                problems.append("a query vector of another dimension than the index's")
            # QueryVectors' documentation: a filter, returnMetadata or queryTexts also need
            # s3vectors:GetVectors.
            if p.get("filter") or p.get("returnMetadata") or p.get("queryTexts"):
                actions.append("s3vectors:GetVectors")
        elif op == "ListVectors":
            if p.get("maxResults", 0) > limits.S3VECTORS_LIST_PAGE:
                problems.append(f"ListVectors of {p['maxResults']} vectors a page (at most 1,000)")
            if p.get("returnData") or p.get("returnMetadata"):
                actions.append("s3vectors:GetVectors")
        elif op not in ("GetIndex", "CreateIndex", "DeleteIndex"):
            raise _Unmapped(f"S3 Vectors {op}")
        return [(action, arn) for action in actions], problems

    # --- models ---------------------------------------------------------------------------

    def _sagemaker_runtime(self, sent: Sent) -> tuple[list[tuple[str, str]], list[str]]:
        if sent.operation != "InvokeEndpoint":
            raise _Unmapped(f"SageMaker runtime {sent.operation}")
        name = sent.params["EndpointName"].lower()
        size = len(sent.params["Body"])
        limit = (
            limits.SAGEMAKER_SERVERLESS_PAYLOAD_BYTES
            if name in self._serverless_endpoints
            else limits.SAGEMAKER_REALTIME_PAYLOAD_BYTES
        )
        problems = [f"a payload of {size} bytes (at most {limit})"] if size > limit else []
        arn = self._arn.format(service="sagemaker") + f"endpoint/{name}"
        return [("sagemaker:InvokeEndpoint", arn)], problems

    def _bedrock_runtime(self, sent: Sent) -> tuple[list[Need], list[str]]:
        if sent.operation not in ("Converse", "InvokeModel"):
            raise _Unmapped(f"Bedrock runtime {sent.operation}")
        model_id = sent.params["modelId"]
        region = self.deployment.region
        d = self.deployment
        problems: list[str] = []
        if sent.payload_bytes > limits.BEDROCK_REQUEST_BYTES:
            problems.append(f"a request of {sent.payload_bytes} bytes")
        profile = inference_profile(model_id)
        if profile is None:
            needs: list[Need] = [
                (
                    "bedrock:InvokeModel",
                    f"arn:{d.partition}:bedrock:{region}::foundation-model/{model_id}",
                )
            ]
            regions = ON_DEMAND_REGIONS.get(model_id)
            if regions is not None and region not in regions:
                problems.append(
                    f"{model_id} is not on demand in {region} (only {', '.join(sorted(regions))})"
                )
        else:
            prefix, foundation = profile
            geography = {
                "us": "us-",
                "eu": "eu-",
                "apac": "ap-",
                "ca": "ca-",
                "jp": "ap-northeast-",
                "au": "ap-southeast-",
            }
            if prefix != "global" and not region.startswith(geography.get(prefix, prefix + "-")):
                problems.append(f"the inference profile {model_id} is not one of {region}")
            bedrock = f"arn:{d.partition}:bedrock:"
            profile_arn = f"{bedrock}{region}:{d.account}:inference-profile/{model_id}"
            through = (("bedrock:InferenceProfileArn", profile_arn),)
            needs = [
                ("bedrock:InvokeModel", profile_arn),
                # Bedrock may route the request to the model in any destination region of the
                # profile's geography (a global profile's model ARN has no region), and the
                # request carries the profile it came through.
                *(
                    (
                        "bedrock:InvokeModel",
                        f"{bedrock}{r}::foundation-model/{foundation}",
                        through,
                    )
                    for r in _DESTINATIONS.get(prefix, (region,))
                ),
            ]
        if sent.operation == "InvokeModel":
            body = json.loads(sent.params["body"])
            if len(body.get("inputText", "")) > 50_000:
                problems.append("a Titan embedding input over 50,000 characters")
        return needs, problems

    # --- EventBridge ----------------------------------------------------------------------

    def _events(self, sent: Sent) -> tuple[list[tuple[str, str]], list[str]]:
        if sent.operation != "PutEvents":
            raise _Unmapped(f"EventBridge {sent.operation}")
        entries = sent.params["Entries"]
        problems = []
        if len(entries) > limits.EVENTBRIDGE_PUT_EVENTS.count:
            problems.append(f"PutEvents of {len(entries)} entries (at most 10)")
        size = sum(_event_bytes(e) for e in entries)
        if size > limits.EVENTBRIDGE_PUT_EVENTS.bytes:
            problems.append(f"PutEvents of {size} bytes (at most 256 KB)")
        needs = []
        for entry in entries:
            bus = entry.get("EventBusName", "default")
            arn = (
                bus
                if bus.startswith("arn:")
                else self._arn.format(service="events") + f"event-bus/{bus}"
            )
            needs.append(("events:PutEvents", arn))
        return needs, problems

    # --- Lambda ---------------------------------------------------------------------------

    def _lambda(self, sent: Sent) -> tuple[list[tuple[str, str]], list[str]]:
        """An invocation of a function (by API Gateway, an event source mapping, an operator):
        its event and its answer each within the synchronous payload limit."""
        problems = []
        if sent.payload_bytes > limits.LAMBDA_PAYLOAD_BYTES:
            problems.append(f"an event of {sent.payload_bytes} bytes (at most 6 MB)")
        answer = sent.params["response_bytes"]
        if answer > limits.LAMBDA_PAYLOAD_BYTES:
            problems.append(f"an answer of {answer} bytes (at most 6 MB): Lambda fails it")
        return [], problems

    # --- OpenSearch -----------------------------------------------------------------------

    def _opensearch(self, sent: Sent) -> tuple[list[tuple[str, str]], list[str]]:
        method, path = sent.operation.split(" ", 1)
        domain = self._domain_of(sent.host)
        if domain is None:
            raise _Unmapped(f"OpenSearch host {sent.host} is no domain of the template")
        logical, props = domain
        arn = self.deployment.get_att(logical, "Arn")
        instance = props.get("ClusterConfig", {}).get("InstanceType", "r6g.large.search")
        limit = limits.opensearch_payload_limit(str(self.deployment.resolve(instance)))
        problems = []
        if sent.payload_bytes > limit:
            problems.append(
                f"a request of {sent.payload_bytes} bytes to a {instance} domain (at most {limit}): "
                "the domain answers 413"
            )
        needs = [(f"es:ESHttp{method.title()}", f"{arn}{path}")]
        problems += self._fine_grained(sent, props, method, path)
        return needs, problems

    def _domain_of(self, host: str) -> tuple[str, dict[str, Any]] | None:
        for logical, domain in self._domains.items():
            if self.deployment.get_att(logical, "DomainEndpoint") == host:
                return logical, domain["Properties"]
        return None

    def _fine_grained(self, sent: Sent, props: dict[str, Any], method: str, path: str) -> list[str]:
        """The security plugin's permissions a runtime role's request needs, against the role
        its IAM role is mapped to (the master user, the index setup's role, may do anything)."""
        security = props.get("AdvancedSecurityOptions") or {}
        if not security.get("Enabled"):
            return []
        role_arn = self.deployment.get_att(self.functions[sent.function].role_logical_id, "Arn")
        master = self.deployment.resolve(
            (security.get("MasterUserOptions") or {}).get("MasterUserARN")
        )
        if role_arn == master:
            return []
        needed = _fgac_actions(method, path, sent.params.get("query", {}))
        if needed is None:
            return [f"{method} {path}: not a request a runtime role makes (no permission known)"]
        granted = [
            self.security_roles.get(name, {})
            for name, mapping in self.security_mappings.items()
            if role_arn in mapping.get("backend_roles", [])
        ]
        if not granted:
            return [f"the role {role_arn} is mapped to no OpenSearch security role"]
        index = path.strip("/").split("/")[0]
        missing = []
        for scope, action in needed:
            if not any(_fgac_allows(role, scope, action, index) for role in granted):
                missing.append(f"{scope} permission {action}")
        return [f"{method} {path}: the security role lacks {', '.join(missing)}"] if missing else []


class _Unmapped(Exception):
    pass


# --- helpers ------------------------------------------------------------------------------------


def _item_size(item: dict[str, Any]) -> list[str]:
    size = dynamodb_item_bytes(item)
    if size > limits.DYNAMODB_ITEM_BYTES:
        return [f"an item of {size} bytes (at most 400 KB)"]
    return []


_BETWEEN = re.compile(r"BETWEEN\s+(:\w+)\s+AND\s+(:\w+)", re.IGNORECASE)


def _between(params: dict[str, Any]) -> list[str]:
    """A key condition `BETWEEN :a AND :b` with a > b: DynamoDB refuses it (ValidationException)."""
    values = params.get("ExpressionAttributeValues", {})
    problems = []
    for low, high in _BETWEEN.findall(params.get("KeyConditionExpression", "")):
        a, b = values.get(low, {}), values.get(high, {})
        if "N" in a and "N" in b and float(a["N"]) > float(b["N"]):
            problems.append(f"a key condition BETWEEN {a['N']} AND {b['N']} (lower above upper)")
    return problems


def _json_bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def _vector_problems(
    vector: dict[str, Any], spec: dict[str, Any] | None, non_filterable: set[str]
) -> list[str]:
    problems = []
    metadata = vector.get("metadata") or {}
    if len(vector["key"]) > limits.S3VECTORS_KEY_CHARS:
        problems.append(f"a vector key of {len(vector['key'])} characters")
    total = sum(len(k.encode()) + _json_bytes(v) for k, v in metadata.items())
    filterable = sum(
        len(k.encode()) + _json_bytes(v) for k, v in metadata.items() if k not in non_filterable
    )
    if total > limits.S3VECTORS_METADATA_BYTES:
        problems.append(f"vector {vector['key']}: {total} bytes of metadata (at most 40 KB)")
    if filterable > limits.S3VECTORS_FILTERABLE_METADATA_BYTES:
        problems.append(
            f"vector {vector['key']}: {filterable} bytes of filterable metadata (at most 2 KB)"
        )
    if len(metadata) > limits.S3VECTORS_METADATA_KEYS:
        problems.append(f"vector {vector['key']}: {len(metadata)} metadata keys (at most 50)")
    if spec is not None and len(vector["data"]["float32"]) != int(spec["Dimension"]):
        problems.append(f"vector {vector['key']}: not of the index's dimension")
    return problems


def _filter_keys(condition: Any) -> set[str]:
    if isinstance(condition, list):
        return set().union(*(_filter_keys(c) for c in condition)) if condition else set()
    if not isinstance(condition, dict):
        return set()
    found: set[str] = set()
    for key, value in condition.items():
        if key in ("$and", "$or"):
            found |= _filter_keys(value)
        elif not key.startswith("$"):
            found.add(key)
    return found


def _event_bytes(entry: dict[str, Any]) -> int:
    """An entry's size as EventBridge counts it ("Calculating PutEvents event entry size")."""
    size = 14 if "Time" in entry else 0
    for key in ("Source", "DetailType", "Detail"):
        size += len(str(entry.get(key, "")).encode())
    size += sum(len(r.encode()) for r in entry.get("Resources", []))
    return size


# Destination regions a cross-region inference profile may send a request to (some of them:
# the grant must cover every one; "global" may use any commercial region, and its model ARN
# has no region at all).
_DESTINATIONS = {
    "us": ("us-east-1", "us-east-2", "us-west-2"),
    "eu": ("eu-central-1", "eu-west-1", "eu-west-3", "eu-north-1"),
    "apac": ("ap-northeast-1", "ap-south-1", "ap-southeast-1", "ap-southeast-2"),
    "global": ("", "us-east-1", "eu-west-1", "ap-northeast-1"),
}


# --- OpenSearch fine-grained access control -----------------------------------------------------

# The security plugin's static action groups used by the runtime role (its documentation,
# "Default action groups").
_ACTION_GROUPS = {
    "crud": ["indices:data/read*", "indices:data/write*"],
    "cluster_composite_ops": [
        "indices:data/write/bulk",
        "indices:admin/aliases/get",
        "indices:data/read/mget",
        "indices:data/read/msearch",
        "indices:data/read/mtv",
        "indices:data/read/scroll*",
        "indices:admin/resolve/index",
    ],
}


def _fgac_actions(method: str, path: str, query: dict[str, str]) -> list[tuple[str, str]] | None:
    """(cluster|index, action) the security plugin checks for a runtime request (the transport
    actions OpenSearch executes for it)."""
    action = path.strip("/").split("/")[-1]
    if method == "POST" and action == "_search":
        return [("index", "indices:data/read/search")]
    if method == "POST" and action == "_msearch":
        return [("cluster", "indices:data/read/msearch"), ("index", "indices:data/read/search")]
    if method == "POST" and action == "_bulk":
        return [
            ("cluster", "indices:data/write/bulk"),
            ("index", "indices:data/write/bulk[s]"),
            ("index", "indices:data/write/index"),
        ]
    if method == "POST" and action == "_delete_by_query":
        needed = [
            ("index", "indices:data/write/delete/byquery"),
            ("index", "indices:data/read/search"),
            ("cluster", "indices:data/read/scroll"),
            ("index", "indices:data/write/bulk[s]"),
            ("index", "indices:data/write/delete"),
        ]
        if query.get("refresh") == "true":
            # The refresh at its end is a request of its own (indices:admin/refresh).
            needed.append(("index", "indices:admin/refresh"))
        return needed
    return None


def _expand(patterns: Iterable[str]) -> list[str]:
    out: list[str] = []
    for pattern in patterns:
        out += _ACTION_GROUPS.get(pattern, [pattern])
    return out


def _fgac_allows(role: dict[str, Any], scope: str, action: str, index: str) -> bool:
    if scope == "cluster":
        return any(iam.matches(p, action) for p in _expand(role.get("cluster_permissions", [])))
    return any(
        any(iam.matches(p, index) for p in permission.get("index_patterns", []))
        and any(iam.matches(p, action) for p in _expand(permission.get("allowed_actions", [])))
        for permission in role.get("index_permissions", [])
    )


__all__ = ["INFERENCE_PROFILE_PREFIXES", "Judge", "Problem"]
