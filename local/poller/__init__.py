"""A DynamoDB Streams poller with the semantics of Lambda's event source mappings.

For each mapping (table stream -> handler) and each shard, in sequence-number order:
records that do not match the mapping's filter patterns are dropped before invoking (Lambda
event filtering); the rest go to the handler in batches of up to `batch_size`, in the Lambda
DynamoDB event shape. A reply with `batchItemFailures` retries from the first failed record;
a raised exception bisects the batch (without using the retry budget); a record still failing
after `max_retry_attempts` retries is written, with its batch, to a dead-letter file, and the
shard moves on. The last processed sequence number of every shard is checkpointed atomically, so
a restart neither reprocesses nor skips records. Closed shards are read to their end before their
children start (shard rollover).

`StreamPoller.poll_once()` does one step per shard; `drain()` steps until there is nothing left;
`start()` runs it in a thread, as `make run` does.

Modules: `mappings` (which stream feeds which handler), `records` (GetRecords records in the
Lambda event shape), `checkpoints` and `dead_letters` (the two files it keeps), `emulator` (the
poller itself).
"""

from local.lambda_context import Handler, load_handler
from local.poller.checkpoints import CheckpointStore
from local.poller.dead_letters import DeadLetterFile
from local.poller.emulator import StreamPoller, default_poller
from local.poller.mappings import MAPPINGS, StreamMapping
from local.poller.records import lambda_record, sequence_number

__all__ = [
    "MAPPINGS",
    "CheckpointStore",
    "DeadLetterFile",
    "Handler",
    "StreamMapping",
    "StreamPoller",
    "default_poller",
    "lambda_record",
    "load_handler",
    "sequence_number",
]
