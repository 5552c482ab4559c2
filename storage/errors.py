"""Storage refusals, with messages fit for a person."""

from __future__ import annotations


class StoreError(Exception):
    """A storage-level refusal (e.g. an unknown key id, a job status that does not exist)."""


class DatabaseUnavailable(StoreError):
    """The database server did not answer (down, restarting, unreachable): the request may be retried shortly."""


class DatabaseLocked(StoreError):
    """Another process holds the DuckDB file for writing (it must be reached through its owner)."""
