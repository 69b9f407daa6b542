"""Long-term memory: an OpenSearch Service domain (default) or an OpenSearch Serverless vector
collection, and the custom resource that creates the indexes from schema.py at deploy time
(CDK's custom-resource Provider framework invoking handlers/index_setup.py); or an S3 vector
bucket whose two indexes CloudFormation creates itself (no custom resource)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import jsii
from aws_cdk import (
    Annotations,
    Aws,
    CustomResource,
    Duration,
    IStableAnyProducer,
    IStableListProducer,
    Lazy,
    RemovalPolicy,
    Stack,
)
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_opensearchserverless as aoss
from aws_cdk import aws_opensearchservice as opensearch
from aws_cdk import aws_s3vectors as s3vectors
from aws_cdk import custom_resources as cr
from constructs import Construct

from chatmemory import schema
from stacks import nag
from stacks.config import Config
from stacks.functions import LambdaFactory, retention


@jsii.implements(IStableListProducer)
class _RoleArns:
    """The runtime roles granted access so far, read when the template is rendered."""

    def __init__(self) -> None:
        self.arns: list[str] = []

    def produce(self) -> list[str]:
        # A role granted several operations is mapped once.
        return list(dict.fromkeys(self.arns))


@jsii.implements(IStableAnyProducer)
class _Later:
    """A value computed when the template is rendered, after every grant has been made."""

    def __init__(self, compute: Callable[[], Any]) -> None:
        self._compute = compute

    def produce(self) -> Any:
        return self._compute()


# What each runtime operation is on a managed domain (IAM action, path under the domain ARN;
# the paths opensearch-py requests, see chatmemory/adapters/opensearch.py) and on Serverless
# (data access policy permissions on the index).
_POST = "es:ESHttpPost"
_SERVERLESS_READ = "aoss:ReadDocument"
_SERVERLESS_WRITE = "aoss:WriteDocument"
# And on S3 Vectors: the API calls of each operation in chatmemory/adapters/s3vectors.py, as IAM
# actions on the index ARN (every data-plane action of S3 Vectors acts on an index, none on the
# bucket). Every query of users' entries is filtered to one user_id and returns metadata, and a
# query with a filter or returnMetadata needs GetVectors besides QueryVectors. Upserts are
# PutVectors (keys are deterministic: a retry overwrites); a write that finds its owner's index
# missing creates it (CreateIndex, on the index ARN) and, when the bucket is missing too, the
# bucket (CreateVectorBucket, on the bucket ARN). There is no delete-by-query: the adapter
# derives the keys and calls DeleteVectors; on the passages index (delete_document) it first
# probes which passage keys exist with GetVectors. Erasing an owner key deletes its index
# (DeleteIndex). Owners' indexes are not in the template: they are granted by the pattern of
# their names (schema.user_vector_bucket, schema.user_vector_index).
_QUERY = ("s3vectors:QueryVectors", "s3vectors:GetVectors")
_VECTOR_ACTIONS: dict[str, tuple[str, ...]] = {
    "search": _QUERY,
    "msearch": _QUERY,
    "bulk": ("s3vectors:PutVectors",),
    "delete_by_query": ("s3vectors:DeleteVectors",),
}
_PASSAGE_PROBE = "s3vectors:GetVectors"
_CREATE_INDEX = "s3vectors:CreateIndex"
_CREATE_BUCKET = "s3vectors:CreateVectorBucket"
_ERASE = "s3vectors:DeleteIndex"
# Reading the shared memory index of an older deployment, page by page (ListVectors with data
# and metadata also needs GetVectors).
_LIST = ("s3vectors:ListVectors", "s3vectors:GetVectors")
# A vector bucket's name is 3 to 63 characters: the stack's leaves room for "-u" and the number
# of an owners' bucket (up to 99,999; a region holds at most 10,000 buckets).
VECTOR_BUCKET_NAME_LENGTH = 63 - len(schema.USER_BUCKET_SUFFIX) - 5


def physical_name(scope: Construct, suffix: str = "", *, max_length: int) -> str:
    """A lowercase name derived from the stack name (OpenSearch naming rules), so two stages
    in one account never collide."""
    base = re.sub(r"[^a-z0-9-]+", "-", Stack.of(scope).stack_name.lower()).strip("-")
    base = base if base[:1].isalpha() else f"c-{base}"
    return f"{base[: max_length - len(suffix)].rstrip('-')}{suffix}"


# More data nodes than the smallest domain in two AZs: a synth says what the domain costs.
LARGE_DOMAIN_NODES = 2


def _domain_cost(config: Config) -> str:
    """What a domain of `config` bills a month at the price table's list prices, and how to
    size it (the price table is `make cost`'s: scripts/cost/prices.toml)."""
    from scripts.cost.estimate import domain_items, domain_of
    from scripts.cost.prices import table

    prices = table()
    try:
        usd = sum(item.usd for item in domain_items(domain_of(config), prices))
        month = (
            f"about ${usd:,.0f} a month at {prices.region} list prices of {prices.date} "
            "(scripts/cost/prices.toml)"
        )
    except KeyError as missing:  # an instance type set by hand that the table does not price
        month = f"a monthly cost the price table cannot tell ({missing})"
    masters = (
        f" and {config.search_master_nodes} x {config.search_master_instance_type} masters"
        if config.search_master_nodes
        else ""
    )
    return (
        f"The long-term memory domain is {config.search_data_nodes} x "
        f"{config.search_instance_type} of {config.search_volume_gb:,} GiB{masters} "
        f"(searchDailyUsers={config.search_daily_users:,}, dailyUsers={config.daily_users:,}): "
        f"{month}, billed by the hour from the first one, users or not. Set "
        "chatmemory:dailyUsers to the users you expect (docs/decisions.md, a trial's domain)."
    )


class LongTermMemory(Construct):
    """Where consolidated sessions and verified passages are searched. `environment` holds the
    variables the runtime needs; `grant` gives a function exactly the operations it performs.

    On a managed domain every app role is named in the domain access policy with exactly the
    HTTP methods and paths of its IAM policy (within one account either policy alone would
    allow a request, so both must be narrow), and fine-grained access control maps the runtime
    roles to the `chatmemory_runtime` role (documents of the two indexes only). On Serverless
    the data access policy gives each role exactly its permissions on each index. On S3 Vectors
    each role's IAM policy names exactly the S3 Vectors actions it calls on each index ARN."""

    def __init__(
        self, scope: Construct, construct_id: str, *, config: Config, factory: LambdaFactory
    ) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self._runtime_roles = _RoleArns()
        # (role ARN, IAM action, paths) of every domain grant, setup role included.
        self._http_grants: list[tuple[str, str, tuple[str, ...]]] = []
        # Serverless: (description, role ARN, {index: permissions}) per runtime role.
        self._serverless_grants: list[tuple[str, str, dict[str, set[str]]]] = []
        self.serverless = config.search_mode == "serverless"
        self.domain: opensearch.Domain | None = None
        self.collection: aoss.CfnCollection | None = None
        self.vector_bucket: s3vectors.CfnVectorBucket | None = None
        self.vector_indexes: dict[str, s3vectors.CfnIndex] = {}
        # The OpenSearch index setup (a custom resource); S3 Vectors needs none.
        self.setup_function: lambda_.Function | None = None
        self.provider: cr.Provider | None = None
        self.provider_function: lambda_.Function | None = None
        self.index_setup: CustomResource | None = None
        # The body the index setup creates the OpenSearch indexes with (None: S3 Vectors).
        self.index_body: dict[str, Any] | None = None
        # The runtime's security role on a domain (what the setup writes with the index body).
        self.runtime_role_body: dict[str, Any] | None = None
        # The memory indexes of a domain (S3 Vectors: an index per owner, not these).
        self.memory_indexes: tuple[str, ...] = (schema.MEMORY_INDEX,)
        # A domain's memory indexes of the previous generation, while they are migrated.
        self.previous_memory_indexes: tuple[str, ...] = ()
        if config.search_mode == "s3vectors":
            self.bucket_name = self._vector_bucket()
            self.environment = {
                schema.ENV_LONG_TERM_BACKEND: schema.LongTermBackend.S3VECTORS,
                schema.ENV_VECTOR_BUCKET: self.bucket_name,
                schema.ENV_VECTOR_BUCKETS: str(config.vector_buckets),
                schema.ENV_EMBED_DIMENSION: str(config.embed_dimension),
            }
            if config.shared_memory_index:
                self.environment[schema.ENV_VECTOR_SHARED_INDEX] = "true"
            return
        if self.serverless:
            self.endpoint = self._collection()
        else:
            self.endpoint = self._domain()
        self.environment = {
            schema.ENV_LONG_TERM_BACKEND: schema.LongTermBackend.OPENSEARCH,
            schema.ENV_OPENSEARCH_ENDPOINT: self.endpoint,
            schema.ENV_OPENSEARCH_SERVERLESS: "true" if self.serverless else "false",
            schema.ENV_EMBED_DIMENSION: str(config.embed_dimension),
        }
        # A domain's owners spread over several memory indexes (an index holds 1,024 shards),
        # of the configured generation.
        generation = config.search_memory_generation
        self.memory_indexes = schema.memory_index_names(config.search_memory_indexes, generation)
        if len(self.memory_indexes) > 1:
            self.environment[schema.ENV_OPENSEARCH_MEMORY_INDEXES] = str(len(self.memory_indexes))
        if generation:
            self.environment[schema.ENV_OPENSEARCH_MEMORY_GENERATION] = str(generation)
        self.previous_memory_indexes = config.search_migrate_memory_from
        if self.previous_memory_indexes:
            # Every runtime function: their deletions remove entries there too until the end.
            self.environment[schema.ENV_OPENSEARCH_PREVIOUS_MEMORY_INDEXES] = ",".join(
                self.previous_memory_indexes
            )
        # How the setup creates the indexes (a domain's shards and vectors on disk).
        on_disk = config.search_on_disk and not self.serverless
        creation = {
            schema.ENV_OPENSEARCH_SHARDS: str(config.search_shards),
            schema.ENV_OPENSEARCH_ON_DISK: "true" if on_disk else "false",
        }
        self.setup_function = factory.function(
            self,
            "IndexSetup",
            handler="handlers.index_setup.on_event",
            description="Creates the long-term memory indexes (custom resource provider)",
            environment={**self.environment, **creation},
            timeout=Duration.minutes(5),
            memory_mb=256,
            role=self._setup_role,
        )
        self._grant_setup()
        self.provider = self._provider()
        # What the setup writes: the index bodies and (on a domain) the runtime's security role.
        self.index_body = schema.long_term_index_body(
            config.embed_dimension,
            shards=config.search_shards,
            on_disk=on_disk,
            serverless=self.serverless,
        )
        self.runtime_role_body = schema.opensearch_runtime_role_body(
            len(self.memory_indexes), generation, self.previous_memory_indexes
        )
        body = json.dumps([self.index_body, self.runtime_role_body], sort_keys=True)
        # Not "Indexes" as before the Provider: CloudFormation never changes a custom resource's
        # service token, so the resource is replaced (handlers/index_setup.py answers the old
        # one's Delete).
        self.index_setup = CustomResource(
            self,
            "LongTermIndexes",
            service_token=self.provider.service_token,
            resource_type="Custom::LongTermIndexes",
            properties={
                # A new mapping, security role or role list re-runs the setup (an Update).
                "IndexBodySha256": hashlib.sha256(body.encode()).hexdigest(),
                "RuntimeRoleArns": Lazy.list(self._runtime_roles),
            },
        )
        if self.serverless:
            # Index creation is allowed by the data access policy, not by IAM alone.
            self.index_setup.node.add_dependency(self._access_policy)

    def _provider(self) -> cr.Provider:
        """CDK's custom-resource framework: its function answers CloudFormation and invokes the
        setup function (on_event), which returns or raises. Its role may invoke only that
        function and write its own log group. The one function not built by the LambdaFactory:
        its Node.js code and settings are CDK's (an asset of aws-cdk-lib, no bundling)."""
        config = self._config
        setup_function = self.setup_function
        assert setup_function is not None
        role = iam.Role(
            self,
            "IndexSetupProviderRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Custom-resource framework: invokes the IndexSetup function",
        )
        log_group = logs.LogGroup(
            self,
            "IndexSetupProviderLogs",
            retention=retention(config.log_retention_days),
            removal_policy=RemovalPolicy.RETAIN if config.production else RemovalPolicy.DESTROY,
        )
        log_group.grant_write(role)
        provider = cr.Provider(
            self,
            "IndexSetupProvider",
            on_event_handler=setup_function,
            framework_on_event_role=role,
            log_group=log_group,
        )
        framework = provider.node.find_child("framework-onEvent")
        assert isinstance(framework, lambda_.Function)
        self.provider_function = framework
        setup = setup_function.node.default_child
        assert isinstance(setup, lambda_.CfnFunction)
        nag.wildcard(
            role,
            nag.arn_of(setup, ":*"),
            "CDK's Provider grants lambda:InvokeFunction on the setup function's ARN and on its "
            "versions and aliases (':*'); that one function, nothing else.",
        )
        return provider

    # --- managed domain ---------------------------------------------------------------------

    def _domain(self) -> str:
        config = self._config
        removal = RemovalPolicy.RETAIN if config.production else RemovalPolicy.DESTROY
        log_groups = {
            name: logs.LogGroup(
                self,
                f"{name}Logs",
                retention=retention(config.log_retention_days),
                removal_policy=removal,
            )
            for name in ("SlowSearch", "SlowIndex", "Application", "Audit")
        }
        # The domain writes its logs under this policy (a native resource: CDK's default is a
        # custom resource with a Lambda of its own). It must exist before the domain.
        logs_policy = logs.ResourcePolicy(
            self,
            "LogsPolicy",
            policy_statements=[
                iam.PolicyStatement(
                    principals=[iam.ServicePrincipal("es.amazonaws.com")],
                    actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                    resources=[group.log_group_arn for group in log_groups.values()],
                    conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
                )
            ],
        )
        # The index-setup role is the FGAC master user: it exists before the domain, and it is
        # the only principal that may change security settings. Runtime roles get a narrow
        # OpenSearch role, mapped by the setup function.
        self._setup_role = iam.Role(
            self,
            "IndexSetupMasterRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Index-setup Lambda; master user of the long-term memory domain",
        )
        masters = config.search_master_nodes or None
        # Named after the stack: the access policy below must name the domain's ARN, and a
        # generated name would make the domain reference itself.
        domain_name = physical_name(self, max_length=28)
        domain = opensearch.Domain(
            self,
            "Domain",
            domain_name=domain_name,
            version=opensearch.EngineVersion.OPENSEARCH_2_19,
            capacity=opensearch.CapacityConfig(
                data_nodes=config.search_data_nodes,
                data_node_instance_type=config.search_instance_type,
                master_nodes=masters,
                master_node_instance_type=config.search_master_instance_type if masters else None,
                multi_az_with_standby_enabled=False,
            ),
            zone_awareness=opensearch.ZoneAwarenessConfig(
                enabled=config.zone_awareness,
                availability_zone_count=2 if config.zone_awareness else None,
            ),
            ebs=opensearch.EbsOptions(
                volume_size=config.search_volume_gb, volume_type=ec2.EbsDeviceVolumeType.GP3
            ),
            encryption_at_rest=opensearch.EncryptionAtRestOptions(enabled=True),
            node_to_node_encryption=True,
            enforce_https=True,
            tls_security_policy=opensearch.TLSSecurityPolicy.TLS_1_2,
            fine_grained_access_control=opensearch.AdvancedSecurityOptions(
                master_user_arn=self._setup_role.role_arn
            ),
            logging=opensearch.LoggingOptions(
                slow_search_log_enabled=True,
                slow_search_log_group=log_groups["SlowSearch"],
                slow_index_log_enabled=True,
                slow_index_log_group=log_groups["SlowIndex"],
                app_log_enabled=True,
                app_log_group=log_groups["Application"],
                audit_log_enabled=True,
                audit_log_group=log_groups["Audit"],
            ),
            suppress_logs_resource_policy=True,
            enable_version_upgrade=True,
            # A bulk request may only write the index its path names: IAM grants bulk writes
            # per index path (POST /<index>/_bulk), and a body naming another index is refused.
            advanced_options={"rest.action.multi.allow_explicit_index": "false"},
            removal_policy=removal,
        )
        domain.node.add_dependency(logs_policy)
        # Resource policy: each app role may send exactly the requests of its IAM policy
        # (SigV4); FGAC then limits what those requests may touch. Set on the L1 resource,
        # since the L2 option deploys a custom resource. The ARN is built from the name: the
        # domain cannot reference its own ARN.
        domain_arn = Stack.of(self).format_arn(
            service="es", resource="domain", resource_name=domain_name
        )
        cfn_domain = domain.node.default_child
        assert isinstance(cfn_domain, opensearch.CfnDomain)
        cfn_domain.access_policies = {
            "Version": "2012-10-17",
            "Statement": Lazy.any(_Later(lambda: self._domain_statements(domain_arn))),
        }
        self.domain = domain
        if config.search_data_nodes > LARGE_DOMAIN_NODES:
            # A domain billed like a cluster from its first hour, users or not: every synth
            # says what it costs and which setting sized it, so a deploy is no surprise.
            Annotations.of(domain).add_warning_v2("chatmemory:domainSize", _domain_cost(config))
        reason_vpc = (
            "Public endpoint on purpose: the Lambdas run outside a VPC (no NAT gateway or "
            "interface endpoints to pay for while idle). Every request must be SigV4-signed by "
            "one of the app's IAM roles (the domain access policy names each with the requests "
            "it makes), over TLS 1.2, and fine-grained access control gives the runtime roles "
            "document access only."
        )
        nag.acknowledge(domain, "AwsSolutions-OS1", reason_vpc)
        nag.acknowledge(
            domain,
            "AwsSolutions-OS3",
            "Callers are Lambda functions with changing IP addresses: access is restricted by "
            "IAM (SigV4) and fine-grained access control instead of an IP allow list.",
        )
        if not masters:
            nag.acknowledge(
                domain,
                "AwsSolutions-OS4",
                "Development setting: one data node needs no dedicated masters. Production "
                "(chatmemory:stage=prod) deploys 3 dedicated master nodes.",
            )
        if not config.zone_awareness:
            nag.acknowledge(
                domain,
                "AwsSolutions-OS7",
                "Development setting: a single data node cannot be zone aware. Production "
                "(chatmemory:stage=prod) deploys 2 data nodes in 2 Availability Zones.",
            )
        return domain.domain_endpoint

    # --- serverless collection --------------------------------------------------------------

    def _collection(self) -> str:
        config = self._config
        # Collection and policy names: 3-32 characters, lowercase letters, digits and hyphens.
        name = physical_name(self, "-memory", max_length=32)
        resource = f"collection/{name}"
        encryption = aoss.CfnSecurityPolicy(
            self,
            "EncryptionPolicy",
            name=physical_name(self, "-encryption", max_length=32),
            type="encryption",
            policy=json.dumps(
                {
                    "Rules": [{"ResourceType": "collection", "Resource": [resource]}],
                    "AWSOwnedKey": True,
                }
            ),
        )
        network = aoss.CfnSecurityPolicy(
            self,
            "NetworkPolicy",
            name=physical_name(self, "-network", max_length=32),
            type="network",
            # The collection endpoint is reachable over TLS for SigV4-signed requests that the
            # data access policy below allows; no dashboards endpoint.
            policy=json.dumps(
                [
                    {
                        "Rules": [{"ResourceType": "collection", "Resource": [resource]}],
                        "AllowFromPublic": True,
                    }
                ]
            ),
        )
        collection = aoss.CfnCollection(
            self,
            "Collection",
            name=name,
            type="VECTORSEARCH",
            description="Chat memory: consolidated sessions and verified passages",
            standby_replicas="ENABLED" if config.production else "DISABLED",
        )
        collection.node.add_dependency(encryption, network)
        collection.apply_removal_policy(
            RemovalPolicy.RETAIN if config.production else RemovalPolicy.DESTROY
        )
        self.collection = collection
        self._collection_name = name
        self._setup_role = iam.Role(
            self,
            "IndexSetupRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Index-setup Lambda of the long-term memory collection",
        )
        # Rendered with the template: one entry per runtime role, then the setup role's.
        data_policy = Stack.of(self).to_json_string(Lazy.any(_Later(self._data_access_policy)))
        self._access_policy = aoss.CfnAccessPolicy(
            self,
            "DataAccessPolicy",
            name=physical_name(self, "-access", max_length=32),
            type="data",
            policy=data_policy,
        )
        return collection.attr_collection_endpoint

    # --- S3 vector bucket --------------------------------------------------------------------

    def _vector_bucket(self) -> str:
        """A vector bucket and one vector index per schema.LONG_TERM_INDEXES name, created by
        CloudFormation (no index setup function). Returns the bucket name.

        Encryption: SSE-S3 (AES256), stated explicitly. The stack's one customer managed key
        encrypts the alarm topic (and goes with it when alarms are off); a key of the bucket's
        own would cost $1 a month plus a KMS request per call and a key policy for the S3
        Vectors service, for no control this app uses, as for the tables (AWS managed keys).
        The encryption of a vector bucket cannot change later (a new bucket)."""
        config = self._config
        removal = RemovalPolicy.RETAIN if config.production else RemovalPolicy.DESTROY
        # Unique per account and region: named after the stack like the OpenSearch resources
        # (3-63 characters: lowercase letters, digits, hyphens). The runtime needs the name and
        # CloudFormation returns only the ARN of a vector bucket.
        name = physical_name(self, "-vectors", max_length=VECTOR_BUCKET_NAME_LENGTH)
        bucket = s3vectors.CfnVectorBucket(
            self,
            "VectorBucket",
            vector_bucket_name=name,
            encryption_configuration=s3vectors.CfnVectorBucket.EncryptionConfigurationProperty(
                sse_type="AES256"
            ),
        )
        bucket.apply_removal_policy(removal)
        self.vector_bucket = bucket
        # The runtime's definition (what its ensure_indexes creates and checks locally): data
        # type, dimension, metric and the non-filterable metadata keys, none of which an
        # existing index can change.
        spec = schema.s3vectors_index_spec(config.embed_dimension)
        # The passages' index; memories have an index per owner, made by the runtime. A shared
        # memory index is kept while a deployment made before that still holds one
        # (sharedMemoryIndex): removing it from the template would delete it with its vectors
        # before their migration (docs/operations.md).
        kept = [
            schema.PASSAGE_INDEX,
            *([schema.MEMORY_INDEX] if config.shared_memory_index else []),
        ]
        for index_name in [n for n in schema.LONG_TERM_INDEXES if n in kept]:
            index = s3vectors.CfnIndex(
                self,
                "".join(part.title() for part in index_name.split("-")) + "Index",
                vector_bucket_arn=bucket.attr_vector_bucket_arn,
                index_name=index_name,
                data_type=spec["dataType"],
                dimension=spec["dimension"],
                distance_metric=spec["distanceMetric"],
                metadata_configuration=s3vectors.CfnIndex.MetadataConfigurationProperty(
                    non_filterable_metadata_keys=list(
                        spec["metadataConfiguration"]["nonFilterableMetadataKeys"]
                    )
                ),
            )
            # An index deleted with the stack takes its vectors along; the bucket follows.
            index.apply_removal_policy(removal)
            self.vector_indexes[index_name] = index
        return name

    def _grant_vectors(
        self,
        role: iam.IRole,
        *,
        search: Sequence[str],
        msearch: Sequence[str],
        bulk: Sequence[str],
        delete_by_query: Sequence[str],
        erase_owner: bool,
    ) -> None:
        """One statement per index: the union of its operations' S3 Vectors actions; for
        memories, on the pattern of the owners' indexes (plus the index and bucket creation a
        first write makes, and the index deletion of an owner's erasure), and the deletions
        also on a shared memory index that is kept."""
        actions: dict[str, set[str]] = {}
        for operation, indexes in (
            ("search", search),
            ("msearch", msearch),
            ("bulk", bulk),
            ("delete_by_query", delete_by_query),
        ):
            for index in indexes:
                actions.setdefault(index, set()).update(_VECTOR_ACTIONS[operation])
        if schema.PASSAGE_INDEX in delete_by_query:
            actions[schema.PASSAGE_INDEX].add(_PASSAGE_PROBE)
        if schema.PASSAGE_INDEX in actions:
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    actions=sorted(actions[schema.PASSAGE_INDEX]),
                    resources=[self.vector_indexes[schema.PASSAGE_INDEX].attr_index_arn],
                )
            )
        memory = actions.get(schema.MEMORY_INDEX, set())
        if erase_owner:
            memory.add(_ERASE)
        if not memory:
            return
        writes = schema.MEMORY_INDEX in bulk
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=sorted(memory | ({_CREATE_INDEX} if writes else set())),
                resources=[self.user_index_arns],
            )
        )
        if writes:
            role.add_to_principal_policy(
                iam.PolicyStatement(actions=[_CREATE_BUCKET], resources=[self.user_bucket_arns])
            )
        shared = self.vector_indexes.get(schema.MEMORY_INDEX)
        if shared is not None and (schema.MEMORY_INDEX in delete_by_query or erase_owner):
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    actions=["s3vectors:DeleteVectors"], resources=[shared.attr_index_arn]
                )
            )
        nag.wildcard(
            role,
            self._nag_arn(
                f"{self.bucket_name}{schema.USER_BUCKET_SUFFIX}*/index/{schema.USER_INDEX_PREFIX}*"
            ),
            "Each user's memories are an S3 Vectors index of their own, made by the runtime "
            "on the user's first memory: the grant names the pattern of those indexes "
            "(this stack's buckets '<bucket>-u<n>', indexes 'm-<digest>'), nothing else.",
        )
        if writes:
            nag.wildcard(
                role,
                self._nag_arn(f"{self.bucket_name}{schema.USER_BUCKET_SUFFIX}*"),
                "The vector buckets of users' indexes (10,000 indexes a bucket) are made by the "
                "runtime when the first index of one is: this stack's '<bucket>-u<n>' only.",
            )

    @property
    def shared_index(self) -> bool:
        """Whether the stack keeps memory indexes of an older deployment to migrate: S3
        Vectors' shared memory index, or a domain's previous generation."""
        return schema.MEMORY_INDEX in self.vector_indexes or bool(self.previous_memory_indexes)

    def grant_shared_listing(self, function: lambda_.Function) -> None:
        """Read the memory indexes to migrate page by page: S3 Vectors' shared index
        (ListVectors), a domain's previous generation (POST /<index>/_search)."""
        role = function.role
        assert role is not None
        if self.previous_memory_indexes:
            paths = [f"/{index}/_search" for index in self.previous_memory_indexes]
            self._allow_http(role, _POST, paths)
            return
        shared = self.vector_indexes.get(schema.MEMORY_INDEX)
        assert shared is not None
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=sorted(_LIST), resources=[shared.attr_index_arn])
        )

    @staticmethod
    def _nag_arn(bucket_part: str) -> str:
        """How cdk-nag renders an S3 Vectors ARN of format_arn in an IAM5 finding."""
        return f"arn:<AWS::Partition>:s3vectors:<AWS::Region>:<AWS::AccountId>:bucket/{bucket_part}"

    @property
    def user_bucket_arns(self) -> str:
        """The ARN pattern of the buckets of owners' indexes."""
        return Stack.of(self).format_arn(
            service="s3vectors",
            resource="bucket",
            resource_name=f"{self.bucket_name}{schema.USER_BUCKET_SUFFIX}*",
        )

    @property
    def user_index_arns(self) -> str:
        """The ARN pattern of owners' indexes (in the buckets of user_bucket_arns)."""
        return f"{self.user_bucket_arns}/index/{schema.USER_INDEX_PREFIX}*"

    # --- grants -----------------------------------------------------------------------------

    def grant(
        self,
        function: lambda_.Function,
        *,
        search: Sequence[str] = (),
        msearch: Sequence[str] = (),
        bulk: Sequence[str] = (),
        delete_by_query: Sequence[str] = (),
        erase_owner: bool = False,
    ) -> None:
        """Exactly these operations, each on the named indexes (schema.LONG_TERM_INDEXES):
        `search` (POST /<index>/_search), `msearch` (several searches of one index in one
        request: POST /<index>/_msearch), `bulk` (index documents: POST /<index>/_bulk) and
        `delete_by_query` (POST /<index>/_delete_by_query). The role is mapped to the runtime's
        OpenSearch role (a domain) or named in the data access policy (Serverless); on S3
        Vectors it gets the actions of _VECTOR_ACTIONS on those indexes' ARNs (memories: the
        owners' indexes); `erase_owner`, the deletion of an owner key's memories whole (an
        index of its own on S3 Vectors, a delete-by-query elsewhere).

        The adapter names the index in the bulk and msearch paths, and the domain refuses an
        index named in their bodies (rest.action.multi.allow_explicit_index), so IAM ties each
        bulk write and each multi-search to its index."""
        unknown = set(search) | set(msearch) | set(bulk) | set(delete_by_query)
        unknown -= set(schema.LONG_TERM_INDEXES)
        if unknown or not (search or msearch or bulk or delete_by_query):
            raise ValueError(f"grant named no operation or an unknown index: {sorted(unknown)}")
        role = function.role
        assert role is not None
        if self.vector_bucket is not None:
            self._grant_vectors(
                role,
                search=search,
                msearch=msearch,
                bulk=bulk,
                delete_by_query=delete_by_query,
                erase_owner=erase_owner,
            )
            return
        self._runtime_roles.arns.append(role.role_arn)
        if self.domain is not None:
            # Memories: every memory index the owners are spread over.
            def named(indexes: Sequence[str]) -> list[str]:
                return [
                    name
                    for index in indexes
                    for name in (self.memory_indexes if index == schema.MEMORY_INDEX else (index,))
                ]

            paths = [f"/{index}/_search" for index in named(search)]
            paths += [f"/{index}/_msearch" for index in named(msearch)]
            paths += [f"/{index}/_bulk" for index in named(bulk)]
            paths += [f"/{index}/_delete_by_query" for index in named(delete_by_query)]
            if schema.MEMORY_INDEX in delete_by_query:
                # While a previous generation is migrated, deletions remove entries there too.
                paths += [f"/{index}/_delete_by_query" for index in self.previous_memory_indexes]
            self._allow_http(role, _POST, paths)
            return
        permissions: dict[str, set[str]] = {}
        for index in (*search, *msearch):
            permissions.setdefault(index, set()).add(_SERVERLESS_READ)
        # A Serverless upsert deletes the documents' keys by query before indexing them.
        for index in (*bulk, *delete_by_query):
            permissions.setdefault(index, set()).update((_SERVERLESS_READ, _SERVERLESS_WRITE))
        operations = [
            f"{operation} {', '.join(indexes)}"
            for operation, indexes in (
                ("search", search),
                ("msearch", msearch),
                ("bulk", bulk),
                ("delete_by_query", delete_by_query),
            )
            if indexes
        ]
        description = f"{_function_name(function)}: {'; '.join(operations)}"
        self._serverless_grants.append((description, role.role_arn, permissions))
        self._grant_collection(role)

    def _grant_setup(self) -> None:
        """Index creation (HEAD, then PUT /<index>), the fields a newer schema adds to an
        existing index (GET, then PUT /<index>/_mapping), and on a domain the two security API
        paths of the runtime role, which the setup writes with PUT as the FGAC master user."""
        if self.domain is not None:
            names = (*self.memory_indexes, schema.PASSAGE_INDEX)
            indexes = [f"/{index}" for index in names]
            mappings = [f"/{index}/_mapping" for index in names]
            security = [
                f"/_plugins/_security/api/{path}/{schema.OPENSEARCH_RUNTIME_ROLE}"
                for path in ("roles", "rolesmapping")
            ]
            self._allow_http(self._setup_role, "es:ESHttpHead", indexes)
            self._allow_http(self._setup_role, "es:ESHttpGet", mappings)
            self._allow_http(self._setup_role, "es:ESHttpPut", [*indexes, *mappings, *security])
        else:
            self._grant_collection(self._setup_role)

    def _allow_http(self, role: iam.IRole, action: str, paths: Sequence[str]) -> None:
        """The same grant in the role's IAM policy and in the domain access policy."""
        assert self.domain is not None
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=[action], resources=[f"{self.domain.domain_arn}{p}" for p in paths]
            )
        )
        self._http_grants.append((role.role_arn, action, tuple(paths)))

    def _domain_statements(self, domain_arn: str) -> list[dict[str, Any]]:
        return [
            {
                "Effect": "Allow",
                "Principal": {"AWS": role_arn},
                "Action": action,
                "Resource": [f"{domain_arn}{path}" for path in paths],
            }
            for role_arn, action, paths in self._http_grants
        ]

    def _data_access_policy(self) -> list[dict[str, Any]]:
        name = self._collection_name

        def rules(permissions: dict[str, set[str]]) -> list[dict[str, Any]]:
            return [
                {
                    "ResourceType": "index",
                    "Resource": [f"index/{name}/{index}"],
                    "Permission": sorted(permissions[index]),
                }
                for index in schema.LONG_TERM_INDEXES
                if index in permissions
            ]

        entries = [
            {"Description": description, "Rules": rules(permissions), "Principal": [role_arn]}
            for description, role_arn, permissions in self._serverless_grants
        ]
        # DescribeIndex: HEAD /<index> and GET /<index>/_mapping; UpdateIndex: PUT
        # /<index>/_mapping (the fields a newer schema adds to an existing index).
        setup = {
            index: {"aoss:CreateIndex", "aoss:DescribeIndex", "aoss:UpdateIndex"}
            for index in schema.LONG_TERM_INDEXES
        }
        entries.append(
            {
                "Description": "Index setup: look up, create and extend the indexes",
                "Rules": rules(setup),
                "Principal": [self._setup_role.role_arn],
            }
        )
        return entries

    def _grant_collection(self, role: iam.IRole) -> None:
        # Data-plane access to this collection; the data access policy decides the rest.
        assert self.collection is not None
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["aoss:APIAccessAll"], resources=[self.collection.attr_arn])
        )


def _function_name(function: lambda_.Function) -> str:
    """The factory's construct id of a function ("Chat", "Consolidate", ...)."""
    scope = function.node.scope
    return scope.node.id if scope is not None else function.node.id
