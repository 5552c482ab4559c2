"""The figures every API worker serves, swapped in without a restart.

Base figures: the newest set the refresh-model-figures flow stored (flows/model_figures/refresh.py), else the file
the router loaded (SWITCHBOARD_MODEL_FIGURES, default datasets/model_benchmarks.csv). On top, the figures onboarding
measured (api/model_figures/measured.py): an admin-published run's serve everyone, any other run's only its own
organization. Each combination is a DefaultRouter of its own (DefaultRouter.with_prior over
capability.prior_with), built when the store says something changed, never on the hot path: every change notifies
MODEL_FIGURES_SUBJECT on the store's change feed (docs/architecture.md, "One owner of the DuckDB file"), and after an
owner restart or a gap the feed's resync reloads everything, as for custom routers and preferences. A request reads
its organization's router once; one in flight when the figures change finishes with the router it started with.
The trade-off dial scores its calibration pool with the router everyone is served (CurrentRouter) when it first
meets a candidate set; a set it scored before a change keeps those pool scores, while the caller's own decisions,
which replace the pool as they accumulate, carry the new figures (api/routing/dial.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from api.model_figures.figures_csv import InvalidFigures, parse_figures
from api.model_figures.measured import decode, figure_rows
from api.routing.capability import FigureRow, prior_with
from api.routing.default_router import DefaultRouter
from api.routing.router import Candidate
from storage.model_figure_records import MODEL_FIGURES_SUBJECT, OnboardingRun

log = logging.getLogger("switchboard.model_figures")
EVIDENCE_SOURCES = ("prior", "family")  # a model's own figures, or a snapshot's or sibling's (capability.py)


@dataclass(frozen=True)
class _Served:
    fingerprint: tuple  # ((set id, published run ids), {organization: its measured run ids})
    everyone: DefaultRouter
    by_organization: dict[str, DefaultRouter] = field(default_factory=dict)
    runs: dict[str, tuple[OnboardingRun, ...]] = field(default_factory=dict)  # organization -> its runs
    published: tuple[OnboardingRun, ...] = ()
    figure_set: str | None = None  # id of the refreshed set served; None: the file
    base: list[FigureRow] = field(default_factory=list)  # the set's rows, or the file's
    shared: list[FigureRow] = field(default_factory=list)  # published runs' rows


class LiveFigures:
    def __init__(self, store, router: DefaultRouter, file_rows: list[FigureRow]) -> None:
        self.store, self._loaded, self._file_rows = store, router, file_rows
        self._served = _Served(((None, ()), {}), router, base=file_rows)
        self._lock = threading.Lock()  # one reload at a time; readers never wait
        self._no_evidence: dict[tuple, tuple[DefaultRouter, tuple[str, ...]]] = {}

    def attach(self) -> "LiveFigures":
        self.store.subscribe(self._changed, resync=self.reload)
        return self.reload()

    def _changed(self, subject: str) -> None:
        if subject == MODEL_FIGURES_SUBJECT:
            self.reload()

    def reload(self) -> "LiveFigures":
        """Rebuild what changed: everyone's router when the figure set or a published run changed (then every
        organization's too), else only the routers of organizations whose own measured runs changed."""
        with self._lock:
            served = self._served
            set_id = self.store.model_figures.live_figure_set_id()
            runs = self.store.model_figures.onboardings()
            measured = [r for r in runs if r.status == "completed" and r.figures]
            published = [r for r in measured if r.published]
            shared_key = (set_id, tuple(r.run_id for r in published))
            private: dict[str, list[OnboardingRun]] = {}
            for r in measured:
                if not r.published:
                    private.setdefault(r.organization_id, []).append(r)
            fingerprint = (shared_key, {org: tuple(r.run_id for r in rs) for org, rs in private.items()})
            if fingerprint == served.fingerprint:
                self._served = replace(served, runs=_by_organization(runs))
                return self
            if shared_key != served.fingerprint[0]:
                base = self._base_rows(set_id)
                shared = [row for r in published for row in _rows(r)]
                everyone = self._loaded if set_id is None and not shared else \
                    self._loaded.with_prior(prior_with(base, shared, self._loaded.prior))
                kept: dict[str, DefaultRouter] = {}
            else:
                base, shared, everyone = served.base, served.shared, served.everyone
                kept = {org: router for org, router in served.by_organization.items()
                        if served.fingerprint[1].get(org) == fingerprint[1].get(org)}
            by_organization = {org: kept.get(org) or self._loaded.with_prior(
                prior_with(base, shared + [row for r in rs for row in _rows(r)], self._loaded.prior))
                for org, rs in private.items()}
            self._served = _Served(fingerprint, everyone, by_organization, _by_organization(runs), tuple(published),
                                   set_id, base, shared)
            self._no_evidence = {}  # keyed by router: the replaced routers' entries would only pin them in memory
        log.info("model figures reloaded: %s, %d published and %d private onboarded models",
                 f"set {set_id}" if set_id else "the file", len(published), sum(len(v) for v in private.values()))
        return self

    def _base_rows(self, set_id: str | None) -> list[FigureRow]:
        if set_id is None:
            return self._file_rows
        figure_set = self.store.model_figures.live_figure_set()
        if figure_set is None:  # removed meanwhile (a restore): the file's
            return self._file_rows
        try:
            return parse_figures(figure_set.content)
        except InvalidFigures as exc:  # checked when stored; only a code change can make it fail now
            log.error("the stored figure set %s no longer reads (%s): serving the file's figures", set_id, exc)
            return self._file_rows

    @property
    def everyone(self) -> DefaultRouter:
        return self._served.everyone

    @property
    def figure_set(self) -> str | None:
        return self._served.figure_set

    def router_for(self, organization_id: str | None) -> DefaultRouter:
        served = self._served
        return served.by_organization.get(organization_id or "", served.everyone)

    def no_evidence(self, router: DefaultRouter, candidates: Sequence[Candidate]) -> tuple[str, ...]:
        """no_evidence() memoised per router and candidate set (callers send the same list again and again; the
        hot path pays a dictionary look-up). Routers are replaced, never changed, when figures change."""
        key = (id(router), tuple((c.provider, c.model) for c in candidates))
        found = self._no_evidence.get(key)
        if found is None or found[0] is not router:
            if len(self._no_evidence) > 10_000:  # candidate sets are caller-defined: keep memory bounded
                self._no_evidence.clear()
            found = self._no_evidence[key] = (router, no_evidence(router, candidates))
        return found[1]

    def runs_for(self, organization_id: str | None) -> tuple[OnboardingRun, ...]:
        """The organization's onboarding runs and every published one (what GET /v2/models shows it)."""
        served = self._served
        own = served.runs.get(organization_id or "", ())
        return own + tuple(r for r in served.published if r.organization_id != organization_id)


def no_evidence(router: DefaultRouter, candidates: Sequence[Candidate]) -> tuple[str, ...]:
    """The candidates the router has no figures for on any axis, its own or a snapshot's or sibling's: it places
    them by the prior for the unknown (api/routing/capability.py). Profiles are memoised by the prior."""
    out = []
    for c in candidates:
        _, _, sources, _ = router.prior.profile(c.provider, c.model)
        if not any(s in EVIDENCE_SOURCES for s in sources):
            out.append(c.key)
    return tuple(out)


class CurrentRouter:
    """The router everyone is served, for holders built once at start-up (the trade-off dial's calibration pool,
    api/routing/calibration_pool.py)."""

    def __init__(self, live: LiveFigures) -> None:
        self._live = live

    def predict_quality_batch(self, vectors: np.ndarray, candidates: Sequence[Candidate]) -> np.ndarray:
        return self._live.everyone.predict_quality_batch(vectors, candidates)


def _rows(run: OnboardingRun) -> list[FigureRow]:
    return figure_rows(run.provider, run.model, decode(run.figures), run.run_id)


def _by_organization(runs: list[OnboardingRun]) -> dict[str, tuple[OnboardingRun, ...]]:
    grouped: dict[str, list[OnboardingRun]] = {}
    for r in runs:
        grouped.setdefault(r.organization_id, []).append(r)
    return {org: tuple(v) for org, v in grouped.items()}
