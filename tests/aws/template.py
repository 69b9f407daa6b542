"""A synthesized template as CloudFormation would deploy it in one account and region: every
resource gets a physical name and the attributes other resources read (ARNs, endpoints, stream
ARNs), and every intrinsic function is resolved. The contract check runs each function with the
environment its template gives it and judges each request by the policies of its role."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

ACCOUNT = "123456789012"
_NO_VALUE = object()


class Unresolvable(ValueError):
    """An intrinsic function or attribute this resolver does not know: extend it, do not guess."""


def _suffix(logical_id: str) -> str:
    """The random-looking suffix CloudFormation gives generated names, made deterministic."""
    return hashlib.sha256(logical_id.encode()).hexdigest()[:12].upper()


@dataclass
class Function:
    """One Lambda function of the template: what runs, as whom, with which environment."""

    logical_id: str
    name: str
    handler: str
    role_logical_id: str
    environment: dict[str, str]
    timeout_seconds: int
    memory_mb: int


@dataclass
class Deployment:
    """The template of one stack, resolved for `region` in ACCOUNT."""

    template: dict[str, Any]
    region: str
    stack_name: str
    account: str = ACCOUNT
    partition: str = "aws"
    _names: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        resources: dict[str, dict[str, Any]] = self.template["Resources"]
        return resources

    def of_type(self, kind: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v["Type"] == kind}

    # --- what the contract check reads ------------------------------------------------------

    def functions(self) -> dict[str, Function]:
        """The template's Lambda functions with a Python handler, by logical id."""
        found: dict[str, Function] = {}
        for logical, resource in self.of_type("AWS::Lambda::Function").items():
            props = resource["Properties"]
            role = props["Role"]
            if not (isinstance(role, dict) and "Fn::GetAtt" in role):
                raise Unresolvable(f"{logical}: a role that is not a role of this template")
            variables = props.get("Environment", {}).get("Variables", {})
            found[logical] = Function(
                logical_id=logical,
                name=self.ref(logical),
                handler=props["Handler"],
                role_logical_id=role["Fn::GetAtt"][0],
                environment={k: str(self.resolve(v)) for k, v in variables.items()},
                timeout_seconds=int(props.get("Timeout", 3)),
                memory_mb=int(props.get("MemorySize", 128)),
            )
        return found

    def role_statements(self, role_logical_id: str) -> list[dict[str, Any]]:
        """Every statement of every identity policy of a role (its inline policies and the
        AWS::IAM::Policy resources attached to it), resolved. AWS managed policies are listed
        by ARN in `managed_policies`."""
        statements: list[dict[str, Any]] = []
        role = self.resources[role_logical_id]["Properties"]
        for inline in role.get("Policies", []):
            statements += self.resolve(inline["PolicyDocument"])["Statement"]
        for policy in self.of_type("AWS::IAM::Policy").values():
            props = policy["Properties"]
            attached = [r.get("Ref") for r in props.get("Roles", []) if isinstance(r, dict)]
            if role_logical_id in attached:
                statements += self.resolve(props["PolicyDocument"])["Statement"]
        return statements

    def managed_policies(self, role_logical_id: str) -> list[str]:
        role = self.resources[role_logical_id]["Properties"]
        return [str(self.resolve(arn)) for arn in role.get("ManagedPolicyArns", [])]

    # --- Ref and Fn::GetAtt, per resource type ----------------------------------------------

    def ref(self, logical: str) -> str:
        """What `Ref` returns for a resource, a parameter or a pseudo parameter."""
        pseudo = {
            "AWS::Region": self.region,
            "AWS::AccountId": self.account,
            "AWS::Partition": self.partition,
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": self.stack_name,
            "AWS::StackId": (
                f"arn:{self.partition}:cloudformation:{self.region}:{self.account}:"
                f"stack/{self.stack_name}/00000000-0000-0000-0000-000000000000"
            ),
        }
        if logical in pseudo:
            return pseudo[logical]
        parameters = self.template.get("Parameters", {})
        if logical in parameters:
            return str(parameters[logical].get("Default", f"<parameter {logical}>"))
        resource = self.resources.get(logical)
        if resource is None:
            raise Unresolvable(f"Ref to {logical}, which is not in the template")
        kind = resource["Type"]
        props = resource.get("Properties", {})
        if kind in _REF_IS_ARN:
            return self.get_att(logical, _REF_IS_ARN[kind])
        if kind == "AWS::SQS::Queue":
            return f"https://sqs.{self.region}.amazonaws.com/{self.account}/{self._name(logical)}"
        if kind == "AWS::Cognito::UserPool":
            return f"{self.region}_{_suffix(logical)[:9]}"
        if kind == "AWS::OpenSearchService::Domain":
            return self._name(logical, props.get("DomainName"), lower=True, limit=28)
        if kind == "AWS::Events::EventBus":
            return str(self.resolve(props["Name"]))
        if kind == "AWS::SageMaker::Endpoint":
            endpoint = str(self.resolve(props["EndpointName"])).lower()
            return (
                f"arn:{self.partition}:sagemaker:{self.region}:{self.account}:endpoint/{endpoint}"
            )
        return self._name(logical, _explicit_name(kind, props, self))

    def get_att(self, logical: str, attribute: str) -> str:
        resource = self.resources.get(logical)
        if resource is None:
            raise Unresolvable(f"Fn::GetAtt of {logical}, which is not in the template")
        kind = resource["Type"]
        props = resource.get("Properties", {})
        name = self.ref(logical) if kind not in _REF_IS_ARN else ""
        arn = f"arn:{self.partition}:{{service}}:{self.region}:{self.account}:"
        match (kind, attribute):
            case ("AWS::DynamoDB::Table", "Arn"):
                return arn.format(service="dynamodb") + f"table/{name}"
            case ("AWS::DynamoDB::Table", "StreamArn"):
                return self.get_att(logical, "Arn") + "/stream/2026-01-01T00:00:00.000"
            case ("AWS::Lambda::Function", "Arn"):
                return arn.format(service="lambda") + f"function:{name}"
            case ("AWS::IAM::Role", "Arn"):
                path = props.get("Path", "/")
                return f"arn:{self.partition}:iam::{self.account}:role{path}{name}"
            case ("AWS::IAM::Role", "RoleId"):
                return "AROA" + _suffix(logical)
            case ("AWS::SQS::Queue", "Arn"):
                return arn.format(service="sqs") + self._name(logical)
            case ("AWS::SQS::Queue", "QueueName"):
                return self._name(logical)
            case ("AWS::SNS::Topic", "TopicArn"):
                return arn.format(service="sns") + self._name(logical, props.get("TopicName"))
            case ("AWS::Events::EventBus", "Arn"):
                return arn.format(service="events") + f"event-bus/{name}"
            case ("AWS::Events::EventBus", "Name"):
                return name
            case ("AWS::Logs::LogGroup", "Arn"):
                return arn.format(service="logs") + f"log-group:{name}:*"
            case ("AWS::KMS::Key", "Arn"):
                return arn.format(service="kms") + f"key/{name}"
            case ("AWS::OpenSearchService::Domain", "Arn" | "DomainArn"):
                return arn.format(service="es") + f"domain/{name}"
            case ("AWS::OpenSearchService::Domain", "DomainEndpoint"):
                return f"search-{name}-{_suffix(logical).lower()}.{self.region}.es.amazonaws.com"
            case ("AWS::OpenSearchServerless::Collection", "Arn"):
                return arn.format(service="aoss") + f"collection/{name}"
            case ("AWS::OpenSearchServerless::Collection", "CollectionEndpoint"):
                return f"https://{name}.{self.region}.aoss.amazonaws.com"
            case ("AWS::S3Vectors::VectorBucket", "VectorBucketArn"):
                bucket = str(self.resolve(props["VectorBucketName"]))
                return arn.format(service="s3vectors") + f"bucket/{bucket}"
            case ("AWS::S3Vectors::Index", "IndexArn"):
                bucket_arn = str(self.resolve(props["VectorBucketArn"]))
                return f"{bucket_arn}/index/{self.resolve(props['IndexName'])}"
            case ("AWS::SageMaker::Endpoint", "EndpointName"):
                return str(self.resolve(props.get("EndpointName", name)))
            case ("AWS::Cognito::UserPool", "Arn"):
                return arn.format(service="cognito-idp") + f"userpool/{self.ref(logical)}"
            case ("AWS::Cognito::UserPool", "ProviderName"):
                return f"cognito-idp.{self.region}.amazonaws.com/{self.ref(logical)}"
            case ("AWS::ApiGateway::RestApi", "RootResourceId"):
                return _suffix(logical)[:10].lower()
            case ("AWS::IAM::ManagedPolicy", "PolicyArn"):
                return self.ref(logical)
        raise Unresolvable(f"Fn::GetAtt {kind} {logical}.{attribute}")

    def _name(
        self, logical: str, given: Any = None, *, lower: bool = False, limit: int = 64
    ) -> str:
        """The physical name: the one the template gives, else one CloudFormation would make
        (stack name, logical id, a suffix), stable per logical id."""
        if logical not in self._names:
            if given is not None:
                name = str(self.resolve(given))
            else:
                name = f"{self.stack_name}-{logical}"[: limit - 13] + "-" + _suffix(logical)
            self._names[logical] = name.lower() if lower else name
        return self._names[logical]

    # --- intrinsic functions ----------------------------------------------------------------

    def resolve(self, value: Any) -> Any:
        """A template value with every intrinsic function evaluated."""
        if isinstance(value, list):
            items = [self.resolve(item) for item in value]
            return [item for item in items if item is not _NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, argument),) = value.items()
            if key == "Ref":
                return _NO_VALUE if argument == "AWS::NoValue" else self.ref(argument)
            if key.startswith("Fn::") or key == "Condition":
                return self._function(key, argument)
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not _NO_VALUE}

    def _function(self, name: str, argument: Any) -> Any:
        if name == "Fn::GetAtt":
            logical, attribute = argument.split(".", 1) if isinstance(argument, str) else argument
            return self.get_att(logical, attribute)
        if name == "Fn::Join":
            separator, parts = argument
            return str(separator).join(str(p) for p in self.resolve(parts))
        if name == "Fn::Select":
            index, items = argument
            return self.resolve(items)[int(self.resolve(index))]
        if name == "Fn::Split":
            separator, text = argument
            return str(self.resolve(text)).split(separator)
        if name == "Fn::Sub":
            text, variables = (argument, {}) if isinstance(argument, str) else argument
            return self._sub(text, self.resolve(variables))
        if name == "Fn::FindInMap":
            mapping, first, second = (self.resolve(part) for part in argument)
            try:
                return self.template["Mappings"][mapping][first][second]
            except KeyError:
                raise Unresolvable(
                    f"Fn::FindInMap {mapping}/{first}/{second}: no such entry (CloudFormation "
                    "would fail the deployment here)"
                ) from None
        if name == "Fn::If":
            condition, if_true, if_false = argument
            return self.resolve(if_true if self.condition(condition) else if_false)
        if name == "Fn::ToJsonString":
            return json.dumps(self.resolve(argument), separators=(",", ":"))
        if name == "Fn::Base64":
            return self.resolve(argument)
        if name in ("Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or", "Condition", "Fn::Contains"):
            return self._boolean(name, argument)
        raise Unresolvable(f"{name} is not supported by the contract check's resolver")

    def condition(self, name: str) -> bool:
        return bool(self.resolve(self.template.get("Conditions", {})[name]))

    def _boolean(self, name: str, argument: Any) -> bool:
        if name == "Condition":
            return self.condition(argument)
        if name == "Fn::Equals":
            left, right = (self.resolve(a) for a in argument)
            return bool(left == right)
        if name == "Fn::Not":
            return not self.resolve(argument[0])
        if name == "Fn::And":
            return all(self.resolve(a) for a in argument)
        if name == "Fn::Or":
            return any(self.resolve(a) for a in argument)
        values, needle = (self.resolve(a) for a in argument)
        return needle in values

    def _sub(self, text: str, variables: dict[str, Any]) -> str:
        def value(match: re.Match[str]) -> str:
            key = match.group(1)
            if key.startswith("!"):
                return "${" + key[1:] + "}"
            if key in variables:
                return str(variables[key])
            if "." in key and not key.startswith("AWS::"):
                logical, attribute = key.split(".", 1)
                return self.get_att(logical, attribute)
            return self.ref(key)

        return re.sub(r"\$\{([^}]+)\}", value, text)

    def rules(self) -> dict[str, Any]:
        """The template's Rules, for the assertions CloudFormation checks before deploying."""
        rules: dict[str, Any] = self.template.get("Rules", {})
        return rules


# Types whose Ref is an ARN (and the attribute that holds it).
_REF_IS_ARN = {
    "AWS::SNS::Topic": "TopicArn",
    "AWS::S3Vectors::VectorBucket": "VectorBucketArn",
    "AWS::S3Vectors::Index": "IndexArn",
    "AWS::IAM::ManagedPolicy": "PolicyArn",
}


def _explicit_name(kind: str, props: dict[str, Any], deployment: Deployment) -> Any:
    """The property that names a resource of `kind`, when the template sets it."""
    key = {
        "AWS::DynamoDB::Table": "TableName",
        "AWS::Lambda::Function": "FunctionName",
        "AWS::IAM::Role": "RoleName",
        "AWS::Logs::LogGroup": "LogGroupName",
        "AWS::SageMaker::Endpoint": "EndpointName",
        "AWS::OpenSearchServerless::Collection": "Name",
        "AWS::Cognito::UserPoolGroup": "GroupName",
    }.get(kind)
    return props.get(key) if key else None


def deployment_of(template: dict[str, Any], *, region: str, stack_name: str) -> Deployment:
    """A template resolved for one region (the account is ACCOUNT)."""
    return Deployment(template=template, region=region, stack_name=stack_name)
