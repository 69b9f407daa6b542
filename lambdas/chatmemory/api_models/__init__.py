"""Request and response models of the chat API, by resource: they validate requests and generate
the OpenAPI document (`make openapi`), so the published contract is the code that runs. The
routers read them as `chatmemory.api_models` (`m.SessionOut`): every public name of the modules
below is one here."""

from __future__ import annotations

from pydantic import BaseModel

from chatmemory.api_models import agents, base, checkpoints, memories, sessions, transfer, turns
from chatmemory.api_models.agents import *  # noqa: F403
from chatmemory.api_models.base import *  # noqa: F403
from chatmemory.api_models.checkpoints import *  # noqa: F403
from chatmemory.api_models.memories import *  # noqa: F403
from chatmemory.api_models.sessions import *  # noqa: F403
from chatmemory.api_models.transfer import *  # noqa: F403
from chatmemory.api_models.turns import *  # noqa: F403

_MODULES = (base, sessions, turns, transfer, memories, agents, checkpoints)


def models() -> list[type[BaseModel]]:
    """Every model the modules of this package define."""
    return [
        model
        for module in _MODULES
        for model in list(vars(module).values())
        if isinstance(model, type)
        and issubclass(model, BaseModel)
        and model.__module__ == module.__name__
    ]


def build_deferred() -> None:
    """Build now the validators of every model here that has not been used yet (they are
    deferred to first use), for an init that no request waits for (SnapStart)."""
    for model in models():
        if not model.__pydantic_complete__:
            model.model_rebuild(force=True)
