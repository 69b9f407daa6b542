"""Offline models for local mode and tests: no network, no account."""
