"""Size measures of the code (`python -m scripts.code_measures [PATH ...]`, default lambdas/):
modules longer than 700 lines and functions longer than 60, the limits issue 45 set.

A module's length is its number of lines; a function's, the lines from its `def` to its last
statement (its decorators not counted; its docstring, comments and nested functions counted).
Every function is measured, methods and nested functions too. `--check` exits with 1 when
anything is over a limit, so the measure can guard a tree that meets it.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULE_LINES = 700
FUNCTION_LINES = 60


@dataclass(frozen=True)
class Function:
    path: Path
    name: str  # qualified: Class.method, outer.inner
    line: int
    lines: int


def python_files(paths: list[Path]) -> Iterator[Path]:
    """The .py files under `paths` (files themselves, or folders searched), sorted."""
    for path in paths:
        if path.is_file():
            yield path
        else:
            yield from sorted(p for p in path.rglob("*.py") if "__pycache__" not in p.parts)


def functions(path: Path) -> Iterator[Function]:
    """Every function and method defined in the module at `path`, with its length."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))

    def walk(node: ast.AST, prefix: str) -> Iterator[Function]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + child.name
                end = child.end_lineno or child.lineno
                yield Function(path, name, child.lineno, end - child.lineno + 1)
                yield from walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, prefix + child.name + ".")
            else:
                yield from walk(child, prefix)

    yield from walk(tree, "")


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[ROOT / "lambdas"])
    parser.add_argument("--module-lines", type=int, default=MODULE_LINES)
    parser.add_argument("--function-lines", type=int, default=FUNCTION_LINES)
    parser.add_argument("--check", action="store_true", help="exit 1 when over a limit")
    args = parser.parse_args(argv)

    files = list(python_files(args.paths))
    long_modules = [(line_count(p), p) for p in files]
    long_modules = sorted((n, p) for n, p in long_modules if n > args.module_lines)
    long_functions = sorted(
        (f for p in files for f in functions(p) if f.lines > args.function_lines),
        key=lambda f: (-f.lines, _shown(f.path), f.line),
    )
    print(f"modules over {args.module_lines} lines: {len(long_modules)}")
    for count, path in sorted(long_modules, reverse=True):
        print(f"  {count:5d}  {_shown(path)}")
    print(f"functions over {args.function_lines} lines: {len(long_functions)}")
    for function in long_functions:
        print(f"  {function.lines:5d}  {_shown(function.path)}:{function.line}  {function.name}")
    total = sum(1 for p in files for _ in functions(p))
    print(f"({len(files)} modules, {total} functions measured)")
    return 1 if args.check and (long_modules or long_functions) else 0


if __name__ == "__main__":
    sys.exit(main())
