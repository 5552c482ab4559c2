"""Every flow counts its runs by final state (switchboard_flow_runs_total, api/observability/metrics.py): the hooks
below run where Prefect runs them (the flow run's own process when it completes or fails, the runner when a run
crashes or is cancelled). Under `serve` both write to run/metrics/, which the API's GET /metrics adds up; on a work
pool's workers, which share no such folder with the API, the counts stay in the worker's process."""

from __future__ import annotations

from typing import Any


def count_final_state(flow: Any, flow_run: Any, state: Any) -> None:
    # lazy: prometheus_client loads only when a run ends, never when the runner imports every flow
    from api.observability.metrics import FLOW_RUNS

    FLOW_RUNS.labels(flow.name, state.type.value.lower()).inc()


FINAL_STATE_HOOKS: dict[str, Any] = {"on_completion": [count_final_state], "on_failure": [count_final_state],
                                     "on_crashed": [count_final_state], "on_cancellation": [count_final_state]}
