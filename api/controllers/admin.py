"""Key management over HTTP, for admin keys of an organization (api/key_admin.py holds the rules; the CLI uses the
same service). A non-admin key gets 403 ADMIN_REQUIRED on every route here. Each handler calls the store, so each
runs in a worker thread."""

from __future__ import annotations

from litestar import Controller, get, post, put
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, FromQuery

from api.auth import SECURITY
from api.dependencies import component
from api.key_admin import KeyAdminService, require_admin
from api.openapi_docs import error_responses
from api.schemas.admin import (AuditList, BudgetList, BudgetRequest, IssuedKeyResponse, KeyCreateRequest, KeyList,
                               KeyRotateRequest, RateLimitRequest)
from storage.budget_records import KeyDetails
from storage.records import IssuedKey, User


def issued(key: IssuedKey, replaces: KeyDetails | None = None) -> IssuedKeyResponse:
    return IssuedKeyResponse(key=key.key, key_id=key.info.key_id, key_prefix=key.info.key_prefix,
                             user_id=key.user.user_id, organization_id=key.user.organization_id,
                             created_at=key.info.created_at,
                             replaces_key_id=replaces.key_id if replaces else None,
                             old_key_valid_until=replaces.expires_at if replaces else None)


class AdminController(Controller):
    path = "/admin"
    tags = ["admin"]
    security = SECURITY
    dependencies = {"admin": component("key_admin")}

    @post("/keys", operation_id="adminKeyCreate", status_code=200, summary="Create a key (shown once)",
          responses=error_responses(403, 404), sync_to_thread=True)
    def create(self, data: JSONBody[KeyCreateRequest], user: NamedDependency[User],
               admin: NamedDependency[KeyAdminService]) -> IssuedKeyResponse:
        return issued(admin.create(require_admin(user), data.user_id, tier=data.tier,
                                   prompt_optimization=data.prompt_optimization, is_admin=data.is_admin))

    @get("/keys", operation_id="adminKeyList", summary="List the organization's keys (prefixes, use, spend)",
         responses=error_responses(403), sync_to_thread=True)
    def list_keys(self, user: NamedDependency[User], admin: NamedDependency[KeyAdminService]) -> KeyList:
        return KeyList(keys=admin.keys(require_admin(user)))

    @post("/keys/{key_id:str}/revoke", operation_id="adminKeyRevoke", status_code=200, summary="Revoke a key",
          responses=error_responses(403, 404), sync_to_thread=True)
    def revoke(self, key_id: FromPath[str], user: NamedDependency[User],
               admin: NamedDependency[KeyAdminService]) -> KeyDetails:
        return admin.revoke(require_admin(user), key_id)

    @post("/keys/{key_id:str}/rotate", operation_id="adminKeyRotate", status_code=200,
          summary="A new key for the same user; the old one works for a grace period",
          responses=error_responses(403, 404), sync_to_thread=True)
    def rotate(self, key_id: FromPath[str], data: JSONBody[KeyRotateRequest], user: NamedDependency[User],
               admin: NamedDependency[KeyAdminService]) -> IssuedKeyResponse:
        caller = require_admin(user)
        new = admin.rotate(caller, key_id, data.grace_seconds)
        return issued(new, admin.key(caller, key_id))

    @put("/keys/{key_id:str}/rateLimit", operation_id="adminKeyRateLimit", summary="Set a key's rate limit",
         responses=error_responses(403, 404), sync_to_thread=True)
    def rate_limit(self, key_id: FromPath[str], data: JSONBody[RateLimitRequest], user: NamedDependency[User],
                   admin: NamedDependency[KeyAdminService]) -> KeyDetails:
        return admin.set_rate_limit(require_admin(user), key_id, data.rate_limit_per_minute)

    @put("/budgets", operation_id="adminBudgetSet", summary="Set or remove a budget (key, user or organization)",
         responses=error_responses(403, 404), sync_to_thread=True)
    def set_budget(self, data: JSONBody[BudgetRequest], user: NamedDependency[User],
                   admin: NamedDependency[KeyAdminService]) -> BudgetList:
        caller = require_admin(user)
        admin.set_budget(caller, data.scope, data.subject_id, data.period, data.limit_usd)
        return BudgetList(budgets=admin.budgets(caller))

    @get("/budgets", operation_id="adminBudgetList", summary="The organization's budgets",
         responses=error_responses(403), sync_to_thread=True)
    def budgets(self, user: NamedDependency[User], admin: NamedDependency[KeyAdminService]) -> BudgetList:
        return BudgetList(budgets=admin.budgets(require_admin(user)))

    @get("/audit", operation_id="adminAudit", summary="Changes to keys and budgets, newest first, with who made them",
         responses=error_responses(403), sync_to_thread=True)
    def audit(self, user: NamedDependency[User], admin: NamedDependency[KeyAdminService],
              limit: FromQuery[int] = 100, offset: FromQuery[int] = 0) -> AuditList:
        limit, offset = max(1, min(limit, 1000)), max(0, offset)
        return AuditList(entries=admin.audit(require_admin(user), limit, offset), limit=limit, offset=offset)
