"""The lexicon: tokens in any script, a ridge fit whose means reproduce the teacher's vectors, a round trip through
its artefact files, and the teacher's sample of the upload."""

from __future__ import annotations

import numpy as np

from api.custom_router.lexicon import Lexicon, fit_lexicon, lexicon_tokens
from flows.custom_router.teacher import TEACHER_PROMPT_CHARS, teacher_sample


def test_tokens_are_words_and_for_unspaced_scripts_characters_and_pairs():
    assert lexicon_tokens("Écris une fonction Python_3!") == ["écris", "une", "fonction", "python", "3"]
    assert lexicon_tokens("计算面积 of 2") == ["of", "2", "计", "算", "面", "积", "计算", "算面", "面积"]
    assert sorted(lexicon_tokens("カレーを作る")) == sorted(["カ", "レ", "ー", "を", "作", "る", "カレ", "レー", "ーを",
                                                          "を作", "作る"])
    assert lexicon_tokens("¿Qué?") == ["qué"]


def test_the_fit_reproduces_the_teachers_vectors_and_survives_its_files(tmp_path):
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(40)]
    truth = {w: rng.normal(size=8) for w in words}  # a teacher that really is a mean of word vectors
    prompts = [" ".join(rng.choice(words, size=6)) for _ in range(300)]
    targets = np.stack([np.mean([truth[w] for w in lexicon_tokens(p)], axis=0) for p in prompts])
    lexicon = fit_lexicon(prompts, targets, lam=1e-4)
    fresh = [" ".join(rng.choice(words, size=6)) for _ in range(20)]
    want = np.stack([np.mean([truth[w] for w in lexicon_tokens(p)], axis=0) for p in fresh])
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    got = lexicon.encode_batch(fresh)
    assert float(np.min(np.sum(got * want, axis=1))) > 0.99  # cosine, on prompts it never saw
    lexicon.save(tmp_path)
    again = Lexicon.load(tmp_path)
    assert again.tokens == lexicon.tokens
    np.testing.assert_allclose(again.encode("w1 w2 w3"), lexicon.encode("w1 w2 w3"), atol=1e-2)  # float16 rows
    assert not again.encode("unknown words only").any()  # no known token: the zero vector


def test_the_teacher_sample_keeps_to_its_budget_and_ignores_row_order():
    prompts = [f"prompt {i} " + "x" * (i % 50) for i in range(400)] + ["y" * 5000]
    rows, texts = teacher_sample(prompts, 5_000)
    assert sum(len(t) for t in texts) <= 5_000 and len(rows) == len(set(rows.tolist()))
    assert all(len(t) <= TEACHER_PROMPT_CHARS for t in texts)
    shuffled = prompts[::-1]
    _, again = teacher_sample(shuffled, 5_000)
    assert again == texts


def test_the_teacher_reads_its_characters_budget_and_none_without_one():
    from flows.custom_router.teacher import distil_lexicon, teacher_sample

    prompts = [f"Question {i}: how many legs do {i} spiders and {i + 1} cats have?" for i in range(100)]
    budget = sum(len(p) for p in prompts[:32])
    heard: list[str] = []
    distilled = distil_lexicon(prompts, budget_chars=budget, log=heard.append, chunk=32)
    assert distilled is not None and "spiders" in distilled.lexicon.tokens
    # The sample is the characters' budget's alone (work, never seconds): the same prompts every time.
    rows, _ = teacher_sample(prompts, budget)
    assert distilled.rows.tolist() == rows.tolist() and f"/{len(rows)} prompts" in heard[-1]
    # The teacher's prompts also get the vectors of lexicons fitted without them: unit rows, not the in-sample fit.
    assert distilled.held_out.shape == (len(rows), distilled.lexicon.dim)
    in_sample = distilled.lexicon.encode_batch([prompts[i] for i in distilled.rows])
    np.testing.assert_allclose(np.linalg.norm(distilled.held_out, axis=1), 1.0, atol=1e-4)
    assert not np.allclose(distilled.held_out, in_sample, atol=1e-3)
    assert distil_lexicon(prompts, budget_chars=0) is None
