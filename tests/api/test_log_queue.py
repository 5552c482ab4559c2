"""The service's log handler (api/observability/log_queue.py) writes what the formatter makes of each record, in
order, from its writer thread: the same lines as formatting on the logging thread."""

import io
import json
import logging

from api.observability.access_log import JsonFormatter
from api.observability.log_queue import DeferredFormatHandler

FORMAT = "%(levelname)s - %(asctime)s - %(name)s - %(module)s - %(message)s"


def written(records, formatter):
    stream = io.StringIO()
    handler = DeferredFormatHandler(stream)
    handler.setFormatter(formatter)
    for record in records:
        handler.handle(record)
    handler.close()  # drains the queue before the writer stops
    return stream.getvalue()


def record(msg, args=None, level=logging.INFO, exc_info=None):
    return logging.LogRecord("switchboard.access", level, __file__, 1, msg, args, exc_info)


def test_lines_are_what_formatting_on_the_logging_thread_would_write():
    records = [record(f"method=POST route=/v2/modelRouter/modelSelect status=200 n={i}") for i in range(50)]
    records.append(record("store %s after %d tries", ("down", 3), logging.WARNING))
    formatter = logging.Formatter(FORMAT)
    expected = "".join(formatter.format(r) + "\n" for r in records)
    assert written(records, formatter) == expected


def test_arguments_are_merged_before_they_can_change_and_the_original_record_is_kept():
    state = ["before"]
    original = record("state %s", (state,))
    stream = io.StringIO()
    handler = DeferredFormatHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.handle(original)
    state[0] = "after"  # the caller moves on before the writer gets to the record
    handler.close()
    assert stream.getvalue() == "state ['before']\n"
    assert original.args == (state,) and original.msg == "state %s"  # other handlers see the record as logged


def test_an_exception_is_written_with_its_traceback_in_text_and_json():
    try:
        raise RuntimeError("boom")
    except RuntimeError as exc:
        failing = record("failed", level=logging.ERROR, exc_info=(type(exc), exc, exc.__traceback__))
    text = written([failing], logging.Formatter("%(message)s"))
    assert text.startswith("failed\nTraceback") and "RuntimeError: boom" in text
    line = json.loads(written([failing], JsonFormatter()))
    assert line["message"] == "failed" and "RuntimeError: boom" in line["exception"]


def test_the_access_line_keeps_its_fields_for_json():
    access = record("method=GET route=/health status=200")
    access.fields = {"method": "GET", "route": "/health", "status": 200}
    line = json.loads(written([access], JsonFormatter()))
    assert {k: line[k] for k in access.fields} == access.fields and line["logger"] == "switchboard.access"


def test_the_app_logs_through_it(monkeypatch):
    from api.logging_setup import logging_config

    logging_config("INFO").configure()
    handlers = [h for h in logging.getLogger().handlers if isinstance(h, DeferredFormatHandler)]
    assert len(handlers) == 1 and handlers[0].formatter is not None


def test_the_access_record_is_the_one_log_log_would_make(caplog):
    from api.observability import access_log
    from api.observability.exchange import Exchange

    exchange = Exchange("POST", "/v2/modelRouter/modelSelect", request_id="r-9", key_prefix="sb-abc")
    exchange.status = 200
    with caplog.at_level(logging.INFO, logger="switchboard.access"):
        access_log.write(exchange, "/v2/modelRouter/modelSelect")
    (record,) = [r for r in caplog.records if r.name == "switchboard.access"]
    assert record.getMessage().startswith("method=POST route=/v2/modelRouter/modelSelect status=200 duration_ms=")
    assert record.module == "access_log" and record.funcName == "write" and record.pathname == access_log.__file__
    assert record.fields["request_id"] == "r-9" and record.fields["key"] == "sb-abc"


def test_a_burst_is_written_in_order_and_close_is_idempotent():
    stream = io.StringIO()
    handler = DeferredFormatHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    for i in range(3000):  # more than one batch
        handler.handle(record(f"line {i}"))
    handler.close()
    handler.close()
    assert stream.getvalue() == "".join(f"line {i}\n" for i in range(3000))


def test_without_a_stream_it_writes_to_stderr_as_it_is_at_write_time(monkeypatch):
    handler = DeferredFormatHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    replaced = io.StringIO()
    monkeypatch.setattr("sys.stderr", replaced)  # e.g. a test harness capturing, after the handler was made
    handler.handle(record("to the stderr of now"))
    handler.close()
    assert replaced.getvalue() == "to the stderr of now\n"
