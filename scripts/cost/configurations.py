"""The documented configurations, each synthesized in-process (no `cdk` CLI, no bundling, no
Docker: the templates are what is priced, the Lambda asset is not)."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CDK_JSON = ROOT / "cdk.json"


@dataclass(frozen=True)
class Configuration:
    """A deployment docs/cost.md prices: its `chatmemory:` settings (camelCase keys)."""

    name: str
    summary: str
    settings: dict[str, str] = field(default_factory=dict)
    # A variant costs what its base costs per turn (it differs only in what bills idle).
    variant_of: str | None = None

    @property
    def command(self) -> str:
        """The deploy options that select it."""
        options = " ".join(f"-c chatmemory:{key}={value}" for key, value in self.settings.items())
        return options or "(no options)"


CONFIGURATIONS: tuple[Configuration, ...] = (
    Configuration(
        "default",
        "existing SageMaker endpoints (JumpStart FLAN-T5 XL, GPT-J 6B) + OpenSearch domain "
        "(a trial's unless `dailyUsers` is set: one t3.small.search)",
    ),
    Configuration("bedrock", "Bedrock + OpenSearch domain", {"modelMode": "bedrock"}),
    Configuration(
        "deploy",
        "TGI on a real-time endpoint and TEI on serverless inference, deployed by the stack, "
        "+ OpenSearch domain",
        {"modelMode": "deploy"},
    ),
    Configuration(
        "bedrock-serverless-search",
        "Bedrock + OpenSearch Serverless",
        {"modelMode": "bedrock", "searchMode": "serverless"},
    ),
    Configuration(
        "prod",
        "production stage with Bedrock: a domain sized for `dailyUsers` (a million) in 2 AZs "
        "with 3 masters, WAF, Cognito Plus",
        {"stage": "prod", "modelMode": "bedrock"},
    ),
    Configuration(
        "serverless",
        "Bedrock + S3 Vectors: nothing billed by the hour",
        {"profile": "serverless"},
    ),
    Configuration(
        "serverless-unmonitored",
        "the serverless profile without its alarms and dashboard",
        {"profile": "serverless", "alarms": "false", "dashboard": "false"},
        variant_of="serverless",
    ),
    Configuration(
        "serverless-snapstart",
        "the serverless profile with Lambda SnapStart on the chat function",
        {"profile": "serverless", "chatSnapStart": "true"},
        variant_of="serverless",
    ),
)


class SynthError(Exception):
    """A configuration that does not synthesize (yet): reported and skipped."""


def unknown_settings(settings: dict[str, str]) -> list[str]:
    """Settings stacks/config.py does not read (they would be ignored silently)."""
    from stacks.config import Config, context_key

    known = {context_key(name) for name in Config.__dataclass_fields__}
    return [key for key in settings if f"chatmemory:{key}" not in known]


def synthesize(configuration: Configuration) -> dict[str, Any]:
    """The CloudFormation template of the configuration's stack, as `make synth` writes it
    (with cdk.json's context), minus the Lambda asset's bundling."""
    import aws_cdk as cdk

    from stacks.app_stack import build

    unknown = unknown_settings(configuration.settings)
    if unknown:
        raise SynthError(f"stacks/config.py has no setting {', '.join(unknown)}")
    context: dict[str, Any] = json.loads(CDK_JSON.read_text()).get("context", {})
    context["aws:cdk:bundling-stacks"] = []
    context.update({f"chatmemory:{k}": v for k, v in configuration.settings.items()})
    with tempfile.TemporaryDirectory(prefix="cost-") as outdir:
        try:
            app = cdk.App(outdir=outdir, context=context)
            stack = build(app)
        except (ValueError, TypeError) as error:
            raise SynthError(str(error)) from error
        try:
            app.synth()
        except RuntimeError as error:
            # cdk-nag findings stop the synth after the template is written; the cost does
            # not depend on them (`make synth` reports them).
            if "ValidationFailed" not in str(error):
                raise SynthError(str(error).splitlines()[0]) from error
        template: dict[str, Any] = json.loads((Path(outdir) / stack.template_file).read_text())
        return template
