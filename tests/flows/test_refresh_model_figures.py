"""refresh-model-figures (flows/model_figures/refresh.py): a figures file is checked whole before anything is
swapped, and a running API (another process, behind the store owner) routes by the new figures without a restart,
through the store's change feed (api/model_figures/live.py)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from api.model_figures.figures_csv import InvalidFigures, parse_figures
from api.settings import reset_settings
from api.shipped import shipped
from storage import owner
from tests.support.api_server import ApiServer

SHIPPED = shipped("model_benchmarks.csv").read_text(encoding="utf-8")
NEW = "newco/brand-new-model"
NEW_ROWS = "".join(f"newco,brand-new-model,{b},{s},test,https://example.org/newco,the test's own figure\n"
                   for b, s in (("MMLU", 96.0), ("GSM8K", 98.0), ("HumanEval", 98.0)))


@pytest.mark.parametrize("text, problem", [
    ("provider,model\nopenai,gpt-4o\n", "lacks the column(s) benchmark, score"),
    (SHIPPED.replace(",MMLU,84.7,", ",MMLU,847,", 1), "line 2: score 847.0 is not a percentage"),
    (SHIPPED.replace(",MMLU,84.7,", ",MMLUU,84.7,", 1), "line 2: unknown benchmark 'MMLUU'"),
    (SHIPPED.replace(",MMLU,84.7,", ",MMLU,n/a,", 1), "line 2: score 'n/a' is not a number"),
    (SHIPPED.split("\n", 1)[0] + "\n", "has no rows"),
    (SHIPPED.split("\n", 1)[0] + "\nopenai,x,MMLU,80,p,https://e.org,n\n", "no model a figure on the maths axis"),
    (SHIPPED.split("\n", 1)[0] + "\n,x,MMLU,80,p,https://e.org,n\n", "line 2: provider and model must not be empty"),
])
def test_a_bad_figures_file_is_refused_with_the_line_and_the_reason(text, problem):
    with pytest.raises(InvalidFigures, match=None) as raised:
        parse_figures(text)
    assert problem in str(raised.value)


def test_the_shipped_file_reads_as_a_refresh_would():
    assert len(parse_figures(SHIPPED)) == SHIPPED.count("\n") - 1


def choose(server: ApiServer, key: str) -> httpx.Response:
    return httpx.post(f"{server.url}/v2/modelRouter/modelSelect", headers={"Authorization": f"Bearer {key}"}, json={
        "messages": [{"role": "user", "content": "Prove that there are infinitely many primes of the form 4k+3."}],
        "cost_quality_tradeoff": 0,
        "llm_providers": [{"provider": "openai", "model": "gpt-4o-mini"},
                          {"provider": "newco", "model": "brand-new-model", "is_custom": True,
                           "context_length": 128000, "input_price": 0.5, "output_price": 1.5, "latency": 1.0}]},
        timeout=30)


@pytest.mark.usefixtures("prefect_harness")
def test_a_running_api_routes_by_refreshed_figures_and_a_bad_file_swaps_nothing(data_dir, tmp_path, monkeypatch):
    from flows.model_figures.refresh import refresh_model_figures

    monkeypatch.setenv("SWITCHBOARD_ONBOARD_AUTO", "false")
    server = ApiServer(data_dir, extra_env={"SWITCHBOARD_ONBOARD_AUTO": "false"})
    store = None
    try:
        store = owner.open_store(server.db_path, server.run_dir)  # the flow's way in: RPC to the owner
        key = store.accounts.issue_key("alice").key
        before = choose(server, key)
        assert before.status_code == 200 and before.headers["x-switchboard-no-evidence"] == NEW, before.headers
        assert before.json()["providers"][0]["model"] == "gpt-4o-mini"

        good = tmp_path / "figures.csv"
        good.write_text(SHIPPED + NEW_ROWS, encoding="utf-8")
        reset_settings()
        result = refresh_model_figures(str(good))
        assert result["changed"] and result["rows"] == SHIPPED.count("\n") - 1 + 3
        deadline, after = time.monotonic() + 30, before  # the feed is polled every 0.5 s; this bounds a broken one
        while "x-switchboard-no-evidence" in after.headers and time.monotonic() < deadline:
            time.sleep(0.2)
            after = choose(server, key)
        assert "x-switchboard-no-evidence" not in after.headers
        assert after.json()["providers"][0]["model"] == "brand-new-model"  # better figures win at t=0
        assert refresh_model_figures(str(good))["changed"] is False  # the same file again: nothing to swap

        bad = tmp_path / "bad.csv"
        bad.write_text(SHIPPED.replace(",MMLU,84.7,", ",MMLU,847,", 1), encoding="utf-8")
        with pytest.raises(InvalidFigures, match="not a percentage"):
            refresh_model_figures(str(bad))
        assert store.model_figures.live_figure_set().set_id == result["set_id"]
        with pytest.raises(FileNotFoundError):
            refresh_model_figures(str(Path(tmp_path / "missing.csv")))
        time.sleep(1.0)  # two feed polls: had anything been swapped, it would show now
        assert choose(server, key).json()["providers"][0]["model"] == "brand-new-model"
    finally:
        if store is not None:
            store.close()
        server.kill()
