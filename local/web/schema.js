// Generated from lambdas/chatmemory/schema.py by `make openapi`; do not edit.
"use strict";
const SCHEMA = Object.freeze({
  "Intent": {
    "CHAT": "chat",
    "PAST": "past",
    "REMEMBER": "remember",
    "VERIFIED": "verified"
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
    "PREFERENCE": "preference",
    "SUMMARY": "summary"
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
