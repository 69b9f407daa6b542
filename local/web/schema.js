// Generated from lambdas/chatmemory/schema.py by `make openapi`; do not edit.
"use strict";
const SCHEMA = Object.freeze({
  "Intent": {
    "CHAT": "chat",
    "PAST": "past",
    "VERIFIED": "verified"
  },
  "SessionStatus": {
    "CONSOLIDATED": "CONSOLIDATED",
    "ENDED": "ENDED",
    "FAILED": "FAILED",
    "OPEN": "OPEN"
  },
  "SourceKind": {
    "PASSAGE": "passage",
    "SESSION": "session"
  }
});
