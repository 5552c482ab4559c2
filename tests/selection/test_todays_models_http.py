"""The common-sense test of today's models through modelSelect (issue 32, item 5): a new user's first five minutes
with the models a team uses today, by their catalogue names (tests/support/todays_models.py)."""

from __future__ import annotations

from api.catalogue import load_catalogue
from tests.support.routes import SELECT
from tests.support.todays_models import EASY_PROMPTS, FAMILIES, HARD_PROMPTS, TIERS, all_models, listed

TIER_OF = {pair: tier for tier, pairs in TIERS.items() for pair in pairs}


def test_todays_models_are_ranked_by_common_sense_through_the_api(client, auth):
    headers = auth()
    catalogue = load_catalogue()
    dial = client.app.state.services.selection.dial
    dial.stop()  # refreshed by hand below, so no background pass changes the schedule during a sweep

    def picks(prompts, t, pairs=all_models()):
        out = []
        for prompt in prompts:
            response = client.post(SELECT, headers=headers, json={
                "messages": [{"role": "user", "content": prompt}], "llm_providers": listed(pairs),
                "cost_quality_tradeoff": t})
            assert response.status_code == 200, response.text
            chosen = response.json()["providers"][0]
            out.append((chosen["provider"], chosen["model"]))
        return out

    def output_price(pairs):
        return sum(catalogue.get(*pair).output_price for pair in pairs) / len(pairs)

    hard, easy = picks(HARD_PROMPTS, 0), picks(EASY_PROMPTS, 0)
    assert [TIER_OF[p] for p in hard].count("top") / len(hard) >= 0.9, hard
    assert not any(TIER_OF[p] == "bottom" for p in hard + easy)
    for _ in range(2):  # this candidate set's pool, then this caller's own schedule (its t=0 traffic above)
        dial.refresh()
    cheapest = min(all_models(), key=lambda pair: catalogue.get(*pair).output_price)
    assert set(picks(HARD_PROMPTS + EASY_PROMPTS, 10)) == {cheapest}
    for t in (3, 5, 7):
        assert output_price(picks(EASY_PROMPTS, t)) < 0.5 * output_price(picks(HARD_PROMPTS, t)), t
    for family, members in FAMILIES.items():
        chosen = picks(HARD_PROMPTS, 0, members)
        assert chosen.count(members[0]) / len(chosen) >= 0.9, (family, chosen)
