"""The real-model harness's shipped tasks (benchmarks/goldens/prompt_optimization/) are valid optimization requests:
the real app accepts each as the harness sends it (custom target, judge and reflection entries)."""

from __future__ import annotations

import pytest

from benchmarks.prompt_optimization_real import TASKS, Models, load_task, request_body
from tests.support.optimization import OPTIMIZE

pytestmark = pytest.mark.usefixtures("providers_reachable")


@pytest.mark.parametrize("name", TASKS)
def test_each_shipped_task_is_accepted(client, launcher, optimizer_headers, name):
    task, models = load_task(name), Models("smollm2-135m", "judge-7b", "writer-7b")
    assert len(task["train_goldens"]) >= 3 and task["test_goldens"]
    r = client.post(OPTIMIZE, headers=optimizer_headers(), json=request_body(task, models))
    assert r.status_code == 200, r.text
    assert launcher.triggered
