"""A custom-router training job prepared the way the upload controller prepares one, for flow tests that run the
flow in-process."""

from __future__ import annotations

import json

from api.catalogue import load_catalogue
from api.custom_router import validation
from api.custom_router.submission import resolve_models
from api.settings import get_settings
from storage.store import LocalStore
from tests.support.synthetic import LLM_PROVIDERS, csv_bytes


def prepare(rows: int = 60, language: str = "english", data: bytes | None = None,
            providers: str = LLM_PROVIDERS) -> tuple[dict, str]:
    """What the upload controller does: validate, write Parquet, create the preference and the job. By default the
    two-model table of tests/support/synthetic.py; `data` and `providers` give another."""
    settings = get_settings()
    models = resolve_models(providers, load_catalogue())
    dataset = validation.validate(data if data is not None else csv_bytes(rows), "prompt",
                                  [m["column_prefix"] for m in models])
    path = settings.layout.uploads_dir / "d.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    dataset.frame.write_parquet(path)
    store = LocalStore(settings.db_path)
    try:
        key = store.accounts.issue_key("alice").key
        pref = store.preferences.create("alice", "custom")
        start = store.routers.start_training("alice", pref.preference_id, str(path), language, True,
                                            json.dumps(models), dataset.rows)
    finally:
        store.close()  # the flow opens the file itself (no owner process in this test)
    params = {"job_id": start.job.job_id, "preference_id": pref.preference_id, "dataset_path": str(path),
              "language": language, "maximize": True, "models": models}
    return params, key
