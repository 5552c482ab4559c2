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


def test_the_flows_batched_shifts_are_what_serving_adds():
    """flows/learning/residual.py scores the memory with shifts(); the service serves adjust(): one formula."""
    rng = np.random.default_rng(1)
    memory = FeedbackMemory()
    topic = rng.normal(size=16)
    for i in range(30):
        memory.add("p", f"s{i}", "m/a", topic + 0.3 * rng.normal(size=16), label=i % 3 == 0, predicted=0.6)
    queries = np.stack([topic + 0.3 * rng.normal(size=16) for _ in range(5)] + [rng.normal(size=16)])
    unit_rows = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    base = np.array([0.5])
    served = [memory.adjust("p", q, ["m/a"], base)[0] - base[0] for q in queries]
    np.testing.assert_allclose(memory.shifts("p", "m/a", unit_rows), served, atol=1e-6)
    assert np.abs(served[:5]).max() > 0.01 and np.all(memory.shifts("p", "m/b", unit_rows) == 0)
