"""Hand-off events on an Amazon EventBridge bus (PutEvents), for a contact centre's rules."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from chatmemory import schema
from chatmemory.errors import EventsUnavailable


class EventBridgePublisher:
    """EventPublisher on the bus named by EVENT_BUS_NAME (its physical name from the stack)."""

    def __init__(self, client: Any, bus_name: str) -> None:
        self._client = client
        self._bus = bus_name

    def publish(self, detail_type: str, detail: dict[str, Any]) -> None:
        entry = {
            "Source": schema.EVENT_SOURCE,
            "DetailType": detail_type,
            "Detail": json.dumps(detail, ensure_ascii=False),
            "EventBusName": self._bus,
        }
        try:
            answer = self._client.put_events(Entries=[entry])
        except (ClientError, BotoCoreError) as error:
            raise EventsUnavailable(f"PutEvents failed: {error}") from error
        # PutEvents answers 200 with the entries it could not take counted, not as an error.
        if answer.get("FailedEntryCount"):
            failed = (answer.get("Entries") or [{}])[0]
            raise EventsUnavailable(
                f"PutEvents refused the event: {failed.get('ErrorCode')} "
                f"{failed.get('ErrorMessage', '')}".strip()
            )
