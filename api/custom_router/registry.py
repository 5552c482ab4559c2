"""Which router serves a preference, kept in memory so modelSelect never queries DuckDB for it.

Every change to a training job or a custom router goes through the store's owner (storage/owner.py), from the
upload controller or from the flow's RPC calls, and the store tells this registry (Store.subscribe). The registry
then re-reads that one preference's state and, when a new router went live, loads its artefact. In the process
that owns the store this happens before the publishing call returns; an API worker behind a store owner hears of
changes made elsewhere from the owner's change feed, within about half a second (storage/owner_changes.py).

The rule modelSelect applies to a preference (the latest training job decides):
- no training job: the default router;
- latest job created / queued / processing: 409 ROUTER_TRAINING_IN_PROGRESS with `Retry-After` the likely seconds
  until its router is live (api/custom_router/training_wait.py);
- latest job failed (or cancelled, e.g. by a service restart or in the Prefect UI): 400 ROUTER_TRAINING_FAILED,
  whose message says why and asks for a new upload;
- latest job completed: its live custom router.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.parquet as pq

from api.custom_router.model import load_custom_router
from api.custom_router.training_wait import retry_after_seconds
from api.errors import ApiError, BadRequest, ServiceUnavailable
from api.public_errors import public_reason
from api.routing.features import FeatureVersionMismatch
from storage.records import OPEN_JOB_STATUSES, CustomRouterRecord, Preference, RouterState, is_key_subject

if TYPE_CHECKING:
    from api.custom_router.model import CustomRouter
    from api.routing.features import Featurizer

log = logging.getLogger("switchboard.custom_routers")


class RouterTrainingInProgress(ApiError):
    status, code, type = 409, "ROUTER_TRAINING_IN_PROGRESS", "conflict_error"


@dataclass(frozen=True)
class Entry:
    state: RouterState
    router: "CustomRouter | None"
    load_error: str | None = None
    expected_s: float | None = None  # typical upload-to-live seconds of a training like the open job's


class CustomRouterRegistry:
    """RouterSource for SelectionService: preference -> live custom router, or an error while it has none."""

    def __init__(self, store, featurizer: "Featurizer | None" = None, artefacts_root: Path | None = None):
        self.store = store
        self.featurizer = featurizer
        self.artefacts_root = artefacts_root.resolve() if artefacts_root else None
        self._entries: dict[str, Entry] = {}
        self._lock = threading.Lock()
        # Held from reading a state to applying it: notifications arrive on several threads, and a state read
        # earlier must never be applied after one read later.
        self._sync = threading.RLock()

    def load_all(self) -> "CustomRouterRegistry":
        with self._sync:
            for state in self.store.routers.states():
                self._apply(state)
        return self

    def attach(self) -> "CustomRouterRegistry":
        self.store.subscribe(self.refresh, resync=self.load_all)
        return self

    def refresh(self, preference_id: str) -> None:
        if is_key_subject(preference_id):  # a revoked key, not a preference
            return
        with self._sync:
            self._apply(self.store.routers.state(preference_id))

    def _apply(self, state: RouterState) -> None:
        if state.job is None and state.live is None:
            with self._lock:
                self._entries.pop(state.preference_id, None)
            return
        with self._lock:
            previous = self._entries.get(state.preference_id)
        router, error = None, None
        if state.live is not None:
            same = previous is not None and previous.state.live is not None and \
                previous.state.live.router_id == state.live.router_id and previous.router is not None
            if same:
                router = previous.router  # type: ignore[union-attr]
            else:
                router, error = self._load(state.live)
        expected = self._expected_seconds(state.job.job_id) if state.job and state.job.status in OPEN_JOB_STATUSES \
            else None
        with self._lock:
            self._entries[state.preference_id] = Entry(state, router, error, expected)

    def _expected_seconds(self, job_id: str) -> float | None:
        try:
            return self.store.routers.expected_training_seconds(job_id)
        except Exception:  # only the wait's estimate: its default does while the store is unreachable
            log.warning("could not estimate the training time of job %s", job_id, exc_info=True)
            return None

    def _load(self, live: CustomRouterRecord) -> tuple["CustomRouter | None", str | None]:
        def training_prompts() -> list[str]:  # only routers trained on e5 by an earlier version ask for them
            path = self.store.routers.training_dataset(live.job_id) if live.job_id else None
            if path is None:
                raise FileNotFoundError(f"no training dataset recorded for router {live.router_id}")
            return pq.read_table(path, columns=["prompt"]).column("prompt").to_pylist()

        try:
            return load_custom_router(Path(live.artefact_path), self.featurizer, training_prompts), None
        except FeatureVersionMismatch as exc:  # its message names the artefact's folder: for the log only
            log.error("could not load custom router %s: %s", live.artefact_path, exc)
            return None, ("it was trained by another version of switchboard, whose format this one cannot read; "
                          "upload the data again with POST /v2/pzn/trainCustomRouter")
        except Exception as exc:  # a broken artefact must not take the API down; modelSelect says why
            return None, public_reason(exc, f"loading router {live.router_id}") + \
                "; upload the data again with POST /v2/pzn/trainCustomRouter"

    def entry(self, preference_id: str) -> Entry | None:
        return self._entries.get(preference_id)

    def for_preference(self, preference: Preference | None) -> "CustomRouter | None":
        if preference is None:
            return None
        entry = self._entries.get(preference.preference_id)
        if entry is None:
            return None
        job, pid = entry.state.job, preference.preference_id
        if job is not None and job.status in OPEN_JOB_STATUSES:
            uploaded = job.created_at if job.created_at.tzinfo else job.created_at.replace(tzinfo=timezone.utc)
            wait = retry_after_seconds(job.status, (datetime.now(timezone.utc) - uploaded).total_seconds(),
                                       entry.expected_s)
            raise RouterTrainingInProgress(
                f"the custom router of preference {pid!r} is still training (job {job.status}); retry in "
                f"{wait} seconds", headers={"Retry-After": str(wait)},
                details={"preference_id": pid, "job_status": job.status, "retry_after_seconds": wait})
        if job is not None and job.status in ("failed", "cancelled"):
            what = "failed" if job.status == "failed" else "was cancelled"
            raise BadRequest(
                f"training the custom router of preference {pid!r} {what}"
                f": {job.error or 'no reason recorded'}. Upload the data again with POST /v2/pzn/trainCustomRouter",
                code="ROUTER_TRAINING_FAILED", details={"preference_id": pid, "job_status": job.status,
                                                        "reason": job.error})
        if entry.router is None:
            raise ServiceUnavailable(f"the custom router of preference {pid!r} could not be loaded: "
                                     f"{entry.load_error or 'no live router'}", code="ROUTER_UNAVAILABLE")
        return entry.router
