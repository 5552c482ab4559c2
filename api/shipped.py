"""The data that ships with the service: the repository's datasets/ folder (default router artefact, per-benchmark
model figures, catalogue snapshot). It installs as the package `switchboard_datasets` (setup.py), so a checkout, an
editable install and a wheel all find it the same way, without a path relative to this file."""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

PACKAGE = "switchboard_datasets"


@lru_cache(maxsize=1)
def shipped_dir() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    # datasets/ has no __init__.py (a namespace package), so its location is the one directory on its path.
    found = [Path(p) for p in (spec.submodule_search_locations or []) if Path(p).is_dir()] if spec else []
    if not found:
        raise RuntimeError(f"the shipped data ({PACKAGE}) is not installed; reinstall switchboard (`make install`)")
    return found[0]


def shipped(*parts: str) -> Path:
    """A file or folder of datasets/, e.g. shipped("default_router")."""
    return shipped_dir().joinpath(*parts)
