"""Lambda entry points: parse the event, call one service, shape the reply.

Observability: Powertools Logger (JSON lines with the request and X-Ray trace ids) and Metrics
(EMF). Tracing needs no SDK here: Lambda active tracing (stacks/functions.py) records each
invocation's segment with its Initialization (cold start), Invocation and Overhead parts, behind
API Gateway's segment for the chat API. The X-Ray SDK (Powertools' Tracer, in maintenance since
February 2026) is not imported: it was the largest part of a handler's cold start. Nor is
OpenTelemetry: without an OpenTelemetry layer its API records nothing, and with one (ADOT) the
layer's own instrumentation of botocore and urllib3 already traces every DynamoDB, Bedrock,
SageMaker, OpenSearch and OpenAI-compatible call; a copy bundled in the asset would shadow the
layer's.
"""
