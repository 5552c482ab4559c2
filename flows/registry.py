"""The deployments the flow runner serves, by name. The API triggers them as '<flow>/<deployment>'."""

from __future__ import annotations

from typing import Any

HOUSEKEEPING = "housekeeping/housekeeping"


def deployments() -> list[Any]:
    from flows.housekeeping import housekeeping

    return [
        housekeeping.to_deployment(name="housekeeping", interval=600,
                                   description="Reconcile jobs with Prefect, compact event logs, checkpoint DuckDB"),
    ]
