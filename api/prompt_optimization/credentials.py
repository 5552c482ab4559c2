"""Whether this service can call the models a prompt optimization needs, and, when it cannot, which setting is
missing.

A model is reachable in a role when the deployments file names it (api/deployments.py, the one resolver), or a base URL points it at an OpenAI-compatible server: the role's own
(SWITCHBOARD_OPTIMIZE_<ROLE>_API_BASE, role = target, origin, judge or reflection), else its provider's
(SWITCHBOARD_<PROVIDER>_API_BASE), else SWITCHBOARD_LLM_API_BASE for every provider (flows/prompt_opt/llm.py sends the
calls there, with a key only if one is configured), or else when one of the key variables LiteLLM reads for it is set
(api/catalogue/providers.py, `key_variables`). A run calls its target models, the origin model unless the caller gave
its score, the judge (every metric but JSON_Match and Exact_Match) and the reflection model GEPA writes instructions
with.

POST /v2/prompt/optimize refuses a run that needs an unreachable model (400 PROVIDER_NOT_CONFIGURED), and the flow
checks again before its first call (flows/optimize_prompt.py), since the flow may run where the environment differs
(a Prefect worker): a missing key is a configuration error, never retried like a provider outage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from api.deployments import DEPLOYMENTS_ENV, named, usual_key_variables
from api.settings import OptimizeSettings, provider_key

TARGET, ORIGIN, JUDGE, REFLECTION = "target model", "origin model", "judge model", "reflection model"
NO_JUDGE_METRICS = ("JSON_Match", "Exact_Match")  # scored without an LLM (flows/prompt_opt/metrics.py)


@dataclass(frozen=True)
class Unreachable:
    """A provider this service has neither a base URL nor a key for, and the models of a run that need it."""

    provider: str
    models: tuple[tuple[str, str], ...]  # ("provider/model", role)
    key_variables: tuple[str, ...]  # set one of these, or a base URL

    @property
    def base_url_settings(self) -> tuple[str, str]:
        return f"SWITCHBOARD_{provider_key(self.provider).upper()}_API_BASE", "SWITCHBOARD_LLM_API_BASE"

    def message(self) -> str:
        models = ", ".join(f"{name} ({role})" for name, role in self.models)
        own, every = self.base_url_settings
        keys = " or ".join(self.key_variables)
        return (f"no credentials for provider {self.provider}, needed by {models}: set {keys}"
                f", or point {self.provider} at an OpenAI-compatible server with {own} ({every} for every provider)"
                ", or name the model in the deployments file (SWITCHBOARD_DEPLOYMENTS)")

    def details(self) -> dict[str, Any]:
        return {"provider": self.provider, "models": [{"model": name, "role": role} for name, role in self.models],
                "set_one_of": list(self.key_variables), "or_base_url": list(self.base_url_settings),
                "or_deployments_file": DEPLOYMENTS_ENV}


def key_variables(provider: str) -> tuple[str, ...]:
    return usual_key_variables(provider)


def short_role(role: str) -> str:
    """"judge model" -> "judge": the role as settings (SWITCHBOARD_OPTIMIZE_<ROLE>_*) and usage records name it."""
    return role.split()[0]


def reachable(provider: str, settings: OptimizeSettings, role: str | None = None, model: str | None = None) -> bool:
    if model is not None and named(f"{provider}/{model}") is not None:  # the deployments file serves it
        return True
    if settings.api_base(provider, short_role(role) if role else None):
        return True
    return any(name in settings.credential_names for name in key_variables(provider))


def judge_name(spec: Mapping[str, Any], settings: OptimizeSettings) -> str | None:
    """provider/model of the judge of a run of `spec` (flows.prompt_opt.work.RunSpec as a dict), if its metric has
    one: a custom metric's llm_judge, else the request's judge_model, else SWITCHBOARD_OPTIMIZE_JUDGE_MODEL."""
    if spec["metric"] in NO_JUDGE_METRICS:
        return None
    if spec["metric"] == "custom":
        return spec["config"]["llm_judge"]
    return "/".join(spec["judge"]) if spec.get("judge") else settings.judge_model


def reflection_name(spec: Mapping[str, Any], settings: OptimizeSettings) -> str:
    return "/".join(spec["reflection"]) if spec.get("reflection") else settings.reflection_model


def judge(spec: Mapping[str, Any], settings: OptimizeSettings) -> list[tuple[str, str, str]]:
    name = judge_name(spec, settings)
    if name is None:
        return []
    provider, _, model = name.partition("/")
    return [(provider, model, JUDGE)]


def reflection(spec: Mapping[str, Any], settings: OptimizeSettings) -> list[tuple[str, str, str]]:
    provider, _, model = reflection_name(spec, settings).partition("/")
    return [(provider, model, REFLECTION)]


def models_called(spec: Mapping[str, Any], settings: OptimizeSettings) -> list[tuple[str, str, str]]:
    """(provider, model, role) of every model a run of `spec` calls."""
    out = [(p, m, TARGET) for p, m in spec["targets"]]
    if spec.get("origin") and spec.get("origin_score") is None:
        out.append((spec["origin"][0], spec["origin"][1], ORIGIN))
    return out + judge(spec, settings) + reflection(spec, settings)


def unreachable(models: list[tuple[str, str, str]], settings: OptimizeSettings) -> list[Unreachable]:
    """The providers among `models` (provider, model, role) that cannot be called, each with the models needing it."""
    found: dict[str, list[tuple[str, str]]] = {}
    for provider, model, role in models:
        if not reachable(provider, settings, role, model):
            entry = (f"{provider}/{model}", role)
            if entry not in found.setdefault(provider, []):
                found[provider].append(entry)
    return [Unreachable(p, tuple(models), key_variables(p)) for p, models in found.items()]
