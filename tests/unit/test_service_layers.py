"""The services' subpackages stay in one order: a module imports only from its own concern or
from one below it (imports inside functions included), so no concern needs another that needs
it back, and services import neither boto3, `os`, the adapters, the composition root nor the
API's models (the handlers turn a request into domain values: the service layer is below the
HTTP API, as the layering in docs/layout.md says)."""

from __future__ import annotations

import ast
from pathlib import Path

SERVICES = Path(__file__).resolve().parents[2] / "lambdas" / "chatmemory" / "services"
# Lowest first: the shared modules at the top of services/ (access, prompt), then each concern.
# background and conversation are both at the top and do not import each other.
LAYERS = {"": 0, "longterm": 1, "profile": 2, "background": 3, "conversation": 3}
FORBIDDEN = (
    "boto3",
    "botocore",
    "os",
    "chatmemory.adapters",
    "chatmemory.wiring",
    # Imported by services/conversation/sessions.py for the import's document until it took an
    # ImportedSession (domain.py) instead.
    "chatmemory.api_models",
)


def _concern(module: str) -> str:
    """The concern of a services module: its subpackage, or "" for the top of services/."""
    parts = module.split(".")[2:]  # after chatmemory.services
    return parts[0] if len(parts) > 1 else ""


def _imports() -> dict[str, set[str]]:
    """Every module of services/ and what it imports, at the top or inside a function."""
    found: dict[str, set[str]] = {}
    for path in sorted(SERVICES.rglob("*.py")):
        relative = path.relative_to(SERVICES.parents[1]).with_suffix("")
        module = ".".join(p for p in relative.parts if p != "__init__")
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
                # `from chatmemory.services.conversation import handoff` imports a module.
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
        found[module] = names
    return found


def test_every_concern_is_a_known_layer() -> None:
    concerns = {_concern(m) for m in _imports()}
    assert concerns == set(LAYERS), concerns


def test_a_service_imports_only_from_its_concern_or_a_lower_one() -> None:
    modules = _imports()
    upward = sorted(
        f"{module} -> {name}"
        for module, names in modules.items()
        for name in names
        if name in modules
        and _concern(name) != _concern(module)
        and LAYERS[_concern(name)] >= LAYERS[_concern(module)]
    )
    assert not upward, upward


def test_services_import_no_boto3_os_adapters_wiring_or_api_models() -> None:
    found = sorted(
        f"{module} -> {name}"
        for module, names in _imports().items()
        for name in names
        if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)
    )
    assert not found, found
