"""Read a moto table's DynamoDB stream and shape the records as Lambda receives them."""

from __future__ import annotations

from typing import Any

import boto3


class StreamReader:
    """Remembers where it stopped, so each call returns only the records written since."""

    def __init__(self, dynamodb: Any, table: str) -> None:
        self._streams = boto3.client("dynamodbstreams", region_name="us-east-1")
        self._arn = dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
        self._iterators: dict[str, str] = {}

    def records(self) -> list[dict[str, Any]]:
        shards = self._streams.describe_stream(StreamArn=self._arn)["StreamDescription"]["Shards"]
        out: list[dict[str, Any]] = []
        for shard in shards:
            shard_id = shard["ShardId"]
            iterator = (
                self._iterators.get(shard_id)
                or self._streams.get_shard_iterator(
                    StreamArn=self._arn, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
            )
            answer = self._streams.get_records(ShardIterator=iterator)
            self._iterators[shard_id] = answer["NextShardIterator"]
            for record in answer["Records"]:
                record = dict(record)
                record["eventSourceARN"] = self._arn
                record["dynamodb"] = {
                    k: v
                    for k, v in record["dynamodb"].items()
                    if k != "ApproximateCreationDateTime"
                }
                out.append(record)
        return out

    def event(self) -> dict[str, Any]:
        return {"Records": self.records()}
