"""Read LiteLLM's bundled price map and keep the text-generation chat models.

Importing ``litellm`` takes seconds and, unless told otherwise, fetches the
price map from the internet; the API must start fast and offline. So the JSON
file that ships inside the litellm wheel is located through the import system
without executing the package, and read directly.
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from api.catalogue.model import CatalogueModel
from api.catalogue.providers import PROVIDERS, Provider, Source

PRICE_MAP_FILENAME = "model_prices_and_context_window_backup.json"

# Some non-text models are filed under mode "chat" in LiteLLM's map (TTS
# previews, music generation, audio-out chat models, safety classifiers).
# They are recognised by a word in their id. Matching whole words (split on
# - _ . / :) avoids catching these letters inside unrelated names.
NON_TEXT_WORDS = frozenset(
    {
        "audio", "tts", "realtime", "transcribe", "live", "whisper", "speech",
        "image", "imagen", "dall", "veo", "sora", "lyria", "video",
        "embed", "embedding", "rerank", "moderation", "ocr",
        "guard", "safeguard",
    }
)
_WORD_SPLIT = re.compile(r"[-_./:]")


def price_map_path() -> Path:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("litellm is not installed; the model catalogue is read from its bundled price map")
    return Path(list(spec.submodule_search_locations)[0]) / PRICE_MAP_FILENAME


def load_price_map(path: Path | None = None) -> dict[str, Any]:
    with open(path or price_map_path(), "rb") as handle:
        return json.load(handle)


def is_text_model_id(model: str) -> bool:
    if model.startswith("ft:"):
        # Fine-tune templates: the real id carries the caller's org and suffix.
        return False
    return not (set(_WORD_SPLIT.split(model.lower())) & NON_TEXT_WORDS)


def _model_id(key: str, source: Source) -> str | None:
    for prefix in source.key_prefixes:
        if key.startswith(prefix):
            return key[len(prefix):]
    return None if source.require_prefix else key


def _price_per_million(entry: Mapping[str, Any], field: str) -> float | None:
    value = entry.get(field)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    # Round away float noise from the per-token representation (2.5e-06 * 1e6).
    return round(float(value) * 1_000_000, 6)


def _context_length(entry: Mapping[str, Any]) -> int | None:
    for field in ("max_input_tokens", "max_tokens"):
        value = entry.get(field)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _deprecation_date(entry: Mapping[str, Any]) -> datetime.date | None:
    value = entry.get("deprecation_date")
    if not isinstance(value, str):
        return None
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        return None


def to_catalogue_model(provider: str, model: str, entry: Mapping[str, Any]) -> CatalogueModel | None:
    """Convert one map entry, or None when it is not a routable text chat model."""
    if entry.get("mode") != "chat" or not is_text_model_id(model):
        return None
    input_price = _price_per_million(entry, "input_cost_per_token")
    output_price = _price_per_million(entry, "output_cost_per_token")
    context_length = _context_length(entry)
    if input_price is None or output_price is None or context_length is None:
        return None
    if input_price == 0 and output_price == 0:
        # Zero on both sides marks unpublished or promotional pricing in the map;
        # a cost-aware router would always pick such a model, so it is left out.
        return None
    return CatalogueModel(
        provider=provider,
        model=model,
        context_length=context_length,
        input_price=input_price,
        output_price=output_price,
        supports_function_calling=bool(entry.get("supports_function_calling", False)),
        supports_vision=bool(entry.get("supports_vision", False)),
        deprecation_date=_deprecation_date(entry),
    )


def _entries_by_litellm_provider(price_map: Mapping[str, Any]) -> dict[str, list[tuple[str, Mapping[str, Any]]]]:
    grouped: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for key, entry in price_map.items():
        if isinstance(entry, dict) and isinstance(entry.get("litellm_provider"), str):
            grouped.setdefault(entry["litellm_provider"], []).append((key, entry))
    return grouped


def _provider_models(provider: Provider, grouped: Mapping[str, list]) -> Iterator[CatalogueModel]:
    seen: set[str] = set()
    # Sources are in priority order and keys in map order, so the first entry
    # for a model id wins: AI Studio over Vertex, and a duplicate key such as
    # "deepseek/deepseek-chat" next to "deepseek-chat" is read once.
    for source in provider.sources:
        for key, entry in grouped.get(source.litellm_provider, ()):
            model = _model_id(key, source)
            if not model or model in seen:
                continue
            if source.model_prefixes and not model.startswith(source.model_prefixes):
                continue
            converted = to_catalogue_model(provider.name, model, entry)
            if converted is not None:
                seen.add(model)
                yield converted


def read_catalogue_models(price_map: Mapping[str, Any]) -> list[CatalogueModel]:
    """All exposed chat models, one per (provider, model), without aggregator ids."""
    grouped = _entries_by_litellm_provider(price_map)
    models = [m for provider in PROVIDERS for m in _provider_models(provider, grouped)]
    models.sort(key=lambda m: (m.provider, m.model))
    return models
