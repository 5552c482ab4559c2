"""The familiarity of a prompt (api/custom_router/neighbours.py) and the threshold learned on the upload
(flows/custom_router/familiarity.py): a prompt of a kind the upload lacks goes to the upload's best single model
when leaving the upload's own kinds out shows that this pays, and not otherwise."""

from __future__ import annotations

import numpy as np

from api.custom_router.floor import OFF, Floor
from api.custom_router.neighbours import NEIGHBOURS, References, nearest, unit
from flows.custom_router import familiarity, floor
from flows.custom_router.neighbours import NeighbourTable
from flows.custom_router.training import fold_ids
from flows.kinds_left_out import holds_across_kinds


def _kinds_upload(kinds: int = 6, per_kind: int = 150, seed: int = 0):
    """Prompts of `kinds` far-apart kinds; model 0 is fair on all (0.7), model k + 1 the specialist of kind k (0.9
    there, 0.15 elsewhere); the stacker's predictions know nothing."""
    rng = np.random.default_rng(seed)
    kind = np.repeat(np.arange(kinds), per_kind)
    n, m = len(kind), kinds + 1
    rate = np.full((n, m), 0.15)
    rate[:, 0] = 0.7
    rate[np.arange(n), kind + 1] = 0.9
    y = (rng.random((n, m)) < rate).astype(float)
    p = np.clip(0.5 + rng.normal(0, 0.05, (n, m)), 0.01, 0.99)
    emb = _directions(kind, 24, rng)
    return p, y, emb, kind


def _directions(kind: np.ndarray, dim: int, rng) -> np.ndarray:
    e = np.eye(dim)[kind] * 4.0 + rng.normal(0, 0.6, (len(kind), dim))
    return (e / np.linalg.norm(e, axis=1, keepdims=True)).astype(np.float32)


def _folds(n: int) -> np.ndarray:
    return fold_ids([f"prompt {i}" for i in range(n)], 5)


def test_cross_fitted_neighbourhoods_never_include_the_row_or_an_excluded_fold():
    rng = np.random.default_rng(0)
    emb = unit(rng.normal(size=(300, 8)))
    y = rng.random((300, 3))
    folds = _folds(300)
    table = NeighbourTable(emb, y, folds)
    rows = np.flatnonzero(folds == 2)
    got = table.among(rows, [2, 4])
    allowed = np.flatnonzero(~np.isin(folds, [2, 4]))
    want = nearest(emb[rows] @ emb[allowed].T, y[allowed])
    np.testing.assert_allclose(got.familiarity, want.familiarity, atol=1e-5)
    np.testing.assert_allclose(got.sums, want.sums, atol=1e-5)
    assert np.all(got.count == NEIGHBOURS)


def test_a_floor_with_a_threshold_sends_unfamiliar_prompts_to_the_uploads_means_and_round_trips():
    rng = np.random.default_rng(1)
    centroids = unit(np.eye(4)[:2])
    mu = np.array([[0.2, 0.9, 0.5], [0.9, 0.2, 0.5]])
    chosen = Floor(centroids, mu, np.full((2, 3), 0.5), np.zeros(3), threshold=0.8,
                   fallback=np.array([0.4, 0.3, 0.6]))
    side = np.repeat([0, 1], NEIGHBOURS)  # the training prompts: NEIGHBOURS near each of two directions
    emb = unit(np.eye(4)[side] + rng.normal(0, 0.01, (len(side), 4)))
    near = References(emb, np.eye(3)[1 - side]).around
    familiar, stranger = near(emb[0]), near(unit(np.array([0.0, 0.0, 1.0, 1.0])))
    assert familiar.familiarity[0] > 0.99 and stranger.familiarity[0] < 0.1
    assert chosen.predict_one(lambda: None, emb[0], familiar).argmax() == 1  # its cluster's best
    assert chosen.predict_one(lambda: None, emb[0], stranger).argmax() == 2  # the upload's best single model
    again = Floor.from_spec(chosen.spec())
    assert again.threshold == 0.8 and again.reads_neighbours
    np.testing.assert_allclose(again.fallback, chosen.fallback)
    old = {k: v for k, v in chosen.spec().items() if k not in ("threshold", "fallback", "local_prior")}
    assert Floor.from_spec(old).threshold == OFF and not Floor.from_spec(old).reads_neighbours


def test_kinds_left_out_teach_a_threshold_that_sends_a_new_kind_to_the_best_single_model():
    p, y, emb, kind = _kinds_upload()
    folds = _folds(len(y))
    table = NeighbourTable(emb, y, folds)
    served, report, nested = floor.fit_floor(p, y, emb, folds, log=lambda *_: None, table=table)
    assert not report["routes_as_best_single_model_at_t0"]
    chosen, familiar, nested = familiarity.learn_threshold(served, report, p, y, emb, nested, table,
                                                           log=lambda *_: None)
    assert familiar["threshold"] is not None and familiar["kinds"] == 6
    assert familiar["nested_left_out_kinds_quality_t0"] > familiar["nested_left_out_kinds_without_fallback"] + 0.2
    # served: a prompt of each known kind still goes to its specialist, one of a new kind to model 0
    refs = References(emb, y)
    rng = np.random.default_rng(9)
    known = _directions(np.arange(6), 24, rng)
    for k, e in enumerate(known):
        assert chosen.predict_one(lambda: np.full(7, 0.5), e, refs.around(e)).argmax() == k + 1
    new = _directions(np.array([10]), 24, rng)[0]
    assert chosen.predict_one(lambda: np.full(7, 0.5), new, refs.around(new)).argmax() == 0


def test_no_threshold_when_leaving_kinds_out_shows_no_gain():
    """One general model best everywhere but a per-kind specialist of the same strength elsewhere: falling back
    never beats routing on the kinds left out, so no threshold (and the router keeps routing by prompt)."""
    rng = np.random.default_rng(3)
    kind = np.repeat(np.arange(6), 150)
    n = len(kind)
    rate = np.tile([0.6, 0.6], (n, 1))
    rate[kind < 3, 0], rate[kind >= 3, 1] = 0.9, 0.9  # model 0 on kinds 0-2, model 1 on kinds 3-5, far apart
    y = (rng.random(rate.shape) < rate).astype(float)
    p = np.clip(0.5 + rng.normal(0, 0.05, y.shape), 0.01, 0.99)
    emb = _directions(np.where(kind < 3, 0, 1), 24, rng)  # kinds of a side are alike: a left-out kind is familiar
    folds = _folds(n)
    table = NeighbourTable(emb, y, folds)
    served, report, nested = floor.fit_floor(p, y, emb, folds, log=lambda *_: None, table=table)
    chosen, familiar, _ = familiarity.learn_threshold(served, report, p, y, emb, nested, table, log=lambda *_: None)
    assert familiar["threshold"] is None and chosen.threshold == OFF


def test_a_small_upload_gets_no_threshold_and_says_why():
    p, y, emb, _ = _kinds_upload(kinds=1, per_kind=150)
    folds = _folds(len(y))
    table = NeighbourTable(emb, y, folds)
    served, report, nested = floor.fit_floor(p, y, emb, folds, log=lambda *_: None, table=table)
    _, familiar, again = familiarity.learn_threshold(served, report, p, y, emb, nested, table, log=lambda *_: None)
    assert familiar["threshold"] is None and familiar["why_none"]
    np.testing.assert_array_equal(again, nested)


def test_the_floor_artifact_says_what_threshold_was_learned_and_what_it_scored():
    from flows.train_custom_router import familiarity_rows

    assert familiarity_rows({"threshold": None, "why_none": "too few rows for two kinds of prompt"}) == [
        {"": "familiarity threshold: none (too few rows for two kinds of prompt)", "accuracy": None}]
    learned = {"threshold": 0.86, "threshold_quantile": 0.2, "kinds": 6, "nested_left_out_kinds_quality_t0": 0.43,
               "nested_left_out_kinds_without_fallback": 0.42, "left_out_kinds_best_single_quality": 0.40}
    rows = familiarity_rows(learned)
    assert "0.8600" in rows[0][""] and "20.0%" in rows[0][""] and "6 kinds" in rows[0][""]
    assert [r["accuracy"] for r in rows] == [0.43, 0.42, 0.40]
    assert familiarity_rows({**learned, "threshold": None})[0][""].startswith("familiarity threshold none")


def test_a_fallback_that_pays_on_one_kind_alone_is_not_chosen():
    """Falling back gains 3 points on one kind left out and nothing on five others: the mean objective gains, but
    not across kinds (RouterDC without GSM8K chose such a fallback, and it cost 20 points on GSM8K)."""
    rng = np.random.default_rng(5)
    kinds_out, ys, start = [], [], 0
    for g in range(6):
        n = 200
        y = np.zeros((n, 2))
        y[:, 0] = 1.0  # the router's pick (model 0) is right everywhere...
        gains_here = 6 if g == 0 else 0
        y[:gains_here * 2, 0], y[:gains_here * 2, 1] = 0.0, 1.0  # ...except on 12 unfamiliar rows of kind 0
        familiar = np.where(np.arange(n) < gains_here * 2, 0.1, 0.9) + rng.normal(0, 0.01, n)
        rows = np.zeros(6 * 200, dtype=bool)
        rows[start:start + n] = True
        kinds_out.append({"rows": rows, "pick": np.zeros(n, int), "fallback": 1, "familiarity": familiar})
        ys.append(y)
        start += n
    y = np.concatenate(ys)
    assert not holds_across_kinds(familiarity.gains_across_kinds(0.5, kinds_out, y))
    everyone = np.ones(len(y), dtype=bool)
    fam_in = np.full(len(y), 0.9)
    assert familiarity.objective(0.5, kinds_out, y, np.zeros(len(y), int), 1, fam_in, everyone)[0] > \
        familiarity.objective(OFF, kinds_out, y, np.zeros(len(y), int), 1, fam_in, everyone)[0]
    assert familiarity.choose([OFF, 0.5], kinds_out, y, np.zeros(len(y), int), 1, fam_in, everyone) == OFF
    for k in kinds_out[1:]:  # the same gain on every kind holds
        k["familiarity"][:12] = 0.1
        y[np.flatnonzero(k["rows"])[:12]] = [0.0, 1.0]
    assert holds_across_kinds(familiarity.gains_across_kinds(0.5, kinds_out, y))
    assert familiarity.choose([OFF, 0.5], kinds_out, y, np.zeros(len(y), int), 1, fam_in, everyone) == 0.5
