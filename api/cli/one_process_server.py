"""Serve an ASGI app factory with granian in this one process (`python -m api.cli.one_process_server ... mod:factory`).

For a server with one worker: the store owner always (one process owns the DuckDB file: docs/architecture.md, rule
6), the API under `switchboard serve` (and `switchboard api --workers 1`). `python -m granian --workers 1` runs a
main process that only forks the worker and watches it: 28 MiB per server of an idle `serve` for a manager with
nothing to manage (docs/benchmarks.md, "Issue 36, idle memory of serve"). granian's embedded server
(granian/server/embed.py) runs the same Rust worker on this process's event loop, with the options the command line
would give it (api/cli/http_options.py: HTTP/1 with a header timeout, the connection cap, the listen backlog) and the
same lifespan: SIGTERM or SIGINT stops accepting, lets the app's shutdown run (the API flushes its buffered events,
the owner withdraws run/owner.json and checkpoints DuckDB), and ends the process. Several API workers still run
under `python -m granian`, whose main process forks and watches them (api/cli/supervisor.py, api_argv).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from granian.constants import HTTPModes, Interfaces
from granian.errors import FatalError
from granian.http import HTTP1Settings
from granian.log import LogLevels
from granian.server.embed import Server

EXPERIMENTAL_WARNING = "Embedded server is experimental!"  # granian/server/embed.py, Server.serve
BACKLOG = 1024  # `python -m granian`'s default (the embedded server's own is 128)


def load_factory(target: str) -> Callable[[], Any]:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def build_server(factory: Callable[[], Any], host: str, port: int, header_timeout_ms: int,
                 backpressure: int) -> Server:
    return Server(factory, address=host, port=port, interface=Interfaces.ASGI, factory=True, http=HTTPModes.http1,
                  http1_settings=HTTP1Settings(header_read_timeout=header_timeout_ms), backlog=BACKLOG,
                  backpressure=backpressure, log_level=LogLevels.warning)


async def serve_until_signalled(server: Server) -> None:
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, server.stop)
    await server.serve()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m api.cli.one_process_server")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--header-timeout-ms", type=int, required=True)
    parser.add_argument("--backpressure", type=int, required=True)
    parser.add_argument("target", help="module:factory, an ASGI app factory")
    args = parser.parse_args(argv)
    server = build_server(load_factory(args.target), args.host, args.port, args.header_timeout_ms, args.backpressure)
    # Said at every start; this module is the reason it is embedded, and its tests are what the warning asks for
    logging.getLogger("_granian").addFilter(lambda record: record.getMessage() != EXPERIMENTAL_WARNING)
    code = 0
    try:
        asyncio.run(serve_until_signalled(server))
    except FatalError as exc:  # granian has logged the app's own error (a failed lifespan startup) above
        print(f"{args.target} did not start ({exc}); its error is above", file=sys.stderr)
        code = 1
    # The app's shutdown has run. End as granian's forked worker always ended (multiprocessing's os._exit), without
    # the interpreter's teardown, where DuckDB's bindings (nanobind) report every object still alive as leaked.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
