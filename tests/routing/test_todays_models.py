"""The common-sense test of today's models (issue 32, item 5), in process: the served default router, the
catalogue's prices and the dial's schedule for a caller with no history (tests/support/todays_models.py has the
tiers, families and prompts; tests/selection/test_todays_models_http.py runs the same through modelSelect)."""

from __future__ import annotations

import numpy as np
import pytest

from api.routing.default_router import load_default_router
from tests.support.todays_models import EASY_PROMPTS, FAMILIES, HARD_PROMPTS, TIERS, InProcess, all_models

TIER_OF = {pair: tier for tier, pairs in TIERS.items() for pair in pairs}


@pytest.fixture(scope="module")
def router():
    return load_default_router()


@pytest.fixture(scope="module")
def todays(router):
    return InProcess(router, all_models())


def test_every_listed_model_has_evidence_not_the_uncertain_prior(router, todays):
    sources = [e["source"] for e in router.explain(todays.candidates)]
    assert "uncertain" not in sources, dict(zip(all_models(), sources))


def test_at_t0_hard_prompts_go_to_the_top_tier_and_nothing_to_the_bottom(todays):
    hard = [TIER_OF[todays.choose(p, 0)[0]] for p in HARD_PROMPTS]
    easy = [TIER_OF[todays.choose(p, 0)[0]] for p in EASY_PROMPTS]
    assert hard.count("top") / len(hard) >= 0.9, hard
    assert "bottom" not in hard + easy


def test_at_the_cost_end_the_cheapest_model(todays):
    cheapest = min(todays.candidates, key=lambda c: (c.input_price + c.output_price, c.output_price))
    picks = {todays.choose(p, 10)[0] for p in HARD_PROMPTS + EASY_PROMPTS}
    assert picks == {(cheapest.provider, cheapest.model)}


@pytest.mark.parametrize("t", [3, 5, 7])
def test_in_the_middle_of_the_dial_easy_prompts_cost_less_than_hard_ones(todays, t):
    hard = np.mean([todays.choose(p, t)[1] for p in HARD_PROMPTS])
    easy = np.mean([todays.choose(p, t)[1] for p in EASY_PROMPTS])
    assert easy < 0.5 * hard, (t, easy, hard)  # clearly cheaper, not a rounding difference


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_vendors_family_in_its_order(router, family):
    """Within a vendor's family alone, hard prompts at t=0 go to its flagship and are predicted in the family's
    order (flagship, mid, small); over every prompt, hard and easy, the mean prediction is in that order too (on
    an easy prompt two members may tie within a point: either answers it)."""
    members = FAMILIES[family]
    alone = InProcess(router, members)
    picks = [alone.choose(p, 0)[0] for p in HARD_PROMPTS]
    assert picks.count(members[0]) / len(picks) >= 0.9, picks
    quality = np.array([router.predict_quality(router.featurizer.featurize(p), alone.candidates)
                        for p in HARD_PROMPTS + EASY_PROMPTS])
    for prompt, q in zip(HARD_PROMPTS, quality):
        assert list(q) == sorted(q, reverse=True), (family, prompt, q)
    assert list(quality.mean(axis=0)) == sorted(quality.mean(axis=0), reverse=True)
