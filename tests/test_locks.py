"""The two locks come from one resolution (Makefile, `make lock`): requirements-serve.lock is what `make serve`
installs, requirements.lock the same pins plus the test extras that `make test` installs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9._-]+)==([^\s;\\]+)", re.M)


def pins(name: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for package, version in PIN.findall((REPO / name).read_text()):
        found.setdefault(package.lower().replace("_", "-"), version)
    return found


def requirement_names(specs: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0].lower().replace("_", "-") for spec in specs}


def test_the_serve_lock_is_the_test_lock_without_the_test_extras() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    serve, full = pins("requirements-serve.lock"), pins("requirements.lock")
    assert serve, "requirements-serve.lock has no pins"
    assert {name: full.get(name) for name in serve} == serve  # same versions: one resolution
    assert requirement_names(project["dependencies"]) <= set(serve)
    test_only = requirement_names(project["optional-dependencies"]["test"]) - requirement_names(
        project["dependencies"])
    assert test_only <= set(full)
    assert not test_only & set(serve), f"test extras in the serve lock: {sorted(test_only & set(serve))}"


def test_sqlalchemy_stays_below_2_1_for_prefects_scheduler() -> None:
    # docs/architecture.md, "Traps already found": with 2.1 no scheduled deployment ever runs.
    for name in ("requirements-serve.lock", "requirements.lock"):
        major, minor = (int(part) for part in pins(name)["sqlalchemy"].split(".")[:2])
        assert (major, minor) < (2, 1), name
