"""The service's log handler: a record is queued on the thread that logs it, and formatted and written by one
writer thread, so a request pays for a queue put and nothing else (api/logging_setup.py installs it).

Litestar's default queue handler (Python 3.11) formatted every record on the request's thread (asctime with
strftime, the message, a copy of the record) and put it on a `queue.Queue` under the handler's lock and the queue's
condition, which woke its listener to write that one line with a write() and a flush(): about 12 % of a
modelSelect's CPU in process, mostly the access line (docs/benchmarks.md, issue 36). Here the handler takes no lock
(`queue.SimpleQueue.put` is atomic), and the writer, waking at most every LINGER_S, formats and writes whatever
queued meanwhile with one write(). The lines are the same: the formatter sees the same record, whose time was taken
when it was made. What could change between the put and the formatting is merged first: a message's arguments
(which may be mutable objects) into its text, and an exception's traceback into text (which also frees its
frames); such a record is copied first, so other handlers (pytest's caplog, say) still see the original.
"""

from __future__ import annotations

import copy
import logging
import queue
import sys
import threading
import time
from typing import TextIO

BATCH = 512  # records written with one write() at most: under load, one system call serves many lines
# After a write the writer waits this long before it looks again, so that lines gather: a writer blocked in get()
# is woken by every put (a futex wake, and the GIL handed over and back), one that sleeps is not. Lines reach the
# stream at most this much later.
LINGER_S = 0.02
_STOP = object()


class DeferredFormatHandler(logging.Handler):
    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__()
        self._stream = stream
        self.queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write_queued, name="log-writer", daemon=True)
        self._writer.start()

    @property
    def stream(self) -> TextIO:
        """The stream given, else stderr as it is when a batch is written (as logging's last resort does): a
        stderr replaced and closed meanwhile (a test harness's capture, say) is not written to."""
        return self._stream if self._stream is not None else sys.stderr

    def handle(self, record: logging.LogRecord) -> bool:  # type: ignore[override]
        """Handler.handle without the handler's lock: the queue is the only shared state, and its put is atomic."""
        passed = self.filter(record)
        if isinstance(passed, logging.LogRecord):  # Python 3.12+: a filter may hand back a changed record
            record = passed
        if passed:
            self.emit(record)
        return bool(passed)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.queue.put(self.prepare(record))
        except Exception:
            self.handleError(record)

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        if not record.args and not record.exc_info:
            return record  # text only (the access line): nothing can change before the writer formats it
        record = copy.copy(record)
        record.msg, record.args = record.getMessage(), None
        if record.exc_info:
            formatter = self.formatter or logging.Formatter()
            record.exc_text = record.exc_text or formatter.formatException(record.exc_info)
            record.exc_info = None
        return record

    def _write_queued(self) -> None:
        """The writer thread: waits for a record, takes whatever else is queued (up to BATCH), formats them in order
        and writes them at once; ends at close()'s stop mark, once what came before it is written."""
        get, get_nowait = self.queue.get, self.queue.get_nowait
        while True:
            batch = [get()]
            try:
                while len(batch) < BATCH:
                    batch.append(get_nowait())
            except queue.Empty:
                pass
            lines = []
            for record in batch:
                if record is not _STOP:
                    try:
                        lines.append(self.format(record) + "\n")  # type: ignore[arg-type]
                    except Exception:
                        self.handleError(record)  # type: ignore[arg-type]
            if lines:
                try:
                    self.stream.write("".join(lines))
                    self.stream.flush()
                except Exception:
                    self.handleError(batch[-1])  # type: ignore[arg-type]
            if _STOP in batch:
                return
            time.sleep(LINGER_S)

    def flush(self) -> None:
        """Records still queued are written by the writer thread, at the latest by close()."""

    def close(self) -> None:
        """Stop the writer once every queued record is written (logging.shutdown calls this at exit, and a new
        logging configuration on the old handler)."""
        if self._writer.is_alive():
            self.queue.put(_STOP)
            self._writer.join(timeout=10)
        super().close()
