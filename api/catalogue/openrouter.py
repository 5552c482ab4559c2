"""Match catalogue models to their OpenRouter identifiers.

LiteLLM's bundled map carries no ``openrouter/...`` entries, so the set of
OpenRouter ids that exist comes from a snapshot shipped in
``datasets/catalogue/openrouter_models.csv`` (see the data card there). A
catalogue model gets an OpenRouter id only when a candidate produced by the
rule below, or an explicit override, is in that set: ids are never invented.

The rule, tried in order, first hit wins:
1. the vendor: the provider's OpenRouter vendor (mistral -> mistralai,
   xai -> x-ai, moonshot -> moonshotai, zai -> z-ai); for Together AI the
   model's organisation (deepseek-ai -> deepseek, zai-org -> z-ai, ...);
2. the model id lower-cased, as is;
3. for Together AI only, with serving suffixes dropped (-Turbo, -FP8, -FP4,
   -HF), a leading "meta-" dropped and "-chat-hf" read as "-instruct";
4. then with a date suffix dropped (-20241022, -2024-08-06, -08-2024) or "-latest";
5. then with version digits joined by a dot instead of a dash
   (claude-opus-4-5 -> claude-opus-4.5), after each of the above.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import msgspec

from api.catalogue.model import CatalogueModel
from api.catalogue.providers import PROVIDERS_BY_NAME, TOGETHER_ORG_TO_OPENROUTER_VENDOR
from api.shipped import shipped

DATA_DIR = shipped("catalogue")
KNOWN_IDS_CSV = DATA_DIR / "openrouter_models.csv"
OVERRIDES_CSV = DATA_DIR / "openrouter_overrides.csv"

_DATE_SUFFIXES = (
    re.compile(r"-\d{8}\Z"),  # claude-3-5-sonnet-20241022
    re.compile(r"-\d{4}-\d{2}-\d{2}\Z"),  # gpt-4.1-2025-04-14
    re.compile(r"-\d{2}-\d{4}\Z"),  # command-a-03-2025
    re.compile(r"-latest\Z"),  # mistral-large-latest
)
_SERVING_SUFFIXES = re.compile(r"(-turbo|-fp8|-fp4|-hf)+\Z")
_DASHED_VERSION = re.compile(r"(?<=\d)-(?=\d(?:\D|$))")


@dataclass(frozen=True, slots=True)
class Match:
    openrouter_model: str
    rank: int
    """How sure the match is, lower is surer: 0 the id itself (lower-cased),
    1 an explicit override, 2 and up a normalised rule candidate."""


def read_known_ids(path: Path = KNOWN_IDS_CSV) -> frozenset[str]:
    with open(path, newline="") as handle:
        return frozenset(row["openrouter_model"] for row in csv.DictReader(handle))


def read_overrides(path: Path = OVERRIDES_CSV) -> dict[tuple[str, str], str | None]:
    """(provider, model) -> OpenRouter id; an empty id pins "no OpenRouter id"."""
    with open(path, newline="") as handle:
        return {
            (row["provider"], row["model"]): (row["openrouter_model"].strip() or None)
            for row in csv.DictReader(handle)
        }


def _vendor_and_name(provider: str, model: str) -> tuple[str, str] | None:
    if provider == "togetherai":
        org, _, name = model.partition("/")
        vendor = TOGETHER_ORG_TO_OPENROUTER_VENDOR.get(org.lower())
        return (vendor, name) if vendor and name else None
    vendor = PROVIDERS_BY_NAME[provider].openrouter_vendor if provider in PROVIDERS_BY_NAME else None
    return (vendor, model) if vendor else None


def _without_serving_suffixes(name: str) -> str:
    name = _SERVING_SUFFIXES.sub("", name.replace("-chat-hf", "-instruct"))
    return name.removeprefix("meta-")


def _without_date(name: str) -> str:
    for pattern in _DATE_SUFFIXES:
        name = pattern.sub("", name)
    return name


def candidate_ids(provider: str, model: str) -> list[str]:
    """OpenRouter ids the rule would accept for this model, surest first."""
    vendor_and_name = _vendor_and_name(provider, model)
    if vendor_and_name is None:
        return []
    vendor, name = vendor_and_name
    stages = [name.lower()]
    if provider == "togetherai":
        # Only Together decorates open-weights ids with serving details; for
        # first-party ids "-turbo" is part of the name (gpt-4-turbo).
        stages.append(_without_serving_suffixes(stages[-1]))
    stages.append(_without_date(stages[-1]))
    names: list[str] = []
    for stage in stages:
        for variant in (stage, _DASHED_VERSION.sub(".", stage)):
            if variant not in names:
                names.append(variant)
    return [f"{vendor}/{variant}" for variant in names]


def match(
    provider: str,
    model: str,
    known_ids: frozenset[str],
    overrides: Mapping[tuple[str, str], str | None],
) -> Match | None:
    if (provider, model) in overrides:
        pinned = overrides[(provider, model)]
        # An override naming an id outside the snapshot is ignored rather than
        # trusted; the test suite flags such rows.
        return Match(pinned, 1) if pinned in known_ids else None
    for index, candidate in enumerate(candidate_ids(provider, model)):
        if candidate in known_ids:
            return Match(candidate, 0 if index == 0 else index + 1)
    return None


def attach_openrouter_ids(
    models: Iterable[CatalogueModel],
    known_ids: frozenset[str],
    overrides: Mapping[tuple[str, str], str | None],
) -> Iterator[tuple[CatalogueModel, Match | None]]:
    """Yield each model with its aggregator id filled in, and the match behind it."""
    for model in models:
        found = match(model.provider, model.model, known_ids, overrides)
        if found is None:
            yield model, None
        else:
            yield _with_aggregator(model, found.openrouter_model), found


def _with_aggregator(model: CatalogueModel, openrouter_model: str) -> CatalogueModel:
    return msgspec.structs.replace(model, aggregator_model=openrouter_model)
