"""Validation of POST /v2/prompt/optimize. Every refusal names what to fix; nothing is stored before all pass."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from api.catalogue import Catalogue, billed_prices
from api.deployments import figures, named
from api.errors import ApiError, Unauthorized, ValidationFailed
from api.prompt_optimization import templates
from api.schemas.prompt_optimization import (
    GoldenRecord,
    OptimizeRequest,
    RequestProvider,
)
from api.settings import provider_key
from storage.records import User

TIER_TARGET_LIMITS = {"free": 1, "starter": 3, "startup": 5, "enterprise": 10}
MIN_TRAIN, MIN_TRAIN_PROTOTYPE, MAX_GOLDENS = 25, 3, 200
STANDARD_METRICS = ("LLMaaJ:Sem_Sim_1", "JSON_Match", "Exact_Match")
DEFAULT_METRIC = "LLMaaJ:Sem_Sim_1"
DEFAULT_CUTOFF = 0.7


class MissingGoldens(ValidationFailed):
    status, code = 422, "MISSING_GOLDENS"


@dataclass(frozen=True)
class ValidRequest:
    spec: dict[str, Any]  # flows.prompt_opt.work.RunSpec as JSON-able fields
    evaluation_metric: str | None  # echoed in results
    evaluation_config: str | None  # JSON string, echoed in results


def placeholders(template: str) -> list[str]:
    try:
        return templates.placeholders(template)
    except templates.TemplateError as exc:
        raise ValidationFailed(str(exc), code="INVALID_TEMPLATE",
                               details={"placeholder": exc.placeholder} if exc.placeholder else None) from None


def split_goldens(goldens: list[Any]) -> tuple[list[Any], list[Any]]:
    """Legacy `goldens`: a fixed, order-preserving split; about a quarter (at least one), spread evenly from the end,
    is held out as the test set, the rest optimizes."""
    n_test = max(1, math.ceil(len(goldens) / 4))
    step = max(1, len(goldens) // n_test)
    test_idx = set(range(len(goldens) - 1, -1, -step)[:n_test])
    return ([g for i, g in enumerate(goldens) if i not in test_idx], [g for i, g in enumerate(goldens) if i in test_idx])


def _goldens(req: OptimizeRequest, fields: list[str]) -> tuple[list[GoldenRecord], list[GoldenRecord]]:
    if req.goldens is not None and (req.train_goldens is not None or req.test_goldens is not None):
        raise ValidationFailed("give either goldens, or train_goldens with test_goldens, not both forms",
                               code="GOLDENS_CONFLICT")
    if req.goldens is None and (req.train_goldens is None or req.test_goldens is None):
        missing = [n for n in ("train_goldens", "test_goldens") if getattr(req, n) is None]
        message = ("neither goldens nor train_goldens and test_goldens were given" if len(missing) == 2
                   else f"{missing[0]} is required with {'test_goldens' if missing[0] == 'train_goldens' else 'train_goldens'}")
        raise MissingGoldens(message, details={"missing": missing})
    minimum = MIN_TRAIN_PROTOTYPE if req.prototype_mode else MIN_TRAIN
    given = req.goldens if req.goldens is not None else req.train_goldens
    name = "goldens" if req.goldens is not None else "train_goldens"
    assert given is not None
    if len(given) < minimum:
        hint = "" if req.prototype_mode else " (or 3 with prototype_mode true)"
        raise ValidationFailed(f"{name} holds {len(given)} examples; at least {minimum} are needed{hint}",
                               code="INSUFFICIENT_GOLDEN_EXAMPLES",
                               details={"given": len(given), "minimum": minimum, "field": name})
    total = len(given) + len(req.test_goldens or [])
    if total > MAX_GOLDENS:
        raise ValidationFailed(f"{total} golden examples given; at most {MAX_GOLDENS} per run",
                               code="TOO_MANY_GOLDEN_EXAMPLES", details={"given": total, "maximum": MAX_GOLDENS})
    if req.test_goldens is not None and not req.test_goldens:
        raise ValidationFailed("test_goldens is empty; at least one held-out example is needed",
                               code="INSUFFICIENT_GOLDEN_EXAMPLES", details={"given": 0, "field": "test_goldens"})
    for list_name in ("goldens", "train_goldens", "test_goldens"):
        for i, golden in enumerate(getattr(req, list_name) or []):
            keys = set(golden.fields)
            if keys != set(fields):
                raise ValidationFailed(
                    f"{list_name}[{i}].fields must have exactly the keys {sorted(fields)}; missing"
                    f" {sorted(set(fields) - keys)}, unexpected {sorted(keys - set(fields))}",
                    code="GOLDEN_FIELDS_MISMATCH",
                    details={"golden": f"{list_name}[{i}]", "missing": sorted(set(fields) - keys),
                             "unexpected": sorted(keys - set(fields))})
    if req.goldens is not None:
        return split_goldens(list(req.goldens))
    return list(req.train_goldens or []), list(req.test_goldens or [])


CUSTOM_REQUIRED = ("context_length", "input_price", "output_price")
PROVIDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")  # it names settings: SWITCHBOARD_<PROVIDER>_API_BASE


def _custom(p: RequestProvider, catalogue: Catalogue, custom: dict[str, dict[str, Any]]) -> tuple[str, str]:
    """A model the caller describes (any OpenAI-compatible model): its prices (the catalogue's for a model it lists,
    api/catalogue/pricing.py) and context length are recorded for the run; where it is served is the service's
    setting."""
    name = f"{p.provider}/{p.model}"
    missing = [f for f in CUSTOM_REQUIRED if getattr(p, f) is None]
    if missing:
        raise ValidationFailed(f"custom model {name!r} must carry {', '.join(missing)}", code="INVALID_CUSTOM_MODEL",
                               details={"model": name, "missing": missing})
    if not PROVIDER_NAME.fullmatch(p.provider) or not p.model.strip() or len(p.model) > 256:
        raise ValidationFailed(f"custom model {name!r}: provider must be 1-64 letters, digits, '_', '-' or '.' (it"
                               " names the SWITCHBOARD_<PROVIDER>_API_BASE setting) and model 1-256 characters",
                               code="INVALID_CUSTOM_MODEL", details={"model": name})
    prices = billed_prices(catalogue, p.provider, p.model, (p.input_price, p.output_price))  # type: ignore[arg-type]
    custom[name] = {"input_price": prices[0], "output_price": prices[1],  # type: ignore[index]
                    "context_length": int(p.context_length)}  # type: ignore[arg-type]
    return p.provider, p.model


def _model(p: RequestProvider, catalogue: Catalogue, custom: dict[str, dict[str, Any]]) -> tuple[str, str] | None:
    given = [f for f in ("base_url", "api_base", "api_key") if getattr(p, f) is not None]
    if given:  # never echoed: a key must not land in an error body or a log
        raise ValidationFailed(
            f"{' and '.join(given)} cannot be given in a request ({p.provider}/{p.model}): where a model is served and"
            f" its key are the service's settings, SWITCHBOARD_{provider_key(p.provider).upper()}_API_BASE / _API_KEY"
            " for its provider or SWITCHBOARD_OPTIMIZE_<ROLE>_API_BASE / _API_KEY for a role (target, origin, judge,"
            " reflection)", code="INVALID_CUSTOM_MODEL", details={"model": f"{p.provider}/{p.model}",
                                                                 "not_allowed": given})
    if p.is_custom:
        return _custom(p, catalogue, custom)
    found = catalogue.get(p.provider, p.model)
    if found is None and (spec := named(f"{p.provider}/{p.model}")) is not None:
        # a model of the deployments file (api/deployments.py): served there, priced by the file
        described = figures(spec)
        custom[f"{p.provider}/{p.model}"] = {"input_price": described["input_price"],
                                             "output_price": described["output_price"],
                                             "context_length": int(described["context_length"])}
        return p.provider, p.model
    return (found.provider, found.model) if found else None


def _evaluation(req: OptimizeRequest, catalogue: Catalogue,
                custom: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any] | None]:
    config = req.evaluation_config
    if isinstance(config, str):
        if not config.strip():
            config = None
        else:
            try:
                config = json.loads(config)
            except (ValueError, RecursionError):  # RecursionError: nested deeper than the decoder allows
                raise ValidationFailed("evaluation_config must be a JSON object (or a string holding one)",
                                       code="INVALID_EVALUATION_CONFIG") from None
    if config is None:
        metric = req.evaluation_metric or DEFAULT_METRIC
        if metric not in STANDARD_METRICS:
            raise ValidationFailed(f"evaluation_metric {metric!r} is not supported; use one of"
                                   f" {', '.join(STANDARD_METRICS)} or an evaluation_config",
                                   code="UNSUPPORTED_METRIC", details={"supported": list(STANDARD_METRICS)})
        return metric, None
    if not isinstance(config, dict):
        raise ValidationFailed("evaluation_config must be a JSON object", code="INVALID_EVALUATION_CONFIG")
    if req.evaluation_metric:
        raise ValidationFailed("give evaluation_metric or evaluation_config, not both", code="INVALID_EVALUATION_CONFIG")
    prompt, judge = config.get("llm_judging_prompt"), config.get("llm_judge")
    cutoff = config.get("correctness_cutoff", DEFAULT_CUTOFF)
    problems = []
    if not isinstance(prompt, str) or "{question}" not in prompt or "{answer}" not in prompt:
        problems.append("llm_judging_prompt must be a string with {question} and {answer} placeholders")
    if not isinstance(judge, str) or "/" not in judge:
        problems.append("llm_judge must name a model as provider/model")
    if isinstance(cutoff, bool) or not isinstance(cutoff, (int, float)) or not 0 <= cutoff <= 1:
        problems.append("correctness_cutoff must be a number from 0 to 1")
    if problems:
        raise ValidationFailed("; ".join(problems), code="INVALID_EVALUATION_CONFIG", details={"problems": problems})
    provider, _, model = judge.partition("/")
    found = catalogue.get(provider, model)
    if found is None and judge not in custom:
        raise ValidationFailed(f"unsupported model {judge} (llm_judge); see GET /v2/models, or describe it as a custom"
                               " judge_model", code="UNSUPPORTED_MODEL", details={"models": [judge]})
    return "custom", {"llm_judge": f"{found.provider}/{found.model}" if found and judge not in custom else judge,
                      "llm_judging_prompt": prompt, "correctness_cutoff": float(cutoff)}


def validate(req: OptimizeRequest, user: User, catalogue: Catalogue) -> ValidRequest:
    fields = list(dict.fromkeys(f.strip() for f in req.fields))
    if not fields or any(not f for f in fields):
        raise ValidationFailed("fields must list the template's placeholder names", code="FIELDS_MISMATCH")
    found = placeholders(req.template)
    if set(found) != set(fields):
        raise ValidationFailed(
            f"fields and the template's placeholders differ: not in the template {sorted(set(fields) - set(found))},"
            f" not in fields {sorted(set(found) - set(fields))}", code="FIELDS_MISMATCH",
            details={"not_in_template": sorted(set(fields) - set(found)), "not_in_fields": sorted(set(found) - set(fields))})
    train, test = _goldens(req, fields)

    limit = TIER_TARGET_LIMITS.get(user.tier, 1)
    if not req.target_models or len(req.target_models) > limit:
        raise ValidationFailed(f"target_models holds {len(req.target_models)} models; the {user.tier} tier allows"
                               f" 1 to {limit}", code="TARGET_MODEL_COUNT_EXCEEDED",
                               details={"given": len(req.target_models), "maximum": limit, "tier": user.tier})
    custom: dict[str, dict[str, Any]] = {}
    named = [*req.target_models, *(p for p in (req.origin_model, req.judge_model, req.reflection_model) if p)]
    unknown = [f"{p.provider}/{p.model}" for p in named if _model(p, catalogue, custom) is None]
    if unknown:
        raise ValidationFailed(f"unsupported model{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; see"
                               " GET /v2/models, or describe a model with is_custom true, context_length,"
                               " input_price and output_price", code="UNSUPPORTED_MODEL", details={"models": unknown})
    targets = list(dict.fromkeys(_model(p, catalogue, custom) for p in req.target_models))
    metric, config = _evaluation(req, catalogue, custom)
    if metric in STANDARD_METRICS:
        lacking = [i for i, g in enumerate([*train, *test]) if not (g.answer or "").strip()]
        if lacking:
            raise ValidationFailed(f"{metric} is a supervised metric: every golden needs an answer ({len(lacking)}"
                                   " have none)", code="MISSING_ANSWERS", details={"without_answer": len(lacking)})
    score = req.origin_model_evaluation_score  # bounded to the metric's 0..1 scale by the schema
    spec = {"system_prompt": req.system_prompt, "template": req.template, "fields": fields,
            "train": [{"fields": g.fields, "answer": g.answer} for g in train],
            "test": [{"fields": g.fields, "answer": g.answer} for g in test],
            "metric": metric, "config": config,
            "origin": list(_model(req.origin_model, catalogue, custom) or ()) if req.origin_model else None,
            "targets": [list(t) for t in targets if t], "origin_score": score, "custom": custom or None,
            "judge": list(_model(req.judge_model, catalogue, custom) or ()) if req.judge_model else None,
            "reflection": (list(_model(req.reflection_model, catalogue, custom) or ()) if req.reflection_model
                           else None)}
    return ValidRequest(spec, None if config else metric, json.dumps(config) if config else None)


def check_access(user: User) -> None:
    if not user.prompt_optimization:
        raise Unauthorized("this API key's user has no prompt optimization access")


__all__ = ["ApiError", "MissingGoldens", "ValidRequest", "check_access", "validate"]
