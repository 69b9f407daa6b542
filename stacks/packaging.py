"""The one Lambda asset: lambdas/ plus its few runtime dependencies, bundled locally (no Docker).

pip installs requirements.txt for the Lambda platform (`--platform manylinux2014_aarch64
--only-binary=:all:`) into the asset. Distributions that the Lambda runtime or the Powertools
layer already provide, and ones that are declared but never imported, are removed again, so the
asset holds only what the code needs and never shadows the runtime's boto3 or the layer's
Powertools with other versions. Then every module is compiled to hash-checked bytecode for the
runtime's CPython (by Pyodide, `scripts/compile_bytecode.mjs`): /var/task is read-only, so an
asset without it compiles every module it imports on every cold start.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

from stacks.config import PIP_PLATFORM, PYTHON_VERSION

ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIR = ROOT / "lambdas"
REQUIREMENTS = ROOT / "requirements.txt"
BYTECODE_SCRIPTS = (
    ROOT / "scripts" / "compile_bytecode.mjs",
    ROOT / "scripts" / "compile_bytecode.py",
)

# Never part of the asset's own code.
SOURCE_EXCLUDES = ("__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", ".ruff_cache", "tests")

# Distributions removed after pip, by project name, with the reason.
# boto3 and its dependencies ship with the Lambda Python runtime; a second copy in /var/task
# would shadow them (botocore pins python-dateutil<3, pip alone would pick a newer one).
PROVIDED_BY_RUNTIME = (
    "boto3",
    "botocore",
    "s3transfer",
    "jmespath",
    "urllib3",
    "python-dateutil",
    "six",
)
# Powertools for AWS Lambda comes from AWS's public layer, with pydantic (and its
# typing-extensions). The layer also ships the X-Ray SDK, which no handler imports any more.
PROVIDED_BY_LAYER = (
    "aws-lambda-powertools",
    "pydantic",
    "pydantic-core",
    "annotated-types",
    "typing-inspection",
    "typing-extensions",
)
# opensearch-py 3 declares its gRPC transport's packages, which its HTTP client (the one the
# adapter uses) never imports; tzdata only serves python-dateutil 4, removed above.
# tests/infra/test_packaging.py imports opensearchpy with these blocked.
DECLARED_BUT_UNUSED = (
    "opensearch-protobufs",
    "grpcio",
    "protobuf",
    "tzdata",
)
PRUNED = PROVIDED_BY_RUNTIME + PROVIDED_BY_LAYER + DECLARED_BUT_UNUSED


class BundlingError(RuntimeError):
    """Local bundling failed; CDK must not fall back to Docker."""


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def copy_sources(source: Path, target: Path) -> None:
    """Copy the runtime package and handlers, without caches or tests."""
    shutil.copytree(
        source, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*SOURCE_EXCLUDES)
    )


def prune(target: Path, distributions: Iterable[str] = PRUNED) -> list[str]:
    """Remove whole installed distributions (every file their RECORD lists); returns the names
    removed. Also drops console scripts, bytecode caches and installer records."""
    wanted = {_normalize(name) for name in distributions}
    removed: list[str] = []
    for dist_info in sorted(target.glob("*.dist-info")):
        project = _normalize(dist_info.name[: -len(".dist-info")].rsplit("-", 1)[0])
        if project not in wanted:
            continue
        record = dist_info / "RECORD"
        lines = record.read_text().splitlines() if record.exists() else []
        for line in lines:
            relative = line.split(",", 1)[0]
            path = (target / relative).resolve()
            if path.is_relative_to(target.resolve()) and path.is_file():
                path.unlink()
        shutil.rmtree(dist_info, ignore_errors=True)
        removed.append(project)
    shutil.rmtree(target / "bin", ignore_errors=True)
    # Installer bookkeeping nobody reads at run time; METADATA (importlib.metadata) and the
    # licenses of the redistributed packages stay.
    for dist_info in target.glob("*.dist-info"):
        for name in ("RECORD", "INSTALLER", "REQUESTED", "WHEEL"):
            (dist_info / name).unlink(missing_ok=True)
    for cache in list(target.rglob("__pycache__")):
        shutil.rmtree(cache, ignore_errors=True)
    _remove_empty_dirs(target)
    return removed


def _remove_empty_dirs(root: Path) -> None:
    for directory in sorted((p for p in root.rglob("*") if p.is_dir()), reverse=True):
        if not any(directory.iterdir()):
            directory.rmdir()


def pip_install_command(requirements: Path, target: Path) -> list[str]:
    """pip for the Lambda platform, binary wheels only (no compiler, no Docker)."""
    return [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",
        "--requirement",
        str(requirements),
        "--target",
        str(target),
        "--platform",
        PIP_PLATFORM,
        "--implementation",
        "cp",
        "--python-version",
        PYTHON_VERSION,
        "--only-binary=:all:",
    ]


@jsii.implements(ILocalBundling)
class LocalPipBundling:
    """ILocalBundling that copies lambdas/ and pip-installs requirements.txt on this machine.

    It never returns False: a failure raises, because False would make CDK try Docker."""

    def __init__(self, source: Path = SOURCE_DIR, requirements: Path = REQUIREMENTS) -> None:
        self._source = source
        self._requirements = requirements

    def try_bundle(self, output_dir: str, *args: Any, **kwargs: Any) -> bool:
        target = Path(output_dir)
        copy_sources(self._source, target)
        done = subprocess.run(
            pip_install_command(self._requirements, target),
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise BundlingError(
                "pip could not install the Lambda dependencies for "
                f"{PIP_PLATFORM} / Python {PYTHON_VERSION}:\n{done.stderr.strip()}"
            )
        prune(target)
        compile_bytecode(target)
        return True


def bytecode_command(target: Path, *, check: bool = False) -> list[str]:
    node = shutil.which("node") or "node"
    return [
        node,
        str(BYTECODE_SCRIPTS[0]),
        *(["--check"] if check else []),
        str(target),
        PYTHON_VERSION,
    ]


def compile_bytecode(target: Path, *, check: bool = False) -> dict[str, Any]:
    """Compile every module under `target` for the runtime's Python (`check`: write nothing,
    report each module the runtime would still have to compile). Raises BundlingError when
    Node.js or Pyodide is missing, or Pyodide's Python is not the runtime's."""
    done = subprocess.run(
        bytecode_command(target, check=check),
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    lines = done.stdout.strip().splitlines()
    try:
        report: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        report = {}
    if done.returncode == 2:
        raise BundlingError(
            f"Pyodide's Python is {report.get('python')}, the runtime's {PYTHON_VERSION}: "
            "pin a pyodide in package.json whose Python is the runtime's"
        )
    if not report or (done.returncode != 0 and not check):
        raise BundlingError(
            "could not compile the asset's bytecode (Node.js and `npm ci` are needed: "
            f"`make node`):\n{done.stderr.strip() or done.stdout.strip()}"
        )
    return report


def lambda_code() -> lambda_.Code:
    """The shared asset of every function. Its hash covers the sources, requirements.txt and the
    target platform, so a changed requirement re-bundles; an unchanged one reuses cdk.out."""
    return lambda_.Code.from_asset(
        str(SOURCE_DIR),
        asset_hash_type=AssetHashType.SOURCE,
        exclude=list(SOURCE_EXCLUDES),
        bundling=BundlingOptions(
            # Only used if local bundling declined, which LocalPipBundling never does.
            image=DockerImage.from_registry("local-bundling-only"),
            local=LocalPipBundling(),
            # Bundling options are part of the asset hash: this puts the dependencies in it.
            environment={"DEPENDENCIES_SHA256": _dependency_fingerprint()},
        ),
    )


def _dependency_fingerprint() -> str:
    digest = hashlib.sha256(REQUIREMENTS.read_bytes())
    digest.update(f"{PIP_PLATFORM}/{PYTHON_VERSION}".encode())
    # This module and the bytecode compiler decide what the bundle holds: a change re-bundles.
    digest.update(Path(__file__).read_bytes())
    for script in BYTECODE_SCRIPTS:
        digest.update(script.read_bytes())
    digest.update(
        json.loads((ROOT / "package.json").read_text())["devDependencies"]["pyodide"].encode()
    )
    return digest.hexdigest()
