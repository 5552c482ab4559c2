"""Where API workers and flow runs write their metric values so that one GET /metrics adds up every process:
prometheus_client's multiprocess mode reads PROMETHEUS_MULTIPROC_DIR when it is imported, so the process that
starts them (`serve`'s supervisor, `switchboard api`) sets it. No prometheus_client import here: the CLI uses it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ENV = "PROMETHEUS_MULTIPROC_DIR"


def fresh_metrics_env(run_dir: Path) -> dict[str, str]:
    """An empty run/metrics/ for a new start: counters then begin at zero, as Prometheus expects of a restart (the
    previous run's files would otherwise be added to the new run's values). A directory the operator named in the
    environment is theirs to manage, and kept."""
    if os.environ.get(ENV):
        return {ENV: os.environ[ENV]}
    path = run_dir / "metrics"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, mode=0o700)
    return {ENV: str(path)}
