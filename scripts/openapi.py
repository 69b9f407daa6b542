"""Print the chat API's OpenAPI document (what `make openapi` writes to openapi.json)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lambdas"))


def main() -> None:
    from handlers.chat_api import openapi_document

    print(json.dumps(json.loads(openapi_document()), indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
