"""Secrets: API keys are stored hashed, compared in constant time and never logged; provider keys (the
SWITCHBOARD_*_API_KEY settings, OPENAI_API_KEY) appear in no log record, error message or stored record, also when
an optimization runs and fails against the (fake) provider."""

from __future__ import annotations

import hmac
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from api.settings import get_settings
from storage.keys import hash_key
from storage.store import LocalStore
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.fakes.provider import fake_provider
from tests.support.optimization import run_flow, start_run, stored

CREATE = "/v2/preferences/userPreferenceCreate"
PROVIDER_SECRETS = {"SWITCHBOARD_LLM_API_KEY": "sk-canary-LLM-5f1b8e0c9d",
                    "SWITCHBOARD_OPENAI_API_KEY": "sk-canary-OPENAI-77aa03e1",
                    "OPENAI_API_KEY": "sk-canary-ENV-0b9c44d2"}


def text_columns(store: LocalStore) -> dict[tuple[str, str], list]:
    """(table, column) -> values, for every text column of every table in the store."""
    columns = store.database.rows("SELECT table_name, column_name FROM information_schema.columns "
                                  "WHERE data_type = 'VARCHAR' AND table_schema = 'main'")
    return {(t, c): [r[0] for r in store.database.rows(f'SELECT "{c}" FROM "{t}"')] for t, c in columns}


def files_containing(root: Path, needles: list[str]) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            hits += [f"{path}: {n}" for n in needles if n.encode() in data]
    return hits


def logged_text(caplog) -> str:
    return "\n".join(f"{r.getMessage()} {r.exc_text or ''} {r.args!r}" for r in caplog.records)


@pytest.fixture
def everything_logged(caplog):
    caplog.set_level(logging.DEBUG)  # every logger, every level: nothing may print a secret
    return caplog


def test_api_keys_are_stored_only_as_hashes(client, issue_key, data_dir):
    issued = issue_key("alice")
    assert client.post(CREATE, json={}, headers={"Authorization": f"Bearer {issued.key}"}).status_code == 200
    values = text_columns(client.app.state.services.store)
    assert hash_key(issued.key) in values[("api_keys", "key_hash")]
    assert not [(t, c) for (t, c), v in values.items() if any(issued.key in str(x) for x in v)]
    assert not files_containing(data_dir, [issued.key])


def test_api_keys_never_reach_logs_or_error_bodies(client, issue_key, everything_logged):
    issued = issue_key("alice")
    revoked = issue_key("alice")
    client.app.state.services.store.accounts.revoke_key(revoked.info.key_id)
    client.app.state.services.authenticator.cache.clear()
    bodies = []
    for key in (issued.key, revoked.key, issued.key + "x", "sb-" + "A" * 400):
        response = client.post(CREATE, json={}, headers={"Authorization": f"Bearer {key}"})
        bodies.append(response.text if response.status_code != 200 else "")
        bodies.append(client.delete("/v2/preferences/userPreferenceDelete/nope",
                                    headers={"Authorization": f"Bearer {key}"}).text)
    text = logged_text(everything_logged) + "\n".join(bodies)
    for key in (issued.key, revoked.key):
        assert key not in text
        assert key[12:] not in text  # not even past a shown prefix


def test_key_and_owner_token_comparisons_are_constant_time(client, issue_key, monkeypatch):
    compared: list[tuple] = []
    real = hmac.compare_digest

    def recording(a, b):
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", recording)
    issued = issue_key("carol")
    client.app.state.services.authenticator.cache.clear()
    assert client.post(CREATE, json={}, headers={"Authorization": f"Bearer {issued.key}"}).status_code == 200
    assert any(hash_key(issued.key) in (a, b) for a, b in compared), "the key hash lookup must use compare_digest"
    compared.clear()
    response = client.post("/internal/rpc/accounts.user_for_key", json={"key_hash": "x"},
                           headers={"Authorization": "Bearer not-the-owner-token"})
    assert response.status_code == 401
    assert any(b"not-the-owner-token" in (a, b) or "not-the-owner-token" in (a, b) for a, b in compared)


@pytest.fixture
def canary_llm(data_dir, monkeypatch) -> Iterator[FakeOpenAI]:
    with fake_provider(monkeypatch, retries=0, **PROVIDER_SECRETS) as fake:
        yield fake


@pytest.mark.usefixtures("prefect_harness")
def test_provider_keys_appear_in_no_log_error_or_stored_record(canary_llm, data_dir, everything_logged):
    from flows.prompt_opt.llm import litellm_route

    route = litellm_route("openai", "gpt-4o-mini", get_settings().optimize)
    assert route["api_key"] == PROVIDER_SECRETS["SWITCHBOARD_OPENAI_API_KEY"]  # the key really is in use
    # The origin model answers (billed calls carrying the key); the target's provider answers 401 quoting the key
    # it was sent, as some providers and proxies do: that error is stored and logged, with the key cut out.
    canary_llm.echo_key.add("claude-haiku-4-5")
    run_id = start_run([("anthropic", "claude-haiku-4-5")], origin=("openai", "gpt-4o-mini"), fake=canary_llm,
                       evaluation_metric="JSON_Match", as_json=True)
    _, summary = run_flow(run_id)
    run, usage = stored(run_id)
    target = next(r for r in run.results if r.model == "claude-haiku-4-5")
    assert summary["status"] == "failed" and target.result_status == "failed"
    assert target.error.startswith("LMAuthError") and "credentials" in target.error  # the provider's text: log only
    assert {r["model"] for r in usage} >= {"gpt-4o-mini"} and run.error

    secrets = list(PROVIDER_SECRETS.values())
    seen = logged_text(everything_logged) + repr(summary) + repr(run) + repr(usage)
    assert not [s for s in secrets if s in seen]
    assert not files_containing(data_dir, secrets)
    store = LocalStore(get_settings().db_path)
    try:
        assert not [tc for tc, v in text_columns(store).items() if any(s in str(x) for x in v for s in secrets)]
    finally:
        store.close()


def test_a_provider_error_quoting_the_key_is_raised_with_the_key_cut_out(canary_llm, everything_logged):
    from flows.prompt_opt.llm import BilledLM, ProviderError
    from flows.prompt_opt.usage import Ledger

    canary_llm.echo_key.add("gpt-4o-mini")
    lm = BilledLM(provider="openai", model="gpt-4o-mini", prices=(0.15, 0.6),
                  ledger=Ledger("run", "alice", "acme", 1.0), task_type="evaluation", position=0, role="target",
                  settings=get_settings().optimize)
    with pytest.raises(ProviderError) as raised:
        lm.reply([{"role": "user", "content": "hi"}])
    text = str(raised.value)
    assert "Incorrect API key provided: Bearer [redacted]" in text and raised.value.__suppress_context__
    assert not [s for s in PROVIDER_SECRETS.values() if s in text + logged_text(everything_logged)]
