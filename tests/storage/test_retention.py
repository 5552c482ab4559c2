"""Pruning old router versions and uploads no kept router needs; removals never leave their folder."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from storage.retention import remove_inside
from storage.store import LocalStore


def train(store: LocalStore, data_dir: Path, pid: str, n: int, publish: bool = True) -> tuple[str, Path, Path]:
    """One training job for the preference, with its upload; published as a router version when asked."""
    dataset = data_dir / "uploads" / "router_training" / f"{pid}-{n}.parquet"
    dataset.parent.mkdir(parents=True, exist_ok=True)
    dataset.write_bytes(b"PAR1")
    job = store.routers.start_training("alice", pid, str(dataset), "english", True, "[]", 30).job
    artefact = data_dir / "artefacts" / "custom_routers" / pid / job.job_id
    if publish:
        artefact.mkdir(parents=True)
        (artefact / "router.json").write_text("{}")
        store.routers.publish(job.job_id, str(artefact), "{}")
    return job.job_id, artefact, dataset


def age(store: LocalStore, days: float) -> None:
    then = datetime.now(timezone.utc) - timedelta(days=days)
    store.database.run("UPDATE jobs SET updated_at = ?", [then])


def test_pruning_keeps_the_newest_versions_and_always_the_live_one(data_dir: Path):
    store = LocalStore(data_dir / "switchboard.duckdb")
    try:
        pid = store.preferences.create("alice", "p").preference_id
        versions = [train(store, data_dir, pid, n) for n in range(5)]
        other = store.preferences.create("alice", "q").preference_id
        other_version = train(store, data_dir, other, 0)

        forgotten = store.routers.prune_versions(keep=2)
        assert sorted(forgotten) == sorted(str(v[1]) for v in versions[:3])
        assert remove_inside(data_dir / "artefacts", forgotten) == 3
        kept = {r[0] for r in store.database.rows("SELECT job_id FROM custom_routers")}
        assert kept == {versions[3][0], versions[4][0], other_version[0]}
        assert store.routers.state(pid).live.job_id == versions[4][0]  # the live one is untouched
        assert all(not v[1].exists() for v in versions[:3]) and versions[3][1].exists()
        assert store.routers.prune_versions(keep=2) == []  # nothing left to do

        # The live router stays even when it is not the newest version (a rollback), and keep=0 means 1.
        store.database.run("UPDATE custom_routers SET is_live = (job_id = ?)", [versions[3][0]])
        assert store.routers.prune_versions(keep=0) == [str(versions[4][1])]
        assert {r[0] for r in store.database.rows("SELECT job_id FROM custom_routers WHERE preference_id = ?", [pid])} \
            == {versions[3][0]}
    finally:
        store.close()


def test_uploads_go_once_no_kept_router_needs_them_and_the_grace_period_passed(data_dir: Path):
    store = LocalStore(data_dir / "switchboard.duckdb")
    try:
        pid = store.preferences.create("alice", "p").preference_id
        kept_job, _, kept_data = train(store, data_dir, pid, 0)
        failed_job, _, failed_data = train(store, data_dir, pid, 1, publish=False)
        store.jobs.update(failed_job, status="failed", error="boom")
        open_job, _, open_data = train(store, data_dir, pid, 2, publish=False)
        assert store.routers.unneeded_datasets(grace_days=7) == []  # the failed one is still fresh
        age(store, days=8)
        assert store.routers.unneeded_datasets(grace_days=7) == [str(failed_data)]  # not the open, not the live
        assert remove_inside(data_dir / "uploads", [str(failed_data)]) == 1
        assert not failed_data.exists() and kept_data.exists() and open_data.exists()
        assert sorted(store.routers.datasets(pid)) == sorted(map(str, [kept_data, failed_data, open_data]))
    finally:
        store.close()


def test_remove_inside_refuses_paths_outside_its_root(tmp_path: Path):
    root = tmp_path / "data" / "artefacts"
    (root / "a").mkdir(parents=True)
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    sneaky = root / "a" / ".." / ".." / ".." / "precious.txt"
    link = root / "link"
    link.symlink_to(precious)
    removed = remove_inside(root, [str(precious), str(sneaky), str(root), str(link), str(root / "a"),
                                   str(root / "missing")])
    assert removed == 1 and not (root / "a").exists()
    assert precious.read_text() == "keep me" and root.exists()
