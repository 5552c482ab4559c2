from __future__ import annotations

import pytest

from api.catalogue import load_catalogue
from api.errors import BadRequest
from api.schemas.model_select import LLMProvider
from api.selection.candidates import Resolver, aggregator_format, resolve
from api.selection.eligibility import eligible


@pytest.fixture(scope="module")
def cat():
    return load_catalogue()


def test_provider_references_resolve_and_echo_the_callers_names(cat):
    out = resolve([LLMProvider(provider="openai", model="gpt-4o"),
                   LLMProvider(provider="anthropic", model="claude-sonnet-4-5-20250929")], cat, aggregator=False)
    assert [c.candidate.key for c in out] == ["openai/gpt-4o", "anthropic/claude-sonnet-4-5-20250929"]
    gpt = cat.get("openai", "gpt-4o")
    assert out[0].candidate.input_price == gpt.input_price and out[0].label.model == "gpt-4o"


def test_aggregator_ids_resolve_and_are_returned_as_given(cat):
    assert aggregator_format("openrouter") and aggregator_format("aggregator") and not aggregator_format(None)
    with pytest.raises(BadRequest):
        aggregator_format("bogus")
    entry = cat.get("openai", "gpt-4o")
    out = resolve([LLMProvider(model=entry.aggregator_model)], cat, aggregator=True)
    assert out[0].candidate.key == "openai/gpt-4o"
    assert (out[0].label.provider, out[0].label.model) == ("openai", entry.aggregator_model)


def test_duplicates_collapse_keeping_first(cat):
    out = resolve([LLMProvider(provider="openai", model="gpt-4o"), LLMProvider(provider="openai", model="gpt-4o"),
                   LLMProvider(provider="openai", model="gpt-4o-mini")], cat, aggregator=False)
    assert [c.candidate.key for c in out] == ["openai/gpt-4o", "openai/gpt-4o-mini"]


def test_unknown_models_are_named_together(cat):
    with pytest.raises(BadRequest) as err:
        resolve([LLMProvider(provider="openai", model="gpt-9"), LLMProvider(provider="acme", model="x"),
                 LLMProvider(provider="openai", model="gpt-4o")], cat, aggregator=False)
    assert err.value.code == "UNSUPPORTED_MODEL"
    assert "openai/gpt-9" in err.value.message and "acme/x" in err.value.message


def test_custom_models_need_all_four_fields(cat):
    with pytest.raises(BadRequest) as err:
        resolve([LLMProvider(provider="acme", model="m1", is_custom=True, input_price=1.0)], cat, aggregator=False)
    assert err.value.code == "INVALID_CUSTOM_MODEL"
    assert "context_length" in err.value.message and "latency" in err.value.message
    out = resolve([LLMProvider(model="acme/m1", is_custom=True, context_length=8000, input_price=0.1,
                               output_price=0.2, latency=0.5)], cat, aggregator=True)
    c = out[0]
    assert c.is_custom and c.candidate.key == "acme/m1" and c.candidate.latency_s == 0.5
    assert (c.label.provider, c.label.model) == ("acme", "acme/m1")


@pytest.mark.parametrize("entry, expected", [
    ({"provider": "openai", "model": "gpt-4o"}, ("openai", "gpt-4o")),
    ({"provider": "OpenAI", "model": "gpt-4o"}, ("openai", "gpt-4o")),
    ({"model": "openai/gpt-4o", "aggregator": True}, ("openai", "gpt-4o")),
    # an OpenRouter id that is no provider/model of the catalogue, yet names one of its models
    ({"model": "anthropic/claude-haiku-4.5", "aggregator": True}, ("anthropic", "claude-haiku-4-5"))],
    ids=["provider", "provider-spelling", "aggregator-form", "openrouter-id"])
def test_a_catalogue_model_described_as_custom_is_priced_by_the_catalogue(cat, entry, expected):
    """Issue 31, item 4: gpt-4o described as custom at $0 is called with the server's key, so it is ranked and
    billed at gpt-4o's catalogue prices (api/catalogue/pricing.py); a model only the caller knows keeps its own."""
    aggregator = entry.pop("aggregator", False)
    free = LLMProvider(**entry, is_custom=True, context_length=128000, input_price=0.0, output_price=0.0, latency=1.0)
    own = LLMProvider(provider="acme", model="house", is_custom=True, context_length=8000, input_price=0.3,
                      output_price=0.6, latency=1.0)
    listed, house = resolve([free, own], cat, aggregator=aggregator)
    catalogue = cat.get(*expected)
    assert catalogue.input_price > 0
    assert (listed.candidate.input_price, listed.candidate.output_price) == (catalogue.input_price,
                                                                             catalogue.output_price)
    assert (house.candidate.input_price, house.candidate.output_price) == (0.3, 0.6)


def test_aggregator_style_entry_without_type_gets_a_hint(cat):
    with pytest.raises(BadRequest) as err:
        resolve([LLMProvider(model="openai/gpt-4o")], cat, aggregator=False)
    assert "type=openrouter" in err.value.message


def test_eligibility_tools_context_and_depth(cat):
    models = [("openai", "gpt-4o"), ("openai", "gpt-4o-mini"), ("anthropic", "claude-sonnet-4-5-20250929")]
    out = resolve([LLMProvider(provider=p, model=m) for p, m in models], cat, aggregator=False)
    small = resolve([LLMProvider(model="acme/tiny", is_custom=True, context_length=100, input_price=0.0,
                                 output_price=0.0, latency=0.1)], cat, aggregator=True)
    assert [c.candidate.key for c in eligible(out + small, 500, tools=False, max_model_depth=None)] == \
        [c.candidate.key for c in out]
    assert len(eligible(out, 10, tools=False, max_model_depth=2)) == 2
    with pytest.raises(BadRequest) as err:
        eligible(small, 500, tools=False, max_model_depth=None)
    assert err.value.details["reason"] == "context_length"
    no_tools = [c for c in cat.list()[0] if not c.supports_function_calling][:1]
    if no_tools:
        only = resolve([LLMProvider(provider=no_tools[0].provider, model=no_tools[0].model)], cat, aggregator=False)
        with pytest.raises(BadRequest) as err:
            eligible(only, 10, tools=True, max_model_depth=None)
        assert err.value.details["reason"] == "tools"


def test_the_resolver_memoises_lists_but_refuses_each_time_and_stays_bounded(cat):
    resolver = Resolver(cat, max_entries=2)
    request = [LLMProvider(provider="openai", model="gpt-4o"), LLMProvider(provider="openai", model="gpt-4o-mini")]
    first = resolver(request, aggregator=False)
    assert first == resolve(request, cat, aggregator=False)
    first.pop()  # a caller changing its copy changes nothing remembered
    assert len(resolver(request, aggregator=False)) == 2
    # the same names as a custom model are another list: resolved on their own terms
    custom = [LLMProvider(provider="openai", model="gpt-4o", is_custom=True, context_length=1000, input_price=1.0,
                          output_price=1.0, latency=1.0)]
    assert resolver(custom, aggregator=False)[0].is_custom
    unknown = [LLMProvider(provider="openai", model="no-such-model")]
    for _ in range(2):
        with pytest.raises(BadRequest, match="no-such-model"):
            resolver(unknown, aggregator=False)
    for i in range(5):
        resolver([LLMProvider(provider="openai", model="gpt-4o"), *request[1:][: i % 2]], aggregator=bool(i % 3))
    assert len(resolver._cache) <= 2
