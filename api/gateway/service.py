"""One chat completion through the gateway: decide (modelSelect's own decision path), keep a conversation on its
model, call the first candidate, fall back down the router's ranking before the first byte, record the outcome.
No web framework here: api/controllers/gateway.py turns the result into a response."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import msgspec

from api.budgets import BudgetGate, Hold, prompt_tokens_of, spender_of, worst_case_usd
from api.errors import ApiError
from api.gateway import wire
from api.gateway.calls import Call, CallLog, cost_usd
from api.gateway.headers import model_header
from api.gateway.judge_sampling import JudgeSampler
from api.gateway.relay import first_data, relay, upstream_error
from api.observability import hooks as telemetry
from api.gateway.upstream import (Endpoint, Failure, Upstream, endpoint, failed_status, failed_transport, lines,
                                  not_configured_message, redact)
from api.schemas.model_select import LLMProvider
from api.selection.candidates import ResolvedCandidate
from api.selection.service import SelectionService
from api.selection.sessions import new_session_id
from api.settings import OptimizeSettings, Settings
from storage.interfaces import Preferences
from storage.records import User


class ProviderNotConfigured(ApiError):
    status, code, type = 400, "PROVIDER_NOT_CONFIGURED", "invalid_request_error"


class UpstreamFailed(ApiError):
    status, code, type = 502, "UPSTREAM_FAILED", "api_error"


class UpstreamRejected(ApiError):
    code, type = "UPSTREAM_REJECTED", "invalid_request_error"

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Answer:
    body: bytes
    headers: dict[str, str]
    after: Callable[[], None] | None = None  # the call's record: run once the answer is sent (off its latency)


@dataclass(frozen=True)
class Streamed:
    events: AsyncIterator[bytes]
    headers: dict[str, str]


@dataclass(frozen=True)
class Plan:
    """Who may answer, in order, and what the decision was."""

    ranked: list[ResolvedCandidate]
    session_id: str


class GatewayService:
    def __init__(self, selection: SelectionService, calls: CallLog, preferences: Preferences,
                 settings: Settings, sampler: JudgeSampler | None = None, budget: BudgetGate | None = None) -> None:
        self.selection, self.calls, self.preferences, self.sampler = selection, calls, preferences, sampler
        self.budget = budget
        selection.answered = calls.answered  # a follow-up names the model that answered, not only the one chosen
        self.keys: OptimizeSettings = settings.optimize or OptimizeSettings()
        self.max_attempts = settings.gateway_max_attempts
        self.upstream = Upstream(settings.gateway_connect_timeout_s, settings.gateway_first_byte_timeout_s)

    async def aclose(self) -> None:
        await self.upstream.aclose()

    def close(self) -> None:
        self.calls.close()
        if self.sampler is not None:
            self.sampler.close()

    async def complete(self, body: dict[str, Any], body_bytes: int, user: User) -> Answer | Streamed:
        req = wire.parse(body)
        goal = wire.target(req.model)
        stream = bool(req.stream)
        if goal.routed:
            call = Call(user, "", req.model, "routed", stream, preference_id=goal.preference_id)
            plan = await self._route(req, goal, body_bytes, user, call)
        else:
            call = Call(user, new_session_id(), req.model, "proxy", stream, hashed=bool(req.hash_content))
            ranked = self.selection.resolve([LLMProvider(provider=goal.provider, model=goal.model)], False)
            call.chosen, call.strongest = ranked[0].candidate.key, ranked[0]
            plan = Plan(ranked, call.session_id)
        call.session_id, call.messages = plan.session_id, req.messages
        want_usage = bool((req.stream_options or {}).get("include_usage"))
        return await self._call(body, plan.ranked, call, stream, want_usage)

    async def _route(self, req: wire.ChatRequest, goal: wire.Target, body_bytes: int, user: User,
                     call: Call) -> Plan:
        stored = None
        if goal.preference_id is not None:  # its stored candidates, and its judge sampling once answered
            pref = (self.selection.preference(user, goal.preference_id)
                    if self.selection.preferences.cached(goal.preference_id)  # else a store call: off the loop
                    else await anyio.to_thread.run_sync(self.selection.preference, user, goal.preference_id))
            call.preference = pref
            stored = pref.llm_providers if pref is not None and req.llm_providers is None else None
        sreq = wire.selection_request(req, goal, stored)
        # A conversation sent whole, with no previous_session, is recognised by its earlier turns' digest.
        previous = None if req.previous_session else self.calls.continued(req.messages, user.user_id)
        if self.selection.may_block(sreq, body_bytes):
            selected = await anyio.to_thread.run_sync(self.selection.decide, sreq, user, None, previous)
        else:
            selected = self.selection.decide(sreq, user, None, previous)
        ranked = list(selected.ranked)  # the previous turn's model first when it was kept (api/selection/sticky.py)
        call.chosen, call.hashed, call.sticky = ranked[0].candidate.key, selected.hashed, selected.sticky
        call.ranked = ranked
        call.strongest = ranked[max(range(len(ranked)), key=selected.quality.__getitem__)]
        return Plan(ranked, selected.response.session_id)

    async def _call(self, body: dict[str, Any], ranked: list[ResolvedCandidate], call: Call, stream: bool,
                    want_usage: bool) -> Answer | Streamed:
        reachable = [(c, ep) for c in ranked if (ep := endpoint(c.candidate.provider, self.keys)) is not None]
        if not reachable:
            call.http_status, call.error = 400, "no provider configured"
            self.calls.record(call)
            raise ProviderNotConfigured(not_configured_message([c.candidate.provider for c in ranked]),
                                        details={"candidates": [c.candidate.key for c in ranked]})
        tried = reachable[: self.max_attempts]
        call.hold = await self._reserve(body, call, [c for c, _ in tried])  # a refusal: no provider is called
        failure: Failure | None = None
        for candidate, ep in tried:
            payload = wire.forwarded(body, candidate.candidate.model, stream)
            began = call.begin_attempt()
            ep = telemetry.attempt_began(candidate, ep)  # metrics, the attempt's span and its traceparent
            try:
                if stream:
                    outcome = await self._open_stream(ep, payload, candidate, call, want_usage)
                else:
                    outcome = await self._post(ep, payload, candidate, call)
            except self.upstream.errors as exc:
                outcome = failed_transport(exc, self.upstream.connect_errors)
            telemetry.attempt_ended(outcome.outcome if isinstance(outcome, Failure) else "ok", stream)
            if not isinstance(outcome, Failure):
                call.attempt(candidate.candidate.key, "ok", began)
                # recorded once the answer is sent (the controller's background task); a stream, when it ends
                return outcome
            failure = outcome
            call.attempt(candidate.candidate.key, failure.outcome, began)
            call.error = redact(failure.message, self.keys.secrets)[:500]
            if not failure.retryable:
                call.http_status, call.latency_ms = failure.status, call.since_start_ms()
                self._record(call)
                raise UpstreamRejected(failure.status, f"{candidate.candidate.key} refused the request: {call.error}")
        assert failure is not None
        call.http_status, call.latency_ms = UpstreamFailed.status, call.since_start_ms()
        self._record(call)
        tried = ", ".join(f"{m} ({o})" for m, o in zip(call.attempt_models, call.attempt_outcomes))
        raise UpstreamFailed(f"no candidate answered after {len(call.attempt_models)} attempt(s): {tried}; "
                             f"last error: {call.error}",
                             details={"attempts": len(call.attempt_models), "session_id": call.session_id})

    async def _reserve(self, body: dict[str, Any], call: Call, tried: list[ResolvedCandidate]) -> Hold | None:
        """The budget check (api/budgets.py) for the costliest candidate this call may reach."""
        if self.budget is None:
            return None
        prompt = prompt_tokens_of(call.messages, body.get("tools"))
        cap = body.get("max_completion_tokens") or body.get("max_tokens")
        cap = cap if isinstance(cap, int) and not isinstance(cap, bool) else None
        worst = max(worst_case_usd(c.candidate.input_price, c.candidate.output_price, prompt, cap,
                                   c.candidate.context_length, self.budget.default_output_tokens) for c in tried)
        try:
            return await anyio.to_thread.run_sync(self.budget.reserve, spender_of(call.user), worst)
        except ApiError as refused:
            call.http_status, call.error = refused.status, refused.code
            self.calls.record(call)
            raise

    def _record(self, call: Call) -> None:
        """The call's log row and its budget settlement (the real cost; nothing when no answer came)."""
        self.calls.record(call)
        self._settle(call)

    def _settle(self, call: Call) -> None:
        if self.budget is not None:
            self.budget.settle(call.hold, cost_usd(call.answered, call.input_tokens, call.output_tokens))

    def _headers(self, call: Call, candidate: ResolvedCandidate) -> dict[str, str]:
        return {"x-switchboard-session-id": call.session_id, **model_header(candidate.candidate.key),
                "x-switchboard-attempts": str(len(call.attempt_models) + 1)}

    async def _post(self, ep: Endpoint, payload: bytes, candidate: ResolvedCandidate, call: Call) -> Answer | Failure:
        status, content = await self.upstream.post(ep, payload)
        if status != 200:
            return failed_status(status, content)
        read = wire.answer_body(content, candidate.candidate.key)
        if read is None:
            return Failure("bad_response", True, 502, "the provider's answer was not a chat completion")
        body, answer = read
        call.answered, call.status, call.http_status = candidate, "ok", 200
        call.ttft_ms = call.latency_ms = call.since_start_ms()
        call.usage(answer.get("usage"))
        choices = answer["choices"]
        choice = choices[0] if isinstance(choices, list) and choices else None
        if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
            call.answer_parts.append(str(choice["message"].get("content") or ""))  # the conversation's digest
        # What the next request may read is updated before the answer leaves (a follow-up can arrive before this
        # coroutine resumes); only the log row waits until it is sent.
        self.selection.observed_latency.add(call.user.organization_id, candidate.candidate.key, call.attempt_seconds())
        self.calls.remember(call)
        return Answer(body, self._headers(call, candidate), lambda: self._answered(call))

    async def _open_stream(self, ep: Endpoint, payload: bytes, candidate: ResolvedCandidate, call: Call,
                           want_usage: bool) -> Streamed | Failure:
        response = await self.upstream.open(ep, payload)
        try:
            if response.status != 200:
                failure = failed_status(response.status, await response.read())
            else:
                events = lines(response)
                first = await first_data(events)  # nothing reached the caller before this arrives: fallback is safe
                problem = upstream_error(first) if first is not None else None
                if first is None:
                    failure = Failure("empty_stream", True, 502, "the provider's stream ended before its first event")
                elif problem is not None:
                    failure = Failure("error_event", True, 502, problem)
                else:
                    call.answered = candidate
                    return Streamed(relay(response, events, first, candidate.candidate.key, want_usage, call,
                                          self._stream_ended, self.upstream.errors), self._headers(call, candidate))
        except BaseException:
            response.close()
            raise
        response.close()
        return failure

    def _stream_ended(self, call: Call) -> None:
        if call.status == "ok" and call.answered is not None:
            self.selection.observed_latency.add(call.user.organization_id, call.answered.candidate.key,
                                                call.attempt_seconds())
        self._record(call)
        self._sample(call)

    def _answered(self, call: Call) -> None:
        """Once the answer is sent: its log row, then the judge's draw (api/gateway/judge_sampling.py)."""
        self.calls.log(call)
        self._settle(call)
        self._sample(call)

    def _sample(self, call: Call) -> None:
        if self.sampler is not None and call.preference is not None:
            self.sampler.offer(call, call.preference, self._embedding)

    def _embedding(self, session_id: str) -> list[float] | None:
        """The router's embedding of a recent decision's query (kept in memory for feedback); None otherwise."""
        if not self.selection.sessions.is_recent(session_id):
            return None
        found = self.selection.sessions.find(session_id)
        vector = found.get("embedding") if found else None
        return None if vector is None else [float(v) for v in vector]

    def model_list(self, user: User) -> bytes:
        """GET /v1/models: the routing names this key may use, as OpenAI's model list."""
        names = [wire.ROUTING_NAME] + [f"{wire.ROUTING_NAME}/{p.preference_id}"
                                       for p in self.preferences.for_user(user.user_id)]
        return msgspec.json.encode({"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "switchboard"} for name in names]})
