"""`make run`: the whole system on this machine, with its web page on http://127.0.0.1:8000.

Starts DynamoDB Local (data under .local/), the stream poller, the idle sweeper and the HTTP
gateway in front of the chat handler, which runs in `--workers` processes (2: requests run at
once, as on several Lambda instances); Ctrl-C (or SIGTERM) stops everything it started.
Environment variables set before it win over the local defaults, e.g. Ollama:
`TEXT_BACKEND=openai OPENAI_BASE_URL=http://127.0.0.1:11434/v1 TEXT_MODEL_ID=llama3 make run`.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from pathlib import Path

from chatmemory import schema
from local.config import (
    API_HOST,
    API_PORT,
    DEFAULT_AGENTS,
    DYNAMODB_PORT,
    STATE_DIR,
    apply_local_defaults,
)
from local.dynamodb_local import LocalModeError


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m local.run", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default=API_HOST, help="address of the page and API")
    parser.add_argument("--port", type=int, default=API_PORT, help="port of the page and API")
    parser.add_argument("--dynamodb-port", type=int, default=DYNAMODB_PORT)
    parser.add_argument("--state-dir", type=Path, default=STATE_DIR, help="where data is kept")
    parser.add_argument(
        "--sweep-seconds", type=float, default=60.0, help="how often idle sessions are ended"
    )
    parser.add_argument(
        "--workers",
        type=_positive_int,
        default=2,
        help="chat handler processes, each one request at a time like a Lambda instance "
        "(1: in this process, one request at a time)",
    )
    parser.add_argument(
        "--agents",
        type=_user_ids,
        default=",".join(DEFAULT_AGENTS),
        help="comma-separated X-User-Id callers who are agents (hand-off to a person; "
        f"default: {','.join(DEFAULT_AGENTS)}; empty: none)",
    )
    parser.add_argument("--verbose", action="store_true", help="log requests and handler logs")
    return parser.parse_args(argv)


def _user_ids(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    if args.verbose:
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "INFO")
    # An endpoint set by the user means their own DynamoDB (Local): do not start one.
    external = os.environ.get(schema.ENV_DYNAMODB_ENDPOINT) or None
    apply_local_defaults(dynamodb_port=args.dynamodb_port, state_dir=args.state_dir)

    from local.stack import LocalStack, StackOptions, quiet_warnings

    stop = StopRequest()
    # SIGTERM (kill) and SIGHUP (the terminal closed) stop as cleanly as Ctrl-C does.
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, stop)
    quiet_warnings()
    print("chat memory, local mode")
    started = time.monotonic()
    stack = LocalStack(
        StackOptions(
            state_dir=args.state_dir,
            api_host=args.host,
            api_port=args.port,
            dynamodb_port=args.dynamodb_port,
            external_dynamodb=external,
            sweep_seconds=args.sweep_seconds,
            workers=args.workers,
            agents=args.agents,
        ),
        echo=lambda line: print(line, flush=True),
    )
    try:
        stack.start()
    except (LocalModeError, OSError) as error:
        print(f"local mode could not start: {_explain(error, args)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    # Ctrl-C too, even when started in the background with SIGINT ignored (as by `cmd &`).
    signal.signal(signal.SIGINT, stop)
    print(f"ready in {time.monotonic() - started:.1f} s: open {_page_url(args)}  (Ctrl-C stops)")
    sys.stdout.flush()
    while not stop.requested:
        time.sleep(0.2)  # a signal cuts it short; its handler only sets the flag
    print("\nstopping...", flush=True)
    stack.stop()
    print("stopped", flush=True)
    return 0


class StopRequest:
    """The signal handler that asks local mode to stop, and whether one did. A Python handler
    runs in the main thread between two of its bytecodes, possibly inside a lock the main thread
    holds: threading.Event.wait holds its condition's lock while it checks, so a handler calling
    Event.set() waited for that lock forever (1 stop in 6 hung, the worker processes and
    DynamoDB Local left running). Setting an attribute takes no lock."""

    def __init__(self) -> None:
        self.requested = False

    def __call__(self, signum: int, frame: object) -> None:
        self.requested = True


def _page_url(args: argparse.Namespace) -> str:
    # On every address (0.0.0.0) the page is opened through loopback: the gateway refuses a
    # Host header it was not started on, and 0.0.0.0 is no host name.
    host = "127.0.0.1" if args.host in ("", "0.0.0.0", "::") else args.host
    return f"http://{host}:{args.port}/"


def _explain(error: Exception, args: argparse.Namespace) -> str:
    if isinstance(error, OSError) and error.errno in (98, 48):  # EADDRINUSE (Linux, macOS)
        return f"port {args.port} is in use (another `make run`?); try --port"
    return str(error)


if __name__ == "__main__":
    sys.exit(main())
