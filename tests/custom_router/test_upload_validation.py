"""POST /v2/pzn/trainCustomRouter: every refusal happens before anything is queued, and says what is wrong."""

from __future__ import annotations

import json

import polars as pl
import pytest

from tests.support.envelopes import error
from tests.support.synthetic import csv_bytes

HEADER = b"prompt,openai/gpt-4o/score,openai/gpt-4o/response,openai/gpt-4o-mini/score,openai/gpt-4o-mini/response\n"


def rows(n: int, score: str = "1") -> bytes:
    return b"".join(f'"question number {i}?",{score},a,0,b\n'.encode() for i in range(n))


def test_valid_upload_creates_a_preference_stores_parquet_and_queues_the_flow(client, auth, upload, launcher):
    h = auth()
    r = upload(h, csv=csv_bytes(40, extra={"domain": "demo"}))
    assert r.status_code == 200, r.text
    pid = r.json()["preference_id"]
    [(deployment, params)] = launcher.triggered
    assert deployment == "train-custom-router/train-custom-router"
    assert params["preference_id"] == pid and params["language"] == "english" and params["maximize"] is True
    assert [m["key"] for m in params["models"]] == ["openai/gpt-4o", "openai/gpt-4o-mini"]
    frame = pl.read_parquet(params["dataset_path"])  # the bytes never travel to the flow, only this path
    assert frame.height == 40 and "domain" not in frame.columns  # extra non-model columns are ignored
    assert frame["openai/gpt-4o/score"].dtype == pl.Float64
    store = client.app.state.services.store
    job = store.routers.state(pid).job
    assert job.status == "queued" and job.flow_run_id == "flow-run-1"
    assert store.preferences.get("alice", pid) is not None


def test_other_prompt_column_name_and_custom_models(client, auth, upload, launcher):
    providers = json.dumps([{"provider": "openai", "model": "gpt-4o"},
                            {"provider": "custom", "model": "my-model", "is_custom": True, "input_price": 0.1,
                             "output_price": 0.2, "context_length": 8192, "latency": 0.5}])
    csv = (b"question,openai/gpt-4o/score,openai/gpt-4o/response,custom/my-model/score,custom/my-model/response\n"
           + rows(30))
    r = upload(auth(), csv=csv, llm_providers=providers, prompt_column="question", maximize="false")
    assert r.status_code == 200, r.text
    params = launcher.triggered[0][1]
    assert params["maximize"] is False
    assert params["models"][1]["is_custom"] and params["models"][1]["input_price"] == 0.1


@pytest.mark.parametrize("csv, prompt_column, code, says", [
    (b"", "prompt", "EMPTY_DATASET", "empty"),
    (HEADER + rows(30) + b'"unterminated,1,a,0,b\n', "prompt", "INVALID_CSV", "not properly escaped"),
    (HEADER + rows(30) + b"x,1,a,0,b,extra,fields\n", "prompt", "INVALID_CSV", "more fields"),
    (HEADER.replace(b"prompt", b"text") + rows(30), "prompt", "MISSING_COLUMN", "'prompt'"),
    (HEADER.replace(b",openai/gpt-4o-mini/response", b"") + b"".join(
        f'"q{i}",1,a,0\n'.encode() for i in range(30)), "prompt", "MISSING_MODEL_COLUMN",
     "'openai/gpt-4o-mini/response'"),
    (HEADER.rstrip(b"\n") + b",anthropic/claude/score\n" + b"".join(
        f'"q{i}",1,a,0,b,1\n'.encode() for i in range(30)), "prompt", "UNEXPECTED_MODEL_COLUMN",
     "'anthropic/claude/score'"),
    (HEADER.rstrip(b"\n") + b",prompt\n" + rows(30), "prompt", "DUPLICATE_COLUMN", "'prompt'"),
    (HEADER + rows(30) + b'"q",high,a,0,b\n', "prompt", "INVALID_SCORE", "row 31"),
    (HEADER + rows(30) + b'"q",inf,a,0,b\n', "prompt", "INVALID_SCORE", "'openai/gpt-4o/score'"),
    (HEADER + rows(12) + b'"q",,a,0,b\n' + rows(20), "prompt", "MISSING_SCORE", "row 13"),
    (HEADER + b"".join(f'"q{i}",{"1e308" if i % 2 else "-1e308"},a,0,b\n'.encode() for i in range(30)), "prompt",
     "SCORE_OUT_OF_RANGE", "'openai/gpt-4o/score' holds '-1e308' on row 1"),
    (HEADER + rows(7) + b'"q",0.5,a,-2e9,b\n' + rows(20), "prompt", "SCORE_OUT_OF_RANGE",
     "'openai/gpt-4o-mini/score' holds '-2e9' on row 8, outside the accepted range -1e9 to 1e9"),
    (HEADER + rows(5) + b'"  ",1,a,0,b\n' + rows(25), "prompt", "EMPTY_PROMPT", "row 6"),
    (HEADER + rows(24) + b",,,,\n", "prompt", "INSUFFICIENT_SAMPLES", "24 usable rows"),
    (HEADER + rows(10_001), "prompt", "TOO_MANY_ROWS", "10,001 rows"),
    (HEADER + rows(30) + "\"caf\xe9\",1,a,0,b\n".encode("latin-1"), "prompt", "INVALID_ENCODING", "row 31"),
])
def test_invalid_datasets_are_refused_with_the_column_and_row(client, auth, upload, launcher, csv, prompt_column,
                                                               code, says):
    body = error(upload(auth(), csv=csv, prompt_column=prompt_column), 400, code)
    assert says in body["message"], body["message"]
    assert body["type"] == "validation_error"
    assert launcher.triggered == []
    assert client.app.state.services.store.preferences.for_user("alice") == []  # nothing created


def test_scores_at_the_edges_of_the_range_are_accepted(auth, upload, launcher):
    edges = HEADER + b"".join(f'"q{i}",{"1e9" if i % 2 else "-1e9"},a,{i * 0.01},b\n'.encode() for i in range(30))
    r = upload(auth(), csv=edges)
    assert r.status_code == 200, r.text
    assert len(launcher.triggered) == 1


def test_utf8_bom_and_blank_lines_are_fine(auth, upload):
    assert upload(auth(), csv=b"\xef\xbb\xbf" + HEADER + rows(15) + b"\n\n" + rows(15)).status_code == 200


@pytest.mark.parametrize("fields, status, code", [
    ({"language": "klingon"}, 400, "INVALID_LANGUAGE"),
    ({"llm_providers": "not json"}, 400, "INVALID_LLM_PROVIDERS"),
    ({"llm_providers": json.dumps([{"provider": "openai", "model": "gpt-4o"}])}, 400, "TOO_FEW_MODELS"),
    ({"llm_providers": json.dumps([{"provider": "openai", "model": "gpt-4o"},
                                   {"provider": "nobody", "model": "nothing"}])}, 400, "UNSUPPORTED_MODEL"),
    ({"llm_providers": json.dumps([{"provider": "openai", "model": "gpt-4o"},
                                   {"provider": "custom", "model": "x", "is_custom": True}])}, 400,
     "INVALID_CUSTOM_MODEL"),
    ({"preference_id": "00000000-0000-0000-0000-000000000000"}, 404, "PREFERENCE_NOT_FOUND"),
])
def test_invalid_fields(auth, upload, launcher, fields, status, code):
    error(upload(auth(), **fields), status, code)
    assert launcher.triggered == []


def test_missing_fields_and_bad_booleans_are_422(auth, upload):
    h = auth()
    assert upload(h, prompt_column="<omit>").status_code == 422
    assert upload(h, maximize="<omit>").status_code == 422
    assert upload(h, maximize="perhaps").status_code == 422


def test_no_key_is_401(upload):
    error(upload({}), 401, "UNAUTHORIZED")


def test_another_users_preference_is_404(client, auth, upload):
    theirs = client.post("/v2/preferences/userPreferenceCreate", json={}, headers=auth("bob")).json()
    error(upload(auth(), preference_id=theirs["preference_id"]), 404, "PREFERENCE_NOT_FOUND")


def test_over_the_byte_limit_is_413(client, auth, upload, launcher, monkeypatch):
    limit = client.app.state.services.settings.upload_max_bytes
    big = HEADER + rows(30) + b"".join(f'"{"x" * 900} {i}",1,a,0,b\n'.encode() for i in range(limit // 900))
    body = error(upload(auth(), csv=big), 413, "PAYLOAD_TOO_LARGE")
    assert f"{limit:,}" in body["message"]
    assert launcher.triggered == []


def test_parsing_past_the_time_limit_is_408(client, auth, upload, launcher):
    import dataclasses

    services = client.app.state.services
    services.router_training.settings = dataclasses.replace(services.settings, upload_parse_seconds=0.0005)
    error(upload(auth(), csv=HEADER + rows(9000)), 408, "DATASET_PARSE_TIMEOUT")
    assert launcher.triggered == []


def test_prefect_unreachable_fails_the_job_and_says_so(client, auth, upload, launcher):
    launcher.fail_with = ConnectionError("connection refused")
    body = error(upload(auth()), 503, "FLOW_UNAVAILABLE")
    # What kind of failure and what to do; the exception's own text (internal addresses) stays in the log.
    assert "Prefect server is not reachable (ConnectionError)" in body["message"]
    assert "try again" in body["message"] and "connection refused" not in body["message"]
    [pref] = client.app.state.services.store.preferences.for_user("alice")
    assert client.app.state.services.store.routers.state(pref.preference_id).job.status == "failed"


def test_openapi_documents_the_multipart_form(client):
    doc = client.get("/schema/openapi.json").json()
    op = doc["paths"]["/v2/pzn/trainCustomRouter"]["post"]
    assert op["operationId"] == "trainCustomRouter"
    assert "multipart/form-data" in op["requestBody"]["content"]
    assert {"400", "401", "404", "408", "409", "413", "422"} <= set(op["responses"])
