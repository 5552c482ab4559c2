"""`housekeeping`: keeps the service's state honest. Prefect's scheduler starts it (interval: api/settings.py).

- reconcile-jobs: a job whose flow run ended (or vanished) without recording it is moved to the matching
  final JobStatus with a reason, so nothing stays `processing` after a crash or restart; a run left Pending longer
  than `pending_run_timeout_s` (its worker died with it, e.g. with its host) is first crashed in Prefect;
- compact-event-logs: merges finished days of Parquet event parts into one file per day;
- prune-stored-files: keeps the newest router versions of each preference (the live one always) and removes the
  rest with their artefact folders, and removes uploaded datasets no kept router needs once a grace period has
  passed (so a failed upload can still be inspected for a while);
- checkpoint-database: folds DuckDB's write-ahead log into the file.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from prefect import flow, get_run_logger, task

from api.public_errors import public_state_message
from api.settings import get_settings
from flows import prefect_api
from flows.run_metrics import FINAL_STATE_HOOKS
from flows.storage_access import connect
from storage.event_schemas import BY_TABLE
from storage.retention import remove_inside

EVENT_TABLES = tuple(BY_TABLE)  # every Parquet event log (storage/event_schemas.py)
NEVER_STARTED_AFTER = timedelta(minutes=15)


@task(name="reconcile-jobs", retries=2, retry_delay_seconds=5)
async def reconcile_jobs() -> int:
    logger = get_run_logger()
    store = connect()
    pending_timeout_s = get_settings().pending_run_timeout_s
    fixed = 0
    for job in store.jobs.list_open():
        if job.flow_run_id is None:
            if datetime.now(timezone.utc) - job.updated_at > NEVER_STARTED_AFTER:
                store.jobs.update(job.job_id, status="failed", only_if_open=True,
                                 error="the job was never handed to a flow run (service stopped before it started)")
                fixed += 1
            continue
        status, message = await prefect_api.flow_run_status(job.flow_run_id)
        if status == "queued" and await prefect_api.crash_if_stuck_pending(
                job.flow_run_id, pending_timeout_s, prefect_api.STUCK_PENDING_REASON):
            logger.warning("flow run %s of job %s stayed Pending over %.0f s: crashed", job.flow_run_id,
                           job.job_id, pending_timeout_s)
            status, message = "failed", prefect_api.STUCK_PENDING_REASON
        if status in prefect_api.FINAL_JOB_STATUSES:
            store.jobs.update(job.job_id, status=status, only_if_open=True,
                             error=None if status == "completed" else public_state_message(message, status))
            logger.info("job %s (%s) -> %s", job.job_id, job.kind, status)
            fixed += 1
    return fixed


@task(name="compact-event-logs")
def compact_event_logs() -> int:
    # lazy: pyarrow loads in the flow run, not in the flow runner that imports every flow
    from storage import events

    events_dir = get_settings().events_dir
    return sum(events.compact(events_dir, table) for table in EVENT_TABLES)


@task(name="prune-stored-files", retries=2, retry_delay_seconds=5)
def prune_stored_files(keep_router_versions: int, dataset_grace_days: int) -> dict[str, int]:
    settings, store = get_settings(), connect()
    routers = remove_inside(settings.artefacts_dir, store.routers.prune_versions(keep_router_versions))
    datasets = remove_inside(settings.layout.uploads_dir,
                             store.routers.unneeded_datasets(dataset_grace_days))
    return {"router_versions_removed": routers, "datasets_removed": datasets}


@task(name="checkpoint-database", retries=2, retry_delay_seconds=5)
def checkpoint_database() -> None:
    connect().maintenance.checkpoint()


@flow(name="housekeeping", **FINAL_STATE_HOOKS,
      flow_run_name=lambda: f"housekeeping {datetime.now(timezone.utc):%Y-%m-%d %H:%M}",
      log_prints=True)
async def housekeeping(keep_router_versions: int = 3, dataset_grace_days: int = 7) -> dict[str, int]:
    """`keep_router_versions`: router versions kept per preference, the live one included (older ones can be
    inspected in notebooks until pruned). `dataset_grace_days`: how long an upload no kept router needs stays."""
    jobs_fixed = await reconcile_jobs()
    files_compacted = compact_event_logs()
    pruned = prune_stored_files(keep_router_versions, dataset_grace_days)
    checkpoint_database()
    summary = {"jobs_reconciled": jobs_fixed, "event_files_compacted": files_compacted, **pruned}
    get_run_logger().info("housekeeping done: %s", summary)
    return summary
