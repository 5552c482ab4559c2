"""Charts over the analytics views (storage/analytics.py), shared by the notebooks and `switchboard report`.

Each function takes the analytics connection and returns a matplotlib Figure built without pyplot, so the report
renders them headless and a notebook displays them as the cell's value. An empty view gives a figure that says so
rather than an error: a fresh service has nothing to plot yet.
"""

from __future__ import annotations

from typing import Any

import duckdb
from matplotlib.figure import Figure


def _rows(conn: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    cursor = conn.execute(sql, params or [])
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def _figure(title: str, size: tuple[float, float] = (7.0, 3.6)) -> tuple[Figure, Any]:
    fig = Figure(figsize=size, layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title)
    return fig, ax


def _nothing(ax: Any, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what} recorded yet", ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def _stacked_bars(ax: Any, rows: list[dict[str, Any]], x: str, group: str, value: str) -> None:
    xs = sorted({str(r[x]) for r in rows})
    groups = sorted({str(r[group]) for r in rows})
    bottom = [0.0] * len(xs)
    for g in groups:
        heights = [sum(float(r[value] or 0) for r in rows if str(r[x]) == xv and str(r[group]) == g) for xv in xs]
        ax.bar(xs, heights, bottom=bottom, label=g)
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.legend(fontsize="small")
    ax.tick_params(axis="x", labelrotation=30)


def _stacked_chart(conn: duckdb.DuckDBPyConnection, title: str, sql: str, what: str, x: str, group: str,
                   value: str, unit: str) -> Figure:
    """One query, one stacked bar chart (value per x, stacked by group), or a note that there is no data yet."""
    fig, ax = _figure(title)
    rows = _rows(conn, sql)
    if not rows:
        _nothing(ax, what)
    else:
        _stacked_bars(ax, rows, x, group, value)
        ax.set_ylabel(unit)
    return fig


def cost_by_day_and_model(conn: duckdb.DuckDBPyConnection) -> Figure:
    return _stacked_chart(conn, "LLM cost per day and model (USD)",
                          "SELECT day, provider || '/' || model AS model, sum(cost_usd) AS cost FROM llm_cost"
                          " GROUP BY ALL ORDER BY day", "LLM usage", "day", "model", "cost", "USD")


def gateway_spend_by_day_and_model(conn: duckdb.DuckDBPyConnection) -> Figure:
    """Realized spend through the OpenAI-compatible gateway (storage/analytics_views.sql, gateway_spend_daily)."""
    return _stacked_chart(conn, "Gateway spend per day and answering model (USD)",
                          "SELECT day, model, sum(cost_usd) AS cost FROM gateway_spend_daily GROUP BY ALL ORDER BY day",
                          "gateway calls", "day", "model", "cost", "USD")


def cost_by_task_type(conn: duckdb.DuckDBPyConnection) -> Figure:
    return _stacked_chart(conn, "LLM cost by task type and organization (USD)",
                          "SELECT task_type, organization_id, sum(cost_usd) AS cost FROM llm_cost GROUP BY ALL",
                          "LLM usage", "task_type", "organization_id", "cost", "USD")


def decisions_by_day_and_model(conn: duckdb.DuckDBPyConnection) -> Figure:
    return _stacked_chart(conn, "Routing decisions per day, by chosen model",
                          "SELECT day, chosen, sum(decisions) AS n FROM routing_daily GROUP BY ALL ORDER BY day",
                          "routing decisions", "day", "chosen", "n", "decisions")


def chosen_vs_candidates(conn: duckdb.DuckDBPyConnection) -> Figure:
    """How often each model was chosen when it was eligible: the router's preferences at a glance."""
    fig, ax = _figure("Chosen share when eligible, per model")
    rows = _rows(conn, "SELECT model, avg(is_chosen::INT) AS share, count(*) AS eligible FROM routing_candidates"
                       " GROUP BY model ORDER BY share DESC")
    if not rows:
        _nothing(ax, "routing decisions")
        return fig
    ax.barh([r["model"] for r in rows], [r["share"] for r in rows])
    for i, r in enumerate(rows):
        ax.text(r["share"], i, f" {r['eligible']} eligible", va="center", fontsize="small")
    ax.set_xlim(0, 1.25)
    ax.invert_yaxis()
    ax.set_xlabel("share of decisions where it was eligible")
    return fig


def tradeoff_quality_and_cost(conn: duckdb.DuckDBPyConnection) -> Figure:
    """Predicted quality and estimated cost of the chosen model at each cost_quality_tradeoff the callers used."""
    fig, ax = _figure("Chosen model by cost_quality_tradeoff")
    rows = _rows(conn, "SELECT coalesce(cost_quality_tradeoff, 0) AS t, avg(chosen_predicted_quality) AS q,"
                       " avg(chosen_estimated_cost_usd) * 1000 AS c FROM routing_decisions GROUP BY 1 ORDER BY 1")
    if not rows:
        _nothing(ax, "routing decisions")
        return fig
    ts = [r["t"] for r in rows]
    ax.plot(ts, [r["q"] for r in rows], marker="o", label="mean predicted quality")
    ax.set_xlabel("cost_quality_tradeoff (unset plotted at 0)")
    ax.set_ylabel("predicted quality")
    cost_ax = ax.twinx()
    cost_ax.plot(ts, [r["c"] for r in rows], marker="s", color="tab:orange", label="USD per 1k requests")
    cost_ax.set_ylabel("estimated USD per 1k requests")
    fig.legend(loc="outside lower center", ncols=2, fontsize="small")
    return fig


def feedback_accuracy(conn: duckdb.DuckDBPyConnection) -> Figure:
    """Reported accuracy per model next to what the router predicted for those sessions (calibration check)."""
    fig, ax = _figure("Feedback: reported accuracy vs predicted quality")
    rows = _rows(conn, "SELECT model, avg(accuracy) AS observed, avg(predicted_quality) AS predicted,"
                       " count(*) AS n FROM feedback GROUP BY model ORDER BY model")
    if not rows:
        _nothing(ax, "feedback")
        return fig
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["observed"] for r in rows], width=0.4, label="reported accuracy")
    ax.bar([x + 0.2 for x in xs], [r["predicted"] for r in rows], width=0.4, label="predicted quality")
    ax.set_xticks(list(xs), [f"{r['model']}\n(n={r['n']})" for r in rows], fontsize="small")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize="small")
    return fig


def router_quality_cost_curve(conn: duckdb.DuckDBPyConnection, job_id: str | None = None) -> Figure:
    """A custom router's held-out quality against cost at every trade-off setting, with each single model and the
    oracle as points (default: the latest training that recorded an evaluation)."""
    if job_id is None:
        latest = _rows(conn, "SELECT job_id FROM router_training_runs WHERE metrics IS NOT NULL"
                             " ORDER BY created_at DESC LIMIT 1")
        job_id = latest[0]["job_id"] if latest else None
    fig, ax = _figure(f"Custom router quality vs cost (job {str(job_id)[:8]})", size=(7.0, 4.2))
    rows = _rows(conn, "SELECT kind, name, setting, quality, cost_per_1k_requests_usd AS cost FROM router_evaluation"
                       " WHERE job_id = ? ORDER BY position", [job_id])
    if not rows:
        _nothing(ax, "router evaluation")
        return fig
    curve = sorted((r for r in rows if r["kind"] == "router"), key=lambda r: r["setting"])
    ax.plot([r["cost"] for r in curve], [r["quality"] for r in curve], marker="o", label="router, t = 0..10")
    for r in curve[::5]:
        ax.annotate(f"t={r['setting']}", (r["cost"], r["quality"]), fontsize="small", xytext=(4, 4),
                    textcoords="offset points")
    for r in rows:
        if r["kind"] != "router":
            ax.scatter(r["cost"], r["quality"], marker="*" if r["kind"] == "oracle" else "s", s=80, label=r["name"])
    ax.set_xlabel("USD per 1k requests")
    ax.set_ylabel("held-out quality (0..1)")
    ax.legend(fontsize="small")
    return fig


def optimization_before_after(conn: duckdb.DuckDBPyConnection, run_id: str | None = None) -> Figure:
    """Each target's score before and after optimization, with the origin model's baseline as a line (default: the
    latest run)."""
    if run_id is None:
        latest = _rows(conn, "SELECT run_id FROM optimization_runs ORDER BY created_at DESC LIMIT 1")
        run_id = latest[0]["run_id"] if latest else None
    fig, ax = _figure(f"Prompt optimization scores (run {str(run_id)[:8]})")
    rows = _rows(conn, "SELECT provider || '/' || model AS model, pre_score, post_score, origin_score"
                       " FROM optimization_results WHERE run_id = ? AND role = 'target' ORDER BY position", [run_id])
    if not rows:
        _nothing(ax, "prompt optimization runs")
        return fig
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["pre_score"] or 0 for r in rows], width=0.4, label="before")
    ax.bar([x + 0.2 for x in xs], [r["post_score"] or 0 for r in rows], width=0.4, label="after")
    if rows[0]["origin_score"] is not None:
        ax.axhline(rows[0]["origin_score"], color="grey", linestyle="--", label="origin model")
    ax.set_xticks(list(xs), [r["model"] for r in rows], fontsize="small")
    ax.set_xlim(-1, len(rows))  # keeps a single target's bars narrow
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score on the test goldens")
    ax.legend(fontsize="small")
    return fig


def learning_state(conn: duckdb.DuckDBPyConnection) -> Figure:
    """Each preference's learned corrections over time: the off-policy estimate of every challenger and of the
    champion it was compared with (docs/routing.md, "Learning from traffic"); filled markers were promoted."""
    fig, ax = _figure("Learning from traffic: estimated quality of challenger and champion")
    rows = _rows(conn, "SELECT preference_id, created_at, challenger_value, champion_value, promoted"
                       " FROM learning_versions ORDER BY created_at")
    if not rows:
        _nothing(ax, "learned corrections")
        return fig
    for pid in sorted({r["preference_id"] for r in rows})[:6]:
        mine = [r for r in rows if r["preference_id"] == pid]
        times = [r["created_at"] for r in mine]
        line, = ax.plot(times, [r["champion_value"] for r in mine], linestyle="--", label=f"{pid[:8]} champion")
        ax.scatter(times, [r["challenger_value"] for r in mine], color=line.get_color(),
                   facecolors=[line.get_color() if r["promoted"] else "none" for r in mine],
                   label=f"{pid[:8]} challenger")
    ax.set_ylabel("estimated quality (DR)")
    ax.legend(fontsize="small")
    return fig
