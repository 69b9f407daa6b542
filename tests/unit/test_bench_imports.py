"""The benchmarks import much of the project inside their functions (so that `--help` and the
parts not run stay cheap); a name moved in the project then breaks a benchmark only when that
function runs, maybe an hour into a measurement. Every such import must resolve now."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _imports() -> list[tuple[str, str, str]]:
    found = []
    for path in sorted(BENCH.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and (node.module or "").split(".")[0] in ("chatmemory", "bench", "local")
            ):
                found += [(path.name, str(node.module), alias.name) for alias in node.names]
    return found


@pytest.mark.parametrize(("bench", "module", "name"), _imports())
def test_every_name_a_benchmark_imports_from_the_project_exists(
    bench: str, module: str, name: str
) -> None:
    imported = importlib.import_module(module)
    if name == "*" or hasattr(imported, name):
        return
    # `from package import module`: a submodule, found by importing it.
    importlib.import_module(f"{module}.{name}")
