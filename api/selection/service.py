"""Model selection: request -> eligible candidates -> predicted quality (router + personalisation) -> policy ->
one model, with the decision recorded as a session. No web framework here; the controller is three lines."""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Protocol, Sequence, TypeVar

import msgspec
import numpy as np

from api.catalogue import Catalogue
from api.errors import BadRequest, NotFound
from api.model_figures.live import LiveFigures
from api.routing import policy
from api.routing.dial import TrafficDial
from api.routing.features import Featurizer, QueryFeatures
from api.routing.router import Candidate
from api.routing.text import (MessageShapeError, count_tokens, joined, message_texts, routing_text, routing_text_of,
                              text_size)
from api.schemas.model_select import ModelSelectRequest, ModelSelectResponse, ToolDefinition
from api.selection.candidates import ResolvedCandidate, Resolver, aggregator_format
from api.selection.custom_mix import mixed_quality
from api.selection.eligibility import eligible
from api.selection.exploration import explore
from api.selection.learned import LearnedCorrections
from api.selection.latency import ObservedLatency, latency_s
from api.selection.personalization import FeedbackMemory
from api.selection.sessions import SessionLog, new_session_id
from api.selection.sticky import DEFAULT_MARGIN, kept_position, previous_model
from storage.records import Preference, User

KNOWN_METRICS = ("accuracy",)
# Above this many characters of messages, a request is read and featurised in a worker thread (a 2 MB body takes
# milliseconds, which every other request on the event loop would wait for).
LARGE_REQUEST_CHARS = 20_000
# ... and above this many bytes of body, whatever it holds: parts without text (an image's data URL), tool
# definitions, are still encoded, hashed and kept with the session.
LARGE_BODY_BYTES = 65_536
T = TypeVar("T")


def tie_breaker(text: str, candidates: int) -> np.ndarray:
    """Per-candidate offsets below 1e-6, fixed by the prompt's text. Prompts the router cannot tell apart (in a
    script its vocabulary lacks, say) get identical gaps, and no lambda could then move only part of them: with
    these, the dial splits such a group by a stable hash, as a caller turning the knob expects."""
    digest = hashlib.blake2b(text[:4096].encode("utf-8", "surrogatepass"), digest_size=16).digest()
    repeated = np.frombuffer(digest * (candidates // len(digest) + 1), dtype=np.uint8)[:candidates]
    return repeated * (1e-6 / 256)  # the digest's bytes repeated over the candidates, as floats


def request_chars(req: ModelSelectRequest) -> int:
    """The size of the text the router reads from the request (api.routing.text.text_size), counted only as far as
    LARGE_REQUEST_CHARS: whatever shape the messages take, a large one is measured as large."""
    return _checked(text_size, req.messages, LARGE_REQUEST_CHARS)


def _checked(read: Callable[..., T], messages: Any, *args: Any) -> T:
    """`read(messages, ...)`, with a shape the interface does not define answered as a 400 naming where it is."""
    try:
        return read(messages, *args)
    except MessageShapeError as exc:
        raise BadRequest(str(exc), code="INVALID_MESSAGES") from None


def check_tools(tools: list[dict[str, Any]] | None) -> None:
    """400 INVALID_TOOLS unless every tool is in the chat API's tool format (api/schemas/model_select.py)."""
    if not tools:
        return
    try:
        msgspec.convert(tools, list[ToolDefinition], strict=True)
    except msgspec.ValidationError as exc:
        problem, _, where = str(exc).partition(" - at `$")
        raise BadRequest(f"tools{where.rstrip('`')}: {problem}; a tool is "
                         '{"type": "function", "function": {"name": "get_weather", "description": "...", '
                         '"parameters": {JSON Schema}}} (names: 1-64 letters, digits, _ or -)',
                         code="INVALID_TOOLS") from None


class ScoringRouter(Protocol):
    name: str
    schedule: Sequence[float]

    def predict_quality(self, features: QueryFeatures, candidates: Sequence[Candidate]) -> np.ndarray: ...


class PreferenceLookup(Protocol):
    def get_preference(self, user_id: str, preference_id: str) -> Preference | None: ...

    def cached(self, preference_id: str) -> bool: ...


class RouterSource(Protocol):
    """Which router serves a preference: its live custom router, or None for the default. Raises an ApiError while
    the preference's training is open or after it failed (api.custom_router.registry). A custom router also has
    `known(candidates)` and takes `text=` (api.selection.custom_mix); cost_quality_tradeoff uses its own schedule,
    calibrated on its training data (flows.custom_router.calibration), which goes beyond the spec (there it is not
    supported with custom routers)."""

    def for_preference(self, preference: Preference | None) -> ScoringRouter | None: ...


class NoCustomRouters:
    def for_preference(self, preference: Preference | None) -> ScoringRouter | None:
        return None


@dataclass(frozen=True)
class Options:
    """The request's routing options after the preference's defaults are applied (a request's value wins)."""

    tradeoff: str | None
    cost_quality_tradeoff: int | None
    max_model_depth: int | None
    hash_content: bool


def effective_options(req: ModelSelectRequest, pref: Preference | None) -> Options:
    tradeoff, cqt = req.tradeoff, req.cost_quality_tradeoff
    if tradeoff is not None and cqt is not None:
        raise BadRequest("tradeoff and cost_quality_tradeoff are mutually exclusive; send one of them",
                         code="INVALID_TRADEOFF")
    if pref is not None and tradeoff is None and cqt is None:
        tradeoff, cqt = pref.tradeoff, pref.cost_quality_tradeoff
    depth = req.max_model_depth if req.max_model_depth is not None else (pref.max_model_depth if pref else None)
    hashed = req.hash_content if req.hash_content is not None else bool(pref and pref.hash_content)
    return Options(tradeoff, cqt, depth, hashed)


@dataclass(frozen=True)
class Selection:
    """A decision with the router's whole ranking: the gateway (api/gateway/) calls the first of `ranked` and falls
    back down the list. `quality` (predicted) and `utility` (the policy's score: quality less the priced trade-off)
    are aligned with `ranked`."""

    response: ModelSelectResponse
    ranked: tuple[ResolvedCandidate, ...]
    quality: tuple[float, ...]
    utility: tuple[float, ...]
    prompt_tokens: int
    hashed: bool
    sticky: bool = False  # the previous turn's model was kept first (api/selection/sticky.py)
    # Candidates the default router has no figures for (api/model_figures/live.py), by key: the response header
    # x-switchboard-no-evidence names them, and they may be onboarded (api/model_figures/onboarding.py).
    no_evidence: tuple[str, ...] = ()
    router: str = "default"  # which kind of router ranked them: default or custom (metrics' label)


class SelectionService:
    def __init__(self, catalogue: Catalogue, featurizer: Featurizer, default_router: ScoringRouter,
                 preferences: PreferenceLookup, sessions: SessionLog, memory: FeedbackMemory,
                 custom_routers: RouterSource | None = None, dial: TrafficDial | None = None,
                 sticky_margin: float = DEFAULT_MARGIN, learned: LearnedCorrections | None = None,
                 rng: random.Random | None = None, figures: LiveFigures | None = None) -> None:
        self.catalogue, self.featurizer, self.default_router = catalogue, featurizer, default_router
        # Refreshed and onboarded figures (api/model_figures/live.py): the default router of each organization.
        self.figures = figures
        self.resolve = Resolver(catalogue)
        self.preferences, self.sessions, self.memory = preferences, sessions, memory
        self.custom_routers = custom_routers or NoCustomRouters()
        self.dial = dial  # None: the default router's trained schedule for everyone
        self.observed_latency = ObservedLatency()  # fed by the gateway's calls (api/gateway/service.py)
        self.sticky_margin = sticky_margin
        self.learned = learned  # corrections promoted by the learn-from-traffic flow (api/selection/learned.py)
        self.rng = rng or random.Random()  # exploration's draws (api/selection/exploration.py)
        # The model that answered a recent gateway call, by (session, user): set by the gateway (api/gateway/).
        self.answered: Callable[[str, str], str | None] | None = None
        self._orders: dict[tuple[str, ...], tuple[np.ndarray, tuple[str, ...]]] = {}

    def _key_order(self, candidates: Sequence[Candidate]) -> tuple[np.ndarray, tuple[str, ...]]:
        """(the candidates' positions in key order, their keys in that order): the dial's view of a candidate set,
        memoised per set since callers send the same list again and again."""
        keys = tuple(c.key for c in candidates)
        found = self._orders.get(keys)
        if found is None:
            if len(self._orders) > 10_000:  # candidate sets are caller-defined: keep memory bounded
                self._orders.clear()
            order = np.argsort(keys, kind="stable")
            found = self._orders[keys] = (order, tuple(keys[i] for i in order))
        return found

    def preference(self, user: User, preference_id: str | None) -> Preference | None:
        if preference_id is None:
            return None
        pref = self.preferences.get_preference(user.user_id, preference_id)
        if pref is None:
            raise NotFound(f"preference {preference_id!r} not found for this API key's user",
                           code="PREFERENCE_NOT_FOUND", details={"preference_id": preference_id})
        return pref

    def may_block(self, req: ModelSelectRequest, body_bytes: int = 0) -> bool:
        """Whether select() may wait or work for more than a fraction of a millisecond, so the caller should run it
        off the event loop: a preference not cached yet (an RPC to the store owner, which may be slow or
        restarting), a prompt large enough that reading and featurising it takes milliseconds (measured on the text
        the router reads, whatever shape carries it), or a large body (`body_bytes`, as received). Custom routers
        cost tens of microseconds in any language (api/custom_router/encoders.py). Ownership of the preference is
        checked by select() itself."""
        if req.preference_id is not None and not self.preferences.cached(req.preference_id):
            return True
        if req.previous_session is not None and not self.sessions.is_recent(req.previous_session):
            return True  # looked up in the session log's files, perhaps after waiting for another worker's flush
        return body_bytes > LARGE_BODY_BYTES or request_chars(req) > LARGE_REQUEST_CHARS

    def select(self, req: ModelSelectRequest, user: User, type_param: str | None) -> ModelSelectResponse:
        return self.decide(req, user, type_param).response

    def decide(self, req: ModelSelectRequest, user: User, type_param: str | None,
               previous: str | None = None) -> Selection:
        """select(), keeping the ranking of every eligible candidate (one decision path for modelSelect and the
        gateway). The previous turn's model (`req.previous_session`'s, else `previous`, which the gateway finds by
        the conversation's messages) stays first unless the router's first choice gains more than the margin."""
        started = time.perf_counter_ns()
        if req.metric not in KNOWN_METRICS:
            raise BadRequest(f"unknown metric {req.metric!r}; supported: {', '.join(KNOWN_METRICS)}",
                             code="UNSUPPORTED_METRIC")
        check_tools(req.tools)
        aggregator = aggregator_format(type_param)
        pref = self.preference(user, req.preference_id)
        opts = effective_options(req, pref)
        resolved = self.resolve(req.llm_providers, aggregator)

        texts = _checked(message_texts, req.messages)  # read once: the texts below are all made from these
        if not texts:
            raise BadRequest("messages carry no text to route on", code="EMPTY_MESSAGES")
        text, scored_text = joined(texts), routing_text_of(texts)
        tools_json = msgspec.json.encode(req.tools) if req.tools else b""
        prompt_tokens = count_tokens(text) + (len(tools_json) // 4 if tools_json else 0)
        candidates = eligible(resolved, prompt_tokens, bool(req.tools), opts.max_model_depth)

        features = self.featurizer.featurize(scored_text, tools_present=bool(req.tools),
                                             n_messages=len(texts))
        featurized = time.perf_counter_ns()
        custom = self.custom_routers.for_preference(pref)  # raises while its training is open or after a failure
        plain = [c.candidate for c in candidates]
        default = self.default_router if self.figures is None else self.figures.router_for(user.organization_id)
        if custom is None:
            router, router_name = default, default.name
            quality = router.predict_quality(features, plain)
        else:
            quality, router, router_name = mixed_quality(custom, default, features, plain, scored_text)
        router_quality = quality
        correction = self.learned.get(pref.preference_id if pref else None) if self.learned is not None else None
        if correction is not None:
            quality = correction.apply(features.vector, [c.key for c in plain], quality, scored_text,
                                       self.featurizer.embedding.dim)
        # The feedback memory moves routing only once the flow has promoted it for this preference (gated like any
        # challenger: api/selection/personalization.py); a preference without a promoted version routes as its router.
        personalised = (correction is not None and correction.nearest_neighbour_residual
                        and self.memory.knows(pref.preference_id))  # type: ignore[union-attr]
        if personalised:
            quality = self.memory.adjust(pref.preference_id, self.embedding(features),  # type: ignore[union-attr]
                                         [c.key for c in plain], quality)
        cost = policy.request_cost_usd(np.array([c.input_price for c in plain]),
                                       np.array([c.output_price for c in plain]), prompt_tokens)
        # only the latency trade-off reads latency estimates
        latency = (np.array([latency_s(c, prompt_tokens, self.observed_latency, user.organization_id) for c in plain])
                   if opts.tradeoff == "latency" else None)
        caller, order = None, None
        schedule = router.schedule
        if router is default and self.dial is not None and len(plain) > 1:
            # The default router's dial is calibrated on this caller's own traffic (api/routing/dial.py); a custom
            # router keeps the schedule calibrated on its training data.
            order, sorted_keys = self._key_order(plain)
            caller = (user.user_id, pref.preference_id if pref else "", sorted_keys)
            schedule = self.dial.schedule_for(caller, [plain[i] for i in order], router.schedule)
            if opts.tradeoff == "latency":
                # The dial's lambdas are calibrated on cost positions, not latency ones (with equal prices they are
                # all 0 and latency would move nothing): the latency trade-off keeps the router's stored schedule.
                schedule = router.schedule
            quality = quality + tie_breaker(scored_text, len(plain))
        try:
            decision = policy.choose(quality, cost, latency_s=latency, cost_quality_tradeoff=opts.cost_quality_tradeoff,
                                     tradeoff=opts.tradeoff, schedule=schedule)
        except policy.PolicyError as exc:
            raise BadRequest(str(exc), code="INVALID_TRADEOFF") from exc
        if caller is not None:
            self.dial.record(caller, decision.quality[order], policy.normalised_log(cost)[order])
        ranking = decision.ranking.tolist()
        if req.previous_session is not None:
            previous = previous_model(req.previous_session, user.user_id, self.sessions.find, self.answered)
        kept = None if previous is None else kept_position([plain[i].key for i in ranking], decision.utility[ranking],
                                                           previous, self.sticky_margin)
        if kept is not None:
            ranking.insert(0, ranking.pop(kept))
        rate = (pref.exploration_rate or 0.0) if pref is not None and kept is None else 0.0
        position, propensity = explore(decision.utility[ranking], rate, self.rng) if rate else (0, 1.0)
        if position:
            ranking.insert(0, ranking.pop(position))
        chosen = candidates[ranking[0]]
        session_id = new_session_id()
        done = time.perf_counter_ns()

        messages_json = msgspec.json.encode(req.messages)
        self.sessions.record({
            "session_id": session_id, "created_at": datetime.now(timezone.utc), "user_id": user.user_id,
            "organization_id": user.organization_id, "preference_id": pref.preference_id if pref else None,
            "previous_session": req.previous_session, "hashed": opts.hash_content,
            "content": None if opts.hash_content else messages_json.decode(),
            "content_hash": hashlib.sha256(messages_json).hexdigest(), "prompt_tokens": prompt_tokens,
            "tools_count": len(req.tools or ()), "candidates": [c.candidate.key for c in resolved],
            "eligible": [c.key for c in plain], "predicted_quality": decision.quality.tolist(),
            "estimated_cost_usd": decision.cost_usd.tolist(), "chosen": chosen.candidate.key,
            "chosen_label_provider": chosen.label.provider, "chosen_label_model": chosen.label.model,
            "tradeoff": opts.tradeoff, "cost_quality_tradeoff": opts.cost_quality_tradeoff,
            "max_model_depth": opts.max_model_depth, "router": router_name, "personalised": personalised,
            "featurize_us": (featurized - started) // 1000, "decide_us": (done - featurized) // 1000,
            "router_quality": np.asarray(router_quality, dtype=np.float64).tolist(),
            "penalty_position": decision.position.tolist(),
            "policy_lambda": decision.lam if np.isfinite(decision.lam) else None, "propensity": propensity,
            "explored": bool(position), "exploration_rate": rate,
            "correction_version": correction.version_id if correction is not None else None,
        }, embedding=None if opts.hash_content else self.embedding(features).copy())
        return Selection(ModelSelectResponse(providers=[chosen.label], session_id=session_id),
                         tuple(candidates[i] for i in ranking), tuple(decision.quality[ranking].tolist()),
                         tuple(decision.utility[ranking].tolist()),
                         prompt_tokens, opts.hash_content, sticky=kept is not None,
                         no_evidence=self.figures.no_evidence(default, plain) if self.figures is not None and router is default
                         else (),
                         router="default" if custom is None else "custom")

    def embedding(self, features: QueryFeatures) -> np.ndarray:
        """The text-embedding part of the feature vector: what personalisation compares queries by."""
        return features.vector[: self.featurizer.embedding.dim]

    def embed_text(self, messages: Any) -> np.ndarray:
        texts = _checked(message_texts, messages)
        return self.embedding(self.featurizer.featurize(routing_text(messages), n_messages=max(len(texts), 1)))
