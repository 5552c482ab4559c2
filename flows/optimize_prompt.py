"""`optimize-prompt`: per target model, evaluate the caller's prompt, optimize it with GEPA, evaluate the result;
evaluate the origin model as the baseline. One flow run per optimization run.

Each model is its own task (`optimize-target`, named after the model, with `pre-optimization-evaluation`,
`optimize` and `post-optimization-evaluation` task runs inside it), so every target is a branch in the Prefect UI.
A target's result is never worse than the caller's prompt: the optimized prompt is kept only if it beats the original
on the test goldens without copying training examples (flows/prompt_opt/never_worse.py).
Targets run concurrently, at most SWITCHBOARD_OPTIMIZE_PARALLEL_TARGETS at a time; each result (and its usage
records) is stored as soon as that model ends. A target that fails (no credentials for a model it needs, provider
errors that outlive the retries, the cost ceiling) ends `failed` with null prompts while the others go on, and its
task run ends Failed with the reason; the run is `completed` only when every target completed.

The flow run's Prefect state is the run's JobStatus (flows/prefect_api.py maps one onto the other): Completed when
the run completed, Failed, with the run's error as the state's message, when it failed, also when only some targets
failed; the `prompt-optimization-scores` artifact lists every model's status.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.states import Cancelled, Failed, State

from api.budgets import BudgetGate
from api.catalogue import billed_prices, load_catalogue
from api.prompt_optimization.credentials import ORIGIN as ORIGIN_ROLE
from api.prompt_optimization.credentials import TARGET
from api.public_errors import public_reason
from api.settings import get_settings
from flows.prompt_opt.never_worse import choose, copied_examples
from flows.prompt_opt.program import to_program, to_prompt
from flows.prompt_opt.usage import Ledger
from flows.prompt_opt.work import RunContext, RunSpec, evaluate, optimize
from flows.run_metrics import FINAL_STATE_HOOKS
from flows.storage_access import connect
from storage import events
from storage.optimization_records import ORIGIN, ModelResult

TASK_PRE, TASK_OPT, TASK_POST = "pre-optimization evaluation", "optimization", "post-optimization evaluation"


def _context(run, store: Any = None) -> Any:
    """The run's context: its spec, settings, ledger, and the price of every model it may call, by the one rule of
    api/catalogue/pricing.py: the catalogue's for a model it lists (even one the caller described as custom: the
    spend ceiling counts what the call costs), the caller's for a model only it described (is_custom), else 0 (a
    judge or reflection model named in the environment that the catalogue does not know)."""
    settings = get_settings().optimize
    spec = RunSpec.from_json(run.request)
    catalogue = load_catalogue()
    ledger = Ledger(run.run_id, run.user_id, run.organization_id, settings.max_cost_usd, key_id=run.key_id,
                    budget=None if store is None else BudgetGate(store.budgets))
    ctx = RunContext(spec, settings, ledger, {})
    names = {tuple(t) for t in spec.targets} | ({tuple(spec.origin)} if spec.origin else set())
    names |= {ctx.reflection_model()} | ({ctx.judge_model()} if ctx.judge_model()[0] else set())
    for provider, model in names:
        described = (spec.custom or {}).get(f"{provider}/{model}")
        declared = (described["input_price"], described["output_price"]) if described else None
        ctx.prices[f"{provider}/{model}"] = billed_prices(catalogue, provider, model, declared) or (0.0, 0.0)
    return ctx


def _flush_usage(ctx, position: int) -> tuple[float, int]:
    """Write this model's usage records to the llm_usage event log; return (cost, requests)."""

    rows = ctx.ledger.for_position(position)
    events.append(get_settings().events_dir, "llm_usage", ctx.ledger.table(rows))
    return sum(r["total_cost"] for r in rows), len(rows)


def _save_program(program, run_id: str, position: int) -> None:
    """The optimized program as DSPy JSON state (never a pickle), for analysts and for re-loading it in DSPy."""

    folder = get_settings().artefacts_dir / "prompt_optimization" / run_id
    folder.mkdir(parents=True, exist_ok=True)
    program.save(str(folder / f"target-{position}.json"))


@task(name="pre-optimization-evaluation", task_run_name="pre-optimization-evaluation {provider}/{model}",
      cache_policy=NO_CACHE)
def pre_evaluation(ctx, provider: str, model: str, position: int) -> tuple[float, dict, list[float]]:
    program = to_program(ctx.spec.system_prompt, ctx.spec.template, ctx.spec.fields)
    return evaluate(ctx, program, provider, model, ctx.spec.test, TASK_PRE, position)


@task(name="optimize", task_run_name="optimize {provider}/{model}", cache_policy=NO_CACHE)
def optimize_step(ctx, provider: str, model: str, position: int) -> tuple[Any, int]:
    return optimize(ctx, provider, model, position)


@task(name="post-optimization-evaluation", task_run_name="post-optimization-evaluation {provider}/{model}",
      cache_policy=NO_CACHE)
def post_evaluation(ctx, program, provider: str, model: str, position: int) -> tuple[float, dict, list[float]]:
    return evaluate(ctx, program, provider, model, ctx.spec.test, TASK_POST, position)


def _never_worse(ctx, program, before: tuple, after: tuple, refused: int, log) -> tuple[Any, float, dict]:
    """The result's prompt, score and post evals: the optimized program only if it beats the caller's prompt on the
    test goldens and copies no training example (flows/prompt_opt/never_worse.py), else the caller's own."""
    spec = ctx.spec
    instructions, _, _ = to_prompt(program)
    copied = copied_examples(instructions, spec.system_prompt, spec.train)
    choice = choose(before[2], after[2], copied, refused)
    if choice.keep_optimized:
        return program, after[0], {**after[1], "never_worse": choice.report}
    log.info("keeping the original prompt: %s", choice.reason)
    original = to_program(spec.system_prompt, spec.template, spec.fields)
    return original, before[0], {**before[1], "never_worse": choice.report, "optimized_candidate": after[1]}


@task(name="optimize-target", task_run_name="optimize-target {provider}/{model}", cache_policy=NO_CACHE)
def optimize_target(ctx, run_id: str, provider: str, model: str, position: int, gate: Any) -> str | State:
    store, log = connect(), get_run_logger()
    with gate:
        store.optimizations.record_model_result(run_id, ModelResult(position, provider, model, "processing"))
        pre_score = pre_evals = None
        try:
            ctx.check_reachable(provider, model, TARGET)
            pre_score, pre_evals, pre_scores = pre_evaluation(ctx, provider, model, position)
            store.optimizations.record_model_result(run_id, ModelResult(position, provider, model, "processing", pre_score,
                                                          json.dumps(pre_evals)))
            program, refused = optimize_step(ctx, provider, model, position)
            post_score, post_evals, post_scores = post_evaluation(ctx, program, provider, model, position)
            program, post_score, post_evals = _never_worse(ctx, program, (pre_score, pre_evals, pre_scores),
                                                           (post_score, post_evals, post_scores), refused, log)
            system_prompt, template, _ = to_prompt(program)
            _save_program(program, run_id, position)
        except Exception as exc:  # this target fails; the others go on
            log.warning("target %s/%s failed: %s", provider, model, exc)
            cost, calls = _flush_usage(ctx, position)
            reason = ctx.ledger.reason() if ctx.ledger.exceeded else public_reason(exc, f"{provider}/{model}", log)
            store.optimizations.record_model_result(run_id, ModelResult(
                position, provider, model, "failed", pre_score, json.dumps(pre_evals) if pre_evals else None,
                cost=cost, num_requests=calls, error=reason))
            return Failed(message=f"{provider}/{model}: {reason}")  # the target's branch is red in the UI
        cost, calls = _flush_usage(ctx, position)
        store.optimizations.record_model_result(run_id, ModelResult(
            position, provider, model, "completed", pre_score, json.dumps(pre_evals), post_score,
            json.dumps(post_evals), system_prompt, template, cost, calls))
        log.info("target %s/%s: %.3f -> %.3f ($%.6f, %d calls)", provider, model, pre_score, post_score, cost, calls)
        return "completed"


@task(name="origin-evaluation", task_run_name="origin-evaluation {provider}/{model}", cache_policy=NO_CACHE)
def origin_evaluation(ctx, run_id: str, provider: str, model: str) -> str | State:
    store = connect()
    spec = ctx.spec
    if spec.origin_score is not None:  # the caller gave the baseline: nothing to evaluate
        store.optimizations.record_model_result(run_id, ModelResult(ORIGIN, provider, model, "completed", spec.origin_score,
                                                      None, cost=0.0, num_requests=0))
        return "completed"
    store.optimizations.record_model_result(run_id, ModelResult(ORIGIN, provider, model, "processing"))
    try:
        ctx.check_reachable(provider, model, ORIGIN_ROLE)
        program = to_program(spec.system_prompt, spec.template, spec.fields)
        score, evals, _ = evaluate(ctx, program, provider, model, spec.test, TASK_PRE, ORIGIN)
    except Exception as exc:
        cost, calls = _flush_usage(ctx, ORIGIN)
        reason = ctx.ledger.reason() if ctx.ledger.exceeded else public_reason(exc, f"{provider}/{model}",
                                                                               get_run_logger())
        store.optimizations.record_model_result(run_id, ModelResult(ORIGIN, provider, model, "failed", cost=cost,
                                                      num_requests=calls, error=reason))
        return Failed(message=f"{provider}/{model} (origin): {reason}")
    cost, calls = _flush_usage(ctx, ORIGIN)
    store.optimizations.record_model_result(run_id, ModelResult(ORIGIN, provider, model, "completed", score, json.dumps(evals),
                                                  cost=cost, num_requests=calls))
    return "completed"


@task(name="publish-scores", cache_policy=NO_CACHE)
def publish_scores(run) -> None:
    """Before/after scores of every model as a Prefect table artifact, beside the run in the UI."""
    def returned(r) -> str | None:  # which prompt the target's result holds (flows/prompt_opt/never_worse.py)
        return json.loads(r.post_evals).get("never_worse", {}).get("returned") if r.post_evals else None

    rows = [{"model": f"{r.provider}/{r.model}", "role": "origin" if r.position == ORIGIN else "target",
             "status": r.result_status, "before": r.pre_score, "after": r.post_score, "prompt returned": returned(r),
             "USD": r.cost, "LLM calls": r.num_requests} for r in run.results]
    create_table_artifact(table=rows, key="prompt-optimization-scores",
                          description=f"Run {run.run_id} ({run.status}): each model's score on the test goldens "
                                      "before and after optimization; the origin model's score is the baseline")


def _run_error(ctx, targets: list[State]) -> str | None:
    """The run's error when some target failed: the cost ceiling, or how many failed and why."""
    failed = [state.message or "failed" for state in targets if not state.is_completed()]
    if not failed:
        return None
    if ctx.ledger.exceeded:
        return ctx.ledger.reason()
    reasons = "; ".join(reason[:300] for reason in failed)
    return f"{len(failed)} of {len(targets)} target models failed: {reasons} (see each target's result)"


def _already_closed(run_id: str, run) -> dict[str, Any] | State:
    """A flow run for a run that is unknown or already closed ends in the state the run is in."""
    if run is None:
        return Failed(message=f"optimization run {run_id} is unknown")
    summary = {"run_id": run_id, "status": run.status}
    if run.status == "failed":
        return Failed(message=f"optimization run {run_id} had already failed: {run.error}", data=summary)
    if run.status == "cancelled":
        return Cancelled(message=f"optimization run {run_id} was cancelled", data=summary)
    return summary


@flow(name="optimize-prompt", **FINAL_STATE_HOOKS,
      flow_run_name="optimize-prompt {run_id}")
def optimize_prompt(run_id: str) -> dict[str, Any] | State:
    logging.getLogger("dspy").setLevel(logging.WARNING)  # GEPA logs every candidate at INFO
    store, log = connect(), get_run_logger()
    run = store.optimizations.get(run_id)
    if run is None or not store.optimizations.begin(run_id):
        log.warning("run %s is unknown or no longer open; nothing to do", run_id)
        return _already_closed(run_id, run)
    try:
        ctx = _context(run, store)
        gate = threading.BoundedSemaphore(ctx.settings.parallel_targets)
        futures = []
        if ctx.spec.origin:
            futures.append(origin_evaluation.submit(ctx, run_id, *ctx.spec.origin))
        for position, (provider, model) in enumerate(ctx.spec.targets):
            futures.append(optimize_target.submit(ctx, run_id, provider, model, position, gate))
        for future in futures:
            future.wait()
        states = [future.state for future in futures]
    except Exception as exc:
        store.optimizations.finish(run_id, "failed", public_reason(exc, "the optimization flow", log))
        raise
    error = _run_error(ctx, states[1:] if ctx.spec.origin else states)
    status = "failed" if error else "completed"
    store.optimizations.finish(run_id, status, error)
    try:
        publish_scores(store.optimizations.get(run_id))
    except Exception as exc:  # the scores are stored: a missing artifact must not turn a completed run red
        log.warning("could not publish the scores artifact: %s", exc)
    log.info("run %s %s; total cost $%.6f over %d LLM calls", run_id, status, ctx.ledger.total,
             len(ctx.ledger.records))
    summary = {"run_id": run_id, "status": status, "total_cost": ctx.ledger.total, "calls": len(ctx.ledger.records)}
    if error:
        return Failed(message=error, data=summary)  # red in the runs list, as the job is failed
    return summary
