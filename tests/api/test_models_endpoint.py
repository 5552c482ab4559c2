"""GET /v2/models through the real app: shape, caching header, filters and what must never be listed."""

from __future__ import annotations

import re

import pytest

FIELDS = {"provider", "model", "context_length", "input_price", "output_price", "aggregator_model",
          "openrouter_model"}
NON_TEXT = re.compile(r"dall-e|gpt-image|imagen|embed|whisper|tts|transcri|rerank|moderation|stable-diffusion"
                      r"|speech|audio|realtime", re.IGNORECASE)


@pytest.fixture
def models(client):
    def get(**params):
        response = client.get("/v2/models", params=params)
        assert response.status_code == 200, response.text
        return response.json()

    return get


def every(body: dict) -> list[dict]:
    return body["models"] + body["deprecated_models"]


def test_shape(models):
    body = models()
    assert set(body) == {"models", "total", "deprecated_models"}
    assert body["total"] == len(body["models"])
    assert isinstance(body["deprecated_models"], list)
    for m in every(body):
        assert set(m) == FIELDS, m
        assert isinstance(m["provider"], str) and m["provider"]
        assert isinstance(m["model"], str) and m["model"]
        assert isinstance(m["context_length"], int) and m["context_length"] > 0
        assert isinstance(m["input_price"], (int, float)) and m["input_price"] >= 0
        assert isinstance(m["output_price"], (int, float)) and m["output_price"] >= 0
        assert m["aggregator_model"] is None or isinstance(m["aggregator_model"], str)


def test_no_duplicates_and_active_and_deprecated_are_disjoint(models):
    body = models()
    active = [(m["provider"], m["model"]) for m in body["models"]]
    deprecated = [(m["provider"], m["model"]) for m in body["deprecated_models"]]
    assert len(set(active)) == len(active)
    assert len(set(deprecated)) == len(deprecated)
    assert not set(active) & set(deprecated)


def test_at_least_150_active_models_from_the_main_providers(models):
    body = models()
    assert body["total"] >= 150
    providers = {m["provider"] for m in body["models"]}
    assert {"openai", "anthropic", "google", "mistral"} <= providers


def test_prices_are_per_million_tokens(models):
    # Per-token prices would be around 1e-6; per-million prices of real chat models are mostly >= 0.01.
    body = models()
    priced = [m for m in body["models"] if m["input_price"] > 0]
    assert len(priced) > 100
    assert sorted(m["input_price"] for m in priced)[len(priced) // 2] > 0.01


def test_cache_control_is_one_hour(client):
    response = client.get("/v2/models")
    directives = {d.strip() for d in response.headers["cache-control"].split(",")}
    assert "max-age=3600" in directives
    # Filtered responses are cached the same way.
    assert "max-age=3600" in client.get("/v2/models", params={"provider": "openai"}).headers["cache-control"]


def test_no_image_embedding_or_audio_model_appears(models):
    offenders = [m["model"] for m in every(models()) if NON_TEXT.search(m["model"])]
    assert offenders == []


def test_provider_filter_repeated_parameter(client):
    response = client.get("/v2/models?provider=openai&provider=anthropic")
    assert response.status_code == 200
    body = response.json()
    assert {m["provider"] for m in every(body)} == {"openai", "anthropic"}
    assert body["total"] == len(body["models"])
    whole = client.get("/v2/models").json()
    expected = [m for m in whole["models"] if m["provider"] in ("openai", "anthropic")]
    assert body["models"] == expected  # the filter drops nothing it should keep
    expected_dep = [m for m in whole["deprecated_models"] if m["provider"] in ("openai", "anthropic")]
    assert body["deprecated_models"] == expected_dep


def test_single_provider_filter(models):
    body = models(provider="openai")
    assert body["models"] and {m["provider"] for m in every(body)} == {"openai"}


def test_provider_aliases_are_accepted(models):
    assert models(provider="gemini")["models"] == models(provider="google")["models"]
    assert models(provider="together_ai")["models"] == models(provider="togetherai")["models"]


def test_unknown_provider_is_400_naming_it(client):
    response = client.get("/v2/models?provider=openai&provider=acme-llms")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "UNKNOWN_PROVIDER"
    assert error["type"] == "invalid_request_error"
    assert "acme-llms" in error["message"]
    assert "openai" in error["message"]  # the known providers are listed so the caller can fix it
    assert error["details"]["unknown"] == ["acme-llms"]
    assert error["request_id"] == response.headers["x-request-id"]


def test_several_unknown_providers_are_all_named(client):
    response = client.get("/v2/models?provider=foo&provider=bar")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["unknown"] == ["bar", "foo"]


@pytest.mark.parametrize("flag", ["aggregator_only", "openrouter_only"])
def test_aggregator_filters_keep_only_models_with_an_aggregator_id(models, flag):
    whole = models()
    body = models(**{flag: "true"})
    assert body["models"] and all(m["aggregator_model"] for m in every(body))
    assert body["total"] == len(body["models"]) < whole["total"]
    assert body["models"] == [m for m in whole["models"] if m["aggregator_model"]]
    assert body["deprecated_models"] == [m for m in whole["deprecated_models"] if m["aggregator_model"]]


def test_aggregator_filter_false_is_the_whole_list(models):
    assert models(aggregator_only="false") == models()


def test_aggregator_and_provider_filters_combine(models):
    body = models(provider="anthropic", aggregator_only="true")
    assert body["models"]
    assert all(m["provider"] == "anthropic" and m["aggregator_model"] for m in every(body))


def test_openrouter_model_mirrors_aggregator_model(models):
    body = models()
    assert all(m["openrouter_model"] == m["aggregator_model"] for m in every(body))
    ids = [m["aggregator_model"] for m in body["models"] if m["aggregator_model"]]
    assert len(ids) > 50
    assert all(re.fullmatch(r"[a-z0-9-]+/[A-Za-z0-9._:-]+", i) for i in ids), ids


def test_models_accepts_a_request_id_and_sets_json(client):
    response = client.get("/v2/models", headers={"x-request-id": "catalogue-1"})
    assert response.headers["x-request-id"] == "catalogue-1"
    assert response.headers["content-type"].startswith("application/json")
