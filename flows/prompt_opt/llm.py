"""LLMs through LiteLLM (via DSPy's LM), one instance per model and task type, each call billed to the ledger.

Provider endpoints: a provider whose base URL is configured (SWITCHBOARD_<PROVIDER>_API_BASE, or
SWITCHBOARD_LLM_API_BASE for all; a role's own SWITCHBOARD_OPTIMIZE_<ROLE>_API_BASE wins, with its own
SWITCHBOARD_OPTIMIZE_<ROLE>_API_KEY) is called as an OpenAI-compatible server at that URL (vLLM, Ollama, llama.cpp,
a proxy) with SWITCHBOARD_<PROVIDER>_API_KEY / SWITCHBOARD_LLM_API_KEY; otherwise LiteLLM calls the provider's own
API with its usual key variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, ...). A provider with neither
cannot be called: building its LM raises `ProviderNotConfigured` at once (LiteLLM would report the missing key as a
server error, which DSPy retries with backoff). Transient errors are retried by DSPy with exponential backoff
(SWITCHBOARD_LLM_RETRIES).

Direct calls (a judge's verdict, a reflection) go through DSPy's request API (`BilledLM.reply`, a dspy.lm15.Request);
the program's own calls go through its adapter (flows/prompt_opt/program.py).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price map at import
os.environ.setdefault("DSPY_CACHEDIR", os.path.join(os.path.expanduser("~"), ".cache", "switchboard-dspy"))

import dspy  # noqa: E402
from dspy.lm15 import Config, Message, Request  # noqa: E402

from api.catalogue.providers import PROVIDERS_BY_NAME  # noqa: E402
from api.deployments import named, routes  # noqa: E402
from api.gateway.redaction import Scrubber  # noqa: E402
from api.prompt_optimization.credentials import Unreachable, key_variables, reachable  # noqa: E402
from api.settings import OptimizeSettings  # noqa: E402
from flows.prompt_opt.usage import Ledger  # noqa: E402


class ProviderError(RuntimeError):
    """A provider error whose message carried a key; raised in its place with the key redacted."""

    provider_error_type: str | None = None
    status_code: int | None = None


class ProviderNotConfigured(RuntimeError):
    """No base URL and no key for a provider: a configuration error, never retried."""

    def __init__(self, unreachable: list[Unreachable]) -> None:
        super().__init__("; ".join(u.message() for u in unreachable))
        self.unreachable = unreachable
        self.public_message = str(self)  # names settings, never their values (api/public_errors.py)


def litellm_route(provider: str, model: str, settings: OptimizeSettings, role: str | None = None) -> dict[str, Any]:
    """The LiteLLM model string and connection settings for a model in a role: the role's own endpoint, else the
    provider's, else every provider's (each an OpenAI-compatible server, sent the model id as-is), else the
    provider's own API through LiteLLM."""
    deployed = routes(provider, model, settings, role) if named(f"{provider}/{model}") is not None else ()
    if deployed:  # the deployments file (api/deployments.py): its heaviest deployment, with its own model id
        route = max(deployed, key=lambda r: r.weight)
        return {"model": f"openai/{route.model}", "api_base": route.base, "api_key": route.key or "unused"}
    base = settings.api_base(provider, role)
    if base:
        return {"model": f"openai/{model}", "api_base": base, "api_key": settings.api_key(provider, role) or "unused"}
    known = PROVIDERS_BY_NAME.get(provider)
    prefix = known.sources[0].litellm_provider if known else provider
    return {"model": f"{prefix}/{model}"}


class BilledLM(dspy.LM):
    """A DSPy LM whose every completed call becomes a usage record of the run's ledger."""

    def __init__(self, *, provider: str, model: str, prices: tuple[float, float], ledger: Ledger, task_type: str,
                 position: int, role: str, settings: OptimizeSettings, temperature: float = 0.0,
                 max_tokens: int | None = None) -> None:
        if not reachable(provider, settings, role, model):
            raise ProviderNotConfigured([Unreachable(provider, ((f"{provider}/{model}", role),),
                                                     key_variables(provider))])
        route = litellm_route(provider, model, settings, role)
        super().__init__(engine="litellm", cache=False, num_retries=settings.llm_retries, temperature=temperature,
                         max_tokens=max_tokens or settings.max_tokens(role), timeout=settings.timeout_s(role),
                         **route)
        self.sb_provider, self.sb_model, self.sb_prices = provider, model, prices
        self.sb_ledger, self.sb_task_type, self.sb_position, self.sb_role = ledger, task_type, position, role
        self._sb_local = threading.local()  # per-thread call start, for the provider latency of each record
        self.sb_secrets = settings.secrets + tuple(v for _, v in settings.api_keys if v not in settings.secrets)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.sb_ledger.check()
        self._sb_local.hold = self.sb_ledger.reserve(self._worst_case_usd(args, kwargs))
        self._sb_local.started = time.perf_counter()
        try:
            return super().__call__(*args, **kwargs)
        except Exception as exc:
            # Some providers and proxies echo the key they were sent (e.g. in a 401); the message of an LLM error
            # ends up in logs and in the run's stored results, so the key is cut out here, where every call passes.
            # `from None`: the original, key and all, is not chained into tracebacks.
            message = str(exc)
            clean = Scrubber(self.sb_secrets)(message)  # the gateway's one scrub: secrets and key-shaped strings
            if clean != message:
                error = ProviderError(f"{type(exc).__name__}: {clean}")
                error.provider_error_type = type(exc).__name__  # what api/public_errors.py reports to the caller
                error.status_code = getattr(exc, "status_code", None)
                raise error from None
            raise
        finally:
            hold, self._sb_local.hold = getattr(self._sb_local, "hold", None), None
            self.sb_ledger.settle(hold, 0.0)  # no usage came back (a failed call): the reservation is released

    def _worst_case_usd(self, args: tuple, kwargs: dict[str, Any]) -> float:
        """The call's reservation (api/budgets.py): its prompt, and the output this LM's max_tokens allows."""
        # lazy: the token counter (tiktoken) loads only for runs with budgets
        from api.budgets import prompt_tokens_of, worst_case_usd

        if self.sb_ledger.budget is None:
            return 0.0
        prompt = kwargs.get("messages") or kwargs.get("prompt") or (args[0] if args else "")
        cap = self.kwargs.get("max_tokens") or self.kwargs.get("max_completion_tokens")
        return worst_case_usd(self.sb_prices[0], self.sb_prices[1], prompt_tokens_of(prompt), cap, None,
                              self.sb_ledger.budget.default_output_tokens)

    def reply(self, messages: list[dict[str, str]]) -> str:
        """One direct call, as DSPy's request API takes it: the system messages become the request's instructions,
        the others its conversation, with this LM's temperature and token limit; returns the reply's text."""
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system") or None
        turns = tuple(Message.assistant(m["content"]) if m["role"] == "assistant" else Message.user(m["content"])
                      for m in messages if m["role"] != "system")
        config = Config(temperature=self.kwargs.get("temperature"),
                        max_tokens=self.kwargs.get("max_tokens") or self.kwargs.get("max_completion_tokens"))
        return self(Request(model=self.model, messages=turns, system=system, config=config)).text or ""

    def update_history(self, entry: dict[str, Any]) -> None:
        # Called once per provider response (never for cache hits: the cache is off). History is not kept:
        # the ledger is the record, and a long run would otherwise hold every prompt in memory.
        started = getattr(self._sb_local, "started", None)
        row = self.sb_ledger.add(provider=self.sb_provider, model=self.sb_model, prices=self.sb_prices,
                                 usage=entry.get("usage") or {}, task_type=self.sb_task_type,
                                 position=self.sb_position, role=self.sb_role,
                                 latency_s=(time.perf_counter() - started) if started else 0.0)
        hold, self._sb_local.hold = getattr(self._sb_local, "hold", None), None
        self.sb_ledger.settle(hold, row["total_cost"])  # the real cost, in the call's budget windows

