"""Which embedder the settings name: the one place that turns an embedder's name, URL, model
and key into an `Embedder`, for the server and every command that embeds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemodb.model.value import Value, described
from mnemodb.search.ranking import DEFAULT_FUSION, FusionWeights

if TYPE_CHECKING:
    from mnemodb.search.embedders import Embedder

EMBEDDERS = ("auto", "local", "http", "none")


class EmbedderChoiceError(Exception):
    """The settings name an embedder that cannot be made here; the message says which
    setting to change and how."""


@described
class EmbeddingSettings(Value):
    """Which embedder gives items and queries vectors, and how a search weighs them."""

    embedder: str = "auto"
    """auto (the local model when it is installed, for the native profile), local, http or none."""
    url: str | None = None
    model: str | None = None
    key: str | None = None
    fusion: FusionWeights = DEFAULT_FUSION


def make_embedder(settings: EmbeddingSettings, *, by_default: bool = True, required: bool = False) -> Embedder | None:
    """The embedder the settings name, or None. `auto` takes the local model when it is
    installed and the caller's search uses it (`by_default`: the native profile);
    `required` (for `mnemodb reindex`) makes a missing embedder an error rather than None."""
    # Imported here: the embedders' module loads numpy, which a server without one never needs.
    from mnemodb.search.embedders import (
        INSTALL_HINT,
        LOCAL_MODELS,
        QUANTIZED_MODEL,
        HttpEmbedder,
        LocalEmbedder,
        local_available,
        onnx_runtime_available,
    )

    kind = settings.embedder
    if kind == "auto":
        kind = "local" if local_available() and (by_default or required) else "none"
        if kind == "none" and required:
            raise EmbedderChoiceError(f"no embedder: install the local model ({INSTALL_HINT}) or use --embedder http")
    if kind == "none":
        if required:
            raise EmbedderChoiceError("--embedder none gives no vectors to write")
        return None
    if kind == "local":
        if required and not local_available():
            raise EmbedderChoiceError(f"the local embedding model is not installed: {INSTALL_HINT}")
        # A model name set for another embedder does not stop `auto` from taking the local one.
        model = settings.model if settings.embedder == "local" or settings.model in LOCAL_MODELS else None
        if model == QUANTIZED_MODEL and not onnx_runtime_available():
            raise EmbedderChoiceError(
                f"{QUANTIZED_MODEL} runs on ONNX Runtime, which is not installed: pip install onnxruntime"
            )
        try:
            return LocalEmbedder(model)
        except ValueError as exc:  # a model the local embedder does not run
            raise EmbedderChoiceError(f"Invalid --embed-model {model!r} for the local embedder: {exc}") from None
    assert settings.url is not None and settings.model is not None
    return HttpEmbedder(settings.url, settings.model, key=settings.key)
