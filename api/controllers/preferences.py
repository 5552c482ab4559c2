"""Preferences: a user's named routing configuration (defaults, feedback, optional custom router)."""

from __future__ import annotations

from datetime import datetime, timezone

import msgspec
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody
from litestar import Controller, delete, post, put

from api.auth import SECURITY
from api.errors import BadRequest, NotFound
from api.openapi_docs import error_responses
from api.schemas.preferences import (PreferenceCreateRequest, PreferenceCreateResponse, PreferenceDeleteResponse,
                                     PreferenceResponse, UpdatePreferenceBase)
from api.services import Services
from storage.records import Preference, PreferenceChanges, User
from storage.retention import remove_inside


def not_found(preference_id: str) -> NotFound:
    return NotFound(f"preference {preference_id!r} not found for this API key's user",
                    code="PREFERENCE_NOT_FOUND", details={"preference_id": preference_id})


def to_response(pref: Preference) -> PreferenceResponse:
    fields = {f: getattr(pref, f) for f in PreferenceResponse.__struct_fields__}
    return PreferenceResponse(**fields)


class PreferenceController(Controller):
    path = "/v2/preferences"
    tags = ["preferences"]
    security = SECURITY

    @post("/userPreferenceCreate", operation_id="userPreferenceCreate", status_code=200,
          summary="Create a preference", responses=error_responses(404))
    async def create(self, data: JSONBody[PreferenceCreateRequest], user: NamedDependency[User], services: NamedDependency[Services]) -> PreferenceCreateResponse:
        name = data.name.strip() if data.name else ""
        if not name:
            name = "Preference " + datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        pref = services.store.preferences.create(user.user_id, name)
        return PreferenceCreateResponse(preference_id=pref.preference_id)

    @put("/userPreferenceUpdate", operation_id="userPreferenceUpdate", summary="Update a preference", responses=error_responses(404))
    async def update(self, data: JSONBody[UpdatePreferenceBase], user: NamedDependency[User], services: NamedDependency[Services]) -> PreferenceResponse:
        current = services.store.preferences.get(user.user_id, data.preference_id)
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
        updated = services.store.preferences.update(user.user_id, data.preference_id, changes)
        if updated is None:  # deleted between the read and the write
            raise not_found(data.preference_id)
        return to_response(updated)

    @delete("/userPreferenceDelete/{preference_id:str}", operation_id="userPreferenceDelete", status_code=200,
            summary="Delete a preference and its custom router", responses=error_responses(404))
    async def remove(self, preference_id: FromPath[str], user: NamedDependency[User], services: NamedDependency[Services]) -> PreferenceDeleteResponse:
        datasets = services.store.routers.datasets(preference_id)  # read first: the user's own ids only, below
        artefacts = services.store.preferences.delete(user.user_id, preference_id)
        if artefacts is None:
            raise not_found(preference_id)
        remove_inside(services.settings.artefacts_dir, artefacts)
        remove_inside(services.settings.data_dir / "uploads", datasets)  # the team's data goes with its preference
        return PreferenceDeleteResponse(preference_id=preference_id, deleted=True,
                                        custom_routers_removed=len(artefacts))
