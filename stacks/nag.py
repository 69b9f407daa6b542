"""cdk-nag (3.x, CDK's Validations API): the AwsSolutions checks and the acknowledgments.

Every acknowledgment names one finding and says why it cannot be fixed. IAM wildcard findings
(IAM5) are acknowledged one resource string at a time, built from the logical ids CDK renders,
so a new wildcard elsewhere still fails the synth.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, App, CfnElement, Stack, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct


def enable(app: App) -> None:
    """Run the AwsSolutions rules on every synth; acknowledgments go into template metadata."""
    Validations.of(app).add_plugins(
        AwsSolutionsChecks(app, write_suppressions_to_cloud_formation=True)
    )


# Context flag for tests: "false" records no acknowledgment, so every finding shows.
ACKNOWLEDGE_CONTEXT = "chatmemory:nagAcknowledge"


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge `rule` (e.g. "AwsSolutions-SQS3" or "AwsSolutions-IAM5[Resource::*]") on
    `scope` and everything below it."""
    if str(scope.node.try_get_context(ACKNOWLEDGE_CONTEXT)).lower() == "false":
        return
    Validations.of(scope).acknowledge(Acknowledgment(id=rule, reason=reason))


def acknowledgments(root: IConstruct) -> list[tuple[str, str, str]]:
    """(construct path, rule, reason) of every acknowledgment under `root`."""
    found = []
    for construct in root.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                for rule, reason in dict(entry.data).items():
                    found.append((construct.node.path, rule.split("::", 1)[-1], reason))
    return found


def arn_of(element: CfnElement, suffix: str = "") -> str:
    """How cdk-nag renders `Fn::GetAtt <element>.Arn` followed by `suffix` in an IAM5 finding."""
    return f"<{Stack.of(element).get_logical_id(element)}.Arn>{suffix}"


def wildcard(scope: IConstruct, resource: str, reason: str) -> None:
    """Acknowledge one IAM5 wildcard resource finding on `scope`."""
    acknowledge(scope, f"AwsSolutions-IAM5[Resource::{resource}]", reason)


XRAY_REASON = (
    "X-Ray PutTraceSegments/PutTelemetryRecords support no resource-level permissions; AWS "
    "requires Resource '*' (added by CDK for active tracing)."
)
RUNTIME_REASON = (
    "Python 3.12 on purpose: the Powertools layer, the pip platform of the bundled dependencies "
    "and the tested interpreter are pinned together (stacks/config.py); AWS supports 3.12 until "
    "2028. Moving to a newer runtime is one constant there."
)
