"""Start-up of the custom router side of the API: the restart rule, the in-memory registry, the upload service.

Restart rule. `switchboard serve` restarts the flow runner together with the store, so a training job still
`created`, `queued` or `processing` when it starts belongs to a flow run that no longer exists (
api/startup.py says who applies it; not API workers behind a store owner, whose flows run on a work pool).
It is marked `failed` ("interrupted by a service restart"), never left open; modelSelect then says so
(400 ROUTER_TRAINING_FAILED) and the team uploads again. The flow itself can no longer publish for it (storage
only publishes from an open job), and the housekeeping flow applies the same reconciliation from Prefect's side
every 10 minutes for runs that crash while the service keeps running.
"""

from __future__ import annotations

import logging

from api.catalogue import Catalogue
from api.launcher import PrefectLauncher
from api.custom_router.registry import CustomRouterRegistry
from api.custom_router.submission import RouterTrainingService
from api.routing.features import Featurizer
from api.settings import Settings
from storage.records import TRAIN_CUSTOM_ROUTER

log = logging.getLogger("switchboard.custom_routers")
RESTART_REASON = "interrupted by a service restart before it finished; upload the data again"


def fail_interrupted_trainings(store) -> None:
    interrupted = store.jobs.fail_open(TRAIN_CUSTOM_ROUTER, RESTART_REASON)
    if interrupted:
        log.warning("%d custom router training job(s) were interrupted by the restart and marked failed",
                    len(interrupted))


def custom_router_services(settings: Settings, store, catalogue: Catalogue,
                           featurizer: Featurizer) -> tuple[CustomRouterRegistry, RouterTrainingService]:
    # Subscribed before loading, so a change committed meanwhile is applied after the load, not lost.
    registry = CustomRouterRegistry(store, featurizer, settings.artefacts_dir).attach().load_all()
    return registry, RouterTrainingService(store, catalogue, settings, PrefectLauncher("custom-router"))
