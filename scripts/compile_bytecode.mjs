// Compile every module of a bundled Lambda asset to bytecode for the runtime's CPython.
//
//   node scripts/compile_bytecode.mjs ASSET_DIR PYTHON_VERSION
//   node scripts/compile_bytecode.mjs --check ASSET_DIR PYTHON_VERSION
//
// Lambda's /var/task is read-only, so a function whose asset ships no __pycache__ compiles
// every module it imports on every cold start. This machine's Python is not the runtime's, and
// bytecode is specific to a CPython minor version, so the compiler is Pyodide: CPython built to
// WebAssembly, from npm (package.json pins it). The .pyc files are hash-checked (PEP 552): the
// runtime uses one only while its source is unchanged, whatever the file times in the zip say,
// and compiles the source as before otherwise. The Python side is compile_bytecode.py.
//
// Prints one JSON line ({"python", "match", "modules", "failed"}); exits 2 when Pyodide's
// Python is not PYTHON_VERSION (its files would be ignored by the runtime: nothing is written),
// 1 when a module failed. --check writes nothing: it asks that interpreter's own import
// machinery for every module's code with compiling forbidden, so "failed" lists each module the
// runtime would have to compile (no bytecode, stale bytecode, or another version's).
import { loadPyodide } from "pyodide";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const args = process.argv.slice(2);
const check = args[0] === "--check";
const [assetDir, wanted] = check ? args.slice(1) : args;
if (!assetDir || !wanted) {
  console.error("usage: node scripts/compile_bytecode.mjs [--check] ASSET_DIR PYTHON_VERSION");
  process.exit(64);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const py = await loadPyodide();
py.FS.mkdirTree("/asset");
py.FS.mount(py.FS.filesystems.NODEFS, { root: path.resolve(assetDir) }, "/asset");
py.globals.set("WANTED", wanted);
py.globals.set("CHECK", check);
const report = JSON.parse(py.runPython(readFileSync(path.join(here, "compile_bytecode.py"), "utf8")));
console.log(JSON.stringify(report));
process.exit(!report.match ? 2 : report.failed.length ? 1 : 0);
