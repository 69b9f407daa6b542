"""Facts the docs state in prose and tables, held to the one place each comes from: the tables
(schema.TABLES), the stream triggers, the API's error statuses (openapi.json), the stack's
settings (stacks/config.py) and the cost figures (docs/cost.md's generated section, itself held
to `make cost` by tests/infra/test_cost.py). Each of these once drifted from its source."""

from __future__ import annotations

import json
import re
from dataclasses import fields

from chatmemory import schema
from stacks.config import Config, _camel
from tests.docs.blocks import DOCS, ROOT


def _section(text: str, heading: str) -> str:
    """The text under a Markdown heading, up to the next heading of any level."""
    start = text.index(heading + "\n")
    end = text.find("\n#", start + len(heading))
    return text[start : end if end >= 0 else len(text)]


def test_short_term_memory_lists_every_table() -> None:
    page = (DOCS / "concepts" / "short-term-memory.md").read_text()
    rows = re.findall(r"^\| `([a-z_]+)` \|", page, re.M)
    assert rows == [table.logical_name for table in schema.TABLES]
    words = {4: "Four", 5: "Five", 6: "Six"}
    assert f"{words[len(schema.TABLES)]} tables, defined once" in page


def test_getting_started_shows_the_tables_and_streams_make_run_prints() -> None:
    """The sample output of `make run`: its tables and what each stream runs, as local mode
    prints them (local/stack.py: table_names and _mapping_summary over schema.STREAM_TRIGGERS)."""
    page = (DOCS / "getting-started.md").read_text()
    tables = ", ".join(table.logical_name for table in schema.TABLES)
    assert f"  tables           {tables} (created)\n" in page
    by_table: dict[str, list[str]] = {}
    for trigger in schema.STREAM_TRIGGERS:
        by_table.setdefault(trigger.table.logical_name, []).append(trigger.name)
    streams = "; ".join(f"{table} -> {', '.join(names)}" for table, names in by_table.items())
    assert f"  stream poller    {streams} (checkpoints in" in page
    assert f"reads the streams of {_count(len(by_table))} tables" in page


def _count(n: int) -> str:
    return {3: "three", 4: "four", 5: "five"}[n]


def test_the_api_page_explains_every_error_status_openapi_declares() -> None:
    document = json.loads((ROOT / "openapi.json").read_text())
    declared = {
        int(status)
        for operations in document["paths"].values()
        for operation in operations.values()
        if isinstance(operation, dict)
        for status in operation.get("responses", {})
        if int(status) >= 400
    }
    errors = _section((DOCS / "api" / "index.md").read_text(), "## Errors")
    explained = {int(code) for code in re.findall(r"\b([45]\d\d)\b", errors)}
    assert declared <= explained, f"not explained under Errors: {sorted(declared - explained)}"


def test_the_settings_page_names_every_setting_of_the_stack() -> None:
    page = (DOCS / "deploy" / "settings.md").read_text()
    missing = [_camel(f.name) for f in fields(Config) if f"`{_camel(f.name)}`" not in page]
    assert not missing, f"docs/deploy/settings.md does not name {missing}"


def test_the_long_term_memory_page_quotes_the_cost_page() -> None:
    """Its comparison of the three long-term memory backends quotes, for each, the cost per 1,000
    turns of the configuration that uses it (the same at every load the cost page prices)."""
    rows = {}
    for line in (DOCS / "cost.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 6 and cells[0].startswith("`"):
            per_1000 = set(cells[4].split(" / "))
            assert len(per_1000) == 1, cells  # the page says it is the same at every load
            rows[cells[0].strip("`")] = per_1000.pop()
    page = (DOCS / "concepts" / "long-term-memory.md").read_text()
    [compared] = [line for line in page.splitlines() if line.startswith("| per 1,000 turns at")]
    quoted = [cell.strip() for cell in compared.strip("|").split("|")][1:]
    for cell, configuration in zip(
        quoted, ("bedrock", "bedrock-serverless-search", "serverless"), strict=True
    ):
        assert cell.startswith(rows[configuration]), (configuration, cell, rows[configuration])


def test_the_api_page_states_the_record_filters_bounds_as_the_schema_has_them() -> None:
    section = _section((DOCS / "api" / "index.md").read_text(), "## Filters of a record search")
    assert f"nesting deeper than {schema.MAX_RECORD_FILTER_DEPTH} levels" in section
    assert f"more than {schema.MAX_RECORD_FILTER_VALUES} keys and values" in section
