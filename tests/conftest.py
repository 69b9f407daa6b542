"""Shared fixtures: fake AWS credentials, moto tables built from schema.py, a Lambda context."""

from __future__ import annotations

import pytest

from chatmemory import schema, wiring


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test can reach AWS: fake credentials, a fixed region, moto-friendly settings."""
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SECURITY_TOKEN": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        # moto misses DynamoDB Streams calls when botocore resolves account-based endpoints.
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        "POWERTOOLS_TRACE_DISABLED": "1",
        "POWERTOOLS_METRICS_NAMESPACE": "ChatMemoryTest",
        "POWERTOOLS_DEV": "0",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    wiring.clear_caches()
    yield
    wiring.clear_caches()


@pytest.fixture
def dynamodb(aws_env: None):
    """A moto DynamoDB with the project's tables, created from the schema module."""
    import boto3
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        for spec in schema.TABLES:
            client.create_table(**spec.create_table_kwargs(spec.logical_name))
        yield client


class FakeLambdaContext:
    function_name = "chat-api"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:chat-api"
    aws_request_id = "00000000-0000-0000-0000-000000000000"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    return FakeLambdaContext()
