"""Placing a model with no figures of its own (api/routing/placement.py): its name's family and tier against its
family's figures, then its vendor's price ladder within a generation; reasoning variants apart; and the masking
test on the shipped figures (issue 32: rank correlation within a provider >= 0.8)."""

from __future__ import annotations

import pytest

from api.routing import model_names
from api.routing.capability import UNCERTAINTY_Z, CapabilityPrior, FigureRow, to_capability
from api.routing.default_router import load_default_router
from api.routing.placement import PLAIN_RANK, TIER_RANK, masking_correlations, parse
from api.routing.router import Candidate

URL = "https://example.org/figures"


def rows(*figures: tuple[str, str, str, float]) -> list[FigureRow]:
    return [FigureRow(p, m.lower(), b, s, URL) for p, m, b, s in figures]


@pytest.mark.parametrize(("name", "family", "generation", "tier", "size", "line", "mode"), [
    ("claude-opus-4-5-20251101", "claude", 4.5, TIER_RANK["opus"], None, (), ""),
    ("claude-3-5-haiku-20241022", "claude", 3.5, TIER_RANK["haiku"], None, (), ""),
    ("gemini-2.5-flash-lite-preview-09-2025", "gemini", 2.5, TIER_RANK["lite"], None, (), ""),
    ("gpt-5-mini-2025-08-07", "gpt", 5.0, TIER_RANK["mini"], None, (), ""),
    ("gpt-5.4", "gpt", 5.4, PLAIN_RANK, None, (), ""),
    ("gpt-5.6-sol", "gpt", 5.6, PLAIN_RANK, None, ("sol",), ""),
    ("meta-llama/Llama-3.1-70B-Instruct", "llama", 3.1, None, 70.0, (), ""),
    ("grok-4.20-0309-reasoning", "grok", 4.2, PLAIN_RANK, None, (), "reasoning"),
    ("grok-4.20-0309-non-reasoning", "grok", 4.2, PLAIN_RANK, None, (), "non-reasoning"),
    ("claude-opus-4-5-20251101:thinking-32k", "claude", 4.5, TIER_RANK["opus"], None, (), "reasoning"),
    ("gemini-2.5-flash:thinking-0", "gemini", 2.5, TIER_RANK["flash"], None, (), "non-reasoning"),
    ("deepseek-r1", "deepseek", 1.0, PLAIN_RANK, None, (), "reasoning"),
    ("openrouter/google/gemini-2.5-pro:free", "gemini", 2.5, TIER_RANK["pro"], None, (), ""),
])
def test_a_name_reads_as_family_generation_tier_size_line_and_mode(name, family, generation, tier, size, line, mode):
    parts = parse(name)
    assert (parts.family, parts.tier, parts.size_b, parts.line, parts.mode) == (family, tier, size, line, mode)
    assert parts.generation == pytest.approx(generation)


def test_tiers_order_each_vendors_family():
    for ladder in (("nano", "mini", "pro"), ("haiku", "sonnet", "opus"), ("lite", "flash", "pro"),
                   ("small", "medium", "large")):
        ranks = [parse(f"family-9-{word}").tier for word in ladder]
        assert ranks == sorted(ranks) and len(set(ranks)) == 3, ladder


def family_figures():
    """Two generations of a family with three tiers, on every axis 5 points (0.5 capability) per tier rank: mini,
    the plain name and pro at 60, 70, 75 in generation 1 and 70, 80, 85 in generation 2."""
    out = []
    for generation, base in (("1", 60.0), ("2", 70.0)):
        for word in ("mini", "", "pro"):
            name = f"acme-{generation}" + (f"-{word}" if word else "")
            score = base + 5.0 * (TIER_RANK.get(word, PLAIN_RANK) - TIER_RANK["mini"])
            out += [("acme", name, b, score) for b in ("MMLU", "GSM8K", "HumanEval")]
    return out


def test_an_unlisted_tier_of_a_known_family_is_placed_by_its_tier_among_its_generation():
    prior = CapabilityPrior(rows(*family_figures()))
    placer = prior.placer
    assert placer.tier_gap == pytest.approx([0.5, 0.5, 0.5])  # fitted on the figures' same-generation siblings
    # a newer snapshot of an existing tier: that model's figures, by the snapshot rule
    assert prior.profile("acme", "acme-2-pro-2099")[1] == "family"
    # a new tier (nano, one rank below mini) of generation 2: each sibling shifted by the gap per rank
    skills, how, per_axis, _ = prior.profile("acme", "acme-2-nano")
    assert how == "tier" and per_axis == ("tier",) * 3
    assert skills == pytest.approx([to_capability(65.0) - UNCERTAINTY_Z * placer.level_sd["tier"]] * 3)
    # a newer generation reads the nearest older one with figures
    assert prior.profile("acme", "acme-3-mini")[0][0] == pytest.approx(
        to_capability(70.0) - UNCERTAINTY_Z * placer.level_sd["tier"])
    # the family's order holds for the placed models
    placed = [prior.profile("acme", f"acme-3-{w}")[0][0] for w in ("nano", "mini", "pro")]
    assert placed == sorted(placed) and len(set(placed)) == 3


def test_a_reasoning_variant_is_never_placed_from_a_non_reasoning_sibling_nor_the_reverse():
    figures = [("acme", "acme-2-pro", "MMLU", 70.0), ("acme", "acme-2-pro:thinking", "MMLU", 90.0),
               ("acme", "acme-2-mini", "MMLU", 60.0)]
    prior = CapabilityPrior(rows(*figures))
    reasoning = prior.placer.place("acme", "acme-3-pro-reasoning", None)
    plain = prior.placer.place("acme", "acme-3-pro", None)
    assert reasoning[0]["knowledge"] == pytest.approx(to_capability(90.0))
    assert plain[0]["knowledge"] == pytest.approx(to_capability(70.0))


def test_a_model_its_name_cannot_place_is_placed_on_its_vendors_price_ladder_within_its_generation():
    figures = [("acme", "acme-6-luna", "MMLU", 60.0), ("acme", "acme-6-terra", "MMLU", 80.0),
               ("acme", "acme-5-old", "MMLU", 95.0), ("other", "acme-6-sky", "MMLU", 99.0)]
    prices = {("acme", "acme-6-luna"): 1.0, ("acme", "acme-6-terra"): 100.0, ("acme", "acme-5-old"): 10.0,
              ("other", "acme-6-sky"): 10.0}
    prior = CapabilityPrior(rows(*figures), prices=prices)
    # luna and terra are the same generation of acme: log-price line through them; the older generation and the
    # other vendor's model are no evidence
    axes, level = prior.placer.place("acme", "acme-6-sol", 10.0)
    assert level == "price" and axes["knowledge"] == pytest.approx(to_capability(70.0))
    # dearer than the ladder's top: no evidence it is better than the top
    assert prior.placer.place("acme", "acme-6-astra", 1000.0)[0]["knowledge"] == pytest.approx(to_capability(80.0))
    # no price, or another vendor: nothing places it
    assert prior.placer.place("acme", "acme-6-sol", None) is None
    assert prior.placer.place("elsewhere", "acme-6-sol", 10.0) is None
    assert prior.profile("elsewhere", "acme-6-sol", 10.0)[1] == "uncertain"


def test_an_alias_the_name_rules_cannot_see_reads_its_base_models_figures():
    figures = [("acme", "acme-2-pro", "MMLU", 80.0), ("acme", "acme-2-pro-2024-01-01", "GSM8K", 70.0)]
    prior = CapabilityPrior(rows(*figures), aliases={("host", "acme/pro-fast-fp4"): "acme-2-pro"})
    skills, how, per_axis, sds = prior.profile("host", "acme/pro-fast-fp4")
    assert how == "family" and per_axis[:2] == ("family", "family")  # a lower bound, as another snapshot
    assert sds[0] == prior.level_sd[model_names.SNAPSHOT]
    assert skills[0] == pytest.approx(to_capability(80.0) - UNCERTAINTY_Z * sds[0])
    assert prior.profile("elsewhere", "acme/pro-fast-fp4")[1] == "uncertain"  # the alias is the provider's


def test_extra_rows_join_the_shipped_ones_through_one_seam():
    prior = CapabilityPrior(rows(*family_figures()))
    measured = prior.with_rows(rows(("acme", "acme-2-nano", "MMLU", 50.0)))
    assert measured.profile("acme", "acme-2-nano")[1] == "prior"
    assert measured.profile("acme", "acme-2-nano")[0][0] == pytest.approx(to_capability(50.0))
    assert prior.profile("acme", "acme-2-nano")[1] == "tier"  # the original is untouched


def test_a_router_over_extra_figures_is_a_new_router_sharing_the_trained_parts():
    router = load_default_router()
    unknown = Candidate("custom", "my-measured-model", 1.0, 1.0, 8192)
    measured = router.with_prior(router.prior.with_rows(rows(("custom", "my-measured-model", "MMLU", 95.0))))
    assert measured.featurizer is router.featurizer and measured.spec is router.spec
    assert measured.explain([unknown])[0]["source"] == "prior"
    assert router.explain([unknown])[0]["source"] == "uncertain"  # the router in service is untouched
    f = router.featurizer.featurize("What is the capital of Peru?")
    assert measured.predict_quality(f, [unknown])[0] > router.predict_quality(f, [unknown])[0]


@pytest.fixture(scope="module")
def shipped_prior():
    return load_default_router().prior


def test_masking_each_models_figures_still_ranks_it_within_its_provider(shipped_prior):
    """Issue 32's target: hide each model's own figures (every snapshot, base and chat-tuned alike), place it from
    the rest, and the rank correlation with where its figures put it is >= 0.8 within its provider, weighting each
    provider by its models (benchmarks/todays_models.py prints the table)."""
    found = masking_correlations(shipped_prior.placer)
    assert {"openai", "anthropic", "google"} <= set(found)
    weighted = sum(rho * n for rho, n in found.values()) / sum(n for _, n in found.values())
    assert weighted >= 0.8, found
    assert all(found[p][0] >= 0.8 for p in ("openai", "anthropic", "google")), found
