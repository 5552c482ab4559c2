"""What the process that owns the DuckDB file serves to everyone else: typed RPC calls, and the change feed.

Two processes can be the owner: the store-owner process (`switchboard store`, api/owner_app.py), which
`switchboard serve` and the production shape start first, or an API process that found no live owner and opened
the file itself (a single `granian` worker, the test client). Both serve the same routes (api/controllers/internal.py)
with this object.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field

from storage import rpc
from storage.owner_changes import ChangeFeed, ChangeLog
from storage.store import LocalStore


@dataclass
class OwnerEndpoint:
    store: LocalStore
    token: str
    changes: ChangeLog = field(default_factory=ChangeLog)

    def __post_init__(self) -> None:
        self.store.subscribe(self.changes.add)

    def authorised(self, supplied: str) -> bool:
        return hmac.compare_digest(supplied.encode(), self.token.encode())

    def call(self, method: str, body: bytes) -> tuple[bytes, list[str]]:
        """Run one RPC; returns the encoded result and the subjects the call changed (see storage.owner_changes).
        Raises like rpc.dispatch."""
        with self.changes.capture() as changed:
            result = rpc.dispatch(self.store, method, body)
        return result, list(dict.fromkeys(changed))

    def feed(self, since: int) -> ChangeFeed:
        return self.changes.since(since)
