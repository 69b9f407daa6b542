"""Integration tier: a real DynamoDB Local (started once per test run, on a free port, with a
temporary database), fresh tables per test, and local mode's gateway and poller around the real
handlers with the offline models. The fixtures (`dynamodb_local`, `world`, `running_world`, and
the web page tests' `browser`) live in tests/conftest.py, shared with the fault tier
(tests/faults) and the docs site's tests (tests/docs)."""
