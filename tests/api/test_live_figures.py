"""What each API worker serves (api/model_figures/live.py): an organization's measured figures reach its router only,
a change of one organization rebuilds no other's, and a publish or a new figure set rebuilds everyone's."""

from __future__ import annotations

from api.model_figures.live import LiveFigures
from api.model_figures.measured import encode, measured
from api.routing.capability import read_figures
from api.routing.default_router import DEFAULT_PRIOR_PATH, load_default_router
from api.routing.router import Candidate
from storage.store import LocalStore

NEW = Candidate("hosted", "m-1", 1.0, 1.0)


def onboarded(store, organization: str, model: str, crux: int) -> str:
    run = store.model_figures.start_onboarding(organization, "u", "hosted", model, 1.0, 1.0).run
    store.model_figures.begin_onboarding(run.run_id)
    store.model_figures.finish_onboarding(run.run_id, "completed", 200, 0.01, encode(
        [measured("CRUX", "code", crux, 100), measured("MATH-L5", "maths", 40, 100)]))
    return run.run_id


def test_figures_reach_their_organization_and_rebuild_only_what_changed(tmp_path):
    store = LocalStore(tmp_path / "db.duckdb")
    try:
        router = load_default_router()
        live = LiveFigures(store, router, read_figures(DEFAULT_PRIOR_PATH)).attach()
        assert live.router_for("acme") is router and live.no_evidence(router, [NEW]) == ("hosted/m-1",)
        run_id = onboarded(store, "acme", "m-1", 70)
        acme = live.router_for("acme")
        assert acme is not router and live.no_evidence(acme, [NEW]) == ()
        assert live.router_for("globex") is router and live.no_evidence(router, [NEW]) == ("hosted/m-1",)
        _, how, sources, _ = acme.prior.profile("hosted", "m-1")
        assert sources[1:] == ("prior", "prior")  # maths and code from its own measured figures

        onboarded(store, "globex", "m-2", 50)  # another organization's run: acme's router is kept as it was
        assert live.router_for("acme") is acme and live.router_for("globex") is not router

        store.model_figures.publish_onboarding(run_id)  # published: everyone's router has it
        assert live.everyone is not router and live.no_evidence(live.router_for("initech"), [NEW]) == ()
        assert [r.run_id for r in live.runs_for("initech")] == [run_id]
        text = DEFAULT_PRIOR_PATH.read_text(encoding="utf-8")
        before = live.everyone
        store.model_figures.store_figure_set("test", text, text.count("\n") - 1)
        assert live.everyone is not before and live.figure_set is not None
    finally:
        store.close()
