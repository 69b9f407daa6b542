"""Transforms a deployer plugs in through settings (INPUT_TRANSFORMS, OUTPUT_TRANSFORMS:
chatmemory/plugins.py): the custom ones below, named by their import paths, act on the buffered
and the streamed route alike, an output transform even on a word split across the model's
pieces."""

from __future__ import annotations

import re
from typing import Any

import pytest

from chatmemory import wiring
from chatmemory.errors import ConfigurationError
from chatmemory.plugins import output_transforms
from chatmemory.services.prompt import ResponseFilter, Roles
from tests.unit.test_streaming import ScriptedModel, World, _world

WORD = "banana"


def redact_numbers(text: str) -> str:
    """An input transform: digits never reach the store or the prompt."""
    return re.sub(r"\d", "#", text)


class NoBanana:
    """An output transform: WORD becomes "[fruit]", even split across pieces (a piece that
    ends with the start of it is held back until the next one tells)."""

    def __init__(self, roles: Roles) -> None:
        self._held = ""

    def feed(self, chunk: str) -> str:
        text = (self._held + chunk).replace(WORD, "[fruit]")
        keep = next((n for n in range(len(WORD) - 1, 0, -1) if text.endswith(WORD[:n])), 0)
        self._held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]

    def finish(self) -> str:
        held, self._held = self._held, ""
        return held


INPUT = "tests.unit.test_transforms:redact_numbers"
OUTPUT = "chatmemory.services.prompt:ResponseFilter, tests.unit.test_transforms:NoBanana"


@pytest.fixture
def plugged(dynamodb: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> World:
    monkeypatch.setenv("INPUT_TRANSFORMS", INPUT)
    monkeypatch.setenv("OUTPUT_TRANSFORMS", OUTPUT)
    wiring.clear_caches()
    return _world(monkeypatch, lambda_context, ScriptedModel())


@pytest.mark.parametrize("route", ["buffered", "streamed"])
def test_custom_transforms_named_in_settings_act_on_both_routes(plugged: World, route: str) -> None:
    pieces = ["I like ba", "na", "na bread and ", "bananas.", "\nUser: a banana"]
    plugged.model.scripts.append(pieces)
    sid = plugged.session()
    if route == "buffered":
        turn = plugged.client.buffered(sid, "my card is 4111 1111")["turn"]
    else:
        events = plugged.client.stream(sid, "my card is 4111 1111")
        deltas = [data["text"] for name, data in events if name == "delta"]
        assert not any("ban" in d or "User" in d for d in deltas), deltas
        assert "".join(deltas) == events.last("turn")["turn"]["response"]
        turn = events.last("turn")["turn"]

    # The default filter still cuts at the anti-prompt; the custom one replaced the word.
    assert turn["response"] == "I like [fruit] bread and [fruit]s."
    assert turn["input"] == "my card is #### ####"
    assert "4111" not in plugged.model.prompts[-1] and "#### ####" in plugged.model.prompts[-1]
    [stored] = plugged.stored(sid)
    assert (stored.input, stored.response) == (turn["input"], turn["response"])


def test_the_default_output_transform_is_the_response_filter(dynamodb: Any) -> None:
    assert wiring.chat_policy().output_transforms == (ResponseFilter,)
    assert wiring.chat_policy().input_transforms == ()


def test_a_transform_that_does_not_import_is_a_configuration_error_naming_its_variable() -> None:
    with pytest.raises(ConfigurationError, match="OUTPUT_TRANSFORMS: nowhere.to:be_found"):
        output_transforms(["nowhere.to:be_found"])
    with pytest.raises(ConfigurationError, match="OUTPUT_TRANSFORMS"):
        output_transforms(["chatmemory.services.prompt:STOPPED_MARK"])  # not callable


def test_a_malformed_path_is_refused_when_the_settings_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("INPUT_TRANSFORMS", "not a path!")
    wiring.clear_caches()
    with pytest.raises(ConfigurationError, match="INPUT_TRANSFORMS"):
        wiring.settings()
