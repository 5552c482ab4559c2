"""The `switchboard` console command."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from api.cli.models import add_models_commands
from api.cli.ports import Listener, refuse_if_in_use
from api.cli.store_access import cli_store as _store
from api.cli.supervisor import api_argv, api_listener, serve, store_owner_argv
from api.observability.metrics_dir import fresh_metrics_env
from api.errors import ApiError
from api.key_admin import KeyAdminService
from api.settings import STORE_PORT, check_data_dir, get_settings
from storage.errors import StoreError
from storage.owner import live_owner
from storage.records import TIERS, IssuedKey




def cmd_serve(args: argparse.Namespace) -> int:
    settings = get_settings()
    check_data_dir(settings.data_dir)  # one clear line, not a traceback from deep inside DuckDB or Prefect
    return serve(settings, args.host or settings.host, args.port or settings.port)


def cmd_store(args: argparse.Namespace) -> int:
    """The store owner alone (production shape): replaces this process with granian, so signals reach it."""
    settings = get_settings()
    if settings.database_url:
        print("error: SWITCHBOARD_DATABASE_URL is set: PostgreSQL is the system of record and needs no store owner; "
              "start the API and the flow workers directly", file=sys.stderr)
        return 1
    check_data_dir(settings.data_dir)
    host, port = args.host or settings.store_host, args.port or settings.store_port
    refuse_if_in_use(Listener("the store owner", host, port, "--port or SWITCHBOARD_STORE_PORT"))
    os.environ["SWITCHBOARD_STORE_HOST"], os.environ["SWITCHBOARD_STORE_PORT"] = host, str(port)
    if args.advertise_url:
        os.environ["SWITCHBOARD_STORE_URL"] = args.advertise_url
    argv = store_owner_argv(host, port, settings)
    os.execv(argv[0], argv)
    return 0  # not reached


def cmd_api(args: argparse.Namespace) -> int:
    """The API alone, with `--workers` granian processes; several need a store owner (`switchboard store`)."""
    settings = get_settings()
    check_data_dir(settings.data_dir)
    if args.workers > 1 and not settings.database_url and live_owner(settings.run_dir) is None:
        print(f"error: {args.workers} API workers need a running store owner for {settings.data_dir}; start "
              "`switchboard store` first (one process must own the DuckDB file), or set SWITCHBOARD_DATABASE_URL",
              file=sys.stderr)
        return 1
    host, port = args.host or settings.host, args.port or settings.port
    refuse_if_in_use(api_listener(host, port))  # granian would share it (SO_REUSEPORT): api/cli/ports.py
    os.environ["SWITCHBOARD_HOST"], os.environ["SWITCHBOARD_PORT"] = host, str(port)
    os.environ.update(fresh_metrics_env(settings.run_dir))  # the workers' metrics, added up by GET /metrics
    argv = api_argv(host, port, args.workers, settings)
    os.execv(argv[0], argv)
    return 0  # not reached


def cmd_deploy(args: argparse.Namespace) -> int:
    # lazy: Prefect and every flow (DSPy, LiteLLM) load only for `deploy`
    from flows.deploy import deploy

    job_variables: dict = {"env": dict(pair.split("=", 1) for pair in args.env)} if args.env else {}
    if args.image:
        job_variables["image"] = args.image
    names = deploy(args.pool, pool_type=args.type, create_pool=not args.no_create_pool, job_variables=job_variables)
    print(f"deployed to work pool {args.pool!r}: {', '.join(names)}")
    print(f"a Running flow run whose heartbeats stop for {get_settings().run_heartbeat_timeout_s:.0f} s is crashed "
          "(SWITCHBOARD_RUN_HEARTBEAT_TIMEOUT_S)")
    print(f"start workers with: prefect worker start --pool {args.pool} --type {args.type}")
    return 0


def _key_admin() -> KeyAdminService:
    """The same service as the admin routes (api/key_admin.py), acting as the server's operator. With no data dir
    named (SWITCHBOARD_DATA_DIR unset) and no ./data here, it refuses rather than create one: a key made in a fresh
    ./data would belong to no running service."""
    settings = get_settings()
    if not (settings.database_url or os.environ.get("SWITCHBOARD_DATA_DIR") or settings.data_dir.exists()):
        raise SystemExit(f"error: no data dir at {settings.data_dir}, and SWITCHBOARD_DATA_DIR is not set: a key "
                         "created here would belong to no service. Set SWITCHBOARD_DATA_DIR to the running "
                         "service's data dir (or SWITCHBOARD_DATABASE_URL), or run this where its ./data is.")
    return KeyAdminService(_store(), settings.key_rotation_grace_s)


def _print_issued(issued: IssuedKey) -> None:
    print(f"key id {issued.info.key_id}; the key is shown only once:")
    print(issued.key)


def cmd_keys_create(args: argparse.Namespace) -> int:
    issued = _key_admin().create(None, args.user, organization_id=args.org, tier=args.tier,
                                 prompt_optimization=True if args.prompt_optimization else None,
                                 is_admin=args.admin)
    u = issued.user
    print(f"user {u.user_id} (organization {u.organization_id}, tier {u.tier}, "
          f"prompt optimization {'on' if u.prompt_optimization else 'off'}, admin {'yes' if u.is_admin else 'no'})")
    _print_issued(issued)
    return 0


def cmd_keys_list(args: argparse.Namespace) -> int:
    keys = _key_admin().keys(None)
    print(f"{'key id':36}  {'prefix':10}  {'user':20}  {'created':19}  {'last used':16}  {'today $':>9}  status")
    for k in keys:
        status = f"revoked {k.revoked_at:%Y-%m-%d %H:%M}" if k.revoked_at else (
            f"valid until {k.expires_at:%Y-%m-%d %H:%M}" if k.expires_at else "active")
        used = f"{k.last_used_at:%Y-%m-%d %H:%M}" if k.last_used_at else "never"
        print(f"{k.key_id:36}  {k.key_prefix:10}  {k.user_id[:20]:20}  {k.created_at:%Y-%m-%d %H:%M:%S}  "
              f"{used:16}  {k.spent_today_usd:9.4f}  {status}")
    return 0


def cmd_keys_revoke(args: argparse.Namespace) -> int:
    info = _key_admin().store.accounts.revoke_key(args.key)  # by id, prefix or the key itself: the operator's own
    print(f"revoked key {info.key_id} ({info.key_prefix}…) of user {info.user_id}")
    return 0


def cmd_keys_rotate(args: argparse.Namespace) -> int:
    admin = _key_admin()
    issued = admin.rotate(None, args.key_id, args.grace_seconds)
    old = admin.key(None, args.key_id)
    print(f"rotated key {args.key_id}: it works until {old.expires_at:%Y-%m-%d %H:%M:%S} UTC")
    _print_issued(issued)
    return 0


def cmd_keys_budget(args: argparse.Namespace) -> int:
    limit = None if args.limit_usd.lower() == "none" else float(args.limit_usd)
    _key_admin().set_budget(None, args.scope, args.subject_id, args.period, limit)
    period = "daily" if args.period == "day" else "monthly"
    print(f"{args.scope} {args.subject_id}: {period} budget " + (f"${limit:.4f}" if limit is not None else "removed"))
    return 0


def cmd_keys_rate_limit(args: argparse.Namespace) -> int:
    per_minute = None if args.per_minute.lower() == "none" else int(args.per_minute)
    key = _key_admin().set_rate_limit(None, args.key_id, per_minute)
    shown = key.rate_limit_per_minute if key.rate_limit_per_minute is not None else "the server's"
    print(f"key {key.key_id}: rate limit {shown} requests a minute")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    # lazy: matplotlib loads only for `report`
    from flows.reporting.report import write_report

    out = write_report(Path(args.out), Path(args.data_dir) if args.data_dir else None)
    print(f"report written to {out.resolve()}")
    return 0


def cmd_learning_run(args: argparse.Namespace) -> int:
    """Queue a learn-from-traffic run on the deployment (the runner or a work pool executes it)."""
    # lazy: Prefect's client loads only for this command
    from flows import prefect_api

    parameters = {"preference_id": args.preference, "min_new_labels": args.min_new_labels}
    run_id = asyncio.run(prefect_api.trigger(prefect_api.LEARN_FROM_TRAFFIC, parameters))
    print(f"learn-from-traffic queued: flow run {run_id}")
    return 0


def cmd_learning_judge(args: argparse.Namespace) -> int:
    """Queue a judge-traffic run on the deployment (flows/learning/judge.py)."""
    # lazy: Prefect's client loads only for this command
    from flows import prefect_api

    parameters = {"preference_id": args.preference, "batch": args.batch}
    run_id = asyncio.run(prefect_api.trigger(prefect_api.JUDGE_TRAFFIC, parameters))
    print(f"judge-traffic queued: flow run {run_id}")
    return 0


def cmd_learning_versions(args: argparse.Namespace) -> int:
    for v in _store().learning.versions(args.preference):
        print(f"{v.version_id}  {v.created_at:%Y-%m-%d %H:%M:%S}  labels={v.labels:<7} "
              f"{'promoted' if v.promoted else 'kept out'}{'  LIVE' if v.is_live else ''}")
    return 0


def cmd_learning_rollback(args: argparse.Namespace) -> int:
    live = _store().learning.rollback(args.preference)
    print(f"preference {args.preference} now served by "
          f"{'learned correction ' + live.version_id if live else 'its router alone'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="switchboard", description="LLM routing and prompt optimization service")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run Prefect server, flow runner and API (the embedded default)")
    serve.add_argument("--host", help="API bind address (default 127.0.0.1, or SWITCHBOARD_HOST)")
    serve.add_argument("--port", type=int, help="API port (default 8000, or SWITCHBOARD_PORT)")
    serve.set_defaults(func=cmd_serve)

    store = sub.add_parser("store", help="run the store owner alone: the one process that opens the DuckDB file "
                                         "(production shape; start it before the API and the flow workers)")
    store.add_argument("--host", help="bind address (default 127.0.0.1, or SWITCHBOARD_STORE_HOST)")
    store.add_argument("--port", type=int, help=f"port (default {STORE_PORT}, or SWITCHBOARD_STORE_PORT)")
    store.add_argument("--advertise-url", help="URL published to the other processes (default http://<host>:<port>; "
                                               "set it when they reach this one by another name, e.g. containers)")
    store.set_defaults(func=cmd_store)

    api = sub.add_parser("api", help="run the API alone under granian (production shape)")
    api.add_argument("--host", help="bind address (default 127.0.0.1, or SWITCHBOARD_HOST)")
    api.add_argument("--port", type=int, help="port (default 8000, or SWITCHBOARD_PORT)")
    api.add_argument("--workers", type=int, default=1, help="API worker processes (more than one needs "
                                                           "`switchboard store` running)")
    api.set_defaults(func=cmd_api)

    deploy = sub.add_parser("deploy", help="deploy the flows to a Prefect work pool (PREFECT_API_URL names the "
                                           "server); `prefect worker start --pool NAME` then runs them")
    deploy.add_argument("--pool", required=True, help="work pool name")
    deploy.add_argument("--type", default="process", help="pool type if it is created (default process; "
                                                          "docker and kubernetes need prefect-docker / "
                                                          "prefect-kubernetes where the workers run)")
    deploy.add_argument("--no-create-pool", action="store_true", help="fail instead of creating a missing pool")
    deploy.add_argument("--image", help="container image for docker / kubernetes pools (job variable `image`)")
    deploy.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="environment of every flow run (job variable `env`), repeatable; containers do not "
                             "inherit the worker's, so name SWITCHBOARD_DATA_DIR and the provider settings here")
    deploy.set_defaults(func=cmd_deploy)

    keys = sub.add_parser("keys", help="create, list and revoke API keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="issue a key (creating the user if new); prints it last")
    create.add_argument("--user", required=True, help="user id the key acts as")
    create.add_argument("--org", help="organization id (new users default to their user id)")
    create.add_argument("--tier", choices=TIERS, help="plan tier (new users default to free)")
    create.add_argument("--prompt-optimization", action="store_true", help="grant prompt optimization access")
    create.add_argument("--admin", action="store_true", help="an admin key: manages its organization's keys over HTTP")
    create.set_defaults(func=cmd_keys_create)
    lst = keys_sub.add_parser("list", help="list keys (prefixes only; keys are stored hashed)")
    lst.set_defaults(func=cmd_keys_list)
    revoke = keys_sub.add_parser("revoke", help="revoke a key by key id, prefix or the key itself")
    revoke.add_argument("key")
    revoke.set_defaults(func=cmd_keys_revoke)
    rotate = keys_sub.add_parser("rotate", help="issue a new key for the same user; the old one works for a while")
    rotate.add_argument("key_id")
    rotate.add_argument("--grace-seconds", type=float, help="how long the old key keeps working (default: "
                        "SWITCHBOARD_KEY_ROTATION_GRACE_S)")
    rotate.set_defaults(func=cmd_keys_rotate)
    budget = keys_sub.add_parser("budget", help="set a USD budget of a key, user or organization (none: remove)")
    budget.add_argument("scope", choices=("key", "user", "organization"))
    budget.add_argument("subject_id", help="the key id, user id or organization id")
    budget.add_argument("period", choices=("day", "month"))
    budget.add_argument("limit_usd", help="USD per UTC day or month, or `none`")
    budget.set_defaults(func=cmd_keys_budget)
    limit = keys_sub.add_parser("rate-limit", help="set a key's requests per minute (0: none; `none`: the server's)")
    limit.add_argument("key_id")
    limit.add_argument("per_minute")
    limit.set_defaults(func=cmd_keys_rate_limit)

    learning = sub.add_parser("learning", help="learning from traffic: run the flow, list versions, roll back")
    learning_sub = learning.add_subparsers(dest="learning_command", required=True)
    run = learning_sub.add_parser("run", help="queue a learn-from-traffic flow run (PREFECT_API_URL names the server)")
    run.add_argument("--preference", help="only this preference (default: every one with enough new labels)")
    run.add_argument("--min-new-labels", type=int, help="labels needed since its last version (default: settings)")
    run.set_defaults(func=cmd_learning_run)
    judge = learning_sub.add_parser("judge", help="queue a judge-traffic flow run: grade the sampled gateway answers")
    judge.add_argument("--preference", help="only this preference's samples (default: every one's)")
    judge.add_argument("--batch", type=int, help="samples per preference at most (default: SWITCHBOARD_JUDGE_BATCH)")
    judge.set_defaults(func=cmd_learning_judge)
    versions = learning_sub.add_parser("versions", help="a preference's learned corrections, oldest first")
    versions.add_argument("preference")
    versions.set_defaults(func=cmd_learning_versions)
    rollback = learning_sub.add_parser("rollback",
                                       help="serve the previously promoted correction (or the router alone)")
    rollback.add_argument("preference")
    rollback.set_defaults(func=cmd_learning_rollback)

    add_models_commands(sub)

    report = sub.add_parser("report", help="write a self-contained HTML summary of usage and routing (safe while "
                                           "the service runs)")
    report.add_argument("--out", default="switchboard-report.html", help="output file (default %(default)s)")
    report.add_argument("--data-dir", help="data dir to read (default SWITCHBOARD_DATA_DIR)")
    report.set_defaults(func=cmd_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.umask(0o077)  # every file and folder this process and its children create is private to the user
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (StoreError, ApiError) as exc:  # a refusal a person can act on: say it, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
