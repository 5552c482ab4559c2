"""The only reader of the environment, with storage/layout.py (the data dir). Everything configurable lives here."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from api.client_address import parse_networks
from storage.layout import DataDir, configured_data_dir, configured_database_url, configured_events_uri


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:  # a typo in config must stop start-up, not be ignored
        raise SystemExit(f"{name} must be an integer, got {raw!r}") from exc


def _float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise SystemExit(f"{name} must be a number, got {raw!r}") from exc


def _networks(name: str) -> tuple[str, ...]:
    """A comma-separated list of IP addresses or CIDR networks; a typo stops start-up."""
    entries = tuple(e.strip() for e in os.environ.get(name, "").split(",") if e.strip())
    try:
        parse_networks(entries)
    except ValueError as exc:
        raise SystemExit(f"{name}: {exc}") from exc
    return entries


def _choice(name: str, default: str, allowed: tuple[str, ...]) -> str:
    raw = (os.environ.get(name) or default).strip()
    value = raw.upper() if default.isupper() else raw.lower()
    if value not in allowed:
        raise SystemExit(f"{name} must be one of {', '.join(allowed)}, got {raw!r}")
    return value


def _tracing_configured() -> bool:
    """The OTEL_* variables ask for traces: an OTLP endpoint named, the SDK not disabled, the exporter not `none`."""
    env = os.environ
    if env.get("OTEL_SDK_DISABLED", "").lower() == "true" or env.get("OTEL_TRACES_EXPORTER", "").lower() == "none":
        return False
    return bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                or env.get("OTEL_TRACES_EXPORTER", "").lower() == "otlp")


def _path(name: str) -> Path | None:
    raw = os.environ.get(name)
    return Path(raw).expanduser() if raw else None


# `switchboard store`'s default port (production shape). `serve` runs its own store owner on a free loopback port
# instead (api/cli/supervisor.py): it is internal, and a fixed port would collide with a second `serve`.
STORE_PORT = 8001


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    host: str
    port: int
    prefect_api_url: str | None
    prefect_port: int
    max_body_bytes: int
    upload_max_bytes: int
    upload_parse_seconds: float
    auth_cache_seconds: float
    session_flush_seconds: float
    # Prompt optimization (docs/prompt_optimization.md); defaults keep tests and old callers working.
    optimize: "OptimizeSettings | None" = None
    # The store-owner process (docs/deployment.md): where it listens; how long API workers trust a cached
    # preference when the owner's change feed is silent (changes normally arrive within half a second).
    store_host: str = "127.0.0.1"
    store_port: int = STORE_PORT
    store_url: str | None = None  # published in run/owner.json; default http://<store_host>:<store_port>
    # postgresql://...: PostgreSQL is the system of record, every process connects to it, no store owner runs.
    database_url: str | None = None
    # A URI (s3://bucket/prefix, ...): the event logs live there instead of the data dir's events/ folder.
    events_uri: str | None = None
    preference_cache_seconds: float = 5.0
    # Per-key rate limits (docs/api.md); per_minute 0 = off. Per API worker process.
    rate_limit_per_minute: int = 600
    rate_limit_burst: int = 60
    select_rate_limit_per_minute: int = 300_000  # above one worker's capacity (~2,000/s): a guard, not a quota
    select_rate_limit_burst: int = 10_000
    # Look-ups of keys not in the auth cache, per client address (api/auth.py): random keys cannot flood the store.
    key_lookup_rate_limit_per_minute: int = 600
    key_lookup_rate_limit_burst: int = 30
    # Reverse proxies whose X-Forwarded-For names the client for those limits (api/client_address.py); none: the
    # connecting address is the client.
    trusted_proxies: tuple[str, ...] = ()
    # Custom routers: how many characters of an upload's prompts e5 reads at training time, as the teacher of the
    # router's own static lexicon (flows/custom_router/teacher.py; about 5 s idle, ~15 s of CPU on a busy 2-core
    # machine, docs/routing.md). Work, not seconds: the same upload always teaches the same lexicon.
    # 0: no teacher, the router reads the English static embedding alone. e5 never runs when serving.
    custom_router_e5_max_chars: int = 30_000
    # Prefect's own client setting, read here too for readiness probes of a server that requires it.
    prefect_auth_string: str | None = None
    # The default router modelSelect serves and the public per-benchmark figures it scores models with
    # (docs/routing.md); None = the shipped ones (datasets/default_router/, datasets/model_benchmarks.csv).
    default_router_dir: Path | None = None
    model_figures_path: Path | None = None
    # Connections (docs/deployment.md, "Connections and timeouts"). A connection must send a request's headers
    # within http_header_timeout_s of opening or of its previous response (so an idle one is closed after that);
    # a body may pause at most http_body_idle_timeout_s and must be complete within http_body_timeout_s (408).
    # http_max_connections: open connections per API worker; 0 = as many as the open-file limit allows.
    http_header_timeout_s: float = 10.0
    http_body_idle_timeout_s: float = 10.0
    http_body_timeout_s: float = 60.0
    http_max_connections: int = 0
    # How often Prefect's scheduler starts the housekeeping deployment (flows/housekeeping.py); tests shorten it to
    # prove that scheduled runs really happen.
    housekeeping_interval_s: int = 600
    # How long a flow run may stay Pending (handed to a worker, not yet started) before housekeeping takes its
    # worker for dead with it and crashes the run (flows/housekeeping.py); raise it where starting a run's
    # infrastructure can take longer (container pools pulling large images).
    pending_run_timeout_s: float = 900.0
    # How long a Running flow run of a work pool's deployments may go without a heartbeat before Prefect's automation
    # (created by `switchboard deploy`, flows/deploy.py) takes its host for dead and crashes it; runs heartbeat four
    # times per bound, so at least 120 s (Prefect's shortest heartbeat interval is 30 s).
    run_heartbeat_timeout_s: float = 600.0
    # How often the learn-from-traffic deployment runs (flows/learning/flow.py), and how many new labels a preference
    # needs since its last fitted version before the flow fits another.
    learning_interval_s: int = 3600
    learning_min_new_labels: int = 200
    judge_interval_s: int = 3600   # the judge-traffic flow's schedule (flows/learning/judge.py)
    judge_batch: int = 200         # samples a preference's grading takes per run, at most
    # The OpenAI-compatible gateway (api/gateway/, docs/api.md): attempts per request (the first choice and its
    # fallbacks), how long an upstream may take to connect and to send its first byte, and the margin of
    # predicted utility a follow-up turn must gain to leave the model that answered the previous turn.
    gateway_max_attempts: int = 3
    gateway_connect_timeout_s: float = 5.0
    gateway_first_byte_timeout_s: float = 60.0
    gateway_sticky_margin: float = 0.05
    # Model figures without a release (docs/api.md, "Model figures and onboarding"): the URL or file the
    # refresh-model-figures flow reads (datasets/model_benchmarks.csv's format) and how often its schedule runs it
    # (0: no schedule, the default; it still runs when triggered). Onboarding a model without figures: started
    # automatically the first time modelSelect lists a reachable one (onboard_auto), at most onboard_max_calls
    # questions of the calibration suite and onboard_max_cost_usd per model.
    model_figures_source: str | None = None
    model_figures_refresh_interval_s: int = 0
    onboard_auto: bool = True
    onboard_max_calls: int = 300
    onboard_max_cost_usd: float = 0.5
    # The gateway against slow, huge or hostile upstreams (issue 31; docs/api.md, "Limits on upstream answers"):
    # an attempt, and a whole request with its fallbacks, end at these deadlines; an answer (decompressed) over
    # gateway_max_response_bytes ends as a 502 or an error event; at most gateway_pool_size upstream calls at once,
    # gateway_max_per_upstream to one provider endpoint and gateway_max_per_key for one caller, and a call waits at
    # most gateway_pool_wait_s for a slot (then the next candidate, or a 503 / 429 with Retry-After).
    gateway_attempt_total_timeout_s: float = 300.0
    gateway_request_total_timeout_s: float = 600.0
    gateway_max_response_bytes: int = 8 * 1024 * 1024
    gateway_pool_size: int = 1000
    gateway_max_per_upstream: int = 256
    gateway_max_per_key: int = 64
    gateway_pool_wait_s: float = 2.0
    # Named deployments (issue 35; api/deployments.py): how long a deployment that failed 3 calls in a row is tried
    # last, after its model's other deployments (the file itself: SWITCHBOARD_DEPLOYMENTS, read by api/deployments.py).
    deployment_cooldown_s: float = 30.0
    # Operators' telemetry (docs/operations.md): GET /metrics (on unless SWITCHBOARD_METRICS=0) and the bearer token
    # it then requires, if any; the log's level and format (text or json); traces when OTEL_* variables name an
    # OTLP endpoint (api/observability/tracing.py).
    metrics_enabled: bool = True
    metrics_token: str | None = None
    log_level: str = "INFO"
    log_format: str = "text"
    tracing: bool = False
    # Budgets and keys (docs/operations.md, issue 34): the output tokens a call's reservation assumes when the
    # request sets no max_tokens (the model's window caps it too), and how long a rotated key keeps working.
    budget_default_output_tokens: int = 4096
    key_rotation_grace_s: float = 86_400.0

    @property
    def layout(self) -> DataDir:
        return DataDir(self.data_dir)

    @property
    def db_path(self) -> Path:
        return self.layout.db_path

    @property
    def run_dir(self) -> Path:
        return self.layout.run_dir

    @property
    def events_dir(self) -> Path | str:
        """The event logs' location as storage/events.py takes it: a local folder, or SWITCHBOARD_EVENTS_URI."""
        return self.events_uri or self.layout.events_dir

    @property
    def artefacts_dir(self) -> Path:
        return self.layout.artefacts_dir

    @property
    def prefect_home(self) -> Path:
        return self.layout.prefect_home


@dataclass(frozen=True)
class OptimizeSettings:
    max_cost_usd: float = 5.0            # per run; a run that would pass it fails with the reason
    parallel_targets: int = 3            # target models optimized at once within one run
    concurrent_runs: int = 2             # runs executing at once (all users); the rest wait in the queue
    threads: int = 8                     # LLM calls in flight per evaluation / optimizer step
    judge_model: str = "openai/gpt-4o-mini"        # LLMaaJ:Sem_Sim_1 judge, provider/model
    reflection_model: str = "openai/gpt-4o"        # GEPA's reflection (instruction-writing) model
    max_metric_calls: int = 0            # GEPA budget; 0 = automatic (about two passes over the train set)
    llm_retries: int = 3                 # transient provider errors, exponential backoff (LiteLLM)
    llm_timeout_s: float = 120.0
    api_bases: tuple[tuple[str, str], ...] = ()    # (provider or "*", OpenAI-compatible base URL)
    api_keys: tuple[tuple[str, str], ...] = ()     # (provider or "*", key) for those base URLs
    secrets: tuple[str, ...] = ()                  # every provider key in the environment: redacted from errors
    credential_names: frozenset[str] = frozenset()  # names (never values) of the credential variables that are set
    # Per role (target, origin, judge, reflection): an OpenAI-compatible endpoint and key that win over the
    # provider's (SWITCHBOARD_OPTIMIZE_<ROLE>_API_BASE / _API_KEY), a call timeout and an output-token cap.
    role_api_bases: tuple[tuple[str, str], ...] = ()
    role_api_keys: tuple[tuple[str, str], ...] = ()
    role_timeouts_s: tuple[tuple[str, float], ...] = ()
    role_max_tokens: tuple[tuple[str, int], ...] = ()

    def api_base(self, provider: str, role: str | None = None) -> str | None:
        found = dict(self.api_bases)
        own = dict(self.role_api_bases).get(role or "")
        return own or found.get(provider_key(provider)) or found.get("*")

    def api_key(self, provider: str, role: str | None = None) -> str | None:
        if role and dict(self.role_api_bases).get(role):  # the role's own endpoint takes only the role's own key
            return dict(self.role_api_keys).get(role)
        found = dict(self.api_keys)
        return found.get(provider_key(provider)) or found.get("*")

    def timeout_s(self, role: str) -> float:
        return dict(self.role_timeouts_s).get(role, self.llm_timeout_s)

    def max_tokens(self, role: str) -> int:
        return dict(self.role_max_tokens).get(role, ROLE_MAX_TOKENS.get(role, 1024))


OPTIMIZE_ROLES = ("target", "origin", "judge", "reflection")
ROLE_MAX_TOKENS = {"target": 1024, "origin": 1024, "judge": 256, "reflection": 2048}
ROLE_TIMEOUT_S = {"reflection": 600.0}  # 2,048 tokens at 4 tokens/s; the other roles: SWITCHBOARD_LLM_TIMEOUT_S


def provider_key(provider: str) -> str:
    """How a provider's name appears in SWITCHBOARD_<PROVIDER>_API_BASE: lower case, '-' and '.' as '_'."""
    return provider.lower().replace("-", "_").replace(".", "_")


def _per_role() -> dict[str, tuple[tuple[str, object], ...]]:
    """SWITCHBOARD_OPTIMIZE_<ROLE>_{API_BASE,API_KEY,TIMEOUT_S,MAX_TOKENS}, with the documented defaults."""
    out: dict[str, list[tuple[str, object]]] = {"bases": [], "keys": [], "timeouts": [], "tokens": []}
    llm_timeout = _float("SWITCHBOARD_LLM_TIMEOUT_S", 120.0)
    for role in OPTIMIZE_ROLES:
        prefix = f"SWITCHBOARD_OPTIMIZE_{role.upper()}_"
        if os.environ.get(prefix + "API_BASE"):
            out["bases"].append((role, os.environ[prefix + "API_BASE"]))
        if os.environ.get(prefix + "API_KEY"):
            out["keys"].append((role, os.environ[prefix + "API_KEY"]))
        out["timeouts"].append((role, _float(prefix + "TIMEOUT_S", ROLE_TIMEOUT_S.get(role, llm_timeout))))
        out["tokens"].append((role, max(1, _int(prefix + "MAX_TOKENS", ROLE_MAX_TOKENS[role]))))
    return {k: tuple(v) for k, v in out.items()}


def _per_provider(suffix: str) -> tuple[tuple[str, str], ...]:
    """SWITCHBOARD_LLM_<SUFFIX> (every provider) and SWITCHBOARD_<PROVIDER>_<SUFFIX> (one provider)."""
    out = []
    for name, value in sorted(os.environ.items()):
        if not value or not name.startswith("SWITCHBOARD_") or not name.endswith("_" + suffix):
            continue
        middle = name[len("SWITCHBOARD_"):-len(suffix) - 1]
        if middle == "LLM":
            out.append(("*", value))
        elif middle and not middle.startswith("OPTIMIZE"):
            out.append((middle.lower(), value))
    return tuple(out)


def _secret_values() -> tuple[str, ...]:
    """Values of every *_API_KEY / *_API_TOKEN variable (SWITCHBOARD_*_API_KEY, OPENAI_API_KEY, ...): LLM errors
    are scrubbed of them, since some providers and proxies echo the key they were sent."""
    return tuple(sorted({v for k, v in os.environ.items() if k.endswith(("_API_KEY", "_API_TOKEN")) and len(v) >= 8},
                        key=len, reverse=True))


def _credential_names() -> frozenset[str]:
    """Names of the non-empty *_API_KEY / *_TOKEN variables (OPENAI_API_KEY, ANTHROPIC_AUTH_TOKEN, ...): whether a
    provider has a key decides whether a prompt optimization may call it (api/prompt_optimization/credentials.py)."""
    return frozenset(k for k, v in os.environ.items() if v.strip() and k.endswith(("_API_KEY", "_TOKEN")))


def _optimize_settings() -> OptimizeSettings:
    roles = _per_role()
    return OptimizeSettings(
        max_cost_usd=_float("SWITCHBOARD_OPTIMIZE_MAX_COST_USD", 5.0),
        parallel_targets=max(1, _int("SWITCHBOARD_OPTIMIZE_PARALLEL_TARGETS", 3)),
        concurrent_runs=max(1, _int("SWITCHBOARD_OPTIMIZE_CONCURRENT_RUNS", 2)),
        threads=max(1, _int("SWITCHBOARD_OPTIMIZE_THREADS", 8)),
        judge_model=os.environ.get("SWITCHBOARD_OPTIMIZE_JUDGE_MODEL") or "openai/gpt-4o-mini",
        reflection_model=os.environ.get("SWITCHBOARD_OPTIMIZE_REFLECTION_MODEL") or "openai/gpt-4o",
        max_metric_calls=max(0, _int("SWITCHBOARD_OPTIMIZE_MAX_METRIC_CALLS", 0)),
        llm_retries=max(0, _int("SWITCHBOARD_LLM_RETRIES", 3)),
        llm_timeout_s=_float("SWITCHBOARD_LLM_TIMEOUT_S", 120.0),
        api_bases=_per_provider("API_BASE"),
        api_keys=_per_provider("API_KEY"),
        role_api_bases=roles["bases"], role_api_keys=roles["keys"],  # type: ignore[arg-type]
        role_timeouts_s=roles["timeouts"], role_max_tokens=roles["tokens"],  # type: ignore[arg-type]
        secrets=_secret_values(),
        credential_names=_credential_names(),
    )


def basic_auth(auth_string: str | None) -> tuple[str, str] | None:
    """PREFECT_API_AUTH_STRING ("user:password") as httpx's basic-auth pair; None without one."""
    if not auth_string or ":" not in auth_string:
        return None
    user, password = auth_string.split(":", 1)
    return user, password


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    data_dir = configured_data_dir()
    return Settings(
        data_dir=data_dir,
        host=os.environ.get("SWITCHBOARD_HOST", "127.0.0.1"),
        port=_int("SWITCHBOARD_PORT", 8000),
        prefect_api_url=os.environ.get("PREFECT_API_URL") or None,
        prefect_auth_string=os.environ.get("PREFECT_API_AUTH_STRING") or None,
        prefect_port=_int("SWITCHBOARD_PREFECT_PORT", 4200),
        max_body_bytes=_int("SWITCHBOARD_MAX_BODY_BYTES", 2 * 1024 * 1024),
        upload_max_bytes=_int("SWITCHBOARD_UPLOAD_MAX_BYTES", 5 * 1024 * 1024),
        upload_parse_seconds=_float("SWITCHBOARD_UPLOAD_PARSE_SECONDS", 20.0),
        auth_cache_seconds=_float("SWITCHBOARD_AUTH_CACHE_SECONDS", 30.0),
        session_flush_seconds=_float("SWITCHBOARD_SESSION_FLUSH_SECONDS", 1.0),
        optimize=_optimize_settings(),
        store_host=os.environ.get("SWITCHBOARD_STORE_HOST", "127.0.0.1"),
        store_port=_int("SWITCHBOARD_STORE_PORT", STORE_PORT),
        store_url=os.environ.get("SWITCHBOARD_STORE_URL") or None,
        database_url=configured_database_url(),
        events_uri=configured_events_uri(),
        preference_cache_seconds=_float("SWITCHBOARD_PREFERENCE_CACHE_SECONDS", 5.0),
        rate_limit_per_minute=max(0, _int("SWITCHBOARD_RATE_LIMIT_PER_MINUTE", 600)),
        rate_limit_burst=max(1, _int("SWITCHBOARD_RATE_LIMIT_BURST", 60)),
        select_rate_limit_per_minute=max(0, _int("SWITCHBOARD_SELECT_RATE_LIMIT_PER_MINUTE", 300_000)),
        select_rate_limit_burst=max(1, _int("SWITCHBOARD_SELECT_RATE_LIMIT_BURST", 10_000)),
        key_lookup_rate_limit_per_minute=max(0, _int("SWITCHBOARD_KEY_LOOKUP_RATE_LIMIT_PER_MINUTE", 600)),
        key_lookup_rate_limit_burst=max(1, _int("SWITCHBOARD_KEY_LOOKUP_RATE_LIMIT_BURST", 30)),
        trusted_proxies=_networks("SWITCHBOARD_TRUSTED_PROXIES"),
        custom_router_e5_max_chars=max(0, _int("SWITCHBOARD_CUSTOM_ROUTER_E5_MAX_CHARS", 30_000)),
        default_router_dir=_path("SWITCHBOARD_DEFAULT_ROUTER_DIR"),
        model_figures_path=_path("SWITCHBOARD_MODEL_FIGURES"),
        http_header_timeout_s=min(60.0, max(0.001, _float("SWITCHBOARD_HTTP_HEADER_TIMEOUT_S", 10.0))),
        http_body_idle_timeout_s=max(0.001, _float("SWITCHBOARD_HTTP_BODY_IDLE_TIMEOUT_S", 10.0)),
        http_body_timeout_s=max(0.001, _float("SWITCHBOARD_HTTP_BODY_TIMEOUT_S", 60.0)),
        http_max_connections=max(0, _int("SWITCHBOARD_HTTP_MAX_CONNECTIONS", 0)),
        housekeeping_interval_s=max(1, _int("SWITCHBOARD_HOUSEKEEPING_INTERVAL_S", 600)),
        pending_run_timeout_s=max(0.0, _float("SWITCHBOARD_PENDING_RUN_TIMEOUT_S", 900.0)),
        run_heartbeat_timeout_s=max(120.0, _float("SWITCHBOARD_RUN_HEARTBEAT_TIMEOUT_S", 600.0)),
        learning_interval_s=max(1, _int("SWITCHBOARD_LEARNING_INTERVAL_S", 3600)),
        learning_min_new_labels=max(1, _int("SWITCHBOARD_LEARNING_MIN_NEW_LABELS", 200)),
        judge_interval_s=max(1, _int("SWITCHBOARD_JUDGE_INTERVAL_S", 3600)),
        judge_batch=max(1, _int("SWITCHBOARD_JUDGE_BATCH", 200)),
        gateway_max_attempts=max(1, _int("SWITCHBOARD_GATEWAY_MAX_ATTEMPTS", 3)),
        gateway_connect_timeout_s=max(0.001, _float("SWITCHBOARD_GATEWAY_CONNECT_TIMEOUT_S", 5.0)),
        gateway_first_byte_timeout_s=max(0.001, _float("SWITCHBOARD_GATEWAY_FIRST_BYTE_TIMEOUT_S", 60.0)),
        gateway_sticky_margin=max(0.0, _float("SWITCHBOARD_GATEWAY_STICKY_MARGIN", 0.05)),
        model_figures_source=os.environ.get("SWITCHBOARD_MODEL_FIGURES_SOURCE") or None,
        model_figures_refresh_interval_s=max(0, _int("SWITCHBOARD_MODEL_FIGURES_REFRESH_INTERVAL_S", 0)),
        onboard_auto=os.environ.get("SWITCHBOARD_ONBOARD_AUTO", "true").strip().lower() not in ("0", "false", "no",
                                                                                                  "off"),
        onboard_max_calls=max(1, _int("SWITCHBOARD_ONBOARD_MAX_CALLS", 300)),
        onboard_max_cost_usd=max(0.0, _float("SWITCHBOARD_ONBOARD_MAX_COST_USD", 0.5)),
        gateway_attempt_total_timeout_s=max(0.001, _float("SWITCHBOARD_GATEWAY_ATTEMPT_TOTAL_TIMEOUT_S", 300.0)),
        gateway_request_total_timeout_s=max(0.001, _float("SWITCHBOARD_GATEWAY_REQUEST_TOTAL_TIMEOUT_S", 600.0)),
        gateway_max_response_bytes=max(1024, _int("SWITCHBOARD_GATEWAY_MAX_RESPONSE_BYTES", 8 * 1024 * 1024)),
        gateway_pool_size=max(1, _int("SWITCHBOARD_GATEWAY_POOL_SIZE", 1000)),
        gateway_max_per_upstream=max(1, _int("SWITCHBOARD_GATEWAY_MAX_PER_UPSTREAM", 256)),
        gateway_max_per_key=max(1, _int("SWITCHBOARD_GATEWAY_MAX_PER_KEY", 64)),
        gateway_pool_wait_s=max(0.0, _float("SWITCHBOARD_GATEWAY_POOL_WAIT_S", 2.0)),
        deployment_cooldown_s=max(0.0, _float("SWITCHBOARD_DEPLOYMENT_COOLDOWN_S", 30.0)),
        metrics_enabled=os.environ.get("SWITCHBOARD_METRICS", "1").strip().lower() not in ("0", "false", "off", "no"),
        metrics_token=os.environ.get("SWITCHBOARD_METRICS_TOKEN") or None,
        log_level=_choice("SWITCHBOARD_LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR")),
        log_format=_choice("SWITCHBOARD_LOG_FORMAT", "text", ("text", "json")),
        tracing=_tracing_configured(),
        budget_default_output_tokens=max(1, _int("SWITCHBOARD_BUDGET_DEFAULT_OUTPUT_TOKENS", 4096)),
        key_rotation_grace_s=max(0.0, _float("SWITCHBOARD_KEY_ROTATION_GRACE_S", 86_400.0)),
    )


def reset_settings() -> None:
    """Tests change the environment and call this so the next read sees it."""
    get_settings.cache_clear()


def _write_probe(path: Path) -> None:
    """Write and sync a few KiB, the way the store will (a full disk often shows only at the sync)."""
    with open(path, "wb") as fh:
        fh.write(b"\0" * 16384)
        fh.flush()
        os.fsync(fh.fileno())


def check_data_dir(data_dir: Path) -> None:
    """Start-up: the data dir must exist (or be creatable), be private to its owner and take a write. Otherwise
    stop with one line that says what is wrong and what to do (SystemExit prints it without a traceback).

    It holds prompts, customers' evaluation data and key hashes, so it is made 0700 whatever it was: no other
    local user can read anything below it (files are 0600 too, by the CLI's umask)."""
    probe = data_dir / f".write-check-{os.getpid()}"
    try:
        data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if data_dir.stat().st_mode & 0o077:
            data_dir.chmod(0o700)
        _write_probe(probe)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            problem = "has no space left"
        elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            problem = "is not writable (read-only or no permission)"
        elif exc.errno in (errno.ENOTDIR, errno.EEXIST):
            problem = "is not a directory (a file is in the way)"
        else:
            problem = "cannot be used"
        raise SystemExit(f"error: the data dir {data_dir} {problem}: {exc.strerror or exc}. Fix it, or point "
                         "SWITCHBOARD_DATA_DIR at a writable directory with free space.") from None
    finally:
        try:
            probe.unlink()
        except OSError:
            pass
