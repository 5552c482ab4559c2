"""The analysts' views over a data dir filled by the real flows and HTTP calls, and the lock rules: a notebook reads
while the service runs (through the owner's snapshot) and never keeps the service from opening its file."""

from __future__ import annotations

import json

import duckdb
import httpx
import pytest

from api.cli.main import main
from storage import analytics, owner
from storage.store import LocalStore
from tests.support.api_server import ApiServer


@pytest.fixture(scope="module")
def conn(seeded):
    connection = analytics.connect(seeded.data_dir)
    yield connection
    connection.close()


def one(conn, sql, params=None):
    return conn.execute(sql, params or []).fetchone()


def test_routing_views_hold_every_decision_with_its_candidates(conn, seeded):
    assert one(conn, "SELECT count(*) FROM routing_decisions") == (seeded.decisions,)
    assert one(conn, "SELECT count(*) FROM routing_decisions WHERE router_kind = 'custom'") == (
        seeded.custom_decisions,)
    # The chosen model is one of the eligible ones, and its predicted quality/cost come from the same position.
    assert one(conn, "SELECT bool_and(list_contains(eligible, chosen)), bool_and(chosen_predicted_quality <="
                     " best_predicted_quality), bool_and(chosen_estimated_cost_usd >= cheapest_estimated_cost_usd)"
                     " FROM routing_decisions") == (True, True, True)
    assert one(conn, "SELECT count(*), sum(is_chosen::INT) FROM routing_candidates") == (
        one(conn, "SELECT sum(n_eligible) FROM routing_decisions")[0], seeded.decisions)
    # Trade-off 10 picks the cheapest eligible model.
    assert one(conn, "SELECT bool_and(chosen_estimated_cost_usd = cheapest_estimated_cost_usd) FROM"
                     " routing_decisions WHERE cost_quality_tradeoff = 10") == (True,)
    assert one(conn, "SELECT sum(decisions), count(DISTINCT day) FROM routing_daily") == (seeded.decisions, 1)
    assert {r[0] for r in conn.execute("SELECT organization_id FROM routing_decisions").fetchall()} == {
        "alice", "acme"}


def test_feedback_views_join_the_decision(conn, seeded):
    rows = conn.execute("SELECT model, accuracy, router_kind, after_decision FROM feedback"
                        " ORDER BY created_at").fetchall()
    assert [(m, a) for m, a, _, _ in rows] == seeded.feedback
    assert all(kind in ("custom", "default") and delay.total_seconds() >= 0 for _, _, kind, delay in rows)
    reports, rate = one(conn, "SELECT sum(reports), sum(accuracy_rate * reports) / sum(reports) FROM feedback_daily")
    assert reports == len(seeded.feedback) and rate == pytest.approx(
        sum(a for _, a in seeded.feedback) / len(seeded.feedback))


def test_usage_and_cost_add_up_to_what_the_run_recorded(conn, seeded):
    calls, cost, kinds = one(conn, "SELECT count(*), sum(total_cost), list(DISTINCT run_kind) FROM llm_usage")
    run_cost, run_calls = one(conn, "SELECT cost_usd, llm_calls FROM optimization_runs WHERE run_id = ?",
                              [seeded.optimization_run_id])
    assert calls == run_calls > 0 and cost == pytest.approx(run_cost) and kinds == ["optimize-prompt"]
    by_task = dict(conn.execute("SELECT task_type, sum(calls) FROM llm_cost GROUP BY 1").fetchall())
    assert set(by_task) == {"pre-optimization evaluation", "optimization", "post-optimization evaluation"}
    assert one(conn, "SELECT sum(cost_usd), count(DISTINCT organization_id) FROM llm_cost") == (
        pytest.approx(run_cost), 1)
    # A run's spend by role and task type: every role the run used, shares adding up to the whole.
    parts = conn.execute("SELECT role, task_type, calls, cost_usd, share_of_run_cost, mean_latency_s"
                         " FROM run_spend_by_role WHERE run_id = ?", [seeded.optimization_run_id]).fetchall()
    assert {role for role, *_ in parts} == {"target", "origin", "judge", "reflection"}
    assert {task for role, task, *_ in parts if role == "reflection"} == {"optimization"}
    assert sum(calls for _, _, calls, *_ in parts) == run_calls
    assert sum(cost for *_, cost, _, _ in parts) == pytest.approx(run_cost)
    assert sum(share for *_, share, _ in parts) == pytest.approx(1.0)
    assert all(latency >= 0 for *_, latency in parts)
    # Which prompt each target returned, and by how much the optimized one differed (the never-worse rule).
    returned = conn.execute("SELECT prompt_returned, optimized_minus_original > 0 FROM optimization_results"
                            " WHERE run_id = ? AND role = 'target'", [seeded.optimization_run_id]).fetchall()
    assert returned == [("optimized", True)]


def test_router_training_views_carry_the_evaluation(conn, seeded):
    run = one(conn, "SELECT status, is_live, rows, n_models, router_quality_t0, best_single_quality,"
                    " oracle_quality, flow_run_id IS NULL FROM router_training_runs WHERE job_id = ?",
              [seeded.training_job_id])
    assert run == ("completed", True, 60, 2, 1.0, 0.5, 1.0, True)  # the flow was called directly: no flow run id
    kinds = conn.execute("SELECT kind, count(*) FROM router_evaluation WHERE job_id = ? GROUP BY 1 ORDER BY 1",
                         [seeded.training_job_id]).fetchall()
    assert kinds == [("oracle", 1), ("router", 11), ("single model", 2)]
    # The view follows the JSON the flow recorded, row for row.
    metrics = json.loads(one(conn, "SELECT metrics FROM router_training_runs")[0])
    curve = conn.execute("SELECT name, quality, cost_per_1k_requests_usd FROM router_evaluation WHERE job_id = ?"
                         " ORDER BY position", [seeded.training_job_id]).fetchall()
    assert curve == [(r["name"], r["quality"], r["cost_per_1k"]) for r in metrics["table"]]


def test_optimization_views_show_before_and_after(conn, seeded):
    rows = conn.execute("SELECT role, result_status, pre_score, post_score, improvement, origin_score"
                        " FROM optimization_results WHERE run_id = ? ORDER BY position",
                        [seeded.optimization_run_id]).fetchall()
    (origin_role, _, origin_pre, _, _, _), (role, status, pre, post, gain, baseline) = rows
    assert (origin_role, role, status) == ("origin", "target", "completed")
    assert post == 1.0 and pre < post and gain == pytest.approx(post - pre) and baseline == origin_pre
    assert one(conn, "SELECT status, targets, targets_completed, mean_post_score FROM optimization_runs") == (
        "completed", 1, 1, 1.0)


def test_views_bind_on_an_empty_data_dir(tmp_path):
    conn = analytics.connect(tmp_path / "nothing-yet")
    try:
        for view in analytics.view_names():
            assert one(conn, f"SELECT count(*) FROM {view}") == (0,), view
    finally:
        conn.close()
    assert not (tmp_path / "nothing-yet").exists()  # reading created nothing


def test_a_reader_never_holds_the_file(tmp_path):
    """No owner running: the catalogue is read from the file and detached, so the service can start (open the
    file for writing) while a notebook keeps its connection."""
    data = tmp_path / "data"
    LocalStore(data / "switchboard.duckdb").close()
    reader = analytics.connect(data)
    writer = LocalStore(data / "switchboard.duckdb")  # would raise DatabaseLocked if the reader held the file
    try:
        writer.accounts.issue_key("carol")
        assert one(reader, "SELECT count(*) FROM store.users") == (0,)  # a snapshot: reconnect to see more
    finally:
        reader.close()
        writer.close()
    again = analytics.connect(data)
    assert one(again, "SELECT user_id FROM store.users") == ("carol",)
    assert one(again, "SELECT count(*) FROM store.api_keys") == (0,)  # key hashes are never copied
    again.close()


def test_reading_while_the_service_runs(tmp_path):
    """The API process holds the file for writing, so even a read-only open fails; analytics gets the catalogue
    from the owner's snapshot instead, removes it, and the service goes on writing."""
    server = ApiServer(tmp_path / "data")
    try:
        with pytest.raises(duckdb.IOException, match="lock"):
            duckdb.connect(str(server.db_path), read_only=True)
        remote = owner.open_store(server.db_path, server.run_dir)
        key = remote.accounts.issue_key("dana", organization_id="acme").key
        remote.close()
        headers = {"Authorization": f"Bearer {key}"}
        create = f"{server.url}/v2/preferences/userPreferenceCreate"
        first = httpx.post(create, json={"name": "first"}, headers=headers).json()["preference_id"]

        conn = analytics.connect(server.data_dir)
        assert one(conn, "SELECT preference_id, name FROM store.preferences") == (first, "first")
        assert one(conn, "SELECT organization_id FROM store.users") == ("acme",)
        assert not [p for p in (server.run_dir / "analytics").iterdir()]  # the snapshot was loaded and removed
        report = tmp_path / "report.html"  # `switchboard report` reads the same way
        assert main(["report", "--out", str(report), "--data-dir", str(server.data_dir)]) == 0
        assert report.read_text(encoding="utf-8").count("data:image/png;base64,") == 9
        assert httpx.post(create, json={"name": "second"}, headers=headers).status_code == 200
        assert one(conn, "SELECT count(*) FROM store.preferences") == (1,)  # a snapshot: reconnect for more
        conn.close()
        assert one(analytics.connect(server.data_dir), "SELECT count(*) FROM store.preferences") == (2,)
    finally:
        server.kill()
