"""`switchboard models ...`: onboard a model without figures, list and publish onboarding runs, queue a refresh of
the public figures (docs/api.md, "Model figures and onboarding")."""

from __future__ import annotations

import argparse
import asyncio
import sys

from api.cli.store_access import cli_store as _store
from api.settings import get_settings


def cmd_models_onboard(args: argparse.Namespace) -> int:
    """Queue an onboarding run for an organization, with the API's checks (api/model_figures/onboarding.py)."""
    # lazy: the router, the catalogue and Prefect's client load only for this command
    from api.catalogue import load_catalogue
    from api.errors import ApiError
    from api.launcher import PrefectLauncher
    from api.model_figures.live import LiveFigures
    from api.model_figures.onboarding import OnboardingService
    from api.routing.capability import read_figures
    from api.routing.default_router import DEFAULT_PRIOR_PATH, load_default_router
    from storage.records import User

    settings, store = get_settings(), _store()
    router = load_default_router(settings.default_router_dir, settings.model_figures_path)
    figures = LiveFigures(store, router, read_figures(settings.model_figures_path or DEFAULT_PRIOR_PATH)).reload()
    service = OnboardingService(store, load_catalogue(), settings, PrefectLauncher("onboarding"), figures)
    operator = User("switchboard-cli", args.organization, "free", False, True)
    try:
        run, created = asyncio.run(service.start(operator, args.provider, args.model, args.input_price,
                                                 args.output_price))
    except ApiError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    print(f"onboarding {'queued' if created else 'already ' + run.status}: run {run.run_id} for {run.provider}/"
          f"{run.model}, organization {run.organization_id}")
    return 0


def cmd_models_onboarded(args: argparse.Namespace) -> int:
    for r in _store().model_figures.onboardings(args.organization):
        print(f"{r.run_id}  {r.organization_id}  {r.provider}/{r.model}  {r.status:<10} calls={r.calls:<4} "
              f"${r.cost_usd:.4f}{'  PUBLISHED' if r.published else ''}{'  (' + r.error + ')' if r.error else ''}")
    return 0


def cmd_models_publish(args: argparse.Namespace) -> int:
    run = _store().model_figures.publish_onboarding(args.run_id, not args.withdraw)
    if run is None or run.status != "completed":
        print(f"error: no completed onboarding run {args.run_id}", file=sys.stderr)
        return 1
    serves = "every organization" if run.published else f"{run.organization_id} only"
    print(f"run {run.run_id} ({run.provider}/{run.model}) serves {serves}")
    return 0


def cmd_models_refresh(args: argparse.Namespace) -> int:
    """Queue a refresh-model-figures run (flows/model_figures/refresh.py)."""
    # lazy: Prefect's client loads only for this command
    from flows import prefect_api

    run_id = asyncio.run(prefect_api.trigger(prefect_api.REFRESH_MODEL_FIGURES, {"source": args.source}))
    print(f"refresh-model-figures queued: flow run {run_id}")
    return 0


def add_models_commands(sub) -> None:
    models = sub.add_parser("models", help="model figures: onboard a model without figures, publish, refresh")
    models_sub = models.add_subparsers(dest="models_command", required=True)
    onboard = models_sub.add_parser("onboard", help="measure a model the router has no figures for (queues the "
                                                    "onboard-model flow; PREFECT_API_URL names the server)")
    onboard.add_argument("provider")
    onboard.add_argument("model")
    onboard.add_argument("--organization", required=True, help="whose figures they become (until published)")
    onboard.add_argument("--input-price", type=float, help="USD per million input tokens (models not in the "
                                                           "catalogue)")
    onboard.add_argument("--output-price", type=float, help="USD per million output tokens")
    onboard.set_defaults(func=cmd_models_onboard)
    onboarded = models_sub.add_parser("onboarded", help="list onboarding runs")
    onboarded.add_argument("--organization", help="only this organization's")
    onboarded.set_defaults(func=cmd_models_onboarded)
    publish = models_sub.add_parser("publish", help="serve a completed onboarding run's figures to every organization")
    publish.add_argument("run_id")
    publish.add_argument("--withdraw", action="store_true", help="serve them to their organization only again")
    publish.set_defaults(func=cmd_models_publish)
    refresh = models_sub.add_parser("refresh-figures", help="queue a refresh-model-figures run")
    refresh.add_argument("--source", help="URL or file (default SWITCHBOARD_MODEL_FIGURES_SOURCE)")
    refresh.set_defaults(func=cmd_models_refresh)
