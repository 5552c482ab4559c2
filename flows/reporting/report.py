"""`switchboard report`: one self-contained HTML file (charts embedded as base64 PNG) summarising usage, routing,
feedback, custom routers and prompt optimization, for people who do not use notebooks.

It reads through storage/analytics.py, so it works while the service runs and holds no lock afterwards.
"""

from __future__ import annotations

import base64
import html
import io
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from api.settings import get_settings
from flows.reporting import charts
from storage import analytics

_STYLE = """body{font-family:system-ui,sans-serif;max-width:960px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:90%}
th{background:#f3f3f3}td.n{text-align:right}img{max-width:100%}.k{font-size:160%;font-weight:600}
.cards{display:flex;gap:1.5em;flex-wrap:wrap}.cards div{border:1px solid #ddd;padding:.6em 1em;border-radius:6px}"""


def _png(fig: Any) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=96)
    return f'<img alt="{html.escape(fig.axes[0].get_title())}" src="data:image/png;base64,' \
           f'{base64.b64encode(buffer.getvalue()).decode()}">'


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f'<td class="n">{value:.4g}</td>'
    if isinstance(value, int):
        return f'<td class="n">{value}</td>'
    return f"<td>{html.escape('' if value is None else str(value))}</td>"


def _table(conn: duckdb.DuckDBPyConnection, sql: str) -> str:
    cursor = conn.execute(sql)
    names = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    if not rows:
        return "<p><em>nothing recorded yet</em></p>"
    head = "".join(f"<th>{html.escape(n)}</th>" for n in names)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _headline(conn: duckdb.DuckDBPyConnection) -> str:
    figures = conn.execute(
        "SELECT (SELECT count(*) FROM routing_decisions), (SELECT count(DISTINCT user_id) FROM routing_decisions),"
        " (SELECT count(*) FROM feedback), (SELECT avg(accuracy) FROM feedback),"
        " (SELECT coalesce(sum(cost_usd), 0) FROM spend_daily), (SELECT count(*) FROM router_training_runs),"
        " (SELECT count(*) FROM optimization_runs)").fetchone()
    labels = ("routing decisions", "users routing", "feedback reports", "reported accuracy", "LLM cost (USD)",
              "router trainings", "prompt optimizations")
    shown = [f"{v:.2%}" if i == 3 and v is not None else f"{v:.4f}" if i == 4 else str(v if v is not None else "-")
             for i, v in enumerate(figures)]
    return '<div class="cards">' + "".join(
        f'<div><div class="k">{html.escape(s)}</div>{html.escape(label)}</div>' for s, label in zip(shown, labels)
    ) + "</div>"


def render(conn: duckdb.DuckDBPyConnection, data_dir: Path) -> str:
    """The report as an HTML string."""
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>switchboard report</title>"
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>switchboard report</h1><p>Data dir <code>{html.escape(str(data_dir))}</code>, generated {now}.</p>",
        _headline(conn),
        "<h2>Routing</h2>", _png(charts.decisions_by_day_and_model(conn)), _png(charts.chosen_vs_candidates(conn)),
        _png(charts.tradeoff_quality_and_cost(conn)),
        _table(conn, "SELECT chosen AS model, router_kind, sum(decisions) AS decisions,"
                     " round(avg(mean_predicted_quality), 4) AS mean_predicted_quality,"
                     " round(sum(estimated_cost_usd), 6) AS estimated_cost_usd FROM routing_daily"
                     " GROUP BY ALL ORDER BY decisions DESC LIMIT 20"),
        "<h2>Feedback</h2>", _png(charts.feedback_accuracy(conn)),
        "<h2>Learning from traffic</h2>", _png(charts.learning_state(conn)),
        _table(conn, "SELECT preference_id, day, decisions, labelled, explored, corrected FROM learning_evidence_daily"
                     " WHERE preference_id IS NOT NULL ORDER BY day DESC, labelled DESC LIMIT 20"),
        _table(conn, "SELECT preference_id, version_id, created_at, labels, round(challenger_value, 4) AS challenger,"
                     " round(champion_value, 4) AS champion, round(difference_low, 4) AS difference_low,"
                     " decision, is_live FROM learning_versions ORDER BY created_at DESC LIMIT 20"),
        "<h2>LLM usage and cost</h2>",
        # Everything paid for (the card above): gateway traffic, prompt optimization and judging, per key.
        _table(conn, "SELECT source, organization_id, user_id, key_id, sum(calls) AS calls,"
                     " sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,"
                     " round(sum(cost_usd), 6) AS cost_usd FROM spend_daily GROUP BY ALL ORDER BY cost_usd DESC"
                     " LIMIT 20"),
        _png(charts.cost_by_day_and_model(conn)), _png(charts.cost_by_task_type(conn)),
        _table(conn, "SELECT organization_id, provider || '/' || model AS model, sum(calls) AS calls,"
                     " sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,"
                     " round(sum(cost_usd), 6) AS cost_usd FROM llm_cost GROUP BY ALL ORDER BY cost_usd DESC LIMIT 20"),
        "<h2>Custom routers</h2>", _png(charts.router_quality_cost_curve(conn)),
        _table(conn, "SELECT job_id, preference_name, status, rows, n_models, best_single_model,"
                     " round(best_single_quality, 4) AS best_single, round(router_quality_t0, 4) AS router_t0,"
                     " round(oracle_quality, 4) AS oracle, is_live, flow_run_id FROM router_training_runs"
                     " ORDER BY created_at DESC LIMIT 20"),
        "<h2>Prompt optimization</h2>", _png(charts.optimization_before_after(conn)),
        _table(conn, "SELECT run_id, user_id, status, targets, targets_completed, round(origin_score, 4) AS origin,"
                     " round(mean_pre_score, 4) AS before, round(mean_post_score, 4) AS after,"
                     " round(cost_usd, 6) AS cost_usd, flow_run_id FROM optimization_runs"
                     " ORDER BY created_at DESC LIMIT 20"),
        "</body></html>",
    ]
    return "\n".join(parts)


def write_report(out: Path, data_dir: Path | None = None) -> Path:
    data_dir = data_dir or get_settings().data_dir
    conn = analytics.connect(data_dir)
    try:
        text = render(conn, data_dir)
    finally:
        conn.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out
