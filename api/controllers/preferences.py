"""Preferences: a user's named routing configuration (defaults, feedback, optional custom router)."""

from __future__ import annotations

from litestar import Controller, delete, post, put
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from api.auth import SECURITY
from api.dependencies import component
from api.openapi_docs import error_responses
from api.preferences import PreferenceService
from api.schemas.preferences import (
    PreferenceCreateRequest,
    PreferenceCreateResponse,
    PreferenceDeleteResponse,
    PreferenceResponse,
    UpdatePreferenceBase,
)
from storage.records import Preference, User


def to_response(pref: Preference) -> PreferenceResponse:
    fields = {f: getattr(pref, f) for f in PreferenceResponse.__struct_fields__}
    return PreferenceResponse(**fields)


class PreferenceController(Controller):
    """Each handler calls the store (an HTTP call to the store owner behind one), so each runs in a worker thread."""

    path = "/v2/preferences"
    tags = ["preferences"]
    security = SECURITY
    dependencies = {"preferences": component("preferences")}

    @post("/userPreferenceCreate", operation_id="userPreferenceCreate", status_code=200,
          summary="Create a preference", responses=error_responses(404), sync_to_thread=True)
    def create(self, data: JSONBody[PreferenceCreateRequest], user: NamedDependency[User],
                     preferences: NamedDependency[PreferenceService]) -> PreferenceCreateResponse:
        return PreferenceCreateResponse(preference_id=preferences.create(user, data.name).preference_id)

    @put("/userPreferenceUpdate", operation_id="userPreferenceUpdate", summary="Update a preference",
         responses=error_responses(404), sync_to_thread=True)
    def update(self, data: JSONBody[UpdatePreferenceBase], user: NamedDependency[User],
                     preferences: NamedDependency[PreferenceService]) -> PreferenceResponse:
        return to_response(preferences.update(user, data))

    @delete("/userPreferenceDelete/{preference_id:str}", operation_id="userPreferenceDelete", status_code=200,
            summary="Delete a preference and its custom router", responses=error_responses(404), sync_to_thread=True)
    def remove(self, preference_id: FromPath[str], user: NamedDependency[User],
                     preferences: NamedDependency[PreferenceService]) -> PreferenceDeleteResponse:
        removed = preferences.delete(user, preference_id)
        return PreferenceDeleteResponse(preference_id=preference_id, deleted=True, custom_routers_removed=removed)
