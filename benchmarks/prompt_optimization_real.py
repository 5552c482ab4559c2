"""Real-model harness for prompt optimization: a small suite of tasks (classification, extraction, short-answer QA;
goldens shipped in benchmarks/goldens/prompt_optimization/) run through the service's API against any
OpenAI-compatible servers, one for the target model and one for the judge and reflection models. Prints, per task,
the score on the test goldens before and after (with the never-worse verdict and the difference's 95 % interval),
the cost by role and the wall time.

    # start a service of its own (a temporary data dir), the target on a local server, judge/reflection elsewhere:
    .venv/bin/python -m benchmarks.prompt_optimization_real \\
        --target-base-url http://127.0.0.1:8080/v1 --target-model smollm2-135m \\
        --judge-base-url https://api.openai.com/v1 --judge-key-env OPENAI_API_KEY \\
        --judge-model gpt-4o-mini --reflection-model gpt-4o --judge-prices 0.15,0.6 --reflection-prices 2.5,10

    # or against a running service whose settings already point the roles somewhere:
    .venv/bin/python -m benchmarks.prompt_optimization_real --api-url http://127.0.0.1:8000 --api-key-env SB_KEY ...

Models are sent as custom entries (provider `harness`, the model's own name, the prices given: 0 by default), so
nothing has to pose as a catalogue model. Keys are read from the environment variables named (never from the
command line). A service the harness starts gets SWITCHBOARD_OPTIMIZE_{TARGET,ORIGIN}_API_BASE = the target URL
and SWITCHBOARD_OPTIMIZE_{JUDGE,REFLECTION}_API_BASE = the judge URL, with those keys. tests/e2e runs it against
the suite's fake model (`run_suite`), so it stays working.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

GOLDENS = Path(__file__).resolve().parent / "goldens" / "prompt_optimization"
TASKS = ("classification", "extraction", "qa")
PROVIDER = "harness"  # the custom entries' provider name: SWITCHBOARD_HARNESS_API_BASE would also reach them


def load_task(name: str) -> dict[str, Any]:
    return json.loads((GOLDENS / f"{name}.json").read_text())


def entry(model: str, prices: tuple[float, float], context_length: int) -> dict[str, Any]:
    return {"provider": PROVIDER, "model": model, "is_custom": True, "input_price": prices[0],
            "output_price": prices[1], "context_length": context_length}


@dataclass
class Models:
    target: str
    judge: str
    reflection: str
    target_prices: tuple[float, float] = (0.0, 0.0)
    judge_prices: tuple[float, float] = (0.0, 0.0)
    reflection_prices: tuple[float, float] = (0.0, 0.0)
    context_length: int = 8192


@dataclass
class TaskResult:
    task: str
    status: str
    before: float | None
    after: float | None
    verdict: dict[str, Any]
    wall_s: float
    cost_by_role: dict[str, float] = field(default_factory=dict)
    calls_by_role: dict[str, int] = field(default_factory=dict)
    error: str | None = None


def request_body(task: dict[str, Any], models: Models, max_train: int | None = None,
                 max_test: int | None = None) -> dict[str, Any]:
    """POST /v2/prompt/optimize's body for a task: the models as custom entries, the task's own metric."""
    return {"system_prompt": task["system_prompt"], "template": task["template"], "fields": task["fields"],
            "train_goldens": task["train_goldens"][:max_train], "test_goldens": task["test_goldens"][:max_test],
            "evaluation_metric": task["evaluation_metric"], "prototype_mode": True,
            "target_models": [entry(models.target, models.target_prices, models.context_length)],
            "judge_model": entry(models.judge, models.judge_prices, models.context_length),
            "reflection_model": entry(models.reflection, models.reflection_prices, models.context_length)}


def run_task(client: httpx.Client, name: str, models: Models, max_train: int | None, max_test: int | None,
             deadline_s: float) -> TaskResult:
    started = time.monotonic()
    r = client.post("/v2/prompt/optimize", json=request_body(load_task(name), models, max_train, max_test))
    if r.status_code != 200:
        return TaskResult(name, "refused", None, None, {}, 0.0, error=r.text)
    run_id = r.json()["optimization_run_id"]
    while (status := client.get(f"/v2/prompt/optimizeStatus/{run_id}").json())["status"] not in (
            "completed", "failed", "cancelled"):
        if time.monotonic() - started > deadline_s:
            return TaskResult(name, f"still {status['status']} after {deadline_s:.0f} s", None, None, {},
                              time.monotonic() - started)
        time.sleep(0.5)
    wall = time.monotonic() - started
    results = client.get(f"/v2/prompt/optimizeResults/{run_id}").json()
    costs = client.get(f"/v2/prompt/optimize/{run_id}/costs").json()
    cost, calls = defaultdict(float), defaultdict(int)
    for record in costs["usage_records"]:
        cost[record["role"]] += record["total_cost"]
        calls[record["role"]] += 1
    [target] = results["target_models"]
    verdict = (target.get("post_optimization_evals") or {}).get("never_worse", {})
    return TaskResult(name, status["status"], target["pre_optimization_score"], target["post_optimization_score"],
                      verdict, wall, dict(cost), dict(calls), error=target.get("error") or status.get("error"))


def run_suite(api_url: str, api_key: str, models: Models, tasks: tuple[str, ...] = TASKS,
              max_train: int | None = None, max_test: int | None = None,
              deadline_s: float = 3600.0) -> list[TaskResult]:
    """Each task as one optimization run, one after the other (one open run per user)."""
    with httpx.Client(base_url=api_url, headers={"Authorization": f"Bearer {api_key}"}, timeout=60) as client:
        return [run_task(client, name, models, max_train, max_test, deadline_s) for name in tasks]


def report(results: list[TaskResult], total_wall_s: float) -> str:
    lines = [f"{'task':<16}{'status':<12}{'before':>8}{'after':>8}  returned   difference [95% CI]   wall s"]
    for r in results:
        ci = r.verdict.get("difference_ci95") or [float("nan")] * 2
        lines.append(f"{r.task:<16}{r.status:<12}{_num(r.before):>8}{_num(r.after):>8}  "
                     f"{r.verdict.get('returned', '-'):<10} {_num(r.verdict.get('difference')):>7} "
                     f"[{_num(ci[0])}, {_num(ci[1])}]  {r.wall_s:7.1f}")
        if r.error:
            lines.append(f"    error: {r.error[:300]}")
    roles = sorted({role for r in results for role in r.cost_by_role})
    lines.append("cost by role (USD, calls): " + ", ".join(
        f"{role} {sum(r.cost_by_role.get(role, 0.0) for r in results):.6f} "
        f"({sum(r.calls_by_role.get(role, 0) for r in results)})" for role in roles))
    lines.append(f"total wall time: {total_wall_s:.1f} s")
    return "\n".join(lines)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _prices(text: str) -> tuple[float, float]:
    low, _, high = text.partition(",")
    return float(low), float(high or low)


def _service_env(args: argparse.Namespace) -> dict[str, str]:
    env = {"SWITCHBOARD_OPTIMIZE_TARGET_API_BASE": args.target_base_url,
           "SWITCHBOARD_OPTIMIZE_ORIGIN_API_BASE": args.target_base_url,
           "SWITCHBOARD_OPTIMIZE_JUDGE_API_BASE": args.judge_base_url,
           "SWITCHBOARD_OPTIMIZE_REFLECTION_API_BASE": args.judge_base_url}
    for role, variable in (("TARGET", args.target_key_env), ("ORIGIN", args.target_key_env),
                           ("JUDGE", args.judge_key_env), ("REFLECTION", args.judge_key_env)):
        if variable and os.environ.get(variable):
            env[f"SWITCHBOARD_OPTIMIZE_{role}_API_KEY"] = os.environ[variable]
    for role in ("TARGET", "ORIGIN", "JUDGE", "REFLECTION"):
        env[f"SWITCHBOARD_OPTIMIZE_{role}_TIMEOUT_S"] = str(args.timeout_s)
    return env


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target-model", required=True)
    parser.add_argument("--judge-model", required=True)
    parser.add_argument("--reflection-model", help="default: the judge model")
    parser.add_argument("--target-base-url", help="OpenAI-compatible base URL of the target (starts a service)")
    parser.add_argument("--judge-base-url", help="OpenAI-compatible base URL of the judge and reflection models")
    parser.add_argument("--target-key-env", help="environment variable holding the target server's key")
    parser.add_argument("--judge-key-env", help="environment variable holding the judge server's key")
    parser.add_argument("--api-url", help="a running service instead of starting one")
    parser.add_argument("--api-key-env", default="SWITCHBOARD_API_KEY", help="variable holding its API key")
    parser.add_argument("--target-prices", type=_prices, default=(0.0, 0.0), help="USD per million in,out")
    parser.add_argument("--judge-prices", type=_prices, default=(0.0, 0.0))
    parser.add_argument("--reflection-prices", type=_prices, default=(0.0, 0.0))
    parser.add_argument("--context-length", type=int, default=8192)
    parser.add_argument("--timeout-s", type=float, default=600.0, help="per LLM call, every role (CPU models)")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--max-train", type=int)
    parser.add_argument("--max-test", type=int)
    args = parser.parse_args(argv)
    models = Models(args.target_model, args.judge_model, args.reflection_model or args.judge_model,
                    args.target_prices, args.judge_prices, args.reflection_prices, args.context_length)
    tasks = tuple(t for t in args.tasks.split(",") if t)
    started, service = time.monotonic(), None
    if args.api_url:
        api_url, api_key = args.api_url, os.environ.get(args.api_key_env, "")
    else:
        if not (args.target_base_url and args.judge_base_url):
            sys.exit("give --target-base-url and --judge-base-url (a service is started), or --api-url")
        # lazy: the service launcher is the test suite's harness, needed only when this starts a service
        from tests.support.service import free_port, start_service

        os.environ.update(_service_env(args))  # inherited by `switchboard serve` and its flow runs
        os.environ.setdefault("PREFECT_RUNNER_POLL_FREQUENCY", "1")
        service = start_service(Path(tempfile.mkdtemp(prefix="switchboard-po-real-")) / "data", free_port(),
                                free_port())
        api_url, api_key = service.api_url, service.admin_key or ""
        print(f"service up in {time.monotonic() - started:.1f} s ({api_url})")
    try:
        results = run_suite(api_url, api_key, models, tasks, args.max_train, args.max_test)
    finally:
        if service is not None:
            service.stop()
    print(f"target {args.target_model}; judge {models.judge}; reflection {models.reflection}")
    print(report(results, time.monotonic() - started))


if __name__ == "__main__":
    main()
