"""Who owns the DuckDB file right now, and how to reach them.

The owning process (the store owner, `switchboard store`, or an API process that found no live owner) writes
run/owner.json (URL, token, pid; mode 0600) once it serves RPC, and removes it on clean shutdown. Everyone else
calls `open_store()`, which returns a RemoteStore when a live owner answers and otherwise opens the file itself
(e.g. `switchboard keys create` while the service is stopped). A RemoteStore re-reads the file when the owner
stops answering or refuses its token, so it follows an owner that restarted.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

import httpx
import msgspec

from storage.interfaces import Store
from storage.rpc import RemoteStore


class OwnerInfo(msgspec.Struct):
    url: str
    token: str
    pid: int


def reachable_url(host: str, port: int) -> str:
    """The URL others on this machine use for a server bound to host:port (a wildcard bind is reached on loopback)."""
    host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://{host}:{port}"


def owner_file(run_dir: Path) -> Path:
    return run_dir / "owner.json"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def publish(run_dir: Path, url: str, token: str) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = owner_file(run_dir).with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(msgspec.json.encode(OwnerInfo(url=url, token=token, pid=os.getpid())))
    os.replace(tmp, owner_file(run_dir))


def withdraw(run_dir: Path) -> None:
    path = owner_file(run_dir)
    try:
        info = msgspec.json.decode(path.read_bytes(), type=OwnerInfo)
        if info.pid == os.getpid():
            path.unlink()
    except (FileNotFoundError, msgspec.DecodeError):
        pass


def live_owner(run_dir: Path) -> OwnerInfo | None:
    try:
        info = msgspec.json.decode(owner_file(run_dir).read_bytes(), type=OwnerInfo)
    except (FileNotFoundError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    try:
        ok = httpx.get(f"{info.url}/internal/health", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        ok = False
    return info if ok else None


def open_store(db_path: Path, run_dir: Path, wait_for_owner_s: float = 0.0, database_url: str | None = None) -> Store:
    """With a `database_url`, PostgreSQL, which every process opens for itself. Otherwise a RemoteStore to the
    live owner, else the file itself. With `wait_for_owner_s`, an owner file left by an owner that no longer answers
    (crashed, restarting) is waited on that long before the file is opened: a flow run that opened it would lock
    the restarted owner out."""
    if database_url:
        # lazy: psycopg loads only where PostgreSQL is the system of record
        from storage.postgres_store import PostgresStore

        return PostgresStore(database_url, db_path.parent)
    info = live_owner(run_dir)
    deadline = time.monotonic() + wait_for_owner_s
    while info is None and owner_file(run_dir).exists() and time.monotonic() < deadline:
        time.sleep(0.5)
        info = live_owner(run_dir)
    if info is not None:
        return RemoteStore(info.url, info.token, rediscover=lambda: _url_and_token(run_dir))
    # Clients of a live owner (the flow runner, flow runs, the CLI while serve runs) never load DuckDB.
    # lazy: DuckDB loads only in a process that opens the file itself
    from storage.store import LocalStore

    return LocalStore(db_path)


def _url_and_token(run_dir: Path) -> tuple[str, str] | None:
    info = live_owner(run_dir)
    return (info.url, info.token) if info else None
