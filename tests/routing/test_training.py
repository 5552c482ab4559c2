"""The training entry point the `train-default-router` flow calls: runs on small data, is deterministic, and its
artefact loads in the serving code."""

import shutil

from api.routing.default_router import DEFAULT_ARTEFACT_DIR, load_default_router
from flows.default_router.train import train_default_router
from tests.support.routellm import tiny_routellm


def test_train_is_deterministic_and_loads(tmp_path):
    data = tmp_path / "routellm"
    data.mkdir()
    tiny_routellm(data)
    out = tmp_path / "artefact"
    out.mkdir()
    for name in ("encoder.json", "static_embedding.npy", "tokenizer.json"):
        shutil.copy(DEFAULT_ARTEFACT_DIR / name, out / name)

    first = train_default_router(data, out, seed=0)
    text = (out / "router.json").read_bytes()
    second = train_default_router(data, out, seed=0)
    assert (out / "router.json").read_bytes() == text
    assert first.router_json_sha256 == second.router_json_sha256
    assert set(first.heldout) == {"mmlu", "gsm8k", "mt_bench"}
    assert first.train_rows > 100
    schedule = first.schedule
    assert len(schedule) == 10 and schedule[0] == 0 and schedule == sorted(schedule)

    router = load_default_router(out)
    f = router.featurizer.featurize("Question about law: which option?\nA. x\nB. y\nC. z\nD. w\nAnswer:")
    from api.routing.router import Candidate

    q = router.predict_quality(f, [Candidate("openai", "gpt-4-1106-preview", 10, 30, 128000),
                                   Candidate("togetherai", "mistralai/Mixtral-8x7B-Instruct-v0.1", 0.6, 0.6, 32768)])
    assert q[0] > q[1]
