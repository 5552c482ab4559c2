"""A flow launcher with the real interface (trigger by deployment name, cancel a flow run) and a history to
assert on, so HTTP tests never need Prefect (docs/architecture.md, rule 8: fakes over mock.patch)."""

from __future__ import annotations

from typing import Any


class FakeLauncher:
    def __init__(self) -> None:
        self.triggered: list[tuple[str, dict[str, Any]]] = []
        self.cancelled: list[str] = []
        self.fail_with: Exception | None = None  # set it to make the next trigger fail (Prefect unreachable)

    async def trigger(self, deployment: str, parameters: dict[str, Any]) -> str:
        if self.fail_with is not None:
            raise self.fail_with
        self.triggered.append((deployment, parameters))
        return f"flow-run-{len(self.triggered)}"

    async def cancel(self, flow_run_id: str) -> None:
        self.cancelled.append(flow_run_id)
