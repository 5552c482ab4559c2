"""Removing stored files the database no longer points at: router artefact folders and uploaded datasets.

Paths come from the database, so every removal is checked to lie inside the data dir's folder for that kind of
file: a damaged or hostile row can never make us delete anything else.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path


def remove_inside(root: Path, paths: Iterable[str]) -> int:
    """Delete each path (file or folder) that resolves inside `root`; returns how many were removed."""
    root = root.resolve()
    removed = 0
    for path in paths:
        target = Path(path).resolve()
        if target == root or not target.is_relative_to(root) or not target.exists():
            continue
        if target.is_dir():
            shutil.rmtree(target, ignore_errors=True)
        else:
            target.unlink(missing_ok=True)
        removed += 1
    return removed
