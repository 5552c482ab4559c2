"""Preferences: a user's named routing configuration (defaults, feedback, optional custom router)."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, delete, get, post, put
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, Parameter

from api.auth import SECURITY
from api.dependencies import component
from api.openapi_docs import error_responses
from api.preferences import PreferenceService, to_response
from api.schemas.preferences import (
    PreferenceCreateRequest,
    PreferenceCreateResponse,
    PreferenceDeleteResponse,
    PreferenceDetail,
    PreferencePage,
    PreferenceResponse,
    UpdatePreferenceBase,
)
from storage.records import User


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

    @get("/", operation_id="listPreferences", summary="The caller's own preferences, oldest first, page by page",
         responses=error_responses(), sync_to_thread=True)
    def list_own(self, user: NamedDependency[User], preferences: NamedDependency[PreferenceService],
                 offset: Annotated[int, Parameter(ge=0, le=1_000_000)] = 0,
                 limit: Annotated[int, Parameter(ge=1, le=200)] = 50) -> PreferencePage:
        return preferences.page(user, offset, limit)

    @get("/{preference_id:str}", operation_id="getPreference", summary="A preference: its defaults, custom router "
         "and learning state", responses=error_responses(404), sync_to_thread=True)
    def read(self, preference_id: FromPath[str], user: NamedDependency[User],
             preferences: NamedDependency[PreferenceService]) -> PreferenceDetail:
        return preferences.read(user, preference_id)

    @delete("/userPreferenceDelete/{preference_id:str}", operation_id="userPreferenceDelete", status_code=200,
            summary="Delete a preference and its custom router", responses=error_responses(404), sync_to_thread=True)
    def remove(self, preference_id: FromPath[str], user: NamedDependency[User],
                     preferences: NamedDependency[PreferenceService]) -> PreferenceDeleteResponse:
        removed = preferences.delete(user, preference_id)
        return PreferenceDeleteResponse(preference_id=preference_id, deleted=True, custom_routers_removed=removed)
