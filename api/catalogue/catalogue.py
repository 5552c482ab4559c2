"""The in-memory catalogue: lookups, filters and the active/deprecated split."""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterable, Sequence

from api.catalogue import litellm_source, openrouter
from api.catalogue.model import CatalogueModel, UnknownProviderError
from api.catalogue.openrouter import Match
from api.catalogue.providers import PROVIDERS, normalise_provider


class Catalogue:
    """Immutable view of the supported models as of one date.

    The date only decides which models count as deprecated; everything else is
    fixed at load time, so a Catalogue can be shared freely between requests.
    """

    def __init__(
        self,
        models: Iterable[tuple[CatalogueModel, Match | None]],
        today: datetime.date,
    ) -> None:
        self.today = today
        pairs = list(models)
        self._models: tuple[CatalogueModel, ...] = tuple(
            sorted((m for m, _ in pairs), key=lambda m: (m.provider, m.model))
        )
        self._by_key = {(m.provider, m.model): m for m in self._models}
        self._by_aggregator = self._reverse_index(pairs)

    def _reverse_index(self, pairs: list[tuple[CatalogueModel, Match | None]]) -> dict[str, CatalogueModel]:
        # Several catalogue models can share one OpenRouter id (a dated snapshot
        # and its alias; Together's copy of an open model). The reverse lookup
        # answers with the one a caller most plausibly means: an active model
        # before a deprecated one, the model's own lab before a reseller, a
        # surer match before a looser one, then the shortest (alias) id.
        first_party = {p.name: p.first_party for p in PROVIDERS}
        best: dict[str, tuple[tuple, CatalogueModel]] = {}
        for model, found in pairs:
            if found is None:
                continue
            rank = (
                model.is_deprecated(self.today),
                not first_party.get(model.provider, False),
                found.rank,
                len(model.model),
                model.provider,
                model.model,
            )
            current = best.get(found.openrouter_model)
            if current is None or rank < current[0]:
                best[found.openrouter_model] = (rank, model)
        return {openrouter_id: model for openrouter_id, (_, model) in best.items()}

    def __len__(self) -> int:
        return len(self._models)

    def providers(self) -> set[str]:
        return {m.provider for m in self._models}

    def get(self, provider: str, model: str) -> CatalogueModel | None:
        """Exact lookup; the provider may be given in any known spelling."""
        name = normalise_provider(provider)
        return self._by_key.get((name, model)) if name else None

    def by_aggregator(self, aggregator_model: str) -> CatalogueModel | None:
        return self._by_aggregator.get(aggregator_model.strip())

    def list(
        self,
        providers: Sequence[str] | None = None,
        aggregator_only: bool = False,
    ) -> tuple[list[CatalogueModel], list[CatalogueModel]]:
        """(active, deprecated), both sorted by provider then model.

        Raises UnknownProviderError when any requested provider is unknown,
        rather than silently answering with fewer models.
        """
        wanted = self._resolve_providers(providers) if providers else None
        active: list[CatalogueModel] = []
        deprecated: list[CatalogueModel] = []
        for model in self._models:
            if wanted is not None and model.provider not in wanted:
                continue
            if aggregator_only and model.aggregator_model is None:
                continue
            (deprecated if model.is_deprecated(self.today) else active).append(model)
        return active, deprecated

    def _resolve_providers(self, names: Sequence[str]) -> set[str]:
        resolved = {name: normalise_provider(name) for name in names}
        known = self.providers()
        unknown = [name for name, canonical in resolved.items() if canonical not in known]
        if unknown:
            raise UnknownProviderError(unknown, known)
        return {canonical for canonical in resolved.values() if canonical}


@functools.lru_cache(maxsize=1)
def _matched_models() -> tuple[tuple[CatalogueModel, Match | None], ...]:
    """Parse the price map and match OpenRouter ids once per process."""
    models = litellm_source.read_catalogue_models(litellm_source.load_price_map())
    known_ids = openrouter.read_known_ids()
    overrides = openrouter.read_overrides()
    return tuple(openrouter.attach_openrouter_ids(models, known_ids, overrides))


def load_catalogue(today: datetime.date | None = None) -> Catalogue:
    """The catalogue as of ``today`` (default: the local date now).

    The expensive part is cached per process; each call only rebuilds the
    indexes, so passing a fixed date in tests costs milliseconds.
    """
    return Catalogue(_matched_models(), today or datetime.date.today())
