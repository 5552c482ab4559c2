"""Buffered appends to a Parquet event log: the hot path adds a row in microseconds, a background thread writes
the buffer as one part file every `flush_seconds`.

Rows are encoded to JSON lines as they arrive (msgspec) and the flush parses them with Arrow's JSON reader
against the table's schema. That parse runs in C++ without the GIL, so request handlers keep running while a
second's worth of rows is converted; building Arrow arrays from Python dicts instead held the GIL long enough to
show in modelSelect's p99 (docs/benchmarks.md).

Loss window: rows acknowledged less than `flush_seconds` before a crash (kill -9, power loss) are lost; a clean
shutdown (`close()`) flushes everything (docs/routing.md, "Sessions").
"""

from __future__ import annotations

import io
import logging
import threading
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.json as pa_json

from storage import events

log = logging.getLogger("switchboard.events")


class EventBuffer:
    def __init__(self, events_dir: Path, table: str, schema: pa.Schema, flush_seconds: float = 1.0) -> None:
        self.events_dir, self.table, self.schema = events_dir, table, schema
        self.flush_seconds = flush_seconds
        self._columns = frozenset(schema.names)
        self._encode = msgspec.json.Encoder().encode
        self._lines: list[bytes] = []
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()  # one writer at a time, so files appear in order
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "EventBuffer":
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"flush-{self.table}", daemon=True)
            self._thread.start()
        return self

    def add(self, row: dict[str, Any]) -> None:
        unknown = row.keys() - self._columns
        if unknown:  # the JSON reader would refuse the whole flush; refuse this row instead
            raise ValueError(f"{self.table} has no column(s) {sorted(unknown)}")
        line = self._encode(row)  # encoded now: a value that cannot be stored fails this call, not a later flush
        with self._lock:
            self._lines.append(line)

    def pending(self) -> int:
        with self._lock:
            return len(self._lines)

    def flush(self) -> int:
        with self._flush_lock:
            with self._lock:
                lines, self._lines = self._lines, []
            if not lines:
                return 0
            try:
                events.append(self.events_dir, self.table, self.to_table(lines))
            except Exception:
                with self._lock:  # keep the rows for the next attempt rather than drop them
                    self._lines[:0] = lines
                raise
            return len(lines)

    def to_table(self, lines: list[bytes]) -> pa.Table:
        data = b"\n".join(lines)
        # One block holding every row (a row may be as large as a request body); columns absent from a row
        # are null, as with the explicit schema's nullable fields.
        return pa_json.read_json(
            io.BytesIO(data),
            read_options=pa_json.ReadOptions(use_threads=False, block_size=len(data) + 1),
            parse_options=pa_json.ParseOptions(explicit_schema=self.schema, unexpected_field_behavior="error"),
        ).select(self.schema.names).cast(self.schema)

    def _loop(self) -> None:
        while not self._stop.wait(self.flush_seconds):
            try:
                self.flush()
            except Exception:  # e.g. disk full: log, keep the rows, try again next tick
                log.exception("could not flush %s events; will retry", self.table)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.flush()
