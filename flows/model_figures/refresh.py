"""`refresh-model-figures`: swap in new public figures without a release (docs/routing.md, "Refreshing and measuring
model figures"). Reads the URL or file the operator names (SWITCHBOARD_MODEL_FIGURES_SOURCE, or the run's `source`)
in datasets/model_benchmarks.csv's format, checks it whole (api/model_figures/figures_csv.py: a bad file fails the
run with the line and the reason, and nothing is swapped), and stores it; every API worker swaps it in through the
store's change feed (api/model_figures/live.py). Scheduled every SWITCHBOARD_MODEL_FIGURES_REFRESH_INTERVAL_S (off
by default: flows/registry.py); `switchboard models refresh-figures` queues a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from api.model_figures.figures_csv import MAX_BYTES, parse_figures
from api.settings import get_settings
from flows.storage_access import connect

FETCH_TIMEOUT_S = 30.0


class NoFiguresSource(ValueError):
    pass


def described(source: str) -> str:
    """The source as it is recorded: a URL without its query, fragment or credentials (they may hold a token)."""
    if "://" not in source or source.startswith("file://"):
        return source
    parts = urlsplit(source)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"


@task(name="read-figures-source", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=10)
def read_source(source: str) -> str:
    if source.startswith(("http://", "https://")):
        # lazy: httpx's client loads in the flow run only
        import httpx

        with httpx.stream("GET", source, timeout=FETCH_TIMEOUT_S, follow_redirects=True) as response:
            response.raise_for_status()
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_BYTES:
                    raise ValueError(f"the figures at {described(source)} are larger than {MAX_BYTES} bytes")
        return body.decode("utf-8-sig")
    path = Path(source.removeprefix("file://")).expanduser()
    if path.stat().st_size > MAX_BYTES:
        raise ValueError(f"the figures file {path} is larger than {MAX_BYTES} bytes")
    return path.read_text(encoding="utf-8-sig")


@flow(name="refresh-model-figures", log_prints=True)
def refresh_model_figures(source: str | None = None) -> dict[str, Any]:
    """`source`: a URL or file path (default SWITCHBOARD_MODEL_FIGURES_SOURCE)."""
    logger = get_run_logger()
    source = source or get_settings().model_figures_source
    if not source:
        raise NoFiguresSource("no figures source: set SWITCHBOARD_MODEL_FIGURES_SOURCE or pass `source`")
    text = read_source(source)
    rows = parse_figures(text)  # InvalidFigures fails the run before anything is stored
    store = connect()
    try:
        live = store.model_figures.live_figure_set()
        if live is not None and live.content == text:
            logger.info("figures at %s unchanged (%d rows): set %s stays", described(source), len(rows), live.set_id)
            return {"set_id": live.set_id, "rows": len(rows), "changed": False}
        stored = store.model_figures.store_figure_set(described(source), text, len(rows))
    finally:
        store.close()
    logger.info("stored %d figures from %s as set %s", len(rows), described(source), stored.set_id)
    return {"set_id": stored.set_id, "rows": len(rows), "changed": True}
