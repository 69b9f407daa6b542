"""The examples of clients/python/README.md and of the project's README (its Integrations section)
run as written against local mode: every Python block that talks to http://127.0.0.1:8000 is run
against a test's local mode instead."""

from __future__ import annotations

import re
from pathlib import Path

# Imported here, not first inside an example: importing it installs a warnings filter of its
# own, which would then override the test's filter of its deprecation warning.
import langchain_core.runnables.history  # noqa: F401
import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
READMES = [ROOT / "clients" / "python" / "README.md", ROOT / "README.md"]
LOCAL = "http://127.0.0.1:8000"
BLOCKS = [
    (readme, block)
    for readme in READMES
    for block in re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    if LOCAL in block
]


def test_the_readmes_have_local_mode_examples() -> None:
    assert len([b for r, b in BLOCKS if r == READMES[0]]) >= 3
    assert len([b for r, b in BLOCKS if r == READMES[1]]) >= 3  # client, LangChain, LangGraph


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
@pytest.mark.parametrize(
    ("readme", "block"),
    BLOCKS,
    ids=[f"{r.parent.name}-block{n}" for n, (r, _) in enumerate(BLOCKS)],
)
def test_a_readme_example_runs_against_local_mode(world, readme: Path, block: str, capsys) -> None:
    code = compile(block.replace(LOCAL, world.url.rstrip("/")), str(readme), "exec")
    exec(code, {"__name__": "readme_example"})
    printed = capsys.readouterr().out
    for expected in re.findall(r"^# -> (.*)$", block, re.M):
        assert expected in printed
