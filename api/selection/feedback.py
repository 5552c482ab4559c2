"""Feedback on routing decisions: validated against the session, logged, and learned per preference."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from datetime import datetime, timezone

import msgspec
import numpy as np

from api.errors import BadRequest, NotFound
from api.schemas.model_select import FeedbackReport, FeedbackResponse
from api.selection.personalization import FeedbackMemory
from api.selection.service import SelectionService
from api.selection.sessions import SessionLog
from storage.records import User

log = logging.getLogger("switchboard.feedback")


class FeedbackService:
    def __init__(self, sessions: SessionLog, memory: FeedbackMemory, selection: SelectionService) -> None:
        self.sessions, self.memory, self.selection = sessions, memory, selection

    def rebuild(self) -> int:
        """Replay stored feedback into the personalisation memory (start-up)."""
        return self._learn(self.sessions.all_feedback().to_pylist())

    def follow_other_workers(self, interval_s: float) -> None:
        """Several API workers: every `interval_s`, learn the feedback other workers have flushed since."""
        def loop() -> None:
            while True:
                time.sleep(interval_s)
                try:
                    self._learn(self.sessions.new_feedback().to_pylist())
                except Exception:  # e.g. a file half-visible on a network filesystem: read it next time
                    log.exception("could not read new feedback; will retry")

        threading.Thread(target=loop, name="follow-feedback", daemon=True).start()

    def _learn(self, rows: list[dict]) -> int:
        for row in rows:
            if row["preference_id"] and row["embedding"]:
                self.memory.add(row["preference_id"], row["session_id"], row["model"],
                                np.asarray(row["embedding"], dtype=np.float32), row["accuracy"],
                                row["predicted_quality"])
        return len(rows)

    def report(self, report: FeedbackReport, user: User) -> FeedbackResponse:
        session = self.sessions.find(report.session_id)
        if session is None or session["user_id"] != user.user_id:
            raise NotFound(f"session {report.session_id!r} not found for this API key's user",
                           code="SESSION_NOT_FOUND", details={"session_id": report.session_id})
        if session["hashed"]:
            raise BadRequest("feedback applies only to sessions whose content was not hashed (hash_content=false)",
                             code="FEEDBACK_NOT_ALLOWED", details={"session_id": report.session_id})
        given = (report.provider.provider, report.provider.model)
        chosen = session["chosen"]
        if given not in {(session["chosen_label_provider"], session["chosen_label_model"]),
                         tuple(chosen.split("/", 1))}:
            raise BadRequest(f"feedback names {given[0]}/{given[1]}, but this session selected "
                             f"{session['chosen_label_provider']}/{session['chosen_label_model']}",
                             code="PROVIDER_MISMATCH", details={"session_id": report.session_id})

        embedding = session.get("embedding")
        if embedding is None:  # an older session, read back from the log: embed its stored messages again
            embedding = self.selection.embed_text(msgspec.json.decode(session["content"]))
        # The residual the memory learns is measured against the router's own prediction (what the flow corrects
        # too), not against what a promoted correction made of it; sessions older than that column have only the other.
        base = session.get("router_quality")
        predicted = float((base if base is not None else session["predicted_quality"])
                          [list(session["eligible"]).index(chosen)])
        feedback_id = str(uuid.uuid4())
        label = int(report.feedback.accuracy)
        self.sessions.record_feedback({
            "feedback_id": feedback_id, "created_at": datetime.now(timezone.utc),
            "session_id": report.session_id, "user_id": user.user_id, "organization_id": user.organization_id,
            "preference_id": session["preference_id"], "model": chosen, "accuracy": label,
            "predicted_quality": predicted, "embedding": embedding.astype(np.float32).tolist(),
        })
        if session["preference_id"]:
            self.memory.add(session["preference_id"], report.session_id, chosen, embedding, label, predicted)
        return FeedbackResponse(session_id=report.session_id, feedback_id=feedback_id, accepted=True)
