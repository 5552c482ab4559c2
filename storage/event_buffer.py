"""Buffered appends to a Parquet event log: the hot path adds a row in microseconds, a background thread writes
the buffer as one part file every `flush_seconds`.

Rows are encoded to JSON lines as they arrive (msgspec) and the flush parses them with Arrow's JSON reader
against the table's schema. That parse runs in C++ without the GIL, so request handlers keep running while a
second's worth of rows is converted; building Arrow arrays from Python dicts instead held the GIL long enough to
show in modelSelect's p99 (docs/benchmarks.md).

Long free-text columns (`text_columns`: a session's messages) are kept aside as Python strings instead: escaping
2 KB of JSON-in-JSON cost more than the rest of the row on the request's thread (13 us of 15 per session row), and
parsing it back most of the flush; at flush each becomes one Arrow column in a single call (about 0.5 us a row),
and Parquet writes it without trying a dictionary (free text seldom repeats).

Loss window: rows acknowledged less than `flush_seconds` before a crash (kill -9, power loss) are lost; a clean
shutdown (`close()`) flushes everything (docs/routing.md, "Sessions").

No row may block a log. The API bounds every field at the edge, but should a row still not fit the table's schema
(an integer beyond its column, say), the flush writes every other row and sets that one aside in a dead-letter
file of its own, `<events>/_dead_letter/<table>/dead-<ns>-<pid>-<random>.jsonl`, one JSON object per line with the
error and the row: a new file per flush, as object stores cannot append (`events_dir` may be any of
storage/events.py's locations). A flush that cannot write at all (disk full) keeps the rows for the next tick, up
to `max_pending_bytes`; past that the oldest are dropped with an error in the log rather than the process growing
without bound.
"""

from __future__ import annotations

import io
import logging
import threading
from datetime import datetime, timezone
from typing import Any, TypeAlias

import msgspec
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.json as pa_json

from storage import events

log = logging.getLogger("switchboard.events")
MAX_PENDING_BYTES = 256 * 1024 * 1024  # about 50,000 large session rows: minutes of a full disk at full load
Row: TypeAlias = "tuple[bytes, tuple[str | None, ...]]"  # the row's JSON, less its text columns; their values


class EventBuffer:
    def __init__(self, events_dir: events.EventsDir, table: str, schema: pa.Schema, flush_seconds: float = 1.0,
                 max_pending_bytes: int = MAX_PENDING_BYTES, text_columns: tuple[str, ...] = ()) -> None:
        not_text = [name for name in text_columns if name not in schema.names or schema.field(name).type != pa.string()]
        if not_text:
            raise ValueError(f"{table}: text columns must be string columns of the schema, not {not_text}")
        self.events_dir, self.table, self.schema = events_dir, table, schema
        self.flush_seconds, self.max_pending_bytes = flush_seconds, max_pending_bytes
        self._pending_bytes = 0
        self.dropped = 0  # rows given up after a long write outage (logged as errors)
        self._columns = frozenset(schema.names)
        self._encode = msgspec.json.Encoder().encode
        self.text_columns = tuple(text_columns)
        self._json_schema = pa.schema([field for field in schema if field.name not in self.text_columns])
        self._rows: list[Row] = []
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
        if not self._columns.issuperset(row):  # the JSON reader would refuse the whole flush; refuse this row instead
            raise ValueError(f"{self.table} has no column(s) {sorted(row.keys() - self._columns)}")
        texts: tuple[str | None, ...] = ()
        size = 0
        if self.text_columns:
            row = dict(row)
            texts = tuple(row.pop(name, None) for name in self.text_columns)
            for text in texts:
                if text is not None:
                    if not isinstance(text, str):
                        raise TypeError(f"{self.table}: a text column holds a str or None, not {type(text).__name__}")
                    size += len(text.encode("utf-8"))  # a string UTF-8 cannot hold fails here, not at flush
        line = self._encode(row)  # encoded now: a value that cannot be encoded fails this call, not a later flush
        with self._lock:
            self._rows.append((line, texts))
            self._pending_bytes += len(line) + size

    def pending(self) -> int:
        with self._lock:
            return len(self._rows)

    def flush(self) -> int:
        """Write the buffered rows as one part file; returns how many were written (rows that do not fit the
        schema go to the dead-letter file instead). Raises when nothing could be written; the rows stay."""
        with self._flush_lock:
            with self._lock:
                rows, self._rows = self._rows, []
                self._pending_bytes = 0
            if not rows:
                return 0
            try:
                table, rejected = self._convert(rows)
                events.append(self.events_dir, self.table, table, plain_columns=self.text_columns)
            except Exception:
                self._keep(rows)
                raise
            if rejected:
                self._dead_letter(rejected)
            return table.num_rows

    def _convert(self, rows: list[Row]) -> tuple[pa.Table, list[tuple[bytes, str]]]:
        """The rows as a table; when the batch does not convert, row by row, setting aside those that fail."""
        try:
            return self.to_table(rows), []
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            pass
        good, rejected = [], []
        for row in rows:
            try:
                self.to_table([row])
                good.append(row)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
                rejected.append((self._whole_line(row), str(exc)))
        return (self.to_table(good) if good else self.schema.empty_table()), rejected

    def _whole_line(self, row: Row) -> bytes:
        """The row as one JSON object, its text columns included (what a dead letter keeps)."""
        line, texts = row
        if not texts:
            return line
        whole = msgspec.json.decode(line)
        whole.update(zip(self.text_columns, texts))
        return self._encode(whole)

    @staticmethod
    def _size(row: Row) -> int:
        return len(row[0]) + sum(len(text.encode("utf-8")) for text in row[1] if text is not None)

    def _keep(self, rows: list[Row]) -> None:
        """Put unwritten rows back in front of newer ones, dropping the oldest beyond the byte bound."""
        with self._lock:
            self._rows[:0] = rows
            self._pending_bytes += sum(map(self._size, rows))
            dropped = 0
            while self._pending_bytes > self.max_pending_bytes and self._rows:
                self._pending_bytes -= self._size(self._rows.pop(0))
                dropped += 1
            self.dropped += dropped
        if dropped:
            log.error("%s: dropped the %d oldest unwritten rows (over %d bytes pending while writes fail)",
                      self.table, dropped, self.max_pending_bytes)

    def _dead_letter_folder(self) -> tuple[pafs.FileSystem, str, str]:
        fs, root, prefix = events.location(self.events_dir)
        return fs, f"{root}/_dead_letter/{self.table}" if root else f"_dead_letter/{self.table}", prefix

    def dead_letters(self) -> list[dict[str, Any]]:
        """Every row this table's buffers set aside, oldest file first, as written (with `at`, `error`, `row`)."""
        fs, folder, _ = self._dead_letter_folder()
        found = fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
        letters = []
        for info in sorted((i for i in found if i.base_name.startswith("dead-")), key=lambda i: i.base_name):
            with fs.open_input_stream(info.path) as fh:
                letters += [msgspec.json.decode(line) for line in fh.read().splitlines() if line]
        return letters

    def _dead_letter(self, rejected: list[tuple[bytes, str]]) -> None:
        now = datetime.now(timezone.utc).isoformat()
        body = b"".join(self._encode({"at": now, "table": self.table, "error": error, "row": msgspec.Raw(line)})
                        + b"\n" for line, error in rejected)
        fs, folder, prefix = self._dead_letter_folder()

        def write(path: str) -> None:
            with fs.open_output_stream(path) as fh:
                fh.write(body)

        try:
            path = events.publish(fs, folder, events.unique_name("dead-", ".jsonl"), prefix, write)
        except OSError:
            log.exception("%s: could not write %d rejected row(s) under %s", self.table, len(rejected), folder)
            return
        log.error("%s: %d row(s) did not fit the table and were set aside in %s: %s", self.table, len(rejected),
                  path, rejected[0][1])

    def to_table(self, rows: list[Row]) -> pa.Table:
        data = b"\n".join(line for line, _ in rows)
        # One block holding every row (a row may be as large as a request body); columns absent from a row
        # are null, as with the explicit schema's nullable fields.
        table = pa_json.read_json(
            io.BytesIO(data),
            read_options=pa_json.ReadOptions(use_threads=False, block_size=len(data) + 1),
            parse_options=pa_json.ParseOptions(explicit_schema=self._json_schema, unexpected_field_behavior="error"),
        )
        for i, name in enumerate(self.text_columns):
            table = table.append_column(name, pa.array([texts[i] for _, texts in rows], pa.string()))
        return table.select(self.schema.names).cast(self.schema)

    def _loop(self) -> None:
        while not self._stop.wait(self.flush_seconds):
            try:
                self.flush()
            except Exception:  # e.g. disk full: log, keep the rows, try again next tick
                log.exception("could not flush %s events; will retry", self.table)

    def close(self) -> None:
        """Stop the flush thread and write what is buffered; a failed last write is logged, never raised, so a
        caller closing several buffers closes them all."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        try:
            self.flush()
        except Exception:
            log.exception("could not write the last %d %s row(s) at shutdown", self.pending(), self.table)
