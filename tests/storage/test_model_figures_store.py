"""Figure sets and onboarding runs (storage/repositories/model_figures.py) on both engines: the newest set serves,
one open or completed run per organization and model, a failed one retried beside its record, every change
notified on one subject."""

from __future__ import annotations

from storage.model_figure_records import MODEL_FIGURES_SUBJECT


def test_figure_sets_and_onboarding_runs(store):
    heard: list[str] = []
    store.subscribe(heard.append)
    figures = store.model_figures
    assert figures.live_figure_set() is None
    first = figures.store_figure_set("https://example.org/figures.csv", "provider,model\n", 1)
    second = figures.store_figure_set("/srv/figures.csv", "provider,model,benchmark\n", 2)
    assert figures.live_figure_set().set_id == second.set_id != first.set_id
    assert figures.live_figure_set().content == "provider,model,benchmark\n"

    started = figures.start_onboarding("acme", "alice", "hosted", "m-1", 0.2, 0.6)
    assert started.created and started.run.status == "queued" and started.run.input_price == 0.2
    again = figures.start_onboarding("acme", "bob", "hosted", "m-1", 0.2, 0.6)
    assert not again.created and again.run.run_id == started.run.run_id
    other = figures.start_onboarding("globex", "carol", "hosted", "m-1", 0.2, 0.6)
    assert other.created and other.run.run_id != started.run.run_id
    run_id = started.run.run_id
    assert figures.set_onboarding_flow_run(run_id, "flow-1").flow_run_id == "flow-1"
    assert figures.begin_onboarding(run_id) and not figures.begin_onboarding(run_id)
    assert figures.publish_onboarding(run_id).published is False  # only completed runs publish
    done = figures.finish_onboarding(run_id, "completed", 120, 0.04, '[{"benchmark": "CRUX"}]')
    assert (done.status, done.calls, done.cost_usd, done.figures) == ("completed", 120, 0.04, '[{"benchmark": "CRUX"}]')
    assert figures.finish_onboarding(run_id, "failed", 0, 0.0, None, "late") is None  # a final run stays final
    assert figures.publish_onboarding(run_id).published is True
    assert figures.publish_onboarding(run_id, published=False).published is False

    failed = other.run.run_id
    figures.finish_onboarding(failed, "failed", 3, 0.001, None, "provider error: ConnectionError")
    retried = figures.start_onboarding("globex", "carol", "hosted", "m-1", 0.2, 0.6)
    assert retried.created and retried.run.run_id != failed
    assert [r.status for r in figures.onboardings("globex")] == ["failed", "queued"]
    assert len(figures.onboardings()) == 3 and figures.onboarding("no-such-run") is None
    assert heard and set(heard) == {MODEL_FIGURES_SUBJECT}


def test_an_onboarding_run_abandoned_open_is_replaced_by_a_new_start(store):
    from datetime import timedelta

    from storage.repositories.model_figures import ABANDONED_AFTER
    from storage.sql import now

    run = store.model_figures.start_onboarding("acme", "alice", "hosted", "m-1", 0.2, 0.6).run
    store.model_figures.begin_onboarding(run.run_id)
    assert not store.model_figures.start_onboarding("acme", "alice", "hosted", "m-1", 0.2, 0.6).created
    store.database.run("UPDATE model_onboarding SET updated_at = ? WHERE run_id = ?",
                       [now() - ABANDONED_AFTER - timedelta(minutes=1), run.run_id])
    again = store.model_figures.start_onboarding("acme", "alice", "hosted", "m-1", 0.2, 0.6)
    assert again.created and again.run.run_id != run.run_id
