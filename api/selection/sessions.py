"""Routing decisions and feedback as Parquet event logs, with a lookup for feedback.

Session ids are time-ordered (UUIDv7 layout), so Parquet row-group statistics let a lookup skip almost every
file. Recent sessions are also kept in a bounded in-memory index, which covers feedback arriving before the next
flush. With several API workers a session may be created on one and get feedback on another before the first
has flushed it: a lookup that misses a session younger than one flush waits until that flush must have happened
(the creation time is in the id) and reads the Parquet log again. Feedback written by other workers is read back
from the log as it appears (`new_feedback`), so every worker's personalisation learns from all of it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

from api.random_ids import POOL
from storage import events
from storage.event_buffer import EventBuffer
from storage.event_schemas import FEEDBACK_SCHEMA, SESSION_SCHEMA

_lock = threading.Lock()
_last_ms = 0
_seq = 0
FLUSH_GRACE_S = 0.5  # a flush also writes and fsyncs a file; allow for it before looking again


def new_session_id() -> str:
    """UUIDv7 layout: 48-bit milliseconds, then a per-process counter and 62 random bits; sorts by time. The random
    bits come from the kernel's CSPRNG through api/random_ids.py's pool (no system call per id)."""
    global _last_ms, _seq
    with _lock:
        ms = time.time_ns() // 1_000_000
        _seq = _seq + 1 if ms == _last_ms else 0
        _last_ms = ms
        seq = _seq & 0xFFF
    rand = int.from_bytes(POOL.take(8), "big") & ((1 << 62) - 1)
    h = "%032x" % ((ms << 80) | (0x7 << 76) | (seq << 64) | (0b10 << 62) | rand)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"  # str(uuid.UUID(int=...)) without building one


def session_created_s(session_id: str) -> float | None:
    """Creation time (Unix seconds) from a session id's UUIDv7 timestamp; None when it is not one of ours."""
    try:
        value = uuid.UUID(session_id).int
    except ValueError:
        return None
    return (value >> 80) / 1000.0 if (value >> 76) & 0xF == 0x7 else None


# What feedback reads from a recent session: the in-memory index keeps these instead of the whole row, whose bulk
# is the messages (feedback needs only their routing embedding, taken at decision time): ~1 KB a session, not ~5.
FEEDBACK_FIELDS = ("session_id", "user_id", "preference_id", "hashed", "eligible", "predicted_quality", "chosen",
                   "chosen_label_provider", "chosen_label_model", "router_quality")


class SessionLog:
    def __init__(self, events_dir: events.EventsDir, flush_seconds: float, recent: int = 20_000) -> None:
        self.events_dir, self.flush_seconds = events_dir, flush_seconds
        self._feedback_seen: set[Path | str] = set()
        self.sessions = EventBuffer(events_dir, "sessions", SESSION_SCHEMA, flush_seconds, text_columns=("content",))
        self.feedback = EventBuffer(events_dir, "feedback", FEEDBACK_SCHEMA, flush_seconds)
        self._recent: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._recent_max = recent
        self._lock = threading.Lock()

    def start(self) -> "SessionLog":
        self.sessions.start()
        self.feedback.start()
        return self

    def close(self) -> None:
        self.sessions.close()
        self.feedback.close()

    def record(self, row: dict[str, Any], embedding: Any = None) -> None:
        """Log the decision; index it for feedback with the query's routing embedding (None for hashed ones)."""
        self.sessions.add(row)
        recent = {name: row.get(name) for name in FEEDBACK_FIELDS}  # a missing column is null in the log too
        recent["embedding"] = embedding
        with self._lock:
            self._recent[row["session_id"]] = recent
            if len(self._recent) > self._recent_max:
                self._recent.popitem(last=False)

    def is_recent(self, session_id: str) -> bool:
        """Whether find() answers from memory (no file read, no wait)."""
        with self._lock:
            return session_id in self._recent

    def find(self, session_id: str) -> dict[str, Any] | None:
        """A recent session's FEEDBACK_FIELDS and embedding, or else the whole stored row (without embedding)."""
        with self._lock:
            row = self._recent.get(session_id)
        if row is not None:
            return row
        found = self._find_flushed(session_id)
        created = session_created_s(session_id)
        if found is None and created is not None:
            # Perhaps another worker's, still in its buffer; the bound keeps a forged future id from stalling us.
            wait = created + self.flush_seconds + FLUSH_GRACE_S - time.time()
            if 0 < wait <= self.flush_seconds + FLUSH_GRACE_S:
                time.sleep(wait)
                found = self._find_flushed(session_id)
        return found

    def _find_flushed(self, session_id: str) -> dict[str, Any] | None:
        logged = events.dataset(self.events_dir, "sessions", SESSION_SCHEMA)
        found = logged.head(1, columns=SESSION_SCHEMA.names, filter=ds.field("session_id") == session_id)
        return found.to_pylist()[0] if found.num_rows else None

    def record_feedback(self, row: dict[str, Any]) -> None:
        self.feedback.add(row)

    def all_feedback(self) -> pa.Table:
        """Every feedback row (flushed ones and those still buffered), oldest first: rebuilds personalisation."""
        self.feedback.flush()
        files = events.parts(self.events_dir, "feedback")
        self._feedback_seen.update(files)
        return self._read_feedback(files)

    def new_feedback(self) -> pa.Table:
        """Feedback rows in part files not read before (other workers' flushes since the last call), oldest first.
        Only today's and yesterday's folders are watched: rows are written to today's, and housekeeping rewrites
        only older days. This worker's own files come back too; replaying a session's feedback is idempotent."""
        today = datetime.now(timezone.utc).date()
        watched = events.parts(self.events_dir, "feedback", days=(today - timedelta(days=1), today))
        files = [f for f in watched if f not in self._feedback_seen]
        # Remember only what is still watched: a worker lists up to one file per worker a second, for ever.
        self._feedback_seen = set(watched)
        return self._read_feedback(files)

    def _read_feedback(self, files: list[Path | str]) -> pa.Table:
        if not files:
            return FEEDBACK_SCHEMA.empty_table()
        table = pa.concat_tables(events.read(self.events_dir, files, schema=FEEDBACK_SCHEMA))
        return table.sort_by([("created_at", "ascending")])
