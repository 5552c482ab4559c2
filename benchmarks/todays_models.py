"""Today's models through the default router (issue 32): flagship share at t=0 per vendor family, easy vs hard cost in
the middle of the dial, the masking test of the prior, and where each model's profile comes from.

    .venv/bin/python -m benchmarks.todays_models [--http]

In process by default (the served router, the catalogue's prices, the dial's schedule for a caller without history:
tests/support/todays_models.py InProcess); --http sends every prompt through modelSelect in a served app instead
(the dial then calibrates on the caller's own traffic, as tests/selection/test_todays_models_http.py does).
Models, tiers and prompts: tests/support/todays_models.py (own lists, not drawn from any benchmark). The masking
test hides each model's own figures (every snapshot, base and chat-tuned alike), places it by its name and its
vendor's price ladder (api/routing/placement.py) and prints the Spearman correlation with its standing from its
figures, per provider with at least 4 such models.
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np

from api.routing.default_router import load_default_router
from api.routing.placement import masking_correlations
from tests.support.todays_models import EASY_PROMPTS, FAMILIES, HARD_PROMPTS, TIERS, InProcess, all_models, listed

TIER_OF = {pair: tier for tier, pairs in TIERS.items() for pair in pairs}
MID_DIAL = (3, 5, 7)
OPEN_CLIENTS: list = []


def served_chooser(pairs):
    """(prompt, t) -> ((provider, model), USD) through modelSelect on an in-process app (Litestar's test client, a
    throw-away data dir), and the app's dial (refreshed by hand, as in tests/selection/test_dial_http.py)."""
    # lazy: only --http serves an app
    import os
    import tempfile

    from litestar.testing import TestClient

    from api.app import create_app
    from api.catalogue import load_catalogue
    from api.routing.policy import request_cost_usd
    from api.routing.text import count_tokens
    from api.settings import reset_settings
    from tests.support.routes import SELECT

    os.environ.update(SWITCHBOARD_DATA_DIR=tempfile.mkdtemp(prefix="switchboard-bench-"),
                      LITELLM_LOCAL_MODEL_COST_MAP="True")
    reset_settings()
    client = TestClient(create_app(publish_owner=False))
    client.__enter__()
    OPEN_CLIENTS.append(client)  # closed at the end of main
    key = client.app.state.services.store.accounts.issue_key("bench-todays-models").key
    dial = client.app.state.services.selection.dial
    dial.stop()
    catalogue = load_catalogue()

    def choose(prompt: str, t: int):
        body = {"messages": prompt, "llm_providers": listed(pairs), "cost_quality_tradeoff": t}
        chosen = client.post(SELECT, headers={"Authorization": f"Bearer {key}"}, json=body).json()["providers"][0]
        model = catalogue.get(chosen["provider"], chosen["model"])
        cost = float(request_cost_usd(np.array([model.input_price]), np.array([model.output_price]),
                                      count_tokens(prompt))[0])
        return (chosen["provider"], chosen["model"]), cost

    return choose, dial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="through modelSelect instead of in process")
    args = parser.parse_args()
    router = load_default_router()

    print("where each listed model's profile comes from (knowledge, maths, code; lower bounds):")
    listed_models = InProcess(router, all_models()).candidates
    for c, e in zip(listed_models, router.explain(listed_models)):
        skills = " ".join(f"{axis} {v['capability']:+.2f} ({v['source']})" for axis, v in e["skills"].items())
        print(f"  {TIER_OF[(c.provider, c.model)]:6s} {c.key:32s} {skills}")

    def chooser(pairs):
        return served_chooser(pairs)[0] if args.http else InProcess(router, pairs).choose

    if args.http:  # the caller's own t=0 traffic first, then the dial's schedule calibrated on it
        choose, dial = served_chooser(all_models())
        for prompt in HARD_PROMPTS + EASY_PROMPTS:
            choose(prompt, 0)
        dial.refresh()
        dial.refresh()
    else:
        choose = chooser(all_models())
    print(f"\n{len(all_models())} models in 4 tiers, {len(HARD_PROMPTS)} hard and {len(EASY_PROMPTS)} easy prompts "
          f"({'modelSelect' if args.http else 'in process'}); cost = USD per 1,000 such requests:")
    for t in (0,) + MID_DIAL + (10,):
        hard = [choose(p, t) for p in HARD_PROMPTS]
        easy = [choose(p, t) for p in EASY_PROMPTS]
        tiers = Counter(TIER_OF[pair] for pair, _ in hard + easy)
        hard_cost, easy_cost = 1000 * np.mean([c for _, c in hard]), 1000 * np.mean([c for _, c in easy])
        print(f"  t={t:2d}  hard to top tier {Counter(TIER_OF[p] for p, _ in hard)['top'] / len(hard):4.0%}, "
              f"any to bottom tier {tiers['bottom']:2d}; cost hard {hard_cost:7.3f} easy {easy_cost:7.3f} "
              f"(easy/hard {easy_cost / hard_cost:.2f}); hard mostly {Counter(p[1] for p, _ in hard).most_common(2)}, "
              f"easy mostly {Counter(p[1] for p, _ in easy).most_common(2)}")

    print("\nhard prompts at t=0 to the family's flagship, each family alone:")
    shares = []
    for family, members in FAMILIES.items():
        family_choose = chooser(members)
        picks = [family_choose(p, 0)[0] for p in HARD_PROMPTS]
        shares.append(picks.count(members[0]) / len(picks))
        print(f"  {family:11s} {shares[-1]:.0%} to {members[0][1]}  ({Counter(p[1] for p in picks).most_common()})")
    print(f"  all families: {np.mean(shares):.0%} (issue 32: 27 % before, target >= 90 %)")

    for client in OPEN_CLIENTS:
        client.__exit__(None, None, None)
    found = masking_correlations(router.prior.placer)
    print("\nmasking test: each model's own figures hidden, Spearman correlation of placed vs true standing:")
    for provider, (rho, n) in found.items():
        print(f"  {provider:10s} {n:3d} models  {rho:+.3f}")
    weights = np.array([n for _, n in found.values()], float)
    rhos = np.array([rho for rho, _ in found.values()])
    print(f"  weighted by models {rhos @ weights / weights.sum():.3f}; mean over providers {rhos.mean():.3f} "
          f"(target >= 0.8); uncertainty per level {router.prior.placer.level_sd}")


if __name__ == "__main__":
    main()
