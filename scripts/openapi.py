"""Print the chat API's OpenAPI document (what `make openapi` writes to openapi.json)."""

from __future__ import annotations

import json

from handlers.chat_routes import openapi_document


def main() -> None:
    """Print the document with sorted keys, so that a change shows as a small diff."""
    print(json.dumps(json.loads(openapi_document()), indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
