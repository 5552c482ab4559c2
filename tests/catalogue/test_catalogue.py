"""The model catalogue built from LiteLLM's bundled price map.

Literal prices and dates below are those of the litellm version pinned in
requirements.lock; the structural checks cross-read the raw map so they hold
for any version.
"""

from __future__ import annotations

import datetime
import json
import socket
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from api.catalogue import Catalogue, CatalogueModel, UnknownProviderError, litellm_source, load_catalogue
from api.catalogue import catalogue as catalogue_module
from api.catalogue.providers import PROVIDERS_BY_NAME

TODAY = datetime.date(2026, 11, 21)
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cat() -> Catalogue:
    return load_catalogue(TODAY)


@pytest.fixture(scope="module")
def raw() -> dict:
    return litellm_source.load_price_map()


def all_models(cat: Catalogue) -> list[CatalogueModel]:
    active, deprecated = cat.list()
    return active + deprecated


# --- coverage and exclusions -------------------------------------------------


def test_at_least_150_active_chat_models(cat):
    active, deprecated = cat.list()
    assert len(active) >= 150
    assert len(deprecated) >= 1
    assert len(active) + len(deprecated) == len(cat)


@pytest.mark.parametrize(
    "model",
    [
        "dall-e-3",
        "gpt-image-1",
        "text-embedding-3-small",
        "text-embedding-ada-002",
        "whisper-1",
        "tts-1",
        "gpt-4o-mini-tts",
        "gpt-4o-transcribe",
        "gpt-realtime",
        "gpt-audio",
        "gpt-4o-audio-preview-2024-12-17",
        "omni-moderation-latest",
        "rerank-v3.5",
        "embed-english-v3.0",
        "gemini-2.5-pro-preview-tts",
        "lyria-3-pro-preview",
        "imagen-3.0-generate-001",
        "mistral-embed",
        "mistral-ocr-latest",
        "llama-guard-3-8b",
        "ft:gpt-4o-2024-08-06",
    ],
)
def test_non_text_generation_models_are_excluded(cat, model):
    assert all(m.model != model for m in all_models(cat))
    for provider in cat.providers():
        assert cat.get(provider, model) is None


def test_every_model_is_a_priced_chat_entry_with_no_non_text_word(cat, raw):
    for m in all_models(cat):
        sources = PROVIDERS_BY_NAME[m.provider].sources
        keys = [m.model] + [prefix + m.model for source in sources for prefix in source.key_prefixes]
        entries = [raw[key] for key in keys if key in raw]
        assert any(entry["mode"] == "chat" for entry in entries), m
        assert litellm_source.is_text_model_id(m.model), m
        assert m.context_length > 0
        assert m.input_price >= 0 and m.output_price >= 0
        assert m.input_price + m.output_price > 0, m


def test_one_entry_per_provider_and_model(cat):
    keys = [(m.provider, m.model) for m in all_models(cat)]
    assert len(keys) == len(set(keys))


def test_litellm_is_never_imported():
    code = "import sys, api.catalogue as c; c.load_catalogue(); print('litellm' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "False"


# --- prices, context, capabilities --------------------------------------------


def test_prices_are_per_million_tokens(cat, raw):
    gpt4o = cat.get("openai", "gpt-4o")
    assert gpt4o.input_price == pytest.approx(raw["gpt-4o"]["input_cost_per_token"] * 1e6)
    assert gpt4o.output_price == pytest.approx(raw["gpt-4o"]["output_cost_per_token"] * 1e6)
    assert (gpt4o.input_price, gpt4o.output_price) == (2.5, 10.0)
    opus = cat.get("anthropic", "claude-opus-4-5")
    assert (opus.input_price, opus.output_price) == (5.0, 25.0)
    llama = cat.get("togetherai", "meta-llama/Llama-3.3-70B-Instruct-Turbo")
    assert (llama.input_price, llama.output_price) == (1.04, 1.04)


def test_context_length_prefers_max_input_tokens(cat):
    # gpt-4o: max_input_tokens 128000, max_tokens (output) 16384.
    assert cat.get("openai", "gpt-4o").context_length == 128_000
    assert cat.get("google", "gemini-2.5-pro").context_length == 1_048_576


def test_capability_flags(cat):
    gpt4o = cat.get("openai", "gpt-4o")
    assert gpt4o.supports_function_calling is True
    assert gpt4o.supports_vision is True
    sonar = cat.get("perplexity", "sonar")  # the map has no function-calling flag for it
    assert sonar.supports_function_calling is False
    assert cat.get("moonshot", "moonshot-v1-8k").supports_vision is False


# --- providers ------------------------------------------------------------------


def test_provider_names_are_the_ones_users_type(cat):
    assert cat.providers() == {
        "openai", "anthropic", "google", "mistral", "togetherai", "cohere",
        "perplexity", "deepseek", "xai", "moonshot", "zai", "ai21",
    }


def test_get_normalises_provider_aliases(cat):
    together = cat.get("togetherai", "meta-llama/Llama-3.3-70B-Instruct-Turbo")
    assert together is not None
    assert cat.get("together_ai", "meta-llama/Llama-3.3-70B-Instruct-Turbo") is together
    assert cat.get("gemini", "gemini-2.5-pro") is cat.get("google", "gemini-2.5-pro")
    assert cat.get("GOOGLE", "gemini-2.5-pro").provider == "google"
    assert cat.get("mistralai", "mistral-large-latest").provider == "mistral"
    assert cat.get("x-ai", "grok-4.3").provider == "xai"
    assert cat.get("nosuchprovider", "gpt-4o") is None
    assert cat.get("openai", "no-such-model") is None


def test_google_prefers_ai_studio_and_fills_gaps_from_vertex(cat):
    # AI Studio lists gemini-2.5-flash with no deprecation date; Vertex says 2026-10-20.
    flash = cat.get("google", "gemini-2.5-flash")
    assert flash.deprecation_date is None
    assert (flash.input_price, flash.output_price) == (0.3, 2.5)
    # gemini-3-pro-preview is only listed under Vertex.
    pro = cat.get("google", "gemini-3-pro-preview")
    assert (pro.input_price, pro.output_price, pro.context_length) == (2.0, 12.0, 1_048_576)


def test_resellers_are_not_providers(cat):
    for name in ("bedrock", "azure", "fireworks_ai", "groq", "openrouter"):
        with pytest.raises(UnknownProviderError):
            cat.list(providers=[name])


# --- deprecation -------------------------------------------------------------------


def test_deprecated_split_honours_the_injected_date():
    # gpt-4's deprecation_date is 2026-10-23: active that day, deprecated the next.
    def bucket(today: datetime.date) -> str:
        active, deprecated = load_catalogue(today).list(providers=["openai"])
        if any(m.model == "gpt-4" for m in active):
            return "active"
        assert any(m.model == "gpt-4" for m in deprecated)
        return "deprecated"

    assert bucket(datetime.date(2026, 10, 23)) == "active"
    assert bucket(datetime.date(2026, 10, 24)) == "deprecated"
    assert load_catalogue(datetime.date(2026, 10, 24)).get("openai", "gpt-4").deprecation_date == datetime.date(
        2026, 10, 23
    )


def test_every_model_is_in_exactly_one_bucket_and_sorted(cat):
    active, deprecated = cat.list()
    assert all(not m.is_deprecated(TODAY) for m in active)
    assert all(m.deprecation_date is not None and m.deprecation_date < TODAY for m in deprecated)
    for bucket in (active, deprecated):
        keys = [(m.provider, m.model) for m in bucket]
        assert keys == sorted(keys)


def test_an_early_date_has_more_active_models(cat):
    early_active, early_deprecated = load_catalogue(datetime.date(2024, 1, 1)).list()
    assert len(early_active) > len(cat.list()[0])
    assert [m.model for m in early_deprecated] == []


# --- filters and errors -------------------------------------------------------------------


def test_provider_filter(cat):
    active, deprecated = cat.list(providers=["openai"])
    assert {m.provider for m in active + deprecated} == {"openai"}
    assert any(m.model == "gpt-4o" for m in active)
    active, deprecated = cat.list(providers=["together_ai", "gemini"])
    assert {m.provider for m in active + deprecated} == {"togetherai", "google"}


def test_aggregator_only_filter(cat):
    active, deprecated = cat.list(aggregator_only=True)
    assert all(m.aggregator_model for m in active + deprecated)
    assert len(active) < len(cat.list()[0])
    assert "moonshot-v1-8k" not in {m.model for m in active}
    both_active, _ = cat.list(providers=["anthropic"], aggregator_only=True)
    assert "claude-opus-4-5" in {m.model for m in both_active}
    assert "claude-fable-5-1" not in {m.model for m in both_active}


def test_unknown_provider_error_names_culprits_and_known_providers(cat):
    with pytest.raises(UnknownProviderError) as caught:
        cat.list(providers=["openai", "foo", "bar"])
    error = caught.value
    assert isinstance(error, ValueError)
    assert error.names == ["bar", "foo"]
    message = str(error)
    assert "bar, foo" in message
    assert "anthropic" in message and "togetherai" in message and "openai" in message
    assert "openai" not in message.split("Known")[0]


# --- record shape and start-up cost -------------------------------------------------------


def test_catalogue_model_is_a_frozen_struct_that_encodes(cat):
    gpt4 = cat.get("openai", "gpt-4")
    with pytest.raises(AttributeError):
        gpt4.input_price = 0.0  # type: ignore[misc]
    encoded = json.loads(msgspec.json.encode(gpt4))
    assert encoded["provider"] == "openai"
    assert encoded["model"] == "gpt-4"
    assert encoded["context_length"] == 8192
    assert encoded["input_price"] == 30.0
    assert encoded["aggregator_model"] == "openai/gpt-4"
    assert encoded["deprecation_date"] == "2026-10-23"


def test_load_is_offline_and_reuses_parsed_models(monkeypatch):  # how fast: benchmarks/startup_costs.py
    def no_network(*args, **kwargs):
        raise AssertionError("the catalogue must not touch the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    catalogue_module._matched_models.cache_clear()
    fresh = load_catalogue(TODAY)
    assert len(fresh) > 150
    again = load_catalogue(datetime.date(2027, 1, 1))  # later loads reuse the parsed models
    assert again.get("openai", "gpt-4o") is fresh.get("openai", "gpt-4o")
