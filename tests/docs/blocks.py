"""The code blocks of the docs: README.md and every page of docs/ (with the files a page includes
with `--8<--`), each with what the suite does with it (tests/docs/test_docs_code_blocks.py).

A block a user would paste runs, unless the line right before it says why not:
`<!-- not run: deploys to AWS (...) -->`. Blocks of output, layouts and diagrams are `text` or
`mermaid`; a block without a language is an error, so that nothing is skipped silently. The
files a page includes from outside docs/ (the client's README, also its PyPI page) carry no
markers: their blocks that cannot run are listed below, and none of their shell blocks runs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
# Local mode's address as the pages write it; the tests put their own local mode's there.
LOCAL = "http://127.0.0.1:8000"

RUN = {"python": "python", "bash": "shell", "sh": "shell", "shell": "shell"}
CHECKED = {"json"}  # parsed, and what it names checked (no program to run)
NOT_CODE = {"text", "mermaid"}  # output, layouts, formulas, diagrams

# Files included from outside docs/ that this project does not mark up itself (the client's
# README is also its PyPI page): a block of theirs that cannot run, found by a line it holds.
INCLUDED_NOT_RUN = {
    ("clients/python/README.md", "pip install ./clients/python"): (
        "installs into the environment it runs in; `make venv` installs the client editable "
        "with every extra, and tests/client/test_client_package.py builds and checks the wheel"
    ),
    ("clients/python/README.md", "execute-api"): (
        "needs a deployed stack and a Cognito token or AWS credentials; "
        "tests/client/test_client_sigv4.py checks the signing"
    ),
    ("clients/python/README.md", "python -m venv ~/.chatmemory"): (
        "creates a virtual environment in your home folder; the MCP server itself runs in "
        "tests/client/test_mcp_server.py"
    ),
    ("clients/python/README.md", ".venv/bin/python -m pytest -q tests/client"): (
        "runs the client's tests, which `make test` runs anyway"
    ),
}

_FENCE = re.compile(r"^(?P<indent> *)(?P<ticks>`{3,})(?P<info>[^`]*)$")
_NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<why>.*?)\s*-->\s*$", re.S)
_INCLUDE = re.compile(r'^\s*--8<--\s+"(?P<path>[^"]+)"\s*$')


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is written, its language, its code and why it is not run."""

    path: Path
    line: int
    lang: str
    code: str
    not_run: str | None
    included: bool = False  # written in a file outside docs/ that a page includes

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"

    @property
    def kind(self) -> str:
        """run-python, run-shell, not-run, checked or not-code (anything else is an error)."""
        if self.lang in NOT_CODE:
            return "not-code"
        if self.not_run:
            return "not-run"
        if self.lang in CHECKED:
            return "checked"
        if self.lang in RUN and self.included and RUN[self.lang] == "shell":
            # Never run a command nobody here has read (it could install or delete): an
            # included file's shell blocks are listed in INCLUDED_NOT_RUN, or fail here.
            return "a shell block of an included file, not in INCLUDED_NOT_RUN"
        if self.lang in RUN:
            return f"run-{RUN[self.lang]}"
        return f"unknown language {self.lang!r}"


def pages() -> list[Path]:
    """README.md and the site's pages (docs/notes/ is not part of the site)."""
    found = [p for p in sorted(DOCS.rglob("*.md")) if "notes" not in p.relative_to(DOCS).parts]
    return [ROOT / "README.md", *found]


def _marker(lines: list[str], fence: int) -> str | None:
    """The reason of a `<!-- not run: ... -->` comment ending on the line before `fence`."""
    end = fence - 1
    if end < 0 or not lines[end].strip().endswith("-->"):
        return None
    start = end
    while start > 0 and "<!--" not in lines[start]:
        start -= 1
    found = _NOT_RUN.search("\n".join(lines[start : end + 1]))
    return " ".join(found.group("why").split()) if found else None


def blocks_of(path: Path, seen: set[Path] | None = None, included: bool = False) -> list[Block]:
    """The blocks of one file, then those of the files it includes."""
    seen = set() if seen is None else seen
    seen.add(path)
    lines = path.read_text().split("\n")
    found: list[Block] = []
    included: list[Path] = []
    i = 0
    while i < len(lines):
        include = _INCLUDE.match(lines[i])
        if include:
            included.append(ROOT / include.group("path"))
        opened = _FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        indent, ticks = opened.group("indent"), opened.group("ticks")
        info = opened.group("info").strip().strip("{}").lstrip(".")
        end = i + 1
        while end < len(lines) and lines[end].rstrip() != indent + ticks:
            end += 1
        code = "\n".join(line[len(indent) :] for line in lines[i + 1 : end]) + "\n"
        reason = _marker(lines, i)
        rel = path.relative_to(ROOT).as_posix()
        for (where, holds), why in INCLUDED_NOT_RUN.items():
            if where == rel and holds in code:
                reason = why
        lang = info.split()[0] if info else ""
        found.append(Block(path, i + 1, lang, code, reason, included))
        i = end + 1
    for other in included:
        if other not in seen:
            found += blocks_of(other, seen, included=True)
    return found


def every_block() -> list[Block]:
    seen: set[Path] = set()
    found: list[Block] = []
    for page in pages():
        if page not in seen:
            found += blocks_of(page, seen)
    return found


def expected_output(block: Block) -> list[str]:
    """What the block says it prints: its `# -> ...` lines."""
    return re.findall(r"^# -> (.*)$", block.code, re.M)
