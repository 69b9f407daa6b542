"""The caller's profile: records, their extraction from a session, filters on their values."""
