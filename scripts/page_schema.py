"""Print local/web/schema.js: the values the web page shares with the API (session statuses,
message intents, source kinds, the profile's record types, statuses and origins, sentiment
labels, ratings of an answer, turn origins, and the states and reasons of a hand-off to a
person), generated from chatmemory.schema so the page never types them again."""

from __future__ import annotations

import json

from chatmemory.schema import (
    VISIBLE_STATUSES,
    HandoffReason,
    HandoffState,
    Intent,
    Rating,
    RecordOrigin,
    RecordStatus,
    RecordType,
    SentimentLabel,
    SourceKind,
    TurnOrigin,
)


def document() -> str:
    values = {
        "SessionStatus": {status.name: status.value for status in VISIBLE_STATUSES},
        "Intent": {intent.name: intent.value for intent in Intent},
        "SourceKind": {kind.name: kind.value for kind in SourceKind},
        "RecordType": {kind.name: kind.value for kind in RecordType},
        "RecordStatus": {status.name: status.value for status in RecordStatus},
        "RecordOrigin": {origin.name: origin.value for origin in RecordOrigin},
        "SentimentLabel": {label.name: label.value for label in SentimentLabel},
        "Rating": {rating.name: rating.value for rating in Rating},
        "TurnOrigin": {origin.name: origin.value for origin in TurnOrigin},
        "HandoffState": {state.name: state.value for state in HandoffState},
        "HandoffReason": {reason.name: reason.value for reason in HandoffReason},
    }
    return (
        "// Generated from lambdas/chatmemory/schema.py by `make openapi`; do not edit.\n"
        '"use strict";\n'
        f"const SCHEMA = Object.freeze({json.dumps(values, indent=2, sort_keys=True)});\n"
    )


def main() -> None:
    print(document(), end="")


if __name__ == "__main__":
    main()
