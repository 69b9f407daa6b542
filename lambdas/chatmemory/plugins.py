"""Transforms a deployer plugs in by configuration, without forking (INPUT_TRANSFORMS,
OUTPUT_TRANSFORMS): each an import path, loaded once by the wiring.

An input transform is a function of a chat message's text that returns the text (a class is
made once, with no arguments, and called); the turn takes the message as they leave it
(services/conversation/turn/admit.py). An output transform makes the filter of one answer: it is
called with the prompt's `Roles` and returns an object with `feed(text) -> text` and
`finish() -> text` (services/prompt.OutputFilter); the answer's pieces pass through each in turn
as the model writes them (services/conversation/turn/generate.py), so a streamed and a buffered
answer are filtered alike. The built-in `ResponseFilter` is the default output transform.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from chatmemory.errors import ConfigurationError
from chatmemory.schema import ENV_INPUT_TRANSFORMS, ENV_OUTPUT_TRANSFORMS
from chatmemory.services.prompt import OutputFilter, Roles

InputTransform = Callable[[str], str]
OutputTransform = Callable[[Roles], OutputFilter]


def input_transforms(paths: Sequence[str]) -> tuple[InputTransform, ...]:
    """The input transforms of INPUT_TRANSFORMS, in order."""
    found = []
    for path in paths:
        transform = load(path, ENV_INPUT_TRANSFORMS)
        if isinstance(transform, type):
            transform = transform()
        _callable(transform, path, ENV_INPUT_TRANSFORMS)
        found.append(transform)
    return tuple(found)


def output_transforms(paths: Sequence[str]) -> tuple[OutputTransform, ...]:
    """The makers of the output filters of OUTPUT_TRANSFORMS, in order."""
    found = []
    for path in paths:
        maker = load(path, ENV_OUTPUT_TRANSFORMS)
        _callable(maker, path, ENV_OUTPUT_TRANSFORMS)
        found.append(maker)
    return tuple(found)


def load(path: str, variable: str) -> Any:
    """What `path` names ("package.module:Name" or "package.module.Name"); a path that does not
    import is the deployment's error, named with its variable."""
    module_name, _, name = path.partition(":") if ":" in path else path.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError, ValueError) as error:
        raise ConfigurationError(f"{variable}: {path} does not import ({error})") from error


def _callable(found: Any, path: str, variable: str) -> None:
    if not callable(found):
        raise ConfigurationError(f"{variable}: {path} is not callable")
