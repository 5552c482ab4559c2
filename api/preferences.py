"""Preferences as the API offers them: create, read (one with its custom router and learning state, or the
caller's own page by page), update with the trade-off rule, delete with the team's files."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import json
from pathlib import Path

import msgspec

from api.errors import BadRequest, NotFound
from api.schemas.preferences import (CustomRouterSummary, LearningSummary, PreferenceDetail, PreferencePage,
                                     PreferenceResponse, UpdatePreferenceBase, read_entry, stored_entry)
from storage.interfaces import Learning, Preferences, Routers
from storage.layout import DataDir
from storage.records import Preference, PreferenceChanges, User
from storage.retention import remove_inside


def not_found(preference_id: str) -> NotFound:
    return NotFound(f"preference {preference_id!r} not found for this API key's user",
                    code="PREFERENCE_NOT_FOUND", details={"preference_id": preference_id})


def to_response(pref: Preference) -> PreferenceResponse:
    fields = {f: getattr(pref, f) for f in PreferenceResponse.__struct_fields__}
    if pref.llm_providers is not None:
        fields["llm_providers"] = [read_entry(entry) for entry in pref.llm_providers]
    return PreferenceResponse(**fields)


def _router_models(artefact: str) -> list[str]:
    """The models a published router was trained on, from its router.json (api/custom_router/model.py)."""
    try:
        spec = json.loads((Path(artefact) / "router.json").read_text(encoding="utf-8"))
        return [str(m["key"]) for m in spec.get("models", ())]
    except (OSError, ValueError, KeyError, TypeError):
        return []


@dataclass
class PreferenceService:
    preferences: Preferences
    routers: Routers
    layout: DataDir
    learning: Learning | None = None

    def read(self, user: User, preference_id: str) -> PreferenceDetail:
        pref = self.preferences.get(user.user_id, preference_id)  # another user's id reads as unknown
        if pref is None:
            raise not_found(preference_id)
        state = self.routers.state(preference_id)
        router = None
        if state.live is not None:
            summary: dict = {}
            if state.live.job_id is not None:
                try:
                    summary = json.loads(self.routers.training_metrics(state.live.job_id) or "{}").get("summary", {})
                except ValueError:
                    summary = {}
            held_out = summary.get("cv_router_quality_t0", summary.get("router_quality_t0"))
            router = CustomRouterSummary(
                router_id=state.live.router_id, trained_at=state.live.created_at,
                models=_router_models(state.live.artefact_path), held_out_accuracy=held_out,
                best_single_model=summary.get("best_single_model"),
                best_single_accuracy=summary.get("best_single_quality"))
        learning = None
        if self.learning is not None:
            versions = self.learning.versions(preference_id)
            live = next((v for v in versions if v.is_live), None) or self.learning.live(preference_id)
            learning = LearningSummary(versions=len(versions), live_version=live.version_id if live else None,
                                       live_labels=live.labels if live else None,
                                       live_since=live.created_at if live else None)
        base = msgspec.structs.asdict(to_response(pref))
        return PreferenceDetail(**base, custom_router=router, learning=learning,
                                training_status=state.job.status if state.job is not None else None)

    def page(self, user: User, offset: int, limit: int) -> PreferencePage:
        own = self.preferences.for_user(user.user_id)  # oldest first
        shown = own[offset: offset + limit]
        after = offset + len(shown)
        return PreferencePage(preferences=[to_response(p) for p in shown], total=len(own),
                              next_offset=after if after < len(own) else None)

    def create(self, user: User, name: str | None) -> Preference:
        name = name.strip() if name else ""
        if not name:
            name = "Preference " + datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return self.preferences.create(user.user_id, name)

    def update(self, user: User, data: UpdatePreferenceBase) -> Preference:
        current = self.preferences.get(user.user_id, data.preference_id)
        if current is None:
            raise not_found(data.preference_id)
        changes = PreferenceChanges(**{f: getattr(data, f) for f in PreferenceChanges.__struct_fields__})
        if isinstance(data.llm_providers, list):  # objects as modelSelect takes them, kept in the store's form
            changes = msgspec.structs.replace(changes, llm_providers=[stored_entry(c) for c in data.llm_providers])
        if changes.name is not msgspec.UNSET and not changes.name.strip():
            raise BadRequest("name must not be blank", code="INVALID_PREFERENCE")
        merged_tradeoff = current.tradeoff if data.tradeoff is msgspec.UNSET else data.tradeoff
        merged_cqt = (current.cost_quality_tradeoff if data.cost_quality_tradeoff is msgspec.UNSET
                      else data.cost_quality_tradeoff)
        if merged_tradeoff is not None and merged_cqt is not None:
            raise BadRequest("tradeoff and cost_quality_tradeoff are mutually exclusive; clear one with null",
                             code="INVALID_PREFERENCE")
        updated = self.preferences.update(user.user_id, data.preference_id, changes)
        if updated is None:  # deleted between the read and the write
            raise not_found(data.preference_id)
        return updated

    def delete(self, user: User, preference_id: str) -> int:
        """Delete the preference with its routers' artefacts and uploaded datasets; returns how many routers."""
        datasets = self.routers.datasets(preference_id)  # read first: only the user's own ids are deleted below
        artefacts = self.preferences.delete(user.user_id, preference_id)
        if artefacts is None:
            raise not_found(preference_id)
        remove_inside(self.layout.artefacts_dir, artefacts)
        remove_inside(self.layout.uploads_dir, datasets)  # the team's data goes with its preference
        return len(artefacts)
