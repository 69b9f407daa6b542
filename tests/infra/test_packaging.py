"""The Lambda asset: local bundling without Docker, and nothing the runtime or layer provides.

pip itself is not run here (it needs the package index); `make synth` runs the real bundling.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from stacks import packaging


def _fake_distribution(target: Path, project: str, version: str, files: list[str]) -> None:
    dist_info = target / f"{project.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir(parents=True)
    records = []
    for relative in files:
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# installed\n")
        records.append(f"{relative},sha256=x,1")
    (dist_info / "METADATA").write_text(f"Name: {project}\nVersion: {version}\n")
    records += [f"{dist_info.name}/METADATA,,", f"{dist_info.name}/RECORD,,"]
    (dist_info / "RECORD").write_text("\n".join(records) + "\n")


def test_prune_removes_what_the_runtime_and_layer_provide_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    _fake_distribution(tmp_path, "boto3", "1.40.0", ["boto3/__init__.py"])
    _fake_distribution(tmp_path, "python-dateutil", "4.0.0", ["dateutil/__init__.py"])
    _fake_distribution(
        tmp_path, "aws-lambda-powertools", "3.1.0", ["aws_lambda_powertools/__init__.py"]
    )
    _fake_distribution(tmp_path, "grpcio", "1.70.0", ["grpc/__init__.py", "grpc/_cython/x.so"])
    _fake_distribution(tmp_path, "opensearch-py", "3.2.0", ["opensearchpy/__init__.py"])
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "normalizer").write_text("#!/bin/sh\n")
    (tmp_path / "opensearchpy" / "__pycache__").mkdir()
    (tmp_path / "opensearchpy" / "__pycache__" / "x.pyc").write_bytes(b"")

    removed = packaging.prune(tmp_path)

    assert sorted(removed) == ["aws-lambda-powertools", "boto3", "grpcio", "python-dateutil"]
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["opensearch_py-3.2.0.dist-info", "opensearchpy"]
    kept = tmp_path / "opensearch_py-3.2.0.dist-info"
    assert sorted(p.name for p in kept.iterdir()) == ["METADATA"]
    assert not list(tmp_path.rglob("__pycache__"))


def test_sources_are_copied_without_caches(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "handlers" / "__pycache__").mkdir(parents=True)
    (source / "handlers" / "chat_api.py").write_text("x = 1\n")
    (source / "handlers" / "__pycache__" / "chat_api.cpython-311.pyc").write_bytes(b"")
    (source / ".pytest_cache").mkdir()
    target = tmp_path / "out"
    packaging.copy_sources(source, target)
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*")) == [
        "handlers",
        "handlers/chat_api.py",
    ]


def test_the_long_term_adapter_imports_without_the_pruned_packages() -> None:
    """What prune() drops as declared-but-unused must really be unused."""
    blocked = {"grpc", "google", "opensearch", "opensearch_protobufs", "tzdata"}
    script = textwrap.dedent(
        f"""
        import importlib.abc, sys
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name.split(".")[0] in {sorted(blocked)!r}:
                    raise ImportError("pruned from the asset: " + name)
        sys.meta_path.insert(0, Block())
        from chatmemory.adapters.opensearch import OpenSearchLongTermIndex, opensearch_client
        from chatmemory.adapters.opensearch_security import OpenSearchSecurity
        client = opensearch_client("search-x.us-east-1.es.amazonaws.com", "us-east-1",
                                   serverless=False)
        OpenSearchLongTermIndex(client, dimension=8)
        OpenSearchSecurity(client)
        import handlers.index_setup
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=packaging.SOURCE_DIR,
        capture_output=True,
        text=True,
        env={"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y", "PATH": "/usr/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_bytecode_is_compiled_for_the_runtime_and_used_only_while_its_source_is_unchanged(
    tmp_path: Path,
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    module = tmp_path / "pkg" / "mod.py"
    module.write_text("def f():\n    return 1\n")
    assert packaging.compile_bytecode(tmp_path, check=True)["failed"] == [
        "would compile pkg/__init__.py",
        "would compile pkg/mod.py",
    ]

    compiled = packaging.compile_bytecode(tmp_path)

    assert (compiled["modules"], compiled["failed"]) == (2, [])
    assert (tmp_path / "pkg" / "__pycache__" / "mod.cpython-312.pyc").is_file()
    assert packaging.compile_bytecode(tmp_path, check=True)["failed"] == []
    module.write_text("def f():\n    return 2\n")  # same size and time would not matter
    assert packaging.compile_bytecode(tmp_path, check=True)["failed"] == [
        "would compile pkg/mod.py"
    ]


def test_a_runtime_newer_than_the_bytecode_compiler_stops_the_synth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(packaging, "PYTHON_VERSION", "3.13")
    (tmp_path / "m.py").write_text("x = 1\n")

    with pytest.raises(packaging.BundlingError, match="the runtime's 3.13"):
        packaging.compile_bytecode(tmp_path)
    assert not list(tmp_path.rglob("*.pyc"))


def test_a_pip_failure_stops_the_synth_instead_of_falling_back_to_docker(tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("--no-such-pip-option\n")
    source = tmp_path / "src"
    source.mkdir()
    (source / "handler.py").write_text("x = 1\n")
    bundler = packaging.LocalPipBundling(source=source, requirements=requirements)
    with pytest.raises(packaging.BundlingError, match="pip could not install"):
        bundler.try_bundle(str(tmp_path / "out"))


def test_pip_targets_the_lambda_platform_with_binary_wheels_only(tmp_path: Path) -> None:
    command = packaging.pip_install_command(Path("requirements.txt"), tmp_path)
    joined = " ".join(command)
    assert "--platform manylinux2014_aarch64" in joined
    assert "--python-version 3.12" in joined
    assert "--only-binary=:all:" in command
    assert f"--target {tmp_path}" in joined


def test_requirements_do_not_ship_boto3_or_powertools() -> None:
    lines = [
        line.split("#", 1)[0].strip() for line in packaging.REQUIREMENTS.read_text().splitlines()
    ]
    names = {
        packaging._normalize(line.split("<")[0].split(">")[0].split("=")[0])
        for line in lines
        if line
    }
    assert not names & {packaging._normalize(n) for n in packaging.PRUNED}


def _synthesized_bundles() -> list[Path]:
    """The app's Lambda asset(s) of the last `make synth` (it runs before pytest in `make
    test`): the code of the functions running `handlers.*`, not CDK's own (the custom-resource
    framework's)."""
    out = packaging.ROOT / "cdk.out"
    keys = {
        resource["Properties"]["Code"]["S3Key"]
        for template in out.glob("*.template.json")
        for resource in json.loads(template.read_text())["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
        and resource["Properties"]["Handler"].startswith("handlers.")
    }
    bundles = []
    for manifest in out.glob("*.assets.json"):
        for asset_hash, asset in json.loads(manifest.read_text())["files"].items():
            path = out / asset["source"]["path"]
            if f"{asset_hash}.zip" in keys and path.is_dir():
                bundles.append(path)
    return bundles


@pytest.mark.skipif(not _synthesized_bundles(), reason="no cdk.out from `make synth` yet")
def test_the_bundle_of_make_synth_has_the_code_and_nothing_the_runtime_or_layer_provides() -> None:
    for bundle in _synthesized_bundles():
        top = {p.name for p in bundle.iterdir()}
        assert {"chatmemory", "handlers", "opensearchpy"} <= top
        for name in ("boto3", "botocore", "aws_lambda_powertools", "pydantic", "grpc", "google"):
            assert name not in top, name
        assert (bundle / "handlers" / "index_setup.py").is_file()


@pytest.mark.skipif(not _synthesized_bundles(), reason="no cdk.out from `make synth` yet")
def test_the_runtime_compiles_no_module_of_the_bundle_on_a_cold_start() -> None:
    # Asked of CPython 3.12's own import machinery (in Pyodide), compiling forbidden.
    for bundle in _synthesized_bundles():
        report = packaging.compile_bytecode(bundle, check=True)

        assert (report["python"][:4], report["failed"]) == ("3.12", [])
        assert report["modules"] == len(list(bundle.rglob("*.py"))) > 200
        only_runtime = {p.name.split(".", 1)[1] for p in bundle.rglob("*.pyc")}
        assert only_runtime == {"cpython-312.pyc"}
