"""Every learned version is kept; promotion and rollback move the pointer; API workers follow the store."""

from __future__ import annotations

import msgspec
import numpy as np

from api.selection.learned import FORMAT, CorrectionParameters, LearnedCorrections
from storage.store import LocalStore


def params(shift: float, feature_version: str = "fv") -> str:
    return msgspec.json.encode(CorrectionParameters(format=FORMAT, feature_version=feature_version,
                                                    centroids=[[1.0, 0.0], [0.0, 1.0]], models=["acme/a"],
                                                    weights=[[shift, -shift]], bias=[0.0])).decode()


def test_promotion_and_rollback_move_the_pointer_and_workers_follow(tmp_path):
    store = LocalStore(tmp_path / "db.duckdb")
    try:
        served = LearnedCorrections(store, "fv").attach()
        assert served.get("p") is None and store.learning.rollback("p") is None
        first = store.learning.record_version("p", 300, params(0.1), "{}", promote=True)
        assert served.get("p").version_id == first.version_id  # notified as the version was recorded
        kept_out = store.learning.record_version("p", 600, params(0.5), "{}", promote=False)
        assert served.get("p").version_id == first.version_id
        second = store.learning.record_version("p", 900, params(0.2), "{}", promote=True)
        assert served.get("p").version_id == second.version_id
        assert float(served.get("p").delta(np.array([1.0, 0.0, 9.0]), ["acme/a", "acme/b"])[0]) == \
            served.get("p").weights[0, 0]
        other = store.learning.record_version("q", 300, params(0.3), "{}", promote=True)

        assert store.learning.rollback("p").version_id == first.version_id
        assert served.get("p").version_id == first.version_id
        assert store.learning.rollback("p") is None and served.get("p") is None  # the router alone
        assert [v.version_id for v in store.learning.versions("p")] == \
            [first.version_id, kept_out.version_id, second.version_id]  # nothing is deleted
        assert store.learning.promote("p", kept_out.version_id).is_live
        assert served.get("p").version_id == kept_out.version_id
        assert store.learning.promote("p", other.version_id) is None  # another preference's version
        assert served.get("q").version_id == other.version_id
    finally:
        store.close()


def test_a_correction_for_other_features_is_not_served(tmp_path):
    store = LocalStore(tmp_path / "db.duckdb")
    try:
        store.learning.record_version("p", 300, params(0.1, feature_version="older"), "{}", promote=True)
        assert LearnedCorrections(store, "fv").attach().get("p") is None
    finally:
        store.close()


def test_the_report_shows_each_preferences_learning_state(data_dir):
    from flows.reporting.report import write_report

    store = LocalStore(data_dir / "switchboard.duckdb")
    try:
        evaluation = {"challenger": {"value": 0.71}, "champion": {"value": 0.65}, "estimator": "dr",
                      "difference": {"value": 0.06, "low": 0.01, "high": 0.11}, "decision": "promoted"}
        version = store.learning.record_version("p", 300, params(0.1), msgspec.json.encode(evaluation).decode(),
                                                promote=True)
    finally:
        store.close()
    html = write_report(data_dir / "report.html", data_dir).read_text(encoding="utf-8")
    assert "Learning from traffic" in html and version.version_id in html and "0.71" in html


def test_deleting_a_preference_deletes_what_it_learned(tmp_path):
    store = LocalStore(tmp_path / "db.duckdb")
    try:
        pref = store.preferences.create("alice", "p")
        store.learning.record_version(pref.preference_id, 300, params(0.1), "{}", promote=True)
        assert store.preferences.delete("alice", pref.preference_id) == []
        assert store.learning.versions(pref.preference_id) == [] and store.learning.live(pref.preference_id) is None
    finally:
        store.close()


def test_rollback_is_one_cli_command(data_dir, capsys):
    from api.cli.main import main

    store = LocalStore(data_dir / "switchboard.duckdb")
    try:
        first = store.learning.record_version("p", 300, params(0.1), "{}", promote=True)
        second = store.learning.record_version("p", 600, params(0.2), "{}", promote=True)
    finally:
        store.close()
    assert main(["learning", "rollback", "p"]) == 0
    assert f"learned correction {first.version_id}" in capsys.readouterr().out
    assert main(["learning", "versions", "p"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == [first.version_id, second.version_id]
    assert listed[0].endswith("LIVE") and not listed[1].endswith("LIVE")
    assert main(["learning", "rollback", "p"]) == 0
    assert "its router alone" in capsys.readouterr().out
