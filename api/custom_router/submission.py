"""Accepting a router-training upload: check, validate (polars, time-limited), store as Parquet, queue the flow.

Nothing is queued unless the whole upload is valid. The order is chosen so that a refused upload changes nothing:
form fields and models first, then the preference (404 / override), then the CSV, and only then a new preference
(when none was given), the job (cancelling the preference's earlier open jobs) and the flow run.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
import msgspec

from api.catalogue import Catalogue
from api.custom_router.encoders import LANGUAGES
from api.errors import (
    ApiError,
    BadRequest,
    Conflict,
    NotFound,
    PayloadTooLarge,
    RequestTimeout,
    ServiceUnavailable,
)
from api.launcher import TRAIN_CUSTOM_ROUTER, FlowLauncher, why_not_queued
from api.offload import off_loop
from api.schemas.common import readable
from api.schemas.model_select import LLMProvider
from api.schemas.router_training import TrainCustomRouterForm
from api.selection.candidates import resolve
from api.settings import Settings
from storage.records import OPEN_JOB_STATUSES, User


def resolve_models(raw: str, catalogue: Catalogue) -> list[dict[str, Any]]:
    """llm_providers (a JSON string) -> one entry per model: CSV column prefix, canonical key, prices."""
    try:
        entries = msgspec.json.decode(raw.encode("utf-8", "surrogatepass"), type=list[LLMProvider])
    except RecursionError:  # msgspec's decoder gives up on very deep nesting this way
        raise BadRequest("llm_providers is nested too deeply; send a JSON array of {provider, model} objects",
                         code="INVALID_LLM_PROVIDERS") from None
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise BadRequest(f"llm_providers must be a JSON array of {{provider, model}} objects: {readable(str(exc))}",
                         code="INVALID_LLM_PROVIDERS") from None
    resolve(entries, catalogue, aggregator=False)  # refuses unknown models, naming all of them at once
    resolved, prefixes = [], {}
    for p in entries:
        r = resolve([p], catalogue, aggregator=False)[0]
        if r.candidate.key not in prefixes:  # duplicates collapse, first mention wins
            prefixes[r.candidate.key] = p.model if p.provider is None else f"{p.provider}/{p.model}"
            resolved.append(r)
    if len(resolved) < 2:
        raise BadRequest("llm_providers must name at least two different models to route between",
                         code="TOO_FEW_MODELS")
    return [{"column_prefix": prefixes[r.candidate.key], "key": r.candidate.key,
             "provider": r.candidate.provider, "model": r.candidate.model, "input_price": r.candidate.input_price,
             "output_price": r.candidate.output_price, "context_length": r.candidate.context_length,
             "latency": r.candidate.latency_s, "is_custom": r.is_custom} for r in resolved]


class RouterTrainingService:
    def __init__(self, store, catalogue: Catalogue, settings: Settings, launcher: FlowLauncher):
        self.store, self.catalogue, self.settings, self.launcher = store, catalogue, settings, launcher

    async def submit(self, form: TrainCustomRouterForm, user: User) -> str:
        if form.language not in LANGUAGES:
            raise BadRequest(f"language must be one of {', '.join(LANGUAGES)}; got {form.language!r}",
                             code="INVALID_LANGUAGE")
        if not form.prompt_column.strip():
            raise BadRequest("prompt_column must name a column of dataset_file", code="MISSING_COLUMN")
        models = resolve_models(form.llm_providers, self.catalogue)
        override = True if form.override is None else form.override
        if form.preference_id is not None:
            await off_loop(self._check_preference, user, form.preference_id, override)

        raw = await form.dataset_file.read()
        limit = self.settings.upload_max_bytes
        if len(raw) > limit:
            raise PayloadTooLarge(f"dataset_file is {len(raw):,} bytes; the limit is {limit:,} bytes",
                                  details={"bytes": len(raw), "limit": limit})
        dataset_id = str(uuid.uuid4())
        path = self.settings.layout.uploads_dir / "router_training" / f"{dataset_id}.parquet"
        rows = await self._validate_and_store(raw, form.prompt_column, models, path)

        pref_id = form.preference_id or (await off_loop(
            self.store.preferences.create, user.user_id,
            "Custom router " + datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))).preference_id
        start = await off_loop(self.store.routers.start_training, user.user_id, pref_id, str(path), form.language,
                               form.maximize, json.dumps(models), rows)
        for old in start.superseded:  # their jobs are already `cancelled` in storage; stop the runs too
            if old.flow_run_id:
                try:
                    await self.launcher.cancel(old.flow_run_id)
                except Exception:  # best effort: a superseded run cannot publish anyway (storage refuses it)
                    pass
        params = {"job_id": start.job.job_id, "preference_id": pref_id, "dataset_path": str(path),
                  "language": form.language, "maximize": form.maximize, "models": models}
        try:
            flow_run_id = await self.launcher.trigger(TRAIN_CUSTOM_ROUTER, params)
        except Exception as exc:
            reason = why_not_queued(exc, TRAIN_CUSTOM_ROUTER)
            await off_loop(self.store.jobs.update, start.job.job_id, status="failed", only_if_open=True,
                           error=f"could not queue the training flow: {reason}")
            raise ServiceUnavailable(f"the dataset is valid but the training flow could not be queued: {reason}; "
                                     "try again shortly", code="FLOW_UNAVAILABLE", headers={"Retry-After": "5"}) from exc
        await off_loop(self.store.jobs.mark_queued, start.job.job_id, flow_run_id)
        return pref_id

    def _check_preference(self, user: User, preference_id: str, override: bool) -> None:
        if self.store.preferences.get(user.user_id, preference_id) is None:
            raise NotFound(f"preference {preference_id!r} not found for this API key's user",
                           code="PREFERENCE_NOT_FOUND", details={"preference_id": preference_id})
        if override:
            return
        state = self.store.routers.state(preference_id)
        if state.live is not None or (state.job is not None and state.job.status in OPEN_JOB_STATUSES):
            raise Conflict(f"preference {preference_id!r} already has a custom router"
                           f"{' in training' if state.live is None else ''}; send override=true to replace it",
                           code="CUSTOM_ROUTER_EXISTS", details={"preference_id": preference_id})

    async def _validate_and_store(self, raw: bytes, prompt_column: str, models: list[dict], path: Path) -> int:
        def work() -> int:  # in a worker thread: parsing, and polars' first import, never stall the event loop
            # lazy: polars loads on the first upload, never on modelSelect's path
            from api.custom_router import validation

            dataset = validation.validate(raw, prompt_column, [m["column_prefix"] for m in models])
            path.parent.mkdir(parents=True, exist_ok=True)
            dataset.frame.rename({prompt_column: "prompt"} if prompt_column != "prompt" else {}).write_parquet(path)
            return dataset.rows

        seconds = self.settings.upload_parse_seconds
        try:
            with anyio.fail_after(seconds):
                return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except TimeoutError:
            raise RequestTimeout(f"parsing dataset_file took longer than {seconds:g} s; send a smaller file",
                                 code="DATASET_PARSE_TIMEOUT") from None
        except ApiError:
            raise
