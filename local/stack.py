"""The whole system in one process: DynamoDB Local (a java child process), the stream poller, the
idle sweeper and the HTTP gateway, started and stopped in order. `make run` uses it; so can
tests and benchmarks."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from local.config import (
    API_HOST,
    API_PORT,
    DEFAULT_AGENTS,
    DYNAMODB_PORT,
    STATE_DIR,
    state_paths,
)
from local.dynamodb_local import DynamoDBLocal, ensure_tables, table_names
from local.gateway import HANDLER, Gateway
from local.lambda_context import LocalLambdaContext
from local.poller import StreamPoller, default_poller

log = logging.getLogger("local.stack")

# The longest the stream poller waits before one of its reads for streamed answers to start
# (consolidation and indexing are background work; a turn's first word is not).
ANSWER_START_WAIT_SECONDS = 0.5


@dataclass
class StackOptions:
    state_dir: Path = STATE_DIR
    api_host: str = API_HOST
    api_port: int = API_PORT
    dynamodb_port: int = DYNAMODB_PORT
    # None: start DynamoDB Local; a URL: use that endpoint (DYNAMODB_ENDPOINT_URL was set).
    external_dynamodb: str | None = None
    sweep_seconds: float = 60.0  # 0: no idle sweeper
    poll_interval: float = 0.25
    # False: the poller is built but not started (tests step it with poll_once()/drain()).
    poll_in_background: bool = True
    retry_backoff_seconds: float = 0.5
    warm_models: bool = True
    # Chat handler processes, like Lambda instances; 1 runs it in this process (tests patch it).
    workers: int = 1
    # The X-User-Id callers who are agents (hand-off to a person: the /agent routes).
    agents: tuple[str, ...] = DEFAULT_AGENTS


class LocalStack:
    """Start with `start()` (or `with LocalStack(...)`); `stop()` stops what was started, in
    reverse order. Settings come from the environment (see local.config.apply_local_defaults)."""

    def __init__(self, options: StackOptions, echo: Callable[[str], None] = print) -> None:
        self.options = options
        self.echo = echo
        self.paths = state_paths(options.state_dir)
        self.dynamodb: DynamoDBLocal | None = None
        self.poller: StreamPoller | None = None
        self.gateway: Gateway | None = None
        self._sweeper: threading.Thread | None = None
        self._stop_sweeping = threading.Event()

    def start(self) -> LocalStack:
        from chatmemory import wiring

        wiring.clear_caches()
        cfg = wiring.settings()
        o = self.options
        # Bind the API port first: if it is taken, fail before starting anything else.
        self.gateway = Gateway(
            HANDLER,
            host=o.api_host,
            port=o.api_port,
            workers=o.workers,
            worker_setup=_worker_setup(o.warm_models),
            agents=o.agents,
            agent_group=cfg.agent_group,
            after_request=self._wake_poller,
        )
        try:
            if o.warm_models:
                make_model_files(cfg, self._line)
            # Import the handler (or start its workers) now, not in the first request while the
            # model loads.
            self.gateway.prepare()
            self._start_dynamodb(cfg)
            client = wiring.aws_client("dynamodb", cfg.dynamodb_endpoint)
            created = ensure_tables(client, table_names(cfg))
            names = ", ".join(table_names(cfg).values())
            self._line("tables", names + (" (created)" if created else " (kept)"))
            if not created:
                _backfill_profile(client, cfg)
            self.poller = default_poller(
                cfg,
                checkpoint_path=self.paths["checkpoints"],
                dead_letter_path=self.paths["dead_letters"],
                retry_backoff_seconds=o.retry_backoff_seconds,
                before_reading=self._after_starting_answers,
            )
            self.poller.load_handlers()
            if o.poll_in_background:
                self.poller.start(o.poll_interval)
            self._line(
                "stream poller",
                f"{_mapping_summary(self.poller)} "
                f"(checkpoints in {_shown(self.paths['checkpoints'])})",
            )
            if o.sweep_seconds > 0:
                self._start_sweeper(cfg.idle_minutes)
            for part, text in _models(cfg):
                self._line(part, text)
            self._line("hand-off", _handoff_line(cfg, o.agents))
            if o.warm_models:
                threading.Thread(target=self._warm, daemon=True).start()
            self.gateway.start()
            workers = self.gateway.workers
            self._line(
                "web page and API",
                self.gateway.url + (f" ({workers} handler processes)" if workers > 1 else ""),
            )
        except BaseException:
            self.stop()
            raise
        return self

    def _after_starting_answers(self) -> None:
        """The stream poller's reads wait while a streamed answer has not sent its first chunk
        (DynamoDB Local answers one request at a time), at most ANSWER_START_WAIT_SECONDS."""
        gateway = self.gateway
        if gateway is not None:
            gateway.starting.wait(ANSWER_START_WAIT_SECONDS)

    def _wake_poller(self) -> None:
        """After each API request: what it wrote is read from the streams at once."""
        poller = self.poller
        if poller is not None:
            poller.wake()

    def stop(self) -> None:
        """Gateway first (no new work; its worker processes end), then the sweeper and the
        poller (each finishes the batch in hand and checkpoints it), then DynamoDB Local."""
        if self.gateway is not None:
            self.gateway.stop()
            self.gateway = None
        self._stop_sweeping.set()
        if self._sweeper is not None:
            self._sweeper.join(30)
            self._sweeper = None
        if self.poller is not None:
            self.poller.stop()
            self.poller = None
        if self.dynamodb is not None:
            self.dynamodb.stop()
            self.dynamodb = None

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- parts -------------------------------------------------------------------------------

    def _start_dynamodb(self, cfg: Any) -> None:
        o = self.options
        if o.external_dynamodb:
            self._line("DynamoDB", f"{o.external_dynamodb} (from DYNAMODB_ENDPOINT_URL)")
            return
        started = time.monotonic()
        self.dynamodb = DynamoDBLocal(
            self.paths["dynamodb"],
            o.dynamodb_port,
            log_path=self.paths["log"],
            pid_path=self.paths["pid"],
        ).start()
        self._line(
            "DynamoDB Local",
            f"{self.dynamodb.endpoint} (data in {_shown(self.paths['dynamodb'])}, "
            f"up in {time.monotonic() - started:.1f} s)",
        )

    def _start_sweeper(self, idle_minutes: int) -> None:
        """The scheduled idle-session sweep (EventBridge in AWS), on a timer."""
        from handlers import sweep_idle

        every = self.options.sweep_seconds

        def loop() -> None:
            while not self._stop_sweeping.wait(every):
                try:
                    sweep_idle.handler({}, LocalLambdaContext(function_name="sweep-idle"))
                except Exception as error:  # noqa: BLE001 - the next run tries again
                    log.warning("idle sweep failed: %s", error)
                self._wake_poller()  # the sessions it ended are consolidated at once

        self._stop_sweeping.clear()
        self._sweeper = threading.Thread(target=loop, name="idle-sweeper", daemon=True)
        self._sweeper.start()
        self._line(
            "idle sweeper", f"every {every:.0f} s, ends sessions idle over {idle_minutes} min"
        )

    def _warm(self) -> None:
        """Load the embedding model in this process too: the stream handlers embed."""
        try:
            warm_models()
        except Exception as error:  # noqa: BLE001 - the first real request reports it
            log.warning("could not load the embedding model: %s", error)

    def _line(self, part: str, text: str) -> None:
        self.echo(f"  {part:<17}{text}")


def _backfill_profile(client: Any, cfg: Any) -> None:
    """Records kept from a version before the profile block get their category, so that they
    join it (scripts/backfill_profile.py; a deployment runs that command once)."""
    from chatmemory import wiring
    from scripts.backfill_profile import backfill

    for _ in backfill(client, cfg.records_table, wiring.short_term_memory(cfg)):
        pass


def _mapping_summary(poller: StreamPoller) -> str:
    """Every stream the poller reads (schema.STREAM_TRIGGERS, as deployed) and what it runs:
    "sessions -> consolidate, purge-session; conversations -> compact; ..."."""
    by_table: dict[str, list[str]] = {}
    for mapping in poller.mappings:
        by_table.setdefault(mapping.table, []).append(mapping.name)
    return "; ".join(f"{table} -> {', '.join(names)}" for table, names in by_table.items())


def quiet_warnings() -> None:
    """Powertools warns on every request that no metric was added; nothing is published here."""
    warnings.filterwarnings("ignore", message="No application metrics to publish")


def warm_models() -> None:
    """Load the offline embedding model now, so the first /past or search is not slow (in the
    stack's process and, through the gateway's worker setup, in each handler process)."""
    from chatmemory import wiring

    cfg = wiring.settings()
    if not _embeds_offline(cfg):
        return
    started = time.monotonic()
    deps = wiring.chat_deps()
    if deps.embedder is not None:
        deps.embedder.embed(["warm up"])
    log.info("embedding model ready in %.1f s", time.monotonic() - started)


def _embeds_offline(cfg: Any) -> bool:
    """Whether local mode embeds with an offline model (it does unless long-term memory is
    off or another backend embeds)."""
    return bool(cfg.embed_backend == "offline" and cfg.long_term_backend != "none")


def make_model_files(cfg: Any, echo: Callable[[str, str], None]) -> None:
    """On the first start, MiniLM's ONNX file (adapters/offline/onnx_encoder.py) is made here,
    once, in a child process, before the handler processes start: each of them and this process
    would otherwise make it at the same time, each loading torch to do it (about 700 MB a
    process instead of 250) and keeping it loaded until it stops. If the child fails, the
    processes make it as before, and the first request says what is missing."""
    from chatmemory.adapters.offline.embedder import MiniLMEmbedder, minilm_file_missing
    from chatmemory.providers import DEFAULT_OFFLINE_EMBEDDER

    model = cfg.embed_model_id or DEFAULT_OFFLINE_EMBEDDER
    if not _embeds_offline(cfg) or model != MiniLMEmbedder.name or not minilm_file_missing():
        return
    started = time.monotonic()
    make = "from chatmemory.adapters.offline.embedder import make_minilm_file; make_minilm_file()"
    done = subprocess.run([sys.executable, "-c", make], check=False).returncode == 0
    echo(
        "embedding model",
        f"{model} made for onnxruntime in {time.monotonic() - started:.1f} s (first start only)"
        if done
        else f"{model}: its ONNX file could not be made here; each process will try",
    )


def _shown(path: Path | str) -> str:
    """A path as the banner shows it: relative to the folder `make run` runs in when inside it
    (`.local/memory.sqlite3`), else whole."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _worker_setup(warm: bool) -> tuple[str, ...]:
    """What each gateway worker process runs once it has imported the chat handler."""
    return ("local.stack.quiet_warnings",) + (("local.stack.warm_models",) if warm else ())


def _handoff_line(cfg: Any, agents: tuple[str, ...]) -> str:
    """Who may act as an agent here, and where the hand-off events go."""
    who = ", ".join(agents) if agents else "nobody"
    if cfg.event_bus_name:
        where = f"EventBridge bus {cfg.event_bus_name}"
    else:
        where = _shown(cfg.events_file) if cfg.events_file else "nowhere (EVENTS_FILE unset)"
    return f"agents: {who} (X-User-Id); events to {where}"


def _models(cfg: Any) -> list[tuple[str, str]]:
    text = {
        "offline": "offline responder (no language model)",
        "openai": f"{cfg.text_model_id or '?'} at {cfg.openai_base_url}",
        "bedrock": f"Bedrock {cfg.text_model_id}",
        "sagemaker": f"SageMaker endpoint {cfg.text_endpoint}",
    }.get(cfg.text_backend, cfg.text_backend)
    embed = {
        "offline": "all-MiniLM-L6-v2 (offline)",
        "openai": f"{cfg.embed_model_id or '?'} at {cfg.openai_base_url}",
        "bedrock": f"Bedrock {cfg.embed_model_id or 'amazon.titan-embed-text-v2:0'}",
        "sagemaker": f"SageMaker endpoint {cfg.embed_endpoint}",
    }.get(cfg.embed_backend, cfg.embed_backend)
    index = cfg.long_term_backend
    if index == "embedded":
        index = f"embedded index in {_shown(cfg.memory_path)}"
    return [("text model", text), ("embedding model", embed), ("long-term memory", index)]
