"""Judge sampling (docs/routing.md, "Judge sampling"): the gateway's draw (opt-in, at the set rate, never hashed or
failed traffic), and the judge-traffic flow end to end: gateway traffic through the real app to the in-process fake
OpenAI server, the flow on the throw-away Prefect server grading through the model-call layer, the daily budget
stopping a batch, verdicts without text, and decision_evidence taking them as labels where the caller gave none."""

from __future__ import annotations

import random
from datetime import datetime, timezone

import pyarrow as pa
import pytest
from litestar.testing import TestClient

from api.catalogue import load_catalogue
from api.gateway.calls import Call
from api.gateway.judge_sampling import JudgeSampler
from api.routing.router import Candidate
from api.selection.candidates import ResolvedCandidate
from api.settings import get_settings, reset_settings
from storage import events
from storage.event_schemas import JUDGE_SAMPLE_SCHEMA, JUDGE_VERDICT_SCHEMA, USAGE_SCHEMA
from storage.records import Preference, User
from tests.support.fakes.openai_server import FakeOpenAI

STRONG, CHEAP = "openai/gpt-4o", "openai/gpt-4o-mini"
SECRET = "walrus-sapphire-9041"
USER = User("alice", "org", "free", False, False)


def preference(rate: float | None, budget: float | None = 1.0, shadow: float | None = None) -> Preference:
    now = datetime.now(timezone.utc)
    return Preference("p1", "alice", "p", None, None, None, None, now, now, judge_sample_rate=rate,
                      judge_budget_usd=budget, shadow_sample_rate=shadow)


def answered_call(i: int, hashed: bool = False, mode: str = "routed", status: str = "ok") -> Call:
    ranked = [ResolvedCandidate(Candidate(*name.split("/"), input_price=p, output_price=4 * p), None, False)
              for name, p in ((STRONG, 2.5), (CHEAP, 0.15))]
    call = Call(USER, f"s{i}", "switchboard/p1", mode, False, preference_id="p1", hashed=hashed, status=status,
                messages=[{"role": "user", "content": f"question {i}"}], answer_parts=[f"answer {i}"])
    call.answered, call.ranked = ranked[i % 2], ranked
    return call


class AlwaysDraws(random.Random):
    def random(self) -> float:
        return 0.0


def sample_row(session_id: str, shadow: str | None = None) -> dict:
    return {"session_id": session_id, "preference_id": "p1", "content": '[{"role": "user", "content": "2+2?"}]',
            "answer": "4", "model": CHEAP, "shadow_model": shadow, "shadow_propensity": 0.5 if shadow else None,
            "embedding": [0.1], "candidates": [STRONG, CHEAP], "input_prices": [2.5, 0.15],
            "output_prices": [10.0, 0.6], "answer_judged": False, "shadow_judged": False}


def test_grading_stops_at_an_unpriced_judge_and_at_a_provider_error():
    from flows.learning.judge_grading import grade, parse_verdict

    calls: list[tuple[str, str]] = []

    def reply(name, prices, task_type, role, messages):
        calls.append((name, task_type))
        if name == STRONG:
            raise ConnectionError("down")
        return "The answer is right.\nverdict: 1"

    catalogue = load_catalogue()
    unpriced = grade([sample_row("a")], "acme/unknown-judge", reply, catalogue, lambda: 0.0)
    assert unpriced.stopped and "no known price" in unpriced.stopped and not unpriced.verdicts and not calls
    # the judge named among the request's candidates is priced as the request priced it
    done = grade([sample_row("a"), sample_row("b")], CHEAP, reply, catalogue, lambda: 0.0)
    assert [v["verdict"] for v in done.verdicts] == [1, 1] and calls == [(CHEAP, "judge_traffic")] * 2
    calls.clear()
    failed = grade([sample_row("a", shadow=STRONG), sample_row("b")], CHEAP, reply, catalogue, lambda: 0.0)
    assert failed.stopped == "provider error: ConnectionError" and calls[-1] == (STRONG, "shadow_call")
    assert [v["shadow"] for v in failed.verdicts] == [False]  # the answer graded before the shadow call failed
    assert parse_verdict("**Verdict:** 0") == 0 and parse_verdict("verdict: 1 ... verdict: 0") == 0
    assert parse_verdict("looks fine") is None


def test_a_catalogue_model_declared_at_zero_is_billed_at_the_catalogues_price_and_stops_at_the_budget():
    """Issue 31, item 4: gpt-4o described as custom at $0 (the request's declared prices, as judge sampling keeps
    them) made 33 judge calls against a $0.0001 budget. The judge and the shadow are billed at the catalogue's
    prices (api/catalogue/pricing.py), so the ledger's ceiling stops the batch; a model only the caller knows is
    still billed at the prices it declared."""
    from flows.learning.judge_grading import grade
    from flows.prompt_opt.usage import Ledger

    catalogue = load_catalogue()
    gpt4o = catalogue.get("openai", "gpt-4o")
    billed: list[tuple[str, tuple[float, float]]] = []

    def replying(ledger: Ledger):
        def reply(name, prices, task_type, role, messages):
            ledger.check()
            billed.append((name, prices))
            ledger.add(provider="openai", model=name, prices=prices, task_type=task_type, position=-1, role=role,
                       usage={"prompt_tokens": 400, "completion_tokens": 40}, latency_s=0.0)
            return "verdict: 1"
        return reply

    free = {**sample_row("a", shadow="acme/mine"), "candidates": [STRONG, CHEAP, "acme/mine"],
            "input_prices": [0.0, 0.0, 1.0], "output_prices": [0.0, 0.0, 2.0]}
    free_shadow = {**free, "session_id": "b", "shadow_model": CHEAP}
    grade([free, free_shadow], STRONG, replying(Ledger("judge-traffic:p1", "alice", "org", ceiling_usd=1.0)),
          catalogue, lambda: 0.0)
    mini = catalogue.get("openai", "gpt-4o-mini")
    judge = (STRONG, (gpt4o.input_price, gpt4o.output_price))
    assert billed == [judge, ("acme/mine", (1.0, 2.0)), judge,  # a shadow the catalogue lacks: its declared prices
                      judge, (CHEAP, (mini.input_price, mini.output_price)), judge]  # a shadow it lists: its prices
    billed.clear()
    ledger = Ledger("judge-traffic:p1", "alice", "org", ceiling_usd=0.0001)
    batch = grade([free] + [sample_row(f"s{i}") for i in range(40)], STRONG, replying(ledger), catalogue,
                  lambda: ledger.total)
    assert batch.stopped == "budget" and len(billed) == 1  # not 33: the first gpt-4o call passes $0.0001


def test_sampling_is_opt_in_at_the_set_rate_and_never_hashed_proxied_or_failed(tmp_path):
    sampler = JudgeSampler(tmp_path, 3600, rng=random.Random(11))
    n = 4000
    kept = [i for i in range(n) if sampler.offer(answered_call(i), preference(0.1, shadow=0.5), lambda s: [0.5])]
    # Binomial(4000, 0.1): mean 400, sd 19; six sd either side.
    assert 286 < len(kept) < 514
    never = [(answered_call(0, hashed=True), preference(0.2)), (answered_call(0, mode="proxy"), preference(0.2)),
             (answered_call(0, status="failed"), preference(0.2)), (answered_call(0), preference(None)),
             (answered_call(0), preference(0.2, budget=None)), (answered_call(0), None)]
    assert not any(sampler.offer(call, pref, lambda s: None) for call, pref in never for _ in range(200))
    assert sampler.buffer.flush() == len(kept)
    [table] = events.read(tmp_path, events.parts(tmp_path, "judge_samples"), JUDGE_SAMPLE_SCHEMA)
    rows = table.to_pylist()
    assert [r["session_id"] for r in rows] == [f"s{i}" for i in kept]
    assert all(r["answer"] == f"answer {r['session_id'][1:]}" for r in rows)
    shadows = [r for r in rows if r["shadow_model"] is not None]
    assert 0.35 * len(rows) < len(shadows) < 0.65 * len(rows)  # the shadow rate, 0.5 of the sampled
    # the other candidate, drawn among the k = 1 others: its propensity is the shadow rate / k
    assert all(r["shadow_model"] != r["model"] and r["shadow_propensity"] == 0.5 for r in shadows)
    assert all(r["input_prices"] == [2.5, 0.15] for r in rows)


@pytest.fixture
def upstream(monkeypatch):
    fake = FakeOpenAI().start()
    monkeypatch.setenv("SWITCHBOARD_LLM_API_BASE", fake.base_url)
    monkeypatch.setenv("SWITCHBOARD_LLM_API_KEY", "sk-upstream-secret-0123456789")
    yield fake
    fake.stop()


def question(i: int) -> str:
    return f"What is the secret word number {i} of the {SECRET} list?"


def read_log(table: str, schema: pa.Schema) -> list[dict]:
    events_dir = get_settings().events_dir
    return [r for t in events.read(events_dir, events.parts(events_dir, table), schema) for r in t.to_pylist()]


@pytest.mark.usefixtures("prefect_harness")
def test_judge_traffic_grades_samples_within_the_budget_and_labels_decisions(data_dir, upstream):
    from flows.learning.judge import judge_traffic
    from flows.learning.table import load_evidence
    from flows.storage_access import connect
    from storage import analytics
    from storage.records import PreferenceChanges

    reset_settings()
    upstream.teach({question(i): f"word-{i}" for i in range(32)})
    from api.app import create_app

    with TestClient(create_app(publish_owner=False), raise_server_exceptions=False) as client:
        key = client.app.state.services.store.accounts.issue_key("alice").key
        h = {"Authorization": f"Bearer {key}"}
        pid = client.post("/v2/preferences/userPreferenceCreate", json={}, headers=h).json()["preference_id"]
        r = client.put("/v2/preferences/userPreferenceUpdate", headers=h, json={
            "preference_id": pid, "judge_sample_rate": 0.2, "judge_model": CHEAP, "judge_budget_usd": 1e-9,
            "shadow_sample_rate": 0.5})
        assert r.status_code == 200 and r.json()["judge_sample_rate"] == 0.2, r.text
        bad = client.put("/v2/preferences/userPreferenceUpdate", headers=h,
                         json={"preference_id": pid, "judge_sample_rate": 0.5})
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "judge_sample_rate"]
        client.app.state.services.gateway.sampler.random = random.Random(4)

        def chat(i: int, **extra) -> tuple[str, str]:
            r = client.post("/v1/chat/completions", headers=h, json={
                "model": f"switchboard/{pid}", "llm_providers": [STRONG, CHEAP],
                "messages": [{"role": "user", "content": question(i)}], **extra})
            assert r.status_code == 200, r.text
            return r.headers["x-switchboard-session-id"], r.headers["x-switchboard-model"]

        answered = [chat(i) for i in range(30)]
        client.app.state.services.gateway.sampler.random = AlwaysDraws()  # a streamed answer, drawn once it ends
        answered += [chat(30 + i, stream=True) for i in range(2)]
        plain = [session for session, _ in answered]
        hashed = [chat(i, hash_content=True)[0] for i in range(10)]
        for session, model in answered[:15]:  # the caller's own feedback on half: it wins over a verdict
            provider, name = model.split("/", 1)
            assert client.post("/v2/report/metrics/feedback", headers=h, json={
                "session_id": session, "provider": {"provider": provider, "model": name},
                "feedback": {"accuracy": 1}}).status_code == 200

    samples = read_log("judge_samples", JUDGE_SAMPLE_SCHEMA)
    sampled = {s["session_id"]: s for s in samples}
    assert set(plain[-2:]) <= set(sampled) and all(sampled[s]["shadow_model"] for s in plain[-2:])
    assert all(sampled[s]["answer"] and question(30) not in sampled[s]["answer"] for s in plain[-2:])
    assert 3 <= len(sampled) <= 20 and set(sampled) <= set(plain) and not set(sampled) & set(hashed)
    shadows = [s for s in samples if s["shadow_model"]]
    assert shadows and len(shadows) < len(samples)
    calls_needed = len(samples) + 2 * len(shadows)  # a judge call per answer, a shadow call and its judge call

    # The budget (a billionth of a dollar) lets one call start, then stops the batch; the next run, the same UTC
    # day, finds it spent and calls nothing.
    [first] = judge_traffic(preference_id=pid).values()
    assert first["stopped"] == "budget" and first["graded"] == 1 and len(read_log("llm_usage", USAGE_SCHEMA)) == 1
    [second] = judge_traffic(preference_id=pid).values()
    assert second["stopped"] == "budget" and second["spent_usd"] == 0
    assert len(read_log("llm_usage", USAGE_SCHEMA)) == 1

    store = connect()
    try:
        store.preferences.update("alice", pid, PreferenceChanges(judge_budget_usd=1.0))
    finally:
        store.close()
    [third] = judge_traffic().values()  # every preference with samples: only this one has any
    assert third["stopped"] is None and third["unparsed"] == 0
    usage = read_log("llm_usage", USAGE_SCHEMA)
    assert len(usage) == calls_needed  # nothing paid for twice
    assert sum(u["task_type"] == "shadow_call" for u in usage) == len(shadows)
    assert sum(u["task_type"] == "judge_traffic" for u in usage) == len(samples) + len(shadows)
    assert all(u["adaptation_run_id"] == f"judge-traffic:{pid}" and u["total_cost"] > 0 for u in usage)

    verdicts = read_log("judge_verdicts", JUDGE_VERDICT_SCHEMA)
    assert len(verdicts) == len(samples) + len(shadows)  # every answer graded once, nothing graded twice
    assert not any(SECRET in str(v) for row in verdicts for v in row.values())  # no text in the verdict log
    for v in verdicts:
        sample = sampled[v["session_id"]]
        if not v["shadow"]:  # the fake judge says 1 exactly when the answer is the taught one
            assert v["model"] == sample["model"] and v["verdict"] == int(sample["answer"] == f"word-{plain.index(v['session_id'])}")
        else:
            assert v["model"] == sample["shadow_model"] and v["propensity"] == 0.5

    with analytics.connect(get_settings().data_dir) as conn:
        rows = conn.execute("SELECT session_id, chosen, label, label_source, propensity, features IS NOT NULL"
                            " FROM decision_evidence WHERE label IS NOT NULL AND preference_id = ?", [pid]).fetchall()
        evidence = load_evidence(conn, pid)
    judged = {(v["session_id"], v["model"]): v for v in verdicts}
    assert all(has_features for *_, has_features in rows)
    with_feedback = set(plain[:15])
    labelled = [row for row in rows if row[3] != "feedback"]
    assert {row[0] for row in rows if row[3] == "feedback"} == with_feedback
    assert all(label == 1 for session, _, label, source, *_ in rows if source == "feedback")
    for session_id, chosen, label, source, propensity, _ in labelled:
        v = judged[(session_id, chosen)]
        assert label == v["verdict"] and source == ("shadow" if v["shadow"] else "judge")
        assert session_id not in with_feedback or v["shadow"]  # caller feedback wins over the judge's verdict
        if v["shadow"]:
            assert propensity == 0.5
    assert sum(source == "judge" for *_, source, _, _ in rows) == len(
        [v for v in verdicts if not v["shadow"] and v["session_id"] not in with_feedback])
    assert len(evidence) == len(rows)  # the learner reads verdicts as it reads feedback
