"""Routing decisions and feedback as Parquet event logs, with a lookup for feedback.

Session ids are time-ordered (UUIDv7 layout), so Parquet row-group statistics let a lookup skip almost every
file. Recent sessions are also kept in a bounded in-memory index, which covers feedback arriving before the next
flush.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pyarrow as pa

from storage import events
from storage.event_buffer import EventBuffer

SESSION_SCHEMA = pa.schema([
    ("session_id", pa.string()),
    ("created_at", pa.timestamp("us", tz="UTC")),
    ("user_id", pa.string()),
    ("organization_id", pa.string()),
    ("preference_id", pa.string()),
    ("previous_session", pa.string()),
    ("hashed", pa.bool_()),
    ("content", pa.string()),          # the messages as JSON; null when hash_content
    ("content_hash", pa.string()),     # sha256 of the messages JSON, always
    ("prompt_tokens", pa.int32()),
    ("tools_count", pa.int32()),
    ("candidates", pa.list_(pa.string())),          # as requested, after de-duplication
    ("eligible", pa.list_(pa.string())),            # after context/tools/max_model_depth
    ("predicted_quality", pa.list_(pa.float32())),  # aligned with eligible
    ("estimated_cost_usd", pa.list_(pa.float64())),  # aligned with eligible
    ("chosen", pa.string()),                        # provider/model in catalogue naming
    ("chosen_label_provider", pa.string()),         # as echoed to the caller
    ("chosen_label_model", pa.string()),
    ("tradeoff", pa.string()),
    ("cost_quality_tradeoff", pa.int32()),
    ("max_model_depth", pa.int32()),
    ("router", pa.string()),                        # 'default' or 'custom:<router id>'
    ("personalised", pa.bool_()),
    ("featurize_us", pa.int32()),
    ("decide_us", pa.int32()),
])

FEEDBACK_SCHEMA = pa.schema([
    ("feedback_id", pa.string()),
    ("created_at", pa.timestamp("us", tz="UTC")),
    ("session_id", pa.string()),
    ("user_id", pa.string()),
    ("organization_id", pa.string()),
    ("preference_id", pa.string()),
    ("model", pa.string()),                         # provider/model, catalogue naming
    ("accuracy", pa.int8()),
    ("predicted_quality", pa.float32()),
    ("embedding", pa.list_(pa.float32())),          # the query's embedding, for personalisation after restarts
])

_lock = threading.Lock()
_last_ms = 0
_seq = 0


def new_session_id() -> str:
    """UUIDv7 layout: 48-bit milliseconds, then a per-process counter and randomness; sorts by time."""
    global _last_ms, _seq
    with _lock:
        ms = time.time_ns() // 1_000_000
        _seq = _seq + 1 if ms == _last_ms else 0
        _last_ms = ms
        seq = _seq & 0xFFF
    rand = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms << 80) | (0x7 << 76) | (seq << 64) | (0b10 << 62) | rand
    return str(uuid.UUID(int=value))


class SessionLog:
    def __init__(self, events_dir: Path, flush_seconds: float, recent: int = 20_000) -> None:
        self.events_dir = events_dir
        self.sessions = EventBuffer(events_dir, "sessions", SESSION_SCHEMA, flush_seconds)
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

    def record(self, row: dict[str, Any]) -> None:
        self.sessions.add(row)
        with self._lock:
            self._recent[row["session_id"]] = row
            if len(self._recent) > self._recent_max:
                self._recent.popitem(last=False)

    def find(self, session_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._recent.get(session_id)
        if row is not None:
            return row
        if not events.parts(self.events_dir, "sessions"):
            return None
        import duckdb  # a private in-memory connection: the Parquet files are not in the system-of-record DB

        with duckdb.connect() as conn:
            result = conn.execute(
                "SELECT * FROM read_parquet(?, hive_partitioning = false, union_by_name = true)"
                " WHERE session_id = ? LIMIT 1", [events.glob(self.events_dir, "sessions"), session_id])
            columns = [d[0] for d in result.description]
            found = result.fetchone()
        return dict(zip(columns, found)) if found else None

    def record_feedback(self, row: dict[str, Any]) -> None:
        self.feedback.add(row)

    def all_feedback(self) -> pa.Table:
        """Every feedback row (flushed ones and those still buffered), oldest first: rebuilds personalisation."""
        self.feedback.flush()
        files = events.parts(self.events_dir, "feedback")
        if not files:
            return FEEDBACK_SCHEMA.empty_table()
        import pyarrow.parquet as pq

        table = pa.concat_tables([pq.read_table(f, schema=FEEDBACK_SCHEMA) for f in files])
        return table.sort_by([("created_at", "ascending")])
