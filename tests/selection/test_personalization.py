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


def _topics_memory(labels_of, rng, topics, per_topic=40):
    """One model's feedback on `topics` (prediction 0.5 everywhere), labels from labels_of(topic index, rng)."""
    memory = FeedbackMemory()
    for t, centre in enumerate(topics):
        for i in range(per_topic):
            memory.add("p", f"s-{t}-{i}", "m/a", centre + 0.1 * rng.normal(size=64), label=labels_of(t, rng),
                       predicted=0.5)
    return memory


def _shifts(memory, topics, rng):
    base = np.array([0.5])
    return np.array([memory.adjust("p", c + 0.1 * rng.normal(size=64), ["m/a"], base)[0] - 0.5 for c in topics])


def test_random_labels_shift_every_similar_query_alike():
    rng = np.random.default_rng(1)
    topics = [rng.normal(size=64) for _ in range(5)]
    memory = _topics_memory(lambda t, r: int(r.integers(0, 2)), rng, topics)
    shifts = _shifts(memory, topics, rng)
    # 40 coin flips per topic make local means that differ by ~0.2 between topics; the shrunk correction moves
    # every topic by the same small amount, so no topic is routed differently from another.
    assert np.ptp(shifts) < 0.05
    assert np.abs(shifts).max() < 0.15


def test_consistent_disagreement_on_one_topic_among_noise_moves_that_topic():
    rng = np.random.default_rng(2)
    topics = [rng.normal(size=64) for _ in range(5)]
    memory = _topics_memory(lambda t, r: 0 if t == 0 else int(r.integers(0, 2)), rng, topics)
    shifts = _shifts(memory, topics, rng)
    assert shifts[0] < -0.3                     # every label on topic 0 said wrong: it moves
    assert shifts[1:].min() - shifts[0] > 0.25  # the noisy topics do not follow it
