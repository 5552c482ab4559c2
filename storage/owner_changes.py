"""The owner's change feed: which subjects (preference ids) changed, so every API worker can refresh its in-memory
copies (custom router registry, preference cache) without polling DuckDB.

The owner appends the subject of every committed change (Store.subscribe) with a sequence number. Workers poll
`GET /internal/changes?since=<cursor>` about twice a second; a worker that sees a different epoch (the owner
restarted) or a gap (it fell more than `keep` changes behind) reloads everything instead. RPC responses also carry
the subjects their own call changed (header below, captured per thread because Store notifies in the calling
thread), so the calling worker sees its own writes at once.
"""

from __future__ import annotations

import secrets
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

import msgspec

CHANGES_HEADER = "x-store-changes"


class ChangeFeed(msgspec.Struct):
    epoch: str
    cursor: int
    subjects: list[str]
    complete: bool  # False: changes after `since` were dropped from memory; reload everything


class ChangeLog:
    def __init__(self, keep: int = 10_000) -> None:
        self.epoch = secrets.token_hex(8)
        self._items: deque[tuple[int, str]] = deque(maxlen=keep)
        self._seq = 0
        self._lock = threading.Lock()
        self._local = threading.local()

    def add(self, subject: str) -> None:
        with self._lock:
            self._seq += 1
            self._items.append((self._seq, subject))
        captured = getattr(self._local, "captured", None)
        if captured is not None:
            captured.append(subject)

    @contextmanager
    def capture(self) -> Iterator[list[str]]:
        """Collect the subjects changed by this thread inside the block."""
        self._local.captured = []
        try:
            yield self._local.captured
        finally:
            self._local.captured = None

    @property
    def cursor(self) -> int:
        with self._lock:
            return self._seq

    def since(self, cursor: int) -> ChangeFeed:
        with self._lock:
            oldest = self._items[0][0] if self._items else self._seq + 1
            complete = 0 <= cursor <= self._seq and cursor >= oldest - 1
            subjects = list(dict.fromkeys(s for n, s in self._items if n > cursor)) if complete else []
            return ChangeFeed(epoch=self.epoch, cursor=self._seq, subjects=subjects, complete=complete)
