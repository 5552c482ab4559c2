"""Where a model is served and with which key: the one resolver every path uses (the gateway, modelSelect's
candidates, prompt optimization's roles, the judge, onboarding), in this order:

1. the deployments file (SWITCHBOARD_DEPLOYMENTS, YAML or TOML; docs/api.md, "Named deployments"): a public model
   name ("provider/model", e.g. "local/llama3-8b") mapped to one or more deployments, each an OpenAI-compatible base
   URL (or a known provider's own), the upstream's model id, the *name* of the environment variable holding its key
   (never the key), and a weight; optional prices, context length and latency for models the catalogue lacks;
2. SWITCHBOARD_<PROVIDER>_API_BASE / _API_KEY (a role's SWITCHBOARD_OPTIMIZE_<ROLE>_* first; SWITCHBOARD_LLM_* for
   every provider; api/settings.py);
3. the provider's usual key variables (OPENAI_API_KEY, ...; api/catalogue/providers.py) with its own endpoint.

Each route names its source, which the startup log prints per provider (never a key)."""

from __future__ import annotations

import functools
import logging
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import msgspec

from api.catalogue.providers import PROVIDERS_BY_NAME
from api.settings import OptimizeSettings, provider_key

log = logging.getLogger("switchboard.providers")
DEPLOYMENTS_ENV = "SWITCHBOARD_DEPLOYMENTS"
FILE_SOURCE = "deployments file"

# The providers' own OpenAI-compatible endpoints, used when a key is set and no base URL overrides them.
DEFAULT_BASES = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com/v1",
    "google": "https://generativelanguage.googleapis.com/v1beta/openai",
    "mistral": "https://api.mistral.ai/v1",
    "togetherai": "https://api.together.xyz/v1",
    "cohere": "https://api.cohere.ai/compatibility/v1",
    "perplexity": "https://api.perplexity.ai",
    "deepseek": "https://api.deepseek.com/v1",
    "xai": "https://api.x.ai/v1",
    "moonshot": "https://api.moonshot.ai/v1",
    "zai": "https://api.z.ai/api/paas/v4",
}
EnvName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}\Z")]


class DeploymentSpec(msgspec.Struct, forbid_unknown_fields=True):
    model: str                    # the upstream's own model id
    api_base: str | None = None   # an OpenAI-compatible base URL; else `provider`'s own endpoint
    provider: str | None = None   # whose own endpoint (DEFAULT_BASES) when api_base is left out
    api_key_env: EnvName | None = None  # the NAME of the variable holding the key
    weight: Annotated[float, msgspec.Meta(gt=0)] = 1.0


class ModelSpec(msgspec.Struct, forbid_unknown_fields=True):
    deployments: Annotated[list[DeploymentSpec], msgspec.Meta(min_length=1)]
    context_length: Annotated[int, msgspec.Meta(ge=1)] | None = None
    input_price: Annotated[float, msgspec.Meta(ge=0)] | None = None   # USD per million tokens
    output_price: Annotated[float, msgspec.Meta(ge=0)] | None = None
    latency: Annotated[float, msgspec.Meta(gt=0)] | None = None       # seconds, for the router's latency trade-off


class DeploymentsFile(msgspec.Struct, forbid_unknown_fields=True):
    models: dict[str, ModelSpec]


@dataclass(frozen=True)
class Route:
    """One place a model can be called: an OpenAI-compatible base URL, its key, the model id it expects."""

    deployment: str      # "provider/model#i" for a file's deployment, else the provider: cool-down and logs
    base: str
    key: str | None
    model: str
    weight: float
    source: str          # what configured it: "deployments file" or the variable's name


def load(path: str | Path) -> DeploymentsFile:
    """Read and check a deployments file; a ValueError names what is wrong (the server refuses to start)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{DEPLOYMENTS_ENV}: cannot read {path}: {exc.strerror}") from None
    try:
        if path.suffix.lower() == ".toml":
            raw = tomllib.loads(text)
        else:
            # lazy: only servers with a YAML deployments file need it
            import yaml
            raw = yaml.safe_load(text)
        parsed = msgspec.convert(raw, DeploymentsFile)
    except (tomllib.TOMLDecodeError, msgspec.ValidationError, ValueError) as exc:
        raise ValueError(f"{DEPLOYMENTS_ENV} {path}: {exc} (a key is named by api_key_env, never written in the "
                         "file)") from None
    except Exception as exc:  # yaml.YAMLError: its module is imported lazily
        raise ValueError(f"{DEPLOYMENTS_ENV} {path}: not valid YAML ({type(exc).__name__})") from None
    for name, spec in parsed.models.items():
        provider, sep, model = name.partition("/")
        if not (sep and provider and model):
            raise ValueError(f"{DEPLOYMENTS_ENV} {path}: model name {name!r} is not in provider/model form")
        for i, d in enumerate(spec.deployments):
            if d.api_base is None and DEFAULT_BASES.get(d.provider or provider) is None:
                raise ValueError(f"{DEPLOYMENTS_ENV} {path}: {name} deployment {i} needs api_base (or a provider "
                                 f"with a known endpoint: {', '.join(sorted(DEFAULT_BASES))})")
    return parsed


@functools.lru_cache(maxsize=4)
def _file(path: str, mtime_ns: int) -> DeploymentsFile:
    return load(path)


def named(name: str) -> ModelSpec | None:
    return current().models.get(name)


# A file's model the catalogue lacks, with no figures in the file: free, a mid-size window, 1 s.
FIGURE_DEFAULTS = {"context_length": 32768, "input_price": 0.0, "output_price": 0.0, "latency": 1.0}


def figures(spec: ModelSpec) -> dict[str, float]:
    """A named model's context length, prices (USD per million tokens) and latency: the file's, else the defaults."""
    return {f: getattr(spec, f) if getattr(spec, f) is not None else default for f, default in FIGURE_DEFAULTS.items()}


def usual_key_variables(provider: str) -> tuple[str, ...]:
    known = PROVIDERS_BY_NAME.get(provider)
    return known.key_variables if known and known.key_variables else (f"{provider.upper()}_API_KEY",)


def _setting_source(provider: str, settings: OptimizeSettings, role: str | None, what: str) -> str:
    """The name of the variable that gave `provider` its base URL (what="BASE") or key (what="KEY")."""
    table = settings.role_api_bases if what == "BASE" else settings.role_api_keys
    if role and dict(table).get(role):
        return f"SWITCHBOARD_OPTIMIZE_{role.upper()}_API_{what}"
    own = dict(settings.api_bases if what == "BASE" else settings.api_keys)
    return (f"SWITCHBOARD_{provider_key(provider).upper()}_API_{what}" if own.get(provider_key(provider))
            else f"SWITCHBOARD_LLM_API_{what}")


def _file_key() -> tuple[str, int] | None:
    path = os.environ.get(DEPLOYMENTS_ENV)
    if not path:
        return None
    try:
        return path, os.stat(path).st_mtime_ns
    except OSError:
        return path, -1  # load() names the problem


def current() -> DeploymentsFile:
    """The file SWITCHBOARD_DEPLOYMENTS names (read again when it changes), or none."""
    key = _file_key()
    return DeploymentsFile(models={}) if key is None else _file(*key)


def routes(provider: str, model: str, settings: OptimizeSettings, role: str | None = None) -> tuple[Route, ...]:
    """Every route to provider/model, in the order above; empty when nothing configures it."""
    found = _configured(provider, model, settings, role, _file_key())
    if found:
        return found
    usual = next((name for name in usual_key_variables(provider) if os.environ.get(name)), None)
    base = DEFAULT_BASES.get(provider)
    if usual is None or base is None:
        return ()
    return (Route(provider, base, os.environ[usual], model, 1.0, usual),)


@functools.lru_cache(maxsize=8192)  # the gateway asks per attempt: the answer changes only with the settings or file
def _configured(provider: str, model: str, settings: OptimizeSettings, role: str | None,
                file_key: tuple[str, int] | None) -> tuple[Route, ...]:
    spec = None if file_key is None else _file(*file_key).models.get(f"{provider}/{model}")
    if spec is not None:
        return tuple(Route(f"{provider}/{model}#{i}", (d.api_base or DEFAULT_BASES[d.provider or provider]),
                           os.environ.get(d.api_key_env) if d.api_key_env else None, d.model, d.weight, FILE_SOURCE)
                     for i, d in enumerate(spec.deployments))
    base, key = settings.api_base(provider, role), settings.api_key(provider, role)
    if base:
        return (Route(provider, base, key, model, 1.0, _setting_source(provider, settings, role, "BASE")),)
    if key and provider in DEFAULT_BASES:
        return (Route(provider, DEFAULT_BASES[provider], key, model, 1.0,
                      _setting_source(provider, settings, role, "KEY")),)
    return ()


def sources(providers: list[str], settings: OptimizeSettings) -> dict[str, str]:
    """provider -> what configures it (for the startup log): the deployments file's names first."""
    out: dict[str, str] = {}
    for name in current().models:
        out.setdefault(name.partition("/")[0], FILE_SOURCE)
    for provider in providers:
        found = routes(provider, "*", settings)
        if found and provider not in out:
            out[provider] = found[0].source
    return out


def log_sources(providers: list[str], settings: OptimizeSettings) -> None:
    found = sources(providers, settings)
    for provider, source in sorted(found.items()):
        log.info("provider %s configured by %s", provider, source)
    if not found:
        log.warning("no provider is configured: set SWITCHBOARD_DEPLOYMENTS, SWITCHBOARD_<PROVIDER>_API_KEY / "
                    "_API_BASE, or a provider's own key variable (OPENAI_API_KEY, ...)")


def deployment_keys() -> tuple[str, ...]:
    """The values of every key the deployments file names: redacted from what callers see, as the others are."""
    names = {d.api_key_env for spec in current().models.values() for d in spec.deployments if d.api_key_env}
    return tuple(v for name in sorted(names) if (v := os.environ.get(name)))
