"""What callers read about failures nobody foresaw: the kind of failure and what to do, never an exception's own
text (a native library's stack trace, the server's paths, internal addresses)."""

from __future__ import annotations

import pytest

from api.errors import ValidationFailed
from api.public_errors import public_reason, public_state_message

NATIVE = ("[18:02:11] /workspace/src/objective/regression_obj.cu:125: Check failed: info.labels.Size() != 0\n"
          "Stack trace:\n  [bt] (0) /srv/app/.venv/lib/python3.11/site-packages/xgboost/lib/libxgboost.so(+0x2a)")


class XGBoostError(ValueError):  # named like the native library's, whose text is NATIVE
    pass


class RateLimitError(Exception):  # named like LiteLLM's
    status_code = 429


@pytest.mark.parametrize("exc, says", [
    (XGBoostError(NATIVE), "XGBoostError: training the router failed with an internal error; the details are in "
                           "the server's log"),
    (FileNotFoundError(2, "No such file", "/srv/switchboard/uploads/x.parquet"), "no longer on the server"),
    (MemoryError(), "ran out of memory"),
    (RateLimitError("litellm.RateLimitError: key sk-live-123 at https://10.1.2.3/v1"),
     "RateLimitError (HTTP 429): the provider kept answering 429"),
])
def test_unexpected_failures_are_described_by_kind_never_by_their_text(exc, says, caplog):
    reason = public_reason(exc, "training the router")
    assert says in reason, reason
    for leak in ("/srv", "/workspace", "site-packages", "sk-live", "10.1.2.3", "Stack trace"):
        assert leak not in reason
    assert caplog.records and caplog.records[-1].exc_info[1] is exc  # the detail is in the server's log


def test_messages_written_for_the_caller_pass_through():
    assert public_reason(ValidationFailed("column 'x' is empty on row 3"), "x") == "column 'x' is empty on row 3"


@pytest.mark.parametrize("message, shown", [
    ("Flow run encountered an exception: XGBoostError: " + NATIVE,
     "the flow run ended failed with XGBoostError; the details are in the flow run's log (Prefect UI)"),
    ("Execution was interrupted by an unexpected exception: KeyError: '/srv/x'",
     "the flow run ended failed with KeyError; the details are in the flow run's log (Prefect UI)"),
    ("Request to http://10.0.0.1:4200/api/x failed: httpx.ConnectError: refused.",
     "the flow run ended failed with ConnectError; the details are in the flow run's log (Prefect UI)"),
    ("Execution was aborted by a termination signal.", "Execution was aborted by a termination signal."),
    ("1/3 states failed.", "1/3 states failed."),
    (None, "flow run ended failed"),
])
def test_prefect_state_messages_lose_the_exception_text(message, shown):
    assert public_state_message(message, "failed") == shown
