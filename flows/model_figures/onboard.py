"""`onboard-model`: measure a model the router has no figures for (docs/routing.md, "Refreshing and measuring model
figures"). Started by POST /v2/models/onboard, `switchboard models onboard`, or modelSelect listing a reachable
model without evidence (api/model_figures/onboarding.py); one run per organization and model.

Tasks: ask-calibration-suite (the shipped suite, datasets/calibration/, through the prompt optimizer's model-call
layer, flows/prompt_opt/llm.py: every call a usage record with task type and role `onboarding`, billed at the run's
prices; within SWITCHBOARD_ONBOARD_MAX_CALLS and SWITCHBOARD_ONBOARD_MAX_COST_USD, flows/model_figures/calibration.py)
-> the usage records to the usage log, then the measured figures (accuracy and 95 % Wilson interval per benchmark)
to the run, which every API worker serves to the run's organization through the change feed
(api/model_figures/live.py)."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from api.budgets import BudgetGate
from api.model_figures.measured import encode
from api.settings import get_settings
from flows.model_figures.calibration import Calibration, Refused, calibrate
from flows.model_figures.suite import load_suite
from flows.storage_access import connect

ROLE = "onboarding"
MAX_TOKENS = 1024  # per answer: room for a step-by-step solution; the cost cap counts every call at this many
REFUSAL_STATUS = (400, 413, 422)


def usage_run_id(run_id: str) -> str:
    return f"onboarding:{run_id}"


@task(name="ask-calibration-suite", cache_policy=NO_CACHE)
def ask_suite(run: Any, budget: Any = None) -> tuple[Calibration, Any]:
    """(the graded answers, the ledger of their calls) of asking `run`'s model the suite; each call reserves against
    the user's and organization's budgets first (api/budgets.py BudgetGate), as prompt optimization's do."""
    # lazy: DSPy/LiteLLM (the model-call layer) and pyarrow load in the flow run only
    from flows.prompt_opt.llm import BilledLM
    from flows.prompt_opt.usage import CostCeilingExceeded, Ledger

    settings = get_settings()
    ledger = Ledger(usage_run_id(run.run_id), run.user_id, run.organization_id, settings.onboard_max_cost_usd,
                    budget=budget)
    prices = (run.input_price, run.output_price)
    lm = BilledLM(provider=run.provider, model=run.model, prices=prices, ledger=ledger, task_type=ROLE,
                  position=-1, role=ROLE, settings=settings.optimize, max_tokens=MAX_TOKENS)

    def ask(item) -> str:
        try:
            return lm.reply(item.messages())
        except CostCeilingExceeded:
            raise
        except Exception as exc:
            status = getattr(exc, "status_code", None)
            if status in REFUSAL_STATUS or "BadRequest" in type(exc).__name__ or "ContentPolicy" in type(exc).__name__:
                raise Refused(type(exc).__name__) from None
            raise

    result = calibrate(load_suite(), ask, prices=prices, max_tokens=MAX_TOKENS,
                       max_calls=settings.onboard_max_calls, max_cost_usd=settings.onboard_max_cost_usd,
                       spent=lambda: ledger.total, threads=min(4, settings.optimize.threads))
    return result, ledger


@flow(name="onboard-model", log_prints=True, flow_run_name="onboard-model {run_id}")
def onboard_model(run_id: str) -> dict[str, Any]:
    logger = get_run_logger()
    store = connect()
    try:
        run = store.model_figures.onboarding(run_id)
        if run is None or not store.model_figures.begin_onboarding(run_id):
            return {"run_id": run_id, "skipped": "no queued onboarding run with this id"}
    finally:
        store.close()
    budgets = connect()  # each call's reservation and settlement (api/budgets.py), open while the suite is asked
    try:
        result, ledger = ask_suite(run, BudgetGate(budgets.budgets))
    except Exception as exc:  # a missing key (ProviderNotConfigured), a broken suite: the run fails with why
        reason = getattr(exc, "public_message", None) or type(exc).__name__
        _finish(run_id, "failed", 0, 0.0, None, f"onboarding could not ask the model: {reason}")
        raise
    finally:
        budgets.close()
    # lazy: pyarrow (the usage log) loads in the flow run only
    from storage import events

    spent = ledger.total
    if ledger.records:  # spend first: were the figures lost, the spend is still counted
        events.append(get_settings().events_dir, "llm_usage", ledger.table(ledger.records))
    figures = result.figures()
    status = "completed" if figures else "failed"
    error = (f"stopped early: {result.stopped}" if result.stopped else None) if figures else \
        f"too few graded answers for a figure ({result.calls}); {result.stopped or 'the call cap was reached'}"
    _finish(run_id, status, result.calls + result.refusals, spent, encode(figures) if figures else None, error)
    summary = {"run_id": run_id, "status": status, "calls": result.calls + result.refusals, "spent_usd": spent,
               "figures": {f.benchmark: [f.score, f.low, f.high] for f in figures}, "stopped": result.stopped}
    logger.info("onboarded %s/%s: %s", run.provider, run.model, summary)
    return summary


def _finish(run_id: str, status: str, calls: int, cost: float, figures: str | None, error: str | None) -> None:
    store = connect()
    try:
        store.model_figures.finish_onboarding(run_id, status, calls, cost, figures, error)
    finally:
        store.close()
