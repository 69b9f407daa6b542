// Generated from lambdas/chatmemory/schema.py by `make openapi`; do not edit.
"use strict";
const SCHEMA = Object.freeze({
  "Intent": {
    "CHAT": "chat",
    "PAST": "past",
    "REMEMBER": "remember",
    "VERIFIED": "verified"
  },
  "Rating": {
    "DOWN": "down",
    "UP": "up"
  },
  "RecordOrigin": {
    "CORRECTED": "corrected",
    "EXTRACTED": "extracted",
    "STATED": "stated"
  },
  "RecordStatus": {
    "ACTIVE": "ACTIVE",
    "DELETING": "DELETING",
    "SUPERSEDED": "SUPERSEDED"
  },
  "RecordType": {
    "FACT": "fact",
    "OPEN_QUESTION": "open_question",
    "PREFERENCE": "preference",
    "SUMMARY": "summary"
  },
  "SentimentLabel": {
    "NEGATIVE": "negative",
    "NEUTRAL": "neutral",
    "POSITIVE": "positive"
  },
  "SessionStatus": {
    "CONSOLIDATED": "CONSOLIDATED",
    "ENDED": "ENDED",
    "FAILED": "FAILED",
    "OPEN": "OPEN"
  },
  "SourceKind": {
    "PASSAGE": "passage",
    "RECORD": "record",
    "SESSION": "session"
  }
});
