"""The typed interfaces of the system of record (storage/interfaces.py): the type checker proves that the DuckDB
repositories and the RPC client conform, and the RPC exposes exactly the interfaces' methods."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from storage import rpc
from storage.interfaces import DOMAINS
from storage.store import LocalStore

REPO = Path(__file__).resolve().parents[2]
CONFORMANCE = Path(__file__).with_name("interfaces_conformance.py")


def mypy(*paths: Path | str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mypy", "--ignore-missing-imports", "--no-incremental",
                           "--no-error-summary", *map(str, paths)], cwd=REPO, capture_output=True, text=True)


def test_storage_type_checks_and_both_implementations_conform() -> None:
    result = mypy("storage", CONFORMANCE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_type_checker_catches_a_repository_that_drifts(tmp_path: Path) -> None:
    # The negative control: a repository whose method lost an argument must not pass for the interface.
    drifted = tmp_path / "drifted.py"
    drifted.write_text("from storage.interfaces import Jobs\n"
                       "from storage.records import Job\n"
                       "class Drifted:\n"
                       "    def get(self) -> Job | None: ...\n"
                       "def check(j: Drifted) -> Jobs:\n"
                       "    return j\n")
    result = mypy(drifted)
    assert result.returncode != 0 and "Jobs" in result.stdout, result.stdout


def test_every_domain_of_the_local_store_is_reachable_over_rpc(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "db.duckdb")
    try:
        for domain, interface in DOMAINS.items():
            repository = getattr(store, domain)
            for name in rpc.interface_methods(interface):
                assert callable(getattr(repository, name)), f"{domain}.{name}"
    finally:
        store.close()
