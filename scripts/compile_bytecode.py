"""Run inside Pyodide by scripts/compile_bytecode.mjs (not by this machine's Python): compile
every module under /asset to hash-checked bytecode, or with CHECK set, ask the import machinery
for every module's code with compiling forbidden. WANTED (the runtime's "3.12") and CHECK are
set by the caller. The last expression is the JSON report."""

import compileall
import io
import json
import pathlib
import py_compile
import sys
from contextlib import redirect_stdout
from importlib.machinery import SourceFileLoader

ROOT = pathlib.Path("/asset")
# Set by compile_bytecode.mjs before it runs this file.
WANTED: str = globals()["WANTED"]
CHECK: bool = bool(globals()["CHECK"])


class NoCompiling(SourceFileLoader):
    """The runtime's loader, except that needing to compile a source is an error."""

    def source_to_code(self, data, path, *, _optimize=-1):  # type: ignore[no-untyped-def]
        raise ImportError(f"would compile {path}")


def compile_all() -> tuple[int, list[str]]:
    out = io.StringIO()
    with redirect_stdout(out):
        compileall.compile_dir(
            str(ROOT),
            quiet=1,
            workers=1,
            invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
        )
    failed = [line for line in out.getvalue().splitlines() if line.startswith("*** ")]
    tag = sys.implementation.cache_tag
    return sum(1 for _ in ROOT.rglob(f"*.{tag}.pyc")), failed


def check_all() -> tuple[int, list[str]]:
    loaded, failed = 0, []
    for source in sorted(ROOT.rglob("*.py")):
        try:
            NoCompiling(source.stem, str(source)).get_code(source.stem)
            loaded += 1
        except ImportError as error:
            failed.append(str(error).replace(str(ROOT) + "/", ""))
    return loaded, failed


have = f"{sys.version_info.major}.{sys.version_info.minor}"
count, failures = (0, []) if have != WANTED else check_all() if CHECK else compile_all()
json.dumps(
    {
        "python": sys.version.split()[0],
        "match": have == WANTED,
        "modules": count,
        "failed": failures,
    }
)
