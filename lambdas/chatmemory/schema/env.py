"""The names of the environment variables the functions read."""

from __future__ import annotations

from chatmemory.schema.tables import CHECKPOINTS, CONVERSATIONS, RECORDS, SESSIONS, USERS

# --- environment variables ---------------------------------------------------------------

# Set by the stack in every function's environment (stacks/functions.py), beside each one's
# own settings. Pydantic looks for plugins (packages that observe validation, such as logfire)
# the first time it builds a model, by reading the metadata of every installed distribution
# (the asset's, the Powertools layer's, the runtime's); the functions use none, so the search
# is off. A deployment that adds a plugin to the asset removes this.
FUNCTION_ENVIRONMENT = {"PYDANTIC_DISABLE_PLUGINS": "__all__"}

# Read by Settings.from_env:

ENV_SESSIONS_TABLE = SESSIONS.env_var
ENV_CONVERSATIONS_TABLE = CONVERSATIONS.env_var
ENV_USERS_TABLE = USERS.env_var
ENV_RECORDS_TABLE = RECORDS.env_var
ENV_CHECKPOINTS_TABLE = CHECKPOINTS.env_var
ENV_AUTO_RECALL = "AUTO_RECALL"
ENV_MEMORY_TOKEN_BUDGET = "MEMORY_TOKEN_BUDGET"
ENV_PROFILE_TOKEN_BUDGET = "PROFILE_TOKEN_BUDGET"
ENV_DYNAMODB_ENDPOINT = "DYNAMODB_ENDPOINT_URL"
ENV_TEXT_BACKEND = "TEXT_BACKEND"
ENV_EMBED_BACKEND = "EMBED_BACKEND"
ENV_TEXT_ENDPOINT = "TEXT_ENDPOINT"
ENV_TEXT_FORMAT = "TEXT_FORMAT"
ENV_EMBED_ENDPOINT = "EMBED_ENDPOINT"
ENV_EMBED_FORMAT = "EMBED_FORMAT"
ENV_EMBED_DIMENSION = "EMBED_DIMENSION"
ENV_TEXT_MODEL_ID = "TEXT_MODEL_ID"
ENV_EMBED_MODEL_ID = "EMBED_MODEL_ID"
ENV_OPENAI_BASE_URL = "OPENAI_BASE_URL"
ENV_OPENAI_API_KEY = "OPENAI_API_KEY"
ENV_MODEL_TIMEOUT = "MODEL_TIMEOUT_SECONDS"
ENV_MODEL_MAX_ATTEMPTS = "MODEL_MAX_ATTEMPTS"
ENV_WINDOW_TURNS = "WINDOW_TURNS"
ENV_MAX_WINDOW_TURNS = "MAX_WINDOW_TURNS"
ENV_PROMPT_TOKEN_BUDGET = "PROMPT_TOKEN_BUDGET"
ENV_MAX_NEW_TOKENS = "MAX_NEW_TOKENS"
ENV_MAX_INPUT_CHARS = "MAX_INPUT_CHARS"
ENV_USER_ROLE = "USER_ROLE_NAME"
ENV_ASSISTANT_ROLE = "ASSISTANT_ROLE_NAME"
ENV_SYSTEM_PROMPT = "SYSTEM_PROMPT"
ENV_INPUT_TRANSFORMS = "INPUT_TRANSFORMS"
ENV_OUTPUT_TRANSFORMS = "OUTPUT_TRANSFORMS"
ENV_INTENT_CLASSIFIER = "INTENT_CLASSIFIER"
ENV_STORE_PROMPT = "STORE_PROMPT"
ENV_TURN_TTL_DAYS = "TURN_TTL_DAYS"
ENV_KEEP_MESSAGE_IDS = "KEEP_MESSAGE_IDS"
ENV_LONG_TERM_BACKEND = "LONG_TERM_BACKEND"
ENV_SENTIMENT = "SENTIMENT"
# Hand-off to a person: the EventBridge bus its events go to (unset: no events), the Cognito
# group whose members may use the agent routes, the IAM role ARN whose sessions may (auth=iam),
# and the automatic rules (off unless set).
ENV_EVENT_BUS = "EVENT_BUS_NAME"
ENV_AGENT_GROUP = "AGENT_GROUP"
ENV_AGENT_ROLE_ARN = "AGENT_ROLE_ARN"
# With IAM auth, a backend calls as one role for all of its own users: a session of a role named
# in END_USER_ROLE_ARNS may name the end user it calls for in this header, and each end user is a
# caller of their own ("<role ARN>/end-user/<id>"), with their own sessions, records and
# forget; the id follows ID_PATTERN. From anyone else the header is refused (403).
END_USER_HEADER = "X-ChatMemory-End-User"
ENV_END_USER_ROLE_ARNS = "END_USER_ROLE_ARNS"
ENV_HANDOFF_ON_NOTHING_VERIFIED = "HANDOFF_ON_NOTHING_VERIFIED"
ENV_HANDOFF_NEGATIVE_TURNS = "HANDOFF_NEGATIVE_TURNS"
ENV_HANDOFF_NEGATIVE_SCORE = "HANDOFF_NEGATIVE_SCORE"
# Local mode: the JSON-lines file hand-off events are appended to when there is no bus.
ENV_EVENTS_FILE = "EVENTS_FILE"
# Stacked messages: how long a chat message waits for more from the same user before it is
# answered (0: answer at once, messages still stack when they arrive during a model call).
ENV_STACK_WAIT_MS = "STACK_WAIT_MS"
ENV_STACK_MESSAGES = "STACK_MESSAGES"
# Comma-separated origins allowed to call the API from a browser ("*" for any); unset: none.
ENV_CORS_ORIGINS = "CORS_ALLOW_ORIGINS"
