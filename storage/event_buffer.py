"""Buffered appends to a Parquet event log: the hot path adds a row in microseconds, a background thread writes
the buffer as one part file every `flush_seconds`.

Loss window: rows acknowledged less than `flush_seconds` before a crash (kill -9, power loss) are lost; a clean
shutdown (`close()`) flushes everything. Documented in the README.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from storage import events

log = logging.getLogger("switchboard.events")
CONVERT_CHUNK_ROWS = 128


class EventBuffer:
    def __init__(self, events_dir: Path, table: str, schema: pa.Schema, flush_seconds: float = 1.0) -> None:
        self.events_dir, self.table, self.schema = events_dir, table, schema
        self.flush_seconds = flush_seconds
        self._rows: list[dict[str, Any]] = []
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
        with self._lock:
            self._rows.append(row)

    def pending(self) -> int:
        with self._lock:
            return len(self._rows)

    def flush(self) -> int:
        with self._flush_lock:
            with self._lock:
                rows, self._rows = self._rows, []
            if not rows:
                return 0
            try:
                events.append(self.events_dir, self.table, self._to_table(rows))
            except Exception:
                with self._lock:  # keep the rows for the next attempt rather than drop them
                    self._rows[:0] = rows
                raise
            return len(rows)

    def _to_table(self, rows: list[dict[str, Any]]) -> pa.Table:
        # Converting Python rows holds the GIL; in small chunks, with a yield between them, request handlers
        # wait at most one chunk (about a millisecond) instead of the whole second's worth of rows.
        batches = []
        for start in range(0, len(rows), CONVERT_CHUNK_ROWS):
            batches.append(pa.RecordBatch.from_pylist(rows[start:start + CONVERT_CHUNK_ROWS], schema=self.schema))
            time.sleep(0)
        return pa.Table.from_batches(batches, schema=self.schema)

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
