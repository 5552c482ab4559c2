"""`learn-from-traffic`: for each preference with enough new labelled decisions, fit a challenger correction of
its router, evaluate it against the live one off-policy, keep it as a version, and promote it only when it is better
beyond the interval. Prefect's scheduler starts it hourly (flows/registry.py, SWITCHBOARD_LEARNING_INTERVAL_S);
`switchboard learning run --preference ID` runs it for one preference.

Tasks: find-preferences -> per preference: build-training-table (the analysts' view decision_evidence) ->
fit-and-evaluate (flows/learning/learn.py: the lexical learner, judged without exploration; the cluster correction
and the nearest-neighbour residual, judged off-policy) ->
record-version (the store keeps every version; promotion moves the pointer and the change feed brings it to every
API worker) -> publish-artifacts (the learning curve, both estimates, the decision).
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from api.routing.features import FEATURE_VERSION
from api.selection.learned import Correction, parse
from api.settings import get_settings
from flows.learning.learn import Outcome, learn
from flows.learning.table import Evidence, label_counts, load_evidence
from flows.run_metrics import FINAL_STATE_HOOKS
from flows.storage_access import connect


@task(name="find-preferences", cache_policy=NO_CACHE)
def find_preferences(preference_id: str | None, min_new_labels: int) -> list[str]:
    """Preferences whose labelled decisions grew by `min_new_labels` since their last fitted version."""
    # lazy: the analysts' views (DuckDB, pyarrow) load in the flow run, not in the runner that imports every flow
    from storage import analytics

    with analytics.connect(get_settings().data_dir) as conn:
        counts = label_counts(conn)
    # Opened after the analysts' connection is closed: without an owner (a flow run while the service is stopped)
    # both would open the same file.
    store = connect()
    due = []
    for pid, labels in sorted(counts.items()):
        if preference_id is not None and pid != preference_id:
            continue
        versions = store.learning.versions(pid)
        if labels - (versions[-1].labels if versions else 0) >= min_new_labels:
            due.append(pid)
    return due


@task(name="build-training-table", task_run_name="build-training-table {preference_id}", cache_policy=NO_CACHE)
def build_training_table(preference_id: str) -> Evidence:
    # lazy: as in find_preferences
    from storage import analytics

    with analytics.connect(get_settings().data_dir) as conn:
        return load_evidence(conn, preference_id)


@task(name="fit-and-evaluate", task_run_name="fit-and-evaluate {preference_id}", cache_policy=NO_CACHE)
def fit_and_evaluate(preference_id: str, evidence: Evidence) -> Outcome:
    live = connect().learning.live(preference_id)
    champion: Correction | None = None if live is None else parse(live.version_id, live.parameters)
    return learn(evidence, champion, FEATURE_VERSION)


@task(name="record-version", task_run_name="record-version {preference_id}", retries=2, retry_delay_seconds=3,
      cache_policy=NO_CACHE)
def record_version(preference_id: str, outcome: Outcome) -> str:
    version = connect().learning.record_version(preference_id, outcome.labels, outcome.parameters_json(),
                                                outcome.evaluation_json(), outcome.promote)
    return version.version_id


@task(name="publish-artifacts", cache_policy=NO_CACHE)
def publish_artifacts(preference_id: str, version_id: str, outcome: Outcome) -> None:
    e = outcome.evaluation
    key = "learning-" + "".join(ch if ch.isalnum() else "-" for ch in preference_id.lower())[:60]
    create_table_artifact(key=f"{key}-curve", table=e["learning_curve"],
                          description=f"Learning curve of preference {preference_id}: the challenger fitted on the "
                                      f"first N labels, scored ({e['estimator']}) on the {e['held_out']} most recent")
    rows = [{"policy": name, "estimator": est, **e[est][name]}
            for est in ("dr", "ips") for name in ("challenger", "champion", "difference")]
    create_table_artifact(key=f"{key}-estimates", table=rows,
                          description="Off-policy estimates (95 % interval) of the challenger and the champion")
    create_markdown_artifact(key=f"{key}-decision", markdown=(
        f"**{e['decision']}** for preference `{preference_id}` (version `{version_id}`, {e['kind']}): "
        f"{e['estimator'].upper()} difference {e['difference']['value']:+.4f} "
        f"[{e['difference']['low']:+.4f}, {e['difference']['high']:+.4f}] on {e['held_out']} held-out decisions; "
        f"fitted on {e['trained_on']}; the challenger changes {100 * e['changed_decisions']:.1f} % of decisions."
        + lexical_summary(e.get("lexical"))))


def lexical_summary(lexical: dict | None) -> str:
    """The lexical learner's gate in words (flows/learning/lexical_gate.py), for the decision artifact."""
    if not lexical:
        return ""
    r, d = lexical["replay_error_gain"], lexical["dm_difference"]
    return (f"\n\nLexical learner ({lexical['rows']} labels, penalty {lexical['penalty']:.3g}): leave-one-out replay "
            f"gain {r['value']:+.4f} [{r['low']:+.4f}, {r['high']:+.4f}], held-out direct-method difference "
            f"{d['value']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}]; "
            f"{'passed' if lexical['passed'] else 'not passed'}.")


@flow(name="learn-from-traffic", **FINAL_STATE_HOOKS,
      log_prints=True,
      flow_run_name=lambda: f"learn-from-traffic {datetime.now(timezone.utc):%Y-%m-%d %H:%M}")
def learn_from_traffic(preference_id: str | None = None, min_new_labels: int | None = None) -> dict[str, str]:
    """`preference_id`: only that preference (else every one that is due). `min_new_labels`: labels a preference
    must have gained since its last version (default SWITCHBOARD_LEARNING_MIN_NEW_LABELS)."""
    logger = get_run_logger()
    needed = min_new_labels if min_new_labels is not None else get_settings().learning_min_new_labels
    decisions = {}
    for pid in find_preferences(preference_id, needed):
        started = time.perf_counter()
        evidence = build_training_table(pid)
        outcome = fit_and_evaluate(pid, evidence)
        version_id = record_version(pid, outcome)
        publish_artifacts(pid, version_id, outcome)
        decisions[pid] = outcome.evaluation["decision"]
        logger.info("preference %s: %d labels, %s (version %s, %.1f s)", pid, len(evidence),
                    outcome.evaluation["decision"], version_id, time.perf_counter() - started)
    return decisions
