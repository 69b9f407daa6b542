"""Pages of the docs site generated from the code when the site is built (mkdocs-gen-files), so
that they cannot drift from it: the runtime's configuration from its settings model, the
HTTP API's reference from openapi.json (itself generated from the API's models), the turn's
state diagram from services/conversation/turn_states.py, and the turn pipeline's diagram on the
layout page from services/conversation/turn/pipeline.STAGES. It also puts Mermaid into the site
(from the npm package `mermaid` that `make node` installs), so that diagrams draw with no
internet. mkdocs.yml runs it (the gen-files plugin)."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Any

import mkdocs_gen_files

from chatmemory.services.conversation import turn_states
from chatmemory.services.conversation.turn import pipeline
from chatmemory.settings import ENV, Settings

ROOT = Path(__file__).resolve().parent.parent
# Mermaid's standalone build; mkdocs.yml loads it (extra_javascript) before Material's own
# script, which then uses it instead of fetching Mermaid from a CDN when a page is viewed.
MERMAID = ROOT / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
MERMAID_IN_SITE = "javascripts/mermaid.min.js"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _default(value: Any) -> str:
    if isinstance(value, Enum):
        value = value.value
    if value in (None, "", ()):
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, tuple):
        value = ",".join(value)
    return f"`{value}`"


def configuration_page() -> str:
    """The runtime's environment variables, from chatmemory.settings.Settings."""
    lines = [
        "# Configuration",
        "",
        "The Lambda functions (and local mode) read these environment variables, once, at cold",
        "start (`lambdas/chatmemory/settings.py`). The stack sets them from its settings",
        "([Deploy settings](../deploy/settings.md)); local mode sets the storage and model ones",
        "([Getting started](../getting-started.md)), and a variable set in the environment wins. A",
        "value that does not parse, or a backend that does not exist, is a configuration error",
        "naming the variable: logged, and answered 500 `configuration_error` (the deployment",
        "is wrong, not the request).",
        "",
        "This page is generated from the settings model when the site is built.",
        "",
        "| variable | default | meaning |",
        "| --- | --- | --- |",
    ]
    for name, field in Settings.fields().items():
        lines.append(
            f"| `{ENV[name]}` | {_cell(_default(field.default))} | {_cell(field.description)} |"
        )
    return "\n".join(lines) + "\n"


def _schema_name(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " or ".join(_schema_name(s) for s in schema["anyOf"])
    if schema.get("type") == "array":
        return f"list of {_schema_name(schema.get('items', {}))}"
    return str(schema.get("type", "object"))


def _link(name: str, schemas: dict[str, Any]) -> str:
    return f"[`{name}`](#{name.lower()})" if name in schemas else f"`{name}`"


def api_page() -> str:
    """Every route of openapi.json, then every schema, as Markdown."""
    document = json.loads((ROOT / "openapi.json").read_text())
    schemas: dict[str, Any] = document["components"]["schemas"]
    lines = [
        "# HTTP API reference",
        "",
        document["info"].get("description", ""),
        "",
        f"Generated from `openapi.json` (version {document['info']['version']}) when the site is",
        "built; the document itself comes from the API's models (`make openapi`). Every route",
        "needs the caller's identity: a Cognito ID token in `Authorization`, or a SigV4",
        "signature with `auth=iam` (in local mode, the `X-User-Id` header). The",
        "[API guide](../api/index.md) says what the routes do together.",
        "",
    ]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            lines += [
                f"## `{method.upper()} {path}`",
                "",
                f"**{operation.get('summary', '')}**",
                "",
            ]
            if operation.get("description"):
                lines += [operation["description"], ""]
            parameters = operation.get("parameters", [])
            if parameters:
                lines += [
                    "| parameter | in | type | required | meaning |",
                    "| --- | --- | --- | --- | --- |",
                ]
                for p in parameters:
                    kind = _cell(_schema_name(p.get("schema", {})))
                    required = "yes" if p.get("required") else "no"
                    meaning = _cell(p.get("description", ""))
                    lines.append(f"| `{p['name']}` | {p['in']} | {kind} | {required} | {meaning} |")
                lines.append("")
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body:
                name = _schema_name(body["schema"])
                lines += [f"Body: {_link(name, schemas)}", ""]
            lines += ["| status | meaning | body |", "| --- | --- | --- |"]
            for status, response in operation["responses"].items():
                content = response.get("content", {}).get("application/json", {})
                name = _schema_name(content["schema"]) if "schema" in content else ""
                lines.append(
                    f"| {status} | {_cell(response.get('description', ''))} | "
                    f"{_link(name, schemas) if name else ''} |"
                )
            lines.append("")
    lines += ["## Schemas", ""]
    for name, schema in sorted(schemas.items()):
        lines += [f"### {name}", ""]
        if schema.get("description"):
            lines += [_cell(schema["description"]), ""]
        properties = schema.get("properties", {})
        if properties:
            required = set(schema.get("required", []))
            lines += ["| field | type | required | meaning |", "| --- | --- | --- | --- |"]
            for field, spec in properties.items():
                kind = _schema_name(spec)
                lines.append(
                    f"| `{field}` | {_cell(kind)} | {'yes' if field in required else 'no'} | "
                    f"{_cell(spec.get('description', ''))} |"
                )
            lines.append("")
        elif "enum" in schema:
            lines += [", ".join(f"`{v}`" for v in schema["enum"]), ""]
    return "\n".join(lines) + "\n"


def turn_page() -> str:
    """The states of a turn and their transitions, from services/conversation/turn_states.py."""
    states = "\n".join(f"- `{state.value}`" for state in turn_states.TurnState)
    return f"""# The turn, a state machine

Generated from `lambdas/chatmemory/services/conversation/turn_states.py`, the one place that names a
turn's states and the transitions between them; `services/conversation/chat.post_message` and
stacking read a turn's state through it (`state_of`). A state is not stored as such: it follows from
the turn's flags (`pending`, `answered_by`, `answering_until`, `for_agent`, `origin`) and its
session's status.

The states:

{states}

```mermaid
{turn_states.mermaid()}
```

{turn_states.table()}
"""


# The line of docs/layout.md that the turn pipeline's diagram and table replace.
PIPELINE_MARKER = "<!-- the turn pipeline: made from pipeline.STAGES by scripts/docs_pages.py -->"


def pipeline_section() -> str:
    """The turn pipeline's stages: the diagram (pipeline.mermaid()) and a table of where each
    stage is, what it does and the transitions of a turn's state it causes."""
    rows = [
        "| stage | in services/conversation/turn/ | does | turn transitions it causes |",
        "| --- | --- | --- | --- |",
    ]
    for stage in pipeline.STAGES:
        caused = "; ".join(t.cause for t in stage.transitions) or "none"
        rows.append(f"| {stage.name} | {stage.module} | {_cell(stage.does)} | {_cell(caused)} |")
    return "```mermaid\n" + pipeline.mermaid() + "\n```\n\n" + "\n".join(rows) + "\n"


def layout_page(written: str) -> str:
    """docs/layout.md with the pipeline's section in place of its marker line."""
    if PIPELINE_MARKER not in written:
        raise SystemExit(f"docs/layout.md lost its marker line {PIPELINE_MARKER!r}")
    return written.replace(PIPELINE_MARKER, pipeline_section())


def mermaid_script() -> bytes:
    """Mermaid's standalone build from node_modules (fails the build when it is not there)."""
    if not MERMAID.is_file():
        raise SystemExit(
            f"{MERMAID.relative_to(ROOT)} is missing: run `make node` (npm ci), which installs "
            "the npm package mermaid; the site serves it itself instead of loading a CDN"
        )
    return MERMAID.read_bytes()


with mkdocs_gen_files.open(MERMAID_IN_SITE, "wb") as script:
    script.write(mermaid_script())
with mkdocs_gen_files.open("layout.md", "r") as page:
    written = page.read()
with mkdocs_gen_files.open("layout.md", "w") as page:
    page.write(layout_page(written))
with mkdocs_gen_files.open("concepts/turn-states.md", "w") as page:
    page.write(turn_page())
with mkdocs_gen_files.open("reference/configuration.md", "w") as page:
    page.write(configuration_page())
with mkdocs_gen_files.open("reference/http-api.md", "w") as page:
    page.write(api_page())
