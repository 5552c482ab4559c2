"""What one gateway request did, recorded beside its decision: the event table `gateway_calls`
(storage/event_schemas.py), one row per request, flushed like the session log. The recent answers are also kept in
memory, so a follow-up turn finds the model that answered its previous turn without reading the log: by its
session id (`previous_session`), or by a digest of the conversation so far, messages and answer (a client that
sends nothing but the conversation). Digests, never text."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from api.routing.text import MessageShapeError, count_tokens, full_text, message_texts
from api.selection.candidates import ResolvedCandidate
from storage.event_buffer import EventBuffer
from storage.event_schemas import GATEWAY_CALL_SCHEMA
from storage.records import Preference, User


def conversation_digest(messages: Any) -> str | None:
    """A digest of the conversation's (role, text) turns: what a client sends back of an answer is its text, whatever
    other fields it keeps (refusal, annotations). None when there is no text to identify it by."""
    try:
        turns = message_texts(messages)
    except MessageShapeError:
        return None
    if not turns:
        return None
    return hashlib.blake2b(repr(turns).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


# No request or answer comes near this many tokens; a count past it (10^30, 2^63: issue 31) is nonsense, and would
# not fit the log's int64 either.
MAX_REPORTED_TOKENS = 100_000_000


def token_count(value: Any) -> int | None:
    """A provider's token count when it is one: a non-negative integer within MAX_REPORTED_TOKENS, else None."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REPORTED_TOKENS:
        return None
    return value


def estimated_tokens(messages: Any, answer: str) -> tuple[int, int]:
    """(input, output) tokens counted with the router's tokenizer (api/routing/text.py) from the request's text and
    the answer's: what a call whose provider reported no usable usage is recorded at, rather than $0."""
    try:
        prompt = full_text(messages)
    except MessageShapeError:
        prompt = str(messages)
    return count_tokens(prompt), count_tokens(answer)


def cost_usd(candidate: ResolvedCandidate | None, input_tokens: int, output_tokens: int) -> float | None:
    """Tokens at a model's catalogue prices: the policy's cost formula (api/routing/policy.py request_cost_usd) on
    the real token counts, in plain floats: the same operations in the same order, so the same value, without
    numpy's per-scalar overhead (it ran three times a call, about 25 us in all)."""
    if candidate is None:
        return None
    c = candidate.candidate
    return (input_tokens * float(c.input_price) + output_tokens * float(c.output_price)) / 1e6


@dataclass
class Call:
    user: User
    session_id: str
    requested_model: str
    mode: str  # 'routed' | 'proxy'
    stream: bool
    preference_id: str | None = None
    chosen: str | None = None
    sticky: bool = False
    strongest: ResolvedCandidate | None = None
    answered: ResolvedCandidate | None = None
    status: str = "failed"
    http_status: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    usage_reported: bool = False  # the provider's usage was read and sane
    usage_estimated: bool = False  # the token counts are estimated_tokens, not the provider's
    ttft_ms: float | None = None
    latency_ms: float | None = None
    error: str | None = None
    hashed: bool = False  # hash_content: a provider's error text may quote the prompt, so only its kind is kept
    started: float = field(default_factory=time.perf_counter)
    created_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    attempt_models: list[str] = field(default_factory=list)
    attempt_outcomes: list[str] = field(default_factory=list)
    attempt_ms: list[float] = field(default_factory=list)
    _attempt_began: float = 0.0
    messages: Any = None  # the request's, to remember the conversation with its answer (never stored)
    answer_parts: list[str] = field(default_factory=list)  # the answer's text, streamed or not
    preference: Preference | None = None  # a routed call's preference: judge sampling reads its opt-in
    ranked: list[ResolvedCandidate] = field(default_factory=list)  # the decision's candidates (shadow calls' pool)
    hold: Any = None  # its budget reservation (api/budgets.py Hold), settled once the call is over

    def since_start_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000

    def attempt(self, model: str, outcome: str, began: float) -> None:
        self.attempt_models.append(model)
        self.attempt_outcomes.append(outcome)
        self.attempt_ms.append((time.perf_counter() - began) * 1000)

    def attempt_seconds(self) -> float:
        """How long the attempt under way has taken (the provider's own latency, without the decision)."""
        return time.perf_counter() - self._attempt_began

    def begin_attempt(self) -> float:
        self._attempt_began = time.perf_counter()
        return self._attempt_began

    def usage(self, usage: Any) -> None:
        """The provider's counts, taken only when both are sane (token_count); otherwise the call is estimated
        when it is logged (`needs_estimate`)."""
        if not isinstance(usage, dict):
            return
        prompt, completion = token_count(usage.get("prompt_tokens")), token_count(usage.get("completion_tokens"))
        if prompt is not None and completion is not None:
            self.input_tokens, self.output_tokens, self.usage_reported = prompt, completion, True

    def needs_estimate(self) -> bool:
        """A call that was answered (and so paid for) with no usable usage from the provider."""
        return self.answered is not None and not self.usage_reported and not self.usage_estimated

    def estimate_usage(self) -> None:
        self.input_tokens, self.output_tokens = estimated_tokens(self.messages, "".join(self.answer_parts))
        self.usage_estimated = True

    def row(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id, "created_at": self.created_at, "user_id": self.user.user_id,
            "key_id": self.user.key_id,
            "organization_id": self.user.organization_id, "preference_id": self.preference_id,
            "requested_model": self.requested_model, "mode": self.mode, "stream": self.stream,
            "chosen": self.chosen, "sticky": self.sticky,
            "answered": self.answered.candidate.key if self.answered else None,
            "strongest": self.strongest.candidate.key if self.strongest else None,
            "status": self.status, "http_status": self.http_status, "attempts": len(self.attempt_models),
            "attempt_models": self.attempt_models, "attempt_outcomes": self.attempt_outcomes,
            "attempt_ms": self.attempt_ms, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
            "usage_estimated": self.usage_estimated,
            "cost_usd": cost_usd(self.answered, self.input_tokens, self.output_tokens),
            "strongest_cost_usd": cost_usd(self.strongest if self.answered else None, self.input_tokens,
                                           self.output_tokens),
            "ttft_ms": self.ttft_ms, "latency_ms": self.latency_ms,
            "error": (self.attempt_outcomes[-1] if self.attempt_outcomes else None) if self.hashed else self.error,
        }


class CallLog:
    def __init__(self, events_dir: Path | str, flush_seconds: float, recent: int = 20_000) -> None:
        self.buffer = EventBuffer(events_dir, "gateway_calls", GATEWAY_CALL_SCHEMA, flush_seconds)
        self._answered: OrderedDict[str, tuple[str, str]] = OrderedDict()  # session -> (user, provider/model)
        self._conversations: OrderedDict[str, tuple[str, str]] = OrderedDict()  # digest -> (user, provider/model)
        self._recent_max = recent
        self._lock = threading.Lock()
        # Estimating a call's tokens counts its whole text (up to the request and answer bounds): off the event
        # loop, one call at a time, in order (tiktoken releases the GIL while it encodes).
        self._estimator: ThreadPoolExecutor | None = None

    def start(self) -> "CallLog":
        self.buffer.start()
        return self

    def close(self) -> None:
        if self._estimator is not None:
            self._estimator.shutdown(wait=True)  # rows still being estimated reach the buffer before it closes
        self.buffer.close()

    def record(self, call: Call) -> None:
        self.remember(call)
        self.log(call)

    def log(self, call: Call) -> None:
        """The call's row in the event log; a paid call without usable usage is estimated first, off the loop."""
        if not call.needs_estimate():
            self.buffer.add(call.row())
            return
        if self._estimator is None:
            self._estimator = ThreadPoolExecutor(1, thread_name_prefix="gateway-usage")
        self._estimator.submit(self._estimated_row, call)

    def _estimated_row(self, call: Call) -> None:
        call.estimate_usage()
        self.buffer.add(call.row())

    def remember(self, call: Call) -> None:
        """What a follow-up turn looks up: the model that answered, by session and by conversation."""
        if call.answered is not None:
            who = (call.user.user_id, call.answered.candidate.key)
            digest = None
            if call.status == "ok" and isinstance(call.messages, list):
                answer = {"role": "assistant", "content": "".join(call.answer_parts)}
                digest = conversation_digest([*call.messages, answer])
            with self._lock:
                self._answered[call.session_id] = who
                if digest is not None:
                    self._conversations[digest] = who
                for recent in (self._answered, self._conversations):
                    if len(recent) > self._recent_max:
                        recent.popitem(last=False)

    def continued(self, messages: Any, user_id: str) -> str | None:
        """The model that answered the turn this conversation continues (its messages but the last), if recent."""
        if not isinstance(messages, list) or len(messages) < 2:
            return None
        digest = conversation_digest(messages[:-1])
        with self._lock:
            found = self._conversations.get(digest) if digest else None
        return found[1] if found and found[0] == user_id else None

    def answered(self, session_id: str, user_id: str) -> str | None:
        """The model that answered a recent gateway call of this user (None: not this user's, or not recent)."""
        with self._lock:
            found = self._answered.get(session_id)
        return found[1] if found and found[0] == user_id else None
