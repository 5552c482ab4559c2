"""Test-wide set-up. The environment is fixed before any project module is imported (docs/architecture.md, rule 7)."""

from __future__ import annotations

import os
import tempfile

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["SWITCHBOARD_DATA_DIR"] = tempfile.mkdtemp(prefix="switchboard-test-")
os.environ.pop("PREFECT_API_URL", None)
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from litestar.testing import TestClient  # noqa: E402

from api.settings import reset_settings  # noqa: E402
from storage.records import IssuedKey  # noqa: E402


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh SWITCHBOARD_DATA_DIR for one test."""
    monkeypatch.setenv("SWITCHBOARD_DATA_DIR", str(tmp_path / "data"))
    reset_settings()
    yield tmp_path / "data"
    reset_settings()


@pytest.fixture
def providers_reachable(monkeypatch: pytest.MonkeyPatch) -> str:
    """Every LLM provider pointed at a loopback base URL (SWITCHBOARD_LLM_API_BASE), so that POST /v2/prompt/optimize
    accepts runs (it refuses models with neither a base URL nor a key: api/prompt_optimization/credentials.py). For
    tests whose flows never run (fake launchers): nothing is called there. Request it before `client`, which reads
    the settings when the app starts."""
    base = "http://127.0.0.1:9/v1"  # the discard port: never called
    monkeypatch.setenv("SWITCHBOARD_LLM_API_BASE", base)
    reset_settings()
    return base


@pytest.fixture
def client(data_dir: Path) -> Iterator[TestClient]:
    """The real ASGI app (real DuckDB in the temp data dir) behind Litestar's httpx test client."""
    from api.app import create_app

    with TestClient(create_app(publish_owner=False), raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.fixture
def issue_key(client: TestClient) -> Callable[..., IssuedKey]:
    """Issue a key through the app's own store: issue_key("bob", tier="starter") -> IssuedKey."""

    def issue(user_id: str = "alice", **attributes: object) -> IssuedKey:
        return client.app.state.services.store.accounts.issue_key(user_id, **attributes)

    return issue


@pytest.fixture
def auth(issue_key: Callable[..., IssuedKey]) -> Callable[..., dict[str, str]]:
    """auth("bob") -> headers carrying a fresh key for user bob."""

    def headers(user_id: str = "alice", **attributes: object) -> dict[str, str]:
        return {"Authorization": f"Bearer {issue_key(user_id, **attributes).key}"}

    return headers


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """Prefect's test harness: a throw-away Prefect server (SQLite), started once per session because starting it
    takes several seconds. Flow tests (tests/flows) and the analytics seed (tests/analytics) share it."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield
