"""Flow tests run under Prefect's test harness: a throw-away Prefect server (SQLite) started once per session,
because starting it takes several seconds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield
