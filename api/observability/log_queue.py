"""The service's log handler: a record is queued on the thread that logs it and formatted and written by one
listener thread, so a request pays for a queue put and nothing else (api/logging_setup.py installs it).

Litestar's default queue handler (Python 3.11) formatted every record on the request's thread (asctime with
strftime, the message, a copy of the record) and put it on a `queue.Queue` under the handler's lock and the queue's
condition: about 12 % of a modelSelect's CPU in process, mostly the access line (docs/benchmarks.md, issue 36).
Here the handler takes no lock (`queue.SimpleQueue.put` is atomic) and the listener formats. The line written is
the same: the formatter sees the same record, whose time was taken when it was made. What could change between
the put and the formatting is merged first: a message's arguments (which may be mutable objects) into its text,
and an exception's traceback into text (which also frees its frames); such a record is copied first, so other
handlers (pytest's caplog, say) still see the original.
"""

from __future__ import annotations

import copy
import logging
import queue
from logging.handlers import QueueListener
from typing import TextIO


class DeferredFormatHandler(logging.Handler):
    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__()
        self.queue: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
        self.target = logging.StreamHandler(stream)  # stderr, as Litestar's handler wrote
        self.listener: QueueListener | None = QueueListener(self.queue, self.target)
        self.listener.start()

    def setFormatter(self, fmt: logging.Formatter | None) -> None:
        super().setFormatter(fmt)
        self.target.setFormatter(fmt)  # the listener's handler formats

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
            return record  # text only (the access line): nothing can change before the listener formats it
        record = copy.copy(record)
        record.msg, record.args = record.getMessage(), None
        if record.exc_info:
            formatter = self.formatter or logging.Formatter()
            record.exc_text = record.exc_text or formatter.formatException(record.exc_info)
            record.exc_info = None
        return record

    def flush(self) -> None:
        self.target.flush()  # records still queued are written by the listener, at the latest by close()

    def close(self) -> None:
        """Stop the listener once every queued record is written (logging.shutdown calls this at exit, and a new
        logging configuration on the old handler)."""
        listener, self.listener = self.listener, None
        if listener is not None and listener._thread is not None:
            listener.stop()
        self.target.close()
        super().close()
