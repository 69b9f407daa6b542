"""The values a stored item or an API answer names: statuses, intents, kinds, the routes' paths,
the prompt's markers, the model and index backends."""

from __future__ import annotations

from enum import StrEnum


class SessionStatus(StrEnum):
    OPEN = "OPEN"
    ENDED = "ENDED"
    CONSOLIDATED = "CONSOLIDATED"
    FAILED = "FAILED"
    # Written but not yet readable: an import whose turns are still being written.
    IMPORTING = "IMPORTING"
    # Deleted for every reader; a purge removes its turns, memories and finally the item.
    DELETING = "DELETING"


# What a caller can see, list, continue or recall (the API's statuses).
VISIBLE_STATUSES: tuple[SessionStatus, ...] = (
    SessionStatus.OPEN,
    SessionStatus.ENDED,
    SessionStatus.CONSOLIDATED,
    SessionStatus.FAILED,
)


class PurgeState(StrEnum):
    PENDING = "PENDING"
    MARKED = "MARKED"  # every session of the namespace is marked DELETING


class Intent(StrEnum):
    """How a message is answered: chat, `/past` recall, `/verified` documents, or `/remember`
    (the caller states a record of their profile)."""

    CHAT = "chat"
    PAST = "past"
    VERIFIED = "verified"
    REMEMBER = "remember"
    # `/human [note]`: the caller asks for a person (services/conversation/handoff.py); no model
    # answers.
    HUMAN = "human"


class TurnOrigin(StrEnum):
    """Who wrote a turn's response: this service's model (POST /messages), or the client that
    stored the turn as it was (POST /turns: the caller's own agent answered, or will)."""

    CHAT = "chat"
    CLIENT = "client"
    # A human agent's reply while the session is handed to a person (its text is the turn's
    # response; the turn has no input).
    AGENT = "agent"


class HandoffState(StrEnum):
    """A session handed to a person: waiting for an agent, or answered by one."""

    WAITING = "WAITING"
    ACTIVE = "ACTIVE"


# The EventBridge events of a hand-off (source, and detail-type per change), so that a contact
# centre's rule can match them: {"source": ["chatmemory"], "detail-type": [HANDOFF_EVENT]}.
EVENT_SOURCE = "chatmemory"
HANDOFF_EVENT = "Session handed off"
HANDBACK_EVENT = "Session handed back"


class HandoffReason(StrEnum):
    USER_REQUEST = "user_request"  # POST /sessions/{id}/handoff or the chat command /human
    NOTHING_VERIFIED = "nothing_verified"  # /verified found nothing relevant
    NEGATIVE_SENTIMENT = "negative_sentiment"  # repeated negative user turns


class Rating(StrEnum):
    UP = "up"
    DOWN = "down"


class SentimentLabel(StrEnum):
    """The sentiment of a user's message, by VADER's convention: positive for a score of at
    least 0.05, negative for at most -0.05, neutral between."""

    POSITIVE = "positive"
    NEGATIVE = "negative"
    NEUTRAL = "neutral"


class SourceKind(StrEnum):
    SESSION = "session"
    PASSAGE = "passage"
    # A record auto-recall found close to the message (or /remember stored).
    RECORD = "record"
    # A record of the profile block, which every chat prompt holds (services/profile/block.py):
    # its id is the record's, and it has no score (it was not chosen by similarity).
    PROFILE = "profile"


class RecordType(StrEnum):
    """What the caller's profile holds."""

    FACT = "fact"  # who they are, people, places, plans, decisions
    PREFERENCE = "preference"  # likes and dislikes
    SUMMARY = "summary"  # what one past session was about
    # what one past session left unsettled (a plan not decided, a question left unanswered)
    OPEN_QUESTION = "open_question"


class RecordCategory(StrEnum):
    """What a fact or preference is about (services/profile/categories.category): the profile block
    keeps them in this order of importance when they do not all fit its budget."""

    HEALTH = "health"  # health and safety: allergies, diets, conditions, medicines, abilities
    IDENTITY = "identity"  # who they are: name, age, home, work, studies, beliefs
    PEOPLE = "people"  # family, friends, the people and pets of their life
    PREFERENCE = "preference"  # standing likes, dislikes, habits
    OTHER = "other"  # any other lasting fact
    EVENT = "event"  # something that happened at a time: recalled by meaning, not in the block


# The profile block's order: a lower tier survives its budget first; EVENT is never in it.
PROFILE_TIERS: dict[str, int] = {
    RecordCategory.HEALTH: 0,
    RecordCategory.IDENTITY: 1,
    RecordCategory.PEOPLE: 1,
    RecordCategory.PREFERENCE: 2,
    RecordCategory.OTHER: 3,
}


class RecordStatus(StrEnum):
    ACTIVE = "ACTIVE"
    SUPERSEDED = "SUPERSEDED"  # a newer record about the same thing replaced it (history)
    DELETING = "DELETING"  # deleted for every reader; the purge removes it


class RecordOrigin(StrEnum):
    EXTRACTED = "extracted"  # drawn from a session at consolidation
    STATED = "stated"  # the caller said it (POST /memories/records, /remember)
    CORRECTED = "corrected"  # the caller corrected its text


class MemoryKind(StrEnum):
    """What one long-term index entry is."""

    SUMMARY = "summary"
    OPENING = "opening"
    CHUNK = "chunk"
    PASSAGE = "passage"
    FACT = "fact"
    PREFERENCE = "preference"
    OPEN_QUESTION = "open_question"  # a record's entry, of its session (as a summary's)


# How long a streamed answer may take (POST /sessions/{id}/messages/stream): the stream
# function's timeout (API Gateway streams for up to 15 minutes; the buffered route has 29 s).
STREAM_TIMEOUT_SECONDS = 300
# The streamed message route's path ends so: POST /sessions/{session_id}/messages/stream.
STREAM_PATH_SUFFIX = "/messages/stream"
# The OpenAI-compatible chat route (handlers/routes/openai.py), answered by the stream function:
# with stream true it streams, without it answers one JSON body.
OPENAI_CHAT_PATH = "/v1/chat/completions"
# The stream function's web server answers here when it is ready (the Lambda Web Adapter's
# readiness check: AWS_LWA_READINESS_CHECK_PATH).
STREAM_HEALTH_PATH = "/healthz"

# Auto-recall's block in a chat prompt sits between these lines (services/longterm/recall_block.py
# writes it; the offline responder reads it back).
PROMPT_MEMORY_HEADER = (
    "From earlier conversations with the user (dated; use only what helps with the message):"
)
PROMPT_MEMORY_FOOTER = "(End of earlier conversations.)"
# The profile block of a chat prompt (services/profile/block.py): what the user told us about
# themselves that lasts, in their words, on every turn.
PROMPT_PROFILE_HEADER = "About the user, in their words:"
PROMPT_PROFILE_FOOTER = "(End of profile.)"

# The owner key of verified passages: they belong to no user, and every caller may read them.
SHARED_OWNER = ""
# The format name of an exported session (GET /sessions/{id}/export, POST /sessions/import).
EXPORT_FORMAT = "chatmemory.session.v1"


# --- model and index backends (runtime settings and the stacks' config share these) ---------


class TextBackend(StrEnum):
    OFFLINE = "offline"
    SAGEMAKER = "sagemaker"
    BEDROCK = "bedrock"
    OPENAI = "openai"


# The prefixes of cross-region (system-defined) Bedrock inference profile ids:
# "<prefix>.<model id>" ("eu.cohere.embed-v4:0"). The stacks grant by them and the runtime tells
# a model's request format by the model id inside.
INFERENCE_PROFILE_PREFIXES = ("us", "eu", "apac", "global", "us-gov", "jp", "au", "ca")


def inference_profile(model_id: str) -> tuple[str, str] | None:
    """(prefix, foundation model id) of a cross-region inference profile id, else None."""
    prefix, _, rest = model_id.partition(".")
    return (prefix, rest) if prefix in INFERENCE_PROFILE_PREFIXES and rest else None


def foundation_model(model_id: str) -> str:
    """The foundation model id a Bedrock model id or inference profile id names."""
    profile = inference_profile(model_id)
    return profile[1] if profile else model_id


class EmbedBackend(StrEnum):
    OFFLINE = "offline"
    SAGEMAKER = "sagemaker"
    BEDROCK = "bedrock"
    OPENAI = "openai"


class TextFormat(StrEnum):
    """Payload formats of SageMaker text endpoints."""

    JUMPSTART_FLAN_T5 = "jumpstart-flan-t5"
    TGI = "tgi"  # Hugging Face Text Generation Inference


class EmbedFormat(StrEnum):
    """Payload formats of SageMaker embedding endpoints."""

    JUMPSTART_GPT_J = "jumpstart-gpt-j"
    TEI = "tei"  # Hugging Face Text Embeddings Inference


class SentimentMode(StrEnum):
    """How a user turn's sentiment is found (SENTIMENT)."""

    # VADER (the text model was asked before: a second model call on every turn).
    AUTO = "auto"
    VADER = "vader"  # VADER's lexicon and rules, in process
    MODEL = "model"  # one short call to the text model per chat turn, VADER when it fails
    OFF = "off"  # no sentiment on turns


class LongTermBackend(StrEnum):
    NONE = "none"
    EMBEDDED = "embedded"
    OPENSEARCH = "opensearch"
    S3VECTORS = "s3vectors"  # Amazon S3 Vectors: pay per stored GB and per query, no idle cost
