"""The key-management audit table: every change to keys and budgets, with who made it."""

from __future__ import annotations

import uuid

from storage.budget_records import AuditEntry
from storage.sql import SqlDatabase, now


def record_audit(db: SqlDatabase, actor: str, organization_id: str, action: str, *, key_id: str | None = None,
                 subject_user_id: str | None = None, detail: str | None = None) -> None:
    """Inside the change's own transaction, so a change and its record commit together or not at all."""
    db.run("INSERT INTO key_audit VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
           [str(uuid.uuid4()), now(), actor, organization_id, action, key_id, subject_user_id, detail])


def audit_log(db: SqlDatabase, organization_id: str, limit: int = 100, offset: int = 0) -> list[AuditEntry]:
    rows = db.rows("SELECT audit_id, changed_at, actor, organization_id, action, key_id, subject_user_id, detail"
                   " FROM key_audit WHERE organization_id = ? ORDER BY changed_at DESC, audit_id LIMIT ? OFFSET ?",
                   [organization_id, limit, offset])
    return [AuditEntry(*row) for row in rows]
