"""The client builds as a wheel (chatmemory-client 0.1.0) holding every module of the package,
with requests as its only dependency and the integrations' dependencies as extras; importing it
loads none of them."""

from __future__ import annotations

import email.parser
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(CLIENT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("*.whl")
    return built


def test_the_wheel_is_chatmemory_client_0_1_0_for_any_python_3(wheel: Path) -> None:
    assert wheel.name == "chatmemory_client-0.1.0-py3-none-any.whl"


def test_the_wheel_holds_every_module_of_the_package(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    package = CLIENT / "chatmemory_client"
    sources = {
        path.relative_to(CLIENT).as_posix()
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert {
        "chatmemory_client/client.py",
        "chatmemory_client/langchain.py",
        "chatmemory_client/py.typed",
    } <= sources
    assert sources <= names
    assert not any("__pycache__" in name or name.startswith("tests/") for name in names)


def test_requests_is_the_only_dependency_and_integrations_are_extras(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read("chatmemory_client-0.1.0.dist-info/METADATA").decode()
    metadata = email.parser.Parser().parsestr(text)
    assert metadata["Name"] == "chatmemory-client"
    assert metadata["Requires-Python"] == ">=3.10"
    assert set(metadata.get_all("Provides-Extra")) == {"iam", "langchain", "langgraph", "mcp"}
    required = metadata.get_all("Requires-Dist")
    assert [r for r in required if "extra ==" not in r] == ["requests<3,>=2.28"]
    for extra, package in [
        ("iam", "botocore"),
        ("langchain", "langchain-core"),
        ("langgraph", "langgraph"),
        ("mcp", "mcp"),
    ]:
        assert any(r.startswith(package) and f"extra == '{extra}'" in r for r in required), extra


def test_importing_the_client_loads_no_optional_dependency() -> None:
    check = (
        "import sys, chatmemory_client; "
        "loaded = {'botocore', 'langchain_core', 'langgraph', 'mcp'} & set(sys.modules); "
        "sys.exit(', '.join(sorted(loaded)) or None)"
    )
    subprocess.run([sys.executable, "-c", check], check=True, timeout=60)
