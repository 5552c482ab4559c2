"""One chat completion through the gateway: decide (modelSelect's own decision path), keep a conversation on its
model, call the first candidate, fall back down the router's ranking before the first byte, record the outcome.
No web framework here: api/controllers/gateway.py turns the result into a response."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import msgspec

from api.budgets import BudgetGate, Hold, prompt_tokens_of, spender_of, worst_case_usd
from api.deployments import current, deployment_keys, routes
from api.errors import ApiError
from api.gateway import wire
from api.gateway.admission import Admission, Lease
from api.gateway.bodies import lines, read_capped
from api.gateway.calls import Call, CallLog, cost_usd
from api.gateway.headers import model_header
from api.gateway.judge_sampling import JudgeSampler
from api.gateway.redaction import Scrubber
from api.gateway.relay import first_data, parsed, relay, upstream_error, well_formed
from api.gateway.balancing import Balancer
from api.gateway.upstream import (Endpoint, Failure, Upstream, endpoint, failed_status, failed_transport,
                                  not_configured_message)
from api.observability import hooks as telemetry
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


class UpstreamBusy(ApiError):
    """Every candidate's endpoint (or the whole pool) stayed full for SWITCHBOARD_GATEWAY_POOL_WAIT_S."""

    status, code, type = 503, "UPSTREAM_BUSY", "api_error"


class ConcurrencyLimited(ApiError):
    """This caller already has SWITCHBOARD_GATEWAY_MAX_PER_KEY gateway calls in flight."""

    status, code, type = 429, "CONCURRENCY_LIMITED", "rate_limit_error"


class CallerLeft(ApiError):
    """The caller disconnected before its answer: the upstream call was cancelled (nobody reads this answer)."""

    status, code, type = 499, "CLIENT_CLOSED", "api_error"


# The code of a 502 when no candidate answered, by the last attempt's outcome (the others: UPSTREAM_FAILED).
EXHAUSTED_CODES = {"redirect": "UPSTREAM_REDIRECT", "too_large": "UPSTREAM_TOO_LARGE"}


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
        self.upstream = Upstream(settings.gateway_connect_timeout_s, settings.gateway_first_byte_timeout_s,
                                 settings.gateway_max_response_bytes, settings.gateway_pool_size,
                                 settings.gateway_pool_wait_s)
        self.admission = Admission(settings.gateway_pool_size, settings.gateway_max_per_upstream,
                                   settings.gateway_max_per_key, settings.gateway_pool_wait_s)
        self.balancer = Balancer(settings.deployment_cooldown_s)
        # every provider text passes it (api/gateway/redaction.py), the deployments file's keys included
        self.scrub = Scrubber((*self.keys.secrets, *deployment_keys()))
        self.first_byte_s = settings.gateway_first_byte_timeout_s
        self.attempt_total_s = settings.gateway_attempt_total_timeout_s
        self.request_total_s = settings.gateway_request_total_timeout_s

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
            if pref is not None and req.llm_providers is None and not stored and pref.has_custom_router:
                # no candidates named or stored: those its custom router was trained on (raises while it trains)
                router = self.selection.custom_routers.for_preference(pref)
                stored = list(getattr(router, "models", ())) or None
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
        # each candidate's deployments (api/deployments.py), balanced by weight with cooling ones last
        reachable = [(c, route) for c in ranked
                     for route in self.balancer.order(routes(c.candidate.provider, c.candidate.model, self.keys))]
        if not reachable:
            call.http_status, call.error = 400, "no provider configured"
            self.calls.record(call)
            raise ProviderNotConfigured(not_configured_message([c.candidate.provider for c in ranked]),
                                        details={"candidates": [c.candidate.key for c in ranked]})
        tried = reachable[: self.max_attempts]
        call.hold = await self._reserve(body, call, [c for c, _ in tried])  # a refusal: no provider is called
        failure: Failure | None = None
        in_flight: str | None = None  # the candidate whose attempt is under way, if the caller leaves meanwhile
        began = 0.0
        loop = asyncio.get_running_loop()
        request_deadline = loop.time() + self.request_total_s
        try:
            for candidate, route in tried:
                if failure is not None and loop.time() >= request_deadline:
                    break  # SWITCHBOARD_GATEWAY_REQUEST_TOTAL_TIMEOUT_S: no time left for another candidate
                payload = wire.forwarded(body, route.model, stream)  # the deployment's own model id
                ep = endpoint(route)
                began, in_flight = call.begin_attempt(), candidate.candidate.key
                ep = telemetry.attempt_began(candidate, ep)  # metrics, the attempt's span and its traceparent
                deadline = min(loop.time() + self.attempt_total_s, request_deadline)
                outcome = await self._attempt(ep, payload, candidate, call, stream, want_usage, deadline)
                telemetry.attempt_ended(outcome.outcome if isinstance(outcome, Failure) else "ok", stream)
                if not isinstance(outcome, Failure):
                    self.balancer.succeeded(route.deployment)
                    call.attempt(candidate.candidate.key, "ok", began)
                    # recorded once the answer is sent (the controller's background task); a stream, when it ends
                    return outcome
                failure, in_flight = outcome, None
                if failure.retryable:
                    self.balancer.failed(route.deployment)
                call.attempt(candidate.candidate.key, failure.outcome, began)
                call.error = self.scrub(failure.message)
                if not failure.retryable:
                    raise self._refuse(call, UpstreamRejected(
                        failure.status, f"{candidate.candidate.key} refused the request: {call.error}"))
        except asyncio.CancelledError:  # the caller left (api/controllers/gateway.py): the upstream call is dropped
            if in_flight is not None:
                call.attempt(in_flight, "client_closed", began)
            call.status, call.http_status, call.latency_ms = "client_closed", CallerLeft.status, call.since_start_ms()
            self._record(call)
            raise
        assert failure is not None
        raise self._refuse(call, self._exhausted(call, failure))

    async def _attempt(self, ep: Endpoint, payload: bytes, candidate: ResolvedCandidate, call: Call, stream: bool,
                       want_usage: bool, deadline: float) -> Answer | Streamed | Failure:
        """One candidate's call, within its admission slots (api/gateway/admission.py) and by `deadline`."""
        lease = await self.admission.enter(call.user.user_id, ep.url)
        if lease == "key":
            raise self._refuse(call, ConcurrencyLimited(
                "this key already has its most gateway calls in flight (SWITCHBOARD_GATEWAY_MAX_PER_KEY); retry when "
                "one ends", headers={"Retry-After": "1"}))
        if isinstance(lease, str):
            return Failure("pool_full", True, 503, "the provider's endpoint is at its concurrency limit "
                                                   "(SWITCHBOARD_GATEWAY_MAX_PER_UPSTREAM / _POOL_SIZE)")
        try:
            if stream:
                return await self._open_stream(ep, payload, candidate, call, want_usage, lease, deadline)
            return await self._post(ep, payload, candidate, call, lease, deadline)
        except self.upstream.errors as exc:
            return failed_transport(exc, self.upstream.connect_errors)

    def _exhausted(self, call: Call, failure: Failure) -> ApiError:
        """What the caller gets when no candidate answered: 503 when every endpoint was full, else a 502."""
        tried = ", ".join(f"{m} ({o})" for m, o in zip(call.attempt_models, call.attempt_outcomes))
        if all(o == "pool_full" for o in call.attempt_outcomes):
            return UpstreamBusy(f"every candidate's provider endpoint is at its concurrency limit: {tried}; retry "
                                "shortly", headers={"Retry-After": "1"})
        return UpstreamFailed(f"no candidate answered after {len(call.attempt_models)} attempt(s): {tried}; last "
                              f"error: {call.error}", code=EXHAUSTED_CODES.get(failure.outcome),
                              details={"attempts": len(call.attempt_models), "session_id": call.session_id})

    def _refuse(self, call: Call, error: ApiError) -> ApiError:
        """Record the call as the caller will see it, and hand back the error to raise."""
        call.http_status, call.latency_ms = error.status, call.since_start_ms()
        self._record(call)
        return error

    async def _reserve(self, body: dict[str, Any], call: Call, tried: list[ResolvedCandidate]) -> Hold | None:
        """The budget check (api/budgets.py) for the costliest candidate this call may reach."""
        if self.budget is None:
            return None
        if (free := self.budget.free_pass(spender_of(call.user))) is not None:
            return free  # no budget applies to this caller (checked within the last second): no store call
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

    async def _post(self, ep: Endpoint, payload: bytes, candidate: ResolvedCandidate, call: Call, lease: Lease,
                    deadline: float) -> Answer | Failure:
        try:
            async with asyncio.timeout_at(deadline):  # a trickled answer ends here, not when the provider stops
                status, content = await self.upstream.post(ep, payload)
        finally:
            lease.release()
        if status != 200:
            return failed_status(status, content)
        read = wire.answer_body(content, candidate.candidate.key)
        if read is None:
            return Failure("bad_response", True, 502, "the provider's answer was not a chat completion")
        body, answer = read
        call.answered, call.status, call.http_status = candidate, "ok", 200
        call.ttft_ms = call.latency_ms = call.since_start_ms()
        call.usage(answer.get("usage"))  # kept only when sane; else estimated when logged (api/gateway/calls.py)
        choices = answer["choices"]
        choice = choices[0] if choices else None
        if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
            call.answer_parts.append(str(choice["message"].get("content") or ""))  # the conversation's digest
        # What the next request may read is updated before the answer leaves (a follow-up can arrive before this
        # coroutine resumes); only the log row waits until it is sent.
        self.selection.observed_latency.add(call.user.organization_id, candidate.candidate.key, call.attempt_seconds())
        self.calls.remember(call)
        return Answer(body, self._headers(call, candidate), lambda: self._answered(call))

    async def _open_stream(self, ep: Endpoint, payload: bytes, candidate: ResolvedCandidate, call: Call,
                           want_usage: bool, lease: Lease, deadline: float) -> Streamed | Failure:
        """The stream once its first event arrived, or why not. The first-byte limit runs until a `data:` event:
        comments and blank lines (keep-alives) count as silence."""
        response, handed = None, False
        try:
            first_byte = min(asyncio.get_running_loop().time() + self.first_byte_s, deadline)
            async with asyncio.timeout_at(first_byte):
                response = await self.upstream.open(ep, payload)
                if response.status != 200:
                    return failed_status(response.status, await read_capped(response, 65536, refuse=False))
                events = lines(response, self.upstream.max_response_bytes, deadline)
                first = await first_data(events)  # nothing reached the caller before this arrives: fallback is safe
            if first is None:
                return Failure("empty_stream", True, 502, "the provider's stream ended before its first event")
            chunk = parsed(first)  # read once: checked here, relayed as it is by the relay
            problem = upstream_error(chunk)
            if problem is not None:
                return Failure("error_event", True, 502, problem)
            if not well_formed(chunk):
                return Failure("bad_chunk", True, 502, "the provider's first event was not a chat completion chunk")
            call.answered = candidate
            relayed = relay(response, events, first, chunk, candidate.candidate.key, want_usage, call,
                            self._stream_ended, self.upstream.errors, self.scrub, lease.release)
            # A stream the server never began to send (its caller gone first) never runs the relay's cleanup: the
            # response, the slots and the call's row are settled when the relay is dropped instead.
            weakref.finalize(relayed, self._never_relayed, response, lease, call)
            handed = True  # the relay owns the response now, and the lease
            return Streamed(relayed, self._headers(call, candidate))
        finally:
            if not handed:
                if response is not None:
                    response.close()
                lease.release()

    def _never_relayed(self, response: Any, lease: Lease, call: Call) -> None:
        response.close()  # a no-op once the relay released it to the pool
        lease.release()  # once only
        if call.http_status == 0:  # the relay never began: nothing was sent, yet the call was made
            call.status, call.http_status, call.latency_ms = "client_closed", CallerLeft.status, call.since_start_ms()
            self._record(call)

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
        """GET /v1/models: what this key may name, as OpenAI's model list: the routing names (its preferences'
        included), then every model this server can call by name (the deployments file's, api/deployments.py)."""
        names = [wire.ROUTING_NAME] + [f"{wire.ROUTING_NAME}/{p.preference_id}"
                                       for p in self.preferences.for_user(user.user_id)]
        names += sorted(current().models)
        return msgspec.json.encode({"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "switchboard"} for name in names]})
