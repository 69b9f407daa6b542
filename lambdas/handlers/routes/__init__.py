"""The chat API's routes, one Powertools `Router` per resource, joined into one resolver by
handlers/chat_routes.py (`api()`, which lists them): sessions, turns (and the chat message),
streaming, memories (and the profile's records), the store (namespaces and record search),
checkpoints, agents (hand-off to a person), and openai (the OpenAI-compatible routes, whose
RequestValidationError handler chat_routes.py installs for every route). What every route
reads from its request (the caller, the session the caller's id names, the identifier rule)
is in common.py.

A route parses its request (the pydantic models of chatmemory/api_models/ and the annotated
parameters), calls one service function and shapes the answer; what the answer is made of is
decided by the services, and the project's errors are mapped to HTTP once, by the resolver."""
