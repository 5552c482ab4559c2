"""The dial through modelSelect: once a caller has some history, each cost_quality_tradeoff step moves a part of
its traffic, not all of it at one step (the cliff the training-prompt schedule made on unfamiliar prompts)."""

from __future__ import annotations

from tests.support.routes import SELECT

TOPICS = ["rain", "the sea", "autumn", "a cat", "winter", "first love", "a night train", "the moon", "coffee",
          "mountains", "an old city", "spring", "a lighthouse", "bread", "a violin", "the desert", "snow", "a river",
          "friendship", "a garden"]
PAIR = [{"provider": "openai", "model": "gpt-4o"}, {"provider": "openai", "model": "gpt-4o-mini"}]


def test_the_dial_moves_a_callers_poems_step_by_step(client, auth):
    headers = auth()
    prompts = [f"Write a short {form} about {topic}." for topic in TOPICS for form in ("poem", "limerick", "haiku")]
    dial = client.app.state.services.selection.dial
    dial.stop()  # refresh by hand below, so no background pass changes the schedule during the sweep

    def dear_share(t: int) -> float:
        picks = [client.post(SELECT, headers=headers, json={"messages": p, "llm_providers": PAIR,
                                                            "cost_quality_tradeoff": t}).json()["providers"][0]
                 for p in prompts]
        return sum(p["model"] == "gpt-4o" for p in picks) / len(picks)

    assert dear_share(0) == 1.0  # quality first; this pass is also the caller's history
    dial.refresh()
    dial.refresh()  # the pool for this candidate set, then this caller's own schedule
    got = [dear_share(t) for t in range(11)]
    assert got[0] == 1.0 and got[-1] == 0.0
    assert all(a >= b for a, b in zip(got, got[1:])), got
    assert max(a - b for a, b in zip(got, got[1:])) <= 0.25, got
