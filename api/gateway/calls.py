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
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from api.routing.policy import request_cost_usd
from api.routing.text import MessageShapeError, message_texts
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


def cost_usd(candidate: ResolvedCandidate | None, input_tokens: int, output_tokens: int) -> float | None:
    """Tokens at a model's catalogue prices: the policy's cost formula on the real token counts."""
    if candidate is None:
        return None
    c = candidate.candidate
    return float(request_cost_usd(c.input_price, c.output_price, input_tokens, output_tokens))


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
        if isinstance(usage, dict):
            self.input_tokens = int(usage.get("prompt_tokens") or 0)
            self.output_tokens = int(usage.get("completion_tokens") or 0)

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

    def start(self) -> "CallLog":
        self.buffer.start()
        return self

    def close(self) -> None:
        self.buffer.close()

    def record(self, call: Call) -> None:
        self.remember(call)
        self.log(call)

    def log(self, call: Call) -> None:
        """The call's row in the event log."""
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
