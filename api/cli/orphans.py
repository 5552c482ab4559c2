"""Children left behind by a supervisor that died without stopping them (kill -9, a crash, a power cut of the
terminal): `switchboard serve` records each child's process group in run/supervisor.json, and the next `serve`
on the same data dir stops the groups whose recorded supervisor is gone before it starts anything. Without this
the leftover store owner would keep the DuckDB file, and the new start would refuse to open it.

A process is recognised by its pid and its start time (/proc/<pid>/stat), so a pid reused by an unrelated process
since then is never signalled.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import msgspec


class Recorded(msgspec.Struct):
    name: str
    pid: int
    started: int  # clock ticks since boot, from /proc/<pid>/stat


class Record(msgspec.Struct):
    supervisor: Recorded
    children: list[Recorded]


def record_file(run_dir: Path) -> Path:
    return run_dir / "supervisor.json"


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot; None when no such process exists."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])  # field 22; the command in parentheses may hold spaces


def is_running(p: Recorded) -> bool:
    return start_time(p.pid) == p.started


def describe(name: str, pid: int) -> Recorded | None:
    started = start_time(pid)
    return Recorded(name, pid, started) if started is not None else None


def write_record(run_dir: Path, children: list[tuple[str, int]]) -> None:
    me = describe("supervisor", os.getpid())
    if me is None:  # no /proc: nothing can be recorded reliably
        return
    found = [r for r in (describe(name, pid) for name, pid in children) if r is not None]
    run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = record_file(run_dir).with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(msgspec.json.encode(Record(me, found)))
    os.replace(tmp, record_file(run_dir))


def clear_record(run_dir: Path) -> None:
    record_file(run_dir).unlink(missing_ok=True)


def stop_orphans(run_dir: Path, grace_s: float = 10.0) -> list[Recorded]:
    """Stop the process groups a dead supervisor of this data dir left running; returns those that were running.
    A live supervisor's children are left alone (the caller then refuses to start beside it)."""
    try:
        record = msgspec.json.decode(record_file(run_dir).read_bytes(), type=Record)
    except (FileNotFoundError, msgspec.DecodeError, msgspec.ValidationError):
        return []
    if is_running(record.supervisor):
        return []
    left = [child for child in record.children if is_running(child)]
    _signal_groups(left, signal.SIGTERM)  # the API flushes its sessions, the store owner checkpoints DuckDB
    deadline = time.monotonic() + grace_s
    while any(is_running(child) for child in left) and time.monotonic() < deadline:
        time.sleep(0.1)
    _signal_groups([child for child in left if is_running(child)], signal.SIGKILL)
    clear_record(run_dir)
    return left


def _signal_groups(children: list[Recorded], sig: int) -> None:
    for child in children:
        try:
            os.killpg(child.pid, sig)  # each child leads its own process group (start_new_session)
        except (ProcessLookupError, PermissionError):
            pass
