"""`judge-traffic`: a judge model grades the gateway answers sampled for it (api/gateway/judge_sampling.py), per
preference, in batches, never on the request path. Prefect's scheduler starts it every SWITCHBOARD_JUDGE_INTERVAL_S
(flows/registry.py); `switchboard learning judge [--preference ID]` queues a run.

Tasks: find-samples (the unjudged samples, from the analysts' views over `judge_samples` and `judge_verdicts`) ->
per preference: grade-samples (its judge settings read from the store now, the day's spend summed from the usage
log first; shadow calls and the judge's calls through the prompt optimizer's model-call layer, each a usage record
with task type `shadow_call` / `judge_traffic`; the batch stops at the daily budget) -> the usage records and the
verdicts (no text) appended to their event logs. decision_evidence (storage/analytics_views.sql) takes a verdict
as the label of a decision without caller feedback; learn-from-traffic needs no change.
"""

from __future__ import annotations

from datetime import datetime, time, timezone
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from api.settings import get_settings
from flows.learning.judge_grading import JUDGE_TASK, SHADOW_TASK, grade, today_utc, usage_run_id
from flows.run_metrics import FINAL_STATE_HOOKS
from flows.storage_access import connect

UNJUDGED_SQL = """
WITH marked AS (
    SELECT s.session_id, s.created_at, s.user_id, s.organization_id, s.preference_id, s.content, s.answer, s.model,
           s.shadow_model, s.shadow_propensity, s.embedding, s.candidates, s.input_prices, s.output_prices,
           EXISTS (SELECT 1 FROM events_judge_verdicts v
                   WHERE v.session_id = s.session_id AND v.model = s.model AND NOT v.shadow) AS answer_judged,
           EXISTS (SELECT 1 FROM events_judge_verdicts v
                   WHERE v.session_id = s.session_id AND v.model = s.shadow_model AND v.shadow) AS shadow_judged
    FROM events_judge_samples s
    WHERE s.preference_id IS NOT NULL AND (CAST(? AS VARCHAR) IS NULL OR s.preference_id = ?)
), todo AS (
    SELECT *, row_number() OVER (PARTITION BY preference_id ORDER BY created_at, session_id) AS n
    FROM marked WHERE NOT (answer_judged AND (shadow_model IS NULL OR shadow_judged))
)
SELECT * EXCLUDE (n) FROM todo WHERE n <= ? ORDER BY preference_id, created_at, session_id
"""

@task(name="find-samples", cache_policy=NO_CACHE)
def find_samples(preference_id: str | None, batch: int) -> dict[str, list[dict[str, Any]]]:
    """The unjudged samples of each preference (of one, when given), oldest first, at most `batch` each."""
    # lazy: the analysts' views (DuckDB, pyarrow) load in the flow run, not in the runner that imports every flow
    from storage import analytics

    with analytics.connect(get_settings().data_dir) as conn:
        cursor = conn.execute(UNJUDGED_SQL, [preference_id, preference_id, batch])
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, row)) for row in cursor.fetchall()]
    found: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        found.setdefault(row["preference_id"], []).append(row)
    return found


def spent_today(preference_id: str) -> float:
    """USD the preference's judge and shadow calls have cost since 00:00 UTC (the usage log, read through its
    filesystem with the filter pushed down: no analysts' connection, which would copy the whole catalogue)."""
    # lazy: pyarrow loads in the flow run, not in the runner that imports every flow
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    from storage import events
    from storage.event_schemas import USAGE_SCHEMA

    midnight = datetime.combine(today_utc(), time(), tzinfo=timezone.utc).timestamp()
    logged = events.dataset(get_settings().events_dir, "llm_usage", USAGE_SCHEMA)
    spent = logged.to_table(columns=["total_cost"], filter=(
        (ds.field("adaptation_run_id") == usage_run_id(preference_id))
        & ds.field("task_type").isin([JUDGE_TASK, SHADOW_TASK]) & (ds.field("timestamp") >= midnight)))
    return float(pc.sum(spent["total_cost"]).as_py() or 0.0)


@task(name="grade-samples", task_run_name="grade-samples {preference_id}", cache_policy=NO_CACHE)
def grade_samples(preference_id: str, samples: list[dict[str, Any]]) -> dict[str, Any]:
    # lazy: pyarrow, the catalogue and DSPy/LiteLLM (the model-call layer) load in the flow run only
    import pyarrow as pa
    from api.budgets import BudgetGate
    from api.catalogue.catalogue import load_catalogue
    from flows.prompt_opt.llm import BilledLM
    from flows.prompt_opt.usage import Ledger
    from storage import events
    from storage.event_schemas import JUDGE_VERDICT_SCHEMA

    settings = get_settings()
    before = spent_today(preference_id)
    store = connect()
    try:
        pref = store.preferences.get(samples[0]["user_id"], preference_id)
        if pref is None or not pref.judge_budget_usd:
            return {"graded": 0, "stopped": "the preference is gone or has no judge budget", "spent_usd": 0.0}
        judge_model = pref.judge_model or settings.optimize.judge_model
        # Judge and shadow calls are billed to the preference's user and organization: their budgets apply
        # (api/budgets.py); no key made them.
        ledger = Ledger(usage_run_id(preference_id), samples[0]["user_id"], samples[0]["organization_id"],
                        max(0.0, float(pref.judge_budget_usd) - before), budget=BudgetGate(store.budgets))
        catalogue = load_catalogue()
        models: dict[tuple[str, str], BilledLM] = {}

        def reply(name: str, prices: tuple[float, float], task_type: str, role: str,
                  messages: list[dict[str, str]]) -> str:
            lm = models.get((name, task_type))
            if lm is None:
                provider, _, model = name.partition("/")
                lm = models[(name, task_type)] = BilledLM(provider=provider, model=model, prices=prices,
                                                          ledger=ledger, task_type=task_type, position=-1, role=role,
                                                          settings=settings.optimize)
            return lm.reply(messages)

        batch = grade(samples, judge_model, reply, catalogue, lambda: ledger.total)
    finally:
        store.close()  # before the next task opens the analysts' connection (no owner: the same file)
    # Spend first: were the verdicts lost, the samples are graded again, and the budget has counted both.
    events.append(settings.events_dir, "llm_usage", ledger.table(ledger.records))
    events.append(settings.events_dir, "judge_verdicts", pa.Table.from_pylist(batch.verdicts,
                                                                              schema=JUDGE_VERDICT_SCHEMA))
    return {"graded": len(batch.verdicts), "unparsed": batch.unparsed, "stopped": batch.stopped,
            "spent_usd": ledger.total, "spent_today_usd": before + ledger.total, "judge_model": judge_model}


@flow(name="judge-traffic", **FINAL_STATE_HOOKS,
      log_prints=True,
      flow_run_name=lambda: f"judge-traffic {datetime.now(timezone.utc):%Y-%m-%d %H:%M}")
def judge_traffic(preference_id: str | None = None, batch: int | None = None) -> dict[str, dict[str, Any]]:
    """`preference_id`: only that preference's samples (else every one's). `batch`: samples per preference at most
    (default SWITCHBOARD_JUDGE_BATCH)."""
    logger = get_run_logger()
    results = {}
    for pid, samples in find_samples(preference_id, batch or get_settings().judge_batch).items():
        results[pid] = r = grade_samples(pid, samples)
        logger.info("preference %s: %s", pid, r)
        key = "judge-" + "".join(ch if ch.isalnum() else "-" for ch in pid.lower())[:60]
        create_markdown_artifact(key=key, markdown=(
            f"Preference `{pid}`: {r['graded']} of {len(samples)} samples graded by `{r.get('judge_model')}` for "
            f"${r['spent_usd']:.6f} (today ${r.get('spent_today_usd', 0.0):.6f}); "
            f"{'stopped: ' + r['stopped'] if r['stopped'] else 'the batch finished'}."))
    return results
