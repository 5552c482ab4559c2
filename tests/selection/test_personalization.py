from __future__ import annotations

import numpy as np

from api.selection.personalization import FeedbackMemory


def test_consistent_feedback_shifts_similar_queries_only_for_that_preference():
    rng = np.random.default_rng(0)
    topic = rng.normal(size=64)
    other_topic = rng.normal(size=64)
    memory = FeedbackMemory()
    for i in range(6):
        e = topic + 0.1 * rng.normal(size=64)
        memory.add("pref-a", f"s-down-{i}", "m/strong", e, label=0, predicted=0.8)
        memory.add("pref-a", f"s-up-{i}", "m/weak", e, label=1, predicted=0.5)
    base = np.array([0.8, 0.5])
    similar = memory.adjust("pref-a", topic + 0.1 * rng.normal(size=64), ["m/strong", "m/weak"], base)
    assert similar[1] > similar[0]          # the choice flips for similar queries
    assert similar[0] < 0.5 and similar[1] > 0.7
    dissimilar = memory.adjust("pref-a", other_topic, ["m/strong", "m/weak"], base)
    np.testing.assert_allclose(dissimilar, base)
    assert not memory.knows("pref-b")
    np.testing.assert_allclose(memory.adjust("pref-b", topic, ["m/strong", "m/weak"], base), base)


def test_new_feedback_on_a_session_replaces_the_old():
    memory = FeedbackMemory()
    e = np.ones(8)
    memory.add("p", "s1", "m/a", e, label=0, predicted=0.9)
    memory.add("p", "s1", "m/a", e, label=1, predicted=0.9)
    adjusted = memory.adjust("p", e, ["m/a"], np.array([0.9]))
    assert adjusted[0] > 0.9  # only the thumbs-up counts now
