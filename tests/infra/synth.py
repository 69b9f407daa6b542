"""Synthesizing the app for the infra tests: one configuration, its template and cdk-nag's
findings. Bundling is skipped (CDK's `aws:cdk:bundling-stacks` context): the tests check the
templates, and `make synth` does the real pip bundling. cdk-nag runs as in app.py."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template

from stacks.app_stack import ChatMemoryStack, build

CDK_JSON = Path(__file__).resolve().parents[2] / "cdk.json"

# The configurations the checks run on (chatmemory: settings, camelCase keys).
VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "deploy-models": {"modelMode": "deploy"},
    "bedrock-latest-layer": {"modelMode": "bedrock", "powertoolsLayerVersion": "latest"},
    "serverless-search": {"searchMode": "serverless"},
    "s3vectors-search": {"searchMode": "s3vectors"},
    # Bedrock and S3 Vectors, nothing billed by the hour; then without the fixed monthly fees
    # (alarms with their topic's key, the dashboard); then in production.
    "serverless-profile": {"profile": "serverless"},
    "serverless-profile-unmonitored": {
        "profile": "serverless",
        "alarms": "false",
        "dashboard": "false",
    },
    "serverless-profile-production": {"profile": "serverless", "stage": "prod"},
    # Lambda SnapStart on the chat function (an alias of its newest version behind the API).
    "serverless-snapstart": {"profile": "serverless", "chatSnapStart": "true"},
    "iam-auth": {"auth": "iam"},
    # Hand-off to a person: the automatic rules on, another agents' group, no event bus.
    "handoff-rules": {
        "agentGroup": "support",
        "handoffOnNothingVerified": "true",
        "handoffNegativeTurns": "3",
        "handoffNegativeScore": "-0.25",
        "handoffEvents": "false",
    },
    "production": {"stage": "prod"},
    "waf": {"waf": "true"},
}


@dataclass
class Synth:
    """One synthesized app: its stack, the template, and what cdk-nag reported."""

    stack: ChatMemoryStack
    template: Template
    outdir: Path
    violations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def json(self) -> dict[str, Any]:
        return self.template.to_json()

    def resources(self, kind: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.json["Resources"].items() if v["Type"] == kind}

    def logical_id(self, construct: Any) -> str:
        """Logical id of an L1 resource, or of an L2 construct's main resource."""
        element = (
            construct if isinstance(construct, cdk.CfnElement) else construct.node.default_child
        )
        return self.stack.get_logical_id(element)

    @property
    def template_path(self) -> Path:
        return self.outdir / self.stack.template_file


def synthesize(outdir: Path, **settings: Any) -> Synth:
    """Build and synthesize the app with `chatmemory:` settings (camelCase keys)."""
    # The feature flags and defaults of cdk.json, as `cdk synth` passes them.
    context: dict[str, Any] = json.loads(CDK_JSON.read_text()).get("context", {})
    context["aws:cdk:bundling-stacks"] = []
    context.update({f"chatmemory:{key}": value for key, value in settings.items()})
    app = cdk.App(outdir=str(outdir), context=context)
    stack = build(app)
    violations: list[dict[str, Any]] = []
    try:
        app.synth()
    except RuntimeError as error:
        # cdk-nag findings stop the synth and are written to the validation report.
        report = outdir / "validation-report.json"
        if "ValidationFailed" not in str(error) or not report.exists():
            raise
        for plugin in json.loads(report.read_text())["pluginReports"]:
            violations.extend(plugin["violations"])
    # The template app.synth() wrote (Template.from_stack would synthesize, and validate, again).
    template = json.loads((outdir / stack.template_file).read_text())
    return Synth(stack, Template.from_json(template), outdir, violations)


def render(value: Any) -> Any:
    """A template value as readable text: `{"Ref": "X"}` -> "${X}", GetAtt -> "${X.Attr}",
    FindInMap -> "${Map[key].name}", Fn::Join of those -> one string. Lists and plain values
    pass through."""
    if isinstance(value, list):
        return [render(item) for item in value]
    if isinstance(value, dict) and len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Ref":
            return f"${{{argument}}}"
        if function == "Fn::GetAtt":
            return f"${{{argument[0]}.{argument[1]}}}"
        if function == "Fn::Join":
            separator, parts = argument
            return separator.join(str(render(part)) for part in parts)
        if function == "Fn::FindInMap":
            mapping, first, second = argument
            return f"${{{mapping}[{render(first)}].{render(second)}}}"
    return value


def statements(synth: Synth, role_logical_id: str) -> list[dict[str, Any]]:
    """Every statement of every IAM policy attached to the role, resources rendered."""
    found = []
    for policy in synth.resources("AWS::IAM::Policy").values():
        roles = [render(r) for r in policy["Properties"].get("Roles", [])]
        if f"${{{role_logical_id}}}" in roles:
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                actions = statement["Action"]
                resources = render(statement["Resource"])
                found.append(
                    {
                        **statement,
                        "Action": [actions] if isinstance(actions, str) else actions,
                        "Resource": [resources] if isinstance(resources, str) else resources,
                    }
                )
    return found
