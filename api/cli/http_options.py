"""How granian holds connections for the API and the store owner, so that idle sockets cannot lock ready requests out.

Two granian defaults let 1,100 idle TCP connections (no byte sent, no key needed) stop a worker from answering
anyone until they close (granian 2.8.7; measured in docs/benchmarks.md, "Issue 20, item 10"):

- `--http auto` (the default) first reads a few bytes to tell HTTP/1 from HTTP/2, and hyper-util sets no timer on
  that read (hyperium/hyper#3962): a connection that sends nothing is held for as long as the client likes,
  whatever `--http1-header-read-timeout` says. With `--http 1` hyper starts its header-read timer when the
  connection opens and again after each response, so a connection that sends no complete request head within
  `http_header_timeout_s` (idle, keep-alive between requests, or trickling headers) is closed. Cleartext HTTP/2
  with prior knowledge (h2c) is given up; a reverse proxy speaks HTTP/1.1 to the API anyway.
- `--backpressure` is a semaphore of *connections*, not requests: granian takes a permit before it accepts a
  connection and gives it back when the connection closes. Its default, the listen backlog (1,024) per worker,
  is used up by 1,024 idle sockets, and then no connection is accepted, ready or not. The cap here is what the
  worker's open-file limit allows (the soft limit raised to the hard one first; a cap above it would make accept
  fail with EMFILE over and over), at most DEFAULT_MAX_CONNECTIONS (about 16 KB of memory each while a request
  head is half-sent), or `http_max_connections`. With idle connections closed after the header timeout, keeping
  the cap full takes thousands of new connections a second; limits per client address belong to the reverse
  proxy (docs/deployment.md).

Request bodies are bounded by the app itself (api/body_guard.py): hyper has no body timeout.
"""

from __future__ import annotations

import resource

from api.settings import Settings

# Files and sockets a worker needs besides its clients: DuckDB, event-log parts, logs, RPC to the store owner.
RESERVED_FILES = 256
DEFAULT_MAX_CONNECTIONS = 16_384
MIN_CONNECTIONS = 64
UNLIMITED_FILES = 65_536  # what to ask for when the hard limit is "unlimited" (Linux refuses RLIM_INFINITY)


def raise_open_file_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit (children inherit it); return the soft."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = UNLIMITED_FILES if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):  # a container may forbid it: keep the soft limit and size the cap to it
            pass
    return UNLIMITED_FILES if soft == resource.RLIM_INFINITY else soft


def max_connections(settings: Settings, open_files: int) -> int:
    """Connections one worker accepts at once: the configured figure, never more than its open files allow."""
    allowed = max(MIN_CONNECTIONS, open_files - RESERVED_FILES)
    wanted = settings.http_max_connections or DEFAULT_MAX_CONNECTIONS
    return min(wanted, allowed)


def header_timeout_ms(settings: Settings) -> int:
    return max(1, min(60_000, round(settings.http_header_timeout_s * 1000)))


def connection_cap(settings: Settings) -> int:
    """granian's `--backpressure`: the connections one worker accepts at once, sized to the open files."""
    return max_connections(settings, raise_open_file_limit())


def connection_args(settings: Settings) -> list[str]:
    """granian's command-line options for HTTP/1 with a header timeout and a connection cap sized to the files."""
    return ["--http", "1", "--http1-header-read-timeout", str(header_timeout_ms(settings)),
            "--backpressure", str(connection_cap(settings))]
