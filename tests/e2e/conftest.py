"""A real `switchboard serve` (Prefect server + flow runner + granian API) on free ports, once per session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.support.service import Service, free_port, start_service  # one home for benchmarks and these tests

if TYPE_CHECKING:
    from tests.support.fakes.openai_server import FakeOpenAI


@pytest.fixture(scope="session")
def fake_llm_server() -> Iterator["FakeOpenAI"]:
    """The in-process OpenAI-compatible server every provider of the served service points at (no network)."""
    from tests.support.fakes.openai_server import FakeOpenAI

    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory, fake_llm_server) -> Iterator[Service]:
    os.environ["SWITCHBOARD_LLM_API_BASE"] = fake_llm_server.base_url  # inherited by serve and its flow runs
    try:
        svc = start_service(tmp_path_factory.mktemp("serve") / "data", free_port(), free_port())
    finally:
        os.environ.pop("SWITCHBOARD_LLM_API_BASE", None)
    try:
        yield svc
    finally:
        svc.stop()
