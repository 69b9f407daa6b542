"""The Lambda factory: every function of the app is built here, the same way."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from chatmemory.schema import FUNCTION_ENVIRONMENT
from stacks import nag
from stacks.config import ARCHITECTURE, POWERTOOLS_LAYER_ACCOUNT, PYTHON_VERSION, Config
from stacks.packaging import lambda_code

_RUNTIMES = {"3.11": lambda_.Runtime.PYTHON_3_11, "3.12": lambda_.Runtime.PYTHON_3_12}
_ARCHITECTURES = {"arm64": lambda_.Architecture.ARM_64, "x86_64": lambda_.Architecture.X86_64}


class LambdaFactory(Construct):
    """Builds functions from the one shared asset: Python runtime on arm64, JSON logs into a log
    group with retention, active X-Ray tracing (recorded by Lambda, no SDK in the code), the
    Powertools layer, an own role per function."""

    def __init__(self, scope: Construct, construct_id: str, *, config: Config) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self.code = lambda_code()
        self.runtime = _RUNTIMES[PYTHON_VERSION]
        self.architecture = _ARCHITECTURES[ARCHITECTURE]
        stack = Stack.of(self)
        if config.powertools_layer_version == "latest":
            # Resolved by CloudFormation at deploy time from AWS's public parameter.
            self.powertools_layer_arn = ssm.StringParameter.value_for_string_parameter(
                self, config.powertools_latest_parameter
            )
        else:
            # Partition- and region-aware: the layer must live in the function's region.
            self.powertools_layer_arn = (
                f"arn:{stack.partition}:lambda:{stack.region}:{POWERTOOLS_LAYER_ACCOUNT}:layer:"
                f"{config.powertools_layer_name}:{config.powertools_layer_version}"
            )
        self.powertools = lambda_.LayerVersion.from_layer_version_arn(
            self, "PowertoolsLayer", self.powertools_layer_arn
        )
        self.functions: dict[str, lambda_.Function] = {}

    def function(
        self,
        scope: Construct,
        construct_id: str,
        *,
        handler: str,
        description: str,
        environment: Mapping[str, str],
        timeout: Duration,
        memory_mb: int = 512,
        role: iam.Role | None = None,
        wildcard_reasons: Sequence[str] = (),
        snap_start: bool = False,
        reserved_concurrency: int | None = None,
    ) -> lambda_.Function:
        """A function running `handler` (module.function under lambdas/), in its own construct
        under `scope` with its log group and role. With `snap_start`, its published versions
        are snapshotted after init (Lambda SnapStart: call them through an alias of
        `current_version`), and a version is deleted once a newer one replaces it, so no
        snapshot of an old version stays cached (and billed). `reserved_concurrency`: at most
        that many at once, and as many kept for it out of the account's quota."""
        scope = Construct(scope, construct_id)
        log_group = logs.LogGroup(
            scope,
            "Logs",
            retention=retention(self._config.log_retention_days),
            removal_policy=RemovalPolicy.RETAIN
            if self._config.production
            else RemovalPolicy.DESTROY,
        )
        # An own role without the AWS managed basic-execution policy: logs go to this one group.
        # A caller may bring the role when something must reference it before the function.
        role = role or iam.Role(
            scope,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{construct_id} Lambda function",
        )
        log_group.grant_write(role)
        function = lambda_.Function(
            scope,
            "Function",
            description=description,
            runtime=self.runtime,
            architecture=self.architecture,
            code=self.code,
            handler=handler,
            role=role,
            timeout=timeout,
            memory_size=memory_mb,
            environment={**FUNCTION_ENVIRONMENT, **environment},
            layers=[self.powertools],
            # Lambda itself records each invocation's segment (Initialization on a cold start,
            # Invocation, Overhead) and passes the trace header on to AWS calls: the code
            # carries no tracing SDK (see lambdas/handlers/__init__.py).
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=lambda_.ApplicationLogLevel.INFO,
            system_log_level_v2=lambda_.SystemLogLevel.WARN,
            snap_start=lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS if snap_start else None,
            reserved_concurrent_executions=reserved_concurrency or None,
            current_version_options=lambda_.VersionOptions(removal_policy=RemovalPolicy.DESTROY)
            if snap_start
            else None,
        )
        # Findings that come with every function of this factory (see the reasons).
        nag.acknowledge(scope, "AwsSolutions-L1", nag.RUNTIME_REASON)
        nag.wildcard(role, "*", " ".join((nag.XRAY_REASON, *wildcard_reasons)))
        self.functions[construct_id] = function
        return function


_RETENTION = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    731: logs.RetentionDays.TWO_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
    3653: logs.RetentionDays.TEN_YEARS,
}


def retention(days: int) -> logs.RetentionDays:
    """The shortest CloudWatch retention period that keeps logs at least `days` days."""
    for allowed in sorted(_RETENTION):
        if allowed >= days:
            return _RETENTION[allowed]
    return logs.RetentionDays.TEN_YEARS
