"""OpenRouter identifiers (aggregator_model) of catalogue models.

Every id must come from datasets/catalogue/openrouter_models.csv, either by the
documented normalisation rule or by a row of openrouter_overrides.csv.
"""

from __future__ import annotations

import csv
import datetime

import pytest

from api.catalogue import Catalogue, CatalogueModel, load_catalogue, openrouter

TODAY = datetime.date(2026, 11, 21)


@pytest.fixture(scope="module")
def cat() -> Catalogue:
    return load_catalogue(TODAY)


def all_models(cat: Catalogue) -> list[CatalogueModel]:
    active, deprecated = cat.list()
    return active + deprecated


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        ("openai", "gpt-4o", "openai/gpt-4o"),
        ("openai", "gpt-4o-2024-08-06", "openai/gpt-4o-2024-08-06"),
        ("openai", "gpt-4.1-2025-04-14", "openai/gpt-4.1"),
        ("openai", "gpt-5.1-chat-latest", "openai/gpt-5.1-chat"),
        ("anthropic", "claude-opus-4-5", "anthropic/claude-opus-4.5"),
        ("anthropic", "claude-haiku-4-5-20251001", "anthropic/claude-haiku-4.5"),
        ("google", "gemini-2.5-pro", "google/gemini-2.5-pro"),
        ("mistral", "mistral-large-latest", "mistralai/mistral-large"),
        ("mistral", "mistral-large-2512", "mistralai/mistral-large-2512"),
        ("xai", "grok-4.3", "x-ai/grok-4.3"),
        ("deepseek", "deepseek-chat", "deepseek/deepseek-chat"),
        ("cohere", "command-a-03-2025", "cohere/command-a"),
        ("cohere", "command-r-plus-08-2024", "cohere/command-r-plus-08-2024"),
        ("perplexity", "sonar-pro", "perplexity/sonar-pro"),
        ("moonshot", "kimi-k2.5", "moonshotai/kimi-k2.5"),
        ("zai", "glm-4.6", "z-ai/glm-4.6"),
        ("togetherai", "meta-llama/Llama-3.3-70B-Instruct-Turbo", "meta-llama/llama-3.3-70b-instruct"),
        ("togetherai", "meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo", "meta-llama/llama-3.1-8b-instruct"),
        ("togetherai", "meta-llama/Llama-3-8b-chat-hf", "meta-llama/llama-3-8b-instruct"),
        ("togetherai", "zai-org/GLM-4.5-Air-FP8", "z-ai/glm-4.5-air"),
        # from the override table
        ("togetherai", "Qwen/Qwen2.5-72B-Instruct-Turbo", "qwen/qwen-2.5-72b-instruct"),
        ("zai", "glm-4-32b-0414-128k", "z-ai/glm-4-32b"),
        # no OpenRouter id known: null, never a guess
        ("moonshot", "moonshot-v1-8k", None),
        ("openai", "gpt-6-astra", None),
        ("anthropic", "claude-fable-5-1", None),
    ],
)
def test_aggregator_ids(cat, provider, model, expected):
    assert cat.get(provider, model).aggregator_model == expected


def test_aggregator_ids_are_never_invented(cat):
    known = openrouter.read_known_ids()
    mapped = [m for m in all_models(cat) if m.aggregator_model is not None]
    assert len(mapped) >= 150
    assert {m.aggregator_model for m in mapped} <= known


def test_every_override_names_a_catalogue_model_and_a_known_id(cat):
    known = openrouter.read_known_ids()
    for (provider, model), openrouter_id in openrouter.read_overrides().items():
        assert cat.get(provider, model) is not None, (provider, model)
        assert openrouter_id is None or openrouter_id in known, openrouter_id
        assert cat.get(provider, model).aggregator_model == openrouter_id


def test_openrouter_snapshot_rows_all_cite_a_source():
    with open(openrouter.KNOWN_IDS_CSV, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len({row["openrouter_model"] for row in rows}) == 358
    for row in rows:
        assert row["source"].endswith(f"providers/openrouter/models/{row['openrouter_model']}.toml")


def test_by_aggregator_reverse_lookup(cat):
    assert cat.by_aggregator("openai/gpt-4o") is cat.get("openai", "gpt-4o")
    # the alias, not the dated snapshot that maps to the same id
    assert cat.by_aggregator("anthropic/claude-opus-4.5").model == "claude-opus-4-5"
    # the model's own lab before Together's copy
    assert cat.by_aggregator("z-ai/glm-4.6").provider == "zai"
    # Together's copy when it is the only one
    assert cat.by_aggregator("meta-llama/llama-3.3-70b-instruct").provider == "togetherai"
    assert cat.by_aggregator("openrouter/auto") is None
    assert cat.by_aggregator("openai/no-such-model") is None


def test_by_aggregator_prefers_an_active_model():
    # deepseek-chat (exact id) retires 2026-07-24; deepseek-v3 maps by override.
    before = load_catalogue(datetime.date(2026, 7, 1))
    after = load_catalogue(datetime.date(2026, 8, 1))
    assert before.by_aggregator("deepseek/deepseek-chat").model == "deepseek-chat"
    assert after.by_aggregator("deepseek/deepseek-chat").model == "deepseek-v3"


def test_candidate_ids_follow_the_documented_rule():
    assert openrouter.candidate_ids("anthropic", "claude-3-5-sonnet-20241022") == [
        "anthropic/claude-3-5-sonnet-20241022",
        "anthropic/claude-3.5-sonnet-20241022",
        "anthropic/claude-3-5-sonnet",
        "anthropic/claude-3.5-sonnet",
    ]
    # "-turbo" is part of first-party names; only Together's suffixes are dropped
    assert "openai/gpt-4" not in openrouter.candidate_ids("openai", "gpt-4-turbo")
    assert openrouter.candidate_ids("togetherai", "meta-llama/Meta-Llama-3-70B-Instruct-Turbo")[:2] == [
        "meta-llama/meta-llama-3-70b-instruct-turbo",
        "meta-llama/llama-3-70b-instruct",
    ]
    # an organisation OpenRouter has no vendor folder for cannot be matched
    assert openrouter.candidate_ids("togetherai", "thinkingmachines/Inkling") == []
