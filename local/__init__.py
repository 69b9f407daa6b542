"""Local mode: DynamoDB Local, a stream poller with Lambda's semantics, an API Gateway-like HTTP
gateway and a web page, all running the same handlers as AWS (`make run`)."""
