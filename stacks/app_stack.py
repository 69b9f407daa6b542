"""The chat memory stack: composes the constructs of each concern."""

from __future__ import annotations

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from stacks.storage import Storage


class ChatMemoryStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, production: bool = False, **kwargs) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.storage = Storage(self, "Storage", production=production)
        CfnOutput(self, "SessionsTableName", value=self.storage.sessions.table_name)
        CfnOutput(self, "ConversationsTableName", value=self.storage.conversations.table_name)
