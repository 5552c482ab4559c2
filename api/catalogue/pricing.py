"""The one rule for what a model's call is billed at, used by every path that spends on a caller's behalf: the
gateway (api/selection/candidates.py, whose prices the call log and judge sampling carry), judge and shadow calls
(flows/learning/judge_grading.py), prompt optimization (api/prompt_optimization/validation.py and the flow's
ledger, flows/optimize_prompt.py, whose spend ceiling counts these prices), and onboarding.

A caller may describe a model itself (`is_custom` with prices), but only a model the catalogue lacks is billed at
the prices it declares. A catalogue model described as custom (gpt-4o at $0) is still called with the server's
provider key, so it is billed at the catalogue's prices: otherwise it escapes every cost figure and budget."""

from __future__ import annotations

from api.catalogue.catalogue import Catalogue

Prices = tuple[float, float]  # USD per million (input, output) tokens


def billed_prices(catalogue: Catalogue, provider: str, model: str, declared: Prices | None = None) -> Prices | None:
    """The catalogue's prices for provider/model when it lists the model, whatever was declared; else the declared
    prices (a model only the caller knows); None when neither knows it. "provider/model" may also be the model's
    aggregator (OpenRouter) id, as `?type=openrouter` writes candidates: it names the same catalogue model."""
    entry = catalogue.get(provider, model) or catalogue.by_aggregator(f"{provider}/{model}")
    if entry is not None:
        return float(entry.input_price), float(entry.output_price)
    return None if declared is None else (float(declared[0]), float(declared[1]))


def billed_prices_of(catalogue: Catalogue, name: str, declared: Prices | None = None) -> Prices | None:
    """billed_prices for a "provider/model" name (split at its first '/')."""
    provider, _, model = name.partition("/")
    return billed_prices(catalogue, provider, model, declared)
