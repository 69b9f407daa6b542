"""Ingestion Lambda: index verified documents given in the event (the code `make ingest` runs).

Event: {"documents": [{"doc_id", "text", "title"?, "source"?}, ...]}. Re-ingesting a doc_id
overwrites its passages. Invoke it directly (aws lambda invoke) or from a pipeline step.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field

from chatmemory import wiring
from chatmemory.services.background.ingest import SourceDocument, ingest_documents
from handlers import init_done

logger = Logger(service="ingest")


class _Document(BaseModel):
    model_config = ConfigDict(extra="forbid")

    doc_id: str = Field(min_length=1, max_length=512)
    text: str = Field(min_length=1)
    title: str = ""
    source: str = ""


class IngestEvent(BaseModel):
    documents: list[_Document] = Field(min_length=1, max_length=500)


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = IngestEvent.model_validate(event)
    index = wiring.long_term_index()
    if index is None:
        raise RuntimeError("ingestion needs LONG_TERM_BACKEND=embedded, opensearch or s3vectors")
    documents = [SourceDocument(**d.model_dump()) for d in request.documents]
    passages = ingest_documents(documents, embedder=wiring.embedder(), index=index)
    logger.info("ingested", extra={"documents": len(documents), "passages": passages})
    return {"documents": len(documents), "passages": passages}


# The end of init: build what invocations use, then resume collection (handlers/__init__.py).
init_done(lambda: (wiring.embedder(), wiring.long_term_index()))
