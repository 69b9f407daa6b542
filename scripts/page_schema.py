"""Print local/web/schema.js: the values the web page shares with the API (session statuses,
message intents, source kinds, the profile's record types, statuses and origins, sentiment
labels, ratings of an answer, turn origins, the states and reasons of a hand-off to a person,
and the rule of identifiers), generated from chatmemory.schema so the page never types them
again."""

from __future__ import annotations

import json

from chatmemory.schema import (
    ID_MAX_LENGTH,
    ID_PATTERN,
    MAX_TURN_NUMBER,
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
        # The one rule of identifiers: the page refuses an id the API would refuse.
        "Identifier": {
            "pattern": ID_PATTERN,
            "maxLength": ID_MAX_LENGTH,
            "maxTurnNumber": MAX_TURN_NUMBER,
        },
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
