"""Turn the request's `llm_providers` into routing candidates: catalogue lookups, aggregator ids, custom models.

Each candidate remembers how the caller named it, so the response echoes the caller's own format.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from api import deployments
from api.catalogue import Catalogue, billed_prices
from api.errors import BadRequest
from api.routing.router import Candidate
from api.schemas.model_select import LLMProvider, SelectedProvider

AGGREGATOR_TYPES = frozenset({"openrouter", "aggregator"})
CUSTOM_REQUIRED = ("context_length", "input_price", "output_price", "latency")


@dataclass(frozen=True)
class ResolvedCandidate:
    candidate: Candidate
    label: SelectedProvider  # what the response says when this one is chosen
    is_custom: bool


def aggregator_format(type_param: str | None) -> bool:
    if type_param is None or type_param == "":
        return False
    if type_param.lower() in AGGREGATOR_TYPES:
        return True
    raise BadRequest(f"unknown type {type_param!r}; use 'openrouter' for provider/model identifiers or leave it out",
                     code="INVALID_TYPE")


def _split(identifier: str) -> tuple[str, str]:
    vendor, sep, model = identifier.partition("/")
    if not sep or not vendor or not model:
        raise BadRequest(f"{identifier!r} is not in provider/model form", code="INVALID_PROVIDER")
    return vendor, model


def _custom(p: LLMProvider, aggregator: bool, catalogue: Catalogue) -> ResolvedCandidate:
    name = p.model if p.provider is None else f"{p.provider}/{p.model}"
    missing = [f for f in CUSTOM_REQUIRED if getattr(p, f) is None]
    if missing:
        raise BadRequest(f"custom model {name!r} must carry {', '.join(missing)}", code="INVALID_CUSTOM_MODEL",
                         details={"model": name, "missing": missing})
    provider, model = (p.provider, p.model) if p.provider else _split(p.model)
    # A catalogue model described as custom is priced by the catalogue (api/catalogue/pricing.py): it is called
    # with the server's provider key, so its declared prices must not decide the ranking nor what it is billed.
    input_price, output_price = billed_prices(catalogue, provider, model,
                                              (p.input_price, p.output_price))  # type: ignore[arg-type, misc]
    candidate = Candidate(provider=provider, model=model, input_price=input_price, output_price=output_price,
                          context_length=p.context_length, latency_s=p.latency,  # type: ignore[arg-type]
                          supports_function_calling=None)
    label = SelectedProvider(provider=provider, model=p.model if aggregator and not p.provider else model)
    return ResolvedCandidate(candidate, label, is_custom=True)


def _deployed(name: str, spec: deployments.ModelSpec, p: LLMProvider, aggregator: bool) -> ResolvedCandidate:
    """A model named in the deployments file (api/deployments.py), as a custom candidate carrying the file's figures
    (or its defaults): callers name it like any catalogue model."""
    provider, _, model = name.partition("/")
    figures = deployments.figures(spec)
    candidate = Candidate(provider=provider, model=model, input_price=figures["input_price"],
                          output_price=figures["output_price"], context_length=int(figures["context_length"]),
                          latency_s=figures["latency"], supports_function_calling=None)
    label = SelectedProvider(provider=provider, model=p.model if aggregator and not p.provider else model)
    return ResolvedCandidate(candidate, label, is_custom=True)


def resolve(providers: list[LLMProvider], catalogue: Catalogue, aggregator: bool) -> list[ResolvedCandidate]:
    """Resolve, collapse duplicates (first mention wins, order kept), and name every unknown model at once."""
    resolved: dict[str, ResolvedCandidate] = {}
    unknown: list[str] = []
    for p in providers:
        if p.is_custom:
            item = _custom(p, aggregator, catalogue)
        else:
            if aggregator and p.provider is None:
                entry = catalogue.by_aggregator(p.model)
                name = p.model
            elif p.provider is None:
                hint = " (add ?type=openrouter to use provider/model identifiers)" if "/" in p.model else ""
                raise BadRequest(f"llm_providers entry {p.model!r} has no provider{hint}",
                                 code="INVALID_PROVIDER")
            else:
                entry = catalogue.get(p.provider, p.model)
                name = f"{p.provider}/{p.model}"
            if entry is None and (named := deployments.named(name)) is not None:
                item = _deployed(name, named, p, aggregator)  # a self-hosted or renamed model: the file describes it
                resolved.setdefault(item.candidate.key, item)
                continue
            if entry is None:
                unknown.append(name)
                continue
            candidate = Candidate(provider=entry.provider, model=entry.model, input_price=entry.input_price,
                                  output_price=entry.output_price, context_length=entry.context_length,
                                  supports_function_calling=entry.supports_function_calling)
            if aggregator and p.provider is None:
                label = SelectedProvider(provider=entry.provider, model=p.model)
            else:
                label = SelectedProvider(provider=p.provider or entry.provider, model=p.model)
            item = ResolvedCandidate(candidate, label, is_custom=False)
        resolved.setdefault(item.candidate.key, item)
    if unknown:
        raise BadRequest(
            f"not in the model catalogue: {', '.join(unknown)}. See GET /v2/models, or describe the model with "
            "is_custom=true and context_length, input_price, output_price, latency, or (a server operator) name it "
            "in the deployments file, SWITCHBOARD_DEPLOYMENTS",
            code="UNSUPPORTED_MODEL", details={"models": unknown})
    return list(resolved.values())


class Resolver:
    """`resolve` memoised per candidate list: a caller sends the same list with every request, and resolving ten
    entries is a noticeable share of a decision. Only successful resolutions are kept (a refusal is raised anew)."""

    def __init__(self, catalogue: Catalogue, max_entries: int = 10_000):
        self.catalogue = catalogue
        self.max_entries = max_entries
        self._cache: dict[tuple, list[ResolvedCandidate]] = {}

    def __call__(self, providers: list[LLMProvider], aggregator: bool) -> list[ResolvedCandidate]:
        key = (aggregator, *(msgspec.structs.astuple(p) for p in providers))
        found = self._cache.get(key)
        if found is None:
            found = resolve(providers, self.catalogue, aggregator)
            if len(self._cache) >= self.max_entries:  # lists are caller-defined: keep memory bounded
                self._cache.clear()
            self._cache[key] = found
        return list(found)
