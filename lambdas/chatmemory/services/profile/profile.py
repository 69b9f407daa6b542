"""The caller's profile: records of facts, preferences and session summaries that stay current
and that the caller can see, correct and delete.

Records live in DynamoDB (the source of truth: listed, corrected, deleted there) and each has
one entry in the long-term index, so auto-recall and /past find them by meaning.

"The same thing": two records of one type are about the same thing when they share a subject
("residence", "job", "partner", "name", "likes:coffee"): then the newer one supersedes the
older, which stays as history with the date it stopped being true (`valid_until`), so "where
did I live before?" still has an answer. Records without a subject never supersede: they merge
with a duplicate instead (same type, and the same words or an embedding at least
`merge_similarity` close), adding their provenance to it.

Open questions (what a session left unsettled, services/profile/extract.open_questions) are closed
by a later answer: a later fact or preference on their subject (a named one, or one holding every
word of their topic: extract.settles) supersedes them, so recall stops bringing them up. They
belong to their session like its summary: their entry carries its id (/past ranks them with
it) and they never merge (a later session leaving the same thing open supersedes them).

Deleting follows the rules of services/background/forget.py: a record deleted through the API is a
tombstone first (unreachable at once; the purge removes its entry and item); a session's purge
removes the records drawn only from it; a forget takes every record of the old owner key along.
What a removed record had superseded stays history: a deleted claim does not make an older one
true again.

Why nothing of a deleted record or session is seen again, whatever runs at the same time:

* Every read checks liveness in one consistent read: a record being deleted is never listed,
  searched, corrected or recalled, and neither is a record drawn from sessions (an extracted
  fact or preference, a session's summary) once none of those sessions is visible - from the
  moment the session's tombstone is written, not when its purge gets to the record.
* Whatever writes a record's index entry checks afterwards, in one consistent read, that the
  record is still live, and deletes the entry it wrote if not. A delete whose tombstone comes
  after that check has a purge that comes after the write too, so one of the two removes it.
* A session's purge (or consolidation's compensation) retries a record whose save lost a race,
  so no record keeps a deleted session in its provenance (and outlives its last session).

The parts, by concern: entries.py (ids, keys, index entries, what the caller can see),
placing.py (placing and merging, consolidation's records), edits.py (the caller's own records
and edits), search.py (namespaces, pages and search), purge.py (purges). This module is the
profile's public API as the routes and the rest import it.
"""

from chatmemory.services.profile.edits import (
    KEEP_EXPIRY,
    Editing,
    correct_record,
    delete_record,
    delete_record_now,
    owned_record,
    put_keyed_record,
    state_record,
)
from chatmemory.services.profile.entries import (
    ProfilePolicy,
    ProfileResult,
    categorize,
    doc_key_of,
    entry_keys,
    extracted_record_id,
    fact_key,
    new_record_id,
    record_document,
    statement_key,
    summary_record_id,
    visible_records,
    write_record_entries,
)
from chatmemory.services.profile.placing import remember_facts, remember_summary
from chatmemory.services.profile.purge import (
    drop_session_records,
    purge_expired_record,
    purge_record,
)
from chatmemory.services.profile.search import (
    MAX_SEARCH_SCAN,
    RecordQuery,
    find_records,
    list_namespaces,
    list_records,
    scoped_namespace,
    search_records,
    shown_namespace,
    stored_namespace,
)

__all__ = [
    "KEEP_EXPIRY",
    "Editing",
    "MAX_SEARCH_SCAN",
    "ProfilePolicy",
    "ProfileResult",
    "RecordQuery",
    "categorize",
    "correct_record",
    "delete_record",
    "delete_record_now",
    "doc_key_of",
    "drop_session_records",
    "entry_keys",
    "extracted_record_id",
    "fact_key",
    "find_records",
    "list_namespaces",
    "list_records",
    "new_record_id",
    "owned_record",
    "purge_expired_record",
    "purge_record",
    "put_keyed_record",
    "record_document",
    "remember_facts",
    "remember_summary",
    "scoped_namespace",
    "search_records",
    "shown_namespace",
    "state_record",
    "statement_key",
    "stored_namespace",
    "summary_record_id",
    "visible_records",
    "write_record_entries",
]
