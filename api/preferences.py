"""Preferences as the API offers them: create, update with the trade-off rule, delete with the team's files."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import msgspec

from api.errors import BadRequest, NotFound
from api.schemas.preferences import UpdatePreferenceBase
from storage.interfaces import Preferences, Routers
from storage.layout import DataDir
from storage.records import Preference, PreferenceChanges, User
from storage.retention import remove_inside


def not_found(preference_id: str) -> NotFound:
    return NotFound(f"preference {preference_id!r} not found for this API key's user",
                    code="PREFERENCE_NOT_FOUND", details={"preference_id": preference_id})


@dataclass
class PreferenceService:
    preferences: Preferences
    routers: Routers
    layout: DataDir

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
