"""Start-up of the custom router side of the API: the in-memory registry and the upload service."""

from __future__ import annotations

from api.catalogue import Catalogue
from api.custom_router.registry import CustomRouterRegistry
from api.custom_router.submission import RouterTrainingService
from api.launcher import PrefectLauncher
from api.routing.features import Featurizer
from api.settings import Settings
from storage.interfaces import Store


def custom_router_services(settings: Settings, store: Store, catalogue: Catalogue,
                           featurizer: Featurizer) -> tuple[CustomRouterRegistry, RouterTrainingService]:
    # Subscribed before loading, so a change committed meanwhile is applied after the load, not lost.
    registry = CustomRouterRegistry(store, featurizer, settings.artefacts_dir).attach().load_all()
    return registry, RouterTrainingService(store, catalogue, settings, PrefectLauncher("custom-router"))
