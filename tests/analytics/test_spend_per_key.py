"""Spend per key for analysts (issue 34, item 5): gateway calls and the LLM calls of flows both carry the key id;
`spend_daily` adds them up per day, user, key, source and model; the HTML report's "LLM cost" card counts gateway
traffic (it showed 0.0000 after gateway traffic before), equal to the usage logs; and a caller's own usage over HTTP
reads the same rows, paged."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timezone

import pyarrow as pa
import pytest

from api.cli.main import main
from storage import analytics, events
from storage.event_schemas import GATEWAY_CALL_SCHEMA, USAGE_SCHEMA
from storage.layout import DataDir


def gateway_row(key_id: str | None, model: str, cost: float, user: str = "alice") -> dict:
    return {"session_id": str(uuid.uuid4()), "created_at": datetime.now(timezone.utc), "user_id": user,
            "organization_id": "acme", "requested_model": "switchboard", "mode": "routed", "stream": False,
            "chosen": model, "answered": model, "status": "ok", "http_status": 200, "attempts": 1,
            "input_tokens": 100, "output_tokens": 50, "cost_usd": cost, "key_id": key_id}


def usage_row(task_type: str, cost: float, key_id: str | None) -> dict:
    return {"id": str(uuid.uuid4()), "user_id": "alice", "organization_id": "acme", "adaptation_run_id": "run-1",
            "provider": "openai", "model": "gpt-4o-mini", "input_tokens": 10, "output_tokens": 5,
            "input_cost": cost / 2, "output_cost": cost / 2, "total_cost": cost, "timestamp": 1.0e9,
            "task_type": task_type, "position": 0, "role": "target", "latency_s": 0.1, "key_id": key_id}


GATEWAY = [gateway_row("key-a", "openai/gpt-4o", 0.25), gateway_row("key-a", "openai/gpt-4o", 0.125),
           gateway_row("key-b", "anthropic/claude-haiku-4-5", 0.5),
           {**gateway_row("key-b", "openai/gpt-4o", 0.0), "answered": None, "status": "failed"}]
USAGE = [usage_row("optimization", 0.0625, "key-a"), usage_row("judge_traffic", 0.03125, None)]
TOTAL = 0.25 + 0.125 + 0.5 + 0.0625 + 0.03125


@pytest.fixture
def logged(data_dir):
    events_dir = DataDir(data_dir).events_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    events.append(events_dir, "gateway_calls", pa.Table.from_pylist(GATEWAY, schema=GATEWAY_CALL_SCHEMA))
    events.append(events_dir, "llm_usage", pa.Table.from_pylist(USAGE, schema=USAGE_SCHEMA))
    return data_dir


def test_spend_daily_adds_gateway_and_flow_spend_per_key(logged) -> None:
    with analytics.connect(logged) as conn:
        rows = conn.execute("SELECT source, key_id, sum(calls), sum(cost_usd) FROM spend_daily GROUP BY ALL"
                            " ORDER BY source, key_id NULLS LAST").fetchall()
        assert rows == [("gateway", "key-a", 2, pytest.approx(0.375)), ("gateway", "key-b", 1, pytest.approx(0.5)),
                        ("judging", None, 1, pytest.approx(0.03125)),
                        ("prompt optimization", "key-a", 1, pytest.approx(0.0625))]
        assert conn.execute("SELECT count(*) FROM gateway_calls WHERE key_id = 'key-b'").fetchone()[0] == 2
        assert conn.execute("SELECT key_id FROM llm_usage WHERE task_type = 'optimization'").fetchone()[0] == "key-a"


def test_the_reports_llm_cost_card_counts_gateway_traffic(logged, tmp_path) -> None:
    out = tmp_path / "report.html"
    assert main(["report", "--out", str(out), "--data-dir", str(logged)]) == 0
    page = out.read_text(encoding="utf-8")
    card = re.search(r'<div class="k">([0-9.]+)</div>LLM cost \(USD\)', page)
    assert card is not None and float(card.group(1)) == pytest.approx(TOTAL, abs=1e-4)
    assert "key-b" in page  # the spend-per-key table


def test_a_caller_reads_its_own_usage_by_day_model_and_key_paged(logged, client, issue_key) -> None:
    headers = {"Authorization": f"Bearer {issue_key('alice', organization_id='acme').key}"}
    first = client.get("/usage", params={"limit": 2}, headers=headers).json()
    assert first["total"] == 4 and len(first["rows"]) == 2 and first["next_offset"] == 2
    rest = client.get("/usage", params={"limit": 2, "offset": 2}, headers=headers).json()
    rows = first["rows"] + rest["rows"]
    assert rest["next_offset"] is None
    by = {(r["source"], r["model"], r["key_id"]): r for r in rows}
    assert by[("gateway", "openai/gpt-4o", "key-a")]["requests"] == 2
    assert by[("gateway", "openai/gpt-4o", "key-a")]["cost_usd"] == pytest.approx(0.375)
    assert by[("judging", "openai/gpt-4o-mini", "")]["cost_usd"] == pytest.approx(0.03125)
    assert sum(r["cost_usd"] for r in rows) == pytest.approx(TOTAL)
    assert client.get("/usage", params={"since": "yesterday"}, headers=headers).status_code == 400
    other = {"Authorization": f"Bearer {issue_key('bob', organization_id='acme').key}"}
    assert client.get("/usage", headers=other).json()["total"] == 0
