"""Pieces shared by the store and its mixins: the RPC marker, store errors, the clock."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def exposed(fn: F) -> F:
    """Mark a Store method as callable through the owner RPC (storage.rpc); its annotations are the contract."""
    fn.__rpc_exposed__ = True  # type: ignore[attr-defined]
    return fn


class StoreError(Exception):
    """A storage-level refusal with a message fit for a person (e.g. unknown key id)."""


class DatabaseLocked(StoreError):
    pass


def _now() -> datetime:
    return datetime.now(timezone.utc)
