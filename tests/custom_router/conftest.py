"""Router-training tests over HTTP: the real app with a fake flow launcher (docs/architecture.md, rule 8: a fake with the real
interface and a history to assert on, instead of mock.patch)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support.fakes.launcher import FakeLauncher
from tests.support.synthetic import LLM_PROVIDERS, csv_bytes

TRAIN = "/v2/pzn/trainCustomRouter"
SELECT = "/v2/modelRouter/modelSelect"


@pytest.fixture
def launcher(client) -> FakeLauncher:
    fake = FakeLauncher()
    client.app.state.services.router_training.launcher = fake
    return fake


@pytest.fixture
def upload(client, launcher) -> Callable[..., Any]:
    """upload(headers, csv=..., **form fields) -> response. Defaults: a valid 60-row dataset."""

    def post(headers: dict[str, str], csv: bytes | None = None, filename: str = "evals.csv", **fields: Any):
        form = {"language": "english", "llm_providers": LLM_PROVIDERS, "prompt_column": "prompt",
                "maximize": "true"}
        form.update({k: v for k, v in fields.items() if v is not None})
        form = {k: v for k, v in form.items() if v != "<omit>"}
        files = {"dataset_file": (filename, csv if csv is not None else csv_bytes(), "text/csv")}
        return client.post(TRAIN, data=form, files=files, headers=headers)

    return post


