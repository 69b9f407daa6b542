"""The chat memory stack: composes the constructs of each concern."""

from __future__ import annotations

from typing import Any

from aws_cdk import App, CfnOutput, Stack
from constructs import Construct

from stacks import nag
from stacks.api import ChatApi
from stacks.config import Config
from stacks.consolidation import Consolidation
from stacks.functions import LambdaFactory
from stacks.handoff import Handoff
from stacks.long_term import LongTermMemory
from stacks.models import Models
from stacks.monitoring import Monitoring
from stacks.operator_tools import OperatorTools
from stacks.storage import Storage


class ChatMemoryStack(Stack):
    """Storage, models, long-term memory, the hand-off events, stream processing, the API and
    its monitoring."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: Config | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        config = config or Config.from_context(self)
        self.config = config

        self.storage = Storage(
            self,
            "Storage",
            production=config.production,
            records_indexes=config.records_indexes,
        )
        self.functions = LambdaFactory(self, "Functions", config=config)
        self.models = Models(self, "Models", config=config)
        self.long_term = LongTermMemory(
            self, "LongTermMemory", config=config, factory=self.functions
        )
        self.handoff = Handoff(self, "Handoff", config=config)
        self.api = ChatApi(
            self,
            "Api",
            config=config,
            factory=self.functions,
            storage=self.storage,
            models=self.models,
            long_term=self.long_term,
            handoff=self.handoff,
        )
        self.consolidation = Consolidation(
            self,
            "Consolidation",
            config=config,
            factory=self.functions,
            storage=self.storage,
            models=self.models,
            long_term=self.long_term,
        )
        self.operator_tools = OperatorTools(
            self,
            "OperatorTools",
            factory=self.functions,
            storage=self.storage,
            models=self.models,
            long_term=self.long_term,
        )
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            config=config,
            functions=self.functions.functions,
            stream_functions={
                "Consolidate": self.consolidation.consolidate,
                "Compact": self.consolidation.compact,
                "Purge": self.consolidation.purge,
            },
            dead_letter_queues=self.consolidation.dead_letter_queues,
            api=self.api.rest_api,
            domain=self.long_term.domain,
        )
        CfnOutput(self, "SessionsTableName", value=self.storage.sessions.table_name)
        CfnOutput(self, "ConversationsTableName", value=self.storage.conversations.table_name)
        CfnOutput(self, "UsersTableName", value=self.storage.users.table_name)
        CfnOutput(self, "RecordsTableName", value=self.storage.records.table_name)
        if self.monitoring.topic is not None:
            CfnOutput(self, "AlarmTopicArn", value=self.monitoring.topic.topic_arn)


def build(app: App) -> ChatMemoryStack:
    """The app: one stack per stage, settings from context, cdk-nag on every synth."""
    config = Config.from_context(app)
    long_term = "S3 Vectors" if config.search_mode == "s3vectors" else "OpenSearch"
    stack = ChatMemoryStack(
        app,
        f"ChatMemory-{config.stage}",
        config=config,
        description=f"Chat memory: short-term (DynamoDB), long-term ({long_term}), chat API",
    )
    nag.enable(app)
    return stack
