"""Provider outages and timeouts against the fake OpenAI-compatible server: LiteLLM retries 429s and timeouts with
backoff (SWITCHBOARD_LLM_RETRIES), and a target whose provider stays down fails alone, with the reason, while the
other targets of the run complete."""

from __future__ import annotations

import time

import pytest

from api.settings import get_settings, reset_settings
from tests.support.fakes.openai_server import FakeOpenAI

MINI, HAIKU, FLASH = ("openai", "gpt-4o-mini"), ("anthropic", "claude-haiku-4-5"), ("google", "gemini-2.5-flash")


@pytest.fixture
def lm(fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SWITCHBOARD_LLM_TIMEOUT_S", "0.5")
    reset_settings()
    from flows.prompt_opt.llm import BilledLM
    from flows.prompt_opt.usage import Ledger

    ledger = Ledger("run", "user", "org", 5.0)
    model = BilledLM(provider=MINI[0], model=MINI[1], prices=(0.15, 0.6), ledger=ledger, task_type="optimization",
                     position=0, role="target", settings=get_settings().optimize)
    model.ledger = ledger
    return model


def gaps(fake: FakeOpenAI) -> list[float]:
    times = [t for _, t in fake.call_times]
    return [b - a for a, b in zip(times, times[1:])]


def test_rate_limits_are_retried_with_backoff_and_billed_once(lm, fake_llm: FakeOpenAI) -> None:
    fake_llm.rate_limited[MINI[1]] = 2  # two 429s, then an answer (SWITCHBOARD_LLM_RETRIES=2 here)
    assert lm.reply([{"role": "user", "content": "hello"}])
    assert [role for _, role in fake_llm.calls] == ["error", "error", "target"]
    assert all(gap >= 0.2 for gap in gaps(fake_llm)), gaps(fake_llm)  # waited between attempts
    assert len(lm.ledger.records) == 1  # only the answered call is a usage record


def test_a_provider_that_stays_down_or_hangs_raises_after_the_retries(lm, fake_llm: FakeOpenAI) -> None:
    fake_llm.rate_limited[MINI[1]] = 10**6
    with pytest.raises(Exception, match="(?i)rate ?limit") as raised:
        lm.reply([{"role": "user", "content": "hello"}])
    assert len(fake_llm.call_times) == 3 and not lm.ledger.records, raised.value

    fake_llm.rate_limited.clear()
    fake_llm.call_times.clear()
    fake_llm.stalled[MINI[1]] = 3.0  # longer than SWITCHBOARD_LLM_TIMEOUT_S=0.5
    started = time.monotonic()
    with pytest.raises(Exception, match="(?i)timed? ?out") as raised:
        lm.reply([{"role": "user", "content": "hello"}])
    assert len(fake_llm.call_times) == 3, raised.value  # the first try and two retries, each cut at 0.5 s
    assert time.monotonic() - started < 20


@pytest.mark.usefixtures("prefect_harness")
def test_unreachable_targets_fail_alone_with_the_reason(data_dir, fake_llm: FakeOpenAI, monkeypatch) -> None:
    from tests.support.optimization import run_flow, start_run, stored

    monkeypatch.setenv("SWITCHBOARD_LLM_TIMEOUT_S", "3")  # generous: the healthy target must never time out
    monkeypatch.setenv("SWITCHBOARD_LLM_RETRIES", "1")
    reset_settings()
    fake_llm.rate_limited[HAIKU[1]] = 10**6  # rate limited for ever
    fake_llm.stalled[FLASH[1]] = 10.0  # hangs past the timeout on every call
    fake_llm.flaky[MINI[1]] = 1  # one transient 503, retried
    run_id = start_run([MINI, HAIKU, FLASH], origin=None, fake=fake_llm, evaluation_metric="JSON_Match",
                       as_json=True)
    state, _ = run_flow(run_id)
    run, usage = stored(run_id)
    assert state.is_failed() and state.message == run.error
    ok, limited, hung = run.results
    assert ok.result_status == "completed" and ok.post_score == 1.0 and ok.system_prompt
    for failed, says in ((limited, "ratelimit"), (hung, "timeout")):
        assert failed.result_status == "failed" and failed.system_prompt is None, failed
        assert says in failed.error.lower().replace(" ", "").replace("_", ""), failed.error
    assert run.status == "failed" and "2 of 3 target models failed" in run.error
    assert {r["position"] for r in usage} == {0}  # refused and timed-out calls are not billed to anyone


def test_an_lm_for_a_provider_without_credentials_is_refused_before_any_call(fake_llm: FakeOpenAI, monkeypatch) -> None:
    """LiteLLM reports a missing key as a server error, which DSPy retries with backoff (18 s of nothing): the LM
    is refused when it is built instead, naming the settings, and a base URL for the provider alone is enough."""
    from flows.prompt_opt.llm import BilledLM, ProviderNotConfigured
    from flows.prompt_opt.usage import Ledger

    monkeypatch.delenv("SWITCHBOARD_LLM_API_BASE")
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SWITCHBOARD_OPENAI_API_BASE", fake_llm.base_url)
    reset_settings()

    def build(provider: str, model: str) -> BilledLM:
        return BilledLM(provider=provider, model=model, prices=(1.0, 1.0), ledger=Ledger("run", "user", "org", 5.0),
                        task_type="optimization", position=0, role="judge", settings=get_settings().optimize)

    with pytest.raises(ProviderNotConfigured) as refused:
        build(*HAIKU)
    assert str(refused.value) == (
        "no credentials for provider anthropic, needed by anthropic/claude-haiku-4-5 (judge): set ANTHROPIC_API_KEY "
        "or ANTHROPIC_AUTH_TOKEN, or point anthropic at an OpenAI-compatible server with SWITCHBOARD_ANTHROPIC_API_BASE"
        " (SWITCHBOARD_LLM_API_BASE for every provider), or name the model in the deployments file"
        " (SWITCHBOARD_DEPLOYMENTS)")
    assert fake_llm.calls == []
    assert build(*MINI).reply([{"role": "user", "content": "hello"}])  # the base URL makes OpenAI reachable

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-used")  # a key alone makes it callable (not called)
    reset_settings()
    assert build(*HAIKU).sb_provider == "anthropic"
