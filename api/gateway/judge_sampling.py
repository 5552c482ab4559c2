"""Judge sampling on the gateway (docs/routing.md, "Judge sampling"), opt-in per preference: once an answer has
reached the caller, a share of answered requests (`judge_sample_rate`) is kept in the event log `judge_samples` with
the answer's text, for the `judge-traffic` flow (flows/learning/judge.py) to grade later, in batches, off the
request path. A drawn request may also get a shadow call (`shadow_sample_rate`): another of its candidates, drawn
uniformly, answers it in the flow too, a label for a model the router did not choose; the chance of that draw is its
propensity. Never a hash_content request, a proxied call (no decision), a failed one, or a preference without a
budget (nothing would grade it, so its text is not kept)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import msgspec

from api.gateway.calls import Call
from storage.event_buffer import EventBuffer
from storage.event_schemas import JUDGE_SAMPLE_SCHEMA
from storage.events import EventsDir
from storage.records import Preference


def judged(pref: Preference | None) -> bool:
    """Whether a preference opted into judge sampling (a rate and a budget above 0)."""
    return pref is not None and bool(pref.judge_sample_rate) and bool(pref.judge_budget_usd)


class JudgeSampler:
    def __init__(self, events_dir: EventsDir, flush_seconds: float, rng: random.Random | None = None) -> None:
        self.buffer = EventBuffer(events_dir, "judge_samples", JUDGE_SAMPLE_SCHEMA, flush_seconds)  # type: ignore[arg-type]
        self.random = rng or random.Random()

    def start(self) -> "JudgeSampler":
        self.buffer.start()
        return self

    def close(self) -> None:
        self.buffer.close()

    def offer(self, call: Call, pref: Preference | None, embedding: Callable[[str], Any]) -> bool:
        """Draw the answered call for grading at its preference's rate; True when it was kept. Shadow calls come
        from the decision's other candidates (`call.ranked`); `embedding(session_id)` is the router's embedding of
        the query, or None."""
        if (pref is None or not judged(pref) or call.mode != "routed" or call.hashed or call.status != "ok"
                or call.answered is None or not isinstance(call.messages, list)):
            return False
        if self.random.random() >= float(pref.judge_sample_rate or 0.0):
            return False
        answered = call.answered.candidate.key
        candidates = {c.candidate.key: c.candidate for c in call.ranked}
        others = [key for key in candidates if key != answered]
        shadow, propensity = None, None
        shadow_rate = float(pref.shadow_sample_rate or 0.0)
        if others and shadow_rate > 0 and self.random.random() < shadow_rate:
            shadow = self.random.choice(others)
            propensity = shadow_rate / len(others)
        vector = embedding(call.session_id)
        self.buffer.add({
            "session_id": call.session_id, "created_at": call.created_at, "user_id": call.user.user_id,
            "organization_id": call.user.organization_id, "preference_id": call.preference_id,
            "content": msgspec.json.encode(call.messages).decode(), "answer": "".join(call.answer_parts),
            "model": answered, "shadow_model": shadow, "shadow_propensity": propensity,
            "embedding": None if vector is None else [float(v) for v in vector],
            "candidates": list(candidates), "input_prices": [float(c.input_price) for c in candidates.values()],
            "output_prices": [float(c.output_price) for c in candidates.values()],
        })
        return True
