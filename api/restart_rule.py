"""The restart rule: jobs still open when the service starts belong to flow runs that died with the last start.

`switchboard serve` restarts the flow runner together with the store, so a training job or optimization run still
`created`, `queued` or `processing` at start-up belongs to a flow run that no longer exists. It is marked `failed`
with a reason the caller can act on, never left open; the flow itself can no longer write to it (storage only
accepts results for open jobs). Applied where the flow runs' executor restarts together with the store: by
`switchboard serve` before its children start, and by an API process that owns the store itself. Never by API
workers behind a store owner: their flow runs on a work pool keep running, and housekeeping reconciles those jobs
with Prefect every 10 minutes.
"""

from __future__ import annotations

import logging

from storage.interfaces import Store
from storage.records import TRAIN_CUSTOM_ROUTER

log = logging.getLogger("switchboard.api")

TRAINING_REASON = "interrupted by a service restart before it finished; upload the data again"
OPTIMIZATION_REASON = "interrupted by a service restart before it finished; start the optimization again"


def apply_restart_rule(store: Store) -> None:
    trainings = store.jobs.fail_open(TRAIN_CUSTOM_ROUTER, TRAINING_REASON)
    if trainings:
        log.warning("%d custom router training job(s) were interrupted by the restart and marked failed",
                    len(trainings))
    runs = store.optimizations.fail_open(OPTIMIZATION_REASON)
    if runs:
        log.warning("%d prompt optimization run(s) were interrupted by the restart and marked failed", len(runs))
