"""POST /v2/report/metrics/feedback: thumbs up/down on a routing decision (the official client's path)."""

from __future__ import annotations

from litestar import post
from litestar.di import NamedDependency
from litestar.params import JSONBody

from api.auth import SECURITY
from api.dependencies import after_auth
from api.openapi_docs import error_responses
from api.schemas.model_select import FeedbackReport, FeedbackResponse
from api.selection.feedback import FeedbackService
from storage.records import User


@post("/v2/report/metrics/feedback", operation_id="reportFeedback", tags=["routing"], status_code=200,
      summary="Report feedback on a routing decision", security=SECURITY,
      # In a thread: a lookup of a session another API worker has not flushed yet waits up to ~1.5 s for it
      # (api.selection.sessions), which must not stall this worker's event loop and its modelSelect calls.
      sync_to_thread=True,
      responses=error_responses(404), dependencies={"feedback": after_auth("feedback")})
def report_feedback(data: JSONBody[FeedbackReport], user: NamedDependency[User],
                    feedback: NamedDependency[FeedbackService]) -> FeedbackResponse:
    return feedback.report(data, user)
