// Generated from lambdas/chatmemory/schema.py by `make openapi`; do not edit.
"use strict";
const SCHEMA = Object.freeze({
  "HandoffReason": {
    "NEGATIVE_SENTIMENT": "negative_sentiment",
    "NOTHING_VERIFIED": "nothing_verified",
    "USER_REQUEST": "user_request"
  },
  "HandoffState": {
    "ACTIVE": "ACTIVE",
    "WAITING": "WAITING"
  },
  "Identifier": {
    "maxLength": 128,
    "maxTurnNumber": 999999999,
    "pattern": "^[A-Za-z0-9_.:-]*[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$"
  },
  "Intent": {
    "CHAT": "chat",
    "HUMAN": "human",
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
    "PROFILE": "profile",
    "RECORD": "record",
    "SESSION": "session"
  },
  "TurnOrigin": {
    "AGENT": "agent",
    "CHAT": "chat",
    "CLIENT": "client"
  }
});
