"""`switchboard serve`: the embedded default. Starts a local Prefect server (unless PREFECT_API_URL names
one), the store owner (the one process that opens DuckDB), the Litestar API under granian, and the flow runner;
Ctrl-C stops them in reverse order. `switchboard store` and `switchboard api` start the store owner and the API
alone, for the production shape (docs/deployment.md).

Children run in their own process groups so that Ctrl-C reaches only this supervisor, which then stops the
runner first (no new flow runs), then the API (flushes buffered events), then the store owner (checkpoints and
closes DuckDB), then the Prefect server.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from api.cli import orphans
from api.cli.http_options import connection_args, connection_cap, header_timeout_ms
from api.cli.ports import Listener, refuse_if_in_use
from api.cli.processes import Supervisor, free_port, say
from api.cli.restarts import ChildRestarts
from api.observability.metrics_dir import fresh_metrics_env
from api.parent_watch import SUPERVISOR_PID_ENV
from api.settings import Settings, basic_auth, get_settings
from flows.prefect_api import HOUSEKEEPING, SETTLE_ORPHANS_ENV
from storage import owner

PREFECT_USER = "switchboard"


def prefect_login(run_dir: Path) -> str:
    """The embedded Prefect server's `user:password` (PREFECT_SERVER_API_AUTH_STRING), made once per data dir and
    kept in run/prefect-login (0600): without it any local process could read flow parameters and start flow runs
    through Prefect's API on loopback. The UI asks for it once per browser."""
    path = run_dir / "prefect-login"
    if not path.exists():
        run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{PREFECT_USER}:{secrets.token_urlsafe(24)}")
    return path.read_text().strip()


def prefect_env(port: int, login: str) -> dict[str, str]:
    """Every Prefect URL setting derived from the one port the embedded server uses, so a setting inherited from
    the environment (PREFECT_SERVER_API_PORT, PREFECT_UI_API_URL, ...) cannot point the UI or a client elsewhere."""
    api = f"http://127.0.0.1:{port}/api"
    return {"PREFECT_SERVER_API_HOST": "127.0.0.1", "PREFECT_SERVER_API_PORT": str(port), "PREFECT_UI_API_URL": api, "PREFECT_UI_URL": f"http://127.0.0.1:{port}",
            "PREFECT_SERVER_API_AUTH_STRING": login, "PREFECT_API_AUTH_STRING": login}


Waiter = Callable[[], None]  # blocks until a launched child is ready (or raises SystemExit)
RESTART_PORT_WAIT_S = 5.0  # a restarted child's predecessor, killed a moment ago, may still hold its port


def prefect_listener(settings: Settings) -> Listener:
    return Listener("the Prefect server", "127.0.0.1", settings.prefect_port,
                    "SWITCHBOARD_PREFECT_PORT (or PREFECT_API_URL, to use a Prefect server already running)")


def api_listener(host: str, port: int) -> Listener:
    return Listener("the API", host, port, "--port or SWITCHBOARD_PORT")


def launch_prefect(sup: Supervisor, logs: Path) -> Waiter:
    settings = sup.settings
    if settings.prefect_api_url:
        say(f"using the Prefect server at {settings.prefect_api_url}")
        return lambda: None
    sup.env["PREFECT_HOME"] = str(settings.prefect_home)
    sup.env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    port = settings.prefect_port
    listener = prefect_listener(settings)
    # Else its health check would be answered by whoever holds the port (api/cli/ports.py)
    refuse_if_in_use(listener, RESTART_PORT_WAIT_S)
    login = prefect_login(settings.run_dir)
    sup.env.update(prefect_env(port, login))
    # `prefect server start`'s app, old-UI deep links sent to the new UI's login-aware pages (flows/prefect_server.py)
    child = sup.spawn("Prefect server", [sys.executable, "-m", "flows.prefect_server", "--host", "127.0.0.1",
                                         "--port", str(port)], logs / "prefect-server.log", listener=listener)
    # For the children launched beside it and after it: the flow runner waits until the server answers.
    sup.env["PREFECT_API_URL"] = f"http://127.0.0.1:{port}/api"
    say(f"starting a local Prefect server (SQLite under {settings.prefect_home}); log: {logs / 'prefect-server.log'}")

    def ready() -> None:
        sup.wait_healthy(child, f"http://127.0.0.1:{port}/api/health", timeout=120)
        say(f"Prefect UI: http://127.0.0.1:{port} (login: the contents of {settings.run_dir / 'prefect-login'})")
    return ready


def start_prefect(sup: Supervisor, logs: Path) -> None:
    launch_prefect(sup, logs)()


def one_process_argv(host: str, port: int, settings: Settings, factory: str) -> list[str]:
    """granian with one worker and no main process to watch it (api/cli/one_process_server.py), with the
    connection options of api/cli/http_options.py."""
    return [sys.executable, "-m", "api.cli.one_process_server", "--host", host, "--port", str(port),
            "--header-timeout-ms", str(header_timeout_ms(settings)), "--backpressure", str(connection_cap(settings)),
            factory]


def store_owner_argv(host: str, port: int, settings: Settings | None = None) -> list[str]:
    """The owner is one worker by design (one process owns the DuckDB file)."""
    return one_process_argv(host, port, settings or get_settings(), "api.owner_app:create_owner_app")


def launch_store(sup: Supervisor, logs: Path) -> Waiter:
    """The store owner, on a free loopback port (embedded: nobody outside this machine needs to reach it)."""
    port = free_port()
    sup.env["SWITCHBOARD_STORE_HOST"], sup.env["SWITCHBOARD_STORE_PORT"] = "127.0.0.1", str(port)
    child = sup.spawn("store owner", store_owner_argv("127.0.0.1", port, sup.settings), logs / "store-owner.log")

    def ready() -> None:
        sup.wait_healthy(child, f"http://127.0.0.1:{port}/internal/health", timeout=60)
        deadline = time.monotonic() + 10
        while owner.live_owner(sup.settings.run_dir) is None:  # published right after it starts serving
            if not child.alive():
                raise SystemExit(child.exit_report("before it published its address"))
            if time.monotonic() > deadline:
                raise SystemExit(f"the store owner did not publish {owner.owner_file(sup.settings.run_dir)}; "
                                 + child.log_tail())
            time.sleep(0.1)
        say(f"store owner serving {sup.settings.db_path}; log: {logs / 'store-owner.log'}")
    return ready


def start_store(sup: Supervisor, logs: Path) -> None:
    launch_store(sup, logs)()


def api_argv(host: str, port: int, workers: int, settings: Settings | None = None) -> list[str]:
    """granian serving the API; connection_args bound idle connections and size the cap (api/cli/http_options.py).
    One worker (`serve`'s) runs in one process; several need granian's main process to fork and watch them."""
    settings = settings or get_settings()
    if workers == 1:
        return one_process_argv(host, port, settings, "api.app:create_app")
    return [sys.executable, "-m", "granian", "--interface", "asgi", "--factory", "--host", host, "--port", str(port),
            "--workers", str(workers), "--log-level", "warning", *connection_args(settings), "api.app:create_app"]


def start_api(sup: Supervisor, host: str, port: int, workers: int = 1) -> None:
    sup.env["SWITCHBOARD_HOST"], sup.env["SWITCHBOARD_PORT"] = host, str(port)
    listener = api_listener(host, port)
    # granian binds with SO_REUSEPORT: on a port in use it would share it with the other listener, silently
    refuse_if_in_use(listener, RESTART_PORT_WAIT_S)
    child = sup.spawn("API", api_argv(host, port, workers, sup.settings), listener=listener,
                      extra_env=sup.metrics_env)
    url = owner.reachable_url(host, port)
    sup.wait_healthy(child, f"{url}/internal/health", timeout=60)
    say(f"API: {url}  (OpenAPI: /schema, /schema/openapi.json)")


def launch_runner(sup: Supervisor, logs: Path) -> Waiter:
    """The flow runner, launched beside the Prefect server it waits for (its imports take seconds). With our own
    Prefect server, whose one runner is not running now, it first settles the flow runs a dead runner left
    behind (flows/runner.py)."""
    # The runner polls Prefect for scheduled runs: a new run waits half a poll on average. Prefect's default (10 s)
    # would eat a sixth of the 60 s budget from a router-training upload to a live router; 1 s costs one small
    # local HTTP call a second (docs/benchmarks.md, "Issue 20, item 4").
    sup.env.setdefault("PREFECT_RUNNER_POLL_FREQUENCY", "1")
    settle = {} if sup.settings.prefect_api_url else {SETTLE_ORPHANS_ENV: "1"}
    child = sup.spawn("flow runner", [sys.executable, "-m", "flows.runner"], logs / "flow-runner.log",
                      extra_env={**settle, **sup.metrics_env})

    def ready() -> None:
        # Ready once its deployments are registered: the API starts after, so its first job always finds them.
        sup.wait_healthy(child, f"{sup.env['PREFECT_API_URL']}/deployments/name/{HOUSEKEEPING}", timeout=120,
                         auth=basic_auth(sup.env.get("PREFECT_API_AUTH_STRING")))
        say(f"flow runner serving the project's flows; log: {logs / 'flow-runner.log'}")
    return ready


def start_runner(sup: Supervisor, logs: Path) -> None:
    launch_runner(sup, logs)()


def serve(settings: Settings, host: str, port: int) -> int:
    # Before anything starts: a port in use is one line, not a second instance sharing it (api/cli/ports.py)
    refuse_if_in_use(api_listener(host, port))
    if not settings.prefect_api_url:
        refuse_if_in_use(prefect_listener(settings))
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    logs = settings.layout.logs_dir
    logs.mkdir(exist_ok=True)
    left = orphans.stop_orphans(settings.run_dir)
    if left:
        say(f"stopped {len(left)} process(es) left running by a supervisor that died: "
            + ", ".join(f"{c.name} (pid {c.pid})" for c in left))
    # In a process of its own, so that this one, which lives as long as the service, never loads DuckDB
    sys.stdout.flush()
    prepared = subprocess.run([sys.executable, "-m", "api.cli.prepare_store"], check=False,
                              env={**os.environ, "SWITCHBOARD_DATA_DIR": str(settings.data_dir)})
    if prepared.returncode:
        return prepared.returncode

    sup = Supervisor(settings)
    sup.env["SWITCHBOARD_DATA_DIR"] = str(settings.data_dir)
    sup.env[SUPERVISOR_PID_ENV] = str(os.getpid())  # the runner ends itself once this process is gone
    # The API's workers and the runner's flow runs add their metrics up in run/metrics/ (GET /metrics); not in
    # sup.env, so that Prefect's server does not write its own there.
    sup.metrics_env = fresh_metrics_env(settings.run_dir)

    def request_stop(signum: int, _frame: object) -> None:
        sup.stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    code = 0
    try:
        # Prefect, the store owner and the runner start side by side (the runner waits for Prefect by itself); the
        # API comes last: when it answers, the store and the flows' deployments are there to take jobs.
        owned = not settings.database_url  # the embedded DuckDB file needs its owner; PostgreSQL needs none
        prefect_ready, store_ready, runner_ready = launch_prefect(sup, logs), \
            launch_store(sup, logs) if owned else None, launch_runner(sup, logs)
        for ready in (store_ready, prefect_ready, runner_ready):  # the quickest first: each "ready in" is true
            if ready is not None:
                ready()
        start_api(sup, host, port)
        say("all running; press Ctrl-C to stop")
        restarts = ChildRestarts(sup, {"Prefect server": lambda: start_prefect(sup, logs),
                                       "store owner": lambda: start_store(sup, logs),
                                       "API": lambda: start_api(sup, host, port),
                                       "flow runner": lambda: start_runner(sup, logs)})
        recorded: list[int] = []
        while not sup.stopping:
            pids = [child.process.pid for child in sup.children]
            if pids != recorded:  # who to stop should this supervisor die without stopping them
                orphans.write_record(settings.run_dir, [(c.name, c.process.pid) for c in sup.children])
                recorded = pids
            crashed = next((child for child in sup.children if not child.alive()), None)
            if crashed is not None and not restarts.handle(crashed):
                code = 1
                sup.stopping = True
            time.sleep(0.5)
    finally:
        sup.stop_all()
        orphans.clear_record(settings.run_dir)
        say("stopped")
    return code
