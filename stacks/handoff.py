"""Hand-off to a person (issue 16): the EventBridge bus a contact centre reads hand-offs from, and
the settings of the automatic rules the chat function applies. Who may act as an agent is
stacks/auth.py (a Cognito group, or with auth=iam a role).

The bus is the stack's own (chatmemory:handoffEvents=false: none, and the runtime publishes
nothing). A custom bus bills nothing while idle, $1 per million events published. No archive:
the queue of sessions waiting for a person is the sessions table (GET /agent/sessions), so a
consumer that missed an event lists what waits; and an archive would keep the users' hand-off
notes beyond the reach of a session's delete or a user's forget (the purge)."""

from __future__ import annotations

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from chatmemory import schema
from stacks.config import Config
from stacks.long_term import physical_name

# What a contact centre's rule matches (docs/concepts/handoff.md).
HANDOFF_PATTERN = {"source": [schema.EVENT_SOURCE], "detail-type": [schema.HANDOFF_EVENT]}


class Handoff(Construct):
    """The hand-off event bus (when configured); `environment` holds the chat function's
    hand-off settings, `grant_publish` lets a function put events on the bus and nothing else."""

    def __init__(self, scope: Construct, construct_id: str, *, config: Config) -> None:
        super().__init__(scope, construct_id)
        self.bus: events.EventBus | None = None
        self.environment: dict[str, str] = {
            schema.ENV_HANDOFF_ON_NOTHING_VERIFIED: _flag(config.handoff_on_nothing_verified),
            schema.ENV_HANDOFF_NEGATIVE_TURNS: str(config.handoff_negative_turns),
            schema.ENV_HANDOFF_NEGATIVE_SCORE: str(config.handoff_negative_score),
        }
        if not config.handoff_events:
            return
        self.bus = events.EventBus(
            self,
            "EventBus",
            # Named after the stack, so a contact centre's rule names a stable bus per stage.
            event_bus_name=physical_name(self, "-handoff", max_length=256),
            description="Chat memory: a session was handed to a person, or handed back",
        )
        self.environment[schema.ENV_EVENT_BUS] = self.bus.event_bus_name
        stack = Stack.of(self)
        CfnOutput(
            stack,
            "HandoffEventBusName",
            value=self.bus.event_bus_name,
            description="EventBridge bus of hand-off events (source "
            f"{schema.EVENT_SOURCE!r}, detail-types {schema.HANDOFF_EVENT!r} and "
            f"{schema.HANDBACK_EVENT!r})",
        )
        CfnOutput(stack, "HandoffEventBusArn", value=self.bus.event_bus_arn)

    def grant_publish(self, function: lambda_.Function) -> None:
        """events:PutEvents on the hand-off bus only (nothing when there is no bus)."""
        if self.bus is not None:
            self.bus.grant_put_events_to(function)


def _flag(value: bool) -> str:
    return "true" if value else "false"
