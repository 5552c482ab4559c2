"""`switchboard models ...` (api/cli/models.py): the API's refusals for onboarding, listing and publishing runs."""

from __future__ import annotations

from api.model_figures.measured import encode, measured
from tests.test_cli import cli, open_store  # noqa: F401  (the fixture)


def test_models_onboard_refuses_as_the_api_does_and_publish_serves_everyone(cli):  # noqa: F811
    known = cli("models", "onboard", "openai", "gpt-4o", "--organization", "acme", expect=1)
    assert "already has figures" in known.stderr
    away = cli("models", "onboard", "nowhere", "m-1", "--organization", "acme", "--input-price", "1",
               "--output-price", "1", expect=1)
    assert "SWITCHBOARD_NOWHERE_API_BASE" in away.stderr and "Traceback" not in away.stderr

    store = open_store(cli.data_dir)
    try:
        run = store.model_figures.start_onboarding("acme", "alice", "hosted", "m-2", 0.5, 0.5).run
        store.model_figures.begin_onboarding(run.run_id)
        store.model_figures.finish_onboarding(run.run_id, "completed", 30, 0.01,
                                              encode([measured("CRUX", "code", 7, 10)]))
    finally:
        store.close()
    listed = cli("models", "onboarded", "--organization", "acme").stdout
    assert run.run_id in listed and "hosted/m-2" in listed and "completed" in listed and "PUBLISHED" not in listed
    assert "serves every organization" in cli("models", "publish", run.run_id).stdout
    assert "PUBLISHED" in cli("models", "onboarded").stdout
    assert "acme only" in cli("models", "publish", run.run_id, "--withdraw").stdout
    assert "no completed onboarding run" in cli("models", "publish", "no-such-run", expect=1).stderr
